//! Saving and loading models and training checkpoints as safetensors files.
//!
//! A model file holds every layer's weights as `{layer name}.{weight name}` (`conv2d.kernel`,
//! `dense_1.bias`, `batch_normalization.moving_mean`: trainable parameters and state alike)
//! and the architecture as JSON in the metadata under `"architecture"`: the list of layer
//! specs in Keras's form ([`crate::nn::LayerSpec::to_json`]). Layouts are Keras's:
//! dense kernels (inputs, units), convolution kernels (height, width, in channels, out
//! channels) — see docs/ARCHITECTURE.md for reading them from PyTorch.
//!
//! A checkpoint is the same file (so [`Sequential::load`] reads its weights too) with, in
//! addition, the optimizer's state tensors of every trainable parameter
//! (`{tensor}.opt{s}`: Adam's moments, SGD's velocity…) and a `"training"` entry: a
//! [`Checkpoint`] (completed epochs, optimizer steps, seed, optimizer, loss and history).
//! The shuffle of epoch `e` is a pure function of (seed, e) and dropout masks of (seed,
//! step), so that is the whole random state: resuming replays exactly the kernels an
//! uninterrupted run would have run, and on the same device the weights come out
//! bit-identical (tested), moving statistics included. Files are written atomically.
//!
//! Everything read is validated on the host ([`crate::nn::graph::weights_file`]) before the device
//! sees a byte.

use std::collections::HashMap;
use std::path::Path;

use crate::error::{Error, Result};
use crate::memory::MemoryKind;
use crate::nn::graph::build::tied_weights;
use crate::nn::graph::graph_config;
use crate::nn::graph::model::Sequential;
use crate::nn::graph::weights_file::{
    parse_model_file, ModelFile, CHECKPOINT_FORMAT, MODEL_FORMAT,
};
use crate::nn::layer::{Src, Weights};
use crate::nn::train::options::{Checkpoint, History, Loss};
use crate::runtime::Device;
use crate::tensor::Tensor;

/// A tensor to write: name, shape, little-endian f32 bytes.
type NamedTensor = (String, Vec<usize>, Vec<u8>);

/// The checkpoint format before layer specs (still read).
const CHECKPOINT_FORMAT_V1: &str = "suanli-checkpoint-v1";

/// Writes f32 tensors and metadata as a safetensors file, atomically.
fn write_safetensors(
    path: &Path,
    op: &'static str,
    owned: &[NamedTensor],
    meta: HashMap<String, String>,
) -> Result<()> {
    let mut views = Vec::new();
    for (name, shape, bytes) in owned {
        let v = safetensors::tensor::TensorView::new(safetensors::Dtype::F32, shape.clone(), bytes)
            .map_err(|e| Error::Internal {
                op,
                message: format!("tensor view of {name}: {e}"),
            })?;
        views.push((name.clone(), v));
    }
    let bytes =
        safetensors::tensor::serialize(views, Some(meta)).map_err(|e| Error::Serialize {
            op,
            what: "the safetensors file",
            message: e.to_string(),
        })?;
    crate::io::write_atomic(path, &bytes)
}

impl Sequential {
    /// Every weight as `(name, shape, little-endian f32 bytes)` (each layer's parameters,
    /// then its state), and the architecture JSON.
    fn weight_tensors(&self) -> Result<(Vec<NamedTensor>, serde_json::Value)> {
        let mut owned: Vec<NamedTensor> = Vec::new();
        for (i, l) in self.layers.iter().enumerate() {
            let name = l.spec.name.as_deref().unwrap_or("layer");
            let specs = l.spec.config.weights_n(&l.io().inputs);
            let w = l.weights();
            for (ws, t) in specs.iter().zip(w.params.iter().chain(&w.state)) {
                // A weight several layers hold (a shared layer's calls) is stored once.
                if self.held_before(t, i) {
                    continue;
                }
                owned.push((
                    format!("{name}.{}", ws.name),
                    t.shape().to_vec(),
                    bytemuck::cast_slice(&t.to_vec()?).to_vec(),
                ));
            }
        }
        Ok((owned, self.architecture()))
    }

    /// The architecture as the model file stores it: a chain as the list of its layer specs
    /// (Keras's `Sequential` form, readable by every earlier version), a graph as Keras's
    /// functional config ([`crate::nn::graph::graph_config`]).
    pub fn architecture(&self) -> serde_json::Value {
        if self.is_chain() {
            return self.layers.iter().map(|l| l.spec.to_json()).collect();
        }
        let layers: Vec<(crate::nn::registry::LayerSpec, Vec<Src>)> = self
            .layers
            .iter()
            .map(|l| (l.spec.clone(), l.inbound.clone()))
            .collect();
        let inputs: Vec<(String, crate::nn::spec::Shape)> = self
            .input_names()
            .into_iter()
            .zip(self.input_shapes().into_iter().map(<[usize]>::to_vec))
            .collect();
        graph_config::write(
            self.name.as_deref().unwrap_or("functional"),
            &inputs,
            &layers,
            &self.outputs,
        )
    }

    /// Saves the weights and the architecture in the safetensors format, atomically (see the
    /// module docs).
    pub fn save(&self, path: &Path) -> Result<()> {
        let (owned, arch) = self.weight_tensors()?;
        let meta = HashMap::from([
            ("format".to_string(), MODEL_FORMAT.to_string()),
            ("architecture".to_string(), arch.to_string()),
        ]);
        write_safetensors(path, "save", &owned, meta)
    }

    /// Loads a model written by [`Sequential::save`] (or a checkpoint, for its weights) onto
    /// `device`; every tensor's presence, dtype and shape is checked against the
    /// architecture.
    pub fn load(device: &Device, path: &Path) -> Result<Sequential> {
        let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
        Ok(Sequential::from_file(device, &parse_model_file(path, &bytes)?)?.0)
    }

    /// The model of a parsed file, and the file's metadata.
    fn from_file(
        device: &Device,
        file: &ModelFile,
    ) -> Result<(Sequential, HashMap<String, String>)> {
        let mut model = Sequential::new(device);
        if let Some(g) = &file.graph {
            model.set_graph_inputs(g.name.clone(), &g.inputs);
        }
        for rec in &file.layers {
            if let Some(first) = model.layers.iter().find(|l| l.spec.name == rec.spec.name) {
                // Another call of a shared layer: the first call's tensors.
                let w = first.weights().clone();
                model.push_with_weights(rec.spec.clone(), w, rec.inbound.clone())?;
                continue;
            }
            if let Some(w) = tied_weights(model.layers.iter(), &rec.spec, &rec.input)? {
                // A Dense using an earlier layer's matrix: that tensor.
                model.push_with_weights(rec.spec.clone(), w, rec.inbound.clone())?;
                continue;
            }
            let mut w = Weights::default();
            for (ws, values) in &rec.weights {
                let t = Tensor::from_slice(device, values, &ws.shape)?;
                if ws.trainable {
                    w.params.push(t);
                } else {
                    w.state.push(t);
                }
            }
            model.push_with_weights(rec.spec.clone(), w, rec.inbound.clone())?;
        }
        if let Some(g) = &file.graph {
            model.set_outputs(g.outputs.clone())?;
        }
        Ok((model, file.metadata.clone()))
    }

    /// Writes a checkpoint after `epoch` completed epochs of a run with seed `seed`: weights
    /// and state, optimizer state, step count and `history`, atomically. The model must be
    /// compiled.
    pub fn save_checkpoint(
        &self,
        path: &Path,
        epoch: usize,
        seed: u64,
        history: &History,
    ) -> Result<()> {
        let (Some(optimizer), Some(loss)) = (self.optimizer, self.loss) else {
            return Err(Error::InvalidArgument {
                op: "save_checkpoint",
                name: "model",
                expected: "a compiled model".into(),
                found: "not compiled".into(),
            });
        };
        let (mut owned, arch) = self.weight_tensors()?;
        // Optimizer state exists once fit has run; before that a checkpoint holds none.
        let trainable = self.trainable_names();
        for ((name, shape), states) in trainable.iter().zip(&self.opt_state) {
            for (s, t) in states.iter().enumerate() {
                owned.push((
                    format!("{name}.opt{s}"),
                    shape.clone(),
                    bytemuck::cast_slice(&t.to_vec()?).to_vec(),
                ));
            }
        }
        let training = Checkpoint {
            epoch,
            seed,
            step: self.step,
            optimizer,
            loss,
            history: history.clone(),
            clip: self.clip,
            output_losses: self.output_losses.clone(),
            decay: self.decay.clone(),
            accumulation: self.accumulation,
            precision: self.precision,
            loss_scaling: self.loss_scaling,
            loss_scale_state: self.loss_scale_state()?,
        };
        let training = serde_json::to_string(&training).map_err(|e| Error::Serialize {
            op: "save_checkpoint",
            what: "the training state",
            message: e.to_string(),
        })?;
        let meta = HashMap::from([
            ("format".to_string(), CHECKPOINT_FORMAT.to_string()),
            ("architecture".to_string(), arch.to_string()),
            ("training".to_string(), training),
        ]);
        write_safetensors(path, "save_checkpoint", &owned, meta)
    }

    /// The file names and shapes of the trainable parameters, in optimizer order.
    pub(crate) fn trainable_names(&self) -> Vec<(String, Vec<usize>)> {
        let mut out = Vec::new();
        for (i, l) in self.layers.iter().enumerate() {
            let name = l.spec.name.as_deref().unwrap_or("layer");
            let specs = l.spec.config.weights_n(&l.io().inputs);
            for (ws, t) in specs
                .iter()
                .filter(|w| w.trainable)
                .zip(&l.weights().params)
            {
                // In optimizer order: a parameter several layers hold, once.
                if !self.held_before(t, i) {
                    out.push((format!("{name}.{}", ws.name), ws.shape.clone()));
                }
            }
        }
        out
    }

    /// Loads a checkpoint written by [`Sequential::save_checkpoint`] (or by `fit` with
    /// [`crate::nn::FitOptions::checkpoint`]): the compiled model with its optimizer state,
    /// and where training stood. Continue with `fit` and [`crate::nn::FitOptions::resume`].
    /// Every tensor's presence, dtype and shape is checked.
    pub fn load_checkpoint(device: &Device, path: &Path) -> Result<(Sequential, Checkpoint)> {
        let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
        let bad = |expected: String, found: String| Error::Malformed {
            path: path.to_path_buf(),
            format: "safetensors",
            expected,
            found,
        };
        let file = parse_model_file(path, &bytes)?;
        let (mut model, meta) = Sequential::from_file(device, &file)?;
        let format = meta.get("format").map(String::as_str);
        if format != Some(CHECKPOINT_FORMAT) && format != Some(CHECKPOINT_FORMAT_V1) {
            return Err(bad(
                format!("format {CHECKPOINT_FORMAT:?} (a checkpoint, not plain weights)"),
                format!("{:?}", meta.get("format")),
            ));
        }
        let training = meta
            .get("training")
            .ok_or_else(|| bad("a \"training\" metadata entry".into(), "none".into()))?;
        let ck: Checkpoint = serde_json::from_str(training)
            .map_err(|e| bad("training state JSON".into(), e.to_string()))?;
        if ck.output_losses.is_empty() {
            model.compile(ck.optimizer, ck.loss)?;
        } else {
            let (losses, weights): (Vec<Loss>, Vec<f32>) = ck.output_losses.iter().copied().unzip();
            model.compile_outputs(ck.optimizer, &losses, &weights)?;
        }
        model.set_gradient_clipping(ck.clip)?;
        model.set_weight_decay_filter(ck.decay.clone())?;
        model.set_gradient_accumulation(ck.accumulation)?;
        model.set_precision_policy(ck.precision);
        model.set_loss_scaling(ck.loss_scaling)?;
        if let Some(at) = &ck.loss_scale_state {
            // A scale the device would never hold (an edited file): 1 / scale must be finite.
            if !(at.scale >= 1.0 && at.scale <= crate::nn::train::loss_scale::MAX_SCALE) {
                return Err(Error::Malformed {
                    path: path.to_path_buf(),
                    format: "checkpoint",
                    expected: "a loss scale in [1, 2^64]".into(),
                    found: at.scale.to_string(),
                });
            }
            model.restore_loss_scale(at)?;
        }
        let st = safetensors::SafeTensors::deserialize(&bytes)
            .map_err(|e| bad("a safetensors file".into(), e.to_string()))?;
        let states = ck.optimizer.rule(ck.optimizer.lr()).state_count();
        if st.names().iter().any(|n| n.contains(".opt")) {
            let names = model.trainable_names();
            let mut all = Vec::with_capacity(names.len());
            for (name, shape) in &names {
                let mut per = Vec::with_capacity(states);
                for s in 0..states {
                    let key = format!("{name}.opt{s}");
                    let t = st
                        .tensor(&key)
                        .map_err(|_| bad(format!("optimizer state {key:?}"), "none".into()))?;
                    if t.dtype() != safetensors::Dtype::F32 || t.shape() != shape.as_slice() {
                        return Err(bad(
                            format!("{key} as F32 {shape:?}"),
                            format!("{:?} {:?}", t.dtype(), t.shape()),
                        ));
                    }
                    let v: Vec<f32> = bytemuck::pod_collect_to_vec(t.data());
                    let t = Tensor::from_slice(device, &v, &[v.len()])?;
                    t.set_memory_kind(MemoryKind::OptimizerState);
                    per.push(t);
                }
                all.push(per);
            }
            model.opt_state = all;
        }
        model.step = ck.step;
        Ok((model, ck))
    }
}
