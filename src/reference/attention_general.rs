//! General scaled dot-product attention in f64 (tq ≠ tk, dk ≠ dv, causal and padding
//! masks, operands at strides and offsets): the definition the unfused kernels
//! (`kernels::attention_unfused`) must match, and its gradients. Written from the formulas,
//! one (sequence, head, query) at a time, sharing nothing with the kernels but the shape.

use crate::kernels::attention_unfused::{General, Operand};

/// Value `c` of head h, row r of sequence b of an operand laid out as `op`.
#[allow(clippy::too_many_arguments)] // the index spelled out
fn at(
    x: &[f32],
    op: &Operand,
    rows: usize,
    width: usize,
    b: usize,
    r: usize,
    h: usize,
    c: usize,
) -> f64 {
    f64::from(x[(b * rows + r) * op.stride + op.off + h * width + c])
}

/// The probabilities (batch, heads, tq, tk): softmax of each query's visible scaled scores,
/// exactly 0 for hidden keys, a row of zeros when every key is hidden.
pub fn attention_probs(g: &General, q: &[f32], k: &[f32], mask: Option<&[f32]>) -> Vec<f64> {
    let mut p = vec![0.0; g.probs_len()];
    let scale = f64::from(g.scale);
    for b in 0..g.batch {
        for h in 0..g.heads {
            for i in 0..g.tq {
                let seen = |j: usize| {
                    !(g.causal && j > i) && mask.is_none_or(|m| m[(b * g.tq + i) * g.tk + j] != 0.0)
                };
                let s: Vec<f64> = (0..g.tk)
                    .map(|j| {
                        scale
                            * (0..g.dk)
                                .map(|c| {
                                    at(q, &g.q, g.tq, g.dk, b, i, h, c)
                                        * at(k, &g.k, g.tk, g.dk, b, j, h, c)
                                })
                                .sum::<f64>()
                    })
                    .collect();
                let mx = (0..g.tk)
                    .filter(|&j| seen(j))
                    .map(|j| s[j])
                    .fold(f64::MIN, f64::max);
                let e: Vec<f64> = (0..g.tk)
                    .map(|j| if seen(j) { (s[j] - mx).exp() } else { 0.0 })
                    .collect();
                let sum: f64 = e.iter().sum();
                let row = ((b * g.heads + h) * g.tq + i) * g.tk;
                for j in 0..g.tk {
                    p[row + j] = if sum > 0.0 { e[j] / sum } else { 0.0 };
                }
            }
        }
    }
    p
}

/// O = P·V, dense (batch, tq, heads·dv).
pub fn attention_output(g: &General, p: &[f64], v: &[f32]) -> Vec<f64> {
    let e = g.heads * g.dv;
    let mut o = vec![0.0; g.batch * g.tq * e];
    for b in 0..g.batch {
        for h in 0..g.heads {
            for i in 0..g.tq {
                let row = ((b * g.heads + h) * g.tq + i) * g.tk;
                for c in 0..g.dv {
                    o[(b * g.tq + i) * e + h * g.dv + c] = (0..g.tk)
                        .map(|j| p[row + j] * at(v, &g.v, g.tk, g.dv, b, j, h, c))
                        .sum();
                }
            }
        }
    }
    o
}

/// The gradients of Q, K and V (dense (batch, rows, heads·width)) from `d_o` (laid out as the
/// output), through the probabilities `p` of [`attention_probs`].
pub fn attention_general_backward(
    g: &General,
    p: &[f64],
    q: &[f32],
    k: &[f32],
    v: &[f32],
    d_o: &[f32],
) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let (ek, ev) = (g.heads * g.dk, g.heads * g.dv);
    let mut dq = vec![0.0; g.batch * g.tq * ek];
    let mut dk = vec![0.0; g.batch * g.tk * ek];
    let mut dv = vec![0.0; g.batch * g.tk * ev];
    let scale = f64::from(g.scale);
    for b in 0..g.batch {
        for h in 0..g.heads {
            for i in 0..g.tq {
                let row = ((b * g.heads + h) * g.tq + i) * g.tk;
                let go = |c: usize| at(d_o, &g.o, g.tq, g.dv, b, i, h, c);
                // dP_ij = dO_i · V_j; dV_j += P_ij dO_i.
                let dp: Vec<f64> = (0..g.tk)
                    .map(|j| {
                        (0..g.dv)
                            .map(|c| go(c) * at(v, &g.v, g.tk, g.dv, b, j, h, c))
                            .sum()
                    })
                    .collect();
                for j in 0..g.tk {
                    for c in 0..g.dv {
                        dv[(b * g.tk + j) * ev + h * g.dv + c] += p[row + j] * go(c);
                    }
                }
                // dS_ij = P_ij (dP_ij − Σ_l P_il dP_il); dQ_i += scale dS_ij K_j; dK_j += scale dS_ij Q_i.
                let dot: f64 = (0..g.tk).map(|j| p[row + j] * dp[j]).sum();
                for j in 0..g.tk {
                    let ds = scale * p[row + j] * (dp[j] - dot);
                    for c in 0..g.dk {
                        dq[(b * g.tq + i) * ek + h * g.dk + c] +=
                            ds * at(k, &g.k, g.tk, g.dk, b, j, h, c);
                        dk[(b * g.tk + j) * ek + h * g.dk + c] +=
                            ds * at(q, &g.q, g.tq, g.dk, b, i, h, c);
                    }
                }
            }
        }
    }
    (dq, dk, dv)
}
