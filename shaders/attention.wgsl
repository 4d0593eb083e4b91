// Fused scaled dot-product attention in the FlashAttention manner, over a packed QKV tensor
// (batch, T, stride) whose row t holds query, key and value of every head at q_off, k_off
// and v_off (head h's d-th value at off + h*D + d): what one projection of width 3E gives.
//
// Forward (attention_forward): one invocation per query row, a workgroup per 64 rows of one
// (batch, head); keys and values stream through workgroup memory in tiles of KT rows, and
// the softmax is online: a running maximum m, sum l and accumulator acc rescaled once per
// tile. A causal mask skips every tile past the workgroup's last query. Writes O (batch, T,
// o_stride, head h at h*D) and the log-sum-exp of each row's scores (batch, head, T), all
// backward needs: memory grows linearly with T, the T×T matrix is never stored.
//
// Backward recomputes the probabilities from the LSE: p = exp(s − lse). With
// delta_i = Σ_d dO_i·O_i (computed by attention_backward_dq and stored for the second pass),
// dp_ij = dO_i·v_j, ds_ij = p_ij (dp_ij − delta_i):
//   attention_backward_dq  (a query per invocation, keys tiled):    dq_i = scale Σ_j ds_ij k_j
//   attention_backward_dkv (a key per invocation, queries tiled):   dk_j = scale Σ_i ds_ij q_i,
//                                                                    dv_j = Σ_i p_ij dO_i
// Every sum runs in index order in one invocation: no atomics, the same bits every run.
//
// Head sizes up to MAXD (private arrays need a constant size); the host refuses larger ones.

struct Params {
    t: u32,         // sequence length (queries and keys)
    heads: u32,     // heads
    d: u32,         // head size
    causal: u32,    // 1: key j is seen by queries i >= j only
    stride: u32,    // floats per row of the QKV tensor (and of its gradient)
    q_off: u32,     // where the queries start in a row
    k_off: u32,     // keys
    v_off: u32,     // values
    o_stride: u32,  // floats per row of O and dO
    scale: f32,     // the scores' multiplier, 1/sqrt(d) by default
    _pad0: u32,
    _pad1: u32,
}

const WQ: u32 = 64u;    // rows (queries or keys) per workgroup, one per invocation
const KT: u32 = 16u;    // rows per tile through workgroup memory
const MAXD: u32 = 128u; // the largest head size

fn row_of(b: u32, t: u32, p: Params) -> u32 {
    return b * p.t + t;
}

// ---- forward ------------------------------------------------------------------------------
@group(0) @binding(0) var<storage, read> f_qkv: array<f32>;
@group(0) @binding(1) var<storage, read_write> f_o: array<f32>;
@group(0) @binding(2) var<storage, read_write> f_lse: array<f32>;
@group(0) @binding(3) var<uniform> f_p: Params;

var<workgroup> f_k: array<f32, 2048>; // KT * MAXD
var<workgroup> f_v: array<f32, 2048>;

@compute @workgroup_size(64)
fn attention_forward(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let p = f_p;
    let bh = wg.y;
    let b = bh / p.heads;
    let h = bh % p.heads;
    let first = wg.x * WQ;
    let i = first + lid;
    let live = i < p.t;
    var q: array<f32, 128>;
    var acc: array<f32, 128>;
    if (live) {
        let base = row_of(b, i, p) * p.stride + p.q_off + h * p.d;
        for (var d = 0u; d < p.d; d++) {
            q[d] = f_qkv[base + d] * p.scale;
            acc[d] = 0.0;
        }
    }
    var m = -3.0e38;
    var l = 0.0;
    // Keys up to the workgroup's last query when causal, else all of them.
    var end = p.t;
    if (p.causal == 1u) {
        end = min(p.t, first + WQ);
    }
    for (var t0 = 0u; t0 < end; t0 += KT) {
        workgroupBarrier();
        for (var e = lid; e < KT * p.d; e += WQ) {
            let j = t0 + e / p.d;
            let d = e % p.d;
            var kv = 0.0;
            var vv = 0.0;
            if (j < p.t) {
                let base = row_of(b, j, p) * p.stride + h * p.d + d;
                kv = f_qkv[base + p.k_off];
                vv = f_qkv[base + p.v_off];
            }
            f_k[e] = kv;
            f_v[e] = vv;
        }
        workgroupBarrier();
        if (live) {
            var s: array<f32, 16>;
            var tile_max = -3.0e38;
            for (var jj = 0u; jj < KT; jj++) {
                let j = t0 + jj;
                var sc = -3.0e38;
                if (j < p.t && (p.causal == 0u || j <= i)) {
                    sc = 0.0;
                    for (var d = 0u; d < p.d; d++) {
                        sc += q[d] * f_k[jj * p.d + d];
                    }
                    tile_max = max(tile_max, sc);
                }
                s[jj] = sc;
            }
            if (tile_max > -3.0e38) {
                let m_new = max(m, tile_max);
                let corr = exp(m - m_new);
                l *= corr;
                for (var d = 0u; d < p.d; d++) {
                    acc[d] *= corr;
                }
                for (var jj = 0u; jj < KT; jj++) {
                    if (s[jj] > -3.0e38) {
                        let w = exp(s[jj] - m_new);
                        l += w;
                        for (var d = 0u; d < p.d; d++) {
                            acc[d] += w * f_v[jj * p.d + d];
                        }
                    }
                }
                m = m_new;
            }
        }
    }
    if (live) {
        let ob = row_of(b, i, p) * p.o_stride + h * p.d;
        let inv = 1.0 / l;
        for (var d = 0u; d < p.d; d++) {
            f_o[ob + d] = acc[d] * inv;
        }
        f_lse[bh * p.t + i] = m + log(l);
    }
}

// ---- backward: dq (and delta) -------------------------------------------------------------
@group(0) @binding(0) var<storage, read> q_qkv: array<f32>;
@group(0) @binding(1) var<storage, read> q_o: array<f32>;
@group(0) @binding(2) var<storage, read> q_do: array<f32>;
@group(0) @binding(3) var<storage, read> q_lse: array<f32>;
@group(0) @binding(4) var<storage, read_write> q_dqkv: array<f32>;
@group(0) @binding(5) var<storage, read_write> q_delta: array<f32>;
@group(0) @binding(6) var<uniform> q_p: Params;

var<workgroup> q_k: array<f32, 2048>;
var<workgroup> q_v: array<f32, 2048>;

@compute @workgroup_size(64)
fn attention_backward_dq(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let p = q_p;
    let bh = wg.y;
    let b = bh / p.heads;
    let h = bh % p.heads;
    let first = wg.x * WQ;
    let i = first + lid;
    let live = i < p.t;
    var q: array<f32, 128>;
    var g: array<f32, 128>;
    var dq: array<f32, 128>;
    var lse = 0.0;
    var delta = 0.0;
    if (live) {
        let qb = row_of(b, i, p) * p.stride + p.q_off + h * p.d;
        let ob = row_of(b, i, p) * p.o_stride + h * p.d;
        for (var d = 0u; d < p.d; d++) {
            q[d] = q_qkv[qb + d] * p.scale;
            g[d] = q_do[ob + d];
            dq[d] = 0.0;
            delta += g[d] * q_o[ob + d];
        }
        lse = q_lse[bh * p.t + i];
        q_delta[bh * p.t + i] = delta;
    }
    var end = p.t;
    if (p.causal == 1u) {
        end = min(p.t, first + WQ);
    }
    for (var t0 = 0u; t0 < end; t0 += KT) {
        workgroupBarrier();
        for (var e = lid; e < KT * p.d; e += WQ) {
            let j = t0 + e / p.d;
            let d = e % p.d;
            var kv = 0.0;
            var vv = 0.0;
            if (j < p.t) {
                let base = row_of(b, j, p) * p.stride + h * p.d + d;
                kv = q_qkv[base + p.k_off];
                vv = q_qkv[base + p.v_off];
            }
            q_k[e] = kv;
            q_v[e] = vv;
        }
        workgroupBarrier();
        if (live) {
            for (var jj = 0u; jj < KT; jj++) {
                let j = t0 + jj;
                if (j < p.t && (p.causal == 0u || j <= i)) {
                    var s = 0.0;
                    var dp = 0.0;
                    for (var d = 0u; d < p.d; d++) {
                        s += q[d] * q_k[jj * p.d + d];
                        dp += g[d] * q_v[jj * p.d + d];
                    }
                    let ds = exp(s - lse) * (dp - delta);
                    for (var d = 0u; d < p.d; d++) {
                        dq[d] += ds * q_k[jj * p.d + d];
                    }
                }
            }
        }
    }
    if (live) {
        let qb = row_of(b, i, p) * p.stride + p.q_off + h * p.d;
        for (var d = 0u; d < p.d; d++) {
            q_dqkv[qb + d] = dq[d] * p.scale;
        }
    }
}

// ---- backward: dk, dv -----------------------------------------------------------------------
@group(0) @binding(0) var<storage, read> k_qkv: array<f32>;
@group(0) @binding(1) var<storage, read> k_do: array<f32>;
@group(0) @binding(2) var<storage, read> k_lse: array<f32>;
@group(0) @binding(3) var<storage, read> k_delta: array<f32>;
@group(0) @binding(4) var<storage, read_write> k_dqkv: array<f32>;
@group(0) @binding(5) var<uniform> k_p: Params;

var<workgroup> k_q: array<f32, 2048>;
var<workgroup> k_g: array<f32, 2048>;

@compute @workgroup_size(64)
fn attention_backward_dkv(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let p = k_p;
    let bh = wg.y;
    let b = bh / p.heads;
    let h = bh % p.heads;
    let first = wg.x * WQ;
    let j = first + lid;
    let live = j < p.t;
    var kk: array<f32, 128>;
    var vv: array<f32, 128>;
    var dk: array<f32, 128>;
    var dv: array<f32, 128>;
    if (live) {
        let base = row_of(b, j, p) * p.stride + h * p.d;
        for (var d = 0u; d < p.d; d++) {
            kk[d] = k_qkv[base + p.k_off + d];
            vv[d] = k_qkv[base + p.v_off + d];
            dk[d] = 0.0;
            dv[d] = 0.0;
        }
    }
    // Queries from the tile holding the workgroup's first key when causal, else all.
    var start = 0u;
    if (k_p.causal == 1u) {
        start = (first / KT) * KT;
    }
    for (var t0 = start; t0 < p.t; t0 += KT) {
        workgroupBarrier();
        for (var e = lid; e < KT * p.d; e += WQ) {
            let i = t0 + e / p.d;
            let d = e % p.d;
            var qv = 0.0;
            var gv = 0.0;
            if (i < p.t) {
                qv = k_qkv[row_of(b, i, p) * p.stride + p.q_off + h * p.d + d] * p.scale;
                gv = k_do[row_of(b, i, p) * p.o_stride + h * p.d + d];
            }
            k_q[e] = qv;
            k_g[e] = gv;
        }
        workgroupBarrier();
        if (live) {
            for (var ii = 0u; ii < KT; ii++) {
                let i = t0 + ii;
                if (i < p.t && (p.causal == 0u || j <= i)) {
                    var s = 0.0;
                    var dp = 0.0;
                    for (var d = 0u; d < p.d; d++) {
                        s += k_q[ii * p.d + d] * kk[d];
                        dp += k_g[ii * p.d + d] * vv[d];
                    }
                    let pr = exp(s - k_lse[bh * p.t + i]);
                    let ds = pr * (dp - k_delta[bh * p.t + i]);
                    for (var d = 0u; d < p.d; d++) {
                        dv[d] += pr * k_g[ii * p.d + d];
                        dk[d] += ds * k_q[ii * p.d + d];
                    }
                }
            }
        }
    }
    if (live) {
        let base = row_of(b, j, p) * p.stride + h * p.d;
        for (var d = 0u; d < p.d; d++) {
            // k_q holds q·scale, so dk is already scaled.
            k_dqkv[base + p.k_off + d] = dk[d];
            k_dqkv[base + p.v_off + d] = dv[d];
        }
    }
}
