//! Matrix products with their epilogue (bias, activation, accumulation).

use crate::reference::activation::activate;
use crate::vocab::{Activation, Layout};

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
