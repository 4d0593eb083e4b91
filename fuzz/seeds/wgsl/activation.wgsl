// Activation functions shared by the kernel families that fuse them (a prelude: the crate
// prepends this file to matmul.wgsl, matmul_subgroup.wgsl and elementwise.wgsl; it is valid
// WGSL on its own). Codes match `kernels::Activation` in Rust.
//
//   0 linear   1 relu   2 leaky relu (slope `alpha`)   3 sigmoid   4 tanh
//   5 gelu, tanh approximation (Hendrycks & Gimpel 2016)   6 gelu, exact (erf)

const ACT_LINEAR: u32 = 0u;
const ACT_RELU: u32 = 1u;
const ACT_LEAKY_RELU: u32 = 2u;
const ACT_SIGMOID: u32 = 3u;
const ACT_TANH: u32 = 4u;
const ACT_GELU_TANH: u32 = 5u;
const ACT_GELU_ERF: u32 = 6u;

const SQRT_2_OVER_PI: f32 = 0.7978845608028654;
const GELU_C: f32 = 0.044715;
const INV_SQRT_2: f32 = 0.7071067811865476;
const INV_SQRT_2PI: f32 = 0.3989422804014327;

// tanh that never overflows: tanh(±15) is ±1 in f32 already.
fn act_tanh(x: f32) -> f32 {
    return tanh(clamp(x, -15.0, 15.0));
}

fn act_sigmoid(x: f32) -> f32 {
    // exp of a non-positive argument only, so neither branch overflows.
    let e = exp(-abs(x));
    return select(e / (1.0 + e), 1.0 / (1.0 + e), x >= 0.0);
}

// erf with |error| < 1.2e-7 (Numerical Recipes' erfc Chebyshev fit, 3rd ed. §6.2).
fn act_erf(x: f32) -> f32 {
    let z = abs(x);
    let t = 1.0 / (1.0 + 0.5 * z);
    let r = t * exp(-z * z - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418
        + t * (-0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587
        + t * (-0.82215223 + t * 0.17087277)))))))));
    return select(r - 1.0, 1.0 - r, x >= 0.0);
}

fn activate(code: u32, x: f32, alpha: f32) -> f32 {
    switch code {
        case 1u: { return max(x, 0.0); }
        case 2u: { return select(alpha * x, x, x > 0.0); }
        case 3u: { return act_sigmoid(x); }
        case 4u: { return act_tanh(x); }
        case 5u: {
            let u = SQRT_2_OVER_PI * (x + GELU_C * x * x * x);
            return 0.5 * x * (1.0 + act_tanh(u));
        }
        case 6u: { return 0.5 * x * (1.0 + act_erf(x * INV_SQRT_2)); }
        default: { return x; }
    }
}

// d activate(x) / dx, from the pre-activation input x.
fn activate_grad(code: u32, x: f32, alpha: f32) -> f32 {
    switch code {
        case 1u: { return select(0.0, 1.0, x > 0.0); }
        case 2u: { return select(alpha, 1.0, x > 0.0); }
        case 3u: {
            let s = act_sigmoid(x);
            return s * (1.0 - s);
        }
        case 4u: {
            let t = act_tanh(x);
            return 1.0 - t * t;
        }
        case 5u: {
            let u = SQRT_2_OVER_PI * (x + GELU_C * x * x * x);
            let t = act_tanh(u);
            let du = SQRT_2_OVER_PI * (1.0 + 3.0 * GELU_C * x * x);
            return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * du;
        }
        case 6u: {
            return 0.5 * (1.0 + act_erf(x * INV_SQRT_2)) + x * INV_SQRT_2PI * exp(-0.5 * x * x);
        }
        default: { return 1.0; }
    }
}

// d activate(x) / dx from the output y = activate(x), for the activations where that is a
// function of y: linear, relu, leaky relu (slope > 0), sigmoid, tanh. Others return 1.
fn activate_grad_from_output(code: u32, y: f32, alpha: f32) -> f32 {
    switch code {
        case 1u: { return select(0.0, 1.0, y > 0.0); }
        case 2u: { return select(alpha, 1.0, y > 0.0); }
        case 3u: { return y * (1.0 - y); }
        case 4u: { return 1.0 - y * y; }
        default: { return 1.0; }
    }
}
