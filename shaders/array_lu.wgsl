// The column step of the unblocked Cholesky factorisation of a batch of contiguous n×n
// float32 matrices in place (src/kernels/lu.rs): `chol_pivot` here (one workgroup per
// matrix: the square root of the diagonal and the scaling of the column below it), then
// `lu_update` MODE 1 (shaders/array_lu_update.wgsl: the rank-1 update of the lower
// triangle). info[2b] becomes 1 + the first column whose diagonal was not positive; the
// upper triangle is left as it was. Every loop of an invocation runs at most n/256 times,
// which keeps under llvmpipe's per-invocation loop limit. (LU's pivot step is `lu_panel`,
// shaders/array_lu_panel.wgsl, one column or a chunk of a panel at a time.)

struct Params {
    batch: u32,
    n: u32,
    k: u32,
    rhs: u32,
}

@group(0) @binding(0) var<storage, read_write> a: array<f32>;
@group(0) @binding(1) var<storage, read_write> info: array<u32>;
@group(0) @binding(2) var<uniform> p: Params;

@compute @workgroup_size(256)
fn chol_pivot(
    @builtin(local_invocation_index) t: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let b = wid.x + wid.y * nwg.x;
    if (b >= p.batch) { return; }
    let n = p.n;
    let k = p.k;
    let base = b * n * n;
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
