//! Layers: [`Dense`] with its activation and initializer.

use std::fmt;
use std::str::FromStr;

use crate::kernels::matmul::Activation;
use crate::random::Rng;
use crate::{Error, Result};

/// A layer's activation, as Keras names them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum LayerActivation {
    /// Identity (`"linear"`).
    Linear,
    /// `"relu"`.
    Relu,
    /// `"leaky_relu"` (slope 0.2, Keras's default) or `LeakyRelu(slope)`.
    LeakyRelu(f32),
    /// `"sigmoid"`.
    Sigmoid,
    /// `"tanh"`.
    Tanh,
    /// `"gelu"` (exact, erf).
    Gelu,
    /// `"softmax"` over the units (last layer of a classifier).
    Softmax,
}

impl LayerActivation {
    /// The elementwise activation the kernels fuse (softmax is handled by the loss).
    pub(crate) fn elementwise(self) -> Activation {
        match self {
            LayerActivation::Linear | LayerActivation::Softmax => Activation::Linear,
            LayerActivation::Relu => Activation::Relu,
            LayerActivation::LeakyRelu(a) => Activation::LeakyRelu(a),
            LayerActivation::Sigmoid => Activation::Sigmoid,
            LayerActivation::Tanh => Activation::Tanh,
            LayerActivation::Gelu => Activation::Gelu,
        }
    }
}

impl FromStr for LayerActivation {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        Ok(match s.trim().to_ascii_lowercase().as_str() {
            "linear" | "none" | "" => LayerActivation::Linear,
            "relu" => LayerActivation::Relu,
            "leaky_relu" => LayerActivation::LeakyRelu(0.2),
            "sigmoid" => LayerActivation::Sigmoid,
            "tanh" => LayerActivation::Tanh,
            "gelu" => LayerActivation::Gelu,
            "softmax" => LayerActivation::Softmax,
            other if other.starts_with("leaky_relu(") && other.ends_with(')') => {
                let slope = other["leaky_relu(".len()..other.len() - 1]
                    .parse::<f32>()
                    .map_err(|_| Error::InvalidArgument {
                        op: "Dense",
                        name: "activation",
                        expected: "leaky_relu(SLOPE) with a number".into(),
                        found: format!("{other:?}"),
                    })?;
                LayerActivation::LeakyRelu(slope)
            }
            other => {
                return Err(Error::InvalidArgument {
                    op: "Dense",
                    name: "activation",
                    expected: "linear, relu, leaky_relu, sigmoid, tanh, gelu or softmax".into(),
                    found: format!("{other:?}"),
                })
            }
        })
    }
}

impl fmt::Display for LayerActivation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LayerActivation::Linear => f.write_str("linear"),
            LayerActivation::Relu => f.write_str("relu"),
            LayerActivation::LeakyRelu(a) if *a == 0.2 => f.write_str("leaky_relu"),
            LayerActivation::LeakyRelu(a) => write!(f, "leaky_relu({a})"),
            LayerActivation::Sigmoid => f.write_str("sigmoid"),
            LayerActivation::Tanh => f.write_str("tanh"),
            LayerActivation::Gelu => f.write_str("gelu"),
            LayerActivation::Softmax => f.write_str("softmax"),
        }
    }
}

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
}

/// A fully connected layer: `y = act(x·W + b)`, `W` of shape (inputs, units).
#[derive(Clone, Debug, PartialEq)]
pub struct Dense {
    /// Output features.
    pub units: usize,
    /// Activation.
    pub activation: LayerActivation,
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
    /// A layer with `units` outputs and an activation named as in Keras (`"relu"`,
    /// `"softmax"`, …). An unknown name is reported by [`crate::nn::Sequential::add`].
    #[allow(clippy::new_ret_no_self)] // a builder, as `Dense::new(128, "relu").input_dim(784)` reads like Keras
    pub fn new(units: usize, activation: &str) -> DenseBuilder {
        DenseBuilder {
            units,
            activation: activation.to_string(),
            use_bias: true,
            initializer: Initializer::GlorotUniform,
            input_dim: None,
            dropout: 0.0,
        }
    }
}

/// Builder returned by [`Dense::new`].
#[derive(Clone, Debug)]
pub struct DenseBuilder {
    units: usize,
    activation: String,
    use_bias: bool,
    initializer: Initializer,
    input_dim: Option<usize>,
    dropout: f32,
}

impl DenseBuilder {
    /// Drops each output with probability `rate` while training (Keras's
    /// `Dense(...)` followed by `Dropout(rate)`); `0 ≤ rate < 1`, not on the output layer.
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
        if self.units == 0 {
            return Err(Error::InvalidArgument {
                op: "Dense",
                name: "units",
                expected: "at least 1".into(),
                found: "0".into(),
            });
        }
        if self.input_dim == Some(0) {
            return Err(Error::InvalidArgument {
                op: "Dense",
                name: "input_dim",
                expected: "at least 1".into(),
                found: "0".into(),
            });
        }
        if !(0.0..1.0).contains(&self.dropout) {
            return Err(Error::InvalidArgument {
                op: "Dense",
                name: "dropout",
                expected: "a rate in [0, 1)".into(),
                found: self.dropout.to_string(),
            });
        }
        Ok(Dense {
            units: self.units,
            activation: self.activation.parse()?,
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
            activation: d.activation.to_string(),
            use_bias: d.use_bias,
            initializer: d.initializer,
            input_dim: d.input_dim,
            dropout: d.dropout,
        }
    }
}
