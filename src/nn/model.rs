//! [`Sequential`]: layers, compile, fit, evaluate, predict, summary, save and load.

use std::collections::HashMap;
use std::path::Path;

use crate::data::Dataset;
use crate::kernels::optim::Rule;
use crate::memory::MemoryKind;
use crate::nn::layers::{Dense, DenseBuilder, LayerActivation};
use crate::nn::train;
use crate::random::Rng;
use crate::{Device, Error, Result, Tensor};

/// An optimizer with Keras's default hyper-parameters unless set.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum Optimizer {
    /// SGD (Keras defaults: lr 0.01, no momentum).
    Sgd {
        /// Learning rate.
        lr: f64,
        /// Momentum.
        momentum: f64,
        /// Nesterov momentum.
        nesterov: bool,
    },
    /// Adam (Keras defaults: lr 1e-3, β1 0.9, β2 0.999, ε 1e-7).
    Adam {
        /// Learning rate.
        lr: f64,
        /// β1.
        beta1: f64,
        /// β2.
        beta2: f64,
        /// ε.
        eps: f64,
    },
    /// AdamW (Keras defaults: lr 1e-3, weight decay 0.004).
    AdamW {
        /// Learning rate.
        lr: f64,
        /// Decoupled weight decay.
        weight_decay: f64,
    },
    /// RMSprop (Keras defaults: lr 1e-3, ρ 0.9, ε 1e-7).
    RmsProp {
        /// Learning rate.
        lr: f64,
        /// ρ.
        rho: f64,
    },
}

impl Optimizer {
    /// Adam with Keras's defaults.
    pub fn adam() -> Optimizer {
        Optimizer::Adam {
            lr: 1e-3,
            beta1: 0.9,
            beta2: 0.999,
            eps: 1e-7,
        }
    }

    /// SGD with a learning rate, no momentum.
    pub fn sgd(lr: f64) -> Optimizer {
        Optimizer::Sgd {
            lr,
            momentum: 0.0,
            nesterov: false,
        }
    }

    /// The learning rate.
    pub fn lr(&self) -> f64 {
        match *self {
            Optimizer::Sgd { lr, .. }
            | Optimizer::Adam { lr, .. }
            | Optimizer::AdamW { lr, .. }
            | Optimizer::RmsProp { lr, .. } => lr,
        }
    }

    /// The kernel update rule at learning rate `lr`.
    pub(crate) fn rule(&self, lr: f64) -> Rule {
        match *self {
            Optimizer::Sgd {
                momentum, nesterov, ..
            } => Rule::Sgd {
                lr,
                momentum,
                nesterov,
                weight_decay: 0.0,
            },
            Optimizer::Adam {
                beta1, beta2, eps, ..
            } => Rule::Adam {
                lr,
                beta1,
                beta2,
                eps,
                weight_decay: 0.0,
                decoupled: false,
            },
            Optimizer::AdamW { weight_decay, .. } => Rule::Adam {
                lr,
                beta1: 0.9,
                beta2: 0.999,
                eps: 1e-7,
                weight_decay,
                decoupled: true,
            },
            Optimizer::RmsProp { rho, .. } => Rule::RmsProp {
                lr,
                rho,
                eps: 1e-7,
                weight_decay: 0.0,
            },
        }
    }

    fn validate(&self) -> Result<()> {
        let bad = |name: &'static str, expected: &str, v: f64| Error::InvalidArgument {
            op: "compile",
            name,
            expected: expected.into(),
            found: v.to_string(),
        };
        let lr = self.lr();
        if !(lr > 0.0 && lr.is_finite()) {
            return Err(bad("learning rate", "a finite value > 0", lr));
        }
        match *self {
            Optimizer::Sgd { momentum, .. } if !(0.0..1.0).contains(&momentum) => {
                Err(bad("momentum", "in [0, 1)", momentum))
            }
            Optimizer::Adam { beta1, .. } if !(0.0..1.0).contains(&beta1) => {
                Err(bad("beta1", "in [0, 1)", beta1))
            }
            Optimizer::Adam { beta2, .. } if !(0.0..1.0).contains(&beta2) => {
                Err(bad("beta2", "in [0, 1)", beta2))
            }
            Optimizer::RmsProp { rho, .. } if !(0.0..1.0).contains(&rho) => {
                Err(bad("rho", "in [0, 1)", rho))
            }
            _ => Ok(()),
        }
    }
}

/// A loss function. Cross-entropies are computed from the logits in one fused, numerically
/// stable kernel: with a softmax (sigmoid for binary) last layer the model outputs
/// probabilities as in Keras, with a linear one it outputs logits (Keras's `from_logits`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Loss {
    /// Cross-entropy on integer class labels; last layer softmax or linear.
    SparseCategoricalCrossentropy,
    /// Cross-entropy on one-hot (or probability) target rows; last layer softmax or linear.
    CategoricalCrossentropy,
    /// Per-output binary cross-entropy on 0/1 (or probability) targets; last layer sigmoid or
    /// linear. Accuracy is the fraction of outputs on the right side of 0.5.
    BinaryCrossentropy,
    /// Mean squared error; last layer linear, relu, leaky relu, sigmoid or tanh. No accuracy.
    MeanSquaredError,
}

impl Loss {
    /// Whether the last layer is evaluated as logits (its activation folded into the loss).
    pub(crate) fn takes_logits(self) -> bool {
        !matches!(self, Loss::MeanSquaredError)
    }
}

/// Stops training when the monitored validation loss (training loss without validation
/// data) has not improved by `min_delta` for `patience` epochs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct EarlyStopping {
    /// Epochs without improvement before stopping.
    pub patience: usize,
    /// Smallest decrease that counts as an improvement.
    pub min_delta: f64,
}

/// An end-of-epoch callback: epoch (0-based) and history so far; return false to stop.
pub type EpochCallback<'a> = &'a mut dyn FnMut(usize, &History) -> bool;

/// Options of [`Sequential::fit`], with Keras's defaults.
pub struct FitOptions<'a> {
    /// Epochs (default 1).
    pub epochs: usize,
    /// Batch size (default 32).
    pub batch_size: usize,
    /// Shuffle every epoch (default true).
    pub shuffle: bool,
    /// Seed of the shuffle (default 0).
    pub seed: u64,
    /// Evaluated at the end of every epoch.
    pub validation_data: Option<&'a Dataset>,
    /// Without `validation_data`: hold out this last fraction of the rows (taken before
    /// shuffling, as Keras does) and evaluate on it every epoch (default 0).
    pub validation_split: f64,
    /// Progress bar and a line per epoch (default true).
    pub verbose: bool,
    /// Learning rate per epoch (0-based), replacing the optimizer's.
    pub lr_schedule: Option<&'a dyn Fn(usize) -> f64>,
    /// Early stopping.
    pub early_stopping: Option<EarlyStopping>,
    /// Writes a checkpoint here (atomically) at the end of every epoch: weights, optimizer
    /// state, epoch, seed and history ([`Sequential::save_checkpoint`]).
    pub checkpoint: Option<&'a Path>,
    /// Continue a run from a checkpoint ([`Sequential::load_checkpoint`]): training starts
    /// at epoch `checkpoint.epoch` (so `epochs` is the total, as Keras's `initial_epoch`), with
    /// the checkpoint's seed, and the returned history includes the earlier epochs.
    pub resume: Option<&'a crate::nn::Checkpoint>,
    /// Called after every epoch with the epoch (0-based) and the history so far; return
    /// false to stop.
    pub on_epoch_end: Option<EpochCallback<'a>>,
}

impl Default for FitOptions<'_> {
    fn default() -> Self {
        FitOptions {
            epochs: 1,
            batch_size: 32,
            shuffle: true,
            seed: 0,
            validation_data: None,
            validation_split: 0.0,
            verbose: true,
            lr_schedule: None,
            early_stopping: None,
            checkpoint: None,
            resume: None,
            on_epoch_end: None,
        }
    }
}

/// Per-epoch results of [`Sequential::fit`].
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct History {
    /// Mean training loss per epoch.
    pub loss: Vec<f64>,
    /// Training accuracy per epoch (NaN for mean squared error).
    pub accuracy: Vec<f64>,
    /// Validation loss per epoch (with validation data).
    pub val_loss: Vec<f64>,
    /// Validation accuracy per epoch.
    pub val_accuracy: Vec<f64>,
    /// Wall-clock seconds of each epoch's training (validation excluded).
    pub epoch_seconds: Vec<f64>,
    /// Fraction of each epoch's training time the device's queue was busy
    /// ([`crate::Device::utilisation_window`]).
    pub utilisation: Vec<f64>,
}

pub(crate) struct Layer {
    pub(crate) cfg: Dense,
    pub(crate) in_dim: usize,
    pub(crate) w: Tensor,
    pub(crate) b: Option<Tensor>,
}

impl Layer {
    /// Tags the weights as parameters (memory breakdown).
    pub(crate) fn tag(&self) {
        self.w.set_memory_kind(MemoryKind::Parameters);
        if let Some(b) = &self.b {
            b.set_memory_kind(MemoryKind::Parameters);
        }
    }
}

/// A stack of layers, trained like Keras's `Sequential`.
pub struct Sequential {
    pub(crate) device: Device,
    pub(crate) layers: Vec<Layer>,
    pub(crate) optimizer: Option<Optimizer>,
    pub(crate) loss: Option<Loss>,
    /// Optimizer state per parameter, created by the first fit.
    pub(crate) opt_state: Vec<Vec<Tensor>>,
    /// Optimizer steps taken so far (Adam's t).
    pub(crate) step: u64,
    pub(crate) seed: u64,
}

impl Sequential {
    /// An empty model on a device.
    pub fn new(device: &Device) -> Sequential {
        Sequential::with_seed(device, 42)
    }

    /// An empty model whose weight initialisation uses `seed`.
    pub fn with_seed(device: &Device, seed: u64) -> Sequential {
        Sequential {
            device: device.clone(),
            layers: Vec::new(),
            optimizer: None,
            loss: None,
            opt_state: Vec::new(),
            step: 0,
            seed,
        }
    }

    /// The device the model lives on.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// Appends a layer, initialising its weights.
    pub fn add(&mut self, layer: impl Into<DenseBuilder>) -> Result<()> {
        let cfg = layer.into().build()?;
        let in_dim = match (self.layers.last(), cfg.input_dim) {
            (None, Some(d)) => d,
            (None, None) => {
                return Err(Error::InvalidArgument {
                    op: "Sequential::add",
                    name: "input_dim",
                    expected: "an input size on the first layer (Dense::new(..).input_dim(n))"
                        .into(),
                    found: "none".into(),
                })
            }
            (Some(prev), Some(d)) if d != prev.cfg.units => {
                return Err(Error::ShapeMismatch {
                    op: "Sequential::add",
                    expected: format!("input_dim {} (the previous layer's units)", prev.cfg.units),
                    found: d.to_string(),
                })
            }
            (Some(prev), _) => prev.cfg.units,
        };
        if let Some(prev) = self.layers.last() {
            if prev.cfg.activation == LayerActivation::Softmax {
                return Err(Error::InvalidArgument {
                    op: "Sequential::add",
                    name: "layer",
                    expected: "softmax only on the last layer".into(),
                    found: format!("a layer after softmax layer {}", self.layers.len() - 1),
                });
            }
        }
        let mut rng = Rng::new(self.seed.wrapping_add(self.layers.len() as u64 * 0x9E37));
        let w = cfg.initializer.sample(in_dim, cfg.units, &mut rng);
        let w = Tensor::from_slice(&self.device, &w, &[in_dim, cfg.units])?;
        let b = if cfg.use_bias {
            Some(Tensor::zeros(&self.device, &[cfg.units])?)
        } else {
            None
        };
        let layer = Layer { cfg, in_dim, w, b };
        layer.tag();
        self.layers.push(layer);
        self.opt_state.clear();
        self.step = 0;
        Ok(())
    }

    /// Number of trainable parameters.
    pub fn param_count(&self) -> usize {
        self.layers
            .iter()
            .map(|l| l.in_dim * l.cfg.units + if l.b.is_some() { l.cfg.units } else { 0 })
            .sum()
    }

    /// Input features of the first layer.
    pub fn input_dim(&self) -> Option<usize> {
        self.layers.first().map(|l| l.in_dim)
    }

    /// Outputs of the last layer.
    pub fn output_dim(&self) -> Option<usize> {
        self.layers.last().map(|l| l.cfg.units)
    }

    /// The layer table, like Keras's `model.summary()`.
    pub fn summary(&self) -> String {
        let mut s = String::from("Model: \"sequential\"\n");
        let line = "─".repeat(66);
        s.push_str(&format!(
            "{line}\n{:<28}{:<22}{:>16}\n{line}\n",
            "Layer (type)", "Output Shape", "Param #"
        ));
        for (i, l) in self.layers.iter().enumerate() {
            let p = l.in_dim * l.cfg.units + if l.b.is_some() { l.cfg.units } else { 0 };
            s.push_str(&format!(
                "{:<28}{:<22}{:>16}\n",
                format!("dense_{i} (Dense, {})", l.cfg.activation),
                format!("(None, {})", l.cfg.units),
                p
            ));
            if l.cfg.dropout > 0.0 {
                s.push_str(&format!(
                    "{:<28}{:<22}{:>16}\n",
                    format!("dropout_{i} (Dropout, {})", l.cfg.dropout),
                    format!("(None, {})", l.cfg.units),
                    0
                ));
            }
        }
        let total = self.param_count();
        s.push_str(&format!(
            "{line}\nTotal params: {total} ({:.2} KB)\nTrainable params: {total}\n",
            total as f64 * 4.0 / 1024.0
        ));
        s
    }

    /// Sets the optimizer and the loss. Accuracy and loss are always reported.
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
        self.opt_state.clear();
        self.step = 0;
        Ok(())
    }

    pub(crate) fn check_dataset(&self, op: &'static str, data: &Dataset) -> Result<()> {
        if !data.device.same_as(&self.device) {
            return Err(Error::DeviceMismatch {
                op,
                expected: format!("{:?}", self.device),
                found: format!("{:?}", data.device),
            });
        }
        let (Some(i), Some(o), Some(last)) =
            (self.input_dim(), self.output_dim(), self.layers.last())
        else {
            return Err(Error::InvalidArgument {
                op,
                name: "model",
                expected: "at least one layer".into(),
                found: "none".into(),
            });
        };
        if data.row_len != i {
            return Err(Error::ShapeMismatch {
                op,
                expected: format!("{i} features per sample"),
                found: data.row_len.to_string(),
            });
        }
        let loss = self.loss.unwrap_or(Loss::SparseCategoricalCrossentropy);
        let act = last.cfg.activation;
        let act_ok = match loss {
            Loss::SparseCategoricalCrossentropy | Loss::CategoricalCrossentropy => {
                matches!(act, LayerActivation::Softmax | LayerActivation::Linear)
            }
            Loss::BinaryCrossentropy => {
                matches!(act, LayerActivation::Sigmoid | LayerActivation::Linear)
            }
            Loss::MeanSquaredError => {
                act != LayerActivation::Softmax
                    && crate::kernels::elementwise::derivative_from_output(act.elementwise())
            }
        };
        if !act_ok {
            return Err(Error::InvalidArgument {
                op,
                name: "last layer activation",
                expected: match loss {
                    Loss::SparseCategoricalCrossentropy | Loss::CategoricalCrossentropy => {
                        "softmax or linear (logits) for a categorical cross-entropy"
                    }
                    Loss::BinaryCrossentropy => {
                        "sigmoid or linear (logits) for binary cross-entropy"
                    }
                    Loss::MeanSquaredError => {
                        "linear, relu, leaky_relu, sigmoid or tanh for mean squared error"
                    }
                }
                .into(),
                found: act.to_string(),
            });
        }
        if loss == Loss::SparseCategoricalCrossentropy {
            if !data.sparse {
                return Err(Error::InvalidArgument {
                    op,
                    name: "targets",
                    expected: "class labels for sparse categorical cross-entropy".into(),
                    found: format!("dense target rows of {}", data.target_len),
                });
            }
            if data.max_label as usize >= o {
                return Err(Error::InvalidArgument {
                    op,
                    name: "labels",
                    expected: format!("class indices below the model's {o} outputs"),
                    found: format!("a label of {}", data.max_label),
                });
            }
        } else if data.sparse || data.target_len != o {
            return Err(Error::ShapeMismatch {
                op,
                expected: format!(
                    "dense target rows of {o} values (the model's outputs) for {loss:?}"
                ),
                found: if data.sparse {
                    "class labels".to_string()
                } else {
                    format!("rows of {}", data.target_len)
                },
            });
        }
        Ok(())
    }

    /// Trains on `data`; see [`FitOptions`]. Everything runs on the device: batches are
    /// gathered there, many steps go in one submission, and loss/accuracy are accumulated on
    /// the device and read only for the progress display and at the end of each epoch.
    pub fn fit(&mut self, data: &Dataset, options: FitOptions<'_>) -> Result<History> {
        train::fit(self, data, options)
    }

    /// Mean loss and accuracy on `data`, in batches of `batch_size` (accuracy is NaN for mean
    /// squared error).
    pub fn evaluate(&self, data: &Dataset, batch_size: usize) -> Result<(f64, f64)> {
        train::evaluate(self, data, batch_size)
    }

    /// Outputs (probabilities for a softmax model) for `x` of shape (samples, features).
    pub fn predict(&self, x: &Tensor) -> Result<Tensor> {
        x.check_device(&self.device, "predict")?;
        let want = self.input_dim().unwrap_or(0);
        match x.shape() {
            [_, f] if *f == want => {}
            s => {
                return Err(Error::ShapeMismatch {
                    op: "predict",
                    expected: format!("(samples, {want})"),
                    found: format!("{s:?}"),
                })
            }
        }
        let mut h = x.clone();
        for l in &self.layers {
            let act = l.cfg.activation.elementwise();
            let fused = crate::kernels::elementwise::derivative_from_output(act)
                || act == crate::Activation::Linear;
            h = if fused {
                h.linear(&l.w, l.b.as_ref(), act)?
            } else {
                h.linear(&l.w, l.b.as_ref(), crate::Activation::Linear)?
                    .activation(act)?
            };
            if l.cfg.activation == LayerActivation::Softmax {
                h = h.softmax(1)?;
            }
        }
        Ok(h)
    }

    /// The most likely class of each sample.
    pub fn predict_classes(&self, x: &Tensor) -> Result<Vec<usize>> {
        Ok(self
            .predict(x)?
            .argmax_rows()?
            .to_vec()?
            .into_iter()
            .map(|v| v as usize)
            .collect())
    }

    /// Saves the weights and the architecture in the safetensors format, atomically: tensors
    /// `dense_{i}.kernel` (inputs, units) and `dense_{i}.bias`, the architecture as JSON in the
    /// metadata under `"architecture"`.
    pub fn save(&self, path: &Path) -> Result<()> {
        let (owned, arch) = self.weight_tensors()?;
        let meta = HashMap::from([
            ("format".to_string(), "suanli-sequential-v1".to_string()),
            (
                "architecture".to_string(),
                serde_json::Value::Array(arch).to_string(),
            ),
        ]);
        write_safetensors(path, "save", &owned, meta)
    }

    /// The weights as `(name, shape, little-endian f32 bytes)` and the architecture JSON.
    pub(crate) fn weight_tensors(&self) -> Result<(Vec<NamedTensor>, Vec<serde_json::Value>)> {
        let mut owned: Vec<NamedTensor> = Vec::new();
        let mut arch = Vec::new();
        for (i, l) in self.layers.iter().enumerate() {
            owned.push((
                format!("dense_{i}.kernel"),
                vec![l.in_dim, l.cfg.units],
                bytemuck::cast_slice(&l.w.to_vec()?).to_vec(),
            ));
            if let Some(b) = &l.b {
                owned.push((
                    format!("dense_{i}.bias"),
                    vec![l.cfg.units],
                    bytemuck::cast_slice(&b.to_vec()?).to_vec(),
                ));
            }
            arch.push(serde_json::json!({
                "units": l.cfg.units,
                "activation": l.cfg.activation.to_string(),
                "use_bias": l.cfg.use_bias,
                "input_dim": l.in_dim,
                "dropout": l.cfg.dropout,
            }));
        }
        Ok((owned, arch))
    }

    /// Loads a model written by [`Sequential::save`] onto `device`; every tensor's presence,
    /// dtype and shape is checked against the architecture.
    pub fn load(device: &Device, path: &Path) -> Result<Sequential> {
        let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
        Ok(Sequential::from_safetensors(device, path, &bytes)?.0)
    }

    /// The model in a safetensors file's bytes, and the file's metadata.
    pub(crate) fn from_safetensors(
        device: &Device,
        path: &Path,
        bytes: &[u8],
    ) -> Result<(Sequential, HashMap<String, String>)> {
        // Everything is validated on the host before the device sees a byte.
        let file = crate::nn::weights_file::parse_model_file(path, bytes)?;
        let mut model = Sequential::new(device);
        for (i, rec) in file.layers.iter().enumerate() {
            let mut b = Dense::new(rec.units, &rec.activation)
                .use_bias(rec.use_bias)
                .dropout(rec.dropout);
            if i == 0 {
                b = b.input_dim(rec.input_dim);
            }
            model.add(b)?;
            let l = &mut model.layers[i];
            l.w = Tensor::from_slice(device, &rec.kernel, &[rec.input_dim, rec.units])?;
            if let Some(bias) = &rec.bias {
                l.b = Some(Tensor::from_slice(device, bias, &[rec.units])?);
            }
            l.tag();
        }
        Ok((model, file.metadata))
    }
}

/// A tensor to write: name, shape, little-endian f32 bytes.
pub(crate) type NamedTensor = (String, Vec<usize>, Vec<u8>);

/// Writes f32 tensors and metadata as a safetensors file, atomically.
pub(crate) fn write_safetensors(
    path: &Path,
    op: &'static str,
    owned: &[NamedTensor],
    meta: HashMap<String, String>,
) -> Result<()> {
    let mut views = Vec::new();
    for (name, shape, bytes) in owned {
        let v = safetensors::tensor::TensorView::new(safetensors::Dtype::F32, shape.clone(), bytes)
            .map_err(|e| Error::Gpu {
                op,
                message: format!("internal error: tensor view: {e}"),
            })?;
        views.push((name.clone(), v));
    }
    let bytes = safetensors::tensor::serialize(views, Some(meta)).map_err(|e| Error::Gpu {
        op,
        message: format!("internal error: serialize: {e}"),
    })?;
    crate::io::write_atomic(path, &bytes)
}
