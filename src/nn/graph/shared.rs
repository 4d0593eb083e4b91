//! Weight sharing, Keras's semantics: one layer called on several tensors is one layer with
//! one set of weights.
//!
//! In the functional API a builder is consumed by its call, so the shared form is a handle,
//! [`Shared`] ([`Share::shared`]): each of its calls is a node of the graph, and
//! [`crate::nn::Model::build`] makes the first one a layer with fresh weights and every later
//! one a layer holding the *same* tensors (its own inbound edges, its own saved activations).
//! The calls of a layer carry its name (Keras's one layer with several inbound nodes), and the
//! model counts a tensor once wherever several entries hold it: [`Model::params`] (optimizer
//! order), `weights`, the summary, the file. A model with shared weights trains on the unfused
//! optimizer path: each call's gradient is summed into the parameter's one gradient buffer
//! (see docs/ARCHITECTURE.md, "Which optimizer path runs").

use std::sync::{Arc, Mutex};

use crate::error::{Error, Result};
use crate::nn::graph::build::NodeWeights;
use crate::nn::graph::functional::{apply, Link, SymbolicTensor};
use crate::nn::graph::model::Model;
use crate::nn::layer::Src;
use crate::nn::layers::dense::{ActivationArg, Dense};
use crate::nn::registry::{IntoLayers, LayerSpec};
use crate::nn::spec::{sample_shape, Shape};
use crate::tensor::Tensor;

/// Making a layer builder a shared layer (implemented for everything
/// [`crate::nn::Model::add`] takes).
pub trait Share: IntoLayers + Sized {
    /// One layer whose calls share their weights (Keras's shared layer: one layer object
    /// called on several tensors): a cheap, clonable handle; each [`Shared::call`] is a node
    /// of the graph, and [`Model::build`] gives all of them one set of weights.
    ///
    /// ```no_run
    /// use suanli::nn::{Add, Call, Dense, Input, Model, Share};
    /// let dev = suanli::Device::open("auto")?;
    /// let (a, b) = (Input::named(&[4], "a"), Input::named(&[4], "b"));
    /// let shared = Dense::new(8, "tanh").shared()?;
    /// let s = Add::new().call_on(&[&shared.call(&a)?, &shared.call(&b)?])?;
    /// let model = Model::functional(&dev, &[&a, &b], &[&s])?;
    /// assert_eq!(model.param_count(), 4 * 8 + 8);
    /// # Ok::<(), suanli::Error>(())
    /// ```
    fn shared(self) -> Result<Shared> {
        Shared::new(self.into_layers()?)
    }
}

impl<T: IntoLayers> Share for T {}

/// A layer whose calls share one set of weights ([`Share::shared`]). Cheap to
/// clone: clones are the same layer.
#[derive(Clone)]
pub struct Shared(Arc<Inner>);

struct Inner {
    spec: LayerSpec,
    /// The first call's input shapes and the weight shapes they gave.
    first: Mutex<Option<(Vec<Shape>, Vec<Shape>)>>,
}

impl Shared {
    /// A shared layer from a builder's layers (exactly one).
    pub(crate) fn new(mut specs: Vec<LayerSpec>) -> Result<Shared> {
        if specs.len() != 1 {
            return Err(Error::InvalidArgument {
                op: "Call::shared",
                name: "layer",
                expected: "a builder that stands for one layer (share the Dropout apart)".into(),
                found: format!("{} layers", specs.len()),
            });
        }
        let spec = specs.remove(0);
        spec.config.check()?;
        Ok(Shared(Arc::new(Inner {
            spec,
            first: Mutex::new(None),
        })))
    }

    fn id(&self) -> usize {
        Arc::as_ptr(&self.0) as usize
    }

    /// The layer applied to `x`, with the weights of every other call.
    pub fn call(&self, x: &SymbolicTensor) -> Result<SymbolicTensor> {
        self.call_on(&[x])
    }

    /// The layer applied to several tensors (a shared merge). Every call must give the
    /// weights the same shapes (a Dense called on inputs of the same last size): an error
    /// names this call's input shape and the first call's.
    pub fn call_on(&self, xs: &[&SymbolicTensor]) -> Result<SymbolicTensor> {
        let shapes: Vec<Shape> = xs.iter().map(|x| x.shape().to_vec()).collect();
        let weights: Vec<Shape> = match shapes.first() {
            Some(_) => self
                .0
                .spec
                .config
                .weights_n(&shapes)
                .into_iter()
                .map(|w| w.shape)
                .collect(),
            None => Vec::new(),
        };
        let out = apply(
            self.0.spec.clone(),
            xs.iter().map(|&x| x.clone()).collect(),
            Link::CallOf(self.id()),
        )?;
        let mut first = self.0.first.lock().unwrap_or_else(|e| e.into_inner());
        match &*first {
            Some((in0, w0)) if *w0 != weights => {
                let show = |s: &[Shape]| {
                    s.iter()
                        .map(|s| sample_shape(s))
                        .collect::<Vec<_>>()
                        .join(", ")
                };
                return Err(Error::ShapeMismatch {
                    op: self.0.spec.config.class_name(),
                    expected: format!(
                        "an input of shape {} as the shared layer's first call (weights {:?})",
                        show(in0),
                        w0
                    ),
                    found: format!("{} (weights {:?})", show(&shapes), weights),
                });
            }
            Some(_) => {}
            None => *first = Some((shapes, weights)),
        }
        Ok(out)
    }
}

impl Shared {
    /// A Dense using this layer's matrix transposed (tied weights: a GPT's output projection
    /// reading the token embedding, a tied autoencoder's decoder): `y = act(x·Mᵀ)` with `M`
    /// this layer's first weight, (r, c), so it maps size c to size r; no bias. Its calls
    /// come after a call of this layer, on the way from it (the matrix's shape is that
    /// call's). The matrix's gradient is the sum of every use's, on the unfused path.
    ///
    /// ```no_run
    /// use suanli::nn::{Dense, Input, Model, Share};
    /// let dev = suanli::Device::open("auto")?;
    /// let x = Input::new(&[16]);
    /// let enc = Dense::new(4, "tanh").use_bias(false).shared()?;
    /// let h = enc.call(&x)?;
    /// let y = enc.transposed().call(&h)?; // (4) → (16) with the encoder's matrix
    /// let model = Model::functional(&dev, &[&x], &[&y])?;
    /// assert_eq!(model.param_count(), 16 * 4);
    /// # Ok::<(), suanli::Error>(())
    /// ```
    pub fn transposed(&self) -> Transposed {
        Transposed {
            owner: self.clone(),
            activation: "linear".into(),
        }
    }
}

/// A Dense using a shared layer's matrix transposed ([`Shared::transposed`]).
#[derive(Clone, Debug)]
pub struct Transposed {
    owner: Shared,
    activation: String,
}

impl Transposed {
    /// Sets the activation (Keras's name; linear by default).
    pub fn activation(mut self, activation: impl Into<ActivationArg>) -> Self {
        self.activation = activation.into().name();
        self
    }

    /// The projection applied to `x`, whose last size must be the matrix's second.
    pub fn call(&self, x: &SymbolicTensor) -> Result<SymbolicTensor> {
        let class = self.owner.0.spec.config.class_name();
        let matrix = {
            let first = self.owner.0.first.lock().unwrap_or_else(|e| e.into_inner());
            first.as_ref().and_then(|(_, w)| w.first().cloned())
        };
        let (r, c) = match matrix.as_deref() {
            Some(&[r, c]) => (r, c),
            Some(other) => {
                return Err(Error::InvalidArgument {
                    op: "Shared::transposed",
                    name: "layer",
                    expected: "a layer whose first weight is a matrix".into(),
                    found: format!("{class} with a first weight of shape {other:?}"),
                })
            }
            None => return Err(Error::InvalidArgument {
                op: "Shared::transposed",
                name: "layer",
                expected:
                    "a shared layer called before its transpose (the call fixes the matrix's shape)"
                        .into(),
                found: format!("{class} not called yet"),
            }),
        };
        if x.shape().last() != Some(&c) {
            return Err(Error::ShapeMismatch {
                op: "Dense",
                expected: format!(
                    "an input whose last size is {c} (the tied matrix is ({r}, {c}))"
                ),
                found: sample_shape(x.shape()),
            });
        }
        // The owner's name is known once the model names its layers: `append_nodes` sets it.
        let dense = Dense::new(r, self.activation.as_str()).tied_to("(shared)");
        apply(
            LayerSpec::new(dense),
            vec![x.clone()],
            Link::Transposed(self.owner.id()),
        )
    }
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Shared({})", self.0.spec.config.class_name())
    }
}

impl Model {
    /// Appends another call of layer `j` (an earlier entry: the layer's first call or any
    /// later one) reading `reads`, as [`Model::add_node_from`] reads them: an entry with the
    /// layer's name and the *same* weight tensors (Keras's layer object called again; for
    /// bindings that build a graph node by node). `j` not a layer of the model is an
    /// `InvalidArgument`; an input whose shape gives the weights other shapes than the first
    /// call's is a `ShapeMismatch` naming both input shapes. Every entry is one layer, so any
    /// layer type can be called again (a builder of two layers, a Dense with its dropout, is
    /// what [`Share::shared`] refuses).
    pub fn add_call_of(&mut self, j: usize, reads: &[Src]) -> Result<()> {
        let n = self.layers.len();
        if j >= n {
            return Err(Error::InvalidArgument {
                op: "Model::add_call_of",
                name: "layer",
                expected: format!("one of the model's {n} layers (an earlier call of the layer)"),
                found: format!("layer {j}"),
            });
        }
        let first = self.first_call(j);
        let mut spec = self.layers[first].spec.clone();
        spec.input_shape = None;
        self.append_nodes(vec![(
            spec,
            NodeWeights::CallOf(first),
            Some(reads.to_vec()),
        )])
    }

    /// For each layer, the optimizer-order index of each of its parameters: a tensor held by
    /// several layers (the calls of a shared layer) has one index, its first holder's.
    pub(crate) fn param_indices(&self) -> (Vec<Tensor>, Vec<Vec<usize>>) {
        let mut unique: Vec<Tensor> = Vec::new();
        let per = self
            .layers
            .iter()
            .map(|l| {
                l.weights()
                    .params
                    .iter()
                    .map(|p| match unique.iter().position(|u| u.same_buffer(p)) {
                        Some(i) => i,
                        None => {
                            unique.push(p.clone());
                            unique.len() - 1
                        }
                    })
                    .collect()
            })
            .collect();
        (unique, per)
    }

    /// Whether a weight is held by several layers (a layer called more than once): training
    /// then takes the unfused optimizer path.
    pub fn has_shared_weights(&self) -> bool {
        let all: Vec<&Tensor> = self
            .layers
            .iter()
            .flat_map(|l| l.weights().params.iter().chain(&l.weights().state))
            .collect();
        (1..all.len()).any(|i| all[..i].iter().any(|t| t.same_buffer(all[i])))
    }

    /// Whether a layer before `before` holds `t`.
    pub(crate) fn held_before(&self, t: &Tensor, before: usize) -> bool {
        self.layers[..before].iter().any(|l| {
            let w = l.weights();
            w.params.iter().chain(&w.state).any(|u| u.same_buffer(t))
        })
    }

    /// Which call of its layer entry `j` is (0 for the first): the node index of Keras's
    /// `["name", node, 0]` references.
    pub fn call_index(&self, j: usize) -> usize {
        let name = &self.layers[j].spec.name;
        self.layers[..j]
            .iter()
            .filter(|l| l.spec.name == *name)
            .count()
    }

    /// The entry of the first call of the layer entry `j` is a call of (itself if first).
    pub(crate) fn first_call(&self, j: usize) -> usize {
        let name = &self.layers[j].spec.name;
        self.layers
            .iter()
            .position(|l| l.spec.name == *name)
            .unwrap_or(j)
    }

    /// Keras's reference to what `src` refers to: `name[node][0]` (the node: which call of
    /// a shared layer).
    pub(crate) fn src_ref(&self, src: Src) -> String {
        let node = match src {
            Src::Layer(j) => self.call_index(j),
            Src::Input(_) => 0,
        };
        format!("{}[{node}][0]", self.src_name(src))
    }
}
