//! The dense-target losses (`loss.wgsl`).

use crate::vocab::DenseLoss;

/// Dense-target losses per row and their gradients `(∂ mean loss / ∂x)·(scale·B)`, as
/// loss.wgsl computes them: categorical and binary cross-entropy from logits; MSE, MAE and
/// Huber (δ = 1) on outputs.
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
            DenseLoss::MeanAbsolute => {
                for c in 0..cols {
                    let d = xr[c] - tr[c];
                    loss[r] += d.abs() / cols as f64;
                    let s = if d > 0.0 {
                        1.0
                    } else if d < 0.0 {
                        -1.0
                    } else {
                        0.0
                    };
                    grad[r * cols + c] = s * scale / cols as f64;
                }
            }
            DenseLoss::Huber => {
                for c in 0..cols {
                    let d = xr[c] - tr[c];
                    loss[r] += if d.abs() <= 1.0 {
                        0.5 * d * d
                    } else {
                        d.abs() - 0.5
                    } / cols as f64;
                    grad[r * cols + c] = d.clamp(-1.0, 1.0) * scale / cols as f64;
                }
            }
        }
    }
    (loss, grad)
}
