// Triangular solves with the factors of shaders/array_lu.wgsl (src/kernels/lu.rs), for a
// batch of right-hand sides x (batch × n × rhs, contiguous, in place), whose rows
// shaders/array_trsv_permute.wgsl has put in the permutation's order:
// - `trsv_step` with LOWER 1: column k of the unit lower factor, x[i] -= L[i][k]·x[k]
//   for i > k (k ascending);
// - `trsv_step` with LOWER 0: column k of U, x[i] -= U[i][k]·(x[k]/U[k][k]) for i < k
//   (k descending), then `trsv_diag` divides each row by its diagonal.
// A step reads row k of x and writes only other rows, so its invocations never race; one
// dispatch per column keeps every invocation loop-free.

struct Params {
    batch: u32,
    n: u32,
    k: u32,
    rhs: u32,
}

// The factors.
@group(0) @binding(0) var<storage, read> m: array<f32>;
@group(0) @binding(1) var<storage, read_write> x: array<f32>;
@group(0) @binding(2) var<uniform> p: Params;

override LOWER: u32 = 1u;

fn lu_at(b: u32, i: u32, j: u32) -> f32 {
    return m[(b * p.n + i) * p.n + j];
}

@compute @workgroup_size(256)
fn trsv_step(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let e = gid.x + gid.y * nwg.x * 256u;
    let k = p.k;
    let rows = select(k, p.n - k - 1u, LOWER == 1u);
    let per = rows * p.rhs;
    if (e >= p.batch * per) { return; }
    let b = e / per;
    let q = e % per;
    let c = q % p.rhs;
    let xk = x[(b * p.n + k) * p.rhs + c];
    if (LOWER == 1u) {
        let i = k + 1u + q / p.rhs;
        let o = (b * p.n + i) * p.rhs + c;
        x[o] = x[o] - lu_at(b, i, k) * xk;
    } else {
        let i = q / p.rhs;
        let o = (b * p.n + i) * p.rhs + c;
        x[o] = x[o] - lu_at(b, i, k) * (xk / lu_at(b, k, k));
    }
}

@compute @workgroup_size(256)
fn trsv_diag(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let e = gid.x + gid.y * nwg.x * 256u;
    let per = p.n * p.rhs;
    if (e >= p.batch * per) { return; }
    let b = e / per;
    let i = (e % per) / p.rhs;
    x[e] = x[e] / lu_at(b, i, i);
}
