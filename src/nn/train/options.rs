//! What a user chooses for training: the [`Optimizer`], the [`Loss`], [`FitOptions`] and
//! [`Callback`]s; and what training reports: [`History`] and the per-epoch events.
//!
//! The library prints nothing: progress reaches the caller through callbacks (a ready-made
//! Keras-style one is [`crate::nn::ProgressBar`]) and `log`.

use std::path::Path;

use crate::data::dataset::Dataset;
use crate::error::{Error, Result};
use crate::vocab::Rule;

fn keras_beta1() -> f64 {
    0.9
}
fn keras_beta2() -> f64 {
    0.999
}
fn keras_eps() -> f64 {
    1e-7
}

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
    /// AdamW (Keras defaults: lr 1e-3, weight decay 0.004, β1 0.9, β2 0.999, ε 1e-7).
    AdamW {
        /// Learning rate.
        lr: f64,
        /// Decoupled weight decay.
        weight_decay: f64,
        /// β1.
        #[serde(default = "keras_beta1")]
        beta1: f64,
        /// β2.
        #[serde(default = "keras_beta2")]
        beta2: f64,
        /// ε.
        #[serde(default = "keras_eps")]
        eps: f64,
    },
    /// RMSprop (Keras defaults: lr 1e-3, ρ 0.9, ε 1e-7).
    RmsProp {
        /// Learning rate.
        lr: f64,
        /// ρ.
        rho: f64,
        /// ε.
        #[serde(default = "keras_eps")]
        eps: f64,
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

    /// AdamW with Keras's defaults.
    pub fn adamw() -> Optimizer {
        Optimizer::AdamW {
            lr: 1e-3,
            weight_decay: 0.004,
            beta1: 0.9,
            beta2: 0.999,
            eps: 1e-7,
        }
    }

    /// RMSprop with Keras's defaults.
    pub fn rmsprop() -> Optimizer {
        Optimizer::RmsProp {
            lr: 1e-3,
            rho: 0.9,
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

    /// The same optimizer with another learning rate.
    pub fn with_lr(mut self, new: f64) -> Optimizer {
        match &mut self {
            Optimizer::Sgd { lr, .. }
            | Optimizer::Adam { lr, .. }
            | Optimizer::AdamW { lr, .. }
            | Optimizer::RmsProp { lr, .. } => *lr = new,
        }
        self
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
    pub fn rule(&self, lr: f64) -> Rule {
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
            Optimizer::AdamW {
                weight_decay,
                beta1,
                beta2,
                eps,
                ..
            } => Rule::Adam {
                lr,
                beta1,
                beta2,
                eps,
                weight_decay,
                decoupled: true,
            },
            Optimizer::RmsProp { rho, eps, .. } => Rule::RmsProp {
                lr,
                rho,
                eps,
                weight_decay: 0.0,
            },
        }
    }

    /// Checks every hyper-parameter's range.
    pub(crate) fn validate(&self) -> Result<()> {
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
        let unit = |name: &'static str, v: f64| {
            if (0.0..1.0).contains(&v) {
                Ok(())
            } else {
                Err(bad(name, "in [0, 1)", v))
            }
        };
        let eps = |v: f64| {
            if v > 0.0 && v.is_finite() {
                Ok(())
            } else {
                Err(bad("epsilon", "a finite value > 0", v))
            }
        };
        match *self {
            Optimizer::Sgd { momentum, .. } => unit("momentum", momentum),
            Optimizer::Adam {
                beta1,
                beta2,
                eps: e,
                ..
            } => unit("beta1", beta1).and(unit("beta2", beta2)).and(eps(e)),
            Optimizer::AdamW {
                beta1,
                beta2,
                eps: e,
                weight_decay,
                ..
            } => {
                if !(weight_decay >= 0.0 && weight_decay.is_finite()) {
                    return Err(bad("weight_decay", "a finite value >= 0", weight_decay));
                }
                unit("beta1", beta1).and(unit("beta2", beta2)).and(eps(e))
            }
            Optimizer::RmsProp { rho, eps: e, .. } => unit("rho", rho).and(eps(e)),
        }
    }
}

/// Where a training run stands: everything besides the weights and optimizer state that a
/// checkpoint holds to continue a `fit` exactly where it stopped (see
/// [`crate::nn::Sequential::save_checkpoint`]).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Checkpoint {
    /// Epochs completed.
    pub epoch: usize,
    /// The run's seed ([`FitOptions::seed`]).
    pub seed: u64,
    /// Optimizer steps taken (bias corrections depend on it).
    pub step: u64,
    /// The optimizer, hyper-parameters included.
    pub optimizer: Optimizer,
    /// The loss.
    pub loss: Loss,
    /// Per-epoch results so far.
    pub history: History,
    /// Gradient clipping (none in files written before it).
    #[serde(default)]
    pub clip: crate::nn::train::clip::Clip,
    /// Each output's loss and weight, for a model compiled with them
    /// ([`crate::nn::Model::compile_outputs`]; none in files written before it).
    #[serde(default)]
    pub output_losses: Vec<(Loss, f32)>,
    /// Which weights weight decay applies to (all in files written before it).
    #[serde(default)]
    pub decay: crate::nn::train::decay::DecayFilter,
    /// Batches per optimizer step (1 in files written before it).
    #[serde(default = "one")]
    pub accumulation: usize,
    /// The precision policy (float32 in files written before it).
    #[serde(default)]
    pub precision: crate::vocab::Precision,
    /// Whether the loss is scaled (the policy's default in files written before it).
    #[serde(default)]
    pub loss_scaling: crate::nn::train::loss_scale::LossScaling,
    /// Where the loss scale stood, when training scaled the loss.
    #[serde(default)]
    pub loss_scale_state: Option<crate::nn::train::loss_scale::LossScaleState>,
}

fn one() -> usize {
    1
}

/// Which epochs run validation, as Keras's `validation_freq`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ValidationFreq {
    /// Every `k`-th epoch: epochs `k − 1`, `2k − 1`, … (0-based).
    Every(usize),
    /// These epochs, counted from 1 as Keras counts them.
    Epochs(Vec<usize>),
}

impl ValidationFreq {
    /// Whether 0-based epoch `epoch` validates.
    pub fn due(&self, epoch: usize) -> bool {
        match self {
            ValidationFreq::Every(k) => *k > 0 && (epoch + 1).is_multiple_of(*k),
            ValidationFreq::Epochs(v) => v.contains(&(epoch + 1)),
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
    /// Mean absolute error (Keras's `"mae"`); last layer as for MSE. No accuracy.
    MeanAbsoluteError,
    /// Huber loss with Keras's default δ = 1; last layer as for MSE. No accuracy.
    Huber,
}

impl Loss {
    /// Whether the last layer is evaluated as logits (its activation folded into the loss).
    pub(crate) fn takes_logits(self) -> bool {
        !self.is_regression()
    }

    /// Mean squared or absolute error, or Huber: a loss on the outputs themselves.
    pub fn is_regression(self) -> bool {
        matches!(
            self,
            Loss::MeanSquaredError | Loss::MeanAbsoluteError | Loss::Huber
        )
    }

    /// Whether accuracy means something for this loss (classification losses only).
    pub fn has_accuracy(self) -> bool {
        !self.is_regression()
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

/// Options of [`crate::nn::Sequential::fit`], with Keras's defaults. Training reports through
/// `callbacks` and `on_epoch_end` (and `log`); it prints nothing itself.
pub struct FitOptions<'a> {
    /// Epochs (default 1). With `resume`, the total including the checkpoint's.
    pub epochs: usize,
    /// Batch size (default 32). With several devices or processes, the global batch.
    pub batch_size: usize,
    /// Shuffle every epoch (default true).
    pub shuffle: bool,
    /// Seed of the shuffle and of dropout masks (default 0).
    pub seed: u64,
    /// Evaluated at the end of every epoch.
    pub validation_data: Option<&'a Dataset>,
    /// Without `validation_data`: hold out this last fraction of the rows (taken before
    /// shuffling, as Keras does) and evaluate on it every epoch (default 0).
    pub validation_split: f64,
    /// Which epochs evaluate the validation rows (Keras's `validation_freq`; default every
    /// epoch). The others report no validation: their history has no `val_` entry.
    pub validation_freq: ValidationFreq,
    /// Learning rate per epoch (0-based), replacing the optimizer's; checked for every epoch
    /// before training starts.
    pub lr_schedule: Option<&'a dyn Fn(usize) -> f64>,
    /// Learning rate per optimizer step, replacing both the optimizer's and `lr_schedule`:
    /// called with the number of steps taken before this one (Keras's
    /// `optimizer.iterations`, so a schedule object is `|step| schedule(step)`), when the
    /// step's uniforms are written, before its chunk of steps is submitted. The value goes
    /// into the step's entry of the parameter table (the device reads it there: no recapture);
    /// a value that is not finite and > 0 stops training with an error naming the step.
    pub step_lr: Option<&'a dyn Fn(u64) -> f64>,
    /// Early stopping.
    pub early_stopping: Option<EarlyStopping>,
    /// Writes a checkpoint here (atomically) at the end of every epoch: weights, optimizer
    /// state, epoch, seed and history ([`crate::nn::Sequential::save_checkpoint`]).
    pub checkpoint: Option<&'a Path>,
    /// Continue a run from a checkpoint ([`crate::nn::Sequential::load_checkpoint`]):
    /// training starts at epoch `checkpoint.epoch` (so `epochs` is the total, as Keras's
    /// `initial_epoch`), with the checkpoint's seed, and the returned history includes the
    /// earlier epochs.
    pub resume: Option<&'a Checkpoint>,
    /// Keras's `initial_epoch`: the epochs before it count as done (numbering, callbacks, the
    /// shuffles replayed), and training continues from the model's weights and optimizer
    /// state for epochs `initial_epoch..epochs`. With the state of an interrupted run's last
    /// epoch this continues it exactly, as `resume` does from a checkpoint (default 0).
    pub initial_epoch: usize,
    /// Called after every epoch with the epoch (0-based) and the history so far; return
    /// false to stop.
    pub on_epoch_end: Option<EpochCallback<'a>>,
    /// Progress and epoch events (a progress bar, a logger, a Ctrl-C check).
    pub callbacks: Vec<&'a mut dyn Callback>,
    /// Paces training to keep the devices within temperature and power limits
    /// ([`crate::telemetry::governor`]). Without one, a governor is made from the devices'
    /// configured limits (`SUANLI_MAX_TEMPERATURE_C`, `SUANLI_POWER_CAP_W`, `suanli.toml`)
    /// when any are set; pass one for limits set in code, or for a simulated clock.
    pub governor: Option<&'a mut crate::telemetry::governor::Governor>,
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
            validation_freq: ValidationFreq::Every(1),
            lr_schedule: None,
            step_lr: None,
            initial_epoch: 0,
            early_stopping: None,
            checkpoint: None,
            resume: None,
            on_epoch_end: None,
            callbacks: Vec::new(),
            governor: None,
        }
    }
}

/// Per-epoch results of training.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct History {
    /// Mean training loss per epoch.
    pub loss: Vec<f64>,
    /// Training accuracy per epoch (empty for losses without accuracy, such as MSE).
    pub accuracy: Vec<f64>,
    /// Validation loss per epoch (with validation data).
    pub val_loss: Vec<f64>,
    /// Validation accuracy per epoch (with validation data and a classification loss).
    pub val_accuracy: Vec<f64>,
    /// Wall-clock seconds of each epoch's training (validation excluded).
    pub epoch_seconds: Vec<f64>,
    /// Fraction of each epoch's training time the device's queue was busy
    /// ([`crate::runtime::Device::utilisation_window`]; NaN where not measured).
    #[serde(with = "nan_as_null")]
    pub utilisation: Vec<f64>,
    /// The metrics of [`crate::nn::Sequential::set_metrics`] per epoch, under
    /// [`crate::nn::Metric::name`] and, for validation, `val_` and the name.
    #[serde(default)]
    pub metrics: std::collections::BTreeMap<String, Vec<f64>>,
}

/// JSON has no NaN: a value not measured is written as `null` and read back as NaN (a
/// checkpoint must load whatever its history holds).
mod nan_as_null {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub fn serialize<S: Serializer>(v: &[f64], s: S) -> Result<S::Ok, S::Error> {
        v.iter()
            .map(|x| x.is_finite().then_some(*x))
            .collect::<Vec<Option<f64>>>()
            .serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<f64>, D::Error> {
        Ok(Vec::<Option<f64>>::deserialize(d)?
            .into_iter()
            .map(|x| x.unwrap_or(f64::NAN))
            .collect())
    }
}

/// Loss, accuracy and metrics of a model on a dataset.
#[derive(Clone, Debug, PartialEq)]
pub struct Evaluation {
    /// Mean loss.
    pub loss: f64,
    /// Accuracy, for classification losses.
    pub accuracy: Option<f64>,
    /// The model's metrics ([`crate::nn::Sequential::set_metrics`]) by name, in order.
    pub metrics: Vec<(String, f64)>,
}

impl Evaluation {
    /// A metric's value by name.
    pub fn metric(&self, name: &str) -> Option<f64> {
        self.metrics.iter().find(|(n, _)| n == name).map(|m| m.1)
    }
}

/// The start of an epoch.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct EpochBegin {
    /// 0-based epoch.
    pub epoch: usize,
    /// Total epochs.
    pub epochs: usize,
    /// Steps in the epoch.
    pub steps: usize,
    /// The first epoch of this `fit`: its first steps also compile the kernels.
    pub first: bool,
}

/// Running metrics during an epoch (a few times a second).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Progress {
    /// 0-based epoch.
    pub epoch: usize,
    /// Total epochs.
    pub epochs: usize,
    /// Steps done in this epoch.
    pub step: usize,
    /// Steps in the epoch.
    pub steps: usize,
    /// Mean loss so far this epoch.
    pub loss: f64,
    /// Accuracy so far this epoch, for classification losses.
    pub accuracy: Option<f64>,
}

/// The end of an epoch, validation included.
#[derive(Clone, Debug, PartialEq)]
pub struct EpochEnd {
    /// 0-based epoch.
    pub epoch: usize,
    /// Total epochs.
    pub epochs: usize,
    /// Steps in the epoch.
    pub steps: usize,
    /// Training seconds (validation excluded).
    pub seconds: f64,
    /// Mean training loss.
    pub loss: f64,
    /// Training accuracy, for classification losses.
    pub accuracy: Option<f64>,
    /// The model's metrics over the epoch's training, by name, in order.
    pub metrics: Vec<(String, f64)>,
    /// The epoch's training accumulator, `[Σ loss, Σ correct, rows, 0]` and then each
    /// metric's sums: what a caller training one epoch in parts (a stream of chunks) adds up
    /// and hands to [`crate::nn::Sequential::evaluation_of`].
    pub sums: Vec<f64>,
    /// Validation results, with validation data.
    pub validation: Option<Evaluation>,
    /// Training samples per second.
    pub samples_per_second: f64,
    /// What the training engine adds (several devices: shares and throughput per device).
    pub detail: String,
    /// Several devices: each device's spec and share of the batch at the epoch's end.
    pub shares: Vec<(String, f64)>,
    /// Several processes: bytes this process sent to the others per step, and seconds per
    /// step the exchange worked (`None` in one process).
    pub exchange: Option<(f64, f64)>,
}

impl EpochEnd {
    /// The Keras-style line: `1875/1875 - 3.8s - loss: 0.2400 - accuracy: 0.9293 - val_loss:
    /// … - 15.8k samples/s`.
    pub fn keras_line(&self) -> String {
        let mut s = format!("{}/{} - {:.1}s", self.steps, self.steps, self.seconds);
        s.push_str(&metrics_text("", self.loss, self.accuracy));
        for (name, v) in &self.metrics {
            s.push_str(&format!(" - {name}: {v:.4}"));
        }
        if let Some(v) = &self.validation {
            s.push_str(&metrics_text("val_", v.loss, v.accuracy));
            for (name, x) in &v.metrics {
                s.push_str(&format!(" - val_{name}: {x:.4}"));
            }
        }
        s.push_str(&format!(
            " - {:.1}k samples/s",
            self.samples_per_second / 1e3
        ));
        if !self.detail.is_empty() {
            s.push_str(" - ");
            s.push_str(&self.detail);
        }
        s
    }
}

/// ` - loss: … - accuracy: …` (no accuracy where the loss has none).
pub fn metrics_text(prefix: &str, loss: f64, accuracy: Option<f64>) -> String {
    match accuracy {
        Some(a) => format!(" - {prefix}loss: {loss:.4} - {prefix}accuracy: {a:.4}"),
        None => format!(" - {prefix}loss: {loss:.4}"),
    }
}

/// Training events, Keras-style. Every method has a default that does nothing.
pub trait Callback {
    /// An epoch begins.
    fn on_epoch_begin(&mut self, _event: &EpochBegin) {}

    /// Running metrics, a few times a second. Return false to stop training before the next
    /// chunk of steps: `fit` then returns [`Error::Interrupted`] and the model holds the
    /// weights of the last completed step.
    fn on_progress(&mut self, _progress: &Progress) -> bool {
        true
    }

    /// A chunk of steps was submitted: `done` steps of epoch `epoch` are recorded (the device
    /// may still be running them). Called after every chunk, however fast or slow the device,
    /// so work keyed to a step count (a test's fault trigger) happens at the same step on
    /// every machine; it reads nothing from the device.
    fn on_steps(&mut self, _epoch: usize, _done: usize) {}

    /// An epoch ended (validation included; checkpoint written). Return false to stop.
    fn on_epoch_end(&mut self, _event: &EpochEnd, _history: &History) -> bool {
        true
    }

    /// The governor changed a device's duty, or an epoch ended under a governor: every
    /// governed device's limits, readings, duty and counters.
    fn on_governor(&mut self, _reports: &[crate::telemetry::governor::GovernorReport]) {}
}
