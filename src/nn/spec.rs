//! What a layer type provides to the vocabulary (`LayerKind`: its checks, its output shape,
//! its weights, its layer on a device), and the pieces layer configurations share: shapes,
//! [`Pair`]s of sizes, [`Padding`], window arithmetic, Keras's defaults and names
//! (initializers, activations).
//!
//! Everything here is pure (no device): a model file is validated against the specs' weight
//! shapes on the host before a byte reaches a device (`nn::graph::weights_file`), and the fuzzer
//! drives it without a GPU. The tagged record of all layer types is in
//! [`crate::nn::registry`].

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::memory::MemoryKind;
use crate::nn::layer::{Io, Layer, Weights};
use crate::random::Rng;
use crate::vocab::Activation;
pub use crate::vocab::{window_axis, Padding};

/// A per-sample shape (the batch dimension is not part of it), channels last.
pub type Shape = Vec<usize>;

/// Keras's way of writing a shape with its batch dimension: `(None, 26, 26, 32)`.
pub fn keras_shape(shape: &[usize]) -> String {
    let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    format!("(None, {})", dims.join(", "))
}

/// A shape as Keras prints a sample's: `(28, 28, 1)`, `(784,)`.
pub fn sample_shape(shape: &[usize]) -> String {
    match shape {
        [d] => format!("({d},)"),
        _ => {
            let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
            format!("({})", dims.join(", "))
        }
    }
}

/// Two sizes (height, width), written as one number or a pair as Keras takes them
/// (`kernel_size=3` is `(3, 3)`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Pair(pub usize, pub usize);

impl From<usize> for Pair {
    fn from(v: usize) -> Pair {
        Pair(v, v)
    }
}

impl From<(usize, usize)> for Pair {
    fn from((a, b): (usize, usize)) -> Pair {
        Pair(a, b)
    }
}

impl From<[usize; 2]> for Pair {
    fn from([a, b]: [usize; 2]) -> Pair {
        Pair(a, b)
    }
}

impl Serialize for Pair {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        [self.0, self.1].serialize(s)
    }
}

impl<'de> Deserialize<'de> for Pair {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Pair, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Form {
            One(usize),
            Two([usize; 2]),
        }
        match Form::deserialize(d).map_err(|_| {
            serde::de::Error::custom(
                "expected a positive integer or a pair of them, such as 3 or [3, 3]",
            )
        })? {
            Form::One(v) => Ok(Pair(v, v)),
            Form::Two([a, b]) => Ok(Pair(a, b)),
        }
    }
}

impl std::fmt::Display for Pair {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "({}, {})", self.0, self.1)
    }
}

/// How a layer's kernel is initialised (biases start at zero).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Initializer {
    /// Glorot/Xavier uniform, `U(±sqrt(6/(fan_in+fan_out)))` (Keras's default).
    #[default]
    GlorotUniform,
    /// He normal, `N(0, sqrt(2/fan_in))`.
    HeNormal,
    /// He uniform, `U(±sqrt(6/fan_in))`.
    HeUniform,
    /// Keras's `RandomUniform()`, `U(±0.05)` whatever the fans (`"uniform"`: `Embedding`'s
    /// default).
    RandomUniform,
    /// Keras's `RandomNormal()`, `N(0, 0.05)` whatever the fans (`"normal"`).
    RandomNormal,
}

impl Initializer {
    /// `n` values for a kernel with these fans, seeded.
    pub fn sample_n(self, n: usize, fan_in: usize, fan_out: usize, rng: &mut Rng) -> Vec<f32> {
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
            Initializer::RandomUniform => (0..n).map(|_| rng.uniform(-0.05, 0.05) as f32).collect(),
            Initializer::RandomNormal => (0..n).map(|_| (0.05 * rng.normal()) as f32).collect(),
        }
    }

    /// `fan_in × fan_out` values (a dense kernel), seeded.
    pub fn sample(self, fan_in: usize, fan_out: usize, rng: &mut Rng) -> Vec<f32> {
        self.sample_n(fan_in * fan_out, fan_in, fan_out, rng)
    }

    /// Parses Keras's names (`"glorot_uniform"`, `"he_normal"`, `"he_uniform"`, `"uniform"`,
    /// `"normal"`).
    pub fn parse(name: &str) -> Result<Initializer> {
        match name.trim().to_ascii_lowercase().as_str() {
            "glorot_uniform" | "xavier_uniform" => Ok(Initializer::GlorotUniform),
            "he_normal" => Ok(Initializer::HeNormal),
            "he_uniform" => Ok(Initializer::HeUniform),
            "uniform" | "random_uniform" => Ok(Initializer::RandomUniform),
            "normal" | "random_normal" => Ok(Initializer::RandomNormal),
            other => Err(Error::InvalidArgument {
                op: "layer",
                name: "kernel_initializer",
                expected: "glorot_uniform, he_normal, he_uniform, uniform or normal".into(),
                found: format!("{other:?}"),
            }),
        }
    }

    /// Keras's name.
    pub fn name(self) -> &'static str {
        match self {
            Initializer::GlorotUniform => "glorot_uniform",
            Initializer::HeNormal => "he_normal",
            Initializer::HeUniform => "he_uniform",
            Initializer::RandomUniform => "uniform",
            Initializer::RandomNormal => "normal",
        }
    }
}

/// Serde helpers shared by the layer configurations: Keras's defaults and `null` for "none".
pub(crate) mod keras {
    use serde::Deserialize;

    /// `"linear"`.
    pub(crate) fn linear() -> String {
        "linear".into()
    }
    /// `true`.
    pub(crate) fn yes() -> bool {
        true
    }
    /// `"glorot_uniform"`.
    pub(crate) fn glorot() -> String {
        "glorot_uniform".into()
    }
    /// `"zeros"`.
    pub(crate) fn zeros() -> String {
        "zeros".into()
    }
    /// An activation name, `null` meaning linear (Keras's `activation=None`).
    pub(crate) fn activation<'de, D: serde::Deserializer<'de>>(d: D) -> Result<String, D::Error> {
        Ok(Option::<String>::deserialize(d)?.unwrap_or_else(linear))
    }
}

/// Parses an activation argument of layer `op`.
pub(crate) fn parse_activation(op: &'static str, name: &str) -> Result<Activation> {
    let act: Activation = name.parse().map_err(|e| match e {
        Error::InvalidArgument {
            expected, found, ..
        } => Error::InvalidArgument {
            op,
            name: "activation",
            expected,
            found,
        },
        e => e,
    })?;
    if let Activation::LeakyRelu(a) = act {
        if !a.is_finite() {
            return Err(Error::InvalidArgument {
                op,
                name: "activation",
                expected: "a finite leaky-relu slope".into(),
                found: a.to_string(),
            });
        }
    }
    Ok(act)
}

/// Checks the bias initializer (only zeros).
pub(crate) fn check_bias_initializer(op: &'static str, name: &str) -> Result<()> {
    if name != "zeros" {
        return Err(Error::InvalidArgument {
            op,
            name: "bias_initializer",
            expected: "\"zeros\"".into(),
            found: format!("{name:?}"),
        });
    }
    Ok(())
}

/// A tensor a layer owns: its name in the model file, its shape, how it starts, and whether
/// the optimizer trains it (moving statistics are state it never sees).
#[derive(Clone, Debug, PartialEq)]
pub struct WeightSpec {
    /// The name after the layer's (`"kernel"`, `"bias"`, `"moving_mean"`).
    pub name: &'static str,
    /// Its shape.
    pub shape: Vec<usize>,
    /// How it is initialised.
    pub init: Init,
    /// Trained by the optimizer (false: non-trainable state).
    pub trainable: bool,
}

/// How a weight starts.
#[derive(Clone, Debug, PartialEq)]
pub enum Init {
    /// These values (a configuration that carries its weights, such as Normalization's
    /// adapted mean and variance).
    Values(Vec<f32>),
    /// Drawn by a kernel initializer with these fan-in and fan-out.
    Kernel(Initializer, usize, usize),
    /// Zeros.
    Zeros,
    /// Ones.
    Ones,
}

/// What a layer type is to the vocabulary (pure: no device). Implemented by each layer's
/// configuration in its own file and registered once in this file.
pub(crate) trait LayerKind: Clone + std::fmt::Debug + PartialEq + Serialize {
    /// Keras's class name (`"Conv2D"`).
    const CLASS: &'static str;
    /// Keras's positional arguments, in order (`["filters", "kernel_size", ...]`), for the
    /// Python constructors.
    const POSITIONAL: &'static [&'static str];
    /// Checks the arguments (each against what it must be).
    fn check(&self) -> Result<()>;
    /// The output shape for an input shape, or a typed error naming both.
    fn output_shape(&self, input: &[usize]) -> Result<Shape>;
    /// The output shape for the shapes of every input: one input for all but the merges,
    /// which override this.
    fn output_shape_n(&self, inputs: &[Shape]) -> Result<Shape> {
        match inputs {
            [one] => self.output_shape(one),
            _ => Err(Error::InvalidArgument {
                op: Self::CLASS,
                name: "inputs",
                expected: "one input (only merge layers such as Add or Concatenate take several)"
                    .into(),
                found: format!("{} inputs", inputs.len()),
            }),
        }
    }
    /// The weights for an input shape: trainable parameters first (optimizer order), then
    /// state.
    fn weights(&self, _input: &[usize]) -> Vec<WeightSpec> {
        Vec::new()
    }
    /// The weights for the shapes of every input: the first input's for all but the layers
    /// whose weights depend on several (cross-attention), which override this.
    fn weights_n(&self, inputs: &[Shape]) -> Vec<WeightSpec> {
        inputs.first().map_or_else(Vec::new, |i| self.weights(i))
    }
    /// The activation applied to the output (linear for none).
    fn activation(&self) -> Result<Activation> {
        Ok(Activation::Linear)
    }
    /// The layer on a device, with its weights (in [`LayerKind::weights`] order).
    fn instantiate(&self, io: Io, weights: Weights) -> Result<Box<dyn Layer>>;
}

/// A positive size argument, or a typed error.
pub(crate) fn positive(op: &'static str, name: &'static str, v: usize) -> Result<()> {
    if v == 0 {
        return Err(Error::InvalidArgument {
            op,
            name,
            expected: "at least 1".into(),
            found: "0".into(),
        });
    }
    Ok(())
}

/// A pair of positive sizes, or a typed error.
pub(crate) fn positive_pair(op: &'static str, name: &'static str, p: Pair) -> Result<()> {
    if p.0 == 0 || p.1 == 0 {
        return Err(Error::InvalidArgument {
            op,
            name,
            expected: "sizes of at least 1".into(),
            found: p.to_string(),
        });
    }
    Ok(())
}

/// The (height, width, channels) of a per-sample image shape, or a typed error naming it.
pub(crate) fn image(op: &'static str, input: &[usize]) -> Result<(usize, usize, usize)> {
    match input {
        &[h, w, c] => Ok((h, w, c)),
        _ => Err(Error::ShapeMismatch {
            op,
            expected: "images of shape (height, width, channels)".into(),
            found: sample_shape(input),
        }),
    }
}

/// Checks that a layer got the weights its spec lists (count and shapes), and tags them.
pub(crate) fn check_weights(class: &'static str, specs: &[WeightSpec], w: &Weights) -> Result<()> {
    let want: Vec<&[usize]> = specs.iter().map(|s| s.shape.as_slice()).collect();
    let got: Vec<&[usize]> = w.params.iter().chain(&w.state).map(|t| t.shape()).collect();
    let trainable = specs.iter().filter(|s| s.trainable).count();
    if want != got || trainable != w.params.len() {
        return Err(Error::ShapeMismatch {
            op: class,
            expected: format!("weights of shapes {want:?}"),
            found: format!("{got:?}"),
        });
    }
    for t in w.params.iter().chain(&w.state) {
        t.set_memory_kind(MemoryKind::Parameters);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_follow_tensorflow() {
        // valid: floor((in - span) / s) + 1; same: ceil(in / s), padding split low-first.
        assert_eq!(window_axis(28, 3, 1, 1, Padding::Valid), Some((26, 0)));
        assert_eq!(window_axis(26, 2, 2, 1, Padding::Valid), Some((13, 0)));
        assert_eq!(window_axis(5, 2, 2, 1, Padding::Same), Some((3, 0)));
        assert_eq!(window_axis(7, 3, 1, 2, Padding::Same), Some((7, 2)));
        assert_eq!(window_axis(7, 4, 1, 1, Padding::Same), Some((7, 1)));
        assert_eq!(window_axis(2, 3, 1, 1, Padding::Valid), None);
    }

    #[test]
    fn pairs_read_one_number_or_two() {
        let p: Pair = serde_json::from_str("3").unwrap();
        assert_eq!(p, Pair(3, 3));
        let p: Pair = serde_json::from_str("[2, 5]").unwrap();
        assert_eq!(p, Pair(2, 5));
        assert!(serde_json::from_str::<Pair>("[1, 2, 3]").is_err());
    }
}
