//! Keras's [`Normalization`] layer: each feature (the last axis) shifted and scaled to zero
//! mean and unit variance, `(x − mean) / max(sqrt(variance), 1e-7)`, with the mean and
//! variance either given or *adapted* to data before training (Python's `adapt(data)`
//! computes them on the device). They are non-trainable state: saved, loaded and shared
//! like batch normalisation's moving statistics, never touched by the optimizer.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::kernels::elementwise;
use crate::nn::layer::{Back, Cx, Dx, Io, Layer, Position, Saved, Weights};
use crate::nn::spec::{sample_shape, Init, LayerKind, Shape, WeightSpec};
use crate::tensor::Tensor;

/// Keras's `Normalization(axis=-1, mean=None, variance=None)`. `mean` and `variance` hold
/// one value per feature (or one for all); without them the layer starts at mean 0,
/// variance 1 until its weights are set (`adapt`, `set_weights`, a loaded file).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Normalization {
    /// The feature axis, as Keras counts it (only -1, the last).
    #[serde(default = "last_axis")]
    pub axis: Option<i64>,
    /// The mean per feature (one value, or a number: every feature).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "number_or_list"
    )]
    pub mean: Option<Vec<f64>>,
    /// The variance per feature (one value, or a number: every feature).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "number_or_list"
    )]
    pub variance: Option<Vec<f64>>,
    /// Keras's `invert` (only false).
    #[serde(default)]
    pub invert: bool,
}

/// Keras takes a number or a list for the mean and variance.
fn number_or_list<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> std::result::Result<Option<Vec<f64>>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Form {
        One(f64),
        Many(Vec<f64>),
    }
    Ok(match Option::<Form>::deserialize(d)? {
        None => None,
        Some(Form::One(v)) => Some(vec![v]),
        Some(Form::Many(v)) => Some(v),
    })
}

fn last_axis() -> Option<i64> {
    Some(-1)
}

impl Default for Normalization {
    fn default() -> Normalization {
        Normalization {
            axis: last_axis(),
            mean: None,
            variance: None,
            invert: false,
        }
    }
}

impl Normalization {
    /// A normalisation of the last axis, to be adapted or given its statistics.
    pub fn new() -> Normalization {
        Normalization::default()
    }

    /// With this mean and variance per feature.
    pub fn with_stats(mut self, mean: &[f64], variance: &[f64]) -> Normalization {
        self.mean = Some(mean.to_vec());
        self.variance = Some(variance.to_vec());
        self
    }

    /// `v` (one value or one per feature) for `features` features.
    fn per_feature(v: &[f64], features: usize) -> Vec<f32> {
        if v.len() == 1 {
            vec![v[0] as f32; features]
        } else {
            v.iter().map(|&x| x as f32).collect()
        }
    }
}

impl LayerKind for Normalization {
    const CLASS: &'static str = "Normalization";
    const POSITIONAL: &'static [&'static str] = &["axis", "mean", "variance", "invert"];

    fn check(&self) -> Result<()> {
        let bad = |name, expected: &str, found: String| {
            Err(Error::InvalidArgument {
                op: Self::CLASS,
                name,
                expected: expected.into(),
                found,
            })
        };
        if self.axis != Some(-1) {
            return bad("axis", "-1 (the last axis)", format!("{:?}", self.axis));
        }
        if self.invert {
            return bad("invert", "false", "true".into());
        }
        match (&self.mean, &self.variance) {
            (None, None) => {}
            (Some(m), Some(v)) => {
                if m.is_empty() || v.is_empty() || m.iter().any(|x| !x.is_finite()) {
                    return bad("mean", "finite values", format!("{m:?}"));
                }
                if v.iter().any(|x| !(x.is_finite() && *x >= 0.0)) {
                    return bad("variance", "finite values of at least 0", format!("{v:?}"));
                }
            }
            _ => {
                return bad(
                    "mean",
                    "mean and variance given together",
                    "one of them".into(),
                )
            }
        }
        Ok(())
    }

    fn output_shape(&self, input: &[usize]) -> Result<Shape> {
        let features = *input.last().unwrap_or(&0);
        for v in [&self.mean, &self.variance].into_iter().flatten() {
            if v.len() != 1 && v.len() != features {
                return Err(Error::ShapeMismatch {
                    op: Self::CLASS,
                    expected: format!(
                        "a mean and variance of 1 or {features} values (the features of {})",
                        sample_shape(input)
                    ),
                    found: format!("{} values", v.len()),
                });
            }
        }
        Ok(input.to_vec())
    }

    fn weights(&self, input: &[usize]) -> Vec<WeightSpec> {
        let c = *input.last().unwrap_or(&1);
        let init = |given: &Option<Vec<f64>>, default: Init| match given {
            Some(v) => Init::Values(Normalization::per_feature(v, c)),
            None => default,
        };
        vec![
            WeightSpec {
                name: "mean",
                shape: vec![c],
                init: init(&self.mean, Init::Zeros),
                trainable: false,
            },
            WeightSpec {
                name: "variance",
                shape: vec![c],
                init: init(&self.variance, Init::Ones),
                trainable: false,
            },
        ]
    }

    fn instantiate(&self, io: Io, w: Weights) -> Result<Box<dyn Layer>> {
        Ok(Box::new(NormalizationLayer { io, w }))
    }
}

struct NormalizationLayer {
    io: Io,
    w: Weights,
}

impl NormalizationLayer {
    fn cols(&self) -> usize {
        *self.io.input.last().unwrap_or(&1)
    }
}

impl Layer for NormalizationLayer {
    fn io(&self) -> &Io {
        &self.io
    }

    fn weights(&self) -> &Weights {
        &self.w
    }

    fn forward(&self, cx: &mut Cx<'_>, _pos: Position, x: &Tensor) -> Result<Saved> {
        let y = cx.tensor(&self.io.output)?;
        let cols = self.cols();
        let (m, v) = (&self.w.state[0], &self.w.state[1]);
        elementwise::normalize(
            cx.rec(),
            x.buffer(),
            m.buffer(),
            v.buffer(),
            y.buffer(),
            x.numel() / cols,
            cols,
            true,
        )?;
        Ok(Saved::plain(x, y, Vec::new()))
    }

    fn backward(&self, cx: &mut Cx<'_>, b: Back<'_>) -> Result<Option<Dx>> {
        let Back { dy, need_dx, .. } = b;
        if !need_dx {
            return Ok(None);
        }
        // dx = dy / max(sqrt(variance), 1e-7): the forward kernel without the centring.
        let dx = cx.tensor(&self.io.input)?;
        let cols = self.cols();
        let (m, v) = (&self.w.state[0], &self.w.state[1]);
        elementwise::normalize(
            cx.rec(),
            dy.buffer(),
            m.buffer(),
            v.buffer(),
            dx.buffer(),
            dy.numel() / cols,
            cols,
            false,
        )?;
        Ok(Some(Dx {
            grad: dx,
            gated: false,
        }))
    }
}
