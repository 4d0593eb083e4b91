//! How a step's accumulator is laid out and read back: a block per output, in output order,
//! each `[Σ loss, Σ correct, rows, pad]` and then that output's metrics' sums
//! ([`metric::layout`]). A model of one output has one block, laid out as it always was. An
//! evaluation is the mean loss (for several outputs `Σ weight_k · loss_k`, what training
//! minimises), the accuracy (one output whose loss has one), the metrics, and for several
//! outputs each one's `{name}_loss`, then its `{name}_accuracy` and `{name}_{metric}`, as
//! Keras reports them.

use crate::nn::graph::model::Model;
use crate::nn::train::metric::{self, Metric};
use crate::nn::train::options::Evaluation;

/// One output's part of the accumulator.
#[derive(Clone, Debug)]
struct Head {
    name: String,
    weight: f64,
    has_acc: bool,
    metrics: Vec<Metric>,
}

impl Head {
    /// Words in its block: the loss, accuracy and row sums, then its metrics'.
    fn len(&self) -> usize {
        metric::layout(&self.metrics).1
    }
}

/// How a model's accumulator reads (see the module docs).
#[derive(Clone, Debug)]
pub(crate) struct Scoring {
    heads: Vec<Head>,
}

impl Scoring {
    /// The scoring of `model` as compiled now.
    pub(crate) fn of(model: &Model) -> Scoring {
        let heads = model
            .output_names()
            .into_iter()
            .zip(model.losses())
            .zip(model.loss_weights())
            .zip(model.output_metrics())
            .map(|(((name, loss), w), metrics)| Head {
                name,
                weight: f64::from(w),
                has_acc: loss.has_accuracy(),
                metrics,
            })
            .collect();
        Scoring { heads }
    }

    /// Words in the accumulator (a block's worth for a model without outputs yet).
    pub(crate) fn len(&self) -> usize {
        self.heads
            .iter()
            .map(Head::len)
            .sum::<usize>()
            .max(metric::BASE_SLOTS)
    }

    /// The first word of output `k`'s block.
    pub(crate) fn block(&self, k: usize) -> usize {
        self.heads[..k.min(self.heads.len())]
            .iter()
            .map(Head::len)
            .sum()
    }

    /// Output `k`'s metrics, whose sums follow its loss's in its block.
    pub(crate) fn metrics(&self, k: usize) -> &[Metric] {
        self.heads.get(k).map_or(&[], |h| &h.metrics)
    }

    /// Whether an evaluation has an accuracy (one output, whose loss has one).
    pub(crate) fn has_accuracy(&self) -> bool {
        matches!(self.heads.as_slice(), [h] if h.has_acc)
    }

    /// The loss (weighted over the outputs) and accuracy the sums give so far.
    pub(crate) fn running(&self, sums: &[f64]) -> (f64, Option<f64>) {
        let n = sums.get(2).copied().unwrap_or(0.0).max(1.0);
        let at = |i: usize| sums.get(i).copied().unwrap_or(0.0);
        let loss = match self.heads.as_slice() {
            // One output of weight 1: the mean as it always was, bit for bit.
            [h] if h.weight == 1.0 => at(0) / n,
            heads => (0..heads.len())
                .map(|k| heads[k].weight * at(self.block(k)) / n)
                .sum(),
        };
        (loss, self.has_accuracy().then(|| at(1) / n))
    }

    /// The evaluation the sums give.
    pub(crate) fn evaluation(&self, sums: &[f64]) -> Evaluation {
        let (loss, accuracy) = self.running(sums);
        let several = self.heads.len() > 1;
        let n = sums.get(2).copied().unwrap_or(0.0).max(1.0);
        let at = |i: usize| sums.get(i).copied().unwrap_or(0.0);
        let mut metrics = Vec::new();
        if several {
            for (k, h) in self.heads.iter().enumerate() {
                metrics.push((format!("{}_loss", h.name), at(self.block(k)) / n));
            }
        }
        for (k, h) in self.heads.iter().enumerate() {
            let b = self.block(k);
            if several && h.has_acc {
                metrics.push((format!("{}_accuracy", h.name), at(b + 1) / n));
            }
            if h.metrics.is_empty() || sums.len() < b + h.len() {
                continue;
            }
            for (name, v) in metric::values(&h.metrics, &sums[b..b + h.len()]) {
                let key = if several {
                    format!("{}_{name}", h.name)
                } else {
                    name
                };
                metrics.push((key, v));
            }
        }
        Evaluation {
            loss,
            accuracy,
            metrics,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(name: &str, metrics: Vec<Metric>) -> Head {
        Head {
            name: name.into(),
            weight: 1.0,
            has_acc: false,
            metrics,
        }
    }

    #[test]
    fn each_output_reads_its_own_block() {
        // Output a: MAE (1 slot) after its 4; output b: precision (TP, FP, FN) after its 4.
        let s = Scoring {
            heads: vec![
                head("a", vec![Metric::MeanAbsoluteError]),
                head("b", vec![Metric::Precision { threshold: 0.5 }]),
            ],
        };
        assert_eq!((s.block(0), s.block(1), s.len()), (0, 5, 12));
        let sums = [
            2.0, 0.0, 4.0, 0.0, 1.0, // a: loss 2 over 4 rows, Σ|e| = 1
            6.0, 0.0, 4.0, 0.0, 3.0, 1.0, 0.0, // b: loss 6, TP 3, FP 1, FN 0
        ];
        let e = s.evaluation(&sums);
        let get = |k: &str| e.metric(k).unwrap_or_else(|| panic!("no {k} in {e:?}"));
        assert_eq!(get("a_loss"), 0.5);
        assert_eq!(get("b_loss"), 1.5);
        assert_eq!(get("a_mean_absolute_error"), 0.25);
        assert_eq!(get("b_precision"), 0.75);
        assert_eq!(e.loss, 2.0);
        assert!(e.metric("mean_absolute_error").is_none());
    }
}
