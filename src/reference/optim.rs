//! One optimizer step, the formulas of `optim_rule.wgsl` in f64.

use crate::vocab::Rule;

/// One optimizer step in f64 on `param` with `state` (f64 copies), the same formula as optim.wgsl.
pub fn optim_step(rule: &Rule, grad: &[f64], param: &mut [f64], state: &mut [Vec<f64>], t: u64) {
    for i in 0..param.len() {
        match *rule {
            Rule::Sgd {
                lr,
                momentum,
                nesterov,
                weight_decay,
            } => {
                let mut g = grad[i] + weight_decay * param[i];
                if momentum > 0.0 {
                    let v = momentum * state[0][i] + g;
                    state[0][i] = v;
                    g = if nesterov { g + momentum * v } else { v };
                }
                param[i] -= lr * g;
            }
            Rule::Adam {
                lr,
                beta1,
                beta2,
                eps,
                weight_decay,
                decoupled,
            } => {
                let mut g = grad[i];
                if decoupled {
                    param[i] *= 1.0 - lr * weight_decay;
                } else {
                    g += weight_decay * param[i];
                }
                let m = beta1 * state[0][i] + (1.0 - beta1) * g;
                let v = beta2 * state[1][i] + (1.0 - beta2) * g * g;
                state[0][i] = m;
                state[1][i] = v;
                let mhat = m / (1.0 - beta1.powi(t as i32));
                let vhat = v / (1.0 - beta2.powi(t as i32));
                param[i] -= lr * mhat / (vhat.sqrt() + eps);
            }
            Rule::RmsProp {
                lr,
                rho,
                eps,
                weight_decay,
            } => {
                let g = grad[i] + weight_decay * param[i];
                let v = rho * state[0][i] + (1.0 - rho) * g * g;
                state[0][i] = v;
                param[i] -= lr * g / (v.sqrt() + eps);
            }
        }
    }
}
