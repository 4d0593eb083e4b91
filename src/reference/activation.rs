//! Activations and their derivatives in f64 (the pointwise ones: softmax is a row
//! operation, [`crate::reference::softmax`]).

use crate::vocab::Activation;

/// The softmax activation has no pointwise reference: it is a row operation
/// ([`crate::reference::softmax`]).
const ROWWISE: &str = "softmax is a row operation: use reference::softmax";

/// `act(x)` in f64.
pub fn activate(act: Activation, x: f64) -> f64 {
    match act {
        Activation::Linear => x,
        Activation::Relu => x.max(0.0),
        Activation::LeakyRelu(a) => {
            if x > 0.0 {
                x
            } else {
                a as f64 * x
            }
        }
        Activation::Sigmoid => 1.0 / (1.0 + (-x).exp()),
        Activation::Tanh => x.tanh(),
        Activation::GeluTanh => {
            let u = (2.0 / std::f64::consts::PI).sqrt() * (x + 0.044715 * x * x * x);
            0.5 * x * (1.0 + u.tanh())
        }
        Activation::Gelu => 0.5 * x * (1.0 + erf(x / std::f64::consts::SQRT_2)),
        Activation::Softmax => panic!("{ROWWISE}"),
    }
}

/// `act'(x)` in f64, written from the calculus (the tests check it against finite differences).
pub fn activate_grad(act: Activation, x: f64) -> f64 {
    match act {
        Activation::Linear => 1.0,
        Activation::Relu => (x > 0.0) as u8 as f64,
        Activation::LeakyRelu(a) => {
            if x > 0.0 {
                1.0
            } else {
                a as f64
            }
        }
        Activation::Sigmoid => {
            let s = 1.0 / (1.0 + (-x).exp());
            s * (1.0 - s)
        }
        Activation::Tanh => 1.0 - x.tanh().powi(2),
        Activation::GeluTanh => {
            let c = (2.0 / std::f64::consts::PI).sqrt();
            let u = c * (x + 0.044715 * x * x * x);
            let t = u.tanh();
            0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * c * (1.0 + 3.0 * 0.044715 * x * x)
        }
        Activation::Gelu => {
            0.5 * (1.0 + erf(x / std::f64::consts::SQRT_2))
                + x * (-0.5 * x * x).exp() / (2.0 * std::f64::consts::PI).sqrt()
        }
        Activation::Softmax => panic!("{ROWWISE}"),
    }
}

/// `act'(x)` written as a function of the output `y = act(x)` (linear, relu, leaky relu,
/// sigmoid, tanh; 1 for the others, which are not used this way).
pub fn activate_grad_from_output(act: Activation, y: f64) -> f64 {
    match act {
        Activation::Relu => (y > 0.0) as u8 as f64,
        Activation::LeakyRelu(a) => {
            if y > 0.0 {
                1.0
            } else {
                a as f64
            }
        }
        Activation::Sigmoid => y * (1.0 - y),
        Activation::Tanh => 1.0 - y * y,
        _ => 1.0,
    }
}

/// erf to about 1e-15 (Taylor series near 0, continued fraction for erfc beyond).
pub fn erf(x: f64) -> f64 {
    let z = x.abs();
    let r = if z < 3.0 {
        // Σ (-1)^n z^(2n+1) / (n! (2n+1)) · 2/√π
        let mut sum = 0.0f64;
        let mut term = z;
        let mut n = 0.0;
        while term.abs() > 1e-17 * sum.abs().max(1e-300) || n < 3.0 {
            sum += term / (2.0 * n + 1.0);
            n += 1.0;
            term *= -z * z / n;
            if n > 200.0 {
                break;
            }
        }
        sum * 2.0 / std::f64::consts::PI.sqrt()
    } else {
        // erfc(z) = exp(-z²)/√π · 1/(z + 1/2/(z + 1/(z + 3/2/(z + ...))))
        let mut f = z;
        for k in (1..60).rev() {
            f = z + (k as f64 / 2.0) / f;
        }
        1.0 - (-z * z).exp() / std::f64::consts::PI.sqrt() / f
    };
    r.copysign(x)
}
