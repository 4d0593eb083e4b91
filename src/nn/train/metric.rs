//! Metrics beyond loss and accuracy: mean absolute and squared error, precision, recall and
//! ROC AUC, as Keras defines them. Each adds per-sample sums to the step's accumulator on the
//! device (`shaders/metric.wgsl`), in the same program as the loss, so an epoch costs one
//! readback however many metrics it reports; the values follow from the sums on the host.
//!
//! Each output's block of a step's accumulator holds `[Σ loss, Σ correct, rows, (pad)]` and
//! then each of its metrics' slots in the order the metrics were set ([`layout`]); the blocks
//! follow one another in output order (`crate::nn::train::scoring`).

use crate::error::{Error, Result};
use crate::kernels::metric::{Prediction, Sums, MAX_BUCKETS};
use crate::nn::train::options::Loss;
use crate::vocab::Activation;

/// Slots before the first metric's: `[Σ loss, Σ correct, rows, pad]`.
pub(crate) const BASE_SLOTS: usize = 4;

/// A metric computed on the device during `fit` and `evaluate` (set with
/// [`crate::nn::Sequential::set_metrics`]). Predictions are what `predict` returns (the
/// output layer's activation applied); a target counts as positive where it is above 0.5.
/// All need targets shaped like the output (not sparse class indices).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Metric {
    /// Mean over samples of the mean |prediction − target| over outputs (Keras `"mae"`).
    MeanAbsoluteError,
    /// Mean over samples of the mean (prediction − target)² (Keras `"mse"`).
    MeanSquaredError,
    /// TP / (TP + FP) over every output at `prediction > threshold` (0 with no positive
    /// prediction, as Keras's `divide_no_nan`).
    Precision {
        /// Decision threshold (Keras's default: 0.5).
        threshold: f32,
    },
    /// TP / (TP + FN) at `prediction > threshold`.
    Recall {
        /// Decision threshold (Keras's default: 0.5).
        threshold: f32,
    },
    /// Area under the ROC curve by Keras's interpolation over `thresholds` evenly spread
    /// thresholds (Keras's default: 200), predictions clamped to [0, 1].
    Auc {
        /// Number of thresholds, 2..=1024.
        thresholds: usize,
    },
}

impl Metric {
    /// Keras's default name for it (the key in logs and history).
    pub fn name(self) -> &'static str {
        match self {
            Metric::MeanAbsoluteError => "mean_absolute_error",
            Metric::MeanSquaredError => "mean_squared_error",
            Metric::Precision { .. } => "precision",
            Metric::Recall { .. } => "recall",
            Metric::Auc { .. } => "auc",
        }
    }

    /// A metric by the names Keras gives it (`"mae"`, `"mean_squared_error"`, `"precision"`,
    /// `"auc"`, …), with Keras's defaults.
    pub fn from_name(name: &str) -> Result<Metric> {
        Ok(match name {
            "mae" | "mean_absolute_error" => Metric::MeanAbsoluteError,
            "mse" | "mean_squared_error" => Metric::MeanSquaredError,
            "precision" => Metric::Precision { threshold: 0.5 },
            "recall" => Metric::Recall { threshold: 0.5 },
            "auc" => Metric::Auc { thresholds: 200 },
            _ => {
                return Err(Error::InvalidArgument {
                    op: "metrics",
                    name: "metric",
                    expected: "one of mae, mean_absolute_error, mse, mean_squared_error, \
                               precision, recall, auc"
                        .into(),
                    found: format!("{name:?}"),
                })
            }
        })
    }

    /// What the device sums for it.
    pub(crate) fn sums(self) -> Sums {
        match self {
            Metric::MeanAbsoluteError => Sums::AbsoluteError,
            Metric::MeanSquaredError => Sums::SquaredError,
            Metric::Precision { threshold } | Metric::Recall { threshold } => {
                Sums::Confusion { threshold }
            }
            Metric::Auc { thresholds } => Sums::Histogram {
                buckets: thresholds,
            },
        }
    }

    /// Checks its parameters (whatever the loss).
    pub(crate) fn check_parameters(self) -> Result<()> {
        let bad = |name: &'static str, expected: String, found: String| {
            Err(Error::InvalidArgument {
                op: "metrics",
                name,
                expected,
                found,
            })
        };
        match self {
            Metric::Precision { threshold } | Metric::Recall { threshold }
                if !(threshold > 0.0 && threshold < 1.0) =>
            {
                bad(
                    "threshold",
                    "a threshold in (0, 1)".into(),
                    threshold.to_string(),
                )
            }
            Metric::Auc { thresholds } if !(2..=MAX_BUCKETS).contains(&thresholds) => bad(
                "num_thresholds",
                format!("2..={MAX_BUCKETS}"),
                thresholds.to_string(),
            ),
            _ => Ok(()),
        }
    }

    /// Checks its parameters and that `loss` gives it dense targets.
    pub(crate) fn check(self, loss: Loss) -> Result<()> {
        self.check_parameters()?;
        if loss == Loss::SparseCategoricalCrossentropy {
            return Err(Error::InvalidArgument {
                op: "metrics",
                name: "metric",
                expected: format!(
                    "a loss with targets shaped like the output for {} (one-hot targets and \
                     categorical_crossentropy, binary_crossentropy or a regression loss)",
                    self.name()
                ),
                found: "sparse_categorical_crossentropy (class indices)".into(),
            });
        }
        Ok(())
    }

    /// Its value from its slots of the accumulator and the rows counted.
    pub(crate) fn value(self, s: &[f64], rows: f64) -> f64 {
        let ratio = |a: f64, b: f64| if b > 0.0 { a / b } else { 0.0 };
        match self {
            Metric::MeanAbsoluteError | Metric::MeanSquaredError => ratio(s[0], rows),
            Metric::Precision { .. } => ratio(s[0], s[0] + s[1]),
            Metric::Recall { .. } => ratio(s[0], s[0] + s[2]),
            Metric::Auc { thresholds } => auc(&s[..thresholds], &s[thresholds..2 * thresholds]),
        }
    }
}

/// ROC AUC from per-bucket counts of positives and negatives, as Keras's
/// `AUC(summation_method="interpolation")`: TP and FP at threshold k count the buckets ≥ k;
/// the trapezoids between consecutive thresholds' (FPR, TPR) points are summed.
pub fn auc(pos: &[f64], neg: &[f64]) -> f64 {
    let n = pos.len();
    let (mut tp, mut fp) = (vec![0.0; n], vec![0.0; n]);
    let (mut a, mut b) = (0.0, 0.0);
    for k in (0..n).rev() {
        a += pos[k];
        b += neg[k];
        tp[k] = a;
        fp[k] = b;
    }
    let (p, q) = (tp[0], fp[0]);
    let rate = |x: f64, total: f64| if total > 0.0 { x / total } else { 0.0 };
    (0..n.saturating_sub(1))
        .map(|k| {
            let (x0, x1) = (rate(fp[k], q), rate(fp[k + 1], q));
            let (y0, y1) = (rate(tp[k], p), rate(tp[k + 1], p));
            (x0 - x1) * (y0 + y1) / 2.0
        })
        .sum()
}

/// Each metric's first slot in an output's block, and the block's length.
pub(crate) fn layout(metrics: &[Metric]) -> (Vec<usize>, usize) {
    let mut at = BASE_SLOTS;
    let offsets = metrics
        .iter()
        .map(|m| {
            let o = at;
            at += m.sums().slots();
            o
        })
        .collect();
    (offsets, at)
}

/// Each metric's name and value from an output's block of an accumulator (the contents from
/// the block's first word on).
pub(crate) fn values(metrics: &[Metric], acc: &[f64]) -> Vec<(String, f64)> {
    let (offsets, _) = layout(metrics);
    let rows = acc.get(2).copied().unwrap_or(0.0);
    metrics
        .iter()
        .zip(offsets)
        .map(|(m, o)| (m.name().to_string(), m.value(&acc[o..], rows)))
        .collect()
}

/// How the metrics read what the last kernel wrote, given the output layer's activation
/// `act` and whether the loss folded it in.
pub(crate) fn prediction(act: Activation, folded: bool) -> Result<Prediction> {
    Ok(match act {
        _ if !folded => Prediction::AsIs,
        Activation::Linear => Prediction::AsIs,
        Activation::Sigmoid => Prediction::Sigmoid,
        Activation::Softmax => Prediction::Softmax,
        other => {
            return Err(Error::InvalidArgument {
                op: "metrics",
                name: "output activation",
                expected: "linear, sigmoid or softmax on the output layer of a model with \
                           precision, recall, AUC or error metrics and a cross-entropy loss"
                    .into(),
                found: format!("{other:?}"),
            })
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auc_of_a_perfect_and_a_useless_ranking() {
        // Positives all in the top bucket (n − 2: the last threshold is 1 + ε, above every
        // prediction), negatives in the bottom: AUC 1.
        let (mut pos, mut neg) = (vec![0.0; 5], vec![0.0; 5]);
        pos[3] = 3.0;
        neg[0] = 2.0;
        assert!((auc(&pos, &neg) - 1.0).abs() < 1e-12);
        assert!(auc(&neg, &pos).abs() < 1e-12);
        // Identical distributions: 0.5.
        let same = vec![1.0, 2.0, 0.0, 3.0, 0.0];
        assert!((auc(&same, &same) - 0.5).abs() < 1e-12);
    }

    #[test]
    fn names_round_trip_and_unknown_names_are_refused() {
        for n in ["mae", "mse", "precision", "recall", "auc"] {
            let m = Metric::from_name(n).unwrap();
            assert_eq!(Metric::from_name(m.name()).unwrap(), m);
        }
        assert!(Metric::from_name("f1").is_err());
    }
}
