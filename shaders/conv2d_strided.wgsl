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
// With HALF (half_operands.wgsl, prepended with f16_round.wgsl) dy and Wᵗ are rounded to
// binary16 as they are loaded (the mixed_float16 policy); sums stay f32.

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
                acc = fma(h16(sb_dy[y0 + co]), h16(sb_wt[w0 + co * CC]), acc);
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

// ---- four channels of eight pixels per invocation (C and OC multiples of 4) ----------------
// The same sum as vec4s over a block of PXB pixels of one row that share a phase (w, w + SW,
// w + 2·SW, …): the same taps land on all of them, on consecutive outputs, so each tap's
// four rows of Wᵗ are loaded once for the block and one vec4 of dy per pixel feeds 16
// multiply-adds (lavapipe loads lane by lane: loads, not products, bound this pass; one
// pixel per invocation loaded Wᵗ's rows again for every pixel). Each lane's sum runs in the
// scalar kernel's order. Invocations: ci4 fastest, then the block, the phase, h and n.
const PXB: u32 = 8u;

@group(0) @binding(0) var<storage, read> sv_dy: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> sv_wt: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> sv_gate: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read_write> sv_dx: array<vec4<f32>>;
@group(0) @binding(4) var<uniform> sv_p: Params;

// Pixel t of a block at output column `o0 + t` (o0 from the block's first pixel; the phase
// is shared, so only the range differs): whether it lands, and dy's vec4 index clamped
// in bounds either way.
struct Tap4 {
    ok: bool,
    at: u32,
}

fn tap4(row: u32, o0: i32, t: u32, wt: u32) -> Tap4 {
    let o = o0 + i32(t);
    let ok = o >= 0 && o < i32(OW) && wt < CW;
    let oc = u32(clamp(o, 0, i32(OW) - 1));
    return Tap4(ok, (row + oc) * (OC / 4u));
}

// dx's block pixel t after the gate and accumulation, written if inside the row.
fn store4(base: u32, t: u32, wt: u32, acc: vec4<f32>) {
    if (wt >= CW) {
        return;
    }
    let j = base + t * SW * (CC / 4u);
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

@compute @workgroup_size(256)
fn conv2d_strided_backward_data4(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let j = gid.x + gid.y * nwg.x * 256u;
    if (j >= sv_p.n) {
        return;
    }
    let c4 = CC / 4u;
    let nb = ((CW + SW - 1u) / SW + PXB - 1u) / PXB;
    let ci4 = j % c4;
    var r = j / c4;
    let b = r % nb;
    r = r / nb;
    let q = r % SW;
    r = r / SW;
    let h = r % CH;
    let n = r / CH;
    let w0 = q + SW * b * PXB;
    if (w0 >= CW) {
        return;
    }
    let w1 = w0 + 1u * SW;
    let w2 = w0 + 2u * SW;
    let w3 = w0 + 3u * SW;
    let w4 = w0 + 4u * SW;
    let w5 = w0 + 5u * SW;
    let w6 = w0 + 6u * SW;
    let w7 = w0 + 7u * SW;
    var a0 = vec4<f32>(0.0);
    var a1 = vec4<f32>(0.0);
    var a2 = vec4<f32>(0.0);
    var a3 = vec4<f32>(0.0);
    var a4 = vec4<f32>(0.0);
    var a5 = vec4<f32>(0.0);
    var a6 = vec4<f32>(0.0);
    var a7 = vec4<f32>(0.0);
    for (var th = 0u; th < KH; th++) {
        let oh = landing(h, PH, th * DH, SH, OH);
        if (oh < 0) {
            continue;
        }
        let row = (n * OH + u32(oh)) * OW;
        for (var tw = 0u; tw < KW; tw++) {
            // The phase test on the magnitude, in unsigned arithmetic: `%` and `/` of a
            // negative i32 are undefined in GLSL, which the GL backend translates to.
            let t0 = i32(w0 + PW) - i32(tw * DW);
            let mag = u32(abs(t0));
            if (mag % SW != 0u) {
                continue;
            }
            let o0 = select(i32(mag / SW), -i32(mag / SW), t0 < 0);
            let p0 = tap4(row, o0, 0u, w0);
            let p1 = tap4(row, o0, 1u, w1);
            let p2 = tap4(row, o0, 2u, w2);
            let p3 = tap4(row, o0, 3u, w3);
            let p4 = tap4(row, o0, 4u, w4);
            let p5 = tap4(row, o0, 5u, w5);
            let p6 = tap4(row, o0, 6u, w6);
            let p7 = tap4(row, o0, 7u, w7);
            if (!(p0.ok || p1.ok || p2.ok || p3.ok || p4.ok || p5.ok || p6.ok || p7.ok)) {
                continue;
            }
            var k = (th * KW + tw) * OC * c4 + ci4;
            for (var co4 = 0u; co4 < OC / 4u; co4++) {
                let wa = h16v(sv_wt[k]);
                let wb = h16v(sv_wt[k + c4]);
                let wc = h16v(sv_wt[k + 2u * c4]);
                let wd = h16v(sv_wt[k + 3u * c4]);
                // Only pixels the tap lands on add (0·Wᵗ would turn an infinite weight into
                // NaN where it does not belong).
                if (p0.ok) {
                    let d = h16v(sv_dy[p0.at + co4]);
                    a0 = fma(vec4<f32>(d.w), wd, fma(vec4<f32>(d.z), wc, fma(vec4<f32>(d.y), wb, fma(vec4<f32>(d.x), wa, a0))));
                }
                if (p1.ok) {
                    let d = h16v(sv_dy[p1.at + co4]);
                    a1 = fma(vec4<f32>(d.w), wd, fma(vec4<f32>(d.z), wc, fma(vec4<f32>(d.y), wb, fma(vec4<f32>(d.x), wa, a1))));
                }
                if (p2.ok) {
                    let d = h16v(sv_dy[p2.at + co4]);
                    a2 = fma(vec4<f32>(d.w), wd, fma(vec4<f32>(d.z), wc, fma(vec4<f32>(d.y), wb, fma(vec4<f32>(d.x), wa, a2))));
                }
                if (p3.ok) {
                    let d = h16v(sv_dy[p3.at + co4]);
                    a3 = fma(vec4<f32>(d.w), wd, fma(vec4<f32>(d.z), wc, fma(vec4<f32>(d.y), wb, fma(vec4<f32>(d.x), wa, a3))));
                }
                if (p4.ok) {
                    let d = h16v(sv_dy[p4.at + co4]);
                    a4 = fma(vec4<f32>(d.w), wd, fma(vec4<f32>(d.z), wc, fma(vec4<f32>(d.y), wb, fma(vec4<f32>(d.x), wa, a4))));
                }
                if (p5.ok) {
                    let d = h16v(sv_dy[p5.at + co4]);
                    a5 = fma(vec4<f32>(d.w), wd, fma(vec4<f32>(d.z), wc, fma(vec4<f32>(d.y), wb, fma(vec4<f32>(d.x), wa, a5))));
                }
                if (p6.ok) {
                    let d = h16v(sv_dy[p6.at + co4]);
                    a6 = fma(vec4<f32>(d.w), wd, fma(vec4<f32>(d.z), wc, fma(vec4<f32>(d.y), wb, fma(vec4<f32>(d.x), wa, a6))));
                }
                if (p7.ok) {
                    let d = h16v(sv_dy[p7.at + co4]);
                    a7 = fma(vec4<f32>(d.w), wd, fma(vec4<f32>(d.z), wc, fma(vec4<f32>(d.y), wb, fma(vec4<f32>(d.x), wa, a7))));
                }
                k += 4u * c4;
            }
        }
    }
    let base = ((n * CH + h) * CW + w0) * c4 + ci4;
    store4(base, 0u, w0, a0);
    store4(base, 1u, w1, a1);
    store4(base, 2u, w2, a2);
    store4(base, 3u, w3, a3);
    store4(base, 4u, w4, a4);
    store4(base, 5u, w5, a5);
    store4(base, 6u, w6, a6);
    store4(base, 7u, w7, a7);
}
