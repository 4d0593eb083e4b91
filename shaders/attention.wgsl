// The forward pass of fused attention; attention_common.wgsl (prepended by the crate) explains
// the design and holds Params, the workgroup memory and the helpers.

@group(0) @binding(0) var<storage, read> f_qkv: array<f32>;
@group(0) @binding(1) var<storage, read_write> f_o: array<f32>;
@group(0) @binding(2) var<storage, read_write> f_lse: array<f32>;
@group(0) @binding(3) var<uniform> f_p: Params;

var<workgroup> fs_m: array<vec4<f32>, 64>; // [tr][tc]: partial maxima, at the end sums

// Floats b + d0 .. b + d0 + 3 of f_qkv, those at or past column n as 0.
fn f_ld4(b: u32, d0: u32, n: u32) -> vec4<f32> {
    let c = min(vec4<u32>(d0) + vec4<u32>(0u, 1u, 2u, 3u), vec4<u32>(max(n, 1u) - 1u)) + vec4<u32>(b);
    let x = vec4<f32>(f_qkv[c.x], f_qkv[c.y], f_qkv[c.z], f_qkv[c.w]);
    return select(vec4<f32>(0.0), x, vec4<u32>(d0) + vec4<u32>(0u, 1u, 2u, 3u) < vec4<u32>(n));
}

fn f_blk(b: vec4<u32>, d0: u32, n: u32) -> mat4x4<f32> {
    return transpose(mat4x4<f32>(f_ld4(b.x, d0, n), f_ld4(b.y, d0, n), f_ld4(b.z, d0, n), f_ld4(b.w, d0, n)));
}

// own0 := the 4 rows at b, columns d0..d0+31 (of d > 32).
fn f_own(b: vec4<u32>, d0: u32, d: u32) {
    for (var i = 0u; i < min(8u, d); i++) {
        set_own(false, i, f_blk(b, d0 + 4u * i, d));
    }
}

// Row i's columns col..col+3 of O (those below d).
fn f_store(i: u32, col: u32, x: vec4<f32>, p: Params, h: u32, b: u32) {
    let ob = (b * p.t + i) * p.o_stride + h * p.d + col;
    if (col < p.d) { f_o[ob] = x.x; }
    if (col + 1u < p.d) { f_o[ob + 1u] = x.y; }
    if (col + 2u < p.d) { f_o[ob + 2u] = x.z; }
    if (col + 3u < p.d) { f_o[ob + 3u] = x.w; }
}

@compute @workgroup_size(64)
fn attention_forward(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let p = f_p;
    let dw4 = DW / 4u;
    let bk = TILE4 / dw4; // keys per tile
    let kc = bk / 8u;     // keys per invocation: 4, 2, 1
    let nb = DW / 32u;    // chunks of 32 columns: 1, 2, 4
    let bh = wg.y;
    let b = bh / p.heads;
    let h = bh % p.heads;
    let first = wg.x * BQ;
    let tr = lid / 8u;
    let tc = lid % 8u;
    let r0 = first + 4u * tr;
    let rows = vec4<u32>(r0) + vec4<u32>(0u, 1u, 2u, 3u);
    let qb = bases(b, r0, p.stride, p.q_off + h * p.d, p);
    if (nb == 1u) {
        for (var e = lid; e < TILE4; e += 64u) {
            let i = min(first + e / 8u, p.t - 1u);
            wc[e] = f_ld4((b * p.t + i) * p.stride + p.q_off + h * p.d, 4u * (e % 8u), p.d);
        }
        workgroupBarrier();
        stage_own(false, 2u, tr, p.d);
    }
    var acc0 = mat4x4<f32>();
    var acc1 = mat4x4<f32>();
    var acc2 = mat4x4<f32>();
    var acc3 = mat4x4<f32>();
    var m = vec4<f32>(NONE);
    var l = vec4<f32>(0.0); // the sums over this invocation's keys
    // Keys up to the workgroup's last query when causal, else all of them.
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
            wa[e] = f_ld4(base + p.k_off, 4u * (e % dw4), n);
            wb[e] = f_ld4(base + p.v_off, 4u * (e % dw4), n);
        }
        workgroupBarrier();
        // The scores of keys tc + 8c of the tile, masked, into wc (a loop with a run-time bound,
        // the tile's keys: see the prelude).
        let kn = min(bk, end - t0);
        let cn = min(kc, (kn + 7u) / 8u);
        var mt = vec4<f32>(NONE);
        for (var c = 0u; c < cn; c++) {
            var s = vec4<f32>(0.0);
            for (var ch = 0u; ch < nb; ch++) {
                if (nb > 1u) {
                    f_own(qb, 32u * ch, p.d);
                }
                s += dots_a((tc + 8u * c) * dw4 + 8u * ch);
            }
            s = masked(s, rows, t0 + tc + 8u * c, false, p);
            wc[(tc + 8u * c) * 8u + tr] = s;
            mt = max(mt, s);
        }
        fs_m[lid] = mt;
        workgroupBarrier();
        for (var u = 0u; u < 8u; u++) {
            mt = max(mt, fs_m[8u * tr + u]);
        }
        let m_new = max(m, mt);
        let corr = exp(m - m_new);
        l *= corr;
        // The probabilities, in place (each invocation its own entries).
        for (var c = 0u; c < cn; c++) {
            let s = wc[(tc + 8u * c) * 8u + tr];
            let w = select(vec4<f32>(0.0), exp(s - m_new), s > vec4<f32>(NONE));
            l += w;
            wc[(tc + 8u * c) * 8u + tr] = w;
        }
        acc0 = scale_rows(acc0, corr);
        acc1 = scale_rows(acc1, corr);
        acc2 = scale_rows(acc2, corr);
        acc3 = scale_rows(acc3, corr);
        m = m_new;
        workgroupBarrier();
        for (var jj = 0u; jj < kn; jj++) {
            let w = wc[jj * 8u + tr];
            let x = jj * dw4 + tc;
            acc0 += outer(wb[x], w);
            if (nb > 1u) {
                acc1 += outer(wb[x + 8u], w);
            }
            if (nb > 2u) {
                acc2 += outer(wb[x + 16u], w);
                acc3 += outer(wb[x + 24u], w);
            }
        }
    }
    // The row sums: the 8 invocations' parts, in tc order.
    workgroupBarrier();
    fs_m[lid] = l;
    workgroupBarrier();
    var ls = vec4<f32>(0.0);
    for (var u = 0u; u < 8u; u++) {
        ls += fs_m[8u * tr + u];
    }
    let inv = 1.0 / ls;
    let lse = m + log(ls);
    // The rows below T. Indexed by r: a copy, not the accumulators (an index unknown to the
    // compiler would keep them out of registers).
    let o = array<mat4x4<f32>, 4>(acc0, acc1, acc2, acc3);
    for (var r = 0u; r < min(4u, p.t - min(r0, p.t)); r++) {
        let i = r0 + r;
        for (var n = 0u; n < nb; n++) {
            f_store(i, 32u * n + 4u * tc, o[n][r] * inv[r], p, h, b);
        }
        if (tc == 0u) {
            f_lse[bh * p.t + i] = lse[r];
        }
    }
}

