// Implicit im2col: the A operand of a convolution's GEMMs, read straight from the NHWC
// tensor (no im2col buffer). A prelude of the matmul family (assembled after
// activation.wgsl and optim_rule.wgsl, before matmul.wgsl): the conv2d_* entry points of
// matmul.wgsl, matmul_tiled.wgsl and matmul_sg{S}.wgsl are the matmul kernels with their A
// loads replaced by the functions here, and the geometry is fixed per pipeline by override
// constants (so every division below is by a constant, which the compiler turns into a
// multiply). Conventions (src/kernels/conv2d.rs has the host side):
//
//   x (N, CH, CW, CC), y (N, OH, OW, OC), kernel (KH, KW, CC, OC) (Keras's HWIO), strides
//   SH, SW, dilations DH, DW, padding PH, PW before the first row / column.
//
//   IM2COL 1, forward:          y = im2col(x)·W          rows (n, oh, ow), k (kh, kw, ci)
//   IM2COL 2, backward data:    dx = im2col'(dy)·Wᵗ      rows (n, h, w), k (kh, kw, co)
//                               (stride 1 only; Wᵗ is the kernel with its channel axes
//                               swapped, (KH, KW, OC, CC), written by conv2d_transpose)
//   IM2COL 3, backward weights: dW = im2col(x)ᵀ·dy       rows (kh, kw, ci), k (n, oh, ow)
//
// Every element A[row, k] is a[base(row) + off(k)] when 0 ≤ h(row) + h(k) < VH and
// 0 ≤ w(row) + w(k) < VW, zero otherwise (padding, and taps past the input): the row and k
// sides each decompose into (h, w, offset), computed once per row and once per k, so the
// inner loops add two numbers and compare twice per element.
//
// KCHUNK (0: off) splits K: work-group z reduces k in [z·KCHUNK, (z+1)·KCHUNK) and writes
// its partial product (and column sums) at C + z·M·N (aux + z·N), for conv2d_reduce to sum.
// A multiple of every kernel's K step, so only the last chunk is ragged.

override IM2COL: u32 = 0u;
override CH: u32 = 1u;
override CW: u32 = 1u;
override CC: u32 = 1u;
override OH: u32 = 1u;
override OW: u32 = 1u;
override OC: u32 = 1u;
override KH: u32 = 1u;
override KW: u32 = 1u;
override SH: u32 = 1u;
override SW: u32 = 1u;
override PH: u32 = 0u;
override PW: u32 = 0u;
override DH: u32 = 1u;
override DW: u32 = 1u;
override KCHUNK: u32 = 0u;

// The extent h and w are checked against: the input's for forward and backward weights,
// dy's for backward data.
fn ix_vh() -> u32 {
    return select(CH, OH, IM2COL == 2u);
}

fn ix_vw() -> u32 {
    return select(CW, OW, IM2COL == 2u);
}

// A pixel (n, oh, ow) of y, as the window it reads from x: its top-left (h, w), and the
// offset of x[n, h, w, 0] (negative in the padding).
fn ix_pixel(i: u32) -> vec3<i32> {
    let n = i / (OH * OW);
    let r = i % (OH * OW);
    let h = i32((r / OW) * SH) - i32(PH);
    let w = i32((r % OW) * SW) - i32(PW);
    return vec3<i32>(h, w, ((i32(n * CH) + h) * i32(CW) + w) * i32(CC));
}

// A tap (kh, kw, ci) of the kernel: its offset (kh·DH, kw·DW) in the window, and that of
// x[0, kh·DH, kw·DW, ci].
fn ix_tap(i: u32) -> vec3<i32> {
    let t = i / CC;
    let h = i32((t / KW) * DH);
    let w = i32((t % KW) * DW);
    return vec3<i32>(h, w, (h * i32(CW) + w) * i32(CC) + i32(i % CC));
}

// Backward data, a pixel (n, h, w) of dx: where the taps' dy positions start, (h + PH,
// w + PW), and the offset of dy[n, h + PH, w + PW, 0].
fn ix_dx_pixel(i: u32) -> vec3<i32> {
    let n = i / (CH * CW);
    let r = i % (CH * CW);
    let h = i32(r / CW + PH);
    let w = i32(r % CW + PW);
    return vec3<i32>(h, w, ((i32(n * OH) + h) * i32(OW) + w) * i32(OC));
}

// Backward data, a tap (kh, kw, co): dy is read kh·DH rows and kw·DW columns back.
fn ix_dx_tap(i: u32) -> vec3<i32> {
    let t = i / OC;
    let h = -i32((t / KW) * DH);
    let w = -i32((t % KW) * DW);
    return vec3<i32>(h, w, (h * i32(OW) + w) * i32(OC) + i32(i % OC));
}

// The row side of A[row, k].
fn ix_row(i: u32) -> vec3<i32> {
    switch IM2COL {
        case 2u: { return ix_dx_pixel(i); }
        case 3u: { return ix_tap(i); }
        default: { return ix_pixel(i); }
    }
}

// The k side of A[row, k].
fn ix_k(i: u32) -> vec3<i32> {
    switch IM2COL {
        case 2u: { return ix_dx_tap(i); }
        case 3u: { return ix_pixel(i); }
        default: { return ix_tap(i); }
    }
}

// The k sides of four k at once.
struct Ix4 {
    h: vec4<i32>,
    w: vec4<i32>,
    off: vec4<i32>,
}

fn ix_k4(k: vec4<u32>) -> Ix4 {
    let e0 = ix_k(k.x);
    let e1 = ix_k(k.y);
    let e2 = ix_k(k.z);
    let e3 = ix_k(k.w);
    return Ix4(vec4<i32>(e0.x, e1.x, e2.x, e3.x), vec4<i32>(e0.y, e1.y, e2.y, e3.y),
        vec4<i32>(e0.z, e1.z, e2.z, e3.z));
}

// The first k of the work-group's chunk, and the end of its chunk.
fn k_begin(z: u32) -> u32 {
    return select(0u, z * KCHUNK, KCHUNK > 0u);
}

fn k_end(z: u32, k: u32) -> u32 {
    return select(k, min(k, z * KCHUNK + KCHUNK), KCHUNK > 0u);
}
