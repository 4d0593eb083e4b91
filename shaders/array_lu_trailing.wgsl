// The trailing update of one panel of the blocked LU (src/kernels/lu.rs): A22 -= T, where
// T = L21·U12 is the panel's product, computed by the matmul kernels into `t`
// (batch × r × r, r = n - jend, contiguous). One invocation per element.

struct Params {
    batch: u32,
    n: u32,
    jend: u32,
    _pad: u32,
}

@group(0) @binding(0) var<storage, read> t: array<f32>;
@group(0) @binding(1) var<storage, read_write> a: array<f32>;
@group(0) @binding(2) var<uniform> p: Params;

@compute @workgroup_size(256)
fn lu_trailing(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let n = p.n;
    let r = n - p.jend;
    let rr = r * r;
    let e = gid.x + gid.y * nwg.x * 256u;
    if (e >= p.batch * rr) { return; }
    let b = e / rr;
    let q = e % rr;
    let o = b * n * n + (p.jend + q / r) * n + p.jend + q % r;
    a[o] = a[o] - t[e];
}
