//! [`Sequential`]: a stack of layers with an optimizer and a loss, like Keras's.
//!
//! This file holds the model itself: adding layers, compiling, the summary, prediction and
//! the checks a dataset must pass. Training and evaluation are in [`crate::nn::fit`], saving
//! and loading in [`crate::nn::store`].

use crate::data::dataset::Dataset;
use crate::error::{Error, Result};
use crate::exec::recorder::Recorder;
use crate::memory::MemoryKind;
use crate::nn::dense::{DenseBuilder, DenseLayer};
use crate::nn::layer::{Cx, Layer, Mode, Position};
use crate::nn::options::{Loss, Optimizer};
use crate::random::Rng;
use crate::runtime::Device;
use crate::tensor::Tensor;
use crate::vocab::{Activation, Rule};

/// A stack of layers, trained like Keras's `Sequential`.
pub struct Sequential {
    pub(crate) device: Device,
    pub(crate) layers: Vec<Box<dyn Layer>>,
    pub(crate) optimizer: Option<Optimizer>,
    pub(crate) loss: Option<Loss>,
    /// Optimizer state per parameter (optimizer order), created by the first fit.
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

    /// The optimizer, once compiled.
    pub fn optimizer(&self) -> Option<Optimizer> {
        self.optimizer
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

    /// Appends a dense layer, initialising its weights.
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
            (Some(prev), Some(d)) if d != prev.out_dim() => {
                return Err(Error::ShapeMismatch {
                    op: "Sequential::add",
                    expected: format!("input_dim {} (the previous layer's units)", prev.out_dim()),
                    found: d.to_string(),
                })
            }
            (Some(prev), _) => prev.out_dim(),
        };
        if let Some(prev) = self.layers.last() {
            if prev.activation() == Activation::Softmax {
                return Err(Error::InvalidArgument {
                    op: "Sequential::add",
                    name: "layer",
                    expected: "softmax only on the last layer".into(),
                    found: format!("a layer after softmax layer {}", self.layers.len() - 1),
                });
            }
        }
        let mut rng = Rng::new(self.seed.wrapping_add(self.layers.len() as u64 * 0x9E37));
        let layer = DenseLayer::new(&self.device, cfg, in_dim, &mut rng)?;
        self.layers.push(Box::new(layer));
        self.opt_state.clear();
        self.step = 0;
        Ok(())
    }

    /// Number of trainable parameters.
    pub fn param_count(&self) -> usize {
        self.params().iter().map(|p| p.numel()).sum()
    }

    /// Input features of the first layer.
    pub fn input_dim(&self) -> Option<usize> {
        self.layers.first().map(|l| l.in_dim())
    }

    /// Outputs of the last layer.
    pub fn output_dim(&self) -> Option<usize> {
        self.layers.last().map(|l| l.out_dim())
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
            for (name, shape, params) in l.summary_rows(i) {
                s.push_str(&format!("{name:<28}{shape:<22}{params:>16}\n"));
            }
        }
        let total = self.param_count();
        s.push_str(&format!(
            "{line}\nTotal params: {total} ({:.2} KB)\nTrainable params: {total}\n",
            total as f64 * 4.0 / 1024.0
        ));
        s
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
        self.opt_state.clear();
        self.step = 0;
        Ok(())
    }

    /// Every parameter in optimizer order (each layer's, in order).
    pub(crate) fn params(&self) -> Vec<Tensor> {
        self.layers.iter().flat_map(|l| l.params()).collect()
    }

    /// Where each layer sits: its dropout ordinal, whether its activation is folded into the
    /// loss, and its first parameter's index.
    pub(crate) fn positions(&self) -> Vec<Position> {
        let folds = self.loss.is_some_and(|l| l.takes_logits());
        let mut k = 0;
        let mut p = 0;
        let n = self.layers.len();
        self.layers
            .iter()
            .enumerate()
            .map(|(index, l)| {
                let dropout = (l.dropout() > 0.0).then(|| {
                    k += 1;
                    k - 1
                });
                let pos = Position {
                    index,
                    dropout,
                    folded: folds && index + 1 == n,
                    first_param: p,
                };
                p += l.params().len();
                pos
            })
            .collect()
    }

    /// (units, rate) of each layer with dropout, in order: what the dropout slots of a step
    /// read.
    pub(crate) fn dropout_specs(&self) -> Vec<(usize, f32)> {
        self.layers
            .iter()
            .filter(|l| l.dropout() > 0.0)
            .map(|l| (l.out_dim(), l.dropout()))
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

    /// A copy of this model (weights, optimizer, loss, optimizer state and step) on `device`.
    pub fn to_device(&self, device: &Device) -> Result<Sequential> {
        let mut m = Sequential::with_seed(device, self.seed);
        m.layers = self
            .layers
            .iter()
            .map(|l| l.to_device(device))
            .collect::<Result<_>>()?;
        m.optimizer = self.optimizer;
        m.loss = self.loss;
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
        Ok(m)
    }

    /// Outputs (probabilities for a softmax model) for `x` of shape (samples, features): the
    /// same forward description as training, recorded with every activation applied.
    pub fn predict(&self, x: &Tensor) -> Result<Tensor> {
        x.check_device(&self.device, "predict")?;
        let want = self.input_dim().unwrap_or(0);
        let rows = match x.shape() {
            [r, f] if *f == want && *r > 0 => *r,
            s => {
                return Err(Error::ShapeMismatch {
                    op: "predict",
                    expected: format!("(samples ≥ 1, {want})"),
                    found: format!("{s:?}"),
                })
            }
        };
        let mut rec = Recorder::new(&self.device);
        let mut cx = Cx::new(&mut rec, rows, Mode::Predict);
        let mut h = x.clone();
        for (l, pos) in self.layers.iter().zip(self.positions()) {
            h = l.forward(&mut cx, pos, &h)?.output;
        }
        // Scratch buffers go back to the pool only once the work using them is submitted.
        let keep = std::mem::take(&mut cx.keep);
        drop(cx);
        rec.submit()?;
        drop(keep);
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

    /// Checks that `data` fits the model: same device, features, and targets the loss
    /// accepts (class labels within the outputs, or dense rows of the outputs' width).
    pub(crate) fn check_dataset(&self, op: &'static str, data: &Dataset) -> Result<()> {
        if !data.device().same_as(&self.device) {
            return Err(Error::DeviceMismatch {
                op,
                expected: format!("{:?}", self.device),
                found: format!("{:?}", data.device()),
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
        if data.row_len() != i {
            return Err(Error::ShapeMismatch {
                op,
                expected: format!("{i} features per sample"),
                found: data.row_len().to_string(),
            });
        }
        let loss = self.loss.unwrap_or(Loss::SparseCategoricalCrossentropy);
        let act = last.activation();
        let act_ok = match loss {
            Loss::SparseCategoricalCrossentropy | Loss::CategoricalCrossentropy => {
                matches!(act, Activation::Softmax | Activation::Linear)
            }
            Loss::BinaryCrossentropy => matches!(act, Activation::Sigmoid | Activation::Linear),
            Loss::MeanSquaredError => act.derivative_from_output(),
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
        match (loss, data.labels()) {
            (Loss::SparseCategoricalCrossentropy, Some(labels)) if labels.max() as usize >= o => {
                return Err(Error::InvalidArgument {
                    op,
                    name: "labels",
                    expected: format!("class indices below the model's {o} outputs"),
                    found: format!("a label of {}", labels.max()),
                })
            }
            (Loss::SparseCategoricalCrossentropy, Some(_)) => {}
            (Loss::SparseCategoricalCrossentropy, None) => {
                return Err(Error::InvalidArgument {
                    op,
                    name: "targets",
                    expected: "class labels for sparse categorical cross-entropy".into(),
                    found: format!("dense target rows of {}", data.target_len()),
                })
            }
            (_, labels) if labels.is_some() || data.target_len() != o => {
                return Err(Error::ShapeMismatch {
                    op,
                    expected: format!(
                        "dense target rows of {o} values (the model's outputs) for {loss:?}"
                    ),
                    found: if labels.is_some() {
                        "class labels".to_string()
                    } else {
                        format!("rows of {}", data.target_len())
                    },
                })
            }
            _ => {}
        }
        Ok(())
    }
}
