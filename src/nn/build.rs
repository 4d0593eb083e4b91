//! Building a [`Sequential`]: adding layers from their specs (shapes inferred layer by layer,
//! names given as Keras gives them, weights initialised from the model's seed), adding the
//! layers of another model with their weights shared, setting the metrics it reports, and
//! rebuilding layers with given weights (loading, copying to a device).

use crate::error::{Error, Result};
use crate::nn::layer::{Io, Weights};
use crate::nn::metric::Metric;
use crate::nn::model::{Entry, Sequential};
use crate::nn::registry::{IntoLayers, LayerSpec};
use crate::nn::spec::{sample_shape, Init};
use crate::random::Rng;
use crate::tensor::Tensor;
use crate::vocab::Activation;

/// Keras's layer name for a class: `Conv2D` → `conv2d`, `MaxPooling2D` → `max_pooling2d`.
fn snake_case(class: &str) -> String {
    let c: Vec<char> = class.chars().collect();
    let mut out = String::new();
    for (i, &ch) in c.iter().enumerate() {
        let next_lower = c.get(i + 1).is_some_and(|n| n.is_ascii_lowercase());
        if ch.is_ascii_uppercase() && i > 0 && (next_lower || c[i - 1].is_ascii_lowercase()) {
            out.push('_');
        }
        out.push(ch.to_ascii_lowercase());
    }
    out
}

impl Sequential {
    /// Appends a layer (or a layer and the dropout after it), given by a builder
    /// (`Conv2D::new(32, 3).activation("relu")`), a [`LayerSpec`] or its JSON form. Its input
    /// shape is the previous layer's output (the first layer's comes from
    /// [`Sequential::input_shape`] or the layer's own); its output shape, name and weights
    /// follow. Everything is checked before the model changes.
    pub fn add(&mut self, layer: impl IntoLayers) -> Result<()> {
        let specs = layer.into_layers()?;
        self.append(specs.into_iter().map(|s| (s, None)).collect())
    }

    /// Appends every layer of `other` *sharing its weights* (Keras's `Sequential([model,
    /// Softmax()])`): the same tensors, so training either model changes both, and the
    /// layers keep their names. `other` must live on this model's device and its input shape
    /// must fit. The shared parameters get this model's own optimizer state.
    pub fn add_shared(&mut self, other: &Sequential) -> Result<()> {
        if !self.device.same_as(&other.device) {
            return Err(Error::InvalidArgument {
                op: "Sequential::add_shared",
                name: "model",
                expected: format!("a model on {}", self.device.name()),
                found: format!("one on {}", other.device.name()),
            });
        }
        if other.layers.is_empty() {
            return Err(Error::InvalidArgument {
                op: "Sequential::add_shared",
                name: "model",
                expected: "a model with layers".into(),
                found: "an empty model".into(),
            });
        }
        let mut specs: Vec<(LayerSpec, Option<Weights>)> = Vec::new();
        for (i, l) in other.layers.iter().enumerate() {
            let mut spec = l.spec.clone();
            if i == 0 && spec.input_shape.is_none() {
                spec.input_shape = Some(l.io().input.clone());
            }
            specs.push((spec, Some(l.weights().clone())));
        }
        self.append(specs)
    }

    /// Appends layers, each with the weights given or freshly initialised.
    fn append(&mut self, specs: Vec<(LayerSpec, Option<Weights>)>) -> Result<()> {
        let mut built = Vec::with_capacity(specs.len());
        let mut shape = self.output_shape().map(<[usize]>::to_vec);
        let mut prev_act = self
            .layers
            .last()
            .map(|l| (l.activation(), self.layers.len() - 1));
        let mut names: Vec<String> = self
            .layers
            .iter()
            .filter_map(|l| l.spec.name.clone())
            .collect();
        let mut with_params = self
            .layers
            .iter()
            .filter(|l| !l.weights().params.is_empty())
            .count();
        for (mut spec, shared) in specs {
            spec.config.check()?;
            let class = spec.config.class_name();
            let input = match (&shape, &spec.input_shape, &self.input) {
                (None, Some(s), _) | (None, None, Some(s)) => s.clone(),
                (None, None, None) => {
                    return Err(Error::InvalidArgument {
                        op: "Sequential::add",
                        name: "input_shape",
                        expected: "an input shape before the first layer (Sequential::input_shape, or the layer's input_shape / input_dim)".into(),
                        found: "none".into(),
                    })
                }
                (Some(prev), Some(s), _) if s != prev => {
                    return Err(Error::ShapeMismatch {
                        op: "Sequential::add",
                        expected: format!("input_shape {} (the previous layer's output)", sample_shape(prev)),
                        found: sample_shape(s),
                    })
                }
                (Some(prev), _, _) => prev.clone(),
            };
            if input.is_empty() || input.contains(&0) {
                return Err(Error::InvalidArgument {
                    op: "Sequential::add",
                    name: "input_shape",
                    expected: "sizes of at least 1".into(),
                    found: sample_shape(&input),
                });
            }
            if let Some((Activation::Softmax, i)) = prev_act {
                return Err(Error::InvalidArgument {
                    op: "Sequential::add",
                    name: "layer",
                    expected: "softmax only on the last layer".into(),
                    found: format!("a {class} layer after softmax layer {i}"),
                });
            }
            let output = spec.config.output_shape(&input)?;
            if output.contains(&0) {
                return Err(Error::ShapeMismatch {
                    op: class,
                    expected: "an output with at least one value per sample".into(),
                    found: format!(
                        "{} from input {}",
                        sample_shape(&output),
                        sample_shape(&input)
                    ),
                });
            }
            let name = match spec.name.take() {
                Some(n) if names.contains(&n) => {
                    return Err(Error::InvalidArgument {
                        op: "Sequential::add",
                        name: "name",
                        expected: "a name no other layer of the model has".into(),
                        found: format!("{n:?}"),
                    })
                }
                Some(n) => n,
                None => {
                    // Keras's names: the class in snake case, then _1, _2, … for the next ones.
                    let base = snake_case(class);
                    let mut i = 0;
                    let mut n = base.clone();
                    while names.contains(&n) {
                        i += 1;
                        n = format!("{base}_{i}");
                    }
                    n
                }
            };
            names.push(name.clone());
            spec.name = Some(name);
            // The first layer keeps its input shape in its spec (the model file needs it).
            spec.input_shape = (built.is_empty() && self.layers.is_empty()).then(|| input.clone());
            let specs = spec.config.weights(&input);
            let has_params = specs.iter().any(|w| w.trainable);
            // Each layer with parameters draws from its own generator, seeded by the model's
            // seed and how many such layers come before it.
            let mut rng = Rng::new(self.seed.wrapping_add(with_params as u64 * 0x9E37));
            let mut w = Weights::default();
            for ws in specs.iter().filter(|_| shared.is_none()) {
                let n: usize = ws.shape.iter().product();
                let values = match &ws.init {
                    Init::Kernel(init, fan_in, fan_out) => {
                        init.sample_n(n, *fan_in, *fan_out, &mut rng)
                    }
                    Init::Values(v) => v.clone(),
                    Init::Zeros => vec![0.0; n],
                    Init::Ones => vec![1.0; n],
                };
                let t = Tensor::from_slice(&self.device, &values, &ws.shape)?;
                if ws.trainable {
                    w.params.push(t);
                } else {
                    w.state.push(t);
                }
            }
            with_params += has_params as usize;
            let act = spec.config.activation()?;
            prev_act = Some((act, self.layers.len() + built.len()));
            let io = Io {
                input,
                output: output.clone(),
            };
            // Shared weights are checked against the spec's shapes by `instantiate`.
            let layer = spec.config.instantiate(io, shared.unwrap_or(w))?;
            built.push(Entry { spec, layer });
            shape = Some(output);
        }
        self.layers.extend(built);
        self.opt_state.clear();
        self.step = 0;
        Ok(())
    }

    /// Rebuilds a layer from its spec with these weights (loading, copying to a device).
    pub(crate) fn push_with_weights(&mut self, spec: LayerSpec, w: Weights) -> Result<()> {
        let input = match (self.output_shape(), &spec.input_shape) {
            (Some(s), _) => s.to_vec(),
            (None, Some(s)) => s.clone(),
            (None, None) => {
                return Err(Error::InvalidArgument {
                    op: "Sequential",
                    name: "input_shape",
                    expected: "an input shape on the first layer".into(),
                    found: "none".into(),
                })
            }
        };
        spec.config.check()?;
        let output = spec.config.output_shape(&input)?;
        let layer = spec.config.instantiate(Io { input, output }, w)?;
        self.layers.push(Entry { spec, layer });
        Ok(())
    }
}

impl Sequential {
    /// Sets the metrics `fit` and `evaluate` report beside loss and accuracy (in
    /// [`crate::nn::History::metrics`] and [`crate::nn::Evaluation::metrics`], under
    /// [`Metric::name`] with `val_` for validation). Checked against the loss here when the
    /// model is compiled, and again when training starts.
    pub fn set_metrics(&mut self, metrics: &[Metric]) -> Result<()> {
        for (i, m) in metrics.iter().enumerate() {
            if let Some(loss) = self.loss {
                m.check(loss)?;
            }
            if metrics[..i].iter().any(|o| o.name() == m.name()) {
                return Err(Error::InvalidArgument {
                    op: "metrics",
                    name: "metrics",
                    expected: "each metric once".into(),
                    found: format!("{} twice", m.name()),
                });
            }
        }
        self.metrics = metrics.to_vec();
        Ok(())
    }

    /// The metrics set with [`Sequential::set_metrics`].
    pub fn metrics(&self) -> &[Metric] {
        &self.metrics
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn layer_names_follow_keras() {
        for (class, name) in [
            ("Dense", "dense"),
            ("Conv2D", "conv2d"),
            ("MaxPooling2D", "max_pooling2d"),
            ("GlobalAveragePooling2D", "global_average_pooling2d"),
            ("BatchNormalization", "batch_normalization"),
        ] {
            assert_eq!(super::snake_case(class), name);
        }
    }
}
