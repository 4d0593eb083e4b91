// Right-looking LU with partial pivoting, and Cholesky, of a batch of contiguous n×n
// float32 matrices in place (src/kernels/lu.rs). Each column step k is two dispatches:
// `lu_pivot` here (one workgroup per matrix: the pivot by a reduction, the row swap and the
// scaling of the column below the diagonal) and `lu_update` (shaders/array_lu_update.wgsl:
// the rank-1 update of the rest of the current panel of columns; the block right of the
// panel is updated once per panel, by a matmul, see lu.rs). Every loop of an invocation runs at most
// n/256 times, which keeps under llvmpipe's per-invocation loop limit.
//
// MODE 0 is LU (L unit lower and U share the matrix, `perm` is the row permutation, info[2b]
// is 1 + the first column whose pivot was exactly zero, info[2b+1] the number of swaps).
// MODE 1 is Cholesky of the lower triangle (info[2b] is 1 + the first column whose diagonal
// was not positive; the upper triangle is left as it was). The host starts `perm` as the
// identity and `info` as zeros.

struct Params {
    batch: u32,
    n: u32,
    k: u32,
    rhs: u32,
}

@group(0) @binding(0) var<storage, read_write> a: array<f32>;
@group(0) @binding(1) var<storage, read_write> perm: array<u32>;
@group(0) @binding(2) var<storage, read_write> info: array<u32>;
@group(0) @binding(3) var<uniform> p: Params;

override MODE: u32 = 0u;

var<workgroup> best_v: array<f32, 256>;
var<workgroup> best_i: array<u32, 256>;

@compute @workgroup_size(256)
fn lu_pivot(
    @builtin(local_invocation_index) t: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let b = wid.x + wid.y * nwg.x;
    if (b >= p.batch) { return; }
    let n = p.n;
    let k = p.k;
    let base = b * n * n;
    if (MODE == 0u) {
        // The largest |a[r][k]| for r >= k, the first such row on ties (as LAPACK's isamax).
        // NaN is never larger, so a column of NaN keeps row k and spreads NaN as LAPACK does.
        var bv = -1.0;
        var bi = k;
        for (var r = k + t; r < n; r += 256u) {
            let v = abs(a[base + r * n + k]);
            if (v > bv) {
                bv = v;
                bi = r;
            }
        }
        best_v[t] = bv;
        best_i[t] = bi;
        workgroupBarrier();
        for (var s = 128u; s > 0u; s = s >> 1u) {
            if (t < s) {
                let ov = best_v[t + s];
                let oi = best_i[t + s];
                if (ov > best_v[t] || (ov == best_v[t] && oi < best_i[t])) {
                    best_v[t] = ov;
                    best_i[t] = oi;
                }
            }
            workgroupBarrier();
        }
        let pv = workgroupUniformLoad(&best_v[0]);
        let pr = workgroupUniformLoad(&best_i[0]);
        if (pv == 0.0) {
            // An exactly zero column: singular. Nothing to scale (the multipliers are
            // zero), so the factorisation goes on, as LAPACK's getrf does.
            if (t == 0u && info[2u * b] == 0u) { info[2u * b] = k + 1u; }
            return;
        }
        if (pr != k) {
            for (var c = t; c < n; c += 256u) {
                let x = a[base + k * n + c];
                a[base + k * n + c] = a[base + pr * n + c];
                a[base + pr * n + c] = x;
            }
            if (t == 0u) {
                let q = perm[b * n + k];
                perm[b * n + k] = perm[b * n + pr];
                perm[b * n + pr] = q;
                info[2u * b + 1u] = info[2u * b + 1u] + 1u;
            }
        }
        storageBarrier();
        let d = a[base + k * n + k];
        for (var r = k + 1u + t; r < n; r += 256u) {
            a[base + r * n + k] = a[base + r * n + k] / d;
        }
    } else {
        let d = a[base + k * n + k];
        // Every invocation has read the diagonal before it is overwritten.
        storageBarrier();
        if (!(d > 0.0)) {
            if (t == 0u && info[2u * b] == 0u) { info[2u * b] = k + 1u; }
            return;
        }
        let l = sqrt(d);
        if (t == 0u) { a[base + k * n + k] = l; }
        for (var r = k + 1u + t; r < n; r += 256u) {
            a[base + r * n + k] = a[base + r * n + k] / l;
        }
    }
}
