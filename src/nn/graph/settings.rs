//! A model's training settings beyond its optimizer and loss: which weights weight decay
//! applies to ([`crate::nn::DecayFilter`]) and how many batches' gradients are averaged per
//! optimizer step. Both make training take the unfused optimizer path where they matter
//! (see docs/ARCHITECTURE.md, "Which optimizer path runs"); both are kept by checkpoints.

use crate::error::{Error, Result};
use crate::nn::graph::model::Model;
use crate::nn::train::decay::DecayFilter;
use crate::vocab::Precision;

impl Model {
    /// Sets which weights weight decay applies to (AdamW's decoupled decay, the optimizer
    /// that has one). Kept by checkpoints. An exclusion list of which no name is part of any
    /// weight's is refused: a typo would otherwise silently decay everything (names that
    /// match nothing beside one that does are accepted, as Keras programs list
    /// `["bias", "layer_norm"]` for any model).
    pub fn set_weight_decay_filter(&mut self, filter: DecayFilter) -> Result<()> {
        if let DecayFilter::ExcludeNames(names) = &filter {
            let all: Vec<String> = self.weights().into_iter().map(|(n, _)| n).collect();
            let matches = |n: &String| !n.is_empty() && all.iter().any(|w| w.contains(n.as_str()));
            if names.iter().any(String::is_empty) || !names.iter().any(matches) {
                return Err(Error::InvalidArgument {
                    op: "set_weight_decay_filter",
                    name: "var_names",
                    expected: format!(
                        "non-empty names, at least one part of a weight's name ({})",
                        all.join(", ")
                    ),
                    found: format!("{names:?}"),
                });
            }
        }
        self.decay = filter;
        Ok(())
    }

    /// Which weights weight decay applies to.
    pub fn weight_decay_filter(&self) -> &DecayFilter {
        &self.decay
    }

    /// Averages the gradients of `batches` consecutive batches before each optimizer step
    /// (Keras's `gradient_accumulation_steps`): a batch of 16 with 4 accumulated trains as a
    /// batch of 64 would (the mean of the four batches' mean gradients), in the memory of
    /// 16. Training takes the unfused path with an accumulator per parameter; the
    /// optimizer's step count (Adam's bias corrections, a schedule's learning rate) counts
    /// its own steps, one per `batches` batches, carried across epochs. 1 turns it off.
    /// Gradient clipping with accumulation is refused when `fit` starts (it would clip each
    /// batch's part); so is training on several devices (they average over devices instead).
    /// Kept by checkpoints.
    pub fn set_gradient_accumulation(&mut self, batches: usize) -> Result<()> {
        if batches == 0 {
            return Err(Error::InvalidArgument {
                op: "set_gradient_accumulation",
                name: "batches",
                expected: "at least 1 (1: every batch steps the optimizer)".into(),
                found: "0".into(),
            });
        }
        self.accumulation = batches;
        Ok(())
    }

    /// Batches whose gradients are averaged per optimizer step.
    pub fn gradient_accumulation(&self) -> usize {
        self.accumulation
    }

    /// Sets the precision policy (Keras's `mixed_precision.set_global_policy`):
    /// [`Precision::MixedFloat16`] computes matmuls and convolutions with float16 operands
    /// and float32 accumulation, keeps float32 master weights and optimizer state, and
    /// scales the loss dynamically. Set before `fit`.
    pub fn set_precision_policy(&mut self, policy: Precision) {
        self.precision = policy;
    }

    /// The precision policy.
    pub fn precision_policy(&self) -> Precision {
        self.precision
    }

    /// For each trainable parameter, in optimizer order, whether weight decay applies to it.
    pub(crate) fn decay_mask(&self) -> Vec<bool> {
        self.trainable_names()
            .iter()
            .map(|(name, shape)| self.decay.decays(&name.replacen('.', "/", 1), shape))
            .collect()
    }
}
