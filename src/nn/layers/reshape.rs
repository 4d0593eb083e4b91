//! [`Flatten`] and [`Reshape`]: views. Their forward pass reshapes the tensor it is given
//! (the same buffer: no dispatch, no copy) and their backward pass reshapes the gradient back.
//!
//! A view has no activation of its own, so it hands the gate of the layer before it to the
//! layer after it (the engine looks through views, [`Layer::is_view`]): `Conv2D(relu) →
//! Flatten → Dense` applies the ReLU derivative in the dense layer's input-gradient product.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::nn::layer::{Back, Cx, Dx, Io, Layer, Position, Saved, Weights};
use crate::nn::spec::{sample_shape, LayerKind, Shape};
use crate::tensor::Tensor;

/// Keras's `Flatten()`: a sample of any shape becomes a vector (channels last, so the
/// order is Keras's and TensorFlow's).
#[derive(Clone, Debug, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Flatten {
    /// Keras's `data_format` (only `null` or `"channels_last"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_format: Option<String>,
}

impl Flatten {
    /// A flatten layer.
    pub fn new() -> Flatten {
        Flatten::default()
    }
}

impl LayerKind for Flatten {
    const CLASS: &'static str = "Flatten";
    const POSITIONAL: &'static [&'static str] = &["data_format"];

    fn check(&self) -> Result<()> {
        check_channels_last("Flatten", self.data_format.as_deref())
    }

    fn output_shape(&self, input: &[usize]) -> Result<Shape> {
        Ok(vec![input.iter().product()])
    }

    fn instantiate(&self, io: Io, w: Weights) -> Result<Box<dyn Layer>> {
        Ok(Box::new(View { io, w }))
    }
}

/// Keras's `Reshape(target_shape)`: a sample takes a new shape with the same number of
/// values; one dimension may be `-1` (inferred).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Reshape {
    /// The per-sample shape (one entry may be -1).
    pub target_shape: Vec<i64>,
}

impl Reshape {
    /// A reshape to `target_shape` (one entry may be -1).
    pub fn new(target_shape: &[i64]) -> Reshape {
        Reshape {
            target_shape: target_shape.to_vec(),
        }
    }
}

impl LayerKind for Reshape {
    const CLASS: &'static str = "Reshape";
    const POSITIONAL: &'static [&'static str] = &["target_shape"];

    fn check(&self) -> Result<()> {
        let unknown = self.target_shape.iter().filter(|&&d| d == -1).count();
        if self.target_shape.is_empty()
            || unknown > 1
            || self.target_shape.iter().any(|&d| d == 0 || d < -1)
        {
            return Err(Error::InvalidArgument {
                op: "Reshape",
                name: "target_shape",
                expected: "sizes of at least 1, at most one of them -1".into(),
                found: format!("{:?}", self.target_shape),
            });
        }
        Ok(())
    }

    fn output_shape(&self, input: &[usize]) -> Result<Shape> {
        let total: usize = input.iter().product();
        let known: usize = self
            .target_shape
            .iter()
            .filter(|&&d| d > 0)
            .map(|&d| d as usize)
            .product();
        let bad = || Error::ShapeMismatch {
            op: "Reshape",
            expected: format!(
                "a target shape {:?} holding the {total} values of a sample of shape {}",
                self.target_shape,
                sample_shape(input)
            ),
            found: sample_shape(input),
        };
        if known == 0 || !total.is_multiple_of(known) {
            return Err(bad());
        }
        let out: Shape = self
            .target_shape
            .iter()
            .map(|&d| if d == -1 { total / known } else { d as usize })
            .collect();
        if out.iter().product::<usize>() != total || out.contains(&0) {
            return Err(bad());
        }
        Ok(out)
    }

    fn instantiate(&self, io: Io, w: Weights) -> Result<Box<dyn Layer>> {
        Ok(Box::new(View { io, w }))
    }
}

/// Checks Keras's `data_format` argument: channels last only.
pub(crate) fn check_channels_last(op: &'static str, f: Option<&str>) -> Result<()> {
    match f {
        None | Some("channels_last") => Ok(()),
        Some(other) => Err(Error::InvalidArgument {
            op,
            name: "data_format",
            expected: "\"channels_last\" (NHWC, Keras's default)".into(),
            found: format!("{other:?}"),
        }),
    }
}

/// A layer that only reshapes.
struct View {
    io: Io,
    w: Weights,
}

impl Layer for View {
    fn io(&self) -> &Io {
        &self.io
    }

    fn weights(&self) -> &Weights {
        &self.w
    }

    fn is_view(&self) -> bool {
        true
    }

    fn forward(&self, cx: &mut Cx<'_>, _pos: Position, x: &Tensor) -> Result<Saved> {
        let mut shape = vec![cx.batch];
        shape.extend_from_slice(&self.io.output);
        Ok(Saved::plain(x, x.reshape(&shape)?, Vec::new()))
    }

    fn backward(&self, cx: &mut Cx<'_>, b: Back<'_>) -> Result<Option<Dx>> {
        let Back {
            dy, gated, need_dx, ..
        } = b;
        if !need_dx {
            return Ok(None);
        }
        let mut shape = vec![cx.batch];
        shape.extend_from_slice(&self.io.input);
        // Whether the layer after applied the gate (of the layer before this view) passes
        // through unchanged.
        Ok(Some(Dx {
            grad: dy.reshape(&shape)?,
            gated,
        }))
    }
}
