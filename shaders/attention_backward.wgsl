// The backward pass of fused attention: dq (and delta), then dk and dv;
// attention_common.wgsl (prepended by the crate) explains the design and holds Params, the
// workgroup memory and the helpers.

// ---- dq (and delta) ----------------------------------------------------------------------------
@group(0) @binding(0) var<storage, read> q_qkv: array<f32>;
@group(0) @binding(1) var<storage, read> q_o: array<f32>;
@group(0) @binding(2) var<storage, read> q_do: array<f32>;
@group(0) @binding(3) var<storage, read> q_lse: array<f32>;
@group(0) @binding(4) var<storage, read_write> q_dqkv: array<f32>;
@group(0) @binding(5) var<storage, read_write> q_delta: array<f32>;
@group(0) @binding(6) var<uniform> q_p: Params;

// Floats b + d0 .. b + d0 + 3 of q_qkv (q_do, q_o), those at or past column n as 0.
fn q_ld4(b: u32, d0: u32, n: u32) -> vec4<f32> {
    let c = min(vec4<u32>(d0) + vec4<u32>(0u, 1u, 2u, 3u), vec4<u32>(max(n, 1u) - 1u)) + vec4<u32>(b);
    let x = vec4<f32>(q_qkv[c.x], q_qkv[c.y], q_qkv[c.z], q_qkv[c.w]);
    return select(vec4<f32>(0.0), x, vec4<u32>(d0) + vec4<u32>(0u, 1u, 2u, 3u) < vec4<u32>(n));
}

fn q_ld4_do(b: u32, d0: u32, n: u32) -> vec4<f32> {
    let c = min(vec4<u32>(d0) + vec4<u32>(0u, 1u, 2u, 3u), vec4<u32>(max(n, 1u) - 1u)) + vec4<u32>(b);
    let x = vec4<f32>(q_do[c.x], q_do[c.y], q_do[c.z], q_do[c.w]);
    return select(vec4<f32>(0.0), x, vec4<u32>(d0) + vec4<u32>(0u, 1u, 2u, 3u) < vec4<u32>(n));
}

fn q_ld4_o(b: u32, d0: u32, n: u32) -> vec4<f32> {
    let c = min(vec4<u32>(d0) + vec4<u32>(0u, 1u, 2u, 3u), vec4<u32>(max(n, 1u) - 1u)) + vec4<u32>(b);
    let x = vec4<f32>(q_o[c.x], q_o[c.y], q_o[c.z], q_o[c.w]);
    return select(vec4<f32>(0.0), x, vec4<u32>(d0) + vec4<u32>(0u, 1u, 2u, 3u) < vec4<u32>(n));
}

fn q_blk(b: vec4<u32>, d0: u32, n: u32, from_do: bool) -> mat4x4<f32> {
    if (from_do) {
        return transpose(mat4x4<f32>(q_ld4_do(b.x, d0, n), q_ld4_do(b.y, d0, n), q_ld4_do(b.z, d0, n), q_ld4_do(b.w, d0, n)));
    }
    return transpose(mat4x4<f32>(q_ld4(b.x, d0, n), q_ld4(b.y, d0, n), q_ld4(b.z, d0, n), q_ld4(b.w, d0, n)));
}

// own1 (dO, `from_do`) or own0 (queries) := the 4 rows at b, columns d0..d0+31 (of d > 32).
fn q_own(b: vec4<u32>, d0: u32, d: u32, from_do: bool) {
    for (var i = 0u; i < min(8u, d); i++) {
        set_own(from_do, i, q_blk(b, d0 + 4u * i, d, from_do));
    }
}

fn q_store(b: u32, col: u32, x: vec4<f32>, p: Params) {
    if (col < p.d) { q_dqkv[b + col] = x.x; }
    if (col + 1u < p.d) { q_dqkv[b + col + 1u] = x.y; }
    if (col + 2u < p.d) { q_dqkv[b + col + 2u] = x.z; }
    if (col + 3u < p.d) { q_dqkv[b + col + 3u] = x.w; }
}

@compute @workgroup_size(64)
fn attention_backward_dq(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let p = q_p;
    let dw4 = DW / 4u;
    let bk = TILE4 / dw4;
    let kc = bk / 8u;
    let nb = DW / 32u;
    let bh = wg.y;
    let b = bh / p.heads;
    let h = bh % p.heads;
    let first = wg.x * BQ;
    let tr = lid / 8u;
    let tc = lid % 8u;
    let r0 = first + 4u * tr;
    let rows = vec4<u32>(r0) + vec4<u32>(0u, 1u, 2u, 3u);
    let qb = bases(b, r0, p.stride, p.q_off + h * p.d, p);
    let ob = bases(b, r0, p.o_stride, h * p.d, p);
    let lb = vec4<u32>(bh * p.t) + min(rows, vec4<u32>(p.t - 1u));
    let lse = vec4<f32>(q_lse[lb.x], q_lse[lb.y], q_lse[lb.z], q_lse[lb.w]);
    var delta = vec4<f32>(0.0);
    for (var ch = 0u; ch < nb; ch++) {
        workgroupBarrier();
        for (var e = lid; e < TILE4; e += 64u) {
            let i = min(first + e / 8u, p.t - 1u);
            let d0 = 32u * ch + 4u * (e % 8u);
            wa[e] = q_ld4((b * p.t + i) * p.stride + p.q_off + h * p.d, d0, p.d);
            wb[e] = q_ld4_do((b * p.t + i) * p.o_stride + h * p.d, d0, p.d);
            wc[e] = q_ld4_o((b * p.t + i) * p.o_stride + h * p.d, d0, p.d);
        }
        workgroupBarrier();
        let x = 32u * tr;
        for (var u = 0u; u < min(8u, p.d); u++) {
            delta += vec4<f32>(dot(wb[x + u], wc[x + u]), dot(wb[x + 8u + u], wc[x + 8u + u]),
                dot(wb[x + 16u + u], wc[x + 16u + u]), dot(wb[x + 24u + u], wc[x + 24u + u]));
        }
        if (nb == 1u) {
            stage_own(false, 0u, tr, p.d);
            stage_own(true, 1u, tr, p.d);
        }
    }
    if (tc == 0u) {
        for (var r = 0u; r < 4u; r++) {
            if (rows[r] < p.t) {
                q_delta[lb[r]] = delta[r];
            }
        }
    }
    var dq0 = mat4x4<f32>();
    var dq1 = mat4x4<f32>();
    var dq2 = mat4x4<f32>();
    var dq3 = mat4x4<f32>();
    var end = p.t;
    if (p.causal == 1u) {
        end = min(p.t, first + BQ);
    }
    for (var t0 = 0u; t0 < end; t0 += bk) {
        workgroupBarrier();
        for (var e = lid; e < TILE4; e += 64u) {
            let j = t0 + e / dw4;
            let base = (b * p.t + min(j, p.t - 1u)) * p.stride + h * p.d;
            let n = select(0u, p.d, j < p.t);
            wa[e] = q_ld4(base + p.k_off, 4u * (e % dw4), n);
            wb[e] = q_ld4(base + p.v_off, 4u * (e % dw4), n);
        }
        workgroupBarrier();
        // Keys tc + 8c of the tile: ds = p (dp - delta), p = exp(s - lse), 0 where masked (a
        // loop with a run-time bound, the tile's keys: see the prelude).
        let kn = min(bk, end - t0);
        let cn = min(kc, (kn + 7u) / 8u);
        for (var c = 0u; c < cn; c++) {
            var s = vec4<f32>(0.0);
            var dp = vec4<f32>(0.0);
            for (var ch = 0u; ch < nb; ch++) {
                if (nb > 1u) {
                    q_own(qb, 32u * ch, p.d, false);
                    q_own(ob, 32u * ch, p.d, true);
                }
                let x = (tc + 8u * c) * dw4 + 8u * ch;
                s += dots_a(x);
                dp += dots_b(x);
            }
            let m = masked(s, rows, t0 + tc + 8u * c, false, p);
            wc[(tc + 8u * c) * 8u + tr] = select(vec4<f32>(0.0), exp(m - lse) * (dp - delta), m > vec4<f32>(NONE));
        }
        workgroupBarrier();
        for (var jj = 0u; jj < kn; jj++) {
            let w = wc[jj * 8u + tr];
            let x = jj * dw4 + tc;
            dq0 += outer(wa[x], w);
            if (nb > 1u) {
                dq1 += outer(wa[x + 8u], w);
            }
            if (nb > 2u) {
                dq2 += outer(wa[x + 16u], w);
                dq3 += outer(wa[x + 24u], w);
            }
        }
    }
    // The rows below T, from a copy (as in the forward pass).
    let o = array<mat4x4<f32>, 4>(dq0, dq1, dq2, dq3);
    for (var r = 0u; r < min(4u, p.t - min(r0, p.t)); r++) {
        for (var n = 0u; n < nb; n++) {
            q_store(qb[r], 32u * n + 4u * tc, o[n][r] * p.scale, p);
        }
    }
}

// ---- dk, dv -----------------------------------------------------------------------------------
@group(0) @binding(0) var<storage, read> k_qkv: array<f32>;
@group(0) @binding(1) var<storage, read> k_do: array<f32>;
@group(0) @binding(2) var<storage, read> k_lse: array<f32>;
@group(0) @binding(3) var<storage, read> k_delta: array<f32>;
@group(0) @binding(4) var<storage, read_write> k_dqkv: array<f32>;
@group(0) @binding(5) var<uniform> k_p: Params;

var<workgroup> wd: array<vec4<f32>, 192>; // ds [query][tr], 24 queries (DW 32) or fewer

// Floats b + d0 .. b + d0 + 3 of k_qkv (k_do), those at or past column n as 0.
fn k_ld4(b: u32, d0: u32, n: u32) -> vec4<f32> {
    let c = min(vec4<u32>(d0) + vec4<u32>(0u, 1u, 2u, 3u), vec4<u32>(max(n, 1u) - 1u)) + vec4<u32>(b);
    let x = vec4<f32>(k_qkv[c.x], k_qkv[c.y], k_qkv[c.z], k_qkv[c.w]);
    return select(vec4<f32>(0.0), x, vec4<u32>(d0) + vec4<u32>(0u, 1u, 2u, 3u) < vec4<u32>(n));
}

fn k_ld4_do(b: u32, d0: u32, n: u32) -> vec4<f32> {
    let c = min(vec4<u32>(d0) + vec4<u32>(0u, 1u, 2u, 3u), vec4<u32>(max(n, 1u) - 1u)) + vec4<u32>(b);
    let x = vec4<f32>(k_do[c.x], k_do[c.y], k_do[c.z], k_do[c.w]);
    return select(vec4<f32>(0.0), x, vec4<u32>(d0) + vec4<u32>(0u, 1u, 2u, 3u) < vec4<u32>(n));
}

fn k_blk(b: vec4<u32>, d0: u32, n: u32) -> mat4x4<f32> {
    return transpose(mat4x4<f32>(k_ld4(b.x, d0, n), k_ld4(b.y, d0, n), k_ld4(b.z, d0, n), k_ld4(b.w, d0, n)));
}

// own1 (`second`) or own0 := the 4 rows at b, columns d0..d0+31 (of d > 32).
fn k_own(second: bool, b: vec4<u32>, d0: u32, d: u32) {
    for (var i = 0u; i < min(8u, d); i++) {
        set_own(second, i, k_blk(b, d0 + 4u * i, d));
    }
}

// p and ds of the 4 keys for query i (t0 + qq) into wc and wd.
fn k_probs(sc: vec4<f32>, dp: vec4<f32>, rows: vec4<u32>, t0: u32, qq: u32, tr: u32, bh: u32, p: Params) {
    let i = t0 + qq;
    let li = bh * p.t + min(i, p.t - 1u);
    let s = masked(sc, rows, i, true, p);
    let pv = select(vec4<f32>(0.0), exp(s - k_lse[li]), s > vec4<f32>(NONE));
    wc[qq * 8u + tr] = pv;
    wd[qq * 8u + tr] = pv * (dp - k_delta[li]);
}

fn k_store(b: u32, col: u32, x: vec4<f32>, p: Params) {
    if (col < p.d) { k_dqkv[b + col] = x.x; }
    if (col + 1u < p.d) { k_dqkv[b + col + 1u] = x.y; }
    if (col + 2u < p.d) { k_dqkv[b + col + 2u] = x.z; }
    if (col + 3u < p.d) { k_dqkv[b + col + 3u] = x.w; }
}

@compute @workgroup_size(64)
fn attention_backward_dkv(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let p = k_p;
    let dw4 = DW / 4u;
    // Queries per tile: 24, 16, 8 (24 of 32 when DW is 32, so that wd keeps the workgroup
    // memory at 15 KiB, below wgpu's downlevel limit of 16352 bytes).
    let bq = min(24u, TILE4 / dw4);
    let qc = bq / 8u;
    let nb = DW / 32u;
    let bh = wg.y;
    let b = bh / p.heads;
    let h = bh % p.heads;
    let first = wg.x * BQ;
    let tr = lid / 8u;
    let tc = lid % 8u;
    let r0 = first + 4u * tr;
    let rows = vec4<u32>(r0) + vec4<u32>(0u, 1u, 2u, 3u); // this invocation's keys
    let kb = bases(b, r0, p.stride, p.k_off + h * p.d, p);
    let vb = bases(b, r0, p.stride, p.v_off + h * p.d, p);
    if (nb == 1u) {
        for (var e = lid; e < TILE4; e += 64u) {
            let base = (b * p.t + min(first + e / 8u, p.t - 1u)) * p.stride + h * p.d;
            wa[e] = k_ld4(base + p.k_off, 4u * (e % 8u), p.d);
            wb[e] = k_ld4(base + p.v_off, 4u * (e % 8u), p.d);
        }
        workgroupBarrier();
        stage_own(false, 0u, tr, p.d);
        stage_own(true, 1u, tr, p.d);
    }
    var dk0 = mat4x4<f32>();
    var dk1 = mat4x4<f32>();
    var dk2 = mat4x4<f32>();
    var dk3 = mat4x4<f32>();
    var dv0 = mat4x4<f32>();
    var dv1 = mat4x4<f32>();
    var dv2 = mat4x4<f32>();
    var dv3 = mat4x4<f32>();
    // Queries from the tile holding the workgroup's first key when causal, else all.
    var start = 0u;
    if (p.causal == 1u) {
        start = (first / bq) * bq;
    }
    for (var t0 = start; t0 < p.t; t0 += bq) {
        workgroupBarrier();
        for (var e = lid; e < bq * dw4; e += 64u) {
            let i = min(t0 + e / dw4, p.t - 1u);
            let n = select(0u, p.d, t0 + e / dw4 < p.t);
            wa[e] = k_ld4((b * p.t + i) * p.stride + p.q_off + h * p.d, 4u * (e % dw4), n);
            wb[e] = k_ld4_do((b * p.t + i) * p.o_stride + h * p.d, 4u * (e % dw4), n);
        }
        workgroupBarrier();
        // Queries tc + 8c of the tile: p and ds into wc and wd (a loop with a run-time bound).
        let cn = min(qc, (min(bq, p.t - t0) + 7u) / 8u);
        for (var c = 0u; c < cn; c++) {
            var s = vec4<f32>(0.0);
            var dp = vec4<f32>(0.0);
            for (var ch = 0u; ch < nb; ch++) {
                if (nb > 1u) {
                    k_own(false, kb, 32u * ch, p.d);
                    k_own(true, vb, 32u * ch, p.d);
                }
                let x = (tc + 8u * c) * dw4 + 8u * ch;
                s += dots_a(x);
                dp += dots_b(x);
            }
            k_probs(s, dp, rows, t0, tc + 8u * c, tr, bh, p);
        }
        workgroupBarrier();
        let qn = min(bq, p.t - t0);
        for (var ii = 0u; ii < qn; ii++) {
            let wp = wc[ii * 8u + tr];
            let wq = wd[ii * 8u + tr];
            let x = ii * dw4 + tc;
            dv0 += outer(wb[x], wp);
            dk0 += outer(wa[x], wq);
            if (nb > 1u) {
                dv1 += outer(wb[x + 8u], wp);
                dk1 += outer(wa[x + 8u], wq);
            }
            if (nb > 2u) {
                dv2 += outer(wb[x + 16u], wp);
                dk2 += outer(wa[x + 16u], wq);
                dv3 += outer(wb[x + 24u], wp);
                dk3 += outer(wa[x + 24u], wq);
            }
        }
    }
    // The keys below T, from copies (as in the forward pass).
    let ok = array<mat4x4<f32>, 4>(dk0, dk1, dk2, dk3);
    let ov = array<mat4x4<f32>, 4>(dv0, dv1, dv2, dv3);
    for (var r = 0u; r < min(4u, p.t - min(r0, p.t)); r++) {
        for (var n = 0u; n < nb; n++) {
            k_store(kb[r], 32u * n + 4u * tc, ok[n][r] * p.scale, p);
            k_store(vb[r], 32u * n + 4u * tc, ov[n][r], p);
        }
    }
}
