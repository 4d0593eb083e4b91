//! The [`Dense`] layer: `y = act(x·W + b)`, `W` of shape (inputs, units), applied to the
//! last axis of its input (a (28, 28) sample gives (28, units), as Keras). Its configuration
//! (the builder and the vocabulary entry), and its passes as the engine records them.
//!
//! Forward: one matmul with the bias and the activation fused (through the activation head,
//! [`crate::nn::layers::head`]). Backward, from the gradient at the output: through the activation's
//! derivative unless a gate or the loss applied it, then the input gradient `dz·Wᵀ` (before
//! the weight changes) with the previous layer's gate in its epilogue, then the weight
//! gradient `xᵀ·dz` with the bias gradient as its column sums, written out or applied by the
//! optimizer in the same kernel.
//!
//! Tied (`tied_to`): the kernel is an earlier layer's matrix `M` (units, inputs), read
//! transposed by each product: `x·Mᵀ` forward, `dz·M` back, and `dzᵀ·x` for its gradient in
//! the owner's layout, which the engine sums with the owner's own.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::kernels::matmul::{Epilogue, MatmulArgs, Update};
use crate::kernels::matmul_tune;
use crate::nn::layer::{Back, Cx, Dx, Io, Layer, Position, Saved, Slot, Weights};
use crate::nn::layers::head;
use crate::nn::spec::{
    check_bias_initializer, keras, parse_activation, positive, Init, Initializer, LayerKind, Shape,
    WeightSpec,
};
use crate::tensor::Tensor;
use crate::vocab::{Activation, Layout};

/// An activation given to a builder: an [`Activation`] or its Keras name. A name that does
/// not parse is reported when the layer is added to a model.
#[derive(Clone, Debug, PartialEq)]
pub enum ActivationArg {
    /// Already an activation.
    Activation(Activation),
    /// A Keras name (`"relu"`), parsed by [`crate::nn::Sequential::add`].
    Name(String),
}

impl From<Activation> for ActivationArg {
    fn from(a: Activation) -> Self {
        ActivationArg::Activation(a)
    }
}

impl From<&str> for ActivationArg {
    fn from(s: &str) -> Self {
        ActivationArg::Name(s.to_string())
    }
}

impl From<String> for ActivationArg {
    fn from(s: String) -> Self {
        ActivationArg::Name(s)
    }
}

impl ActivationArg {
    /// The Keras name (an [`Activation`]'s display form parses back to it).
    pub(crate) fn name(self) -> String {
        match self {
            ActivationArg::Activation(a) => a.to_string(),
            ActivationArg::Name(n) => n,
        }
    }
}

/// A fully connected layer: `y = act(x·W + b)`, `W` of shape (inputs, units). Keras's
/// arguments and defaults; build it with [`Dense::new`] and the setters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Dense {
    /// Output features.
    pub units: usize,
    /// Activation, by its Keras name (`"relu"`; `null` or `"linear"` for none).
    #[serde(default = "keras::linear", deserialize_with = "keras::activation")]
    pub activation: String,
    /// Whether the layer has a bias (default true).
    #[serde(default = "keras::yes")]
    pub use_bias: bool,
    /// Kernel initializer (default `"glorot_uniform"`).
    #[serde(default = "keras::glorot")]
    pub kernel_initializer: String,
    /// Bias initializer (`"zeros"` only).
    #[serde(default = "keras::zeros")]
    pub bias_initializer: String,
    /// The name of an earlier layer whose matrix this layer uses transposed instead of a
    /// kernel of its own (a suanli extension; Keras has no such argument): `y = act(x·Mᵀ)`
    /// with `M` that layer's first weight, of shape (units, inputs). GPTs tie their output
    /// projection to the token embedding this way; a tied autoencoder's decoder to its
    /// encoder. No bias (the projection is the matrix's alone).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tied_to: Option<String>,
    /// The input shape, on the first layer (builder only: the spec carries it).
    #[serde(skip)]
    pub(crate) input: Option<Shape>,
}

impl Dense {
    /// A layer with `units` outputs and an activation, given as an [`Activation`] or as Keras
    /// names it (`"relu"`, `"softmax"`, …).
    pub fn new(units: usize, activation: impl Into<ActivationArg>) -> Dense {
        Dense {
            units,
            activation: activation.into().name(),
            use_bias: true,
            kernel_initializer: keras::glorot(),
            bias_initializer: keras::zeros(),
            tied_to: None,
            input: None,
        }
    }

    /// Uses the matrix of the earlier layer named `owner` transposed instead of a kernel of
    /// its own (see [`Dense::tied_to`](Dense#structfield.tied_to)); turns the bias off. In
    /// the functional API, [`crate::nn::Shared::transposed`] names the owner for you.
    pub fn tied_to(mut self, owner: &str) -> Self {
        self.tied_to = Some(owner.to_string());
        self.use_bias = false;
        self
    }

    /// Drops each output with probability `rate` while training: the layer followed by a
    /// [`crate::nn::Dropout`] layer, as Keras's `Dense(...)` then `Dropout(rate)`.
    pub fn dropout(self, rate: f32) -> DenseDropout {
        DenseDropout { dense: self, rate }
    }

    /// Sets the input size (first layer): samples of shape `(d,)`.
    pub fn input_dim(self, d: usize) -> Self {
        self.input_shape(&[d])
    }

    /// Sets the per-sample input shape (first layer).
    pub fn input_shape(mut self, shape: &[usize]) -> Self {
        self.input = Some(shape.to_vec());
        self
    }

    /// Enables or disables the bias.
    pub fn use_bias(mut self, b: bool) -> Self {
        self.use_bias = b;
        self
    }

    /// Sets the kernel initializer.
    pub fn initializer(mut self, i: Initializer) -> Self {
        self.kernel_initializer = i.name().into();
        self
    }
}

/// A [`Dense`] layer with a [`crate::nn::Dropout`] layer after it ([`Dense::dropout`]).
#[derive(Clone, Debug)]
pub struct DenseDropout {
    dense: Dense,
    rate: f32,
}

impl DenseDropout {
    /// The layer and the rate of the dropout after it.
    pub(crate) fn parts(self) -> (Dense, f32) {
        (self.dense, self.rate)
    }
}

impl LayerKind for Dense {
    const CLASS: &'static str = "Dense";
    const POSITIONAL: &'static [&'static str] = &["units", "activation"];

    fn check(&self) -> Result<()> {
        positive("Dense", "units", self.units)?;
        parse_activation("Dense", &self.activation)?;
        Initializer::parse(&self.kernel_initializer)?;
        check_bias_initializer("Dense", &self.bias_initializer)?;
        match &self.tied_to {
            Some(owner) if self.use_bias => Err(Error::InvalidArgument {
                op: "Dense",
                name: "use_bias",
                expected: format!(
                    "use_bias=false with tied_to={owner:?} (a tied projection has no bias)"
                ),
                found: "use_bias=true".into(),
            }),
            Some(owner) if owner.is_empty() => Err(Error::InvalidArgument {
                op: "Dense",
                name: "tied_to",
                expected: "the name of an earlier layer".into(),
                found: "an empty name".into(),
            }),
            _ => Ok(()),
        }
    }

    fn output_shape(&self, input: &[usize]) -> Result<Shape> {
        let mut out = input.to_vec();
        match out.last_mut() {
            Some(last) => *last = self.units,
            None => {
                return Err(Error::ShapeMismatch {
                    op: "Dense",
                    expected: "an input with at least one dimension".into(),
                    found: "()".into(),
                })
            }
        }
        Ok(out)
    }

    fn weights(&self, input: &[usize]) -> Vec<WeightSpec> {
        let inputs = *input.last().unwrap_or(&1);
        if self.tied_to.is_some() {
            // The owner's matrix, in the owner's layout (never initialised here).
            return vec![WeightSpec {
                name: "kernel",
                shape: vec![self.units, inputs],
                init: Init::Zeros,
                trainable: true,
            }];
        }
        let init = Initializer::parse(&self.kernel_initializer).unwrap_or_default();
        let mut w = vec![WeightSpec {
            name: "kernel",
            shape: vec![inputs, self.units],
            init: Init::Kernel(init, inputs, self.units),
            trainable: true,
        }];
        if self.use_bias {
            w.push(WeightSpec {
                name: "bias",
                shape: vec![self.units],
                init: Init::Zeros,
                trainable: true,
            });
        }
        w
    }

    fn activation(&self) -> Result<Activation> {
        parse_activation("Dense", &self.activation)
    }

    fn instantiate(&self, io: Io, w: Weights) -> Result<Box<dyn Layer>> {
        Ok(Box::new(DenseLayer {
            act: self.activation()?,
            inputs: *io.input.last().unwrap_or(&1),
            units: self.units,
            tied: self.tied_to.is_some(),
            io,
            w,
        }))
    }
}

/// A dense layer of a model.
struct DenseLayer {
    io: Io,
    w: Weights,
    act: Activation,
    inputs: usize,
    units: usize,
    /// The kernel is another layer's matrix, stored (units, inputs): every product reads it
    /// transposed from the untied layer's (see the passes).
    tied: bool,
}

impl DenseLayer {
    fn kernel(&self) -> &Tensor {
        &self.w.params[0]
    }

    fn bias(&self) -> Option<&Tensor> {
        self.w.params.get(1)
    }

    /// Rows of the product for a batch: every position of the leading axes.
    fn rows(&self, batch: usize) -> u32 {
        let lead: usize = self.io.input[..self.io.input.len() - 1].iter().product();
        (batch * lead) as u32
    }
}

impl Layer for DenseLayer {
    fn io(&self) -> &Io {
        &self.io
    }

    fn weights(&self) -> &Weights {
        &self.w
    }

    fn activation(&self) -> Activation {
        self.act
    }

    fn owns_dx(&self) -> bool {
        true
    }

    fn forward(&self, cx: &mut Cx<'_>, pos: Position, x: &Tensor) -> Result<Saved> {
        let m = self.rows(cx.batch);
        let head = head::forward(cx, pos, self.act, &self.io.output, |cx, y, act| {
            let args = MatmulArgs {
                a: x.buffer(),
                b: self.kernel().buffer(),
                epilogue: self
                    .bias()
                    .map_or(Epilogue::None, |b| Epilogue::Bias(b.buffer())),
                c: y.buffer(),
                m,
                n: self.units as u32,
                k: self.inputs as u32,
                // A tied matrix is stored (units, inputs): x·Mᵀ.
                layout: if self.tied { Layout::NT } else { Layout::NN },
                act,
                accumulate: false,
                half: cx.half(),
            };
            matmul_tune::record(cx.rec(), &args)
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
            pos,
            saved,
            dy,
            gated,
            dx_gate,
            need_dx,
            grad,
            dx_into,
        } = b;
        let (rows, units, inputs) = (self.rows(cx.batch), self.units as u32, self.inputs as u32);
        let dz = match (&saved.head, gated) {
            (Some(h), false) => head::backward(cx, h, dy)?,
            _ => dy.clone(),
        };
        // The input gradient first, while the weight still holds this step's value (a fused
        // update overwrites it): dx = dz·Wᵀ, W stored (inputs, units) = (N, K). Where the
        // input fans out and another reader's gradient is there already, added to it in the
        // same GEMM (an input that fans out is never gated).
        let into = dx_into.filter(|_| dx_gate.is_none());
        let dx = if need_dx {
            let dx = match into {
                Some(t) => t.clone(),
                None => cx.tensor(&self.io.input)?,
            };
            let args = MatmulArgs {
                a: dz.buffer(),
                b: self.kernel().buffer(),
                epilogue: dx_gate
                    .map_or(Epilogue::None, |(act, y)| Epilogue::Gate(y.buffer(), *act)),
                c: dx.buffer(),
                m: rows,
                n: inputs,
                k: units,
                layout: if self.tied { Layout::NN } else { Layout::NT },
                act: Activation::Linear,
                accumulate: into.is_some(),
                half: cx.half(),
            };
            matmul_tune::record(cx.rec(), &args)?;
            Some(Dx {
                grad: dx,
                gated: dx_gate.is_some(),
            })
        } else {
            None
        };
        if self.tied {
            // The owner's layout: dM = dzᵀ·input, (units, inputs), written whole (a tied
            // matrix has two holders, so the model trains unfused and sums their gradients;
            // `apply` steps it where a caller updates in place all the same).
            let gw = grad.target(cx, 0, self.kernel().shape())?;
            let args = MatmulArgs {
                a: dz.buffer(),
                b: saved.input.buffer(),
                epilogue: Epilogue::None,
                c: gw.buffer(),
                m: units,
                n: inputs,
                k: rows,
                layout: Layout::TN,
                act: Activation::Linear,
                accumulate: false,
                half: cx.half(),
            };
            matmul_tune::record(cx.rec(), &args)?;
            grad.apply(cx, pos, 0, self.kernel(), &gw)?;
            return Ok(dx);
        }
        // dW = inputᵀ·dz (input stored (rows, inputs) = (K, M)), and db = Σ_rows dz from the
        // same kernel's loads of dz.
        let mut args = MatmulArgs {
            a: saved.input.buffer(),
            b: dz.buffer(),
            epilogue: Epilogue::None,
            c: self.kernel().buffer(),
            m: inputs,
            n: units,
            k: rows,
            layout: Layout::TN,
            act: Activation::Linear,
            accumulate: false,
            half: cx.half(),
        };
        match grad.fused(pos, 0) {
            None => {
                let gw = grad.target(cx, 0, self.kernel().shape())?;
                let gb = match self.bias() {
                    Some(b) => Some(grad.target(cx, 1, b.shape())?),
                    None => None,
                };
                args.c = gw.buffer();
                if let Some(gb) = &gb {
                    args.epilogue = Epilogue::ColSum(gb.buffer());
                }
                matmul_tune::record(cx.rec(), &args)?;
            }
            Some(w_update) => {
                let b_update = self.bias().and_then(|_| grad.fused(pos, 1));
                args.epilogue = Epilogue::Update(Update {
                    rule: w_update.rule,
                    step: 1,
                    state: &w_update.state,
                    bias: self
                        .bias()
                        .zip(b_update.as_ref())
                        .map(|(b, u)| (b.buffer(), &u.state[..])),
                });
                let slot = Slot::Update {
                    param: pos.first_param,
                    head: [inputs, units, rows, 0],
                    count: inputs * units,
                };
                cx.per_step(&[slot], |rec| matmul_tune::record(rec, &args))?;
            }
        }
        Ok(dx)
    }
}
