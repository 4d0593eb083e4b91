//! [`Model::gradients`]: the gradient of the compiled loss at the current weights, without
//! an optimizer step — what Keras programs get from `tf.GradientTape` and PyTorch programs
//! from `loss.backward()`, for checking a model against another framework's
//! (tests/gpt_parity.rs) or inspecting a training run.
//!
//! It is a training step's own program ([`StepProgram`] with [`Backward::Grads`], as each
//! device of data-parallel training runs it): the same forward pass, loss and backward pass,
//! each gradient written into a buffer of its own instead of being applied.

use crate::data::dataset::Dataset;
use crate::error::{Error, Result};
use crate::memory::MemoryKind;
use crate::nn::graph::model::Model;
use crate::nn::train::step::{self, StepProgram};
use crate::nn::train::table::{Backward, StepLayout};
use crate::tensor::{IndexBuffer, Tensor};

impl Model {
    /// The gradient of the compiled loss over every row of `data`, taken as one batch (the
    /// mean over its rows, and over positions for per-position labels, as a training step
    /// takes it), with respect to each trainable parameter at the current weights. Nothing
    /// is updated: not the weights, the optimizer state or the step count.
    ///
    /// Named and laid out as [`Model::weights`] names them (`layer/weight`, Keras's layouts),
    /// in the same order, trainable parameters only, each tensor once: a weight several
    /// layers hold (a shared layer's, an embedding tied to an output projection) has the sum
    /// of every use. Frozen layers' parameters are left out, as Keras's `trainable_weights`
    /// leaves them out. Gradients are not clipped (clipping belongs to the optimizer step).
    /// Dropout layers draw the masks of a training step (step 0 of the model's seed).
    ///
    /// `data` is one batch: its rows must fit the device as a training batch does.
    pub fn gradients(&self, data: &Dataset) -> Result<Vec<(String, Tensor)>> {
        const OP: &str = "gradients";
        self.check_dataset(OP, data)?;
        if self.loss.is_none() {
            return Err(Error::InvalidArgument {
                op: OP,
                name: "model",
                expected: "a compiled model (the gradient is the compiled loss's)".into(),
                found: "a model without a loss".into(),
            });
        }
        let rows = data.len();
        if rows == 0 {
            return Err(Error::InvalidArgument {
                op: OP,
                name: "data",
                expected: "at least one row".into(),
                found: "none".into(),
            });
        }
        let dev = &self.device;
        let grads: Vec<Tensor> = self
            .params()
            .iter()
            .map(|p| {
                // Zeros: a frozen layer's gradient is never written.
                let g = Tensor::zeros(dev, p.shape())?;
                g.set_memory_kind(MemoryKind::Gradients);
                Ok(g)
            })
            .collect::<Result<_>>()?;
        let all: Vec<u32> = (0..rows as u32).collect();
        let idx = IndexBuffer::new(dev, &all)?;
        let acc = step::accumulator(self)?;
        let backward = Backward::Grads(&grads);
        let layout = StepLayout::new(self, data, backward);
        let table = layout.table(dev)?;
        let plan = StepProgram::build(self, data, &idx, rows, backward, &acc, &table)?;
        // No rule: a gradient step has no optimizer slot to fill.
        step::run_chunk(
            dev,
            &layout,
            &table,
            std::slice::from_ref(&plan),
            &[(0, rows)],
            data,
            &idx,
            self.seed,
            0,
            None,
        )?;
        let names = self.trainable_names();
        if names.len() != grads.len() {
            return Err(Error::Internal {
                op: OP,
                message: format!(
                    "{} parameter names for {} gradients",
                    names.len(),
                    grads.len()
                ),
            });
        }
        Ok(names
            .into_iter()
            .zip(grads)
            .zip(self.frozen_params())
            .filter(|(_, frozen)| !frozen)
            .map(|(((name, _), g), _)| (name.replacen('.', "/", 1), g))
            .collect())
    }
}
