//! The [`Conv2D`] layer: `y = act(conv(x, W) + b)` over NHWC images, `W` of shape (kh, kw,
//! in channels, filters) as Keras stores it. Its configuration (builder and vocabulary
//! entry) and its passes.
//!
//! Forward: the implicit-GEMM convolution with the bias and the activation in its epilogue
//! (through the activation head). Backward: through the activation's derivative unless a gate
//! or the loss applied it; the input gradient (the kernel transposed, then the backward data
//! GEMM with the previous layer's gate in its epilogue) while the kernel still holds this
//! step's value; then the weight gradient, in one GEMM with the optimizer in its epilogue, or
//! split into chunks whose partial products the reduction sums and applies (see
//! [`crate::kernels::conv2d`]).

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::kernels::conv2d::{self, Geometry, Op, ReduceParams, WeightsOut};
use crate::kernels::conv2d_direct;
use crate::kernels::conv2d_tune;
use crate::kernels::matmul::Update;
use crate::nn::layer::{Back, Cx, Dx, Io, Layer, Position, Saved, Slot, Weights};
use crate::nn::layers::head;
use crate::nn::layers::reshape::check_channels_last;
use crate::nn::spec::{
    check_bias_initializer, image, keras, parse_activation, positive, positive_pair, Init,
    Initializer, LayerKind, Pair, Shape, WeightSpec,
};
use crate::tensor::Tensor;
use crate::vocab::{Activation, Padding};

fn one() -> Pair {
    Pair(1, 1)
}

fn valid() -> String {
    "valid".into()
}

fn one_group() -> usize {
    1
}

/// A 2-D convolution: `filters` kernels of `kernel_size` over channels-last images, Keras's
/// arguments and defaults (strides 1, `"valid"` padding, dilation 1, no activation, a bias,
/// Glorot-uniform kernel). Build it with [`Conv2D::new`] and the setters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Conv2D {
    /// Output channels.
    pub filters: usize,
    /// The window (height, width).
    pub kernel_size: Pair,
    /// Strides (default 1).
    #[serde(default = "one")]
    pub strides: Pair,
    /// `"valid"` (default) or `"same"`.
    #[serde(default = "valid")]
    pub padding: String,
    /// Keras's `data_format` (only `null` or `"channels_last"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_format: Option<String>,
    /// Dilation (default 1; with strides above 1 it must be 1, as in Keras).
    #[serde(default = "one")]
    pub dilation_rate: Pair,
    /// Keras's `groups` (only 1).
    #[serde(default = "one_group")]
    pub groups: usize,
    /// Activation, by its Keras name (`null` or `"linear"` for none).
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
    /// The input shape, on the first layer (builder only: the spec carries it).
    #[serde(skip)]
    pub(crate) input: Option<Shape>,
}

impl Conv2D {
    /// `filters` filters of `kernel` (`3` or `(3, 3)`), with Keras's defaults for the rest.
    pub fn new(filters: usize, kernel: impl Into<Pair>) -> Conv2D {
        Conv2D {
            filters,
            kernel_size: kernel.into(),
            strides: one(),
            padding: valid(),
            data_format: None,
            dilation_rate: one(),
            groups: 1,
            activation: keras::linear(),
            use_bias: true,
            kernel_initializer: keras::glorot(),
            bias_initializer: keras::zeros(),
            input: None,
        }
    }

    /// Sets the strides.
    pub fn strides(mut self, s: impl Into<Pair>) -> Self {
        self.strides = s.into();
        self
    }

    /// Sets the padding: `"valid"` or `"same"` (checked when added to a model).
    pub fn padding(mut self, p: &str) -> Self {
        self.padding = p.into();
        self
    }

    /// Sets the dilation.
    pub fn dilation(mut self, d: impl Into<Pair>) -> Self {
        self.dilation_rate = d.into();
        self
    }

    /// Sets the activation (an [`Activation`] or its Keras name).
    pub fn activation(mut self, a: impl Into<crate::nn::layers::dense::ActivationArg>) -> Self {
        self.activation = a.into().name();
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

    /// Sets the per-sample input shape (first layer): (height, width, channels).
    pub fn input_shape(mut self, shape: &[usize]) -> Self {
        self.input = Some(shape.to_vec());
        self
    }

    fn padding_mode(&self) -> Result<Padding> {
        self.padding.parse().map_err(|_| Error::InvalidArgument {
            op: "Conv2D",
            name: "padding",
            expected: "\"valid\" or \"same\"".into(),
            found: format!("{:?}", self.padding),
        })
    }

    /// The convolution over a batch of one sample of `input`.
    fn geometry(&self, input: &[usize]) -> Result<Geometry> {
        let (h, w, c) = image("Conv2D", input)?;
        let g = Geometry::new(
            1,
            (h, w, c),
            self.filters,
            (self.kernel_size.0, self.kernel_size.1),
            (self.strides.0, self.strides.1),
            (self.dilation_rate.0, self.dilation_rate.1),
            self.padding_mode()?,
        );
        g.map_err(|e| match e {
            Error::ShapeMismatch {
                expected, found, ..
            } => Error::ShapeMismatch {
                op: "Conv2D",
                expected: format!("{expected} for a {} kernel", self.kernel_size),
                found,
            },
            e => e,
        })
    }
}

impl LayerKind for Conv2D {
    const CLASS: &'static str = "Conv2D";
    const POSITIONAL: &'static [&'static str] = &["filters", "kernel_size", "strides", "padding"];

    fn check(&self) -> Result<()> {
        positive("Conv2D", "filters", self.filters)?;
        positive_pair("Conv2D", "kernel_size", self.kernel_size)?;
        positive_pair("Conv2D", "strides", self.strides)?;
        positive_pair("Conv2D", "dilation_rate", self.dilation_rate)?;
        self.padding_mode()?;
        check_channels_last("Conv2D", self.data_format.as_deref())?;
        if self.groups != 1 {
            return Err(Error::InvalidArgument {
                op: "Conv2D",
                name: "groups",
                expected: "1 (grouped convolutions are not supported yet)".into(),
                found: self.groups.to_string(),
            });
        }
        if self.strides != one() && self.dilation_rate != one() {
            return Err(Error::InvalidArgument {
                op: "Conv2D",
                name: "strides",
                expected: "strides of 1 with a dilation above 1 (as Keras)".into(),
                found: format!(
                    "strides {} with dilation {}",
                    self.strides, self.dilation_rate
                ),
            });
        }
        parse_activation("Conv2D", &self.activation)?;
        Initializer::parse(&self.kernel_initializer)?;
        check_bias_initializer("Conv2D", &self.bias_initializer)
    }

    fn output_shape(&self, input: &[usize]) -> Result<Shape> {
        let g = self.geometry(input)?;
        Ok(vec![g.oh, g.ow, g.oc])
    }

    fn weights(&self, input: &[usize]) -> Vec<WeightSpec> {
        let c = input.last().copied().unwrap_or(1);
        let Pair(kh, kw) = self.kernel_size;
        let init = Initializer::parse(&self.kernel_initializer).unwrap_or_default();
        // Keras's fans for a convolution kernel: the receptive field times the channels.
        let mut w = vec![WeightSpec {
            name: "kernel",
            shape: vec![kh, kw, c, self.filters],
            init: Init::Kernel(init, kh * kw * c, kh * kw * self.filters),
            trainable: true,
        }];
        if self.use_bias {
            w.push(WeightSpec {
                name: "bias",
                shape: vec![self.filters],
                init: Init::Zeros,
                trainable: true,
            });
        }
        w
    }

    fn activation(&self) -> Result<Activation> {
        parse_activation("Conv2D", &self.activation)
    }

    fn instantiate(&self, io: Io, w: Weights) -> Result<Box<dyn Layer>> {
        Ok(Box::new(Conv2DLayer {
            g: self.geometry(&io.input)?,
            act: LayerKind::activation(self)?,
            io,
            w,
        }))
    }
}

struct Conv2DLayer {
    io: Io,
    w: Weights,
    /// The convolution for a batch of one.
    g: Geometry,
    act: Activation,
}

impl Conv2DLayer {
    fn kernel(&self) -> &Tensor {
        &self.w.params[0]
    }

    fn bias(&self) -> Option<&Tensor> {
        self.w.params.get(1)
    }

    fn pick(
        &self,
        cx: &mut Cx<'_>,
        g: &Geometry,
        op: Op,
    ) -> Result<crate::kernels::matmul_variant::Variant> {
        let in_capture = cx.rec().is_capture();
        conv2d_tune::pick(&cx.device(), g, op, in_capture)
    }
}

impl Layer for Conv2DLayer {
    fn io(&self) -> &Io {
        &self.io
    }

    fn weights(&self) -> &Weights {
        &self.w
    }

    fn activation(&self) -> Activation {
        self.act
    }

    fn prepare(&self, dev: &crate::runtime::Device) -> Result<()> {
        // The direct kernel is timed only where this layer could run on it.
        conv2d_tune::prepare_for(dev, &self.g)
    }

    fn owns_dx(&self) -> bool {
        true
    }

    fn forward(&self, cx: &mut Cx<'_>, pos: Position, x: &Tensor) -> Result<Saved> {
        let g = self.g.with_batch(cx.batch).with_half(cx.half());
        let v = self.pick(cx, &g, Op::Forward)?;
        let in_capture = cx.rec().is_capture();
        let direct = conv2d_tune::direct(&cx.device(), &g, in_capture)?;
        let head = head::forward(cx, pos, self.act, &self.io.output, |cx, y, act| {
            let bias = self.bias().map(|b| b.buffer());
            if direct {
                // A tiny K (a first layer): the direct kernel, where it was the faster.
                return conv2d_direct::forward(
                    cx.rec(),
                    &g,
                    x.buffer(),
                    self.kernel().buffer(),
                    bias,
                    y.buffer(),
                    act,
                );
            }
            conv2d::forward(
                cx.rec(),
                &g,
                x.buffer(),
                self.kernel().buffer(),
                bias,
                y.buffer(),
                act,
                v,
            )
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
        let g = self.g.with_batch(cx.batch).with_half(cx.half());
        let dz = match (&saved.head, gated) {
            (Some(h), false) => head::backward(cx, h, dy)?,
            _ => dy.clone(),
        };
        // The input gradient first, while the kernel still holds this step's value.
        // Where the input fans out and another reader's gradient is there already, added to
        // it in the same GEMM (see `Back::dx_into`).
        let into = dx_into.filter(|_| dx_gate.is_none());
        let dx = if need_dx {
            let wt = cx.scratch(self.kernel().shape())?;
            conv2d::transpose(cx.rec(), &g, self.kernel().buffer(), wt.buffer())?;
            let v = self.pick(cx, &g, Op::BackwardData)?;
            let dx = match into {
                Some(t) => {
                    conv2d::backward_data_adding(
                        cx.rec(),
                        &g,
                        dz.buffer(),
                        wt.buffer(),
                        t.buffer(),
                        v,
                    )?;
                    t.clone()
                }
                None => {
                    let dx = cx.tensor(&self.io.input)?;
                    let gate = dx_gate.map(|(a, y)| (*a, y.buffer()));
                    conv2d::backward_data(
                        cx.rec(),
                        &g,
                        dz.buffer(),
                        wt.buffer(),
                        gate,
                        dx.buffer(),
                        v,
                    )?;
                    dx
                }
            };
            Some(Dx {
                grad: dx,
                gated: dx_gate.is_some(),
            })
        } else {
            None
        };
        let v = self.pick(cx, &g, Op::BackwardWeights)?;
        let plan = conv2d::plan_weights(&g, v, cx.device().info().limits.max_loop_iterations);
        let (m, n, k) = g.gemm(Op::BackwardWeights);
        let (x, dzb) = (saved.input.buffer(), dz.buffer());
        let fused = grad.fused(pos, 0);
        let bias_fused = self.bias().and_then(|_| grad.fused(pos, 1));
        // Where the gradients go: written whole, or applied by the optimizer in place.
        let targets = match fused {
            None => Some((
                grad.target(cx, 0, self.kernel().shape())?,
                match self.bias() {
                    Some(b) => Some(grad.target(cx, 1, b.shape())?),
                    None => None,
                },
            )),
            Some(_) => None,
        };
        let bias_state: Option<Vec<&wgpu::Buffer>> = bias_fused.as_ref().map(|u| u.state.clone());
        let out = || -> WeightsOut<'_> {
            match (&fused, &targets) {
                (Some(u), _) => WeightsOut::Update {
                    w: self.kernel().buffer(),
                    update: Update {
                        rule: u.rule,
                        step: 1,
                        state: &u.state,
                        bias: self
                            .bias()
                            .zip(bias_state.as_ref())
                            .map(|(b, s)| (b.buffer(), &s[..])),
                    },
                },
                (None, Some((dw, db))) => WeightsOut::Grad {
                    dw: dw.buffer(),
                    db: db.as_ref().map(|t| t.buffer()),
                },
                (None, None) => unreachable!("targets exist whenever nothing is fused"),
            }
        };
        if plan.splits <= 1 {
            match &fused {
                Some(_) => {
                    let slot = Slot::Update {
                        param: pos.first_param,
                        head: [m, n, k, 0],
                        count: m * n,
                    };
                    let o = out();
                    cx.per_step(&[slot], |rec| conv2d::weights_direct(rec, &g, x, dzb, o, v))?;
                }
                None => conv2d::weights_direct(cx.rec(), &g, x, dzb, out(), v)?,
            }
        } else {
            let part = cx.scratch(&[plan.splits as usize * (m * n) as usize])?;
            let part_b = match self.bias() {
                Some(_) => Some(cx.scratch(&[plan.splits as usize * n as usize])?),
                None => None,
            };
            let pb = part_b.as_ref().map(|t| t.buffer());
            conv2d::weights_partial(cx.rec(), &g, x, dzb, part.buffer(), pb, plan, v)?;
            match &fused {
                Some(_) => {
                    let head = ReduceParams {
                        len: m * n,
                        nb: pb.map_or(0, |_| n),
                        splits: plan.splits,
                        _pad: 0,
                        q: Default::default(),
                    }
                    .head();
                    let slot = Slot::Update {
                        param: pos.first_param,
                        head,
                        count: m * n,
                    };
                    let o = out();
                    cx.per_step(&[slot], |rec| {
                        conv2d::reduce(rec, &g, part.buffer(), pb, plan, o)
                    })?;
                }
                None => conv2d::reduce(cx.rec(), &g, part.buffer(), pb, plan, out())?,
            }
        }
        Ok(dx)
    }
}
