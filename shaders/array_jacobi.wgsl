// One round of one-sided (Hestenes) Jacobi on a batch of contiguous m×n matrices A and
// their accumulated rotations V (n×n), in place (src/kernels/jacobi.rs), in the scalar type
// T: float32 as written, float64 in the twin src/kernels/jacobi.rs makes by substituting the
// alias line (and inverseSqrt, which WGSL defines for f32 only). A round
// rotates n/2 disjoint column pairs at once, chosen by the round-robin (circle) schedule
// over the n columns padded to an even count `np`, so one sweep is np-1 rounds and visits
// every pair once. One workgroup per (matrix, pair): the three dot products of columns p
// and q by a workgroup reduction, then the rotation that makes them orthogonal, applied to
// both columns of A and of V. A pair already orthogonal to within p.tol (relative; the host
// picks it per scalar type) is left alone; any
// rotation sets info[b] (atomically, to 1), which tells the host whether to sweep again.
// Every loop of an invocation runs at most max(m, n)/256 times.

struct Params {
    batch: u32,
    m: u32,
    n: u32,
    round: u32,
    np: u32,
    tol: f32,
    _pad1: u32,
    _pad2: u32,
}

alias T = f32;

@group(0) @binding(0) var<storage, read_write> a: array<T>;
@group(0) @binding(1) var<storage, read_write> v: array<T>;
@group(0) @binding(2) var<storage, read_write> info: array<atomic<u32>>;
@group(0) @binding(3) var<uniform> p: Params;

var<workgroup> red: array<vec3<T>, 256>;

@compute @workgroup_size(256)
fn jacobi_round(
    @builtin(local_invocation_index) t: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let g = wid.x + wid.y * nwg.x;
    let pairs = p.np / 2u;
    if (g >= p.batch * pairs) { return; }
    let b = g / pairs;
    let i = g % pairs;
    let last = p.np - 1u;
    var c0 = p.round;
    var c1 = last;
    if (i != 0u) {
        c0 = (p.round + i) % last;
        c1 = (p.round + last - i) % last;
    }
    let pc = min(c0, c1);
    let qc = max(c0, c1);
    if (qc >= p.n) { return; }
    let m = p.m;
    let n = p.n;
    let base = b * m * n;
    var s = vec3<T>(0.0);
    for (var r = t; r < m; r += 256u) {
        let x = a[base + r * n + pc];
        let y = a[base + r * n + qc];
        s += vec3<T>(x * x, y * y, x * y);
    }
    red[t] = s;
    workgroupBarrier();
    for (var h = 128u; h > 0u; h = h >> 1u) {
        if (t < h) { red[t] = red[t] + red[t + h]; }
        workgroupBarrier();
    }
    let tot = workgroupUniformLoad(&red[0]);
    let alpha = tot.x;
    let beta = tot.y;
    let gamma = tot.z;
    // A column below tol² in norm is left alone too: the host balances each matrix so its
    // largest entry is in [1, 2), so such a column is far below tol·‖A‖, and its squares may
    // have underflowed where its dot product with a large column did not, which breaks
    // Cauchy-Schwarz and made the same no-op rotation repeat every sweep.
    let tiny = T(p.tol) * T(p.tol);
    if (!(min(alpha, beta) >= tiny * tiny)) { return; }
    if (!(abs(gamma) > T(p.tol) * sqrt(alpha) * sqrt(beta))) { return; }
    if (t == 0u) { atomicMax(&info[b], 1u); }
    let zeta = (beta - alpha) / (2.0 * gamma);
    let tn = select(T(-1.0), T(1.0), zeta >= 0.0) / (abs(zeta) + sqrt(1.0 + zeta * zeta));
    let c = inverseSqrt(1.0 + tn * tn);
    let sn = c * tn;
    for (var r = t; r < m; r += 256u) {
        let x = a[base + r * n + pc];
        let y = a[base + r * n + qc];
        a[base + r * n + pc] = c * x - sn * y;
        a[base + r * n + qc] = sn * x + c * y;
    }
    let vb = b * n * n;
    for (var r = t; r < n; r += 256u) {
        let x = v[vb + r * n + pc];
        let y = v[vb + r * n + qc];
        v[vb + r * n + pc] = c * x - sn * y;
        v[vb + r * n + qc] = sn * x + c * y;
    }
}
