//! Layers that only apply an activation: Keras's [`Activation`], [`Softmax`] and [`ReLU`].
//! They have no weights; the activation head ([`crate::nn::layers::head`]) records them exactly as it
//! records a Dense or Conv2D layer's activation, so `Dense(10) → Softmax()` trains, folds into
//! a cross-entropy loss and predicts as `Dense(10, activation="softmax")` does (the quickstart
//! of TensorFlow's tutorials builds its probability model that way).
//!
//! Forward: the activation as one pointwise dispatch (softmax: the row kernel), or nothing at
//! all where it is linear or folded into the loss (the output is the input). Backward: the
//! derivative through the head unless the layer after applied this layer's gate; the gate of
//! the layer before is declined (that layer applies its own derivative).

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::kernels::elementwise;
use crate::nn::layer::{Back, Cx, Dx, Io, Layer, Mode, Position, Saved, Weights};
use crate::nn::layers::head;
use crate::nn::spec::{keras, parse_activation, LayerKind, Shape};
use crate::tensor::Tensor;
use crate::vocab::Activation as Act;

/// Keras's `Activation(activation)`: applies an activation by name (`"relu"`, `"softmax"`,
/// …) to a sample of any shape (softmax over the last axis).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Activation {
    /// The activation's name.
    #[serde(deserialize_with = "keras::activation")]
    pub activation: String,
}

impl Activation {
    /// An activation layer (`"relu"`, `"sigmoid"`, `"softmax"`, …).
    pub fn new(activation: &str) -> Activation {
        Activation {
            activation: activation.into(),
        }
    }
}

impl LayerKind for Activation {
    const CLASS: &'static str = "Activation";
    const POSITIONAL: &'static [&'static str] = &["activation"];

    fn check(&self) -> Result<()> {
        parse_activation(Self::CLASS, &self.activation).map(|_| ())
    }

    fn output_shape(&self, input: &[usize]) -> Result<Shape> {
        Ok(input.to_vec())
    }

    fn activation(&self) -> Result<Act> {
        parse_activation(Self::CLASS, &self.activation)
    }

    fn instantiate(&self, io: Io, w: Weights) -> Result<Box<dyn Layer>> {
        Ok(Box::new(Pointwise {
            act: self.activation()?,
            io,
            w,
        }))
    }
}

/// Keras's `Softmax(axis=-1)`: softmax over the last axis (the only one supported).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Softmax {
    /// The axis, counted as Keras counts it (the batch is axis 0; -1 is the last).
    #[serde(default = "last_axis")]
    pub axis: i64,
}

fn last_axis() -> i64 {
    -1
}

impl Default for Softmax {
    fn default() -> Softmax {
        Softmax { axis: -1 }
    }
}

impl Softmax {
    /// A softmax over the last axis.
    pub fn new() -> Softmax {
        Softmax::default()
    }
}

impl LayerKind for Softmax {
    const CLASS: &'static str = "Softmax";
    const POSITIONAL: &'static [&'static str] = &["axis"];

    fn check(&self) -> Result<()> {
        if self.axis == 0 || self.axis < -1 {
            return Err(Error::InvalidArgument {
                op: Self::CLASS,
                name: "axis",
                expected: "-1 (the last axis)".into(),
                found: self.axis.to_string(),
            });
        }
        Ok(())
    }

    fn output_shape(&self, input: &[usize]) -> Result<Shape> {
        // Keras counts the batch as axis 0: the last axis of a (None, 10) output is 1 or -1.
        if self.axis != -1 && self.axis != input.len() as i64 {
            return Err(Error::InvalidArgument {
                op: Self::CLASS,
                name: "axis",
                expected: format!("-1 or {} (the last axis of {input:?})", input.len()),
                found: self.axis.to_string(),
            });
        }
        Ok(input.to_vec())
    }

    fn activation(&self) -> Result<Act> {
        Ok(Act::Softmax)
    }

    fn instantiate(&self, io: Io, w: Weights) -> Result<Box<dyn Layer>> {
        Ok(Box::new(Pointwise {
            act: Act::Softmax,
            io,
            w,
        }))
    }
}

/// Keras's `ReLU(max_value=None, negative_slope=0.0, threshold=0.0)`: a ReLU, leaky where
/// `negative_slope > 0`. A `max_value` or a nonzero `threshold` is refused.
#[derive(Clone, Debug, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(clippy::upper_case_acronyms)] // Keras's class name
pub struct ReLU {
    /// Keras's cap (only `null`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_value: Option<f64>,
    /// The slope below the threshold (f64, so that the configuration reads back as written).
    #[serde(default)]
    pub negative_slope: f64,
    /// Keras's threshold (only 0).
    #[serde(default)]
    pub threshold: f64,
}

impl ReLU {
    /// A plain ReLU.
    pub fn new() -> ReLU {
        ReLU::default()
    }
}

impl LayerKind for ReLU {
    const CLASS: &'static str = "ReLU";
    const POSITIONAL: &'static [&'static str] = &["max_value", "negative_slope", "threshold"];

    fn check(&self) -> Result<()> {
        let bad = |name, expected: &str, found: String| {
            Err(Error::InvalidArgument {
                op: Self::CLASS,
                name,
                expected: expected.into(),
                found,
            })
        };
        if self.max_value.is_some() {
            return bad(
                "max_value",
                "None (no cap)",
                format!("{:?}", self.max_value),
            );
        }
        if !(self.negative_slope.is_finite() && self.negative_slope >= 0.0) {
            return bad(
                "negative_slope",
                "a finite slope of at least 0",
                self.negative_slope.to_string(),
            );
        }
        if self.threshold != 0.0 {
            return bad("threshold", "0", self.threshold.to_string());
        }
        Ok(())
    }

    fn output_shape(&self, input: &[usize]) -> Result<Shape> {
        Ok(input.to_vec())
    }

    fn activation(&self) -> Result<Act> {
        Ok(if self.negative_slope > 0.0 {
            Act::LeakyRelu(self.negative_slope as f32)
        } else {
            Act::Relu
        })
    }

    fn instantiate(&self, io: Io, w: Weights) -> Result<Box<dyn Layer>> {
        Ok(Box::new(Pointwise {
            act: self.activation()?,
            io,
            w,
        }))
    }
}

/// An activation as a layer of its own.
struct Pointwise {
    act: Act,
    io: Io,
    w: Weights,
}

impl Layer for Pointwise {
    fn io(&self) -> &Io {
        &self.io
    }

    fn weights(&self) -> &Weights {
        &self.w
    }

    fn activation(&self) -> Act {
        self.act
    }

    fn forward(&self, cx: &mut Cx<'_>, pos: Position, x: &Tensor) -> Result<Saved> {
        let folded = pos.folded && cx.mode != Mode::Predict;
        if self.act == Act::Linear || folded {
            // Nothing to compute: the output is the input (the loss applies a folded softmax).
            return Ok(Saved::plain(x, x.clone(), Vec::new()));
        }
        let n = x.numel();
        let head = head::forward(cx, pos, self.act, &self.io.output, |cx, y, act| {
            elementwise::activation(cx.rec(), act, x.buffer(), y.buffer(), n)
        })?;
        Ok(Saved {
            input: x.clone(),
            output: head.activated.clone(),
            head: Some(head),
            extra: Vec::new(),
        })
    }

    fn backward(&self, cx: &mut Cx<'_>, b: Back<'_>) -> Result<Option<Dx>> {
        let Back {
            saved,
            dy,
            gated,
            need_dx,
            ..
        } = b;
        if !need_dx {
            return Ok(None);
        }
        let grad = match (&saved.head, gated) {
            (Some(h), false) => head::backward(cx, h, dy)?,
            _ => dy.clone(),
        };
        // The previous layer's gate is declined: it applies its own derivative.
        Ok(Some(Dx { grad, gated: false }))
    }
}
