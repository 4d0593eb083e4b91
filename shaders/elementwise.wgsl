// Elementwise kernels. Needs the activation.wgsl prelude (prepended by the crate).
// Every entry point runs over a 1-D grid that may spill onto y (kernel::grid_1d): the linear
// index is gid.x + gid.y * nwg.x * WG, guarded by params.n.
//
// Bindings: read-only inputs, then read-write outputs, then Params.

struct Params {
    n: u32,      // element count
    value: f32,  // fill value / scale factor
    cols: u32,   // bias length (bias_add)
    alpha: f32,  // leaky-relu slope / offset of scale_forward
}

const WG: u32 = 256u;

override ACT: u32 = 0u; // activation code (activation.wgsl)
override OP: u32 = 0u;  // binary op: 0 add, 1 sub, 2 mul, 3 div

fn linear_index(gid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return gid.x + gid.y * nwg.x * WG;
}

// ---- fill: out[i] = value ------------------------------------------------------------
@group(0) @binding(0) var<storage, read_write> fill_out: array<f32>;
@group(0) @binding(1) var<uniform> fill_p: Params;

@compute @workgroup_size(256)
fn fill_forward(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_index(gid, nwg);
    if (i >= fill_p.n) {
        return;
    }
    fill_out[i] = fill_p.value;
}

// ---- unary: y = act(x), dx = dy * act'(x) ----------------------------------------------
@group(0) @binding(0) var<storage, read> un_x: array<f32>;
@group(0) @binding(1) var<storage, read_write> un_y: array<f32>;
@group(0) @binding(2) var<uniform> un_p: Params;

@compute @workgroup_size(256)
fn unary_forward(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_index(gid, nwg);
    if (i >= un_p.n) {
        return;
    }
    un_y[i] = activate(ACT, un_x[i], un_p.alpha);
}

@group(0) @binding(0) var<storage, read> ub_x: array<f32>;
@group(0) @binding(1) var<storage, read> ub_dy: array<f32>;
@group(0) @binding(2) var<storage, read_write> ub_dx: array<f32>;
@group(0) @binding(3) var<uniform> ub_p: Params;

@compute @workgroup_size(256)
fn unary_backward(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_index(gid, nwg);
    if (i >= ub_p.n) {
        return;
    }
    ub_dx[i] = ub_dy[i] * activate_grad(ACT, ub_x[i], ub_p.alpha);
}

// ---- binary: c = a (op) b, same shapes -------------------------------------------------
@group(0) @binding(0) var<storage, read> bin_a: array<f32>;
@group(0) @binding(1) var<storage, read> bin_b: array<f32>;
@group(0) @binding(2) var<storage, read_write> bin_c: array<f32>;
@group(0) @binding(3) var<uniform> bin_p: Params;

@compute @workgroup_size(256)
fn binary_forward(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_index(gid, nwg);
    if (i >= bin_p.n) {
        return;
    }
    let x = bin_a[i];
    let y = bin_b[i];
    var r: f32;
    switch OP {
        case 1u: { r = x - y; }
        case 2u: { r = x * y; }
        case 3u: { r = x / y; }
        default: { r = x + y; }
    }
    bin_c[i] = r;
}

// ---- scale: y = value * x + alpha (alpha = 0 for a plain scale) --------------------------
@compute @workgroup_size(256)
fn scale_forward(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_index(gid, nwg);
    if (i >= un_p.n) {
        return;
    }
    un_y[i] = un_p.value * un_x[i] + un_p.alpha;
}

// ---- bias_add: y[r, c] = x[r, c] + bias[c], x row-major with `cols` columns ------------
@compute @workgroup_size(256)
fn bias_add_forward(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_index(gid, nwg);
    if (i >= bin_p.n) {
        return;
    }
    bin_c[i] = bin_a[i] + bin_b[i % bin_p.cols];
}

// ---- row_scale: y[r, c] = x[r, c] · w[r], x row-major with `cols` columns ---------------
// Per-sample weights (Keras's sample_weight) applied to per-row losses and their gradients.
@compute @workgroup_size(256)
fn row_scale_forward(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_index(gid, nwg);
    if (i >= bin_p.n) {
        return;
    }
    bin_c[i] = bin_a[i] * bin_b[i / bin_p.cols];
}

// ---- normalize: y[r, c] = (x[r, c] − value·mean[c]) / max(sqrt(var[c]), 1e-7) ----------
// Keras's Normalization layer (value = 1); its backward pass is the same with value = 0.
@group(0) @binding(0) var<storage, read> nz_x: array<f32>;
@group(0) @binding(1) var<storage, read> nz_m: array<f32>;
@group(0) @binding(2) var<storage, read> nz_v: array<f32>;
@group(0) @binding(3) var<storage, read_write> nz_y: array<f32>;
@group(0) @binding(4) var<uniform> nz_p: Params;

@compute @workgroup_size(256)
fn normalize_forward(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_index(gid, nwg);
    if (i >= nz_p.n) {
        return;
    }
    let c = i % nz_p.cols;
    nz_y[i] = (nz_x[i] - nz_p.value * nz_m[c]) / max(sqrt(nz_v[c]), 1e-7);
}

// ---- unary backward from the output: dx = dy * act'(x) where y = act(x) is known -------
// For activations whose derivative is a function of the output (linear, relu, leaky relu
// with a positive slope, sigmoid, tanh): lets the forward pass fuse the activation into the
// matmul and keep only its output. Bindings: y, dy, dx, params.
@compute @workgroup_size(256)
fn unary_output_backward(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_index(gid, nwg);
    if (i >= ub_p.n) {
        return;
    }
    ub_dx[i] = ub_dy[i] * activate_grad_from_output(ACT, ub_x[i], ub_p.alpha);
}

// ---- dropout: y = keep(i) ? x · value : 0 ------------------------------------------------
// keep(i) = u(i) >= p with u(i) = the top 24 bits of hash32(i ^ hash32(seed)) / 2^24, a
// uniform number in [0, 1); value = 1 / (1 - p) (inverted dropout: inference needs no scale).
// The backward pass is the same kernel on dy with the same seed (the mask is recomputed,
// not stored). hash32 is Chris Wellons's "lowbias32"; `reference::dropout_keep` mirrors it.
@group(0) @binding(0) var<storage, read> do_x: array<f32>;
@group(0) @binding(1) var<storage, read_write> do_y: array<f32>;
@group(0) @binding(2) var<uniform> do_p: Params; // n, value = 1/(1-p), cols = seed, alpha = p

fn hash32(v: u32) -> u32 {
    var x = v;
    x ^= x >> 16u;
    x *= 0x7feb352du;
    x ^= x >> 15u;
    x *= 0x846ca68bu;
    x ^= x >> 16u;
    return x;
}

@compute @workgroup_size(256)
fn dropout_forward(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_index(gid, nwg);
    if (i >= do_p.n) {
        return;
    }
    let u = f32(hash32(i ^ hash32(do_p.cols)) >> 8u) * (1.0 / 16777216.0);
    do_y[i] = select(0.0, do_x[i] * do_p.value, u >= do_p.alpha);
}

// ---- dropout backward with a gate: dx = (keep(i) ? dy · value : 0) · act_GATE'(y) ---------
// The same mask as dropout_forward (same uniform: a step's dropout slot is read by both),
// times the derivative of the previous layer's activation computed from its output y: the
// dropout layer applies the gate that layer offers, so that layer's own backward starts from
// its pre-activation (one dispatch instead of two). GATE 0 (linear) is the plain mask.
override GATE: u32 = 0u;
override GATE_ALPHA: f32 = 0.0;

@group(0) @binding(0) var<storage, read> dg_dy: array<f32>;
@group(0) @binding(1) var<storage, read> dg_y: array<f32>;
@group(0) @binding(2) var<storage, read_write> dg_dx: array<f32>;
@group(0) @binding(3) var<uniform> dg_p: Params; // as dropout_forward's

@compute @workgroup_size(256)
fn dropout_backward(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_index(gid, nwg);
    if (i >= dg_p.n) {
        return;
    }
    let u = f32(hash32(i ^ hash32(dg_p.cols)) >> 8u) * (1.0 / 16777216.0);
    let d = select(0.0, dg_dy[i] * dg_p.value, u >= dg_p.alpha);
    dg_dx[i] = d * activate_grad_from_output(GATE, dg_y[i], GATE_ALPHA);
}
