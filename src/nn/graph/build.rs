//! Building a [`Sequential`]: adding layers from their specs (shapes inferred layer by layer,
//! names given as Keras gives them, weights initialised from the model's seed), adding the
//! layers of another model with their weights shared, setting the metrics it reports, and
//! rebuilding layers with given weights (loading, copying to a device).

use crate::error::{Error, Result};
use crate::nn::graph::model::{Entry, Sequential};
use crate::nn::layer::{Io, Src, Weights};
use crate::nn::registry::{IntoLayers, LayerConfig, LayerSpec};
use crate::nn::spec::{sample_shape, Init, Shape};
use crate::random::Rng;
use crate::tensor::Tensor;
use crate::vocab::Activation;

/// The weights a node appended to a model gets.
pub(crate) enum NodeWeights {
    /// Freshly initialised from the model's seed.
    Fresh,
    /// These tensors (another model's layer, shared).
    Given(Weights),
    /// Those of layer `j`, an earlier node: this node is another call of that layer (its
    /// name, its weights; see [`crate::nn::graph::shared`]).
    CallOf(usize),
    /// A Dense using the matrix of layer `j`, an earlier node, transposed: its `tied_to`
    /// is set to that layer's name when it is named (see [`tied_weights`]).
    Tied(usize),
}

/// The layer a spec uses the matrix of (a Dense's `tied_to`).
pub(crate) fn tied_owner(spec: &LayerSpec) -> Option<&str> {
    match &spec.config {
        LayerConfig::Dense(d) => d.tied_to.as_deref(),
        _ => None,
    }
}

/// A tied layer's weights: the first weight of the layer its spec names, among `earlier`,
/// checked against the shape this layer's input gives it (`None` for a layer not tied).
pub(crate) fn tied_weights<'e>(
    earlier: impl Iterator<Item = &'e Entry>,
    spec: &LayerSpec,
    input: &[usize],
) -> Result<Option<Weights>> {
    let Some(owner) = tied_owner(spec) else {
        return Ok(None);
    };
    let bad = |expected: String, found: String| Error::InvalidArgument {
        op: "Dense",
        name: "tied_to",
        expected,
        found,
    };
    let mut earlier = earlier;
    let entry = earlier
        .find(|l| l.spec.name.as_deref() == Some(owner))
        .ok_or_else(|| {
            bad(
                "the name of an earlier layer of the model (the owner of the matrix comes first)"
                    .into(),
                format!("{owner:?}, which no earlier layer has"),
            )
        })?;
    let matrix = entry.weights().params.first().cloned().ok_or_else(|| {
        bad(
            "a layer with a matrix".into(),
            format!(
                "{owner:?} ({}), which has no trainable weight",
                entry.spec.config.class_name()
            ),
        )
    })?;
    let want: Vec<Shape> = spec
        .config
        .weights(input)
        .into_iter()
        .map(|w| w.shape)
        .collect();
    if want.first().map(Vec::as_slice) != Some(matrix.shape()) {
        return Err(Error::ShapeMismatch {
            op: "Dense",
            expected: format!(
                "the matrix of {owner:?} of shape {:?} (units, the input's last size {})",
                want.first().cloned().unwrap_or_default(),
                input.last().copied().unwrap_or(0)
            ),
            found: format!("{:?}", matrix.shape()),
        });
    }
    Ok(Some(Weights {
        params: vec![matrix],
        state: Vec::new(),
    }))
}

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
        self.append(specs.into_iter().map(|s| (s, NodeWeights::Fresh)).collect())
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
        let mut specs: Vec<(LayerSpec, NodeWeights)> = Vec::new();
        for (i, l) in other.layers.iter().enumerate() {
            let mut spec = l.spec.clone();
            if i == 0 && spec.input_shape.is_none() {
                spec.input_shape = Some(l.io().input.clone());
            }
            specs.push((spec, NodeWeights::Given(l.weights().clone())));
        }
        self.append(specs)
    }

    /// The per-sample shapes `inbound` names for a layer that comes at `index` (after the
    /// layers of `outputs`), checked: earlier layers only, no reading after a softmax, and the
    /// model input's shape from the spec's `input_shape`, the layers that read it already, or
    /// [`Model::input_shape`].
    fn inbound_shapes(
        &self,
        spec: &LayerSpec,
        inbound: &[Src],
        outputs: &[(Shape, Activation)],
        model_in: Option<&Shape>,
    ) -> Result<Vec<Shape>> {
        let index = outputs.len();
        let class = spec.config.class_name();
        let mut shapes = Vec::with_capacity(inbound.len());
        for src in inbound {
            let shape = match *src {
                Src::Layer(j) if j < index => {
                    let (shape, act) = &outputs[j];
                    if *act == Activation::Softmax {
                        return Err(Error::InvalidArgument {
                            op: "Sequential::add",
                            name: "layer",
                            expected: "softmax only on the last layer".into(),
                            found: format!("a {class} layer after softmax layer {j}"),
                        });
                    }
                    if let (Some(s), [_]) = (&spec.input_shape, inbound) {
                        if s != shape {
                            return Err(Error::ShapeMismatch {
                                op: "Sequential::add",
                                expected: format!(
                                    "input_shape {} (the previous layer's output)",
                                    sample_shape(shape)
                                ),
                                found: sample_shape(s),
                            });
                        }
                    }
                    shape.clone()
                }
                Src::Layer(j) => {
                    return Err(Error::InvalidArgument {
                        op: "Model",
                        name: "inbound",
                        expected: format!("a layer before layer {index}"),
                        found: format!("layer {j}"),
                    })
                }
                Src::Input(0) => {
                    let given = spec.input_shape.as_ref();
                    if let (Some(g), Some(m)) = (given, model_in) {
                        if g != m {
                            return Err(Error::ShapeMismatch {
                                op: "Sequential::add",
                                expected: format!(
                                    "input_shape {} (the model's input)",
                                    sample_shape(m)
                                ),
                                found: sample_shape(g),
                            });
                        }
                    }
                    let shape = given.or(model_in).or(self.input.as_ref()).cloned().ok_or_else(|| {
                        Error::InvalidArgument {
                            op: "Sequential::add",
                            name: "input_shape",
                            expected: "an input shape before the first layer (Sequential::input_shape, or the layer's input_shape / input_dim)".into(),
                            found: "none".into(),
                        }
                    })?;
                    if shape.is_empty() || shape.contains(&0) {
                        return Err(Error::InvalidArgument {
                            op: "Sequential::add",
                            name: "input_shape",
                            expected: "sizes of at least 1".into(),
                            found: sample_shape(&shape),
                        });
                    }
                    shape
                }
                Src::Input(k) => match self.more_inputs.get(k - 1) {
                    Some((shape, _)) => shape.clone(),
                    None => {
                        return Err(Error::InvalidArgument {
                            op: "Model",
                            name: "inputs",
                            expected: format!(
                                "one of the model's {} inputs",
                                1 + self.more_inputs.len()
                            ),
                            found: format!("a layer reading input {k}"),
                        })
                    }
                },
            };
            shapes.push(shape);
        }
        if shapes.is_empty() {
            return Err(Error::InvalidArgument {
                op: "Model",
                name: "inbound",
                expected: "a layer reading at least one tensor".into(),
                found: format!("a {class} layer reading none"),
            });
        }
        Ok(shapes)
    }

    /// Appends layers, each with the weights given (shared), an earlier node's (another call
    /// of that layer) or freshly initialised, reading what its `inbound` names (`None`: the
    /// previous layer, or the input for the first). Everything is checked before the model
    /// changes.
    pub(crate) fn append_nodes(
        &mut self,
        nodes: Vec<(LayerSpec, NodeWeights, Option<Vec<Src>>)>,
    ) -> Result<()> {
        let mut built: Vec<Entry> = Vec::with_capacity(nodes.len());
        let mut outputs: Vec<(Shape, Activation)> = self
            .layers
            .iter()
            .map(|l| (l.io().output.clone(), l.activation()))
            .collect();
        let mut model_in: Option<Shape> = self.expected_input_shape().map(<[usize]>::to_vec);
        if self.layers.is_empty() {
            model_in = None;
        }
        let mut names: Vec<String> = self
            .layers
            .iter()
            .filter_map(|l| l.spec.name.clone())
            .collect();
        names.extend(self.input_name.clone());
        names.extend(self.more_inputs.iter().map(|(_, n)| n.clone()));
        let mut with_params = self
            .layers
            .iter()
            .filter(|l| !l.weights().params.is_empty())
            .count();
        for (mut spec, shared, inbound) in nodes {
            spec.config.check()?;
            let class = spec.config.class_name();
            let index = outputs.len();
            let inbound = inbound.unwrap_or_else(|| {
                vec![if index == 0 {
                    Src::Input(0)
                } else {
                    Src::Layer(index - 1)
                }]
            });
            let inputs = self.inbound_shapes(&spec, &inbound, &outputs, model_in.as_ref())?;
            if let Some(k) = inbound.iter().position(|s| *s == Src::Input(0)) {
                model_in = Some(inputs[k].clone());
            }
            let output = spec.config.output_shape_n(&inputs)?;
            if output.contains(&0) {
                return Err(Error::ShapeMismatch {
                    op: class,
                    expected: "an output with at least one value per sample".into(),
                    found: format!(
                        "{} from input {}",
                        sample_shape(&output),
                        sample_shape(&inputs[0])
                    ),
                });
            }
            let mut tie_to: Option<usize> = None;
            let shared = match shared {
                NodeWeights::Fresh => None,
                NodeWeights::Tied(j) => {
                    tie_to = Some(j);
                    None
                }
                NodeWeights::Given(w) => Some(w),
                NodeWeights::CallOf(j) => {
                    // Another call of layer j: its name, its weights, checked against the
                    // shapes this call's input gives them.
                    let first = match j.checked_sub(self.layers.len()) {
                        None => self.layers.get(j),
                        Some(b) => built.get(b),
                    }
                    .ok_or_else(|| Error::Internal {
                        op: "Model",
                        message: format!("node {index} a call of a later layer {j}"),
                    })?;
                    let want: Vec<Shape> = spec
                        .config
                        .weights_n(&inputs)
                        .into_iter()
                        .map(|w| w.shape)
                        .collect();
                    let w = first.weights();
                    let have: Vec<Shape> = w
                        .params
                        .iter()
                        .chain(&w.state)
                        .map(|t| t.shape().to_vec())
                        .collect();
                    if want != have {
                        return Err(Error::ShapeMismatch {
                            op: class,
                            expected: format!(
                                "an input of shape {} as shared layer {:?} was first called on (weights {have:?})",
                                sample_shape(&first.io().input),
                                first.spec.name.as_deref().unwrap_or("")
                            ),
                            found: format!("{} (weights {want:?})", sample_shape(&inputs[0])),
                        });
                    }
                    spec.name = first.spec.name.clone();
                    spec.trainable = first.spec.trainable;
                    let w = w.clone();
                    let act = spec.config.activation()?;
                    let io = Io {
                        input: inputs[0].clone(),
                        inputs,
                        output: output.clone(),
                    };
                    spec.input_shape = None;
                    let layer = spec.config.instantiate(io, w)?;
                    built.push(Entry {
                        spec,
                        layer,
                        inbound,
                    });
                    outputs.push((output, act));
                    continue;
                }
            };
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
            if let Some(j) = tie_to {
                let owner = match j.checked_sub(self.layers.len()) {
                    None => self.layers.get(j),
                    Some(b) => built.get(b),
                }
                .and_then(|l| l.spec.name.clone());
                if let (LayerConfig::Dense(d), Some(owner)) = (&mut spec.config, owner) {
                    d.tied_to = Some(owner);
                }
            }
            let shared = match shared {
                Some(w) => Some(w),
                None => tied_weights(self.layers.iter().chain(&built), &spec, &inputs[0])?,
            };
            // The first layer keeps the model's input shape in its spec (the model file
            // needs it).
            spec.input_shape =
                (index == 0 && inbound == [Src::Input(0)]).then(|| inputs[0].clone());
            let specs = spec.config.weights_n(&inputs);
            let has_params = tied_owner(&spec).is_none() && specs.iter().any(|w| w.trainable);
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
            let io = Io {
                input: inputs[0].clone(),
                inputs,
                output: output.clone(),
            };
            // Shared weights are checked against the spec's shapes by `instantiate`.
            let layer = spec.config.instantiate(io, shared.unwrap_or(w))?;
            built.push(Entry {
                spec,
                layer,
                inbound,
            });
            outputs.push((output, act));
        }
        self.layers.extend(built);
        self.opt_state.clear();
        self.step = 0;
        Ok(())
    }

    /// Appends layers, each with the weights given or freshly initialised, as a chain.
    fn append(&mut self, specs: Vec<(LayerSpec, NodeWeights)>) -> Result<()> {
        self.append_nodes(specs.into_iter().map(|(s, w)| (s, w, None)).collect())
    }

    /// Rebuilds a layer from its spec with these weights, reading `inbound` (loading,
    /// copying to a device).
    pub(crate) fn push_with_weights(
        &mut self,
        spec: LayerSpec,
        w: Weights,
        inbound: Vec<Src>,
    ) -> Result<()> {
        let outputs: Vec<(Shape, Activation)> = self
            .layers
            .iter()
            .map(|l| (l.io().output.clone(), Activation::Linear))
            .collect();
        let model_in = self.expected_input_shape().map(<[usize]>::to_vec);
        let model_in = if self.layers.is_empty() {
            None
        } else {
            model_in
        };
        let inputs = self.inbound_shapes(&spec, &inbound, &outputs, model_in.as_ref())?;
        spec.config.check()?;
        let output = spec.config.output_shape_n(&inputs)?;
        let io = Io {
            input: inputs[0].clone(),
            inputs,
            output,
        };
        let layer = spec.config.instantiate(io, w)?;
        self.layers.push(Entry {
            spec,
            layer,
            inbound,
        });
        Ok(())
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
