// Blocked triangular solves with the factors of shaders/array_lu.wgsl (src/kernels/lu.rs),
// for a batch of right-hand sides x (batch × n × rhs, contiguous, in place), whose rows
// shaders/array_trsv_permute.wgsl has put in the permutation's order. Panels of at most 64
// rows go one at a time (forward for the unit lower factor, backward for U):
// - `trsm_block` solves the panel's diagonal block for every right-hand side: a workgroup
//   per column of x, an invocation per row of the panel, the solved values passed through
//   workgroup memory (one barrier per row), so no invocation loops more than 64 times;
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

const PANEL: u32 = 64u;

var<workgroup> solved: array<f32, 64>;

// The factors (trsm_block), or the panel's product T (trsm_sub: rows × rhs per matrix).
@group(0) @binding(0) var<storage, read> m: array<f32>;
@group(0) @binding(1) var<storage, read_write> x: array<f32>;
@group(0) @binding(2) var<uniform> p: Params;

@compute @workgroup_size(64)
fn trsm_block(
    @builtin(local_invocation_id) lid: vec3<u32>,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let g = wid.x + wid.y * nwg.x;
    let b = g / p.rhs;
    let c = g % p.rhs;
    let i = lid.x;
    // Barriers need every invocation of the workgroup: the loop bound is uniform and
    // the other invocations only skip loads and stores.
    let live = g < p.batch * p.rhs && i < p.rows;
    let row = p.row0 + i;
    let base = b * p.n * p.n;
    let o = (b * p.n + row) * p.rhs + c;
    var s = 0.0;
    if (live) { s = x[o]; }
    for (var t = 0u; t < p.rows; t = t + 1u) {
        let k = select(p.rows - 1u - t, t, LOWER == 1u);
        if (live && i == k) {
            if (LOWER == 0u) { s = s / m[base + row * p.n + row]; }
            solved[k] = s;
        }
        workgroupBarrier();
        let below = select((i < k), (i > k), LOWER == 1u);
        if (live && below) {
            s = s - m[base + row * p.n + p.row0 + k] * solved[k];
        }
    }
    if (live) { x[o] = s; }
}

// x[row0 + i][c] -= T[i][c] for the `rows` rows after (or before) a panel.
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
