// Matrix multiplication C = op(A)·op(B) with a fused epilogue, row-major f32.
// Needs the activation.wgsl, optim_rule.wgsl, im2col.wgsl, f16_round.wgsl and
// half_operands.wgsl preludes (prepended by the crate): with HALF every operand load goes
// through h16/h16v (float16 operands, f32 accumulation; the generated kernels' direct loads
// are wrapped by matmul_gen::half).
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
// The kernels: the naive one here; register-blocked and shared-memory tiled ones in
// matmul_tiled.wgsl; subgroup-broadcast ones per subgroup size in matmul_sg{S}.wgsl.
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

// The same buffers seen as vec4s, for the 16-byte loads and stores of the aligned kernels.
@group(0) @binding(0) var<storage, read> a4: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> b4: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> aux4: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read_write> c4: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read_write> st1_4: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read_write> st2_4: array<vec4<f32>>;
@group(0) @binding(6) var<storage, read_write> bst1_4: array<vec4<f32>>;
@group(0) @binding(7) var<storage, read_write> bst2_4: array<vec4<f32>>;


override TRANS_A: bool = false;
override TRANS_B: bool = false;
override EPI: u32 = 0u;  // 0 none, 1 bias, 2 column sums of op(B), 3 gate
override GATE: u32 = 0u; // activation code for EPI 3
override ACCUMULATE: bool = false;
override ACT: u32 = 0u;
override OPT: u32 = 0u;  // optimizer rule applied to C (and the bias), 0 for none

// ---- Batches and strides (BATCHED) ---------------------------------------------------------
// A batched product computes one C per work-group z (z < count). Operand X's matrix z starts
// at X.base + (z / heads)·X.outer + (z % heads)·X.inner and its stored rows are X.ld apart,
// which lets attention read a packed QKV tensor directly: z = b·H + h, outer the sequence's
// size, inner the head's columns, ld the packed row. The geometry travels in the uniform's
// optimizer words, as bit patterns (`BatchedParams` in src/kernels/matmul_batch.rs; WGSL
// cannot bind a second view of the uniform): a batched product has no fused update (the
// host refuses it). Without BATCHED the offsets are zero and the strides the stored row
// lengths, so the other kernels compile to what they were.
override BATCHED: bool = false;

// This work-group's offsets into a, b and c (in floats, and in vec4s for the aligned
// kernels); set by batch_begin, zero otherwise.
var<private> a_off: u32;
var<private> b_off: u32;
var<private> c_off: u32;
var<private> a_off4: u32;
var<private> b_off4: u32;

fn batch_begin(z: u32) {
    if (BATCHED) {
        let heads = p.q.n;
        let o = z / heads;
        let i = z % heads;
        a_off = bitcast<u32>(p.q.lr) + o * bitcast<u32>(p.q.beta1) + i * bitcast<u32>(p.q.beta2);
        b_off = bitcast<u32>(p.q.weight_decay) + o * bitcast<u32>(p.q.step_size) + i * bitcast<u32>(p.q.bc2_sqrt);
        c_off = p.q.nesterov + o * bitcast<u32>(p.q.rho) + i * bitcast<u32>(p.q.one_minus_beta1);
        a_off4 = a_off / 4u;
        b_off4 = b_off / 4u;
    }
}

// Floats between stored rows of A ((M, K), or (K, M) with TRANS_A), of B ((K, N), or (N, K)
// with TRANS_B) and of C.
fn a_ld() -> u32 {
    if (BATCHED) {
        return bitcast<u32>(p.q.eps);
    }
    return select(p.k, p.m, TRANS_A);
}

fn b_ld() -> u32 {
    if (BATCHED) {
        return bitcast<u32>(p.q.momentum);
    }
    return select(p.n, p.k, TRANS_B);
}

fn c_ld() -> u32 {
    if (BATCHED) {
        return bitcast<u32>(p.q.one_minus_beta2);
    }
    return p.n;
}

// Strides of op(A) along k and along rows, of op(B) along k and along columns.
fn a_ks() -> u32 {
    return select(1u, a_ld(), TRANS_A);
}

fn a_ms() -> u32 {
    return select(a_ld(), 1u, TRANS_A);
}

fn b_ks() -> u32 {
    return select(b_ld(), 1u, TRANS_B);
}

fn b_ns() -> u32 {
    return select(1u, b_ld(), TRANS_B);
}

// op(A)[row, kk], zero outside.
fn load_a(row: u32, kk: u32) -> f32 {
    if (row >= p.m || kk >= p.k) {
        return 0.0;
    }
    if (TRANS_A) {
        return h16(a[a_off + kk * a_ld() + row]);
    }
    return h16(a[a_off + row * a_ld() + kk]);
}

// op(B)[kk, col], zero outside.
fn load_b(kk: u32, col: u32) -> f32 {
    if (kk >= p.k || col >= p.n) {
        return 0.0;
    }
    if (TRANS_B) {
        return h16(b[b_off + col * b_ld() + kk]);
    }
    return h16(b[b_off + kk * b_ld() + col]);
}

fn store_c(row: u32, col: u32, acc: f32) {
    if (row >= p.m || col >= p.n) {
        return;
    }
    var v = acc;
    // C's element (strided when batched); the optimizer states and the gate are never batched.
    let idx = row * p.n + col;
    let ci = c_off + row * c_ld() + col;
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
        let o = opt_apply(OPT, p.q, vec4<f32>(c[ci]), vec4<f32>(acc), vec4<f32>(s1), vec4<f32>(s2));
        if (opt_uses_s1(OPT, p.q)) {
            st1[idx] = o.s1.x;
        }
        if (opt_uses_s2(OPT)) {
            st2[idx] = o.s2.x;
        }
        c[ci] = o.theta.x;
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
        v += c[ci];
    }
    c[ci] = v;
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
// benchmark and as the fallback of last resort. K advances four at a time (loads past K are
// zero), so lavapipe's loop limit of 65,535 iterations allows K up to 262,140.
@compute @workgroup_size(16, 16)
fn matmul_naive_forward(@builtin(global_invocation_id) gid: vec3<u32>) {
    batch_begin(gid.z);
    let row = gid.y;
    let col = gid.x;
    if (row >= p.m || col >= p.n) {
        return;
    }
    var acc = 0.0;
    for (var kk = 0u; kk < p.k; kk += 4u) {
        acc = fma(load_a(row, kk), load_b(kk, col), acc);
        acc = fma(load_a(row, kk + 1u), load_b(kk + 1u, col), acc);
        acc = fma(load_a(row, kk + 2u), load_b(kk + 2u, col), acc);
        acc = fma(load_a(row, kk + 3u), load_b(kk + 3u, col), acc);
    }
    if (EPI == 2u && row == 0u) {
        var s = 0.0;
        for (var kk = 0u; kk < p.k; kk += 4u) {
            s += load_b(kk, col) + load_b(kk + 1u, col) + load_b(kk + 2u, col) + load_b(kk + 3u, col);
        }
        store_colsum(col, s);
    }
    store_c(row, col, acc);
}

// store_c for four consecutive columns at once (N a multiple of 4, col0 too): one 16-byte
// store instead of four scattered ones, which matters when K is short.
fn store_c4(row: u32, col0: u32, acc: vec4<f32>) {
    if (row >= p.m || col0 >= p.n) {
        return;
    }
    var v = acc;
    let idx = (row * p.n + col0) / 4u;
    let ci = (c_off + row * c_ld() + col0) / 4u;
    if (OPT != OPT_NONE) {
        // acc is the gradient of four parameters of C: one optimizer step in place.
        var s1 = vec4<f32>(0.0);
        var s2 = vec4<f32>(0.0);
        if (opt_uses_s1(OPT, p.q)) {
            s1 = st1_4[idx];
        }
        if (opt_uses_s2(OPT)) {
            s2 = st2_4[idx];
        }
        let o = opt_apply(OPT, p.q, c4[ci], acc, s1, s2);
        if (opt_uses_s1(OPT, p.q)) {
            st1_4[idx] = o.s1;
        }
        if (opt_uses_s2(OPT)) {
            st2_4[idx] = o.s2;
        }
        c4[ci] = o.theta;
        return;
    }
    if (EPI == 1u) {
        v += aux4[col0 / 4u];
    }
    v = vec4<f32>(activate(ACT, v.x, p.alpha), activate(ACT, v.y, p.alpha), activate(ACT, v.z, p.alpha), activate(ACT, v.w, p.alpha));
    if (EPI == 3u) {
        let y = aux4[idx];
        v *= vec4<f32>(activate_grad_from_output(GATE, y.x, p.alpha), activate_grad_from_output(GATE, y.y, p.alpha),
            activate_grad_from_output(GATE, y.z, p.alpha), activate_grad_from_output(GATE, y.w, p.alpha));
    }
    if (ACCUMULATE) {
        v += c4[ci];
    }
    c4[ci] = v;
}

// store_colsum for four consecutive columns (N a multiple of 4, col0 too).
fn store_colsum4(col0: u32, s: vec4<f32>) {
    let i = col0 / 4u;
    if (OPT == OPT_NONE) {
        aux4[i] = s;
        return;
    }
    var s1 = vec4<f32>(0.0);
    var s2 = vec4<f32>(0.0);
    if (opt_uses_s1(OPT, p.q)) {
        s1 = bst1_4[i];
    }
    if (opt_uses_s2(OPT)) {
        s2 = bst2_4[i];
    }
    let o = opt_apply(OPT, p.q, aux4[i], s, s1, s2);
    if (opt_uses_s1(OPT, p.q)) {
        bst1_4[i] = o.s1;
    }
    if (opt_uses_s2(OPT)) {
        bst2_4[i] = o.s2;
    }
    aux4[i] = o.theta;
}

fn sg_load_b4(kk: u32, bcol: vec4<u32>, bks: u32) -> vec4<f32> {
    let base = b_off + kk * bks;
    return h16v(vec4<f32>(b[base + bcol.x], b[base + bcol.y], b[base + bcol.z], b[base + bcol.w]));
}

// Rows of C per work-group of the shallow kernels.
const SHALLOW_ROWS: u32 = 32u;

// ---- Convolutions: the A operand through implicit im2col (im2col.wgsl) ---------------------
// The conv2d_* entry points are these kernels with their A loads replaced by the ones below
// and their K loop limited to the work-group's chunk; their stores go through conv_store*,
// which write the partial products of a split K.

// A[row, k] from its row and k sides; zero outside the image and where `live` is false (k
// past the chunk).
fn conv_a(r: vec3<i32>, k: vec3<i32>, live: bool) -> f32 {
    let ok = live && u32(r.x + k.x) < ix_vh() && u32(r.y + k.y) < ix_vw();
    return select(0.0, h16(a[u32(select(0, r.z + k.z, ok))]), ok);
}

// Four elements of one row at four k.
fn conv_a4(r: vec3<i32>, k: Ix4, live: vec4<bool>) -> vec4<f32> {
    let ok = live & (vec4<u32>(vec4<i32>(r.x) + k.h) < vec4<u32>(ix_vh()))
        & (vec4<u32>(vec4<i32>(r.y) + k.w) < vec4<u32>(ix_vw()));
    let at = vec4<u32>(select(vec4<i32>(0), vec4<i32>(r.z) + k.off, ok));
    return select(vec4<f32>(0.0), h16v(vec4<f32>(a[at.x], a[at.y], a[at.z], a[at.w])), ok);
}

// Four consecutive channels of one tap and pixel in one 16-byte load (the channel count a
// multiple of 4, the first channel too).
fn conv_a_v4(r: vec3<i32>, k: vec3<i32>, live: bool) -> vec4<f32> {
    let ok = live && u32(r.x + k.x) < ix_vh() && u32(r.y + k.y) < ix_vw();
    return select(vec4<f32>(0.0), h16v(a4[u32(select(0, r.z + k.z, ok)) / 4u]), ok);
}

// IM2COL 4, backward data of a strided convolution (the naive kernel only: the stride makes
// the address depend on a division of the sum of both sides): A[(n, h, w), (kh, kw, co)] =
// dy[n, oh, ow, co] where oh = (h + PH − kh·DH) / SH divides exactly and lies inside dy
// (likewise ow), zero otherwise.
fn dx_strided_a(row: u32, kk: u32, kend: u32) -> f32 {
    if (row >= p.m || kk >= kend) {
        return 0.0;
    }
    let n = row / (CH * CW);
    let r = row % (CH * CW);
    let co = kk % OC;
    let t = kk / OC;
    let th = i32(r / CW + PH) - i32((t / KW) * DH);
    let tw = i32(r % CW + PW) - i32((t % KW) * DW);
    if (th < 0 || tw < 0 || u32(th) % SH != 0u || u32(tw) % SW != 0u) {
        return 0.0;
    }
    let oh = u32(th) / SH;
    let ow = u32(tw) / SW;
    if (oh >= OH || ow >= OW) {
        return 0.0;
    }
    return h16(a[((n * OH + oh) * OW + ow) * OC + co]);
}

// load_a of the conv kernels: op(A)[row, kk], zero past M and past the chunk's end.
fn conv_load_a(row: u32, kk: u32, kend: u32) -> f32 {
    if (IM2COL == 4u) {
        return dx_strided_a(row, kk, kend);
    }
    return conv_a(ix_row(min(row, p.m - 1u)), ix_k(min(kk, p.k - 1u)), row < p.m && kk < kend);
}

// The naive kernel's convolution twin: one output per invocation, K limited to the chunk of
// work-group z (the direct kernel of last resort, and the only one for the backward data
// pass of a strided convolution).
@compute @workgroup_size(16, 16)
fn conv2d_naive_forward(@builtin(global_invocation_id) gid: vec3<u32>) {
    let row = gid.y;
    let col = gid.x;
    if (row >= p.m || col >= p.n) {
        return;
    }
    let kbeg = k_begin(gid.z);
    let kend = k_end(gid.z, p.k);
    var acc = 0.0;
    for (var kk = kbeg; kk < kend; kk += 4u) {
        acc = fma(conv_load_a(row, kk, kend), load_b(kk, col), acc);
        acc = fma(conv_load_a(row, kk + 1u, kend), load_b(kk + 1u, col), acc);
        acc = fma(conv_load_a(row, kk + 2u, kend), load_b(kk + 2u, col), acc);
        acc = fma(conv_load_a(row, kk + 3u, kend), load_b(kk + 3u, col), acc);
    }
    if (EPI == 2u && row == 0u) {
        var s = 0.0;
        for (var kk = kbeg; kk < kend; kk++) {
            s += load_b(kk, col);
        }
        conv_colsum(gid.z, col, s);
    }
    conv_store(gid.z, row, col, acc);
}

// store_c of the conv kernels: the epilogue as for a matmul, or with a split K the partial
// product of chunk z.
fn conv_store(z: u32, row: u32, col: u32, v: f32) {
    if (KCHUNK == 0u) {
        store_c(row, col, v);
        return;
    }
    if (row < p.m && col < p.n) {
        c[z * p.m * p.n + row * p.n + col] = v;
    }
}

fn conv_store4(z: u32, row: u32, col0: u32, v: vec4<f32>) {
    if (KCHUNK == 0u) {
        store_c4(row, col0, v);
        return;
    }
    if (row < p.m && col0 < p.n) {
        c4[(z * p.m * p.n + row * p.n + col0) / 4u] = v;
    }
}

fn conv_colsum(z: u32, col: u32, s: f32) {
    if (KCHUNK == 0u) {
        store_colsum(col, s);
        return;
    }
    aux[z * p.n + col] = s;
}

fn conv_colsum4(z: u32, col0: u32, s: vec4<f32>) {
    if (KCHUNK == 0u) {
        store_colsum4(col0, s);
        return;
    }
    aux4[(z * p.n + col0) / 4u] = s;
}
