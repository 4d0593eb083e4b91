// Merge kernels for graph models: the element-wise maximum and its gradient, and the block
// copies that concatenate tensors along an axis and slice their gradients back out.
// Every entry point runs over a 1-D grid that may spill onto y (exec::grid_1d): the linear
// index is gid.x + gid.y * nwg.x * WG, guarded by the element count.
//
// Bindings: read-only inputs, then read-write outputs, then Params.

struct Params {
    n: u32,      // elements this dispatch writes
    inner: u32,  // concatenate: the input's block (its axis length times what follows)
    outer: u32,  // concatenate: the output's block (the sum of the inputs' blocks)
    offset: u32, // concatenate: where this input's block starts in the output's
}

const WG: u32 = 256u;

// maximum_backward: the first input gets the gradient where it holds the maximum; later ones
// only where no earlier input did (ties go to the earliest input, as TensorFlow's does).
override FIRST: bool = true;

fn linear_index(gid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return gid.x + gid.y * nwg.x * WG;
}

// ---- maximum: c = max(a, b) ----------------------------------------------------------------
@group(0) @binding(0) var<storage, read> mx_a: array<f32>;
@group(0) @binding(1) var<storage, read> mx_b: array<f32>;
@group(0) @binding(2) var<storage, read_write> mx_c: array<f32>;
@group(0) @binding(3) var<uniform> mx_p: Params;

@compute @workgroup_size(256)
fn maximum_forward(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_index(gid, nwg);
    if (i >= mx_p.n) {
        return;
    }
    let a = mx_a[i];
    let b = mx_b[i];
    mx_c[i] = select(b, a, a >= b);
}

// ---- maximum_backward: dx = (x == y and not taken) ? dy : 0; taken |= (x == y) ------------
@group(0) @binding(0) var<storage, read> mb_x: array<f32>;
@group(0) @binding(1) var<storage, read> mb_y: array<f32>;
@group(0) @binding(2) var<storage, read> mb_dy: array<f32>;
@group(0) @binding(3) var<storage, read_write> mb_dx: array<f32>;
@group(0) @binding(4) var<storage, read_write> mb_taken: array<f32>;
@group(0) @binding(5) var<uniform> mb_p: Params;

@compute @workgroup_size(256)
fn maximum_backward(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_index(gid, nwg);
    if (i >= mb_p.n) {
        return;
    }
    let hit = mb_x[i] == mb_y[i];
    var taken = false;
    if (!FIRST) {
        taken = mb_taken[i] != 0.0;
    }
    mb_dx[i] = select(0.0, mb_dy[i], hit && !taken);
    mb_taken[i] = select(0.0, 1.0, hit || taken);
}

// ---- concat_forward: out[o * outer + offset + j] = x[o * inner + j] ------------------------
@group(0) @binding(0) var<storage, read> cf_x: array<f32>;
@group(0) @binding(1) var<storage, read_write> cf_out: array<f32>;
@group(0) @binding(2) var<uniform> cf_p: Params;

@compute @workgroup_size(256)
fn concat_forward(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_index(gid, nwg);
    if (i >= cf_p.n) {
        return;
    }
    let o = i / cf_p.inner;
    let j = i - o * cf_p.inner;
    cf_out[o * cf_p.outer + cf_p.offset + j] = cf_x[i];
}

// ---- concat_backward: dx[o * inner + j] = dy[o * outer + offset + j] -----------------------
@group(0) @binding(0) var<storage, read> cb_dy: array<f32>;
@group(0) @binding(1) var<storage, read_write> cb_dx: array<f32>;
@group(0) @binding(2) var<uniform> cb_p: Params;

@compute @workgroup_size(256)
fn concat_backward(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_index(gid, nwg);
    if (i >= cb_p.n) {
        return;
    }
    let o = i / cb_p.inner;
    let j = i - o * cb_p.inner;
    cb_dx[i] = cb_dy[o * cb_p.outer + cb_p.offset + j];
}
