//! The vocabulary shared by kernels, references, tensor ops and layers: activations, matmul
//! layouts, optimizer update rules and dense-target losses.
//!
//! These are plain descriptions with no behaviour of their own, so they sit at the bottom of
//! the crate (as candle's `op.rs` does): a kernel, its f64 reference and a layer all name the
//! same [`Activation`] without importing each other. How a kernel encodes them (the codes its
//! WGSL uses) belongs to the kernel, not here.

use std::fmt;
use std::str::FromStr;

use crate::error::{Error, Result};

/// An activation function: fused into matmul epilogues, run by the elementwise kernels, and
/// named by layers as Keras names them (`"relu"`, `"softmax"`, …).
///
/// Every variant but [`Activation::Softmax`] is pointwise. Softmax works on whole rows: a
/// classifier's cross-entropy loss folds it in (the last layer then yields logits), and
/// prediction applies it as a row operation; pointwise kernels refuse it.
///
/// ```
/// use suanli::Activation;
/// assert_eq!("relu".parse::<Activation>().unwrap(), Activation::Relu);
/// assert_eq!("leaky_relu".parse::<Activation>().unwrap(), Activation::LeakyRelu(0.2));
/// assert_eq!(Activation::LeakyRelu(0.1).to_string(), "leaky_relu(0.1)");
/// assert!("swish".parse::<Activation>().is_err());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub enum Activation {
    /// Identity (`"linear"`).
    #[default]
    Linear,
    /// `max(x, 0)` (`"relu"`).
    Relu,
    /// `x` if `x > 0` else `slope·x` (`"leaky_relu"`: slope 0.2, Keras's default).
    LeakyRelu(f32),
    /// `1 / (1 + e^-x)` (`"sigmoid"`).
    Sigmoid,
    /// `tanh(x)` (`"tanh"`).
    Tanh,
    /// GELU, tanh approximation: `x/2·(1 + tanh(√(2/π)(x + 0.044715x³)))` (`"gelu_tanh"`).
    GeluTanh,
    /// GELU, exact: `x/2·(1 + erf(x/√2))` (`"gelu"`).
    Gelu,
    /// Softmax over a row (`"softmax"`); not pointwise (see the type's docs).
    Softmax,
}

impl Activation {
    /// True for every activation but [`Activation::Softmax`].
    pub fn is_pointwise(self) -> bool {
        self != Activation::Softmax
    }

    /// The scalar parameter (leaky-ReLU slope; 0 otherwise).
    pub fn alpha(self) -> f32 {
        match self {
            Activation::LeakyRelu(a) => a,
            _ => 0.0,
        }
    }

    /// True when `f'(x)` can be computed from the output `y = f(x)` alone (linear, relu,
    /// leaky relu with a positive slope, sigmoid, tanh). Then a layer keeps only its output
    /// for the backward pass, and the derivative can be fused into the next matmul as a gate;
    /// the others (GELU) keep their pre-activation.
    pub fn derivative_from_output(self) -> bool {
        match self {
            Activation::Linear | Activation::Relu | Activation::Sigmoid | Activation::Tanh => true,
            Activation::LeakyRelu(a) => a > 0.0,
            Activation::GeluTanh | Activation::Gelu | Activation::Softmax => false,
        }
    }
}

impl FromStr for Activation {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        Ok(match s.trim().to_ascii_lowercase().as_str() {
            "linear" | "none" | "" => Activation::Linear,
            "relu" => Activation::Relu,
            "leaky_relu" => Activation::LeakyRelu(0.2),
            "sigmoid" => Activation::Sigmoid,
            "tanh" => Activation::Tanh,
            "gelu" => Activation::Gelu,
            "gelu_tanh" => Activation::GeluTanh,
            "softmax" => Activation::Softmax,
            other if other.starts_with("leaky_relu(") && other.ends_with(')') => {
                let slope = other["leaky_relu(".len()..other.len() - 1]
                    .parse::<f32>()
                    .ok()
                    .filter(|v| v.is_finite())
                    .ok_or_else(|| Error::InvalidArgument {
                        op: "activation",
                        name: "activation",
                        expected: "leaky_relu(SLOPE) with a finite number".into(),
                        found: format!("{other:?}"),
                    })?;
                Activation::LeakyRelu(slope)
            }
            other => {
                return Err(Error::InvalidArgument {
                    op: "activation",
                    name: "activation",
                    expected:
                        "linear, relu, leaky_relu, leaky_relu(SLOPE), sigmoid, tanh, gelu, gelu_tanh or softmax"
                            .into(),
                    found: format!("{other:?}"),
                })
            }
        })
    }
}

impl fmt::Display for Activation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Activation::Linear => f.write_str("linear"),
            Activation::Relu => f.write_str("relu"),
            Activation::LeakyRelu(a) if *a == 0.2 => f.write_str("leaky_relu"),
            Activation::LeakyRelu(a) => write!(f, "leaky_relu({a})"),
            Activation::Sigmoid => f.write_str("sigmoid"),
            Activation::Tanh => f.write_str("tanh"),
            Activation::GeluTanh => f.write_str("gelu_tanh"),
            Activation::Gelu => f.write_str("gelu"),
            Activation::Softmax => f.write_str("softmax"),
        }
    }
}

/// Which operands of a matmul `C = op(A)·op(B)` are stored transposed. `op(A)` is (M, K),
/// `op(B)` is (K, N), C is (M, N), all row-major.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Layout {
    /// A stored (M, K), B stored (K, N): the forward product `y = x·W`.
    NN,
    /// A stored (K, M): the weight gradient `dW = xᵀ·dy`.
    TN,
    /// B stored (N, K): the input gradient `dx = dy·Wᵀ`.
    NT,
}

/// An optimizer's update rule and hyper-parameters, as the kernels apply it. Formulas: SGD
/// with momentum, Nesterov and weight decay as in `torch.optim.SGD`; Adam (Kingma & Ba 2015)
/// with L2 decay as in `torch.optim.Adam`; AdamW (Loshchilov & Hutter 2019); RMSprop
/// (Tieleman & Hinton 2012) as in Keras, without momentum.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Rule {
    /// SGD.
    Sgd {
        /// Learning rate.
        lr: f64,
        /// Momentum (0: none).
        momentum: f64,
        /// Nesterov momentum.
        nesterov: bool,
        /// L2 weight decay.
        weight_decay: f64,
    },
    /// Adam (`decoupled`: AdamW).
    Adam {
        /// Learning rate.
        lr: f64,
        /// β1.
        beta1: f64,
        /// β2.
        beta2: f64,
        /// ε.
        eps: f64,
        /// Weight decay.
        weight_decay: f64,
        /// Decoupled weight decay (AdamW).
        decoupled: bool,
    },
    /// RMSprop.
    RmsProp {
        /// Learning rate.
        lr: f64,
        /// ρ.
        rho: f64,
        /// ε.
        eps: f64,
        /// L2 weight decay.
        weight_decay: f64,
    },
}

impl Rule {
    /// Number of state buffers (each the size of the parameter) the rule needs.
    pub fn state_count(&self) -> usize {
        match self {
            Rule::Sgd { .. } | Rule::RmsProp { .. } => 1,
            Rule::Adam { .. } => 2,
        }
    }
}

/// A loss over dense target rows (one-hot or probabilities, 0/1 targets, regression values).
/// Sparse class labels have their own fused softmax cross-entropy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DenseLoss {
    /// Categorical cross-entropy from logits.
    CategoricalFromLogits,
    /// Binary cross-entropy from logits, averaged over columns.
    BinaryFromLogits,
    /// Mean squared error, averaged over columns.
    MeanSquared,
    /// Mean absolute error, averaged over columns (gradient sign(x − t), 0 where equal).
    MeanAbsolute,
    /// Huber loss with Keras's default δ = 1 (quadratic within 1 of the target, linear
    /// beyond), averaged over columns.
    Huber,
}

/// How a window meets the border: `"valid"` (no padding: only whole windows) or `"same"`
/// (zero padding so that the output has `ceil(input / stride)` positions), as Keras.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, Default, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Padding {
    /// No padding.
    #[default]
    Valid,
    /// Zero padding, split as TensorFlow does (the extra row or column at the end).
    Same,
}

impl std::str::FromStr for Padding {
    type Err = Error;
    fn from_str(s: &str) -> Result<Padding> {
        match s.trim().to_ascii_lowercase().as_str() {
            "valid" => Ok(Padding::Valid),
            "same" => Ok(Padding::Same),
            other => Err(Error::InvalidArgument {
                op: "padding",
                name: "padding",
                expected: "\"valid\" or \"same\"".into(),
                found: format!("{other:?}"),
            }),
        }
    }
}

/// A model's precision policy (Keras's `mixed_precision` policies): what its layers compute
/// in. Variables (the master weights) and optimizer state stay float32 under every policy.
///
/// ```
/// use suanli::Precision;
/// assert_eq!("mixed_float16".parse::<Precision>().unwrap(), Precision::MixedFloat16);
/// assert_eq!(Precision::Float32.name(), "float32");
/// assert!("mixed_bfloat16".parse::<Precision>().is_err());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub enum Precision {
    /// Everything in float32 (`"float32"`).
    #[default]
    Float32,
    /// Matmul and convolution operands in float16 with float32 accumulation, float32 master
    /// weights, and dynamic loss scaling (`"mixed_float16"`).
    MixedFloat16,
}

impl Precision {
    /// The policy's Keras name.
    pub fn name(self) -> &'static str {
        match self {
            Precision::Float32 => "float32",
            Precision::MixedFloat16 => "mixed_float16",
        }
    }

    /// Whether layers compute with float16 operands.
    pub fn is_mixed(self) -> bool {
        self == Precision::MixedFloat16
    }
}

impl FromStr for Precision {
    type Err = Error;
    fn from_str(s: &str) -> Result<Precision> {
        match s.trim().to_ascii_lowercase().as_str() {
            "float32" => Ok(Precision::Float32),
            "mixed_float16" => Ok(Precision::MixedFloat16),
            other => Err(Error::InvalidArgument {
                op: "precision policy",
                name: "policy",
                expected: "\"float32\" or \"mixed_float16\"".into(),
                found: format!("{other:?}"),
            }),
        }
    }
}

/// One spatial axis of a windowed operation (convolution or pooling): the output length and
/// the padding before the first window, as TensorFlow computes them.
pub fn window_axis(
    input: usize,
    window: usize,
    stride: usize,
    dilation: usize,
    padding: Padding,
) -> Option<(usize, usize)> {
    let span = dilation * (window - 1) + 1;
    match padding {
        Padding::Valid => (input >= span).then(|| ((input - span) / stride + 1, 0)),
        Padding::Same => {
            let out = input.div_ceil(stride);
            let total = ((out - 1) * stride + span).saturating_sub(input);
            Some((out, total / 2))
        }
    }
}
