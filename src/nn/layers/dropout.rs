//! The [`Dropout`] layer: while training, each element of its input is kept with probability
//! `1 − rate` and scaled by `1 / (1 − rate)` (inverted dropout), else zeroed; at inference it
//! passes its input through untouched (no dispatch). Any shape.
//!
//! The mask is a pure function of (the run's seed, the optimizer step, the layer's position
//! among the dropout layers, the element's index) ([`crate::nn::dropout_mask_seed`]), so a
//! resumed run draws the same masks, and the backward pass recomputes the mask instead of
//! storing it. Its backward kernel applies the gate the layer before offers (that layer's
//! activation derivative), so a `Dense(relu)` followed by `Dropout` costs one backward
//! dispatch for both.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::kernels::elementwise;
use crate::nn::layer::{Back, Cx, Dx, Io, Layer, Mode, Position, Saved, Slot, Weights};
use crate::nn::spec::{LayerKind, Shape};
use crate::tensor::Tensor;

/// Keras's `Dropout(rate)`: zeroes a fraction `rate` of its input while training (`0 ≤ rate
/// < 1`). Keras's `seed` is accepted and not used: masks follow the seed of `fit`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Dropout {
    /// The fraction dropped.
    pub rate: f32,
    /// Keras's `noise_shape` (only `null`: every element has its own draw).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub noise_shape: Option<serde_json::Value>,
    /// Keras's seed (not used: masks follow the seed given to `fit`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
}

impl Dropout {
    /// A dropout layer with this rate.
    pub fn new(rate: f32) -> Dropout {
        Dropout {
            rate,
            noise_shape: None,
            seed: None,
        }
    }
}

impl LayerKind for Dropout {
    const CLASS: &'static str = "Dropout";
    const POSITIONAL: &'static [&'static str] = &["rate", "noise_shape", "seed"];

    fn check(&self) -> Result<()> {
        if !(0.0..1.0).contains(&self.rate) {
            return Err(Error::InvalidArgument {
                op: "Dropout",
                name: "rate",
                expected: "a rate in [0, 1)".into(),
                found: self.rate.to_string(),
            });
        }
        if self.noise_shape.as_ref().is_some_and(|v| !v.is_null()) {
            return Err(Error::InvalidArgument {
                op: "Dropout",
                name: "noise_shape",
                expected: "None (a draw per element)".into(),
                found: format!("{:?}", self.noise_shape),
            });
        }
        Ok(())
    }

    fn output_shape(&self, input: &[usize]) -> Result<Shape> {
        Ok(input.to_vec())
    }

    fn instantiate(&self, io: Io, w: Weights) -> Result<Box<dyn Layer>> {
        Ok(Box::new(DropoutLayer {
            rate: self.rate,
            io,
            w,
        }))
    }
}

struct DropoutLayer {
    io: Io,
    w: Weights,
    rate: f32,
}

impl DropoutLayer {
    /// Whether this recording drops (training, with a rate).
    fn drops(&self, cx: &Cx<'_>, pos: Position) -> Option<usize> {
        pos.dropout
            .filter(|_| cx.mode == Mode::Train && self.rate > 0.0)
    }
}

impl Layer for DropoutLayer {
    fn io(&self) -> &Io {
        &self.io
    }

    fn weights(&self) -> &Weights {
        &self.w
    }

    fn dropout(&self) -> Option<f32> {
        Some(self.rate)
    }

    fn forward(&self, cx: &mut Cx<'_>, pos: Position, x: &Tensor) -> Result<Saved> {
        let Some(k) = self.drops(cx, pos) else {
            return Ok(Saved::plain(x, x.clone(), Vec::new()));
        };
        let y = cx.tensor(&self.io.output)?;
        let (n, rate) = (x.numel(), self.rate);
        cx.per_step(&[Slot::Dropout(k)], |rec| {
            elementwise::dropout(rec, x.buffer(), y.buffer(), n, rate, 0)
        })?;
        Ok(Saved::plain(x, y, Vec::new()))
    }

    fn backward(&self, cx: &mut Cx<'_>, b: Back<'_>) -> Result<Option<Dx>> {
        let Back {
            pos,
            dy,
            dx_gate,
            need_dx,
            ..
        } = b;
        if !need_dx {
            return Ok(None);
        }
        let Some(k) = self.drops(cx, pos) else {
            // Nothing was dropped: the gradient passes through (and the gate is declined).
            return Ok(Some(Dx {
                grad: dy.clone(),
                gated: false,
            }));
        };
        let dx = cx.tensor(&self.io.input)?;
        let (n, rate) = (dy.numel(), self.rate);
        let gate = dx_gate.map(|(act, y)| (*act, y.buffer()));
        cx.per_step(&[Slot::Dropout(k)], |rec| {
            elementwise::dropout_backward(rec, dy.buffer(), gate, dx.buffer(), n, rate, 0)
        })?;
        Ok(Some(Dx {
            grad: dx,
            gated: dx_gate.is_some(),
        }))
    }
}
