//! Keras's [`Embedding`] layer: each id of the input selects a row of a trainable table
//! `embeddings` of shape (input_dim, output_dim), so a (T,) sample of token ids becomes
//! (T, output_dim). The input may have any per-sample shape; the output adds one axis.
//!
//! Ids reach the layer as f32 values, as every layer's input does: an integer dataset column
//! (`Dataset::from_ids`, `Dataset::with_input_ids`, an integer NumPy array in Python) is
//! uploaded as integers and gathered as exact f32 values (below 2^24). An id outside
//! `[0, input_dim)` selects nothing (a row of zeros, no gradient) rather than reading out of
//! bounds; Keras raises on the CPU and gives zeros on a GPU.
//!
//! Backward: the table's gradient is a scatter-add (an id repeated in the batch adds every
//! one of its positions' gradients to its row), computed without float atomics so that a
//! run is the same bits every time (`kernels::embedding`), written whole and stepped by the
//! optimizer kernel ([`crate::nn::layer::WeightGrad::apply`]): a GEMM's fused update does not
//! apply. Ids are not differentiable: when the layer reads another layer (not a model input),
//! the gradient it hands back is zeros, as TensorFlow gives no gradient through the integer
//! cast (the layers below then receive nothing from this path).

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::kernels::elementwise;
use crate::kernels::embedding::{self, EmbShape, Scratch, MAX_ROWS};
use crate::nn::layer::{Back, Cx, Dx, Io, Layer, Position, Saved, Weights};
use crate::nn::spec::{positive, sample_shape, Init, Initializer, LayerKind, Shape, WeightSpec};
use crate::tensor::Tensor;

fn uniform() -> String {
    Initializer::RandomUniform.name().into()
}

/// Keras's `Embedding(input_dim, output_dim, embeddings_initializer="uniform", ...)`: a
/// lookup table of `input_dim` rows of `output_dim` values. Keras's arguments that suanli
/// does not implement (masking, regularizers, constraints, sparse gradients) are accepted at
/// their defaults and refused otherwise, naming the argument.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Embedding {
    /// Rows of the table: ids run from 0 to `input_dim − 1` (the vocabulary size).
    pub input_dim: usize,
    /// Values per row.
    pub output_dim: usize,
    /// The table's initializer (default `"uniform"`: Keras's `RandomUniform(-0.05, 0.05)`;
    /// any name of [`Initializer`]).
    #[serde(default = "uniform")]
    pub embeddings_initializer: String,
    /// Keras's regularizer of the table (`null` only).
    #[serde(default)]
    pub embeddings_regularizer: Option<serde_json::Value>,
    /// Keras 2's regularizer of the output (`null` only).
    #[serde(default)]
    pub activity_regularizer: Option<serde_json::Value>,
    /// Keras's constraint on the table (`null` only).
    #[serde(default)]
    pub embeddings_constraint: Option<serde_json::Value>,
    /// Keras's masking of id 0 for the layers after (`false` only: no layer reads masks).
    #[serde(default)]
    pub mask_zero: bool,
    /// Keras 3's sparse gradient (`false` only: the gradient is the whole table's).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub sparse: bool,
    /// Keras 2's length of the input sequences: when given, the input must be `(input_length,)`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_length: Option<usize>,
    /// The input shape, on the first layer (builder only: the spec carries it).
    #[serde(skip)]
    pub(crate) input: Option<Shape>,
}

impl Embedding {
    /// A table of `input_dim` rows (ids `0..input_dim`) of `output_dim` values, initialised
    /// as Keras's default (uniform in ±0.05).
    pub fn new(input_dim: usize, output_dim: usize) -> Embedding {
        Embedding {
            input_dim,
            output_dim,
            embeddings_initializer: uniform(),
            embeddings_regularizer: None,
            activity_regularizer: None,
            embeddings_constraint: None,
            mask_zero: false,
            sparse: false,
            input_length: None,
            input: None,
        }
    }

    /// Sets the table's initializer.
    pub fn initializer(mut self, i: Initializer) -> Self {
        self.embeddings_initializer = i.name().into();
        self
    }

    /// Sets the per-sample input shape (first layer): `&[T]` for T ids per sample.
    pub fn input_shape(mut self, shape: &[usize]) -> Self {
        self.input = Some(shape.to_vec());
        self
    }

    fn initializer_kind(&self) -> Result<Initializer> {
        Initializer::parse(&self.embeddings_initializer).map_err(|e| match e {
            Error::InvalidArgument {
                expected, found, ..
            } => Error::InvalidArgument {
                op: Self::CLASS,
                name: "embeddings_initializer",
                expected,
                found,
            },
            e => e,
        })
    }
}

impl LayerKind for Embedding {
    const CLASS: &'static str = "Embedding";
    const POSITIONAL: &'static [&'static str] = &[
        "input_dim",
        "output_dim",
        "embeddings_initializer",
        "embeddings_regularizer",
        "embeddings_constraint",
        "mask_zero",
    ];

    fn check(&self) -> Result<()> {
        let refuse = |name: &'static str, expected: &str, found: String| Error::InvalidArgument {
            op: Self::CLASS,
            name,
            expected: expected.into(),
            found,
        };
        positive(Self::CLASS, "input_dim", self.input_dim)?;
        positive(Self::CLASS, "output_dim", self.output_dim)?;
        if self.input_dim > MAX_ROWS {
            return Err(refuse(
                "input_dim",
                &format!("at most {MAX_ROWS} rows (2^24: ids are exact as f32 below it)"),
                self.input_dim.to_string(),
            ));
        }
        self.initializer_kind()?;
        for (name, v) in [
            ("embeddings_regularizer", &self.embeddings_regularizer),
            ("activity_regularizer", &self.activity_regularizer),
            ("embeddings_constraint", &self.embeddings_constraint),
        ] {
            if let Some(v) = v.as_ref().filter(|v| !v.is_null()) {
                return Err(refuse(
                    name,
                    "null (suanli's layers have no regularizers or constraints yet)",
                    v.to_string(),
                ));
            }
        }
        if self.mask_zero {
            return Err(refuse(
                "mask_zero",
                "false (no layer reads masks yet: id 0 is an ordinary row)",
                "true".into(),
            ));
        }
        if self.sparse {
            return Err(refuse(
                "sparse",
                "false (the table's gradient is computed whole)",
                "true".into(),
            ));
        }
        if self.input_length == Some(0) {
            return Err(refuse("input_length", "at least 1, or null", "0".into()));
        }
        Ok(())
    }

    fn output_shape(&self, input: &[usize]) -> Result<Shape> {
        if let Some(t) = self.input_length {
            if input != [t] {
                return Err(Error::ShapeMismatch {
                    op: Self::CLASS,
                    expected: format!("samples of shape ({t},) (input_length={t})"),
                    found: format!("samples of shape {}", sample_shape(input)),
                });
            }
        }
        if input.is_empty() {
            return Err(Error::ShapeMismatch {
                op: Self::CLASS,
                expected: "ids of at least one dimension per sample".into(),
                found: "()".into(),
            });
        }
        let mut out = input.to_vec();
        out.push(self.output_dim);
        Ok(out)
    }

    fn weights(&self, _input: &[usize]) -> Vec<WeightSpec> {
        let init = self
            .initializer_kind()
            .unwrap_or(Initializer::RandomUniform);
        vec![WeightSpec {
            name: "embeddings",
            shape: vec![self.input_dim, self.output_dim],
            init: Init::Kernel(init, self.input_dim, self.output_dim),
            trainable: true,
        }]
    }

    fn instantiate(&self, io: Io, w: Weights) -> Result<Box<dyn Layer>> {
        Ok(Box::new(EmbeddingLayer {
            rows: self.input_dim,
            dim: self.output_dim,
            io,
            w,
        }))
    }
}

struct EmbeddingLayer {
    rows: usize,
    dim: usize,
    io: Io,
    w: Weights,
}

impl EmbeddingLayer {
    fn shape(&self, batch: usize) -> EmbShape {
        EmbShape {
            positions: batch * self.io.input.iter().product::<usize>(),
            rows: self.rows,
            dim: self.dim,
        }
    }

    fn table(&self) -> &Tensor {
        &self.w.params[0]
    }
}

impl Layer for EmbeddingLayer {
    fn io(&self) -> &Io {
        &self.io
    }

    fn weights(&self) -> &Weights {
        &self.w
    }

    fn forward(&self, cx: &mut Cx<'_>, _pos: Position, x: &Tensor) -> Result<Saved> {
        let s = self.shape(cx.batch);
        let y = cx.tensor(&self.io.output)?;
        embedding::forward(cx.rec(), &s, x.buffer(), self.table().buffer(), y.buffer())?;
        Ok(Saved::plain(x, y, Vec::new()))
    }

    fn backward(&self, cx: &mut Cx<'_>, b: Back<'_>) -> Result<Option<Dx>> {
        let Back {
            pos,
            saved,
            dy,
            need_dx,
            grad,
            ..
        } = b;
        let s = self.shape(cx.batch);
        let g = grad.target(cx, 0, &[self.rows, self.dim])?;
        let [nc, ns, np] = s.scratch_words();
        let (counts, starts, positions) =
            (cx.scratch(&[nc])?, cx.scratch(&[ns])?, cx.scratch(&[np])?);
        let scratch = Scratch {
            counts: counts.buffer(),
            starts: starts.buffer(),
            positions: positions.buffer(),
        };
        let ids = saved.input.buffer();
        embedding::backward(cx.rec(), &s, ids, dy.buffer(), scratch, g.buffer())?;
        grad.apply(cx, pos, 0, self.table(), &g)?;
        if !need_dx {
            return Ok(None);
        }
        // Ids are not differentiable: zeros, which the previous layer's gate (its activation's
        // derivative) would leave zeros, so it counts as applied.
        let dx = cx.tensor(&self.io.input)?;
        elementwise::fill(cx.rec(), dx.buffer(), dx.numel(), 0.0)?;
        Ok(Some(Dx {
            grad: dx,
            gated: true,
        }))
    }
}
