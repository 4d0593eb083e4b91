// Matrix multiplication C = op(A)·op(B) with a fused epilogue, row-major f32.
// Needs the activation.wgsl and optim_rule.wgsl preludes (prepended by the crate).
//
// Logical shapes: op(A) is (M, K), op(B) is (K, N), C is (M, N).
//   NN: A stored (M, K), B stored (K, N)            forward        y = x·W
//   TN: A stored (K, M) (TRANS_A)                    weight grad    dW = xᵀ·dy
//   NT: B stored (N, K) (TRANS_B)                    input grad     dx = dy·Wᵀ
// Epilogue, per element: v = acc; EPI 1: v += aux[col] (bias); v = act(v);
// EPI 3: v *= act_GATE'(from output aux[row, col]) (backprop through the previous layer's
// activation: dz = (dy·Wᵀ) ⊙ f'(y)); if ACCUMULATE { v += C_old }; C = v.
// EPI 2 also writes aux[col] = Σ_k op(B)[k, col] (the bias gradient next to dW = xᵀ·dz).
// OPT (an optim_rule.wgsl code, 0 for none) turns the product into a gradient: C holds a
// parameter and is updated in place by that rule (states in st1, st2) instead of being
// overwritten, and with EPI 2 the column sums update the bias held in aux (states in bst1,
// bst2). A training step then needs no gradient buffers and no optimizer dispatches.
// No shape needs to be a multiple of a tile: every load and store is bounds-guarded.
//
// Bindings: a, b (read-only), aux (read-write: bias, column sums or gate; a dummy when EPI is
// 0), c (read-write), st1, st2, bst1, bst2 (read-write: optimizer states of C and of the
// bias; dummies without OPT), params.

struct Params {
    m: u32,
    n: u32,
    k: u32,
    alpha: f32, // leaky-relu slope
    q: OptParams, // the optimizer step with OPT
}

@group(0) @binding(0) var<storage, read> a: array<f32>;
@group(0) @binding(1) var<storage, read> b: array<f32>;
@group(0) @binding(2) var<storage, read_write> aux: array<f32>;
@group(0) @binding(3) var<storage, read_write> c: array<f32>;
@group(0) @binding(4) var<storage, read_write> st1: array<f32>;
@group(0) @binding(5) var<storage, read_write> st2: array<f32>;
@group(0) @binding(6) var<storage, read_write> bst1: array<f32>;
@group(0) @binding(7) var<storage, read_write> bst2: array<f32>;
@group(0) @binding(8) var<uniform> p: Params;

override TRANS_A: bool = false;
override TRANS_B: bool = false;
override EPI: u32 = 0u;  // 0 none, 1 bias, 2 column sums of op(B), 3 gate
override GATE: u32 = 0u; // activation code for EPI 3
override ACCUMULATE: bool = false;
override ACT: u32 = 0u;
override OPT: u32 = 0u;  // optimizer rule applied to C (and the bias), 0 for none

// op(A)[row, kk], zero outside.
fn load_a(row: u32, kk: u32) -> f32 {
    if (row >= p.m || kk >= p.k) {
        return 0.0;
    }
    if (TRANS_A) {
        return a[kk * p.m + row];
    }
    return a[row * p.k + kk];
}

// op(B)[kk, col], zero outside.
fn load_b(kk: u32, col: u32) -> f32 {
    if (kk >= p.k || col >= p.n) {
        return 0.0;
    }
    if (TRANS_B) {
        return b[col * p.k + kk];
    }
    return b[kk * p.n + col];
}

fn store_c(row: u32, col: u32, acc: f32) {
    if (row >= p.m || col >= p.n) {
        return;
    }
    var v = acc;
    let idx = row * p.n + col;
    if (OPT != OPT_NONE) {
        // acc is the gradient of the parameter C[row, col]: one optimizer step in place.
        var s1 = 0.0;
        var s2 = 0.0;
        if (opt_uses_s1(OPT, p.q)) {
            s1 = st1[idx];
        }
        if (opt_uses_s2(OPT)) {
            s2 = st2[idx];
        }
        let o = opt_apply(OPT, p.q, vec4<f32>(c[idx]), vec4<f32>(acc), vec4<f32>(s1), vec4<f32>(s2));
        if (opt_uses_s1(OPT, p.q)) {
            st1[idx] = o.s1.x;
        }
        if (opt_uses_s2(OPT)) {
            st2[idx] = o.s2.x;
        }
        c[idx] = o.theta.x;
        return;
    }
    if (EPI == 1u) {
        v += aux[col];
    }
    v = activate(ACT, v, p.alpha);
    if (EPI == 3u) {
        v *= activate_grad_from_output(GATE, aux[idx], p.alpha);
    }
    if (ACCUMULATE) {
        v += c[idx];
    }
    c[idx] = v;
}

// EPI 2: the column sum `s` of op(B) for column `col`, written to aux, or with OPT the
// gradient of the bias aux[col], updated in place.
fn store_colsum(col: u32, s: f32) {
    if (OPT == OPT_NONE) {
        aux[col] = s;
        return;
    }
    var s1 = 0.0;
    var s2 = 0.0;
    if (opt_uses_s1(OPT, p.q)) {
        s1 = bst1[col];
    }
    if (opt_uses_s2(OPT)) {
        s2 = bst2[col];
    }
    let o = opt_apply(OPT, p.q, vec4<f32>(aux[col]), vec4<f32>(s), vec4<f32>(s1), vec4<f32>(s2));
    if (opt_uses_s1(OPT, p.q)) {
        bst1[col] = o.s1.x;
    }
    if (opt_uses_s2(OPT)) {
        bst2[col] = o.s2.x;
    }
    aux[col] = o.theta.x;
}

// Baseline: one output per invocation, 16×16 work-groups. Kept as the reference point of the
// benchmark and as the fallback of last resort.
@compute @workgroup_size(16, 16)
fn matmul_naive_forward(@builtin(global_invocation_id) gid: vec3<u32>) {
    let row = gid.y;
    let col = gid.x;
    if (row >= p.m || col >= p.n) {
        return;
    }
    var acc = 0.0;
    for (var kk = 0u; kk < p.k; kk++) {
        acc = fma(load_a(row, kk), load_b(kk, col), acc);
    }
    if (EPI == 2u && row == 0u) {
        var s = 0.0;
        for (var kk = 0u; kk < p.k; kk++) {
            s += load_b(kk, col);
        }
        store_colsum(col, s);
    }
    store_c(row, col, acc);
}

// Shared-memory tiled kernel for hardware GPUs: a 64×64 tile of C per 16×16 work-group,
// each invocation a 4×4 register micro-tile, K in steps of 16 staged through workgroup memory
// (2 × 16 × 64 floats = 8 KiB).
const TILE: u32 = 64u;
const TK: u32 = 16u;
var<workgroup> tile_a: array<array<f32, 64>, 16>; // [k][row]
var<workgroup> tile_b: array<array<f32, 64>, 16>; // [k][col]

@compute @workgroup_size(16, 16)
fn matmul_tiled_forward(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(local_invocation_id) lid: vec3<u32>,
    @builtin(local_invocation_index) li: u32,
) {
    let row0 = wid.y * TILE;
    let col0 = wid.x * TILE;
    var acc: array<vec4<f32>, 4>;
    var colsum = vec4<f32>(0.0);
    let ktiles = (p.k + TK - 1u) / TK;
    for (var t = 0u; t < ktiles; t++) {
        let k0 = t * TK;
        // 1024 elements of each tile, 4 per invocation.
        for (var e = 0u; e < 4u; e++) {
            let flat = li + e * 256u;
            let kk = flat / TILE;
            let rc = flat % TILE;
            tile_a[kk][rc] = load_a(row0 + rc, k0 + kk);
            tile_b[kk][rc] = load_b(k0 + kk, col0 + rc);
        }
        workgroupBarrier();
        for (var kk = 0u; kk < TK; kk++) {
            let bv = vec4<f32>(
                tile_b[kk][lid.x * 4u],
                tile_b[kk][lid.x * 4u + 1u],
                tile_b[kk][lid.x * 4u + 2u],
                tile_b[kk][lid.x * 4u + 3u],
            );
            acc[0] = fma(vec4<f32>(tile_a[kk][lid.y * 4u]), bv, acc[0]);
            acc[1] = fma(vec4<f32>(tile_a[kk][lid.y * 4u + 1u]), bv, acc[1]);
            acc[2] = fma(vec4<f32>(tile_a[kk][lid.y * 4u + 2u]), bv, acc[2]);
            acc[3] = fma(vec4<f32>(tile_a[kk][lid.y * 4u + 3u]), bv, acc[3]);
            colsum += bv; // zero-padded past K, so the sum is exact
        }
        workgroupBarrier();
    }
    if (EPI == 2u && wid.y == 0u && lid.y == 0u) {
        for (var c = 0u; c < 4u; c++) {
            let col = col0 + lid.x * 4u + c;
            if (col < p.n) {
                store_colsum(col, colsum[c]);
            }
        }
    }
    for (var r = 0u; r < 4u; r++) {
        let row = row0 + lid.y * 4u + r;
        let col = col0 + lid.x * 4u;
        store_c(row, col, acc[r].x);
        store_c(row, col + 1u, acc[r].y);
        store_c(row, col + 2u, acc[r].z);
        store_c(row, col + 3u, acc[r].w);
    }
}
