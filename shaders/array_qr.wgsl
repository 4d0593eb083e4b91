// Householder QR of a batch of contiguous m×n matrices in place, and the forming of Q
// (src/kernels/qr.rs), as LAPACK's geqrf/orgqr do it without blocking, in the scalar type
// T: float32 as written, float64 in the twin src/kernels/qr.rs makes from the alias line. One entry point,
// one workgroup per (matrix, column), three modes (MODE):
// 0: the reflector of column k (LAPACK's slarfg): beta = -sign(a_kk)·‖a[k:, k]‖ goes to
//    a_kk, v (with v_0 = 1 implied) below it, tau to tau[b][k]; a column already zero
//    below the diagonal gets tau = 0, no reflection;
// 1: H_k = I - tau·v·vᵀ applied to column col0 + group of A itself (the trailing columns);
// 2: H_k applied to column col0 + group of Q (`q`, m × qcols).
// Each is a workgroup reduction over the rows (v·column) and an update; no loop of an
// invocation runs more than m/256 times.

struct Params {
    batch: u32,
    m: u32,
    n: u32,
    k: u32,
    qcols: u32,
    col0: u32,
    cols: u32,
    _pad: u32,
}

alias T = f32;

@group(0) @binding(0) var<storage, read_write> a: array<T>;
@group(0) @binding(1) var<storage, read_write> tau: array<T>;
@group(0) @binding(2) var<storage, read_write> q: array<T>;
@group(0) @binding(3) var<uniform> p: Params;

override MODE: u32 = 0u;

var<workgroup> red: array<T, 256>;

fn reduce_sum(t: u32, x: T) -> T {
    red[t] = x;
    workgroupBarrier();
    for (var h = 128u; h > 0u; h = h >> 1u) {
        if (t < h) { red[t] = red[t] + red[t + h]; }
        workgroupBarrier();
    }
    return workgroupUniformLoad(&red[0]);
}

@compute @workgroup_size(256)
fn qr_step(
    @builtin(local_invocation_index) t: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let g = wid.x + wid.y * nwg.x;
    let cols = select(p.cols, 1u, MODE == 0u);
    if (g >= p.batch * cols) { return; }
    let b = g / cols;
    let m = p.m;
    let n = p.n;
    let k = p.k;
    let base = b * m * n;
    if (MODE == 0u) {
        var s: T = 0.0;
        for (var r = k + 1u + t; r < m; r += 256u) {
            let x = a[base + r * n + k];
            s += x * x;
        }
        let xnorm2 = reduce_sum(t, s);
        if (xnorm2 == 0.0) {
            if (t == 0u) { tau[b * min(m, n) + k] = 0.0; }
            return;
        }
        let alpha = a[base + k * n + k];
        // Every invocation has read a_kk before it is replaced.
        storageBarrier();
        let norm = sqrt(alpha * alpha + xnorm2);
        let beta = select(norm, -norm, alpha >= 0.0);
        let scale = 1.0 / (alpha - beta);
        for (var r = k + 1u + t; r < m; r += 256u) {
            a[base + r * n + k] = a[base + r * n + k] * scale;
        }
        if (t == 0u) {
            a[base + k * n + k] = beta;
            tau[b * min(m, n) + k] = (beta - alpha) / beta;
        }
        return;
    }
    let j = p.col0 + g % cols;
    // tau = 0 (no reflection) makes w = 0: the update leaves the column as it is. (No early
    // return: tau is not uniform to the shader's analysis, and the reduction has barriers.)
    let tk = tau[b * min(m, n) + k];
    // The target: column j of A (stride n) or of Q (stride qcols).
    let tw = select(n, p.qcols, MODE == 2u);
    let tb = select(base, b * m * p.qcols, MODE == 2u);
    var s: T = 0.0;
    for (var r = k + t; r < m; r += 256u) {
        let v = select(a[base + r * n + k], 1.0, r == k);
        var x: T;
        if (MODE == 2u) { x = q[tb + r * tw + j]; } else { x = a[tb + r * tw + j]; }
        s += v * x;
    }
    let w = tk * reduce_sum(t, s);
    for (var r = k + t; r < m; r += 256u) {
        let v = select(a[base + r * n + k], 1.0, r == k);
        if (MODE == 2u) {
            q[tb + r * tw + j] = q[tb + r * tw + j] - v * w;
        } else {
            a[tb + r * tw + j] = a[tb + r * tw + j] - v * w;
        }
    }
}
