//! Loss scaling for mixed precision (Keras's `LossScaleOptimizer`): the loss is multiplied
//! by a scale before the backward pass so small float16 gradients do not flush to zero, and
//! the gradients are divided by it before the optimizer applies them. A dynamic scale halves
//! on a step whose gradients overflow (inf or NaN: that step is skipped) and doubles after a
//! run of clean steps.
//!
//! Everything runs on the device in the captured step (the unfused optimizer path; see
//! docs/ARCHITECTURE.md, "Mixed precision"): the scale lives in a small state buffer
//! ([`crate::kernels::loss_scale`]) that the step reads and updates, so replaying a step
//! needs no host write and nothing is read back until the epoch's end.

use crate::error::{Error, Result};
use crate::exec::dispatch::Record;
use crate::kernels::loss_scale::{self as kernel, STATE_WORDS};
use crate::runtime::Device;
use crate::tensor::Tensor;

/// A loss scale's settings (Keras 3's `LossScaleOptimizer` arguments).
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct LossScale {
    /// The scale at the start (Keras: `initial_scale`, 2**15).
    pub initial: f64,
    /// Whether the scale adapts (halves on overflow, doubles after `growth_steps` clean
    /// steps); a fixed scale never changes (a non-finite step is still skipped).
    pub dynamic: bool,
    /// Clean steps in a row before a dynamic scale doubles (Keras:
    /// `dynamic_growth_steps`, 2000).
    pub growth_steps: u32,
}

impl Default for LossScale {
    fn default() -> LossScale {
        LossScale::dynamic()
    }
}

impl LossScale {
    /// Keras's defaults: a dynamic scale starting at 2**15, doubling after 2000 clean steps.
    pub fn dynamic() -> LossScale {
        LossScale {
            initial: 32768.0,
            dynamic: true,
            growth_steps: 2000,
        }
    }

    /// A fixed scale: it never changes, but a step whose gradients are not finite is still
    /// skipped (weights and optimizer state untouched), as a dynamic scale's is. TF 2's fixed
    /// scale applied such a step (inf or NaN into the weights); Keras 3 has no fixed scale
    /// (`LossScaleOptimizer(dynamic=False)` raises there).
    pub fn fixed(scale: f64) -> LossScale {
        LossScale {
            initial: scale,
            dynamic: false,
            growth_steps: 2000,
        }
    }

    /// Checks the settings: a scale in [1, 2^64] (the range the device keeps a dynamic scale
    /// in; 1 / scale must be finite in float32, and a scale below 1 shrinks gradients toward
    /// float16's underflow, the opposite of its purpose), a growth interval of at least 1.
    pub fn validate(&self) -> Result<()> {
        if !(self.initial >= 1.0 && self.initial <= MAX_SCALE) {
            return Err(Error::InvalidArgument {
                op: "loss scaling",
                name: "initial_scale",
                expected: "a number in [1, 2^64]".into(),
                found: self.initial.to_string(),
            });
        }
        if self.growth_steps == 0 {
            return Err(Error::InvalidArgument {
                op: "loss scaling",
                name: "dynamic_growth_steps",
                expected: "at least 1".into(),
                found: "0".into(),
            });
        }
        Ok(())
    }
}

/// The largest loss scale: the device doubles a dynamic scale only up to it.
pub const MAX_SCALE: f64 = 18446744073709551616.0;

/// Whether a model scales its loss ([`crate::nn::Model::set_loss_scaling`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum LossScaling {
    /// As the precision policy says: a dynamic scale ([`LossScale::dynamic`]) under
    /// `mixed_float16` (as Keras's `compile` wraps the optimizer), none under `float32`.
    #[default]
    Auto,
    /// No loss scaling.
    Off,
    /// This scale, under any policy.
    On(LossScale),
}

/// Where a model's loss scale stands ([`crate::nn::Model::loss_scale_state`]).
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct LossScaleState {
    /// The current scale.
    pub scale: f64,
    /// Clean steps since the scale last changed.
    pub clean_steps: u32,
    /// Steps skipped because their gradients were not finite, in all.
    pub skipped_steps: u32,
}

/// A state buffer for `ls`, starting at `at` (or at the initial scale).
pub(crate) fn state_tensor(
    dev: &Device,
    ls: &LossScale,
    at: Option<&LossScaleState>,
) -> Result<Tensor> {
    let mut w = [0u32; STATE_WORDS];
    let scale = at.map_or(ls.initial, |s| s.scale) as f32;
    w[kernel::SCALE_WORD] = scale.to_bits();
    w[kernel::UNSCALE_WORD] = (1.0 / scale).to_bits();
    w[kernel::CLEAN_WORD] = at.map_or(0, |s| s.clean_steps);
    w[kernel::SKIPPED_WORD] = at.map_or(0, |s| s.skipped_steps);
    w[kernel::GROWTH_WORD] = ls.growth_steps;
    w[kernel::DYNAMIC_WORD] = ls.dynamic as u32;
    let f: Vec<f32> = w.iter().map(|&b| f32::from_bits(b)).collect();
    Tensor::from_slice(dev, &f, &[STATE_WORDS])
}

/// Reads a state buffer (waits for the device).
pub(crate) fn read_state(t: &Tensor) -> Result<LossScaleState> {
    let w: Vec<u32> = t.to_vec()?.into_iter().map(f32::to_bits).collect();
    Ok(LossScaleState {
        scale: f32::from_bits(w[kernel::SCALE_WORD]) as f64,
        clean_steps: w[kernel::CLEAN_WORD],
        skipped_steps: w[kernel::SKIPPED_WORD],
    })
}

/// Records the scaling of the loss's seed gradient `dy` (in place) by the current scale.
pub(crate) fn record_seed(rec: &mut dyn Record, state: &Tensor, dy: &Tensor) -> Result<()> {
    kernel::scale(
        rec,
        state.buffer(),
        dy.buffer(),
        dy.numel(),
        kernel::SCALE_WORD,
    )
}

/// Records, after the backward pass: every live gradient checked for inf/NaN, the scale's
/// update (this step skipped or counted), and every live gradient multiplied by this
/// step's 1/scale, so what follows (clipping, the guarded optimizer) sees true gradients.
pub(crate) fn record_unscale(
    rec: &mut dyn Record,
    state: &Tensor,
    grads: &[Tensor],
    live: &[bool],
) -> Result<()> {
    for (g, _) in grads.iter().zip(live).filter(|(_, l)| **l) {
        kernel::check(rec, g.buffer(), g.numel(), state.buffer())?;
    }
    kernel::update(rec, state.buffer())?;
    for (g, _) in grads.iter().zip(live).filter(|(_, l)| **l) {
        kernel::scale(
            rec,
            state.buffer(),
            g.buffer(),
            g.numel(),
            kernel::UNSCALE_WORD,
        )?;
    }
    Ok(())
}
