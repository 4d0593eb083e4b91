//! The [`MultiHeadAttention`] layer, self-attention over (T, E) samples: one projection of
//! the input to queries, keys and values of every head, packed in one (T, 3·H·D) tensor
//! (one GEMM, nanoGPT's `c_attn`), the fused attention kernel
//! ([`crate::kernels::attention`]: online softmax, causal tiles skipped, T×T never stored),
//! and the output projection (H·D → E_out).
//!
//! Keras's signature; its call arguments (`use_causal_mask`) are held in the config, since a
//! node of the graph is its config. Query, key and value are one tensor (self-attention:
//! Keras's `mha(x, x)`); cross-attention, `value_dim` other than `key_dim`, attention
//! dropout and `attention_mask` are refused with typed errors until they are built.
//!
//! Backward: `dO = dy·Woᵀ`, `dWo = Oᵀ·dy` (the bias gradient as its column sums), the
//! attention kernels' dq, dk, dv into one packed gradient, then `dx = dqkv·Wqkvᵀ` (with the
//! previous layer's gate in its epilogue) and `dWqkv = xᵀ·dqkv`. Each parameter's gradient
//! is written whole and stepped by the optimizer kernel.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::kernels::attention::{self, MAX_HEAD_SIZE};
use crate::kernels::attention_cache::{self, CacheShape};
use crate::kernels::matmul::{Epilogue, MatmulArgs};
use crate::kernels::matmul_tune;
use crate::nn::layer::{Back, Cx, Dx, Io, Layer, Position, Saved, WeightGrad, Weights};
use crate::nn::spec::{
    check_bias_initializer, keras, positive, Init, Initializer, LayerKind, Shape, WeightSpec,
};
use crate::tensor::Tensor;
use crate::vocab::{Activation, Layout};

/// Keras's `MultiHeadAttention(num_heads, key_dim)`, as self-attention with an optional
/// causal mask. Build it with [`MultiHeadAttention::new`] and the setters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MultiHeadAttention {
    /// Heads.
    pub num_heads: usize,
    /// Size of each head's queries and keys (and values).
    pub key_dim: usize,
    /// Size of each head's values: `null` or `key_dim` (one head size for the fused kernel).
    #[serde(default)]
    pub value_dim: Option<usize>,
    /// Dropout on the attention probabilities: 0 only, for now.
    #[serde(default)]
    pub dropout: f32,
    /// Biases on the projections (default true).
    #[serde(default = "keras::yes")]
    pub use_bias: bool,
    /// The output's last size (default: the input's).
    #[serde(default)]
    pub output_shape: Option<usize>,
    /// Kernel initializer (default `"glorot_uniform"`).
    #[serde(default = "keras::glorot")]
    pub kernel_initializer: String,
    /// Bias initializer (`"zeros"` only).
    #[serde(default = "keras::zeros")]
    pub bias_initializer: String,
    /// Keras's call argument `use_causal_mask`: position i attends to positions ≤ i.
    #[serde(default)]
    pub use_causal_mask: bool,
    /// The input shape, on the first layer (builder only: the spec carries it).
    #[serde(skip)]
    pub(crate) input: Option<Shape>,
}

impl MultiHeadAttention {
    /// `num_heads` heads of size `key_dim`, no mask, Keras's defaults otherwise.
    pub fn new(num_heads: usize, key_dim: usize) -> MultiHeadAttention {
        MultiHeadAttention {
            num_heads,
            key_dim,
            value_dim: None,
            dropout: 0.0,
            use_bias: true,
            output_shape: None,
            kernel_initializer: keras::glorot(),
            bias_initializer: keras::zeros(),
            use_causal_mask: false,
            input: None,
        }
    }

    /// Position i attends to positions ≤ i only (a decoder's mask, Keras's
    /// `use_causal_mask=True`).
    pub fn causal(mut self, on: bool) -> Self {
        self.use_causal_mask = on;
        self
    }

    /// Enables or disables the projections' biases.
    pub fn use_bias(mut self, b: bool) -> Self {
        self.use_bias = b;
        self
    }

    /// Sets the output's last size.
    pub fn output_size(mut self, n: usize) -> Self {
        self.output_shape = Some(n);
        self
    }

    /// Sets the per-sample input shape (T, E) (first layer).
    pub fn input_shape(mut self, shape: &[usize]) -> Self {
        self.input = Some(shape.to_vec());
        self
    }

    fn hd(&self) -> usize {
        self.num_heads * self.key_dim
    }

    fn refuse(name: &'static str, expected: String, found: String) -> Result<()> {
        Err(Error::InvalidArgument {
            op: "MultiHeadAttention",
            name,
            expected,
            found,
        })
    }
}

impl LayerKind for MultiHeadAttention {
    const CLASS: &'static str = "MultiHeadAttention";
    const POSITIONAL: &'static [&'static str] = &["num_heads", "key_dim"];

    fn check(&self) -> Result<()> {
        positive(Self::CLASS, "num_heads", self.num_heads)?;
        positive(Self::CLASS, "key_dim", self.key_dim)?;
        if self.key_dim > MAX_HEAD_SIZE {
            return Self::refuse(
                "key_dim",
                format!("at most {MAX_HEAD_SIZE} (the fused kernel's head size)"),
                self.key_dim.to_string(),
            );
        }
        if let Some(v) = self.value_dim.filter(|&v| v != self.key_dim) {
            return Self::refuse(
                "value_dim",
                format!("None or key_dim ({})", self.key_dim),
                v.to_string(),
            );
        }
        if self.dropout != 0.0 {
            return Self::refuse(
                "dropout",
                "0 (dropout on the attention probabilities is not built yet)".into(),
                self.dropout.to_string(),
            );
        }
        if let Some(n) = self.output_shape {
            positive(Self::CLASS, "output_shape", n)?;
        }
        Initializer::parse(&self.kernel_initializer)?;
        check_bias_initializer(Self::CLASS, &self.bias_initializer)
    }

    fn output_shape(&self, input: &[usize]) -> Result<Shape> {
        match input {
            [t, e] => Ok(vec![*t, self.output_shape.unwrap_or(*e)]),
            _ => Err(Error::ShapeMismatch {
                op: Self::CLASS,
                expected: "samples of shape (T, features): a sequence of vectors".into(),
                found: crate::nn::spec::sample_shape(input),
            }),
        }
    }

    fn weights(&self, input: &[usize]) -> Vec<WeightSpec> {
        let e = input.last().copied().unwrap_or(1);
        let (hd, out) = (self.hd(), self.output_shape.unwrap_or(e));
        let init = Initializer::parse(&self.kernel_initializer).unwrap_or_default();
        let mut w = vec![WeightSpec {
            name: "qkv_kernel",
            shape: vec![e, 3 * hd],
            init: Init::Kernel(init, e, hd),
            trainable: true,
        }];
        if self.use_bias {
            w.push(WeightSpec {
                name: "qkv_bias",
                shape: vec![3 * hd],
                init: Init::Zeros,
                trainable: true,
            });
        }
        w.push(WeightSpec {
            name: "output_kernel",
            shape: vec![hd, out],
            init: Init::Kernel(init, hd, out),
            trainable: true,
        });
        if self.use_bias {
            w.push(WeightSpec {
                name: "output_bias",
                shape: vec![out],
                init: Init::Zeros,
                trainable: true,
            });
        }
        w
    }

    fn instantiate(&self, io: Io, w: Weights) -> Result<Box<dyn Layer>> {
        Ok(Box::new(AttentionLayer {
            t: io.input[0],
            e: io.input[1],
            out: io.output[1],
            heads: self.num_heads,
            d: self.key_dim,
            causal: self.use_causal_mask,
            bias: self.use_bias,
            io,
            w,
        }))
    }
}

/// A multi-head attention layer of a model.
struct AttentionLayer {
    io: Io,
    w: Weights,
    t: usize,
    e: usize,
    out: usize,
    heads: usize,
    d: usize,
    causal: bool,
    bias: bool,
}

/// Parameter indices: (qkv kernel, qkv bias, output kernel, output bias).
struct Params<'a> {
    qkv: &'a Tensor,
    qkv_b: Option<&'a Tensor>,
    out: &'a Tensor,
    out_b: Option<&'a Tensor>,
}

impl AttentionLayer {
    fn params(&self) -> Params<'_> {
        let p = &self.w.params;
        if self.bias {
            Params {
                qkv: &p[0],
                qkv_b: Some(&p[1]),
                out: &p[2],
                out_b: Some(&p[3]),
            }
        } else {
            Params {
                qkv: &p[0],
                qkv_b: None,
                out: &p[1],
                out_b: None,
            }
        }
    }

    fn hd(&self) -> usize {
        self.heads * self.d
    }

    fn shape(&self, batch: usize) -> attention::Shape {
        attention::Shape::packed(batch, self.t, self.heads, self.d, self.causal)
    }

    /// Records `c = a·op(b) (+ bias)`, `m` rows.
    #[allow(clippy::too_many_arguments)] // one GEMM's operands, spelled out
    fn gemm(
        cx: &mut Cx<'_>,
        a: &Tensor,
        b: &Tensor,
        c: &Tensor,
        (m, n, k): (usize, usize, usize),
        layout: Layout,
        epilogue: Epilogue<'_>,
    ) -> Result<()> {
        let args = MatmulArgs {
            a: a.buffer(),
            b: b.buffer(),
            epilogue,
            c: c.buffer(),
            m: m as u32,
            n: n as u32,
            k: k as u32,
            layout,
            act: Activation::Linear,
            accumulate: false,
        };
        matmul_tune::record(cx.rec(), &args)
    }

    /// A weight's gradient `aᵀ·b` (with the bias gradient as `b`'s column sums) written
    /// where `grad` says, then stepped when updating.
    #[allow(clippy::too_many_arguments)] // the product and where its two results go
    fn weight_grad(
        cx: &mut Cx<'_>,
        grad: &WeightGrad<'_>,
        pos: Position,
        (i, w): (usize, &Tensor),
        bias: Option<&Tensor>,
        a: &Tensor,
        b: &Tensor,
        (m, n, k): (usize, usize, usize),
    ) -> Result<()> {
        let gw = grad.target(cx, i, w.shape())?;
        let gb = match bias {
            Some(t) => Some(grad.target(cx, i + 1, t.shape())?),
            None => None,
        };
        let epilogue = gb
            .as_ref()
            .map_or(Epilogue::None, |g| Epilogue::ColSum(g.buffer()));
        Self::gemm(cx, a, b, &gw, (m, n, k), Layout::TN, epilogue)?;
        grad.apply(cx, pos, i, w, &gw)?;
        if let (Some(t), Some(g)) = (bias, &gb) {
            grad.apply(cx, pos, i + 1, t, g)?;
        }
        Ok(())
    }
}

impl Layer for AttentionLayer {
    fn io(&self) -> &Io {
        &self.io
    }

    fn weights(&self) -> &Weights {
        &self.w
    }

    fn forward(&self, cx: &mut Cx<'_>, _pos: Position, x: &Tensor) -> Result<Saved> {
        let p = self.params();
        let rows = cx.batch * self.t;
        let hd = self.hd();
        let qkv = cx.tensor(&[self.t, 3 * hd])?;
        Self::gemm(
            cx,
            x,
            p.qkv,
            &qkv,
            (rows, 3 * hd, self.e),
            Layout::NN,
            p.qkv_b
                .map_or(Epilogue::None, |t| Epilogue::Bias(t.buffer())),
        )?;
        let o = cx.tensor(&[self.t, hd])?;
        let lse = if let Some(cache) = cx.kv_cache(hd)? {
            // Generation: these rows are the new tokens; the earlier ones are in the cache.
            if !self.causal {
                return Err(Error::InvalidArgument {
                    op: "generate",
                    name: "MultiHeadAttention",
                    expected: "causal self-attention (use_causal_mask=True): a cache of keys and values needs later tokens never to change earlier ones".into(),
                    found: "an attention without the causal mask".into(),
                });
            }
            let s = CacheShape {
                batch: cx.batch,
                n: self.t,
                past: cache.past,
                heads: self.heads,
                d: self.d,
                cap: cache.cap,
            };
            attention_cache::append(
                cx.rec(),
                &s,
                qkv.buffer(),
                cache.k.buffer(),
                cache.v.buffer(),
            )?;
            let scores = cx.scratch(&[s.scores_len()])?;
            let kv = (cache.k.buffer(), cache.v.buffer());
            attention_cache::attend(cx.rec(), &s, qkv.buffer(), kv, scores.buffer(), o.buffer())?;
            scores
        } else {
            let lse = cx.scratch(&[cx.batch * self.heads * self.t])?;
            let shape = self.shape(cx.batch);
            attention::forward(cx.rec(), &shape, qkv.buffer(), o.buffer(), lse.buffer())?;
            lse
        };
        let y = cx.tensor(&[self.t, self.out])?;
        Self::gemm(
            cx,
            &o,
            p.out,
            &y,
            (rows, self.out, hd),
            Layout::NN,
            p.out_b
                .map_or(Epilogue::None, |t| Epilogue::Bias(t.buffer())),
        )?;
        Ok(Saved::plain(x, y, vec![qkv, o, lse]))
    }

    fn backward(&self, cx: &mut Cx<'_>, b: Back<'_>) -> Result<Option<Dx>> {
        let Back {
            pos,
            saved,
            dy,
            dx_gate,
            need_dx,
            grad,
            ..
        } = b;
        let [qkv, o, lse] = saved.extra.as_slice() else {
            return Err(Error::Internal {
                op: "MultiHeadAttention",
                message: "the forward pass saved no attention state".into(),
            });
        };
        let p = self.params();
        let rows = cx.batch * self.t;
        let hd = self.hd();
        let (i_out, i_qkv) = (if self.bias { 2 } else { 1 }, 0);
        // The output projection: dO before the weight moves, then its gradient.
        let d_o = cx.tensor(&[self.t, hd])?;
        Self::gemm(
            cx,
            dy,
            p.out,
            &d_o,
            (rows, hd, self.out),
            Layout::NT,
            Epilogue::None,
        )?;
        Self::weight_grad(
            cx,
            &grad,
            pos,
            (i_out, p.out),
            p.out_b,
            o,
            dy,
            (hd, self.out, rows),
        )?;
        // The attention: dq, dk, dv into one packed gradient.
        let delta = cx.scratch(&[cx.batch * self.heads * self.t])?;
        let dqkv = cx.tensor(&[self.t, 3 * hd])?;
        let shape = self.shape(cx.batch);
        attention::backward(
            cx.rec(),
            &shape,
            qkv.buffer(),
            o.buffer(),
            d_o.buffer(),
            lse.buffer(),
            delta.buffer(),
            dqkv.buffer(),
        )?;
        // The input projection: dx (with the gate before) before the weight moves.
        let dx = if need_dx {
            let dx = cx.tensor(&self.io.input)?;
            let epilogue =
                dx_gate.map_or(Epilogue::None, |(act, y)| Epilogue::Gate(y.buffer(), *act));
            Self::gemm(
                cx,
                &dqkv,
                p.qkv,
                &dx,
                (rows, self.e, 3 * hd),
                Layout::NT,
                epilogue,
            )?;
            Some(Dx {
                grad: dx,
                gated: dx_gate.is_some(),
            })
        } else {
            None
        };
        Self::weight_grad(
            cx,
            &grad,
            pos,
            (i_qkv, p.qkv),
            p.qkv_b,
            &saved.input,
            &dqkv,
            (self.e, 3 * hd, rows),
        )?;
        Ok(dx)
    }
}
