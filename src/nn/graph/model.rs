//! [`Model`]: a graph of layers with an optimizer and a loss, like Keras's functional `Model`;
//! [`Sequential`] is the same type built as a chain.
//!
//! A model's layers are kept in a topological order: each layer reads the model's input or
//! outputs of earlier layers (its inbound edges, [`Src`]), and the last layer is the model's
//! output. `Sequential::add` appends a layer reading the previous one; the functional API
//! ([`crate::nn::graph::functional`]) adds layers reading any earlier ones. Everything else — the
//! step program, prediction, files, several devices — walks the same graph, so a chain is not
//! a second engine.
//!
//! This file holds the model itself: its state, compiling and the summary. Adding layers is
//! in [`crate::nn::graph::build`], the checks a dataset must pass in
//! [`crate::nn::graph::check`], the graph walk and prediction in [`crate::nn::graph::walk`],
//! training and evaluation in [`crate::nn::train::fit`], saving and loading in
//! [`crate::nn::graph::store`].

use crate::error::{Error, Result};
use crate::memory::MemoryKind;
use crate::nn::layer::{Layer, Position, Src, Weights};
use crate::nn::registry::LayerSpec;
use crate::nn::spec::{keras_shape, Shape};
use crate::nn::train::options::{Loss, Optimizer};
use crate::runtime::Device;
use crate::tensor::Tensor;
use crate::vocab::{Activation, Rule};

/// A layer of a model: its spec (what files and bindings see) and the layer itself, which
/// the entry dereferences to.
pub(crate) struct Entry {
    /// The layer's spec (name, type, configuration; the input shape on the first).
    pub(crate) spec: LayerSpec,
    pub(crate) layer: Box<dyn Layer>,
    /// What it reads, in order: the model's input or earlier layers' outputs.
    pub(crate) inbound: Vec<Src>,
}

impl std::ops::Deref for Entry {
    type Target = dyn Layer;
    fn deref(&self) -> &(dyn Layer + 'static) {
        &*self.layer
    }
}

/// A model: layers in a graph (a chain for [`Sequential`]), trained like Keras's models.
pub struct Model {
    pub(crate) device: Device,
    pub(crate) layers: Vec<Entry>,
    /// The per-sample input shape given before the first layer.
    pub(crate) input: Option<Shape>,
    pub(crate) optimizer: Option<Optimizer>,
    pub(crate) loss: Option<Loss>,
    /// Metrics beyond loss and accuracy ([`Sequential::set_metrics`]): every output's.
    pub(crate) metrics: Vec<crate::nn::train::metric::Metric>,
    /// Each output's own metrics, when set per output ([`Model::set_output_metrics`];
    /// empty: `metrics` for every output).
    pub(crate) output_metrics: Vec<Vec<crate::nn::train::metric::Metric>>,
    /// Optimizer state per parameter (optimizer order), created by the first fit.
    pub(crate) opt_state: Vec<Vec<Tensor>>,
    /// Optimizer steps taken so far (Adam's t).
    pub(crate) step: u64,
    pub(crate) seed: u64,
    /// The model's name (Keras's `Model(name=...)`); `sequential` or `functional` if none.
    pub(crate) name: Option<String>,
    /// The input's name (Keras's `Input(name=...)`).
    pub(crate) input_name: Option<String>,
    /// The inputs after the first (Keras's `Model(inputs=[a, b, ...])`): per-sample shape
    /// and name, read by layers as `Src::Input(1..)`.
    pub(crate) more_inputs: Vec<(Shape, String)>,
    /// The output layers of a model of several outputs, in `Model(outputs=[...])` order
    /// (empty: one output, the last layer; see [`crate::nn::graph::outputs`]).
    pub(crate) outputs: Vec<usize>,
    /// Each output's loss and weight, when compiled with one per output (empty: `loss` for
    /// every output, weight 1).
    pub(crate) output_losses: Vec<(Loss, f32)>,
    /// Which weights weight decay applies to ([`Model::set_weight_decay_filter`]).
    pub(crate) decay: crate::nn::train::decay::DecayFilter,
    /// Batches whose gradients are averaged per optimizer step
    /// ([`Model::set_gradient_accumulation`]; 1: none).
    pub(crate) accumulation: usize,
    /// How the optimizer clips gradients ([`Model::set_gradient_clipping`]).
    pub(crate) clip: crate::nn::train::clip::Clip,
    /// What the layers compute in ([`Model::set_precision_policy`]).
    pub(crate) precision: crate::vocab::Precision,
    /// Whether the loss is scaled ([`Model::set_loss_scaling`]).
    pub(crate) loss_scaling: crate::nn::train::loss_scale::LossScaling,
    /// The loss scale's device state, once training with it has begun (or a checkpoint
    /// restored it).
    pub(crate) loss_scale_state: Option<crate::tensor::Tensor>,
}

/// Keras's `Sequential`: a [`Model`] whose layers form a chain, each reading the one before
/// ([`Model::add`]). Not a second engine: the same type, trained by the same step program.
pub type Sequential = Model;

impl Model {
    /// An empty model on a device.
    pub fn new(device: &Device) -> Sequential {
        Sequential::with_seed(device, 42)
    }

    /// An empty model whose weight initialisation uses `seed`.
    pub fn with_seed(device: &Device, seed: u64) -> Sequential {
        Sequential {
            device: device.clone(),
            layers: Vec::new(),
            input: None,
            optimizer: None,
            loss: None,
            metrics: Vec::new(),
            output_metrics: Vec::new(),
            opt_state: Vec::new(),
            step: 0,
            seed,
            name: None,
            input_name: None,
            more_inputs: Vec::new(),
            outputs: Vec::new(),
            output_losses: Vec::new(),
            decay: Default::default(),
            accumulation: 1,
            clip: crate::nn::train::clip::Clip::default(),
            precision: crate::vocab::Precision::Float32,
            loss_scaling: Default::default(),
            loss_scale_state: None,
        }
    }

    /// The same model with its per-sample input shape set (`&[28, 28, 1]` for MNIST images,
    /// channels last), as `keras.Input(shape=...)` first; the first layer may say it instead.
    pub fn input_shape(mut self, shape: &[usize]) -> Sequential {
        self.input = Some(shape.to_vec());
        self
    }

    /// The device the model lives on.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// The optimizer, once compiled.
    pub fn optimizer(&self) -> Option<Optimizer> {
        self.optimizer
    }

    /// Clips gradients before the optimizer applies them (Keras's `clipnorm`, `clipvalue`,
    /// `global_clipnorm`): training then takes the unfused optimizer path (see
    /// [`crate::nn::Clip`]). Checked; kept by checkpoints.
    pub fn set_gradient_clipping(&mut self, clip: crate::nn::train::clip::Clip) -> Result<()> {
        clip.validate()?;
        self.clip = clip;
        Ok(())
    }

    /// How gradients are clipped.
    pub fn gradient_clipping(&self) -> crate::nn::train::clip::Clip {
        self.clip
    }

    /// The loss, once compiled.
    pub fn loss(&self) -> Option<Loss> {
        self.loss
    }

    /// Optimizer steps taken so far.
    pub fn steps_taken(&self) -> u64 {
        self.step
    }

    /// Number of layers.
    pub fn len(&self) -> usize {
        self.layers.len()
    }

    /// True without layers.
    pub fn is_empty(&self) -> bool {
        self.layers.is_empty()
    }

    /// Each layer's spec (type, name, configuration; the input shape on the first).
    pub fn layer_specs(&self) -> Vec<LayerSpec> {
        self.layers.iter().map(|l| l.spec.clone()).collect()
    }

    /// Every weight in Keras's `get_weights` order (layer by layer: trainable parameters,
    /// then state such as moving statistics; a weight held by several layers, a shared
    /// layer's, once), named `layer/weight` as in the model file, in Keras's layouts (a Dense
    /// kernel (inputs, units), a Conv2D kernel HWIO).
    pub fn weights(&self) -> Vec<(String, Tensor)> {
        let mut out: Vec<(String, Tensor)> = Vec::new();
        for (i, l) in self.layers.iter().enumerate() {
            let layer = l.spec.name.clone().unwrap_or_default();
            let names = l.spec.config.weights_n(&l.io().inputs);
            let w = l.weights();
            for (n, t) in names.into_iter().zip(w.params.iter().chain(&w.state)) {
                if !self.held_before(t, i) {
                    out.push((format!("{layer}/{}", n.name), t.clone()));
                }
            }
        }
        out
    }

    /// Overwrites every weight, in [`Sequential::weights`] order, in place (a model that shares
    /// these layers sees the new values); the count and every length are checked before
    /// anything is written. Optimizer state is kept, as Keras's `set_weights` keeps it.
    pub fn set_weights(&self, values: &[&[f32]]) -> Result<()> {
        let w = self.weights();
        if values.len() != w.len() {
            return Err(Error::ShapeMismatch {
                op: "Sequential::set_weights",
                expected: format!("{} arrays (one per weight)", w.len()),
                found: format!("{} arrays", values.len()),
            });
        }
        for ((name, t), v) in w.iter().zip(values) {
            if v.len() != t.numel() {
                return Err(Error::ShapeMismatch {
                    op: "Sequential::set_weights",
                    expected: format!("{} values for {name} of shape {:?}", t.numel(), t.shape()),
                    found: format!("{} values", v.len()),
                });
            }
            if let Some(bad) = v.iter().find(|x| !x.is_finite()) {
                return Err(Error::InvalidArgument {
                    op: "Sequential::set_weights",
                    name: "weights",
                    expected: format!("finite values for {name}"),
                    found: bad.to_string(),
                });
            }
        }
        for ((_, t), v) in w.iter().zip(values) {
            t.write_slice(v)?;
        }
        Ok(())
    }

    /// Whether each parameter (optimizer order) belongs to a frozen layer.
    pub(crate) fn frozen_params(&self) -> Vec<bool> {
        let (params, per) = self.param_indices();
        let mut frozen = vec![false; params.len()];
        for (l, ix) in self.layers.iter().zip(per) {
            for i in ix {
                frozen[i] |= !l.spec.trainable;
            }
        }
        frozen
    }

    /// Freezes (`false`) or unfreezes layer `index`, as Keras's `layer.trainable = ...`: a
    /// frozen layer's parameters are left as they are by every later `fit` (gradients still
    /// pass through it), and count as non-trainable in the summary. Optimizer state is kept.
    pub fn set_trainable(&mut self, index: usize, trainable: bool) -> Result<()> {
        let n = self.layers.len();
        let l = self
            .layers
            .get_mut(index)
            .ok_or_else(|| Error::InvalidArgument {
                op: "Sequential::set_trainable",
                name: "index",
                expected: format!("a layer index below {n}"),
                found: index.to_string(),
            })?;
        l.spec.trainable = trainable;
        // Every call of a shared layer is the same layer.
        let name = l.spec.name.clone();
        for l in self.layers.iter_mut().filter(|l| l.spec.name == name) {
            l.spec.trainable = trainable;
        }
        Ok(())
    }

    /// Number of trainable parameters.
    pub fn param_count(&self) -> usize {
        self.params().iter().map(|p| p.numel()).sum()
    }

    /// Number of non-trainable values (moving statistics).
    pub fn state_count(&self) -> usize {
        self.state().iter().map(|p| p.numel()).sum()
    }

    /// The per-sample input shape (as the first layer reading the input sees it, or as set
    /// before any layer).
    pub fn expected_input_shape(&self) -> Option<&[usize]> {
        self.layers
            .iter()
            .find_map(|l| {
                l.inbound
                    .iter()
                    .position(|s| *s == Src::Input(0))
                    .map(|k| l.io().inputs[k].as_slice())
            })
            .or(self.input.as_deref())
    }

    /// The per-sample shape of every input, the first's first (see
    /// [`Model::expected_input_shape`]).
    pub fn input_shapes(&self) -> Vec<&[usize]> {
        let first = self.expected_input_shape().unwrap_or(&[]);
        std::iter::once(first)
            .chain(self.more_inputs.iter().map(|(s, _)| s.as_slice()))
            .collect()
    }

    /// The name of every input, the first's first.
    pub fn input_names(&self) -> Vec<String> {
        std::iter::once(self.input_name())
            .chain(self.more_inputs.iter().map(|(_, n)| n.clone()))
            .collect()
    }

    /// Whether the layers form a chain, each reading the one before, whose output is the
    /// last layer's alone (a `Sequential`: what a list of layers can say).
    pub fn is_chain(&self) -> bool {
        self.outputs.is_empty()
            && self.layers.iter().enumerate().all(|(i, l)| {
                l.inbound
                    == [if i == 0 {
                        Src::Input(0)
                    } else {
                        Src::Layer(i - 1)
                    }]
            })
    }

    /// The per-sample output shape of the (first) output.
    pub fn output_shape(&self) -> Option<&[usize]> {
        self.output_layers()
            .first()
            .map(|&j| self.layers[j].io().output.as_slice())
    }

    /// Values per input sample (the input shape's product).
    pub fn input_dim(&self) -> Option<usize> {
        self.expected_input_shape().map(|s| s.iter().product())
    }

    /// Values per output sample (the output shape's product).
    pub fn output_dim(&self) -> Option<usize> {
        self.output_shape().map(|s| s.iter().product())
    }

    /// The layer table, like Keras's `model.summary()`: each layer's name and type, its
    /// output shape with the batch as `None`, and its weight count (moving statistics
    /// included, as Keras counts them).
    pub fn summary(&self) -> String {
        // A graph adds Keras's "Connected to" column and its input row.
        let graph = !self.is_chain();
        let title = self
            .name
            .clone()
            .unwrap_or_else(|| if graph { "functional" } else { "sequential" }.into());
        let mut s = format!("Model: \"{title}\"\n");
        // The first column fits the longest "name (Type)", 34 wide at least (Keras's).
        let col = self
            .layers
            .iter()
            .map(|l| {
                l.spec.name.as_deref().unwrap_or("?").chars().count()
                    + l.spec.config.class_name().len()
                    + 4
            })
            .chain(
                self.input_names()
                    .iter()
                    .filter(|_| graph)
                    .map(|n| n.chars().count() + 14),
            )
            .max()
            .unwrap_or(0)
            .max(34);
        let width = col + 36 + if graph { 30 } else { 0 };
        let line = "─".repeat(width);
        s.push_str(&format!(
            "{line}\n{:<col$}{:<24}{:>12}{}\n{line}\n",
            "Layer (type)",
            "Output Shape",
            "Param #",
            if graph { "  Connected to" } else { "" }
        ));
        if graph {
            for (shape, name) in self.input_shapes().iter().zip(self.input_names()) {
                let name = format!("{name} (InputLayer)");
                s.push_str(&format!(
                    "{name:<col$}{:<24}{:>12}  -\n",
                    keras_shape(shape),
                    0
                ));
            }
        }
        for (i, l) in self.layers.iter().enumerate() {
            if self.first_call(i) != i {
                // A shared layer's later call: its inputs are on the first call's row.
                continue;
            }
            let io = l.io();
            let name = format!(
                "{} ({})",
                l.spec.name.as_deref().unwrap_or("?"),
                l.spec.config.class_name()
            );
            let count: usize = l
                .weights()
                .params
                .iter()
                .chain(&l.weights().state)
                .filter(|t| !self.held_before(t, i))
                .map(|t| t.numel())
                .sum();
            s.push_str(&format!(
                "{name:<col$}{:<24}{count:>12}",
                keras_shape(&io.output)
            ));
            if graph {
                // Keras's form: every call's inputs, `name[node][tensor]`.
                let from: Vec<String> = (i..self.layers.len())
                    .filter(|&j| self.first_call(j) == i)
                    .flat_map(|j| self.layers[j].inbound.iter())
                    .map(|src| self.src_ref(*src))
                    .collect();
                s.push_str(&format!("  {}", from.join(", ")));
            }
            s.push('\n');
        }
        // A frozen layer's parameters count as non-trainable, as Keras counts them.
        let frozen: usize = self
            .params()
            .iter()
            .zip(self.frozen_params())
            .filter(|(_, f)| *f)
            .map(|(t, _)| t.numel())
            .sum();
        let (trainable, state) = (self.param_count() - frozen, self.state_count() + frozen);
        let kb = |n: usize| n as f64 * 4.0 / 1024.0;
        s.push_str(&format!(
            "{line}\nTotal params: {} ({:.2} KB)\nTrainable params: {trainable} ({:.2} KB)\nNon-trainable params: {state} ({:.2} KB)\n",
            trainable + state,
            kb(trainable + state),
            kb(trainable),
            kb(state)
        ));
        s
    }

    /// The name of the model's input (Keras's `Input(name=...)`; `input_layer` by default).
    pub fn input_name(&self) -> String {
        self.input_name
            .clone()
            .unwrap_or_else(|| "input_layer".into())
    }

    /// The name of what `src` refers to: the input's or a layer's.
    pub(crate) fn src_name(&self, src: Src) -> String {
        match src {
            Src::Input(0) => self.input_name(),
            Src::Input(k) => self
                .more_inputs
                .get(k - 1)
                .map_or_else(|| format!("input {k}"), |(_, n)| n.clone()),
            Src::Layer(j) => self.layers[j].spec.name.clone().unwrap_or_default(),
        }
    }

    /// Sets the optimizer and the loss (accuracy is reported for classification losses).
    pub fn compile(&mut self, optimizer: Optimizer, loss: Loss) -> Result<()> {
        optimizer.validate()?;
        if self.layers.is_empty() {
            return Err(Error::InvalidArgument {
                op: "compile",
                name: "model",
                expected: "at least one layer".into(),
                found: "none".into(),
            });
        }
        self.optimizer = Some(optimizer);
        self.loss = Some(loss);
        self.output_losses.clear();
        self.opt_state.clear();
        self.step = 0;
        // A new optimizer starts from the initial loss scale (Keras builds a new
        // LossScaleOptimizer at compile).
        self.loss_scale_state = None;
        Ok(())
    }

    /// Every trainable parameter in optimizer order (each layer's, in order; a tensor
    /// several layers hold, once: see [`Model::param_indices`]).
    pub(crate) fn params(&self) -> Vec<Tensor> {
        self.param_indices().0
    }

    /// Every layer's non-trainable state (moving statistics), in order, each tensor once.
    pub(crate) fn state(&self) -> Vec<Tensor> {
        let mut out: Vec<Tensor> = Vec::new();
        for t in self.layers.iter().flat_map(|l| l.weights().state.iter()) {
            if !out.iter().any(|u| u.same_buffer(t)) {
                out.push(t.clone());
            }
        }
        out
    }

    /// The index of the layer whose activation a loss taking logits folds in: the output
    /// layer, or the layer under the views (Flatten, Reshape) that end the model.
    pub(crate) fn output_layer(&self) -> Option<usize> {
        self.behind_views(*self.output_layers().first()?)
    }

    /// The layer `l` is a view of (itself, when it is no view), whose activation a loss on
    /// `l`'s output folds in; `None` for a view of several.
    pub(crate) fn behind_views(&self, mut l: usize) -> Option<usize> {
        while self.layers[l].is_view() {
            match self.layers[l].inbound.as_slice() {
                [Src::Layer(j)] => l = *j,
                _ => return None,
            }
        }
        Some(l)
    }

    /// The activation of the output layer (the last that is not a view), which a loss taking
    /// logits folds in; `None` without layers.
    pub fn output_activation(&self) -> Option<Activation> {
        self.output_layer().map(|i| self.layers[i].activation())
    }

    /// Where each layer sits: its dropout ordinal, whether its activation is folded into the
    /// loss, and its first parameter's index.
    pub(crate) fn positions(&self) -> Vec<Position> {
        // The layers whose activation a loss folds: each output's, behind its views.
        let folded: Vec<usize> = match self.loss {
            None => Vec::new(),
            Some(_) => self
                .output_layers()
                .iter()
                .zip(self.losses())
                .filter(|(_, l)| l.takes_logits())
                .filter_map(|(&j, _)| self.behind_views(j))
                .collect(),
        };
        let mut k = 0;
        // A shared layer's calls have their first parameter's index (its first holder's).
        let (_, per) = self.param_indices();
        self.layers
            .iter()
            .enumerate()
            .map(|(index, l)| {
                let dropout = l.dropout().map(|_| {
                    k += 1;
                    k - 1
                });
                Position {
                    dropout,
                    folded: folded.contains(&index),
                    first_param: per[index].first().copied().unwrap_or(0),
                }
            })
            .collect()
    }

    /// (values per sample, rate) of each dropout layer, in order: what the dropout slots of a
    /// step read.
    pub(crate) fn dropout_specs(&self) -> Vec<(usize, f32)> {
        self.layers
            .iter()
            .filter_map(|l| l.dropout().map(|r| (l.dropout_values(), r)))
            .collect()
    }

    /// Zeroed optimizer state for every parameter, unless the model already has it (a
    /// continued `fit` or a loaded checkpoint); fresh state restarts the step count.
    pub(crate) fn init_opt_state(&mut self, rule: &Rule) -> Result<()> {
        let params = self.params();
        if self.opt_state.len() == params.len() {
            return Ok(());
        }
        self.opt_state = params
            .iter()
            .map(|p| {
                (0..rule.state_count())
                    .map(|_| {
                        let t = Tensor::zeros(&self.device, &[p.numel()])?;
                        t.set_memory_kind(MemoryKind::OptimizerState);
                        Ok(t)
                    })
                    .collect::<Result<Vec<_>>>()
            })
            .collect::<Result<_>>()?;
        self.step = 0;
        Ok(())
    }

    /// A copy of this model (weights and state, optimizer, loss, optimizer state and step)
    /// on `device`.
    pub fn to_device(&self, device: &Device) -> Result<Sequential> {
        // A tensor several layers hold (a shared layer's) is copied once, and held by all.
        let mut copied: Vec<(Tensor, Tensor)> = Vec::new();
        let mut copy = |t: &Tensor| -> Result<Tensor> {
            if let Some((_, c)) = copied.iter().find(|(o, _)| o.same_buffer(t)) {
                return Ok(c.clone());
            }
            let c = Tensor::from_slice(device, &t.to_vec()?, t.shape())?;
            copied.push((t.clone(), c.clone()));
            Ok(c)
        };
        let mut m = Sequential::with_seed(device, self.seed);
        m.input = self.input.clone();
        m.name = self.name.clone();
        m.input_name = self.input_name.clone();
        m.more_inputs = self.more_inputs.clone();
        m.outputs = self.outputs.clone();
        m.output_losses = self.output_losses.clone();
        m.decay = self.decay.clone();
        m.accumulation = self.accumulation;
        m.clip = self.clip;
        m.precision = self.precision;
        m.loss_scaling = self.loss_scaling;
        for l in &self.layers {
            let w = Weights {
                params: l
                    .weights()
                    .params
                    .iter()
                    .map(&mut copy)
                    .collect::<Result<_>>()?,
                state: l
                    .weights()
                    .state
                    .iter()
                    .map(&mut copy)
                    .collect::<Result<_>>()?,
            };
            m.push_with_weights(l.spec.clone(), w, l.inbound.clone())?;
        }
        m.optimizer = self.optimizer;
        m.loss = self.loss;
        m.metrics = self.metrics.clone();
        m.output_metrics = self.output_metrics.clone();
        m.opt_state = self
            .opt_state
            .iter()
            .map(|st| {
                st.iter()
                    .map(|t| {
                        let c = Tensor::from_slice(device, &t.to_vec()?, t.shape())?;
                        c.set_memory_kind(MemoryKind::OptimizerState);
                        Ok(c)
                    })
                    .collect::<Result<Vec<_>>>()
            })
            .collect::<Result<_>>()?;
        m.step = self.step;
        if let Some(at) = self.loss_scale_state()? {
            m.restore_loss_scale(&at)?;
        }
        Ok(m)
    }
}
