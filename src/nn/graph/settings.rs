//! A model's training settings beyond its optimizer and loss: which weights weight decay
//! applies to ([`crate::nn::DecayFilter`]) and how many batches' gradients are averaged per
//! optimizer step, the precision policy and whether the loss is scaled. Decay filters,
//! accumulation and loss scaling make training take the unfused optimizer path where they
//! matter (see docs/ARCHITECTURE.md, "Which optimizer path runs"); all are kept by
//! checkpoints.

use crate::error::{Error, Result};
use crate::nn::graph::model::Model;
use crate::nn::train::decay::DecayFilter;
use crate::nn::train::loss_scale::{self, LossScale, LossScaleState, LossScaling};
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
        let before = self.loss_scale();
        self.precision = policy;
        if self.loss_scale() != before {
            self.loss_scale_state = None;
        }
    }

    /// The precision policy.
    pub fn precision_policy(&self) -> Precision {
        self.precision
    }

    /// Sets whether the loss is scaled (Keras's `LossScaleOptimizer`):
    /// [`LossScaling::Auto`] (the default) scales dynamically under
    /// [`Precision::MixedFloat16`] and not under float32. Scaling makes training take the
    /// unfused optimizer path; it is refused with gradient accumulation and on several
    /// devices when `fit` starts. A changed setting starts the scale afresh. Kept by
    /// checkpoints, with the scale's state.
    pub fn set_loss_scaling(&mut self, scaling: LossScaling) -> Result<()> {
        if let LossScaling::On(ls) = &scaling {
            ls.validate()?;
        }
        let before = self.loss_scale();
        self.loss_scaling = scaling;
        if self.loss_scale() != before {
            self.loss_scale_state = None;
        }
        Ok(())
    }

    /// The loss-scaling setting.
    pub fn loss_scaling(&self) -> LossScaling {
        self.loss_scaling
    }

    /// The loss scale training uses, if any (the setting resolved against the policy).
    pub fn loss_scale(&self) -> Option<LossScale> {
        match self.loss_scaling {
            LossScaling::Auto if self.precision.is_mixed() => Some(LossScale::dynamic()),
            LossScaling::Auto | LossScaling::Off => None,
            LossScaling::On(ls) => Some(ls),
        }
    }

    /// Where the loss scale stands: the current scale, clean steps since it last changed
    /// and steps skipped in all (one read of the device state, which waits for the queued
    /// work). `None` without loss scaling; the initial scale before training.
    pub fn loss_scale_state(&self) -> Result<Option<LossScaleState>> {
        let Some(ls) = self.loss_scale() else {
            return Ok(None);
        };
        match &self.loss_scale_state {
            Some(t) => Ok(Some(loss_scale::read_state(t)?)),
            None => Ok(Some(LossScaleState {
                scale: ls.initial,
                clean_steps: 0,
                skipped_steps: 0,
            })),
        }
    }

    /// The loss scale's device state for training (made at the initial scale the first
    /// time); `None` without loss scaling.
    pub(crate) fn loss_scale_tensor(&mut self) -> Result<Option<crate::tensor::Tensor>> {
        let Some(ls) = self.loss_scale() else {
            return Ok(None);
        };
        if self.loss_scale_state.is_none() {
            self.loss_scale_state = Some(loss_scale::state_tensor(&self.device, &ls, None)?);
        }
        Ok(self.loss_scale_state.clone())
    }

    /// Restores the loss scale's state (a checkpoint's).
    pub(crate) fn restore_loss_scale(&mut self, at: &LossScaleState) -> Result<()> {
        if let Some(ls) = self.loss_scale() {
            self.loss_scale_state = Some(loss_scale::state_tensor(&self.device, &ls, Some(at))?);
        }
        Ok(())
    }

    /// For each trainable parameter, in optimizer order, whether weight decay applies to it.
    pub(crate) fn decay_mask(&self) -> Vec<bool> {
        self.trainable_names()
            .iter()
            .map(|(name, shape)| self.decay.decays(&name.replacen('.', "/", 1), shape))
            .collect()
    }
}
