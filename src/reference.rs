//! Deliberately naive f64 CPU references of every kernel, used by the tests (and readable as
//! the specification of what each kernel computes). Inputs are f32 as stored on the device;
//! outputs are f64. The pointwise activation references panic for [`Activation::Softmax`],
//! which is a row operation ([`softmax`]).
//!
//! Not a stable API: public for the crate's tests and benchmarks.

use crate::vocab::{Activation, DenseLoss, Layout, Rule};

/// The softmax activation has no pointwise reference: it is a row operation ([`softmax`]).
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

/// C = act(op(A)·op(B) + bias) (+ C_old if given), shapes as in [`Layout`].
#[allow(clippy::too_many_arguments)] // mirrors the kernel's arguments one for one
pub fn matmul(
    a: &[f32],
    b: &[f32],
    bias: Option<&[f32]>,
    c_old: Option<&[f32]>,
    m: usize,
    n: usize,
    k: usize,
    layout: Layout,
    act: Activation,
) -> Vec<f64> {
    let mut out = vec![0.0; m * n];
    for i in 0..m {
        for j in 0..n {
            let mut acc = 0.0f64;
            for kk in 0..k {
                let av = match layout {
                    Layout::TN => a[kk * m + i],
                    _ => a[i * k + kk],
                } as f64;
                let bv = match layout {
                    Layout::NT => b[j * k + kk],
                    _ => b[kk * n + j],
                } as f64;
                acc += av * bv;
            }
            if let Some(bias) = bias {
                acc += bias[j] as f64;
            }
            let mut v = activate(act, acc);
            if let Some(c) = c_old {
                v += c[i * n + j] as f64;
            }
            out[i * n + j] = v;
        }
    }
    out
}

/// Per-row sums of (rows, cols).
pub fn sum_rows(x: &[f32], rows: usize, cols: usize) -> Vec<f64> {
    (0..rows)
        .map(|r| x[r * cols..(r + 1) * cols].iter().map(|&v| v as f64).sum())
        .collect()
}

/// Per-column sums of (rows, cols).
pub fn sum_cols(x: &[f32], rows: usize, cols: usize) -> Vec<f64> {
    (0..cols)
        .map(|c| (0..rows).map(|r| x[r * cols + c] as f64).sum())
        .collect()
}

/// Per-row max and first argmax.
pub fn max_rows(x: &[f32], rows: usize, cols: usize) -> (Vec<f64>, Vec<usize>) {
    let mut mx = Vec::with_capacity(rows);
    let mut am = Vec::with_capacity(rows);
    for r in 0..rows {
        let row = &x[r * cols..(r + 1) * cols];
        let mut best = 0;
        for (i, &v) in row.iter().enumerate() {
            if v > row[best] {
                best = i;
            }
        }
        mx.push(row[best] as f64);
        am.push(best);
    }
    (mx, am)
}

/// Row-wise softmax (or log-softmax) in f64.
pub fn softmax(x: &[f32], rows: usize, cols: usize, log: bool) -> Vec<f64> {
    let mut out = vec![0.0; rows * cols];
    for r in 0..rows {
        let row = &x[r * cols..(r + 1) * cols];
        let m = row.iter().fold(f64::NEG_INFINITY, |a, &v| a.max(v as f64));
        let s: f64 = row.iter().map(|&v| (v as f64 - m).exp()).sum();
        for c in 0..cols {
            let z = row[c] as f64 - m;
            out[r * cols + c] = if log { z - s.ln() } else { z.exp() / s };
        }
    }
    out
}

/// Sparse categorical cross-entropy from logits: per-row losses and `(softmax − onehot)·scale`.
pub fn xent(
    x: &[f32],
    labels: &[u32],
    rows: usize,
    cols: usize,
    scale: f64,
) -> (Vec<f64>, Vec<f64>) {
    let sm = softmax(x, rows, cols, false);
    let ls = softmax(x, rows, cols, true);
    let mut loss = vec![0.0; rows];
    let mut grad = vec![0.0; rows * cols];
    for r in 0..rows {
        let y = labels[r] as usize;
        loss[r] = -ls[r * cols + y];
        for c in 0..cols {
            grad[r * cols + c] = (sm[r * cols + c] - (c == y) as u8 as f64) * scale;
        }
    }
    (loss, grad)
}

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

/// Dense-target losses per row and their gradients `(∂ mean loss / ∂x)·(scale·B)`, as
/// loss.wgsl computes them: categorical and binary cross-entropy from logits, MSE on outputs.
pub fn dense_loss(
    kind: DenseLoss,
    x: &[f32],
    t: &[f32],
    rows: usize,
    cols: usize,
    scale: f64,
) -> (Vec<f64>, Vec<f64>) {
    let mut loss = vec![0.0; rows];
    let mut grad = vec![0.0; rows * cols];
    for r in 0..rows {
        let xr: Vec<f64> = x[r * cols..(r + 1) * cols]
            .iter()
            .map(|&v| v as f64)
            .collect();
        let tr: Vec<f64> = t[r * cols..(r + 1) * cols]
            .iter()
            .map(|&v| v as f64)
            .collect();
        match kind {
            DenseLoss::CategoricalFromLogits => {
                let m = xr.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                let s: f64 = xr.iter().map(|v| (v - m).exp()).sum();
                let lse = m + s.ln();
                let tsum: f64 = tr.iter().sum();
                loss[r] = tr.iter().zip(&xr).map(|(t, x)| t * (lse - x)).sum();
                for c in 0..cols {
                    grad[r * cols + c] = ((xr[c] - m).exp() / s * tsum - tr[c]) * scale;
                }
            }
            DenseLoss::BinaryFromLogits => {
                for c in 0..cols {
                    let p = 1.0 / (1.0 + (-xr[c]).exp());
                    loss[r] -= (tr[c] * p.ln() + (1.0 - tr[c]) * (1.0 - p).ln()) / cols as f64;
                    grad[r * cols + c] = (p - tr[c]) * scale / cols as f64;
                }
            }
            DenseLoss::MeanSquared => {
                for c in 0..cols {
                    let d = xr[c] - tr[c];
                    loss[r] += d * d / cols as f64;
                    grad[r * cols + c] = 2.0 * d * scale / cols as f64;
                }
            }
        }
    }
    (loss, grad)
}

/// Chris Wellons's "lowbias32" integer hash, as `elementwise.wgsl` computes it.
pub fn hash32(v: u32) -> u32 {
    let mut x = v;
    x ^= x >> 16;
    x = x.wrapping_mul(0x7feb_352d);
    x ^= x >> 15;
    x = x.wrapping_mul(0x846c_a68b);
    x ^= x >> 16;
    x
}

/// Whether dropout with rate `p` and seed `seed` keeps element `i` (the kernel's mask).
pub fn dropout_keep(i: u32, p: f32, seed: u32) -> bool {
    let u = (hash32(i ^ hash32(seed)) >> 8) as f32 * (1.0 / 16_777_216.0);
    u >= p
}

/// Inverted dropout in f64: `x / (1 − p)` where kept, 0 elsewhere.
pub fn dropout(x: &[f64], p: f32, seed: u32) -> Vec<f64> {
    let scale = 1.0 / (1.0 - p) as f64;
    x.iter()
        .enumerate()
        .map(|(i, &v)| {
            if dropout_keep(i as u32, p, seed) {
                v * scale
            } else {
                0.0
            }
        })
        .collect()
}
