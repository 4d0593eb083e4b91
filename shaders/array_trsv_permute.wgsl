// The right-hand sides' rows in the order of an LU factorisation's row permutation, the
// first step of a solve (src/kernels/lu.rs, shaders/array_trsv.wgsl): x[b][i] = src[b][perm[b][i]].

struct Params {
    batch: u32,
    n: u32,
    k: u32,
    rhs: u32,
}

@group(0) @binding(0) var<storage, read> src: array<f32>;
@group(0) @binding(1) var<storage, read> m: array<u32>;
@group(0) @binding(2) var<storage, read_write> x: array<f32>;
@group(0) @binding(3) var<uniform> p: Params;

@compute @workgroup_size(256)
fn trsv_permute(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let e = gid.x + gid.y * nwg.x * 256u;
    let per = p.n * p.rhs;
    if (e >= p.batch * per) { return; }
    let b = e / per;
    let q = e % per;
    let i = q / p.rhs;
    let c = q % p.rhs;
    x[e] = src[b * per + m[b * p.n + i] * p.rhs + c];
}
