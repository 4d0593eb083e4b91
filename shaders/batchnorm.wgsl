// Batch normalisation over the last axis of an (M, C) tensor (NHWC flattened: M = N·H·W
// rows of C channels): y = γ·(x − μ)/√(σ² + ε) + β. Needs the activation.wgsl prelude (the
// backward pass applies the previous layer's gate).
//
// Training uses the batch's statistics, reduced in two steps so no invocation loops over
// all M rows (llvmpipe stops loops after 65,535 iterations) and the variance never comes
// from E[x²] − E[x]² (which cancels catastrophically): batchnorm_stats gives each (chunk of
// rows, channel) its count, mean and sum of squared deviations (Welford), batchnorm_combine
// merges the chunks per channel in order (Chan et al.'s pairwise formula) into the mean and
// 1/√(σ² + ε), σ² the biased variance as Keras normalises with, and, while training,
// updates the moving statistics: m ← m·momentum + μ·(1 − momentum) (likewise σ²). Inference
// normalises with the moving statistics (batchnorm_inference).
//
// Backward (x̂ = (x − μ)/√(σ² + ε)): dβ = Σ dy, dγ = Σ dy·x̂ (two steps again), and
// dx = γ/√(σ² + ε)/M · (M·dy − dβ − x̂·dγ).
//
// HAS_GAMMA / HAS_BETA: Keras's scale / center (γ = 1, β = 0 when off; the binding is then
// a stand-in never read).

struct Params {
    m: u32,        // rows
    c: u32,        // channels
    chunk: u32,    // rows per chunk
    chunks: u32,   // chunks
    eps: f32,
    momentum: f32,
    n: u32,        // invocations that do work
    alpha: f32,    // the gate's leaky-relu slope
}

override HAS_GAMMA: bool = true;
override HAS_BETA: bool = true;
override UPDATE: bool = false;
override GATE: u32 = 0u;

const WG: u32 = 256u;
// Rows one invocation of the normalising kernels (forward, inference, backward) walks in its
// channel: the channel's index (a division lavapipe does lane by lane) and its statistics
// are loaded once per ROWS elements instead of per element (issue 35's CNN: these kernels
// were 5% of a step at 1-2 GB/s). batchnorm.rs's ROWS must equal it.
const ROWS: u32 = 8u;

fn linear_index(gid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return gid.x + gid.y * nwg.x * WG;
}

// ---- statistics of a chunk: (count, mean, M2) per (chunk, channel) ------------------------
@group(0) @binding(0) var<storage, read> st_x: array<f32>;
@group(0) @binding(1) var<storage, read_write> st_part: array<f32>;
@group(0) @binding(2) var<uniform> st_p: Params;

@compute @workgroup_size(256)
fn batchnorm_stats(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_index(gid, nwg);
    if (i >= st_p.n) {
        return;
    }
    let c = i % st_p.c;
    let q = i / st_p.c;
    let r0 = q * st_p.chunk;
    let r1 = min(st_p.m, r0 + st_p.chunk);
    var mean = 0.0;
    var m2 = 0.0;
    var k = 0.0;
    for (var r = r0; r < r1; r++) {
        let v = st_x[r * st_p.c + c];
        k += 1.0;
        let d = v - mean;
        mean += d / k;
        m2 += d * (v - mean);
    }
    st_part[3u * i] = k;
    st_part[3u * i + 1u] = mean;
    st_part[3u * i + 2u] = m2;
}

// ---- merge the chunks: mean and 1/√(σ² + ε) per channel, the moving statistics ------------
@group(0) @binding(0) var<storage, read> cb_part: array<f32>;
@group(0) @binding(1) var<storage, read_write> cb_stats: array<f32>;   // [mean…, inv…]
@group(0) @binding(2) var<storage, read_write> cb_mmean: array<f32>;
@group(0) @binding(3) var<storage, read_write> cb_mvar: array<f32>;
@group(0) @binding(4) var<uniform> cb_p: Params;

@compute @workgroup_size(256)
fn batchnorm_combine(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let c = linear_index(gid, nwg);
    if (c >= cb_p.c) {
        return;
    }
    var n = 0.0;
    var mean = 0.0;
    var m2 = 0.0;
    for (var q = 0u; q < cb_p.chunks; q++) {
        let j = 3u * (q * cb_p.c + c);
        let nb = cb_part[j];
        let d = cb_part[j + 1u] - mean;
        let total = n + nb;
        mean += d * nb / total;
        m2 += cb_part[j + 2u] + d * d * n * nb / total;
        n = total;
    }
    let var_ = m2 / n;
    cb_stats[c] = mean;
    cb_stats[cb_p.c + c] = inverseSqrt(var_ + cb_p.eps);
    if (UPDATE) {
        cb_mmean[c] = cb_mmean[c] * cb_p.momentum + mean * (1.0 - cb_p.momentum);
        cb_mvar[c] = cb_mvar[c] * cb_p.momentum + var_ * (1.0 - cb_p.momentum);
    }
}

// ---- normalise: with the batch's statistics, or the moving ones ---------------------------
@group(0) @binding(0) var<storage, read> nm_x: array<f32>;
@group(0) @binding(1) var<storage, read> nm_gamma: array<f32>;
@group(0) @binding(2) var<storage, read> nm_beta: array<f32>;
@group(0) @binding(3) var<storage, read> nm_mean: array<f32>;  // stats, or the moving mean
@group(0) @binding(4) var<storage, read> nm_var: array<f32>;   // stats, or the moving variance
@group(0) @binding(5) var<storage, read_write> nm_y: array<f32>;
@group(0) @binding(6) var<uniform> nm_p: Params;

fn affine(c: u32, v: f32) -> f32 {
    var y = v;
    if (HAS_GAMMA) {
        y *= nm_gamma[c];
    }
    if (HAS_BETA) {
        y += nm_beta[c];
    }
    return y;
}

@compute @workgroup_size(256)
fn batchnorm_forward(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_index(gid, nwg);
    if (i >= nm_p.n) {
        return;
    }
    let c = i % nm_p.c;
    let r0 = (i / nm_p.c) * ROWS;
    let r1 = min(nm_p.m, r0 + ROWS);
    let mean = nm_mean[c];
    let inv = nm_var[nm_p.c + c];
    for (var r = r0; r < r1; r++) {
        let j = r * nm_p.c + c;
        nm_y[j] = affine(c, (nm_x[j] - mean) * inv);
    }
}

@compute @workgroup_size(256)
fn batchnorm_inference(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_index(gid, nwg);
    if (i >= nm_p.n) {
        return;
    }
    let c = i % nm_p.c;
    let r0 = (i / nm_p.c) * ROWS;
    let r1 = min(nm_p.m, r0 + ROWS);
    let mean = nm_mean[c];
    let inv = inverseSqrt(nm_var[c] + nm_p.eps);
    for (var r = r0; r < r1; r++) {
        let j = r * nm_p.c + c;
        nm_y[j] = affine(c, (nm_x[j] - mean) * inv);
    }
}

// ---- backward: Σ dy and Σ dy·x̂ per (chunk, channel), then per channel ---------------------
@group(0) @binding(0) var<storage, read> bs_dy: array<f32>;
@group(0) @binding(1) var<storage, read> bs_x: array<f32>;
@group(0) @binding(2) var<storage, read> bs_stats: array<f32>;
@group(0) @binding(3) var<storage, read_write> bs_part: array<f32>;
@group(0) @binding(4) var<uniform> bs_p: Params;

@compute @workgroup_size(256)
fn batchnorm_backward_stats(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_index(gid, nwg);
    if (i >= bs_p.n) {
        return;
    }
    let c = i % bs_p.c;
    let q = i / bs_p.c;
    let r0 = q * bs_p.chunk;
    let r1 = min(bs_p.m, r0 + bs_p.chunk);
    let mean = bs_stats[c];
    let inv = bs_stats[bs_p.c + c];
    var sdy = 0.0;
    var sdyx = 0.0;
    for (var r = r0; r < r1; r++) {
        let j = r * bs_p.c + c;
        let g = bs_dy[j];
        sdy += g;
        sdyx += g * (bs_x[j] - mean) * inv;
    }
    bs_part[2u * i] = sdy;
    bs_part[2u * i + 1u] = sdyx;
}

@group(0) @binding(0) var<storage, read> bc_part: array<f32>;
@group(0) @binding(1) var<storage, read_write> bc_dgamma: array<f32>;
@group(0) @binding(2) var<storage, read_write> bc_dbeta: array<f32>;
@group(0) @binding(3) var<uniform> bc_p: Params;

@compute @workgroup_size(256)
fn batchnorm_backward_combine(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let c = linear_index(gid, nwg);
    if (c >= bc_p.c) {
        return;
    }
    var sdy = 0.0;
    var sdyx = 0.0;
    for (var q = 0u; q < bc_p.chunks; q++) {
        let j = 2u * (q * bc_p.c + c);
        sdy += bc_part[j];
        sdyx += bc_part[j + 1u];
    }
    bc_dbeta[c] = sdy;
    bc_dgamma[c] = sdyx;
}

@group(0) @binding(0) var<storage, read> bd_dy: array<f32>;
@group(0) @binding(1) var<storage, read> bd_x: array<f32>;
@group(0) @binding(2) var<storage, read> bd_stats: array<f32>;
@group(0) @binding(3) var<storage, read> bd_gamma: array<f32>;
@group(0) @binding(4) var<storage, read> bd_dgamma: array<f32>;
@group(0) @binding(5) var<storage, read> bd_dbeta: array<f32>;
@group(0) @binding(6) var<storage, read> bd_gate: array<f32>;
@group(0) @binding(7) var<storage, read_write> bd_dx: array<f32>;
@group(0) @binding(8) var<uniform> bd_p: Params;

@compute @workgroup_size(256)
fn batchnorm_backward(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_index(gid, nwg);
    if (i >= bd_p.n) {
        return;
    }
    let c = i % bd_p.c;
    let r0 = (i / bd_p.c) * ROWS;
    let r1 = min(bd_p.m, r0 + ROWS);
    let mean = bd_stats[c];
    let inv = bd_stats[bd_p.c + c];
    let m = f32(bd_p.m);
    var scale = inv / m;
    if (HAS_GAMMA) {
        scale *= bd_gamma[c];
    }
    let dbeta = bd_dbeta[c];
    let dgamma = bd_dgamma[c];
    for (var r = r0; r < r1; r++) {
        let j = r * bd_p.c + c;
        let xhat = (bd_x[j] - mean) * inv;
        var g = scale * (m * bd_dy[j] - dbeta - xhat * dgamma);
        if (GATE != 0u) {
            g *= activate_grad_from_output(GATE, bd_gate[min(j, arrayLength(&bd_gate) - 1u)], bd_p.alpha);
        }
        bd_dx[j] = g;
    }
}
