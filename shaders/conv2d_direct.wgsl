// The direct convolution for a tiny K = KH·KW·CC ≤ 32 (an image network's first layer:
// 1 or 3 input channels), the forward pass only: y = act(conv(x, W) + bias), the same
// layouts and epilogue as the implicit GEMM's forward (x (N, CH, CW, CC), W (KH, KW, CC, OC)
// in Keras's HWIO, y (N, OH, OW, OC)); src/kernels/conv2d_direct.rs has the host side.
//
// Why not the GEMM: with K = 9 the GEMM kernels' K step (16 to 64) is mostly zeros, and each
// output value costs a tile's worth of loads for 9 multiply-adds. Here an invocation owns PX
// consecutive output pixels and CT4·4 output channels: it loads each pixel's K input values
// once and feeds each to all of its channels, and each weight vec4 once for all its pixels.
// The channel block is the work-group's (workgroup_id.y), so every W and bias load has a
// uniform address — one scalar load broadcast to the lanes on a SIMD CPU adapter (lavapipe),
// not a per-lane gather — and only x is gathered, once per pixel and tap.
// OC must be a multiple of 4 (y and W are read and written as vec4); the host falls back to
// the GEMM otherwise. Loops run K ≤ 32 times per invocation, far inside llvmpipe's limit.
// With HALF (half_operands.wgsl, prepended with f16_round.wgsl) x and W are rounded to
// binary16 as they are loaded (the mixed_float16 policy); sums stay f32.

override CH: u32 = 1u;
override CW: u32 = 1u;
override CC: u32 = 1u;
override OH: u32 = 1u;
override OW: u32 = 1u;
override OC: u32 = 4u;
override KH: u32 = 1u;
override KW: u32 = 1u;
override SH: u32 = 1u;
override SW: u32 = 1u;
override PH: u32 = 0u;
override PW: u32 = 0u;
override DH: u32 = 1u;
override DW: u32 = 1u;
// Activation code (activation.wgsl), whether a bias is added, vec4 channels per invocation
// (1..4).
override ACT: u32 = 0u;
override HAS_BIAS: u32 = 0u;
override CT4: u32 = 4u;

// Output pixels per invocation (the four pixels and four columns are spelled out, not
// arrays: llvmpipe keeps a dynamically indexed private array in memory).
const PX: u32 = 4u;

struct Params {
    // Output pixels, N·OH·OW.
    m: u32,
    // Work-groups along x (a grid taller than the dispatch limit folds into z).
    groups_x: u32,
    alpha: f32,
    _pad: u32,
}

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> w: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> bias: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read_write> y: array<vec4<f32>>;
@group(0) @binding(4) var<uniform> params: Params;

fn finish(acc: vec4<f32>, c: u32) -> vec4<f32> {
    var v = acc;
    if HAS_BIAS != 0u {
        v += bias[c];
    }
    let a = params.alpha;
    return vec4<f32>(activate(ACT, v.x, a), activate(ACT, v.y, a), activate(ACT, v.z, a),
        activate(ACT, v.w, a));
}

// A pixel's window: its top-left (h, w) in x (negative in the padding) and the offset of
// x[n, 0, 0, 0].
fn pixel(p: u32) -> vec3<i32> {
    let n = p / (OH * OW);
    let r = p % (OH * OW);
    return vec3<i32>(i32((r / OW) * SH) - i32(PH), i32((r % OW) * SW) - i32(PW),
        i32(n * CH * CW * CC));
}

// The offset of the tap t = (kh·DH, kw·DW) of window q's channel 0, or -1 outside the input
// (padding: the tap multiplies zero).
fn tap(q: vec3<i32>, t: vec2<i32>) -> i32 {
    let h = q.x + t.x;
    let w = q.y + t.y;
    let inside = h >= 0 && h < i32(CH) && w >= 0 && w < i32(CW);
    return select(-1, q.z + (h * i32(CW) + w) * i32(CC), inside);
}

@compute @workgroup_size(64)
fn conv2d_direct(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) li: u32) {
    let p0 = ((wid.z * params.groups_x + wid.x) * 64u + li) * PX;
    // The block of output channels (vec4 columns) is the work-group's: uniform.
    let c0 = wid.y * CT4;
    let oc4 = OC / 4u;
    if p0 >= params.m {
        return;
    }
    // Each pixel's window: its top-left (h, w) in x, and the offset of x[n, 0, 0, 0].
    // Pixels past the end recompute the last one (and are not stored).
    let q0 = pixel(min(p0 + 0u, params.m - 1u));
    let q1 = pixel(min(p0 + 1u, params.m - 1u));
    let q2 = pixel(min(p0 + 2u, params.m - 1u));
    let q3 = pixel(min(p0 + 3u, params.m - 1u));
    // A block past OC/4 reads a real column (the last) it never stores.
    let j0 = min(c0 + 0u, oc4 - 1u);
    let j1 = min(c0 + 1u, oc4 - 1u);
    let j2 = min(c0 + 2u, oc4 - 1u);
    let j3 = min(c0 + 3u, oc4 - 1u);
    var a00 = vec4<f32>(0.0);
    var a01 = vec4<f32>(0.0);
    var a02 = vec4<f32>(0.0);
    var a03 = vec4<f32>(0.0);
    var a10 = vec4<f32>(0.0);
    var a11 = vec4<f32>(0.0);
    var a12 = vec4<f32>(0.0);
    var a13 = vec4<f32>(0.0);
    var a20 = vec4<f32>(0.0);
    var a21 = vec4<f32>(0.0);
    var a22 = vec4<f32>(0.0);
    var a23 = vec4<f32>(0.0);
    var a30 = vec4<f32>(0.0);
    var a31 = vec4<f32>(0.0);
    var a32 = vec4<f32>(0.0);
    var a33 = vec4<f32>(0.0);
    for (var kh = 0u; kh < KH; kh++) {
        for (var kw = 0u; kw < KW; kw++) {
            let t = vec2<i32>(i32(kh * DH), i32(kw * DW));
            let o0 = tap(q0, t);
            let o1 = tap(q1, t);
            let o2 = tap(q2, t);
            let o3 = tap(q3, t);
            let k0 = (kh * KW + kw) * CC;
            for (var ci = 0u; ci < CC; ci++) {
                let v0 = select(0.0, h16(x[u32(max(o0, 0)) + ci]), o0 >= 0);
                let v1 = select(0.0, h16(x[u32(max(o1, 0)) + ci]), o1 >= 0);
                let v2 = select(0.0, h16(x[u32(max(o2, 0)) + ci]), o2 >= 0);
                let v3 = select(0.0, h16(x[u32(max(o3, 0)) + ci]), o3 >= 0);
                let row = (k0 + ci) * oc4;
                let w0 = h16v(w[row + j0]);
                a00 += v0 * w0;
                a10 += v1 * w0;
                a20 += v2 * w0;
                a30 += v3 * w0;
                if CT4 > 1u {
                    let w1 = h16v(w[row + j1]);
                    a01 += v0 * w1;
                    a11 += v1 * w1;
                    a21 += v2 * w1;
                    a31 += v3 * w1;
                }
                if CT4 > 2u {
                    let w2 = h16v(w[row + j2]);
                    a02 += v0 * w2;
                    a12 += v1 * w2;
                    a22 += v2 * w2;
                    a32 += v3 * w2;
                }
                if CT4 > 3u {
                    let w3 = h16v(w[row + j3]);
                    a03 += v0 * w3;
                    a13 += v1 * w3;
                    a23 += v2 * w3;
                    a33 += v3 * w3;
                }
            }
        }
    }
    // Pixels past the end, and the block's columns past OC/4, are not stored.
    if p0 + 0u < params.m {
        let r = (p0 + 0u) * oc4 + c0;
        y[r] = finish(a00, c0);
        if CT4 > 1u && c0 + 1u < oc4 { y[r + 1u] = finish(a01, c0 + 1u); }
        if CT4 > 2u && c0 + 2u < oc4 { y[r + 2u] = finish(a02, c0 + 2u); }
        if CT4 > 3u && c0 + 3u < oc4 { y[r + 3u] = finish(a03, c0 + 3u); }
    }
    if p0 + 1u < params.m {
        let r = (p0 + 1u) * oc4 + c0;
        y[r] = finish(a10, c0);
        if CT4 > 1u && c0 + 1u < oc4 { y[r + 1u] = finish(a11, c0 + 1u); }
        if CT4 > 2u && c0 + 2u < oc4 { y[r + 2u] = finish(a12, c0 + 2u); }
        if CT4 > 3u && c0 + 3u < oc4 { y[r + 3u] = finish(a13, c0 + 3u); }
    }
    if p0 + 2u < params.m {
        let r = (p0 + 2u) * oc4 + c0;
        y[r] = finish(a20, c0);
        if CT4 > 1u && c0 + 1u < oc4 { y[r + 1u] = finish(a21, c0 + 1u); }
        if CT4 > 2u && c0 + 2u < oc4 { y[r + 2u] = finish(a22, c0 + 2u); }
        if CT4 > 3u && c0 + 3u < oc4 { y[r + 3u] = finish(a23, c0 + 3u); }
    }
    if p0 + 3u < params.m {
        let r = (p0 + 3u) * oc4 + c0;
        y[r] = finish(a30, c0);
        if CT4 > 1u && c0 + 1u < oc4 { y[r + 1u] = finish(a31, c0 + 1u); }
        if CT4 > 2u && c0 + 2u < oc4 { y[r + 2u] = finish(a32, c0 + 2u); }
        if CT4 > 3u && c0 + 3u < oc4 { y[r + 3u] = finish(a33, c0 + 3u); }
    }
}
