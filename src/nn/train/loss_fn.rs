//! A loss called on data, as Keras's loss objects are (`loss_fn(y_true, y_pred)` in
//! TensorFlow's quickstart): the mean loss of predictions against targets, computed by the
//! same loss kernels training uses, on the predictions' device.
//!
//! `from_logits` says what `y_pred` holds, as in Keras: logits (the output of a linear layer)
//! or probabilities (of a softmax or sigmoid). Sparse categorical cross-entropy takes
//! probabilities directly (`-log(max(p[label], 1e-7))`, Keras's clipping); for the dense
//! cross-entropies probabilities are turned into the logits that give them (`ln p`, and
//! `ln p − ln(1 − p)` for binary) after Keras's clipping to `[1e-7, 1 − 1e-7]`, on the host.

use crate::error::{Error, Result};
use crate::exec::recorder::Recorder;
use crate::kernels::{loss as loss_kernels, softmax_xent};
use crate::nn::train::options::Loss;
use crate::ops::{Labels, MAX_CLASS};
use crate::tensor::Tensor;
use crate::vocab::{Activation, DenseLoss};

/// Keras's clipping of probabilities before a logarithm.
const EPSILON: f64 = 1e-7;

/// The mean of `loss` over the rows of `y_pred` (samples, outputs…) against `y_true` (class
/// indices for sparse categorical cross-entropy, else one target per output), as a scalar
/// tensor (shape `[]`) on `y_pred`'s device.
pub fn loss_value(
    loss: Loss,
    from_logits: bool,
    y_true: &[f32],
    y_pred: &Tensor,
) -> Result<Tensor> {
    let op = "loss";
    let shape = y_pred.shape();
    let rows = shape.first().copied().unwrap_or(0);
    if rows == 0 || y_pred.numel() == 0 {
        return Err(Error::ShapeMismatch {
            op,
            expected: "predictions of at least one sample".into(),
            found: format!("shape {shape:?}"),
        });
    }
    let cols = y_pred.numel() / rows;
    let dev = y_pred.device().clone();
    let per_row = Tensor::empty(&dev, &[rows])?;
    let mut rec = Recorder::new(&dev);
    match loss {
        Loss::SparseCategoricalCrossentropy => {
            if y_true.len() != rows {
                return Err(Error::ShapeMismatch {
                    op,
                    expected: format!("{rows} class labels (one per sample of y_pred {shape:?})"),
                    found: format!("{} values", y_true.len()),
                });
            }
            let mut idx = Vec::with_capacity(rows);
            for &v in y_true {
                if !(v >= 0.0 && v.fract() == 0.0 && (v as u64) <= MAX_CLASS) {
                    return Err(Error::InvalidArgument {
                        op,
                        name: "y_true",
                        expected: "class indices (whole numbers of at least 0)".into(),
                        found: v.to_string(),
                    });
                }
                idx.push(v as u32);
            }
            let labels = Labels::new(&dev, &idx)?;
            if labels.max() as usize >= cols {
                return Err(Error::InvalidArgument {
                    op,
                    name: "y_true",
                    expected: format!("class indices in 0..{cols}"),
                    found: format!("a label of {}", labels.max()),
                });
            }
            softmax_xent::xent(
                &mut rec,
                y_pred.buffer(),
                labels.tensor().buffer(),
                per_row.buffer(),
                None,
                rows,
                cols,
                1.0,
                !from_logits,
            )?;
            rec.submit()?;
        }
        _ => {
            if y_true.len() != rows * cols {
                return Err(Error::ShapeMismatch {
                    op,
                    expected: format!(
                        "{} targets (one per output of y_pred {shape:?})",
                        rows * cols
                    ),
                    found: format!("{} values", y_true.len()),
                });
            }
            let kind = match loss {
                Loss::CategoricalCrossentropy => DenseLoss::CategoricalFromLogits,
                Loss::BinaryCrossentropy => DenseLoss::BinaryFromLogits,
                Loss::MeanAbsoluteError => DenseLoss::MeanAbsolute,
                Loss::Huber => DenseLoss::Huber,
                _ => DenseLoss::MeanSquared,
            };
            let x = if from_logits || loss.is_regression() {
                y_pred.clone()
            } else {
                logits_of(loss, y_pred, cols)?
            };
            let t = Tensor::from_slice(&dev, y_true, &[rows, cols])?;
            let grad = Tensor::empty(&dev, &[rows, cols])?;
            loss_kernels::backward(
                &mut rec,
                kind,
                x.buffer(),
                t.buffer(),
                per_row.buffer(),
                grad.buffer(),
                rows,
                cols,
                1.0,
            )?;
            rec.submit()?;
        }
    }
    per_row.reshape(&[rows, 1])?.mean(0)?.reshape(&[])
}

/// The logits whose softmax (categorical) or sigmoid (binary) gives the probabilities
/// `y_pred`, after Keras's clipping.
fn logits_of(loss: Loss, y_pred: &Tensor, cols: usize) -> Result<Tensor> {
    let p = y_pred.to_vec()?;
    let clip = |v: f64| v.clamp(EPSILON, 1.0 - EPSILON);
    let out: Vec<f32> = match loss {
        Loss::BinaryCrossentropy => p
            .iter()
            .map(|&v| {
                let q = clip(v as f64);
                (q.ln() - (1.0 - q).ln()) as f32
            })
            .collect(),
        _ => p
            .chunks(cols)
            .flat_map(|row| {
                let s: f64 = row.iter().map(|&v| v as f64).sum::<f64>().max(EPSILON);
                row.iter().map(move |&v| clip(v as f64 / s).ln() as f32)
            })
            .collect(),
    };
    Tensor::from_slice(y_pred.device(), &out, y_pred.shape())
}

impl Loss {
    /// Checks Keras's `from_logits` against the activation of the model's output layer: a
    /// cross-entropy `from_logits=True` needs a linear output, and a linear output needs
    /// `from_logits=True` (training treats a linear output as logits, so the other way round
    /// would silently train something else than Keras does).
    pub fn check_from_logits(self, from_logits: bool, output: Activation) -> Result<()> {
        if self.is_regression() {
            return Ok(());
        }
        let linear = output == Activation::Linear;
        if from_logits && !linear {
            return Err(Error::InvalidArgument {
                op: "compile",
                name: "from_logits",
                expected: "from_logits=True only with a linear output layer".into(),
                found: format!("an output layer applying {output}"),
            });
        }
        if !from_logits && linear {
            return Err(Error::InvalidArgument {
                op: "compile",
                name: "from_logits",
                expected: "from_logits=True for a linear output layer (it outputs logits), or a softmax/sigmoid output".into(),
                found: "from_logits=False".into(),
            });
        }
        Ok(())
    }
}
