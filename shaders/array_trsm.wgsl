// Blocked triangular solves with the factors of shaders/array_lu.wgsl (src/kernels/lu.rs),
// for a batch of right-hand sides x (batch × n × rhs, contiguous, in place), whose rows
// shaders/array_trsv_permute.wgsl has put in the permutation's order. Panels of at most 64
// rows go one at a time (forward for the unit lower factor, backward for U):
// - `trsm_block` solves the panel's diagonal block for every right-hand side: an
//   invocation per column of x (neighbouring invocations on neighbouring words), at most
//   64·65/2 loop iterations each;
// - the rows still to solve then take the panel's whole update as one product on the
//   matmul kernels (T = L21·X1, or U01·X1 going up), and `trsm_sub` subtracts it.

struct Params {
    batch: u32,
    n: u32,
    rhs: u32,
    // The panel's first row (trsm_block) or the first row to update (trsm_sub).
    row0: u32,
    // The panel's rows (trsm_block) or the rows to update (trsm_sub).
    rows: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

override LOWER: u32 = 1u;

// The factors (trsm_block), or the panel's product T (trsm_sub: rows × rhs per matrix).
@group(0) @binding(0) var<storage, read> m: array<f32>;
@group(0) @binding(1) var<storage, read_write> x: array<f32>;
@group(0) @binding(2) var<uniform> p: Params;

@compute @workgroup_size(64)
fn trsm_block(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let g = gid.x + gid.y * nwg.x * 64u;
    if (g >= p.batch * p.rhs) { return; }
    let b = g / p.rhs;
    let c = g % p.rhs;
    let base = b * p.n * p.n;
    for (var t = 0u; t < p.rows; t = t + 1u) {
        // Forward (unit lower) row t, or backward (U) row rows - 1 - t, from the rows solved.
        let i = select(p.row0 + p.rows - 1u - t, p.row0 + t, LOWER == 1u);
        var s = x[(b * p.n + i) * p.rhs + c];
        let k0 = select(i + 1u, p.row0, LOWER == 1u);
        let k1 = select(p.row0 + p.rows, i, LOWER == 1u);
        for (var k = k0; k < k1; k = k + 1u) {
            s = s - m[base + i * p.n + k] * x[(b * p.n + k) * p.rhs + c];
        }
        if (LOWER == 0u) { s = s / m[base + i * p.n + i]; }
        x[(b * p.n + i) * p.rhs + c] = s;
    }
}

@compute @workgroup_size(256)
fn trsm_sub(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let e = gid.x + gid.y * nwg.x * 256u;
    let per = p.rows * p.rhs;
    if (e >= p.batch * per) { return; }
    let b = e / per;
    let q = e % per;
    let o = (b * p.n + p.row0) * p.rhs + q;
    x[o] = x[o] - m[e];
}
