//! Pooling layers: [`MaxPooling2D`], [`AveragePooling2D`] and [`GlobalAveragePooling2D`],
//! with Keras's arguments (a pool size, strides defaulting to it, `"valid"` or `"same"`
//! padding). Their passes are one dispatch each ([`crate::kernels::pool2d`]); max pooling
//! keeps where each maximum came from for its backward pass, and every backward pass applies
//! the gate of the layer before (a `Conv2D(relu)` before a pooling costs no derivative
//! dispatch).

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::kernels::pool2d::{self, Pool, PoolGeometry};
use crate::nn::layer::{Back, Cx, Dx, Io, Layer, Position, Saved, Weights};
use crate::nn::layers::reshape::check_channels_last;
use crate::nn::spec::{image, positive_pair, LayerKind, Pair, Shape};
use crate::tensor::Tensor;
use crate::vocab::Padding;

fn two() -> Pair {
    Pair(2, 2)
}

fn valid() -> String {
    "valid".into()
}

macro_rules! windowed {
    ($name:ident, $class:literal, $kind:expr, $doc:literal) => {
        #[doc = $doc]
        #[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
        #[serde(deny_unknown_fields)]
        pub struct $name {
            /// The window (default 2×2).
            #[serde(default = "two")]
            pub pool_size: Pair,
            /// Strides (default: the pool size).
            #[serde(default)]
            pub strides: Option<Pair>,
            /// `"valid"` (default) or `"same"`.
            #[serde(default = "valid")]
            pub padding: String,
            /// Keras's `data_format` (only `null` or `"channels_last"`).
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub data_format: Option<String>,
        }

        impl $name {
            /// A pooling over windows of `pool_size` (`2` or `(2, 2)`), moved by the same.
            pub fn new(pool_size: impl Into<Pair>) -> $name {
                $name {
                    pool_size: pool_size.into(),
                    strides: None,
                    padding: valid(),
                    data_format: None,
                }
            }

            /// Sets the strides.
            pub fn strides(mut self, s: impl Into<Pair>) -> Self {
                self.strides = Some(s.into());
                self
            }

            /// Sets the padding: `"valid"` or `"same"` (checked when added to a model).
            pub fn padding(mut self, p: &str) -> Self {
                self.padding = p.into();
                self
            }
        }

        impl LayerKind for $name {
            const CLASS: &'static str = $class;
            const POSITIONAL: &'static [&'static str] = &["pool_size", "strides", "padding"];

            fn check(&self) -> Result<()> {
                positive_pair($class, "pool_size", self.pool_size)?;
                if let Some(s) = self.strides {
                    positive_pair($class, "strides", s)?;
                }
                padding_mode($class, &self.padding)?;
                check_channels_last($class, self.data_format.as_deref())
            }

            fn output_shape(&self, input: &[usize]) -> Result<Shape> {
                let g =
                    windowed_geometry($class, input, self.pool_size, self.strides, &self.padding)?;
                Ok(vec![g.oh, g.ow, g.c])
            }

            fn instantiate(&self, io: Io, w: Weights) -> Result<Box<dyn Layer>> {
                let g = windowed_geometry(
                    $class,
                    &io.input,
                    self.pool_size,
                    self.strides,
                    &self.padding,
                )?;
                Ok(Box::new(PoolLayer {
                    io,
                    w,
                    g,
                    kind: $kind,
                }))
            }
        }
    };
}

windowed!(
    MaxPooling2D,
    "MaxPooling2D",
    Pool::Max,
    "Keras's `MaxPooling2D`: the maximum of each window of channels-last images."
);
windowed!(
    AveragePooling2D,
    "AveragePooling2D",
    Pool::Average,
    "Keras's `AveragePooling2D`: the mean of each window (padding not counted)."
);

fn padding_mode(op: &'static str, p: &str) -> Result<Padding> {
    p.parse().map_err(|_| Error::InvalidArgument {
        op,
        name: "padding",
        expected: "\"valid\" or \"same\"".into(),
        found: format!("{p:?}"),
    })
}

fn windowed_geometry(
    op: &'static str,
    input: &[usize],
    pool: Pair,
    strides: Option<Pair>,
    padding: &str,
) -> Result<PoolGeometry> {
    let (h, w, c) = image(op, input)?;
    let s = strides.unwrap_or(pool);
    PoolGeometry::new(
        1,
        (h, w, c),
        (pool.0, pool.1),
        (s.0, s.1),
        padding_mode(op, padding)?,
    )
    .map_err(|e| match e {
        Error::ShapeMismatch {
            expected, found, ..
        } => Error::ShapeMismatch {
            op,
            expected,
            found,
        },
        e => e,
    })
}

/// Keras's `GlobalAveragePooling2D`: the mean of each channel over the image, (h, w, c) →
/// (c), or (1, 1, c) with `keepdims`.
#[derive(Clone, Debug, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GlobalAveragePooling2D {
    /// Keep the spatial axes as 1s.
    #[serde(default)]
    pub keepdims: bool,
    /// Keras's `data_format` (only `null` or `"channels_last"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_format: Option<String>,
}

impl GlobalAveragePooling2D {
    /// A global average pooling.
    pub fn new() -> GlobalAveragePooling2D {
        GlobalAveragePooling2D::default()
    }
}

impl LayerKind for GlobalAveragePooling2D {
    const CLASS: &'static str = "GlobalAveragePooling2D";
    const POSITIONAL: &'static [&'static str] = &["data_format", "keepdims"];

    fn check(&self) -> Result<()> {
        check_channels_last(Self::CLASS, self.data_format.as_deref())
    }

    fn output_shape(&self, input: &[usize]) -> Result<Shape> {
        let (_, _, c) = image(Self::CLASS, input)?;
        Ok(if self.keepdims {
            vec![1, 1, c]
        } else {
            vec![c]
        })
    }

    fn instantiate(&self, io: Io, w: Weights) -> Result<Box<dyn Layer>> {
        let (h, ww, c) = image(Self::CLASS, &io.input)?;
        Ok(Box::new(PoolLayer {
            io,
            w,
            g: PoolGeometry::global(1, (h, ww, c)),
            kind: Pool::GlobalAverage,
        }))
    }
}

/// A pooling layer of a model.
struct PoolLayer {
    io: Io,
    w: Weights,
    /// The pooling for a batch of one.
    g: PoolGeometry,
    kind: Pool,
}

impl Layer for PoolLayer {
    fn io(&self) -> &Io {
        &self.io
    }

    fn weights(&self) -> &Weights {
        &self.w
    }

    fn forward(&self, cx: &mut Cx<'_>, _pos: Position, x: &Tensor) -> Result<Saved> {
        let g = self.g.with_batch(cx.batch);
        let y = cx.tensor(&self.io.output)?;
        let arg = match self.kind {
            Pool::Max => Some(cx.tensor(&self.io.output)?),
            _ => None,
        };
        let a = arg.as_ref().map(|t| t.buffer());
        pool2d::forward(cx.rec(), self.kind, &g, x.buffer(), y.buffer(), a)?;
        Ok(Saved::plain(x, y, arg.into_iter().collect()))
    }

    fn backward(&self, cx: &mut Cx<'_>, b: Back<'_>) -> Result<Option<Dx>> {
        let Back {
            saved,
            dy,
            dx_gate,
            need_dx,
            ..
        } = b;
        if !need_dx {
            return Ok(None);
        }
        let g = self.g.with_batch(cx.batch);
        let dx = cx.tensor(&self.io.input)?;
        let arg = saved.extra.first().map(|t| t.buffer());
        let gate = dx_gate.map(|(a, y)| (*a, y.buffer()));
        pool2d::backward(cx.rec(), self.kind, &g, dy.buffer(), arg, gate, dx.buffer())?;
        Ok(Some(Dx {
            grad: dx,
            gated: dx_gate.is_some(),
        }))
    }
}
