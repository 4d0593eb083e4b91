// Optimizer update rules shared by the standalone optimizer kernels (optim.wgsl) and the
// matmul epilogue that applies them to a weight gradient as it is computed (matmul.wgsl), so
// both paths run the same arithmetic. A prelude: the crate prepends this file; it is valid
// WGSL on its own. Codes match `kernels::optim::Rule::code` in Rust.
//
//   1 SGD:     PyTorch SGD: g += wd·θ; v = μ·v + g; g = nesterov ? g + μ·v : v (μ > 0); θ -= lr·g
//   2 Adam:    Adam (Kingma & Ba 2015) with L2 weight decay folded into g (as torch.optim.Adam)
//   3 AdamW:   AdamW (Loshchilov & Hutter 2019): θ *= 1 - lr·wd, then the Adam update
//              m = β1·m + (1-β1)·g; v = β2·v + (1-β2)·g²;
//              θ -= step_size · m / (sqrt(v) / bc2_sqrt + eps)
//              with step_size = lr / (1 - β1^t), bc2_sqrt = sqrt(1 - β2^t)
//   4 RMSprop: v = ρ·v + (1-ρ)·g²; θ -= lr · g / (sqrt(v) + eps)   (g += wd·θ first)
//
// The host computes the step scalars (bias corrections, learning rate) in f64.

const OPT_NONE: u32 = 0u;
const OPT_SGD: u32 = 1u;
const OPT_ADAM: u32 = 2u;
const OPT_ADAMW: u32 = 3u;
const OPT_RMSPROP: u32 = 4u;

struct OptParams {
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
    // 1 - β1, 1 - β2, 1 - ρ computed in f64 on the host: in f32 here, 1 - 0.999 would be off
    // by 1.3e-5 relative.
    one_minus_beta1: f32,
    one_minus_beta2: f32,
    one_minus_rho: f32,
    _pad0: u32,
    _pad1: u32,
}

// A parameter and its state after one update.
struct OptOut {
    theta: vec4<f32>,
    s1: vec4<f32>,
    s2: vec4<f32>,
}

// Whether `rule` reads and writes its first state buffer (velocity, m or mean square).
fn opt_uses_s1(rule: u32, q: OptParams) -> bool {
    return rule != OPT_SGD || q.momentum > 0.0;
}

// Whether `rule` reads and writes its second state buffer (Adam's v).
fn opt_uses_s2(rule: u32) -> bool {
    return rule == OPT_ADAM || rule == OPT_ADAMW;
}

// One update of four parameters `theta` with gradient `grad` and states `s1`, `s2` (ignored
// where the rule has no such state).
fn opt_apply(rule: u32, q: OptParams, theta: vec4<f32>, grad: vec4<f32>, s1: vec4<f32>, s2: vec4<f32>) -> OptOut {
    var o = OptOut(theta, s1, s2);
    switch rule {
        case 1u: {
            var g = grad + q.weight_decay * theta;
            if (q.momentum > 0.0) {
                let v = q.momentum * s1 + g;
                o.s1 = v;
                g = select(v, g + q.momentum * v, q.nesterov != 0u);
            }
            o.theta = theta - q.lr * g;
        }
        case 2u, 3u: {
            var th = theta;
            var g = grad;
            if (rule == OPT_ADAMW) {
                th *= 1.0 - q.lr * q.weight_decay;
            } else {
                g += q.weight_decay * th;
            }
            let m = q.beta1 * s1 + q.one_minus_beta1 * g;
            let v = q.beta2 * s2 + q.one_minus_beta2 * g * g;
            o.s1 = m;
            o.s2 = v;
            o.theta = th - q.step_size * m / (sqrt(v) / q.bc2_sqrt + q.eps);
        }
        case 4u: {
            let g = grad + q.weight_decay * theta;
            let v = q.rho * s1 + q.one_minus_rho * g * g;
            o.s1 = v;
            o.theta = theta - q.lr * g / (sqrt(v) + q.eps);
        }
        default: {}
    }
    return o;
}
