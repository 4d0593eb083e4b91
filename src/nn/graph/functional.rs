//! Keras's functional API: [`Input`] makes a symbolic tensor, calling a layer on symbolic
//! tensors ([`Call::call`], [`Call::call_on`]) makes another with its shape inferred (so a
//! shape that does not fit fails at the call, naming both), and [`Model::functional`] turns
//! the graph between an input and an output into a [`Model`]: its layers in a topological
//! order, named as Keras names them, weights initialised from the model's seed.
//!
//! ```no_run
//! use suanli::nn::{Add, Call, Conv2D, Dense, GlobalAveragePooling2D, Input, Model};
//! let dev = suanli::Device::open("auto")?;
//! let x = Input::new(&[28, 28, 1]);
//! let h = Conv2D::new(16, 3).padding("same").activation("relu").call(&x)?;
//! let r = Conv2D::new(16, 3).padding("same").call(&h)?;
//! let s = Add::new().call_on(&[&h, &r])?;           // a residual connection
//! let p = GlobalAveragePooling2D::new().call(&s)?;
//! let y = Dense::new(10, "softmax").call(&p)?;
//! let model = Model::functional(&dev, &[&x], &[&y])?;
//! println!("{}", model.summary());
//! # Ok::<(), suanli::Error>(())
//! ```
//!
//! One or several inputs (Keras's `Model(inputs=[a, b])`: a dataset's columns in that
//! order, see [`crate::data::Dataset::with_input`]) and several outputs. A builder is
//! consumed by `call`, so each call of it is a layer of its own; a layer called several
//! times with one set of weights (Keras's shared layer) is a [`crate::nn::Share::shared`]
//! handle ([`crate::nn::graph::shared`]).

use std::collections::HashMap;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::nn::graph::build::NodeWeights;
use crate::nn::graph::graph_config;
use crate::nn::graph::model::Model;
use crate::nn::layer::Src;
use crate::nn::registry::{IntoLayers, LayerSpec};
use crate::nn::spec::{sample_shape, Shape};
use crate::runtime::Device;

/// A tensor of a graph being built: the model's input, or a layer's output. Cheap to clone
/// (shared); its per-sample shape is known.
#[derive(Clone)]
pub struct SymbolicTensor(Arc<Node>);

enum Kind {
    Input {
        name: Option<String>,
    },
    Layer {
        spec: Box<LayerSpec>,
        inbound: Vec<SymbolicTensor>,
        /// How its weights relate to a shared layer's.
        link: Link,
    },
}

/// How a node's weights relate to a shared layer's ([`crate::nn::graph::shared::Shared`]'s
/// id).
#[derive(Clone, Copy, Debug)]
pub(crate) enum Link {
    /// Weights of its own.
    Own,
    /// A call of the shared layer: calls with the same id are one layer with one set of
    /// weights.
    CallOf(usize),
    /// A Dense using the shared layer's matrix transposed (its first call must come first).
    Transposed(usize),
}

struct Node {
    kind: Kind,
    shape: Shape,
}

impl SymbolicTensor {
    /// The per-sample shape (without the batch).
    pub fn shape(&self) -> &[usize] {
        &self.0.shape
    }

    fn id(&self) -> usize {
        Arc::as_ptr(&self.0) as usize
    }
}

impl std::fmt::Debug for SymbolicTensor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let what = match &self.0.kind {
            Kind::Input { name } => format!("Input({:?})", name.as_deref().unwrap_or("")),
            Kind::Layer { spec, .. } => spec.config.class_name().to_string(),
        };
        write!(f, "SymbolicTensor({what}, {})", sample_shape(&self.0.shape))
    }
}

/// Keras's `keras.Input`: the model's input, of a per-sample shape (channels last).
pub struct Input;

impl Input {
    /// An input of per-sample `shape`.
    #[allow(clippy::new_ret_no_self)] // Keras's spelling: `Input(shape)` is a tensor
    pub fn new(shape: &[usize]) -> SymbolicTensor {
        SymbolicTensor(Arc::new(Node {
            kind: Kind::Input { name: None },
            shape: shape.to_vec(),
        }))
    }

    /// A named input (the name the summary and the model file give it).
    pub fn named(shape: &[usize], name: &str) -> SymbolicTensor {
        SymbolicTensor(Arc::new(Node {
            kind: Kind::Input {
                name: Some(name.to_string()),
            },
            shape: shape.to_vec(),
        }))
    }
}

/// Calling a layer on symbolic tensors (implemented for everything [`Model::add`] takes).
pub trait Call: IntoLayers + Sized {
    /// The layer applied to `x`.
    fn call(self, x: &SymbolicTensor) -> Result<SymbolicTensor> {
        self.call_on(&[x])
    }

    /// The layer applied to several tensors (a merge: `Add`, `Concatenate`…).
    fn call_on(self, xs: &[&SymbolicTensor]) -> Result<SymbolicTensor> {
        let mut cur: Vec<SymbolicTensor> = xs.iter().map(|&x| x.clone()).collect();
        for spec in self.into_layers()? {
            cur = vec![apply(spec, cur, Link::Own)?];
        }
        cur.pop().ok_or_else(|| Error::Internal {
            op: "call",
            message: "a layer builder gave no layer".into(),
        })
    }
}

/// `spec` applied to `inputs`: its output shape inferred (an error naming both shapes when
/// it does not fit), as a call of the shared layer `shared` if one.
pub(crate) fn apply(
    spec: LayerSpec,
    inputs: Vec<SymbolicTensor>,
    link: Link,
) -> Result<SymbolicTensor> {
    spec.config.check()?;
    let class = spec.config.class_name();
    let shapes: Vec<Shape> = inputs.iter().map(|t| t.0.shape.clone()).collect();
    if let Some(bad) = shapes.iter().find(|s| s.is_empty() || s.contains(&0)) {
        return Err(Error::InvalidArgument {
            op: class,
            name: "input",
            expected: "a tensor with sizes of at least 1".into(),
            found: sample_shape(bad),
        });
    }
    if let (Some(given), [one]) = (&spec.input_shape, shapes.as_slice()) {
        if given != one {
            return Err(Error::ShapeMismatch {
                op: class,
                expected: format!(
                    "input_shape {} (the tensor it is called on)",
                    sample_shape(one)
                ),
                found: sample_shape(given),
            });
        }
    }
    let shape = spec.config.output_shape_n(&shapes)?;
    if shape.contains(&0) {
        return Err(Error::ShapeMismatch {
            op: class,
            expected: "an output with at least one value per sample".into(),
            found: format!("{} from {}", sample_shape(&shape), sample_shape(&shapes[0])),
        });
    }
    let mut spec = spec;
    spec.input_shape = None;
    Ok(SymbolicTensor(Arc::new(Node {
        kind: Kind::Layer {
            spec: Box::new(spec),
            inbound: inputs,
            link,
        },
        shape,
    })))
}

impl<T: IntoLayers> Call for T {}

impl Model {
    /// Keras's `Model(inputs, outputs)`: the layers between `inputs` and `outputs`, on
    /// `device`, initialised with seed 42 (see [`Model::build`] for another).
    pub fn functional(
        device: &Device,
        inputs: &[&SymbolicTensor],
        outputs: &[&SymbolicTensor],
    ) -> Result<Model> {
        Model::new(device).build(inputs, outputs)
    }

    /// This empty model (its device and seed) made of the layers between `inputs` and
    /// `outputs` (see the module docs). Every check happens before a weight is made: one
    /// input and one output, and no layer reading an input that is not the model's (every
    /// path from the output ends at an `Input`, so that is also what makes the output depend
    /// on the model's input).
    pub fn build(
        mut self,
        inputs: &[&SymbolicTensor],
        outputs: &[&SymbolicTensor],
    ) -> Result<Model> {
        let bad = |name: &'static str, expected: String, found: String| Error::InvalidArgument {
            op: "Model",
            name,
            expected,
            found,
        };
        if !self.layers.is_empty() {
            return Err(bad(
                "model",
                "an empty model to build".into(),
                format!("{} layers", self.layers.len()),
            ));
        }
        if inputs.is_empty() || outputs.is_empty() {
            return Err(bad(
                "inputs",
                "at least one input and one output".into(),
                format!("{} inputs and {} outputs", inputs.len(), outputs.len()),
            ));
        }
        if let Some(k) =
            (1..outputs.len()).find(|&k| outputs[..k].iter().any(|o| o.id() == outputs[k].id()))
        {
            return Err(bad(
                "outputs",
                "distinct outputs".into(),
                format!("output {k} ({:?}) given twice", outputs[k]),
            ));
        }
        // Each input's position (what `Src::Input(k)` names) and its name.
        let mut input_at: HashMap<usize, usize> = HashMap::new();
        let mut names: Vec<String> = Vec::new();
        for (k, input) in inputs.iter().enumerate() {
            let Kind::Input { name } = &input.0.kind else {
                return Err(bad(
                    "inputs",
                    "tensors made by Input".into(),
                    format!("{input:?} as input {k}"),
                ));
            };
            let name = name.clone().unwrap_or_else(|| match k {
                0 => "input_layer".into(),
                _ => format!("input_layer_{k}"),
            });
            if input_at.insert(input.id(), k).is_some() || names.contains(&name) {
                return Err(bad(
                    "inputs",
                    "distinct inputs with distinct names".into(),
                    format!("input {k} ({name:?}) given twice"),
                ));
            }
            names.push(name);
        }
        let mut read = vec![false; inputs.len()];
        // Depth-first from the output; a layer's index is its finishing order, so every layer
        // comes after what it reads.
        let mut index: HashMap<usize, usize> = HashMap::new();
        let mut nodes: Vec<(LayerSpec, NodeWeights, Option<Vec<Src>>)> = Vec::new();
        // The first call of each shared layer (its node index).
        let mut first_call: HashMap<usize, usize> = HashMap::new();
        // Every output's graph, the first's first: the last output is the last layer, and a
        // layer every output reads comes before all of them.
        for output in outputs {
            let mut stack: Vec<(SymbolicTensor, usize)> = vec![((*output).clone(), 0)];
            while let Some((t, next)) = stack.pop() {
                match &t.0.kind {
                    Kind::Input { name } => {
                        if let Some(&k) = input_at.get(&t.id()) {
                            read[k] = true;
                        } else {
                            return Err(bad(
                                "inputs",
                                "layers that read the model's input or each other".into(),
                                format!(
                                    "a layer reading another Input ({}, {})",
                                    name.as_deref().unwrap_or("unnamed"),
                                    sample_shape(t.shape())
                                ),
                            ));
                        }
                        if stack.is_empty() {
                            return Err(bad(
                                "outputs",
                                "an output made by a layer".into(),
                                "the input itself".into(),
                            ));
                        }
                    }
                    Kind::Layer {
                        spec,
                        inbound,
                        link,
                    } => {
                        if index.contains_key(&t.id()) {
                            continue;
                        }
                        if let Some(src) = inbound.get(next) {
                            stack.push((t.clone(), next + 1));
                            if !index.contains_key(&src.id()) {
                                stack.push((src.clone(), 0));
                            }
                            continue;
                        }
                        let srcs = inbound
                            .iter()
                            .map(|s| match &s.0.kind {
                                Kind::Input { .. } => Src::Input(input_at[&s.id()]),
                                Kind::Layer { .. } => Src::Layer(index[&s.id()]),
                            })
                            .collect();
                        let w = match *link {
                            Link::Own => NodeWeights::Fresh,
                            Link::CallOf(s) => match *first_call.entry(s).or_insert(nodes.len()) {
                                j if j < nodes.len() => NodeWeights::CallOf(j),
                                _ => NodeWeights::Fresh,
                            },
                            Link::Transposed(s) => match first_call.get(&s) {
                                Some(&j) => NodeWeights::Tied(j),
                                None => {
                                    return Err(bad(
                                        "outputs",
                                        "a transposed call reading (through the graph) a call of the layer whose matrix it uses".into(),
                                        format!("a {} whose matrix's owner comes after it", spec.config.class_name()),
                                    ))
                                }
                            },
                        };
                        index.insert(t.id(), nodes.len());
                        nodes.push(((**spec).clone(), w, Some(srcs)));
                    }
                }
            }
        }
        if let Some(k) = read.iter().position(|r| !r) {
            return Err(bad(
                "inputs",
                "inputs the output depends on".into(),
                format!(
                    "input {k} ({:?}), which no layer on the way reads",
                    names[k]
                ),
            ));
        }
        self.input = Some(inputs[0].shape().to_vec());
        self.input_name = match &inputs[0].0.kind {
            Kind::Input { name } => name.clone(),
            Kind::Layer { .. } => None,
        };
        self.more_inputs = inputs[1..]
            .iter()
            .zip(&names[1..])
            .map(|(i, n)| (i.shape().to_vec(), n.clone()))
            .collect();
        let outs: Vec<usize> = outputs.iter().map(|o| index[&o.id()]).collect();
        self.append_nodes(nodes)?;
        self.set_outputs(outs)?;
        Ok(self)
    }

    /// A graph model from Keras's functional config ([`crate::nn::graph::graph_config`]: the form a
    /// graph's model file stores, and what the C API and other bindings send), on `device`,
    /// its weights drawn from `seed`. Checked as a file's is; names come from the config.
    pub fn from_config(device: &Device, seed: u64, config: &serde_json::Value) -> Result<Model> {
        let g =
            graph_config::parse(config).map_err(|(expected, found)| Error::InvalidArgument {
                op: "Model::from_config",
                name: "config",
                expected,
                found,
            })?;
        let firsts: Vec<Option<usize>> = (0..g.layers.len()).map(|i| g.first_call(i)).collect();
        let mut m = Model::with_seed(device, seed);
        m.set_graph_inputs(g.name, &g.inputs);
        let outputs = g.outputs;
        // A layer listed with several calls: each later call shares the first's weights.
        let nodes = g
            .layers
            .into_iter()
            .zip(firsts)
            .map(|((spec, reads), first)| {
                let w = first.map_or(NodeWeights::Fresh, NodeWeights::CallOf);
                (spec, w, Some(reads))
            })
            .collect();
        m.append_nodes(nodes)?;
        m.set_outputs(outputs)?;
        Ok(m)
    }

    /// Makes the layers `outputs` the model's outputs (one that is the last layer: the
    /// default, kept as none given).
    pub(crate) fn set_outputs(&mut self, outputs: Vec<usize>) -> Result<()> {
        if let Some(&j) = outputs.iter().find(|&&j| j >= self.layers.len()) {
            return Err(Error::Internal {
                op: "Model",
                message: format!("output layer {j} of {}", self.layers.len()),
            });
        }
        let last_alone = outputs.len() == 1 && outputs[0] + 1 == self.layers.len();
        self.outputs = if last_alone { Vec::new() } else { outputs };
        Ok(())
    }

    /// Appends a layer reading `reads` — `None` for the model's input, `Some(j)` for the
    /// output of layer `j` (an earlier one) — named and initialised as [`Model::add`] does:
    /// the graph form of `add`, for bindings that build a graph node by node (Python's
    /// functional API). A builder that stands for two layers (a Dense with its dropout)
    /// appends both, the second reading the first.
    pub fn add_node(&mut self, layer: impl IntoLayers, reads: &[Option<usize>]) -> Result<()> {
        let reads: Vec<Src> = reads.iter().map(|&r| r.into()).collect();
        self.add_node_from(layer, &reads)
    }

    /// [`Model::add_node`] reading any of the model's inputs ([`Model::add_input`]) or
    /// earlier layers.
    pub fn add_node_from(&mut self, layer: impl IntoLayers, reads: &[Src]) -> Result<()> {
        let mut inbound: Vec<Src> = reads.to_vec();
        let mut nodes = Vec::new();
        for spec in layer.into_layers()? {
            nodes.push((spec, NodeWeights::Fresh, Some(inbound)));
            inbound = vec![Src::Layer(self.layers.len() + nodes.len() - 1)];
        }
        self.append_nodes(nodes)
    }

    /// The name and inputs of a graph read from a config (names as given, every one).
    pub(crate) fn set_graph_inputs(&mut self, name: Option<String>, inputs: &[(String, Shape)]) {
        self.name = name;
        if let Some((first, more)) = inputs.split_first() {
            self.input_name = Some(first.0.clone());
            self.input = Some(first.1.clone());
            self.more_inputs = more.iter().map(|(n, s)| (s.clone(), n.clone())).collect();
        }
    }

    /// Appends an input to a model of several (Keras's `Model(inputs=[a, b])`): layers added
    /// by [`Model::add_node_from`] read it as `Src::Input(k)`, `k` the index returned (the
    /// first input is the model's input shape, or the first layer's). For bindings that
    /// build a graph node by node.
    pub fn add_input(&mut self, shape: &[usize], name: &str) -> Result<usize> {
        let taken = self.input_names().iter().any(|n| n == name)
            || self
                .layers
                .iter()
                .any(|l| l.spec.name.as_deref() == Some(name));
        if name.is_empty() || taken || shape.is_empty() || shape.contains(&0) {
            return Err(Error::InvalidArgument {
                op: "Model::add_input",
                name: "input",
                expected: "a shape of sizes ≥ 1 and a name no input or layer has".into(),
                found: format!("{name:?} of shape {}", sample_shape(shape)),
            });
        }
        self.more_inputs.push((shape.to_vec(), name.to_string()));
        Ok(self.more_inputs.len())
    }

    /// Sets the name of the model's input (Keras's `Input(name=...)`), shown by the summary
    /// and kept in the file of a graph.
    pub fn set_input_name(&mut self, name: &str) -> Result<()> {
        if name.is_empty()
            || self
                .layers
                .iter()
                .any(|l| l.spec.name.as_deref() == Some(name))
        {
            return Err(Error::InvalidArgument {
                op: "Model::set_input_name",
                name: "name",
                expected: "a non-empty name no layer of the model has".into(),
                found: format!("{name:?}"),
            });
        }
        self.input_name = Some(name.to_string());
        Ok(())
    }

    /// The same model with a name (Keras's `Model(..., name=...)`), shown by the summary and
    /// kept in its file.
    pub fn named(mut self, name: &str) -> Model {
        self.set_name(name);
        self
    }

    /// Sets the model's name (see [`Model::named`]).
    pub fn set_name(&mut self, name: &str) {
        self.name = Some(name.to_string());
    }

    /// What each layer reads, in order.
    pub fn layer_sources(&self) -> Vec<Vec<Src>> {
        self.layers.iter().map(|l| l.inbound.clone()).collect()
    }

    /// What each layer reads, in order: `None` for a model input, `Some(j)` for layer `j`'s
    /// output ([`Model::layer_sources`] tells the inputs apart).
    pub fn layer_inputs(&self) -> Vec<Vec<Option<usize>>> {
        self.layers
            .iter()
            .map(|l| {
                l.inbound
                    .iter()
                    .map(|s| match s {
                        Src::Input(_) => None,
                        Src::Layer(j) => Some(*j),
                    })
                    .collect()
            })
            .collect()
    }
}
