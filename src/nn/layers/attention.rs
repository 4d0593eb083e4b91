//! The [`MultiHeadAttention`] layer's configuration: Keras's signature and call arguments,
//! the roles of its inputs, its shapes and weights. The layer on a device is
//! [`crate::nn::layers::attention_pass`].
//!
//! Inputs, as Keras's call `mha(query, value, key=None, attention_mask=None)` gives them:
//! one input is self-attention (query, key and value the same tensor, `mha(x, x)`), whose
//! three projections are one GEMM of a packed (E, H·(2·key_dim + value_dim)) kernel
//! (nanoGPT's `c_attn`); two are (query, value), the key being the value; three are (query,
//! value, key). With `attention_mask` set, one more input comes last: a (T_q, T_k) mask per
//! sample whose zeros hide key j from query i (Keras's boolean mask as 0/1 floats).
//! Cross-attention has a kernel per projection (query, key and value; one packed "kv"
//! kernel when the key is the value). `value_dim` may differ from `key_dim`; `dropout`
//! drops attention probabilities while training.
//!
//! A node of the graph is its config, so the call arguments (`use_causal_mask`,
//! `attention_mask`) are fields here.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::nn::layer::{Io, Layer, Weights};
use crate::nn::layers::attention_pass::{self, Projection, Roles, Spec};
use crate::nn::spec::{
    check_bias_initializer, keras, positive, Init, Initializer, LayerKind, Shape, WeightSpec,
};

/// Keras's `MultiHeadAttention(num_heads, key_dim)`, as self-attention with an optional
/// causal mask. Build it with [`MultiHeadAttention::new`] and the setters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MultiHeadAttention {
    /// Heads.
    pub num_heads: usize,
    /// Size of each head's queries and keys (and values).
    pub key_dim: usize,
    /// Size of each head's values (`null`: `key_dim`).
    #[serde(default)]
    pub value_dim: Option<usize>,
    /// Dropout on the attention probabilities while training (`0 ≤ dropout < 1`).
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
    /// Keras's call argument `attention_mask` was given: the layer's last input is a
    /// (T_q, T_k) mask per sample, 0 hiding key j from query i.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub attention_mask: bool,
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
            attention_mask: false,
            input: None,
        }
    }

    /// Position i attends to positions ≤ i only (a decoder's mask, Keras's
    /// `use_causal_mask=True`).
    pub fn causal(mut self, on: bool) -> Self {
        self.use_causal_mask = on;
        self
    }

    /// Sets each head's value size (Keras's `value_dim`).
    pub fn value_dim(mut self, v: usize) -> Self {
        self.value_dim = Some(v);
        self
    }

    /// Sets the dropout rate on the attention probabilities (training only).
    pub fn dropout(mut self, rate: f32) -> Self {
        self.dropout = rate;
        self
    }

    /// The call has an `attention_mask`: the last input is a (T_q, T_k) mask per sample.
    pub fn with_attention_mask(mut self, on: bool) -> Self {
        self.attention_mask = on;
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

    /// Each head's value size.
    pub(crate) fn dv(&self) -> usize {
        self.value_dim.unwrap_or(self.key_dim)
    }

    fn refuse<T>(name: &'static str, expected: String, found: String) -> Result<T> {
        Err(Error::InvalidArgument {
            op: "MultiHeadAttention",
            name,
            expected,
            found,
        })
    }

    /// What each of `n` inputs is, or a typed error.
    pub(crate) fn roles(&self, n: usize) -> Result<Roles> {
        let mask = self.attention_mask.then(|| n.wrapping_sub(1));
        let data = n - usize::from(self.attention_mask).min(n);
        let (value, key) = match data {
            1 => (0, 0),
            2 => (1, 1),
            3 => (1, 2),
            _ => {
                return Self::refuse(
                    "inputs",
                    format!(
                        "query, value and an optional key{} (1 to 3 inputs{})",
                        if self.attention_mask {
                            ", then the attention mask"
                        } else {
                            ""
                        },
                        if self.attention_mask {
                            " before the mask"
                        } else {
                            ""
                        }
                    ),
                    format!("{n} inputs"),
                )
            }
        };
        Ok(Roles { value, key, mask })
    }

    /// The projections for inputs of these roles: (which input, width, weight-name stem).
    pub(crate) fn projections(&self, r: &Roles) -> Vec<Projection> {
        let (hk, hv) = (self.num_heads * self.key_dim, self.num_heads * self.dv());
        if !r.cross() {
            return vec![Projection {
                input: 0,
                width: 2 * hk + hv,
                names: ("qkv_kernel", "qkv_bias"),
            }];
        }
        let query = Projection {
            input: 0,
            width: hk,
            names: ("query_kernel", "query_bias"),
        };
        if r.key == r.value {
            return vec![
                query,
                Projection {
                    input: r.value,
                    width: hk + hv,
                    names: ("kv_kernel", "kv_bias"),
                },
            ];
        }
        vec![
            query,
            Projection {
                input: r.key,
                width: hk,
                names: ("key_kernel", "key_bias"),
            },
            Projection {
                input: r.value,
                width: hv,
                names: ("value_kernel", "value_bias"),
            },
        ]
    }

    /// A sample shape (T, features), or a typed error naming `what`.
    fn sequence(what: &str, s: &[usize]) -> Result<(usize, usize)> {
        match s {
            [t, e] => Ok((*t, *e)),
            _ => Err(Error::ShapeMismatch {
                op: Self::CLASS,
                expected: format!("{what} samples of shape (T, features): a sequence of vectors"),
                found: crate::nn::spec::sample_shape(s),
            }),
        }
    }
}

impl LayerKind for MultiHeadAttention {
    const CLASS: &'static str = "MultiHeadAttention";
    const POSITIONAL: &'static [&'static str] = &["num_heads", "key_dim"];

    fn check(&self) -> Result<()> {
        positive(Self::CLASS, "num_heads", self.num_heads)?;
        positive(Self::CLASS, "key_dim", self.key_dim)?;
        if let Some(v) = self.value_dim {
            positive(Self::CLASS, "value_dim", v)?;
        }
        if !(0.0..1.0).contains(&self.dropout) {
            return Self::refuse(
                "dropout",
                "a rate in [0, 1)".into(),
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
        self.output_shape_n(&[input.to_vec()])
    }

    fn output_shape_n(&self, inputs: &[Shape]) -> Result<Shape> {
        let r = self.roles(inputs.len())?;
        let (tq, e) = Self::sequence("query", &inputs[0])?;
        let (tv, _) = Self::sequence("value", &inputs[r.value])?;
        let (tk, _) = Self::sequence("key", &inputs[r.key])?;
        if tk != tv {
            return Err(Error::ShapeMismatch {
                op: Self::CLASS,
                expected: format!("a key of the value's length ({tv} positions)"),
                found: format!("{tk} positions"),
            });
        }
        if let Some(m) = r.mask {
            if inputs[m] != [tq, tk] {
                return Err(Error::ShapeMismatch {
                    op: Self::CLASS,
                    expected: format!(
                        "an attention mask of shape (batch, {tq}, {tk}): (queries, keys)"
                    ),
                    found: crate::nn::spec::sample_shape(&inputs[m]),
                });
            }
        }
        Ok(vec![tq, self.output_shape.unwrap_or(e)])
    }

    fn weights(&self, input: &[usize]) -> Vec<WeightSpec> {
        self.weights_n(&[input.to_vec()])
    }

    fn weights_n(&self, inputs: &[Shape]) -> Vec<WeightSpec> {
        let Ok(r) = self.roles(inputs.len()) else {
            return Vec::new();
        };
        let feat = |i: usize| inputs[i].last().copied().unwrap_or(1);
        let (hk, hv) = (self.num_heads * self.key_dim, self.num_heads * self.dv());
        let out = self.output_shape.unwrap_or(feat(0));
        let init = Initializer::parse(&self.kernel_initializer).unwrap_or_default();
        let mut w = Vec::new();
        let mut push = |(kernel, bias): (&'static str, &'static str), fan_in, width, fan_out| {
            w.push(WeightSpec {
                name: kernel,
                shape: vec![fan_in, width],
                init: Init::Kernel(init, fan_in, fan_out),
                trainable: true,
            });
            if self.use_bias {
                w.push(WeightSpec {
                    name: bias,
                    shape: vec![width],
                    init: Init::Zeros,
                    trainable: true,
                });
            }
        };
        for p in self.projections(&r) {
            let fan_out = if p.names.0 == "value_kernel" { hv } else { hk };
            push(p.names, feat(p.input), p.width, fan_out);
        }
        push(("output_kernel", "output_bias"), hv, out, out);
        w
    }

    fn instantiate(&self, io: Io, w: Weights) -> Result<Box<dyn Layer>> {
        let roles = self.roles(io.inputs.len())?;
        let spec = Spec {
            heads: self.num_heads,
            dk: self.key_dim,
            dv: self.dv(),
            causal: self.use_causal_mask,
            bias: self.use_bias,
            rate: self.dropout,
            projs: self.projections(&roles),
            roles,
        };
        attention_pass::instantiate(spec, io, w)
    }
}
