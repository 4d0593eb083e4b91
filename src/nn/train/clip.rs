//! Gradient clipping, Keras's `clipnorm`, `clipvalue` and `global_clipnorm`: what a model's
//! optimizer does to whole gradients before it applies them (so training with clipping takes
//! the unfused path: gradients into buffers, clipped, then one optimizer dispatch per
//! parameter; see docs/ARCHITECTURE.md, "Which optimizer path runs").
//!
//! On the device, no readback: each trainable gradient's sum of squares goes into its slot
//! of a norms buffer, then each gradient is scaled by `min(1, limit / norm)` — its own norm
//! for `clipnorm`, the norm of all of them for `global_clipnorm` — and clamped to
//! `±clipvalue`. Frozen layers' gradients are neither counted nor applied.

use crate::error::{Error, Result};
use crate::exec::dispatch::Record;
use crate::kernels::{clip as kernel, elementwise};
use crate::tensor::Tensor;

/// How gradients are clipped before the optimizer applies them (Keras's optimizer
/// arguments; all off by default). `norm` and `global_norm` exclude each other, as in Keras.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Clip {
    /// `clipnorm`: each gradient scaled so its own L2 norm is at most this.
    pub norm: Option<f64>,
    /// `clipvalue`: each gradient element clamped to ±this.
    pub value: Option<f64>,
    /// `global_clipnorm`: every gradient scaled alike so their joint L2 norm is at most this.
    pub global_norm: Option<f64>,
}

impl Clip {
    /// No clipping.
    pub fn none() -> Clip {
        Clip::default()
    }

    /// `global_clipnorm` (nanoGPT clips at 1.0).
    pub fn global_norm(limit: f64) -> Clip {
        Clip {
            global_norm: Some(limit),
            ..Clip::default()
        }
    }

    /// Whether any clipping is on (then the optimizer runs unfused).
    pub fn is_on(&self) -> bool {
        self.norm.is_some() || self.value.is_some() || self.global_norm.is_some()
    }

    /// Checks the limits: positive and finite, and not both norms.
    pub fn validate(&self) -> Result<()> {
        for (name, v) in [
            ("clipnorm", self.norm),
            ("clipvalue", self.value),
            ("global_clipnorm", self.global_norm),
        ] {
            if let Some(v) = v {
                if !(v > 0.0 && v.is_finite() && v <= f32::MAX as f64) {
                    return Err(Error::InvalidArgument {
                        op: "gradient clipping",
                        name,
                        expected: "a finite number > 0 (or none)".into(),
                        found: v.to_string(),
                    });
                }
            }
        }
        if self.norm.is_some() && self.global_norm.is_some() {
            return Err(Error::InvalidArgument {
                op: "gradient clipping",
                name: "clipnorm",
                expected: "clipnorm or global_clipnorm, not both (as Keras)".into(),
                found: "both".into(),
            });
        }
        Ok(())
    }
}

/// Records the clipping of `grads` in place (`live[i]`: gradient `i` is trained, not
/// frozen), with `norms` a scratch buffer of at least `grads.len()` values. Nothing when
/// clipping is off.
pub(crate) fn record(
    rec: &mut dyn Record,
    clip: &Clip,
    grads: &[Tensor],
    live: &[bool],
    norms: &Tensor,
) -> Result<()> {
    if !clip.is_on() {
        return Ok(());
    }
    let slots = grads.len().max(1);
    let limit = clip.norm.or(clip.global_norm).unwrap_or(0.0) as f32;
    if limit > 0.0 {
        // Frozen gradients' slots stay zero: they count for nothing in the global norm.
        elementwise::fill(rec, norms.buffer(), slots, 0.0)?;
        for (i, g) in grads.iter().enumerate().filter(|(i, _)| live[*i]) {
            kernel::sumsq(rec, g.buffer(), g.numel(), norms.buffer(), slots, i)?;
        }
    }
    let value = clip.value.unwrap_or(0.0) as f32;
    for (i, g) in grads.iter().enumerate().filter(|(i, _)| live[*i]) {
        let range = if clip.global_norm.is_some() {
            (0, grads.len())
        } else {
            (i, 1)
        };
        kernel::scale(
            rec,
            g.buffer(),
            g.numel(),
            norms.buffer(),
            slots,
            range,
            limit,
            value,
        )?;
    }
    Ok(())
}
