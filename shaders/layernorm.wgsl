// Layer normalisation over the last axis of a (rows, cols) tensor (Ba, Kiros & Hinton 2016;
// Keras's LayerNormalization, nanoGPT's LayerNorm): each row on its own,
//   y = γ·x̂ + β,  x̂ = (x − μ)·r,  μ = mean(x),  r = 1/√(σ² + ε),  σ² the biased variance.
// Needs the activation.wgsl prelude (the input gradient applies the previous layer's gate).
//
// layernorm_forward: LANES invocations per row, RW_WG / LANES rows per work-group (spilled onto
//   y past 65,535 work-groups): on a GPU a work-group per row (LANES 64), on a software
//   adapter an invocation per row (LANES 1: a CPU runs a work-group's invocations a SIMD batch
//   at a time, so a barrier costs more than the row's few hundred additions). The mean, then
//   the variance from the deviations (two passes, as llm.c's layernorm_forward: E[x²] − E[x]²
//   cancels for rows far from zero), each a fixed-shape tree in workgroup memory, so the
//   bits never depend on thread timing and no subgroup operation is needed. Saves μ and r per
//   row for the backward pass: stats = [μ per row…, r per row…].
// layernorm_backward: the input gradient, LANES invocations per row as the forward pass, with g = γ·dy:
//   dx = r·(g − mean(g) − x̂·mean(g·x̂))   (llm.c's layernorm_backward, dnorm_mean and
//   dnorm_norm_mean), times the gate's derivative when GATE names one.
// layernorm_params_backward, layernorm_params_combine: dγ = Σ_rows dy·x̂, dβ = Σ_rows dy.
//   Every invocation owns one (chunk of rows, column) and sums it in row order, then one
//   invocation per column adds the chunks in order: no float atomics (llm.c accumulates
//   these with atomics or a scratch per block; here the order is fixed), coalesced reads
//   along the row, and loops short enough for llvmpipe (which stops an invocation's loops
//   after 65,535 iterations).
//
// HAS_GAMMA / HAS_BETA: Keras's scale / center (γ = 1, β = 0 when off; the binding is then a
// stand-in never read).

struct Params {
    rows: u32,
    cols: u32,
    chunk: u32,    // rows per chunk of the parameter gradients
    chunks: u32,   // chunks
    eps: f32,
    alpha: f32,    // the gate's leaky-relu slope
    n: u32,        // invocations that do work (the one-per-element kernels)
    _pad: u32,
}

override HAS_GAMMA: bool = true;
override HAS_BETA: bool = true;
override GATE: u32 = 0u;
// Invocations per row of the row kernels: a power of two dividing RW_WG (see the top).
override LANES: u32 = 64u;

// Invocations per row of the row kernels: enough to keep a GPU busy on a GPT's widths,
// few enough that a narrow row wastes little.
const RW_WG: u32 = 64u;
// The one-per-element kernels.
const EL_WG: u32 = 256u;

var<workgroup> s_a: array<f32, 64>;
var<workgroup> s_b: array<f32, 64>;

// Sums each row's LANES elements of s_a and s_b into the row's first, a fixed tree. Called in
// uniform control flow; every invocation may read its row's first element afterwards (the
// last step ends with a barrier; with LANES 1 there is nothing to sum).
fn tree_sum(li: u32) {
    let lane = li % LANES;
    for (var stride = LANES / 2u; stride > 0u; stride /= 2u) {
        if (lane < stride) {
            s_a[li] += s_a[li + stride];
            s_b[li] += s_b[li + stride];
        }
        workgroupBarrier();
    }
}

// The work-group's first row.
fn first_row(wid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return (wid.x + wid.y * nwg.x) * (RW_WG / LANES);
}

// ---- forward -------------------------------------------------------------------------------
@group(0) @binding(0) var<storage, read> fw_x: array<f32>;
@group(0) @binding(1) var<storage, read> fw_gamma: array<f32>;
@group(0) @binding(2) var<storage, read> fw_beta: array<f32>;
@group(0) @binding(3) var<storage, read_write> fw_y: array<f32>;
@group(0) @binding(4) var<storage, read_write> fw_stats: array<f32>;
@group(0) @binding(5) var<uniform> fw_p: Params;

@compute @workgroup_size(64)
fn layernorm_forward(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) li: u32,
) {
    let first = first_row(wid, nwg);
    if (first >= fw_p.rows) {
        return; // uniform across the work-group: the barriers below stay in uniform control flow
    }
    let row = first + li / LANES;
    let lane = li % LANES;
    let head = li - lane; // the row's first slot in s_a, s_b
    // Columns this invocation reads: none for a row past the end (it still meets the barriers).
    let e = fw_p.cols;
    let end = select(0u, e, row < fw_p.rows);
    let base = row * e;
    var s = 0.0;
    for (var c = lane; c < end; c += LANES) {
        s += fw_x[base + c];
    }
    s_a[li] = s;
    s_b[li] = 0.0;
    workgroupBarrier();
    tree_sum(li);
    let mean = s_a[head] / f32(e);
    workgroupBarrier(); // everyone has read the sum before it is overwritten
    var q = 0.0;
    for (var c = lane; c < end; c += LANES) {
        let d = fw_x[base + c] - mean;
        q += d * d;
    }
    s_a[li] = q;
    workgroupBarrier();
    tree_sum(li);
    let rstd = inverseSqrt(s_a[head] / f32(e) + fw_p.eps);
    for (var c = lane; c < end; c += LANES) {
        var y = (fw_x[base + c] - mean) * rstd;
        if (HAS_GAMMA) {
            y *= fw_gamma[c];
        }
        if (HAS_BETA) {
            y += fw_beta[c];
        }
        fw_y[base + c] = y;
    }
    if (lane == 0u && row < fw_p.rows) {
        fw_stats[row] = mean;
        fw_stats[fw_p.rows + row] = rstd;
    }
}

// ---- input gradient ------------------------------------------------------------------------
@group(0) @binding(0) var<storage, read> bx_dy: array<f32>;
@group(0) @binding(1) var<storage, read> bx_x: array<f32>;
@group(0) @binding(2) var<storage, read> bx_gamma: array<f32>;
@group(0) @binding(3) var<storage, read> bx_stats: array<f32>;
@group(0) @binding(4) var<storage, read> bx_gate: array<f32>;
@group(0) @binding(5) var<storage, read_write> bx_dx: array<f32>;
@group(0) @binding(6) var<uniform> bx_p: Params;

// γ·dy at column c of the element at j.
fn scaled_dy(j: u32, c: u32) -> f32 {
    if (HAS_GAMMA) {
        return bx_dy[j] * bx_gamma[c];
    }
    return bx_dy[j];
}

@compute @workgroup_size(64)
fn layernorm_backward(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) li: u32,
) {
    let first = first_row(wid, nwg);
    if (first >= bx_p.rows) {
        return; // uniform across the work-group
    }
    let row = first + li / LANES;
    let lane = li % LANES;
    let head = li - lane;
    let live = row < bx_p.rows;
    let e = bx_p.cols;
    let end = select(0u, e, live);
    let base = row * e;
    let at = min(row, bx_p.rows - 1u);
    let mean = bx_stats[at];
    let rstd = bx_stats[bx_p.rows + at];
    var a = 0.0;
    var b = 0.0;
    for (var c = lane; c < end; c += LANES) {
        let g = scaled_dy(base + c, c);
        a += g;
        b += g * (bx_x[base + c] - mean) * rstd;
    }
    s_a[li] = a;
    s_b[li] = b;
    workgroupBarrier();
    tree_sum(li);
    let mean_g = s_a[head] / f32(e);
    let mean_gx = s_b[head] / f32(e);
    for (var c = lane; c < end; c += LANES) {
        let j = base + c;
        let xhat = (bx_x[j] - mean) * rstd;
        var d = rstd * (scaled_dy(j, c) - mean_g - xhat * mean_gx);
        if (GATE != 0u) {
            d *= activate_grad_from_output(GATE, bx_gate[min(j, arrayLength(&bx_gate) - 1u)], bx_p.alpha);
        }
        bx_dx[j] = d;
    }
}

// ---- parameter gradients: per (chunk, column), then per column -----------------------------
@group(0) @binding(0) var<storage, read> bp_dy: array<f32>;
@group(0) @binding(1) var<storage, read> bp_x: array<f32>;
@group(0) @binding(2) var<storage, read> bp_stats: array<f32>;
@group(0) @binding(3) var<storage, read_write> bp_part: array<f32>;  // [Σ dy·x̂, Σ dy] per (chunk, column)
@group(0) @binding(4) var<uniform> bp_p: Params;

@compute @workgroup_size(256)
fn layernorm_params_backward(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * EL_WG;
    if (i >= bp_p.n) {
        return;
    }
    let c = i % bp_p.cols;
    let r0 = (i / bp_p.cols) * bp_p.chunk;
    let r1 = min(bp_p.rows, r0 + bp_p.chunk);
    var sg = 0.0;
    var sb = 0.0;
    for (var r = r0; r < r1; r++) {
        let j = r * bp_p.cols + c;
        let g = bp_dy[j];
        sg += g * (bp_x[j] - bp_stats[r]) * bp_stats[bp_p.rows + r];
        sb += g;
    }
    bp_part[2u * i] = sg;
    bp_part[2u * i + 1u] = sb;
}

@group(0) @binding(0) var<storage, read> bc_part: array<f32>;
@group(0) @binding(1) var<storage, read_write> bc_dgamma: array<f32>;
@group(0) @binding(2) var<storage, read_write> bc_dbeta: array<f32>;
@group(0) @binding(3) var<uniform> bc_p: Params;

@compute @workgroup_size(256)
fn layernorm_params_combine(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let c = gid.x + gid.y * nwg.x * EL_WG;
    if (c >= bc_p.cols) {
        return;
    }
    var sg = 0.0;
    var sb = 0.0;
    for (var q = 0u; q < bc_p.chunks; q++) {
        let j = 2u * (q * bc_p.cols + c);
        sg += bc_part[j];
        sb += bc_part[j + 1u];
    }
    bc_dgamma[c] = sg;
    bc_dbeta[c] = sb;
}
