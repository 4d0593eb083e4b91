// The rank-1 update of column step k of shaders/array_lu.wgsl (src/kernels/lu.rs): MODE 0
// (LU) a[i][j] -= a[i][k]·a[k][j] for i, j > k; MODE 1 (Cholesky, lower triangle only)
// a[i][j] -= a[i][k]·a[j][k] for i >= j > k. One invocation per element; it reads only
// column k and row k, which no invocation of the dispatch writes.
//
// In a blocked LU (MODE 0 with jend < n) a column step (PART 0) is limited to the panel's
// columns (k < j < jend, every row below k). Once the panel is factored, and so all its
// row swaps made, PART 1 steps k = j0.. apply the same updates to the panel's rows of the
// columns right of it (k < i < jend, j >= jend: the forward substitution that makes U12);
// the trailing block (i, j >= jend) takes one matrix product per panel
// (shaders/array_lu_trailing.wgsl).

struct Params {
    batch: u32,
    n: u32,
    k: u32,
    jend: u32,
}

@group(0) @binding(0) var<storage, read_write> a: array<f32>;
@group(0) @binding(1) var<uniform> p: Params;

override MODE: u32 = 0u;
override PART: u32 = 0u;

@compute @workgroup_size(256)
fn lu_update(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let n = p.n;
    let k = p.k;
    let r = n - k - 1u;
    let e = gid.x + gid.y * nwg.x * 256u;
    let base_of = n * n;
    if (MODE == 0u) {
        // PART 0: rows k+1..n × columns k+1..jend; PART 1: rows k+1..jend × columns jend..n.
        let rows = select(r, p.jend - k - 1u, PART == 1u);
        let w = select(p.jend - k - 1u, n - p.jend, PART == 1u);
        let j0 = select(k + 1u, p.jend, PART == 1u);
        let per = rows * w;
        if (e >= p.batch * per) { return; }
        let b = e / per;
        let q = e % per;
        let i = k + 1u + q / w;
        let j = j0 + q % w;
        let base = b * base_of;
        a[base + i * n + j] = a[base + i * n + j] - a[base + i * n + k] * a[base + k * n + j];
    } else {
        let rr = r * r;
        if (e >= p.batch * rr) { return; }
        let b = e / rr;
        let q = e % rr;
        let i = k + 1u + q / r;
        let j = k + 1u + q % r;
        if (j > i) { return; }
        let base = b * base_of;
        a[base + i * n + j] = a[base + i * n + j] - a[base + i * n + k] * a[base + j * n + k];
    }
}
