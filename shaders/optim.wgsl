// Fused single-pass optimizer updates over a flat parameter tensor. The host computes the
// step scalars (bias corrections, learning rate) in f64 and passes them in Params.
//   sgd_step:     PyTorch SGD: g += wd·θ; v = μ·v + g; g = nesterov ? g + μ·v : v (μ > 0); θ -= lr·g
//   adam_step:    Adam (Kingma & Ba 2015) with L2 weight decay folded into g (as torch.optim.Adam)
//   adamw_step:   AdamW (Loshchilov & Hutter 2019): θ *= 1 - lr·wd, then the Adam update
//                 m = β1·m + (1-β1)·g; v = β2·v + (1-β2)·g²;
//                 θ -= step_size · m / (sqrt(v) / bc2_sqrt + eps)
//                 with step_size = lr / (1 - β1^t), bc2_sqrt = sqrt(1 - β2^t)
//   rmsprop_step: v = ρ·v + (1-ρ)·g²; θ -= lr · g / (sqrt(v) + eps)   (g += wd·θ first)
//
// Each invocation updates four consecutive elements as one vec4 (on llvmpipe a 16-byte load
// costs about what a 4-byte one does). Buffers are bound rounded up to 16 bytes: the last
// vec4 may run past n into the buffer's padding, which belongs to the same tensor and is
// never read as data.
//
// Bindings: grad (read-only), param, then state buffers (read-write), params.

struct Params {
    n: u32,
    lr: f32,
    beta1: f32,
    beta2: f32,
    eps: f32,
    weight_decay: f32,
    step_size: f32,
    bc2_sqrt: f32,
    momentum: f32,
    nesterov: u32,
    rho: f32,
    _pad: u32,
}

@group(0) @binding(0) var<storage, read> grad: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> param: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> state1: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read_write> state2: array<vec4<f32>>;
@group(0) @binding(3) var<uniform> p3: Params;
@group(0) @binding(4) var<uniform> p4: Params;

const WG: u32 = 256u;

fn index(gid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return gid.x + gid.y * nwg.x * WG;
}

// Bindings: grad, param, velocity, params(3).
@compute @workgroup_size(256)
fn sgd_step(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = index(gid, nwg);
    if (i * 4u >= p3.n) {
        return;
    }
    let theta = param[i];
    var g = grad[i] + p3.weight_decay * theta;
    if (p3.momentum > 0.0) {
        let v = p3.momentum * state1[i] + g;
        state1[i] = v;
        g = select(v, g + p3.momentum * v, p3.nesterov != 0u);
    }
    param[i] = theta - p3.lr * g;
}

fn adam(i: u32, decoupled: bool) {
    var theta = param[i];
    var g = grad[i];
    if (decoupled) {
        theta *= 1.0 - p4.lr * p4.weight_decay;
    } else {
        g += p4.weight_decay * theta;
    }
    let m = p4.beta1 * state1[i] + (1.0 - p4.beta1) * g;
    let v = p4.beta2 * state2[i] + (1.0 - p4.beta2) * g * g;
    state1[i] = m;
    state2[i] = v;
    param[i] = theta - p4.step_size * m / (sqrt(v) / p4.bc2_sqrt + p4.eps);
}

// Bindings: grad, param, m, v, params(4).
@compute @workgroup_size(256)
fn adam_step(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = index(gid, nwg);
    if (i * 4u >= p4.n) {
        return;
    }
    adam(i, false);
}

// Bindings: grad, param, m, v, params(4).
@compute @workgroup_size(256)
fn adamw_step(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = index(gid, nwg);
    if (i * 4u >= p4.n) {
        return;
    }
    adam(i, true);
}

// Bindings: grad, param, v (mean square), params(3).
@compute @workgroup_size(256)
fn rmsprop_step(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = index(gid, nwg);
    if (i * 4u >= p3.n) {
        return;
    }
    let theta = param[i];
    let g = grad[i] + p3.weight_decay * theta;
    let v = p3.rho * state1[i] + (1.0 - p3.rho) * g * g;
    state1[i] = v;
    param[i] = theta - p3.lr * g / (sqrt(v) + p3.eps);
}
