// A strided convolution's backward data pass as a direct gather: dx[n, h, w, ci] = Σ over the
// taps (kh, kw) whose output position (h + PH − kh·DH) / SH, (w + PW − kw·DW) / SW is whole
// and inside the output, Σ over co of dy[n, oh, ow, co] · Wᵗ[kh, kw, co, ci]. With stride s
// only about 1/s² of the taps land on an output, so this does the useful multiply-adds only,
// where the naive GEMM's dividing loader walked all KH·KW·OC of them (the issue 35 CNN's
// stride-2 layer: 86% of a training step). Needs the activation.wgsl prelude: the previous
// layer's gate multiplies the sum, and ACCUMULATE adds what dx holds (a fan-out's sum), in
// the matmul epilogue's order.
//
// One invocation per element of dx (a 1-D grid that may spill onto y, guarded by p.n);
// consecutive invocations are consecutive channels, so Wᵗ's loads are contiguous and dy's
// are shared. Loops per invocation: KH·KW tap tests plus (taps that land)·OC.

struct Params {
    n: u32,          // elements of dx
    alpha: f32,      // the gate's leaky-relu slope
    _pad0: u32,
    _pad1: u32,
}

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
override GATE: u32 = 0u;
override ACCUMULATE: bool = false;

@group(0) @binding(0) var<storage, read> sb_dy: array<f32>;
@group(0) @binding(1) var<storage, read> sb_wt: array<f32>;
@group(0) @binding(2) var<storage, read> sb_gate: array<f32>;
@group(0) @binding(3) var<storage, read_write> sb_dx: array<f32>;
@group(0) @binding(4) var<uniform> sb_p: Params;

// The output index a tap at offset `off` of input row h lands on along one axis, or -1.
fn landing(h: u32, pad: u32, off: u32, s: u32, out: u32) -> i32 {
    let t = i32(h + pad) - i32(off);
    if (t < 0 || t % i32(s) != 0) {
        return -1;
    }
    let o = t / i32(s);
    return select(-1, o, o < i32(out));
}

@compute @workgroup_size(256)
fn conv2d_strided_backward_data(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let j = gid.x + gid.y * nwg.x * 256u;
    if (j >= sb_p.n) {
        return;
    }
    let ci = j % CC;
    let r = j / CC;
    let w = r % CW;
    let h = (r / CW) % CH;
    let n = r / (CW * CH);
    var acc = 0.0;
    for (var th = 0u; th < KH; th++) {
        let oh = landing(h, PH, th * DH, SH, OH);
        if (oh < 0) {
            continue;
        }
        for (var tw = 0u; tw < KW; tw++) {
            let ow = landing(w, PW, tw * DW, SW, OW);
            if (ow < 0) {
                continue;
            }
            let y0 = ((n * OH + u32(oh)) * OW + u32(ow)) * OC;
            let w0 = (th * KW + tw) * OC * CC + ci;
            for (var co = 0u; co < OC; co++) {
                acc = fma(sb_dy[y0 + co], sb_wt[w0 + co * CC], acc);
            }
        }
    }
    var v = acc;
    if (GATE != 0u) {
        v *= activate_grad_from_output(GATE, sb_gate[min(j, arrayLength(&sb_gate) - 1u)], sb_p.alpha);
    }
    if (ACCUMULATE) {
        v += sb_dx[j];
    }
    sb_dx[j] = v;
}

// ---- four channels per invocation (C and OC multiples of 4) --------------------------------
// The same sum as vec4s: an invocation owns dx[n, h, w, ci..ci+4] and takes OC four at a
// time, one vec4 of dy and four rows of Wᵗ per 16 multiply-adds, where the scalar kernel
// loads two values per product (lavapipe loads lane by lane: loads, not products, bound
// it). Each lane's sum runs in the scalar kernel's order.
@group(0) @binding(0) var<storage, read> sv_dy: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> sv_wt: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> sv_gate: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read_write> sv_dx: array<vec4<f32>>;
@group(0) @binding(4) var<uniform> sv_p: Params;

@compute @workgroup_size(256)
fn conv2d_strided_backward_data4(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let j = gid.x + gid.y * nwg.x * 256u;
    if (j >= sv_p.n) {
        return;
    }
    let c4 = CC / 4u;
    let ci4 = j % c4;
    let r = j / c4;
    let w = r % CW;
    let h = (r / CW) % CH;
    let n = r / (CW * CH);
    var acc = vec4<f32>(0.0);
    for (var th = 0u; th < KH; th++) {
        let oh = landing(h, PH, th * DH, SH, OH);
        if (oh < 0) {
            continue;
        }
        for (var tw = 0u; tw < KW; tw++) {
            let ow = landing(w, PW, tw * DW, SW, OW);
            if (ow < 0) {
                continue;
            }
            let y0 = ((n * OH + u32(oh)) * OW + u32(ow)) * (OC / 4u);
            var w0 = (th * KW + tw) * OC * c4 + ci4;
            for (var co4 = 0u; co4 < OC / 4u; co4++) {
                let d = sv_dy[y0 + co4];
                acc = fma(vec4<f32>(d.x), sv_wt[w0], acc);
                acc = fma(vec4<f32>(d.y), sv_wt[w0 + c4], acc);
                acc = fma(vec4<f32>(d.z), sv_wt[w0 + 2u * c4], acc);
                acc = fma(vec4<f32>(d.w), sv_wt[w0 + 3u * c4], acc);
                w0 += 4u * c4;
            }
        }
    }
    var v = acc;
    if (GATE != 0u) {
        let y = sv_gate[min(j, arrayLength(&sv_gate) - 1u)];
        v *= vec4<f32>(
            activate_grad_from_output(GATE, y.x, sv_p.alpha),
            activate_grad_from_output(GATE, y.y, sv_p.alpha),
            activate_grad_from_output(GATE, y.z, sv_p.alpha),
            activate_grad_from_output(GATE, y.w, sv_p.alpha),
        );
    }
    if (ACCUMULATE) {
        v += sv_dx[j];
    }
    sv_dx[j] = v;
}
