//! How a step's accumulator is laid out and read back: `[Σ loss, Σ correct, rows, pad]` of
//! the (first) output, each metric's sums ([`metric::layout`]), then `[Σ loss, Σ correct,
//! rows, pad]` of every other output. An evaluation is the mean loss (for several outputs
//! `Σ weight_k · loss_k`, what training minimises), the accuracy (one output whose loss has
//! one), the metrics, and for several outputs each one's `{name}_loss` and
//! `{name}_accuracy`, as Keras reports them.

use crate::nn::graph::model::Model;
use crate::nn::train::metric::{self, Metric};
use crate::nn::train::options::Evaluation;

/// One output's part of the accumulator.
#[derive(Clone, Debug)]
struct Head {
    name: String,
    weight: f64,
    has_acc: bool,
}

/// How a model's accumulator reads (see the module docs).
#[derive(Clone, Debug)]
pub(crate) struct Scoring {
    heads: Vec<Head>,
    metrics: Vec<Metric>,
}

impl Scoring {
    /// The scoring of `model` as compiled now.
    pub(crate) fn of(model: &Model) -> Scoring {
        let heads = model
            .output_names()
            .into_iter()
            .zip(model.losses())
            .zip(model.loss_weights())
            .map(|((name, loss), w)| Head {
                name,
                weight: f64::from(w),
                has_acc: loss.has_accuracy(),
            })
            .collect();
        Scoring {
            heads,
            metrics: model.metrics.clone(),
        }
    }

    /// Words in the accumulator.
    pub(crate) fn len(&self) -> usize {
        metric::layout(&self.metrics).1 + metric::BASE_SLOTS * self.heads.len().saturating_sub(1)
    }

    /// The first word of output `k`'s block.
    pub(crate) fn block(&self, k: usize) -> usize {
        match k {
            0 => 0,
            _ => metric::layout(&self.metrics).1 + metric::BASE_SLOTS * (k - 1),
        }
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
        let mut metrics = Vec::new();
        if self.heads.len() > 1 {
            let n = sums.get(2).copied().unwrap_or(0.0).max(1.0);
            for (k, h) in self.heads.iter().enumerate() {
                let b = self.block(k);
                metrics.push((
                    format!("{}_loss", h.name),
                    sums.get(b).copied().unwrap_or(0.0) / n,
                ));
                if h.has_acc {
                    let acc = sums.get(b + 1).copied().unwrap_or(0.0) / n;
                    metrics.push((format!("{}_accuracy", h.name), acc));
                }
            }
        }
        metrics.extend(metric::values(&self.metrics, sums));
        Evaluation {
            loss,
            accuracy,
            metrics,
        }
    }
}
