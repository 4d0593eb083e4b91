//! The [`Dense`] layer: `y = act(x·W + b)`, `W` of shape (inputs, units), with optional
//! dropout on its output while training. Its configuration and builder (public), and its
//! forward and backward passes as the training engine records them.
//!
//! Forward: one matmul with the bias and the activation fused, where the activation's
//! derivative follows from its output; otherwise the pre-activation is kept and the
//! activation runs separately. Backward, from the gradient at the output: through the dropout
//! mask and the activation's derivative (unless a gate or the loss already applied it), then
//! the input gradient `dz·Wᵀ` (before the weight changes), then the weight gradient `xᵀ·dz`
//! with the bias gradient as its column sums, written out or applied by the optimizer in the
//! same kernel.

use crate::error::{Error, Result};
use crate::kernels::matmul::{Epilogue, MatmulArgs, Update};
use crate::kernels::{elementwise, matmul_tune, softmax_xent};
use crate::memory::MemoryKind;
use crate::nn::layer::{Cx, Gate, Layer, Mode, Position, Saved, Slot, WeightGrad};
use crate::random::Rng;
use crate::runtime::Device;
use crate::tensor::Tensor;
use crate::vocab::{Activation, Layout};

/// How a layer's kernel is initialised (biases start at zero).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Initializer {
    /// Glorot/Xavier uniform, `U(±sqrt(6/(in+out)))` (Keras's default).
    #[default]
    GlorotUniform,
    /// He normal, `N(0, sqrt(2/in))`.
    HeNormal,
    /// He uniform, `U(±sqrt(6/in))`.
    HeUniform,
}

impl Initializer {
    /// `fan_in × fan_out` values, seeded.
    pub fn sample(self, fan_in: usize, fan_out: usize, rng: &mut Rng) -> Vec<f32> {
        let n = fan_in * fan_out;
        match self {
            Initializer::GlorotUniform => {
                let l = (6.0 / (fan_in + fan_out) as f64).sqrt();
                (0..n).map(|_| rng.uniform(-l, l) as f32).collect()
            }
            Initializer::HeUniform => {
                let l = (6.0 / fan_in as f64).sqrt();
                (0..n).map(|_| rng.uniform(-l, l) as f32).collect()
            }
            Initializer::HeNormal => {
                let s = (2.0 / fan_in as f64).sqrt();
                (0..n).map(|_| (s * rng.normal()) as f32).collect()
            }
        }
    }

    /// Parses Keras's names (`"glorot_uniform"`, `"he_normal"`, `"he_uniform"`).
    pub fn parse(name: &str) -> Result<Initializer> {
        match name.trim().to_ascii_lowercase().as_str() {
            "glorot_uniform" | "xavier_uniform" => Ok(Initializer::GlorotUniform),
            "he_normal" => Ok(Initializer::HeNormal),
            "he_uniform" => Ok(Initializer::HeUniform),
            other => Err(Error::InvalidArgument {
                op: "Dense",
                name: "kernel_initializer",
                expected: "glorot_uniform, he_normal or he_uniform".into(),
                found: format!("{other:?}"),
            }),
        }
    }
}

/// An activation given to [`Dense::new`]: an [`Activation`] or its Keras name. A name that
/// does not parse is reported when the layer is added to a model.
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

/// A fully connected layer's configuration: `y = act(x·W + b)`, `W` of shape (inputs, units).
#[derive(Clone, Debug, PartialEq)]
pub struct Dense {
    /// Output features.
    pub units: usize,
    /// Activation.
    pub activation: Activation,
    /// Whether the layer has a bias (default true).
    pub use_bias: bool,
    /// Kernel initializer (default Glorot uniform).
    pub initializer: Initializer,
    /// Input features; required on the first layer, inferred on the others.
    pub input_dim: Option<usize>,
    /// Dropout rate applied to the layer's output while training (0: none), like a Keras
    /// `Dropout` layer after it. Inverted dropout: inference uses the outputs as they are.
    pub dropout: f32,
}

impl Dense {
    /// A layer with `units` outputs and an activation, given as an [`Activation`] or as Keras
    /// names it (`"relu"`, `"softmax"`, …).
    #[allow(clippy::new_ret_no_self)] // a builder, as `Dense::new(128, "relu").input_dim(784)` reads like Keras
    pub fn new(units: usize, activation: impl Into<ActivationArg>) -> DenseBuilder {
        DenseBuilder {
            units,
            activation: activation.into(),
            use_bias: true,
            initializer: Initializer::GlorotUniform,
            input_dim: None,
            dropout: 0.0,
        }
    }
}

/// Builder returned by [`Dense::new`]; [`crate::nn::Sequential::add`] takes it (or a
/// [`Dense`]).
#[derive(Clone, Debug)]
pub struct DenseBuilder {
    units: usize,
    activation: ActivationArg,
    use_bias: bool,
    initializer: Initializer,
    input_dim: Option<usize>,
    dropout: f32,
}

impl DenseBuilder {
    /// Drops each output with probability `rate` while training (Keras's `Dense(...)`
    /// followed by `Dropout(rate)`); `0 ≤ rate < 1`, not on the output layer.
    pub fn dropout(mut self, rate: f32) -> Self {
        self.dropout = rate;
        self
    }

    /// Sets the input size (first layer).
    pub fn input_dim(mut self, d: usize) -> Self {
        self.input_dim = Some(d);
        self
    }

    /// Enables or disables the bias.
    pub fn use_bias(mut self, b: bool) -> Self {
        self.use_bias = b;
        self
    }

    /// Sets the kernel initializer.
    pub fn initializer(mut self, i: Initializer) -> Self {
        self.initializer = i;
        self
    }

    /// Validates and builds the layer description.
    pub fn build(self) -> Result<Dense> {
        let bad = |name: &'static str, expected: &str, found: String| Error::InvalidArgument {
            op: "Dense",
            name,
            expected: expected.into(),
            found,
        };
        if self.units == 0 {
            return Err(bad("units", "at least 1", "0".into()));
        }
        if self.input_dim == Some(0) {
            return Err(bad("input_dim", "at least 1", "0".into()));
        }
        if !(0.0..1.0).contains(&self.dropout) {
            return Err(bad("dropout", "a rate in [0, 1)", self.dropout.to_string()));
        }
        let activation = match self.activation {
            ActivationArg::Activation(a) => a,
            ActivationArg::Name(n) => n.parse()?,
        };
        if let Activation::LeakyRelu(a) = activation {
            if !a.is_finite() {
                return Err(bad(
                    "activation",
                    "a finite leaky-relu slope",
                    a.to_string(),
                ));
            }
        }
        Ok(Dense {
            units: self.units,
            activation,
            use_bias: self.use_bias,
            initializer: self.initializer,
            input_dim: self.input_dim,
            dropout: self.dropout,
        })
    }
}

impl From<Dense> for DenseBuilder {
    fn from(d: Dense) -> Self {
        DenseBuilder {
            units: d.units,
            activation: ActivationArg::Activation(d.activation),
            use_bias: d.use_bias,
            initializer: d.initializer,
            input_dim: d.input_dim,
            dropout: d.dropout,
        }
    }
}

/// A dense layer of a model: its configuration and weights.
pub(crate) struct DenseLayer {
    pub(crate) cfg: Dense,
    pub(crate) in_dim: usize,
    pub(crate) w: Tensor,
    pub(crate) b: Option<Tensor>,
}

impl DenseLayer {
    /// A layer with freshly initialised weights (`rng` draws the kernel; the bias is zero).
    pub(crate) fn new(
        device: &Device,
        cfg: Dense,
        in_dim: usize,
        rng: &mut Rng,
    ) -> Result<DenseLayer> {
        let w = cfg.initializer.sample(in_dim, cfg.units, rng);
        let w = Tensor::from_slice(device, &w, &[in_dim, cfg.units])?;
        let b = cfg
            .use_bias
            .then(|| Tensor::zeros(device, &[cfg.units]))
            .transpose()?;
        let l = DenseLayer { cfg, in_dim, w, b };
        l.tag();
        Ok(l)
    }

    /// Tags the weights as parameters (memory breakdown).
    fn tag(&self) {
        for p in self.params() {
            p.set_memory_kind(MemoryKind::Parameters);
        }
    }

    fn bias(&self) -> Epilogue<'_> {
        self.b
            .as_ref()
            .map_or(Epilogue::None, |b| Epilogue::Bias(b.buffer()))
    }

    /// `y = x·W (+ b)` with `act` fused (act must be pointwise).
    fn product(&self, cx: &mut Cx<'_>, x: &Tensor, y: &Tensor, act: Activation) -> Result<()> {
        let args = MatmulArgs {
            a: x.buffer(),
            b: self.w.buffer(),
            epilogue: self.bias(),
            c: y.buffer(),
            m: cx.batch as u32,
            n: self.cfg.units as u32,
            k: self.in_dim as u32,
            layout: Layout::NN,
            act,
            accumulate: false,
        };
        matmul_tune::record(cx.rec(), &args)
    }

    /// The gradient at the pre-activation from the gradient at the output: through the
    /// dropout mask (the same seed, so the same mask), then the activation's derivative,
    /// computed from the output where it can be and from the kept pre-activation otherwise.
    /// The one place this decision is made.
    fn through_head(
        &self,
        cx: &mut Cx<'_>,
        pos: Position,
        saved: &Saved,
        dy: &Tensor,
    ) -> Result<Tensor> {
        let units = self.cfg.units;
        let n = cx.batch * units;
        let mut g = dy.clone();
        if let (Some(k), Mode::Train) = (pos.dropout, cx.mode) {
            let d = cx.tensor(units)?;
            let rate = self.cfg.dropout;
            cx.per_step(&[Slot::Dropout(k)], |rec| {
                elementwise::dropout(rec, g.buffer(), d.buffer(), n, rate, 0)
            })?;
            g = d;
        }
        if saved.act == Activation::Linear {
            return Ok(g);
        }
        let dz = cx.tensor(units)?;
        match &saved.pre {
            None => elementwise::activation_output_backward(
                cx.rec(),
                saved.act,
                saved.activated.buffer(),
                g.buffer(),
                dz.buffer(),
                n,
            )?,
            Some(z) => elementwise::activation_backward(
                cx.rec(),
                saved.act,
                z.buffer(),
                g.buffer(),
                dz.buffer(),
                n,
            )?,
        }
        Ok(dz)
    }
}

impl Layer for DenseLayer {
    fn type_name(&self) -> &'static str {
        "Dense"
    }

    fn in_dim(&self) -> usize {
        self.in_dim
    }

    fn out_dim(&self) -> usize {
        self.cfg.units
    }

    fn activation(&self) -> Activation {
        self.cfg.activation
    }

    fn dropout(&self) -> f32 {
        self.cfg.dropout
    }

    fn params(&self) -> Vec<Tensor> {
        std::iter::once(self.w.clone())
            .chain(self.b.iter().cloned())
            .collect()
    }

    fn param_names(&self) -> Vec<&'static str> {
        if self.b.is_some() {
            vec!["kernel", "bias"]
        } else {
            vec!["kernel"]
        }
    }

    fn set_params(&mut self, params: Vec<Tensor>) -> Result<()> {
        let want: Vec<Vec<usize>> = self.params().iter().map(|p| p.shape().to_vec()).collect();
        let got: Vec<Vec<usize>> = params.iter().map(|p| p.shape().to_vec()).collect();
        if want != got {
            return Err(Error::ShapeMismatch {
                op: "Dense::set_params",
                expected: format!("{want:?}"),
                found: format!("{got:?}"),
            });
        }
        let mut it = params.into_iter();
        if let Some(w) = it.next() {
            self.w = w;
        }
        if self.b.is_some() {
            self.b = it.next();
        }
        self.tag();
        Ok(())
    }

    fn architecture(&self) -> serde_json::Value {
        serde_json::json!({
            "units": self.cfg.units,
            "activation": self.cfg.activation.to_string(),
            "use_bias": self.cfg.use_bias,
            "input_dim": self.in_dim,
            "dropout": self.cfg.dropout,
        })
    }

    fn summary_rows(&self, i: usize) -> Vec<(String, String, usize)> {
        let units = self.cfg.units;
        let params = self.in_dim * units + if self.b.is_some() { units } else { 0 };
        let mut rows = vec![(
            format!("dense_{i} (Dense, {})", self.cfg.activation),
            format!("(None, {units})"),
            params,
        )];
        if self.cfg.dropout > 0.0 {
            rows.push((
                format!("dropout_{i} (Dropout, {})", self.cfg.dropout),
                format!("(None, {units})"),
                0,
            ));
        }
        rows
    }

    fn to_device(&self, device: &Device) -> Result<Box<dyn Layer>> {
        let copy = |t: &Tensor| Tensor::from_slice(device, &t.to_vec()?, t.shape());
        let l = DenseLayer {
            cfg: self.cfg.clone(),
            in_dim: self.in_dim,
            w: copy(&self.w)?,
            b: self.b.as_ref().map(copy).transpose()?,
        };
        l.tag();
        Ok(Box::new(l))
    }

    fn forward(&self, cx: &mut Cx<'_>, pos: Position, x: &Tensor) -> Result<Saved> {
        let units = self.cfg.units;
        // A loss that takes logits folds the last layer's activation in.
        let act = if pos.folded && cx.mode != Mode::Predict {
            Activation::Linear
        } else {
            self.cfg.activation
        };
        let (activated, pre) = if act == Activation::Softmax {
            let z = cx.tensor(units)?;
            self.product(cx, x, &z, Activation::Linear)?;
            let y = cx.tensor(units)?;
            let b = cx.batch;
            softmax_xent::softmax(cx.rec(), z.buffer(), y.buffer(), b, units, false)?;
            (y, None)
        } else if act.derivative_from_output() {
            let y = cx.tensor(units)?;
            self.product(cx, x, &y, act)?;
            (y, None)
        } else {
            let z = cx.tensor(units)?;
            self.product(cx, x, &z, Activation::Linear)?;
            let y = cx.tensor(units)?;
            let n = cx.batch * units;
            elementwise::activation(cx.rec(), act, z.buffer(), y.buffer(), n)?;
            (y, Some(z))
        };
        let output = match (pos.dropout, cx.mode) {
            (Some(k), Mode::Train) => {
                let d = cx.tensor(units)?;
                let (n, rate) = (cx.batch * units, self.cfg.dropout);
                cx.per_step(&[Slot::Dropout(k)], |rec| {
                    elementwise::dropout(rec, activated.buffer(), d.buffer(), n, rate, 0)
                })?;
                d
            }
            _ => activated.clone(),
        };
        Ok(Saved {
            input: x.clone(),
            activated,
            pre,
            output,
            act,
        })
    }

    fn gate(&self, cx: &Cx<'_>, saved: &Saved) -> Option<Gate> {
        let dropped = cx.mode == Mode::Train && self.cfg.dropout > 0.0;
        (!dropped
            && saved.pre.is_none()
            && saved.act != Activation::Linear
            && saved.act.derivative_from_output())
        .then(|| (saved.act, saved.activated.clone()))
    }

    fn backward(
        &self,
        cx: &mut Cx<'_>,
        pos: Position,
        saved: &Saved,
        dy: &Tensor,
        gated: bool,
        dx_gate: Option<&Gate>,
        need_dx: bool,
        grad: WeightGrad<'_>,
    ) -> Result<Option<Tensor>> {
        let (b, units, inputs) = (cx.batch as u32, self.cfg.units as u32, self.in_dim as u32);
        let dz = if gated {
            dy.clone()
        } else {
            self.through_head(cx, pos, saved, dy)?
        };
        // The input gradient first, while the weight still holds this step's value (a fused
        // update overwrites it): dx = dz·Wᵀ, W stored (inputs, units) = (N, K).
        let dx = if need_dx {
            let dx = cx.tensor(self.in_dim)?;
            let args = MatmulArgs {
                a: dz.buffer(),
                b: self.w.buffer(),
                epilogue: dx_gate
                    .map_or(Epilogue::None, |(act, y)| Epilogue::Gate(y.buffer(), *act)),
                c: dx.buffer(),
                m: b,
                n: inputs,
                k: units,
                layout: Layout::NT,
                act: Activation::Linear,
                accumulate: false,
            };
            matmul_tune::record(cx.rec(), &args)?;
            Some(dx)
        } else {
            None
        };
        // dW = inputᵀ·dz (input stored (B, inputs) = (K, M)), and db = Σ_rows dz from the
        // same kernel's loads of dz.
        let mut args = MatmulArgs {
            a: saved.input.buffer(),
            b: dz.buffer(),
            epilogue: Epilogue::None,
            c: self.w.buffer(),
            m: inputs,
            n: units,
            k: b,
            layout: Layout::TN,
            act: Activation::Linear,
            accumulate: false,
        };
        match grad {
            WeightGrad::Into(g) => {
                args.c = g[0].buffer();
                if let (Some(_), Some(gb)) = (&self.b, g.get(1)) {
                    args.epilogue = Epilogue::ColSum(gb.buffer());
                }
                matmul_tune::record(cx.rec(), &args)?;
            }
            WeightGrad::Update { rule, state } => {
                let st = |i: usize| -> Vec<&wgpu::Buffer> {
                    state[i].iter().map(|t| t.buffer()).collect()
                };
                let w_state = st(pos.first_param);
                let b_state = if self.b.is_some() {
                    st(pos.first_param + 1)
                } else {
                    Vec::new()
                };
                args.epilogue = Epilogue::Update(Update {
                    rule,
                    step: 1,
                    state: &w_state,
                    bias: self.b.as_ref().map(|bt| (bt.buffer(), &b_state[..])),
                });
                let slot = Slot::Update {
                    layer: pos.index,
                    mnk: (inputs, units, b),
                };
                cx.per_step(&[slot], |rec| matmul_tune::record(rec, &args))?;
            }
        }
        Ok(dx)
    }
}
