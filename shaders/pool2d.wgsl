// 2-D pooling over NHWC tensors: max (recording where each maximum came from), average, and
// global average, each with its backward pass. Needs the activation.wgsl prelude: every
// backward pass multiplies by the gate the layer before offers (its activation's derivative
// computed from its output, which is this pooling's input), GATE 0 being none.
//
// The geometry is fixed per pipeline by override constants (x (N, CH, CW, CC), y (N, OH, OW,
// CC), window (KH, KW), strides (SH, SW), padding before (PH, PW)); the uniform holds the
// element count of the grid. Windows are clipped to the input: padding never takes part in a
// maximum and never counts in an average (TensorFlow's behaviour for "same").
//
// Every entry point runs over a 1-D grid that may spill onto y (grid_1d), guarded by p.n.

struct Params {
    n: u32,          // invocations that do work: outputs (forward) or inputs (backward)
    alpha: f32,      // the gate's leaky-relu slope
    _pad0: u32,
    _pad1: u32,
}

override CH: u32 = 1u;
override CW: u32 = 1u;
override CC: u32 = 1u;
override OH: u32 = 1u;
override OW: u32 = 1u;
override KH: u32 = 1u;
override KW: u32 = 1u;
override SH: u32 = 1u;
override SW: u32 = 1u;
override PH: u32 = 0u;
override PW: u32 = 0u;
override GATE: u32 = 0u;

const WG: u32 = 256u;

fn linear_index(gid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return gid.x + gid.y * nwg.x * WG;
}

// The window of output (n, oh, ow, c) as the input rows and columns it covers, clipped:
// (h0, h1, w0, w1), half-open.
fn window(oh: u32, ow: u32) -> vec4<u32> {
    let top = i32(oh * SH) - i32(PH);
    let left = i32(ow * SW) - i32(PW);
    let h0 = u32(max(top, 0));
    let w0 = u32(max(left, 0));
    let h1 = u32(clamp(top + i32(KH), 0, i32(CH)));
    let w1 = u32(clamp(left + i32(KW), 0, i32(CW)));
    return vec4<u32>(h0, h1, w0, w1);
}

// Whether v is NaN, from its bits: WGSL lets a compiler assume floats are never NaN, so
// `v != v` may be folded to false (lavapipe does).
fn is_nan(v: f32) -> bool {
    return (bitcast<u32>(v) & 0x7fffffffu) > 0x7f800000u;
}

// The outputs whose windows cover input row h: [first, last] (empty when first > last).
fn covering(h: u32, k: u32, s: u32, pad: u32, out: u32) -> vec2<i32> {
    let hp = i32(h + pad);
    let first = max(hp - i32(k) + i32(s), 0) / i32(s); // ceil((hp - k + 1) / s), at least 0
    let last = min(hp / i32(s), i32(out) - 1);
    return vec2<i32>(first, last);
}

// ---- max ---------------------------------------------------------------------------------
@group(0) @binding(0) var<storage, read> mx_x: array<f32>;
@group(0) @binding(1) var<storage, read_write> mx_y: array<f32>;
@group(0) @binding(2) var<storage, read_write> mx_arg: array<u32>;
@group(0) @binding(3) var<uniform> mx_p: Params;

// y = the window's maximum (NaN if any element is NaN), arg = the flat index of its first
// occurrence in row-major window order.
@compute @workgroup_size(256)
fn maxpool_forward(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_index(gid, nwg);
    if (i >= mx_p.n) {
        return;
    }
    let c = i % CC;
    let r = i / CC;
    let ow = r % OW;
    let oh = (r / OW) % OH;
    let n = r / (OW * OH);
    let win = window(oh, ow);
    var best = 0.0;
    var at = 0xffffffffu;
    for (var h = win.x; h < win.y; h++) {
        for (var w = win.z; w < win.w; w++) {
            let j = ((n * CH + h) * CW + w) * CC + c;
            let v = mx_x[j];
            if (at == 0xffffffffu || v > best || (is_nan(v) && !is_nan(best))) {
                best = v;
                at = j;
            }
        }
    }
    mx_y[i] = best;
    mx_arg[i] = at;
}

@group(0) @binding(0) var<storage, read> mb_dy: array<f32>;
@group(0) @binding(1) var<storage, read> mb_arg: array<u32>;
@group(0) @binding(2) var<storage, read> mb_gate: array<f32>;
@group(0) @binding(3) var<storage, read_write> mb_dx: array<f32>;
@group(0) @binding(4) var<uniform> mb_p: Params;

// dx[j] = Σ dy over the windows whose maximum was input j (a gather: no atomics, a fixed
// order), times the gate's derivative at j.
@compute @workgroup_size(256)
fn maxpool_backward(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let j = linear_index(gid, nwg);
    if (j >= mb_p.n) {
        return;
    }
    let c = j % CC;
    let r = j / CC;
    let w = r % CW;
    let h = (r / CW) % CH;
    let n = r / (CW * CH);
    let hs = covering(h, KH, SH, PH, OH);
    let ws = covering(w, KW, SW, PW, OW);
    var g = 0.0;
    for (var oh = hs.x; oh <= hs.y; oh++) {
        for (var ow = ws.x; ow <= ws.y; ow++) {
            let o = ((n * OH + u32(oh)) * OW + u32(ow)) * CC + c;
            if (mb_arg[o] == j) {
                g += mb_dy[o];
            }
        }
    }
    mb_dx[j] = select(g, g * activate_grad_from_output(GATE, mb_gate[min(j, arrayLength(&mb_gate) - 1u)], mb_p.alpha), GATE != 0u);
}

// ---- average -----------------------------------------------------------------------------
@group(0) @binding(0) var<storage, read> av_x: array<f32>;
@group(0) @binding(1) var<storage, read_write> av_y: array<f32>;
@group(0) @binding(2) var<uniform> av_p: Params;

// y = the mean of the window's elements inside the input.
@compute @workgroup_size(256)
fn avgpool_forward(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_index(gid, nwg);
    if (i >= av_p.n) {
        return;
    }
    let c = i % CC;
    let r = i / CC;
    let ow = r % OW;
    let oh = (r / OW) % OH;
    let n = r / (OW * OH);
    let win = window(oh, ow);
    var s = 0.0;
    for (var h = win.x; h < win.y; h++) {
        for (var w = win.z; w < win.w; w++) {
            s += av_x[((n * CH + h) * CW + w) * CC + c];
        }
    }
    av_y[i] = s / f32((win.y - win.x) * (win.w - win.z));
}

@group(0) @binding(0) var<storage, read> ab_dy: array<f32>;
@group(0) @binding(1) var<storage, read> ab_gate: array<f32>;
@group(0) @binding(2) var<storage, read_write> ab_dx: array<f32>;
@group(0) @binding(3) var<uniform> ab_p: Params;

// dx[j] = Σ over the windows covering j of dy / (that window's element count).
@compute @workgroup_size(256)
fn avgpool_backward(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let j = linear_index(gid, nwg);
    if (j >= ab_p.n) {
        return;
    }
    let c = j % CC;
    let r = j / CC;
    let w = r % CW;
    let h = (r / CW) % CH;
    let n = r / (CW * CH);
    let hs = covering(h, KH, SH, PH, OH);
    let ws = covering(w, KW, SW, PW, OW);
    var g = 0.0;
    for (var oh = hs.x; oh <= hs.y; oh++) {
        for (var ow = ws.x; ow <= ws.y; ow++) {
            let win = window(u32(oh), u32(ow));
            let count = f32((win.y - win.x) * (win.w - win.z));
            g += ab_dy[((n * OH + u32(oh)) * OW + u32(ow)) * CC + c] / count;
        }
    }
    ab_dx[j] = select(g, g * activate_grad_from_output(GATE, ab_gate[min(j, arrayLength(&ab_gate) - 1u)], ab_p.alpha), GATE != 0u);
}

// ---- global average: (N, CH, CW, CC) → (N, CC) -------------------------------------------
// Forward: one invocation per (n, c) sums its CH·CW values, four per loop iteration (so
// lavapipe's 65,535-iteration loop limit allows 262,140 positions; the host checks).
@compute @workgroup_size(256)
fn global_avgpool_forward(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_index(gid, nwg);
    if (i >= av_p.n) {
        return;
    }
    let c = i % CC;
    let n = i / CC;
    let hw = CH * CW;
    let base = n * hw * CC + c;
    var s = 0.0;
    for (var q = 0u; q < hw; q += 4u) {
        s += av_x[base + q * CC];
        if (q + 1u < hw) {
            s += av_x[base + (q + 1u) * CC];
        }
        if (q + 2u < hw) {
            s += av_x[base + (q + 2u) * CC];
        }
        if (q + 3u < hw) {
            s += av_x[base + (q + 3u) * CC];
        }
    }
    av_y[i] = s / f32(hw);
}

// Backward: dx[n, h, w, c] = dy[n, c] / (CH·CW), times the gate's derivative.
@compute @workgroup_size(256)
fn global_avgpool_backward(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let j = linear_index(gid, nwg);
    if (j >= ab_p.n) {
        return;
    }
    let c = j % CC;
    let n = j / (CH * CW * CC);
    let g = ab_dy[n * CC + c] / f32(CH * CW);
    ab_dx[j] = select(g, g * activate_grad_from_output(GATE, ab_gate[min(j, arrayLength(&ab_gate) - 1u)], ab_p.alpha), GATE != 0u);
}

// ---- four channels per invocation (CC a multiple of 4) --------------------------------------
// The same kernels over vec4s of consecutive channels: a quarter of the invocations and of
// the index arithmetic, 16-byte loads and stores. The grid counts vec4s (p.n = elements / 4).
@group(0) @binding(0) var<storage, read> mx4_x: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> mx4_y: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> mx4_arg: array<vec4<u32>>;

fn is_nan4(v: vec4<f32>) -> vec4<bool> {
    return (bitcast<vec4<u32>>(v) & vec4<u32>(0x7fffffffu)) > vec4<u32>(0x7f800000u);
}

@compute @workgroup_size(256)
fn maxpool4_forward(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_index(gid, nwg);
    if (i >= mx_p.n) {
        return;
    }
    let c4 = CC / 4u;
    let c = i % c4;
    let r = i / c4;
    let ow = r % OW;
    let oh = (r / OW) % OH;
    let n = r / (OW * OH);
    let win = window(oh, ow);
    var best = vec4<f32>(0.0);
    var at = vec4<u32>(0xffffffffu);
    for (var h = win.x; h < win.y; h++) {
        for (var w = win.z; w < win.w; w++) {
            let j = ((n * CH + h) * CW + w) * c4 + c;
            let v = mx4_x[j];
            let take = at == vec4<u32>(0xffffffffu) | v > best | (is_nan4(v) & !is_nan4(best));
            best = select(best, v, take);
            // The flat index of each channel's element: 4·j + lane.
            at = select(at, vec4<u32>(4u * j) + vec4<u32>(0u, 1u, 2u, 3u), take);
        }
    }
    mx4_y[i] = best;
    mx4_arg[i] = at;
}

@group(0) @binding(0) var<storage, read> mb4_dy: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> mb4_arg: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read> mb4_gate: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read_write> mb4_dx: array<vec4<f32>>;

fn gate4(g: vec4<f32>, y: vec4<f32>, alpha: f32) -> vec4<f32> {
    return g * vec4<f32>(activate_grad_from_output(GATE, y.x, alpha), activate_grad_from_output(GATE, y.y, alpha),
        activate_grad_from_output(GATE, y.z, alpha), activate_grad_from_output(GATE, y.w, alpha));
}

@compute @workgroup_size(256)
fn maxpool4_backward(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let j = linear_index(gid, nwg);
    if (j >= mb_p.n) {
        return;
    }
    let c4 = CC / 4u;
    let c = j % c4;
    let r = j / c4;
    let w = r % CW;
    let h = (r / CW) % CH;
    let n = r / (CW * CH);
    let hs = covering(h, KH, SH, PH, OH);
    let ws = covering(w, KW, SW, PW, OW);
    let me = vec4<u32>(4u * j) + vec4<u32>(0u, 1u, 2u, 3u);
    var g = vec4<f32>(0.0);
    for (var oh = hs.x; oh <= hs.y; oh++) {
        for (var ow = ws.x; ow <= ws.y; ow++) {
            let o = ((n * OH + u32(oh)) * OW + u32(ow)) * c4 + c;
            g += select(vec4<f32>(0.0), mb4_dy[o], mb4_arg[o] == me);
        }
    }
    if (GATE != 0u) {
        g = gate4(g, mb4_gate[min(j, arrayLength(&mb4_gate) - 1u)], mb_p.alpha);
    }
    mb4_dx[j] = g;
}

@group(0) @binding(0) var<storage, read> av4_x: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> av4_y: array<vec4<f32>>;

@compute @workgroup_size(256)
fn avgpool4_forward(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_index(gid, nwg);
    if (i >= av_p.n) {
        return;
    }
    let c4 = CC / 4u;
    let c = i % c4;
    let r = i / c4;
    let ow = r % OW;
    let oh = (r / OW) % OH;
    let n = r / (OW * OH);
    let win = window(oh, ow);
    var s = vec4<f32>(0.0);
    for (var h = win.x; h < win.y; h++) {
        for (var w = win.z; w < win.w; w++) {
            s += av4_x[((n * CH + h) * CW + w) * c4 + c];
        }
    }
    av4_y[i] = s / f32((win.y - win.x) * (win.w - win.z));
}

@group(0) @binding(0) var<storage, read> ab4_dy: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> ab4_gate: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> ab4_dx: array<vec4<f32>>;

@compute @workgroup_size(256)
fn avgpool4_backward(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let j = linear_index(gid, nwg);
    if (j >= ab_p.n) {
        return;
    }
    let c4 = CC / 4u;
    let c = j % c4;
    let r = j / c4;
    let w = r % CW;
    let h = (r / CW) % CH;
    let n = r / (CW * CH);
    let hs = covering(h, KH, SH, PH, OH);
    let ws = covering(w, KW, SW, PW, OW);
    var g = vec4<f32>(0.0);
    for (var oh = hs.x; oh <= hs.y; oh++) {
        for (var ow = ws.x; ow <= ws.y; ow++) {
            let win = window(u32(oh), u32(ow));
            let count = f32((win.y - win.x) * (win.w - win.z));
            g += ab4_dy[((n * OH + u32(oh)) * OW + u32(ow)) * c4 + c] / count;
        }
    }
    if (GATE != 0u) {
        g = gate4(g, ab4_gate[min(j, arrayLength(&ab4_gate) - 1u)], ab_p.alpha);
    }
    ab4_dx[j] = g;
}
