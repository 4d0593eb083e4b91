// The rank-1 update after column step k (src/kernels/lu.rs; the step is `lu_panel` of one
// column for LU, `chol_pivot` of shaders/array_lu.wgsl for Cholesky): MODE 0
// (LU) a[i][j] -= a[i][k]·a[k][j] for i, j > k; MODE 1 (Cholesky, lower triangle only)
// a[i][j] -= a[i][k]·a[j][k] for i >= j > k. One invocation per element; it reads only
// column k and row k, which no invocation of the dispatch writes.
//
// In a blocked LU the panels are factored by shaders/array_lu_panel.wgsl; this step serves
// Cholesky and the LU of batches too large for the batched matmul (jend = n there).
//
// `lu_u12`: once a panel (columns k..jend) is factored, the panel's rows of the columns
// right of it become U12 = L11⁻¹·A12 by forward substitution, an invocation per column
// (and matrix), neighbouring invocations on neighbouring columns; at most 64·63/2 loop
// iterations each.

struct Params {
    batch: u32,
    n: u32,
    k: u32,
    jend: u32,
}

@group(0) @binding(0) var<storage, read_write> a: array<f32>;
@group(0) @binding(1) var<uniform> p: Params;

override MODE: u32 = 0u;

@compute @workgroup_size(256)
fn lu_update(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let n = p.n;
    let k = p.k;
    let r = n - k - 1u;
    let e = gid.x + gid.y * nwg.x * 256u;
    let base_of = n * n;
    if (MODE == 0u) {
        // Rows k+1..n × columns k+1..jend.
        let w = p.jend - k - 1u;
        let per = r * w;
        if (e >= p.batch * per) { return; }
        let b = e / per;
        let q = e % per;
        let i = k + 1u + q / w;
        let j = k + 1u + q % w;
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

@compute @workgroup_size(64)
fn lu_u12(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let n = p.n;
    let cols = n - p.jend;
    let g = gid.x + gid.y * nwg.x * 64u;
    if (g >= p.batch * cols) { return; }
    let b = g / cols;
    let j = p.jend + g % cols;
    let base = b * n * n;
    // Forward substitution down column j: row i takes the already final rows above it.
    for (var i = p.k + 1u; i < p.jend; i = i + 1u) {
        var s = a[base + i * n + j];
        for (var k = p.k; k < i; k = k + 1u) {
            s = s - a[base + i * n + k] * a[base + k * n + j];
        }
        a[base + i * n + j] = s;
    }
}
