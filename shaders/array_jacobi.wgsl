// One round of one-sided (Hestenes) Jacobi on a batch of contiguous m×n matrices A and
// their accumulated rotations V (n×n), in place (src/kernels/jacobi.rs), in the scalar type
// T: float32 as written, float64 in the twin src/kernels/jacobi.rs makes by substituting the
// alias line, its only change (so no builtin WGSL defines for f32 alone, like inverseSqrt,
// may appear here). A round
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
    // The eighth root of the smallest squared column norm rotated (see `floor` below): the
    // float64 floor is far below float32's range, its eighth root is not.
    floor8: f32,
    _pad: u32,
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
    // A column whose squared norm is below `floor` = m·MIN_POSITIVE/tol² of T (the host's
    // value) is left alone: the squares of its entries may have underflowed (each losing
    // less than MIN_POSITIVE) where its dot product with a larger column did not, which
    // breaks Cauchy-Schwarz and made the same no-op rotation repeat every sweep. Above the
    // floor, underflow moves alpha and beta by at most tol² of themselves and gamma by at
    // most tol² of √(alpha·beta), so it cannot trigger the rotation below. Tied to
    // underflow, not to ‖A‖ (the host balances each matrix so its largest entry is about
    // 1), the floor keeps graded matrices' small singular values to full relative accuracy
    // ([[1, 1e-35], [0, 1e-35]] in float64). Built by squaring three times: multiplications
    // alone, valid for f64 wherever the twin is.
    let f2 = T(p.floor8) * T(p.floor8);
    let f4 = f2 * f2;
    let floor = f4 * f4;
    if (!(min(alpha, beta) >= floor)) { return; }
    if (!(abs(gamma) > T(p.tol) * sqrt(alpha) * sqrt(beta))) { return; }
    if (t == 0u) { atomicMax(&info[b], 1u); }
    let zeta = (beta - alpha) / (2.0 * gamma);
    let tn = select(T(-1.0), T(1.0), zeta >= 0.0) / (abs(zeta) + sqrt(1.0 + zeta * zeta));
    let c = 1.0 / sqrt(1.0 + tn * tn);
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
