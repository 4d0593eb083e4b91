//! Keras's [`Rescaling`] layer: `y = scale · x + offset`, elementwise, on a sample of any
//! shape. Image models start with it (`Rescaling(1./255)` turns byte pixels into [0, 1]) so
//! the scaling travels with the model instead of living in the input pipeline.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::kernels::elementwise;
use crate::nn::layer::{Back, Cx, Dx, Io, Layer, Position, Saved, Weights};
use crate::nn::spec::{LayerKind, Shape};
use crate::tensor::Tensor;

/// Keras's `Rescaling(scale, offset=0.0)`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rescaling {
    /// The factor (f64, so that the configuration reads back as it was written, as in Keras).
    pub scale: f64,
    /// Added after scaling.
    #[serde(default)]
    pub offset: f64,
}

impl Rescaling {
    /// `y = scale · x + offset`.
    pub fn new(scale: f64, offset: f64) -> Rescaling {
        Rescaling { scale, offset }
    }
}

impl LayerKind for Rescaling {
    const CLASS: &'static str = "Rescaling";
    const POSITIONAL: &'static [&'static str] = &["scale", "offset"];

    fn check(&self) -> Result<()> {
        for (name, v) in [("scale", self.scale), ("offset", self.offset)] {
            if !v.is_finite() {
                return Err(Error::InvalidArgument {
                    op: Self::CLASS,
                    name,
                    expected: "a finite number".into(),
                    found: v.to_string(),
                });
            }
        }
        Ok(())
    }

    fn output_shape(&self, input: &[usize]) -> Result<Shape> {
        Ok(input.to_vec())
    }

    fn instantiate(&self, io: Io, w: Weights) -> Result<Box<dyn Layer>> {
        Ok(Box::new(RescalingLayer {
            scale: self.scale as f32,
            offset: self.offset as f32,
            io,
            w,
        }))
    }
}

struct RescalingLayer {
    scale: f32,
    offset: f32,
    io: Io,
    w: Weights,
}

impl Layer for RescalingLayer {
    fn io(&self) -> &Io {
        &self.io
    }

    fn weights(&self) -> &Weights {
        &self.w
    }

    fn forward(&self, cx: &mut Cx<'_>, _pos: Position, x: &Tensor) -> Result<Saved> {
        let y = cx.tensor(&self.io.output)?;
        elementwise::affine(
            cx.rec(),
            x.buffer(),
            y.buffer(),
            x.numel(),
            self.scale,
            self.offset,
        )?;
        Ok(Saved::plain(x, y, Vec::new()))
    }

    fn backward(&self, cx: &mut Cx<'_>, b: Back<'_>) -> Result<Option<Dx>> {
        let Back { dy, need_dx, .. } = b;
        if !need_dx {
            return Ok(None);
        }
        // dx = scale · dy (the gate of the layer before is declined).
        let dx = cx.tensor(&self.io.input)?;
        elementwise::scale(cx.rec(), dy.buffer(), dx.buffer(), dy.numel(), self.scale)?;
        Ok(Some(Dx {
            grad: dx,
            gated: false,
        }))
    }
}
