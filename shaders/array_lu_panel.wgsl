// The blocked LU's panel steps in few dispatches (src/kernels/lu.rs), LU with partial
// pivoting (info[2b] is 1 + the first column whose pivot was exactly zero, info[2b+1] the
// number of swaps; the host starts `perm` as the identity and `info` as zeros):
// - `lu_panel`: one workgroup per matrix factors columns k0..k1 of the panel that ends at
//   column jend: per column the pivot by a workgroup reduction, the swap of whole rows, the
//   scaling below the diagonal and the rank-1 update of the panel's columns right of it,
//   with barriers between the phases. The host picks k1 - k0 so that no invocation loops
//   more than about 32,768 times (llvmpipe stops an invocation after 65,535 iterations):
//   a column costs an invocation about n/4 + 3·n/256 + 8 iterations. With k1 = jend = k0 + 1
//   it is the pivot step alone, which the unblocked LU follows with `lu_update`.
// Then `lu_u12` (shaders/array_lu_update.wgsl) makes U12.

struct Params {
    batch: u32,
    n: u32,
    k0: u32,
    k1: u32,
    jend: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

@group(0) @binding(0) var<storage, read_write> a: array<f32>;
@group(0) @binding(1) var<storage, read_write> perm: array<u32>;
@group(0) @binding(2) var<storage, read_write> info: array<u32>;
@group(0) @binding(3) var<uniform> p: Params;

var<workgroup> best_v: array<f32, 256>;
var<workgroup> best_i: array<u32, 256>;

@compute @workgroup_size(256)
fn lu_panel(
    @builtin(local_invocation_index) t: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    // Every invocation of a workgroup reaches every barrier: a workgroup past the batch
    // runs the loops on no data instead of returning.
    let b = wid.x + wid.y * nwg.x;
    let live = b < p.batch;
    let n = p.n;
    let base = b * n * n;
    for (var k = p.k0; k < p.k1; k = k + 1u) {
        // The largest |a[r][k]| for r >= k, the first such row on ties (as LAPACK's isamax).
        var bv = -1.0;
        var bi = k;
        if (live) {
            for (var r = k + t; r < n; r += 256u) {
                let v = abs(a[base + r * n + k]);
                if (v > bv) {
                    bv = v;
                    bi = r;
                }
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
        if (live && pv == 0.0) {
            // An exactly zero column: singular. Nothing to scale (the multipliers are zero),
            // and the factorisation goes on, as LAPACK's getrf does.
            if (t == 0u && info[2u * b] == 0u) { info[2u * b] = k + 1u; }
        }
        if (live && pv != 0.0 && pr != k) {
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
        if (live && pv != 0.0) {
            let d = a[base + k * n + k];
            for (var r = k + 1u + t; r < n; r += 256u) {
                a[base + r * n + k] = a[base + r * n + k] / d;
            }
        }
        storageBarrier();
        // The rank-1 update of the panel's columns right of k (at most 63): invocation t
        // takes column k + 1 + t % 64 of every fourth row, so neighbouring invocations touch
        // neighbouring words (vector loads on lavapipe, coalesced on GPUs).
        let j = k + 1u + t % 64u;
        if (live && j < p.jend) {
            let u = a[base + k * n + j];
            for (var r = k + 1u + t / 64u; r < n; r += 4u) {
                a[base + r * n + j] = a[base + r * n + j] - a[base + r * n + k] * u;
            }
        }
        storageBarrier();
    }
}
