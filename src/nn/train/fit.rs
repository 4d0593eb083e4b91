//! The one training loop, and evaluation.
//!
//! [`run`] is the epoch loop every kind of training shares: shuffling, chunks of steps,
//! running metrics and the NaN stop, validation, history, callbacks, checkpoints, resume, the
//! learning-rate schedule and early stopping. What differs between one device, several
//! devices and several processes is how a step's gradients are produced and combined: that
//! is an [`Engine`]. The single-device one is in `local_fit` (`LocalEngine`: the optimizer
//! runs inside each layer's weight-gradient product, and `Sequential::fit`); several devices
//! plug theirs in from [`crate::multi`].
//!
//! Everything is validated ([`Setup::new`]) before the model changes.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::nn::graph::model::Sequential;
use crate::nn::train::options::{
    EpochBegin, EpochEnd, Evaluation, FitOptions, History, Optimizer, Progress, ValidationFreq,
};
use crate::nn::train::step::{self, RuleAt};
use crate::nn::train::table::CHUNK;
use crate::random::Rng;
use crate::telemetry::governor::Governor;
use crate::vocab::Rule;

/// How running metrics are read during an epoch (a readback waits for the device).
const PROGRESS_EVERY: Duration = Duration::from_millis(250);

/// How a training step's gradients are produced and combined (see the module docs).
pub(crate) trait Engine {
    /// An epoch starts with this permutation of the training rows.
    fn begin_epoch(&mut self, perm: &[u32]) -> Result<()>;
    /// Runs `steps` (offsets into the permutation, batch sizes), optimizer steps `t0 + 1..`,
    /// step `t` with the update rule `rule(t)`.
    fn run(&mut self, steps: &[(usize, usize)], t0: u64, rule: &RuleAt<'_>) -> Result<()>;
    /// The accumulator so far this epoch: `[Σ loss, Σ correct, rows, pad]`, then the
    /// metrics' sums ([`crate::nn::train::metric::layout`]).
    fn sums(&mut self) -> Result<Vec<f64>>;
    /// The epoch's training is done: checks (replicas identical) and what to report.
    fn end_epoch(&mut self, epoch: usize) -> Result<EpochReport>;
    /// Loss and accuracy on the validation rows, if there are any.
    fn validate(&mut self) -> Result<Option<Evaluation>>;
    /// Whether any participant of the run says `flag`: the decisions every participant must
    /// take alike (read the running metrics now, stop now) go through here. One process
    /// decides alone; several agree.
    fn agree(&mut self, flag: bool) -> Result<bool> {
        Ok(flag)
    }

    /// After a chunk that began at `began` (by the governor's clock): lets the governor read
    /// its sensors and, while it paces, waits for the chunk and pauses. True when a duty
    /// changed.
    fn govern(&mut self, g: &mut Governor, began: Instant) -> Result<bool>;

    /// Writes a checkpoint of the current weights and optimizer state.
    fn save_checkpoint(
        &mut self,
        path: &Path,
        epoch: usize,
        seed: u64,
        history: &History,
    ) -> Result<()>;
}

/// What an engine reports at the end of an epoch.
#[derive(Clone, Debug, Default)]
pub(crate) struct EpochReport {
    /// Queue utilisation over the epoch's training (NaN where not measured).
    pub(crate) utilisation: f64,
    /// The loss scale at the epoch's end, when training scales the loss.
    pub(crate) loss_scale: Option<f64>,
    /// Engine-specific text for the epoch line.
    pub(crate) detail: String,
    /// Several devices: each one's spec and share of the batch.
    pub(crate) shares: Vec<(String, f64)>,
    /// Several processes: bytes sent per step, exchange seconds per step.
    pub(crate) exchange: Option<(f64, f64)>,
}

/// A run's plan, checked before anything changes.
pub(crate) struct Setup {
    pub(crate) optimizer: Optimizer,
    /// How the accumulator reads.
    pub(crate) scoring: crate::nn::train::scoring::Scoring,
    /// Training rows (the rest of the dataset is the validation split).
    pub(crate) n_train: usize,
    /// Batch size (at most `n_train`).
    pub(crate) batch: usize,
    pub(crate) steps: Vec<(usize, usize)>,
    pub(crate) start: usize,
    pub(crate) epochs: usize,
    pub(crate) seed: u64,
    /// Learning rate of every epoch.
    pub(crate) lrs: Vec<f64>,
    pub(crate) history: History,
}

impl Setup {
    /// Checks `options` for training `model` on a dataset of `rows` rows.
    pub(crate) fn new(
        op: &'static str,
        model: &Sequential,
        rows: usize,
        o: &FitOptions<'_>,
    ) -> Result<Setup> {
        let bad = |name: &'static str, expected: String, found: String| Error::InvalidArgument {
            op,
            name,
            expected,
            found,
        };
        let (Some(optimizer), Some(_)) = (model.optimizer, model.loss) else {
            return Err(bad(
                "model",
                "a compiled model (call compile first)".into(),
                "not compiled".into(),
            ));
        };
        if o.epochs == 0 {
            return Err(bad("epochs", "at least 1".into(), "0".into()));
        }
        if model.accumulation > 1 && (model.clip.is_on() || op != "fit") {
            return Err(bad(
                "gradient accumulation",
                "accumulation without gradient clipping, on one device (not supported yet)".into(),
                format!(
                    "{} batches accumulated{}",
                    model.accumulation,
                    if op == "fit" {
                        " with clipping"
                    } else {
                        " on several devices"
                    }
                ),
            ));
        }
        if model.loss_scale().is_some() && (model.accumulation > 1 || op != "fit") {
            return Err(bad(
                "loss scaling",
                "loss scaling (mixed_float16's default) without gradient accumulation, on one \
                 device (not supported yet: turn it off with set_loss_scaling(LossScaling::Off))"
                    .into(),
                if op == "fit" {
                    format!("{} batches accumulated", model.accumulation)
                } else {
                    "training on several devices".into()
                },
            ));
        }
        if o.batch_size == 0 {
            return Err(bad("batch_size", "at least 1".into(), "0".into()));
        }
        if o.validation_freq == ValidationFreq::Every(0) {
            return Err(bad(
                "validation_freq",
                "at least 1 (validate every k-th epoch)".into(),
                "0".into(),
            ));
        }
        if o.early_stopping.is_some() && o.validation_freq != ValidationFreq::Every(1) {
            return Err(bad(
                "validation_freq",
                "1 with early stopping (it watches the validation loss every epoch)".into(),
                format!("{:?}", o.validation_freq),
            ));
        }
        if o.resume.is_some() && o.initial_epoch > 0 {
            return Err(bad(
                "initial_epoch",
                "0 with resume (the checkpoint says where training stopped)".into(),
                o.initial_epoch.to_string(),
            ));
        }
        let start = o.resume.map_or(o.initial_epoch, |c| c.epoch);
        if o.initial_epoch >= o.epochs {
            return Err(bad(
                "epochs",
                format!(
                    "more than initial_epoch {} (epochs is the total)",
                    o.initial_epoch
                ),
                o.epochs.to_string(),
            ));
        }
        if let Some(c) = o.resume {
            if c.epoch >= o.epochs {
                return Err(bad(
                    "epochs",
                    format!(
                        "more than the checkpoint's {} completed epochs (epochs is the total)",
                        c.epoch
                    ),
                    o.epochs.to_string(),
                ));
            }
            if c.step != model.step || model.opt_state.is_empty() != (c.step == 0) {
                return Err(bad(
                    "resume",
                    format!(
                        "the model loaded with this checkpoint (optimizer step {})",
                        c.step
                    ),
                    format!("a model at optimizer step {}", model.step),
                ));
            }
        }
        if !(0.0..1.0).contains(&o.validation_split) {
            return Err(bad(
                "validation_split",
                "a fraction in [0, 1)".into(),
                o.validation_split.to_string(),
            ));
        }
        // Keras's rule: the last fraction of the rows, taken before shuffling.
        let n_val = if o.validation_data.is_none() {
            (rows as f64 * o.validation_split) as usize
        } else {
            0
        };
        let n_train = rows - n_val;
        if n_train == 0 || (o.validation_split > 0.0 && o.validation_data.is_none() && n_val == 0) {
            return Err(bad(
                "validation_split",
                "a split leaving at least one training and one validation row".into(),
                format!("{} of {rows} rows", o.validation_split),
            ));
        }
        let lrs = (0..o.epochs)
            .map(|e| o.lr_schedule.map_or(optimizer.lr(), |f| f(e)))
            .collect::<Vec<f64>>();
        if let Some((e, lr)) = lrs
            .iter()
            .enumerate()
            .skip(start)
            .find(|(_, lr)| !(**lr > 0.0 && lr.is_finite()))
        {
            return Err(bad(
                "lr_schedule",
                "a finite learning rate > 0 for every epoch".into(),
                format!("{lr} at epoch {e}"),
            ));
        }
        model.check_metrics()?;
        let batch = o.batch_size.min(n_train);
        Ok(Setup {
            optimizer,
            scoring: crate::nn::train::scoring::Scoring::of(model),
            n_train,
            batch,
            steps: step::batches(n_train, batch),
            start,
            epochs: o.epochs,
            seed: o.resume.map_or(o.seed, |c| c.seed),
            lrs,
            history: o
                .resume
                .map_or_else(History::default, |c| c.history.clone()),
        })
    }

    /// The validation split's rows: the last rows of the dataset.
    pub(crate) fn split_rows(&self, rows: usize) -> Vec<u32> {
        (self.n_train as u32..rows as u32).collect()
    }
}

/// Epoch `epoch`'s shuffle of the previous order.
fn shuffle(perm: &mut [u32], seed: u64, epoch: usize) {
    Rng::new(seed ^ (epoch as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)).shuffle(perm);
}

/// The epoch loop (see the module docs). `t0` is the optimizer steps taken before.
pub(crate) fn run(
    engine: &mut dyn Engine,
    s: &Setup,
    o: &mut FitOptions<'_>,
    t0: u64,
    mut gov: Option<&mut Governor>,
) -> Result<History> {
    let mut history = s.history.clone();
    let mut t = t0;
    // Early stopping picks up where the earlier epochs left it.
    let mut best = f64::INFINITY;
    let mut since_best = 0;
    let monitored = if history.val_loss.is_empty() {
        history.loss.clone()
    } else {
        history.val_loss.clone()
    };
    for m in monitored {
        if o.early_stopping.is_some_and(|es| m < best - es.min_delta) {
            best = m;
            since_best = 0;
        } else {
            since_best += 1;
        }
    }
    // Epoch e shuffles the previous epoch's order with a generator seeded by (seed, e): a
    // resumed run replays the earlier shuffles (host only, microseconds) to stand where an
    // uninterrupted run would.
    let mut perm: Vec<u32> = (0..s.n_train as u32).collect();
    let shuffle_on = o.shuffle;
    if shuffle_on {
        for e in 0..s.start {
            shuffle(&mut perm, s.seed, e);
        }
    }
    let nsteps = s.steps.len();
    let metrics = |sums: Vec<f64>| s.scoring.running(&sums);
    let step_lr = o.step_lr;
    for epoch in s.start..s.epochs {
        let t_epoch = Instant::now();
        let epoch_lr = s.lrs[epoch];
        let optimizer = s.optimizer;
        let rule = move |t: u64| -> Result<Rule> {
            let lr = step_lr.map_or(epoch_lr, |f| f(t - 1));
            if !(lr > 0.0 && lr.is_finite()) {
                return Err(Error::InvalidArgument {
                    op: "fit",
                    name: "step_lr",
                    expected: "a finite learning rate > 0 at every step".into(),
                    found: format!("{lr} at step {}", t - 1),
                });
            }
            Ok(optimizer.rule(lr))
        };
        if shuffle_on {
            shuffle(&mut perm, s.seed, epoch);
        }
        engine.begin_epoch(&perm)?;
        let begin = EpochBegin {
            epoch,
            epochs: s.epochs,
            steps: nsteps,
            first: epoch == s.start,
        };
        for cb in o.callbacks.iter_mut() {
            cb.on_epoch_begin(&begin);
        }
        let mut last_read = Instant::now();
        let mut done = 0;
        for chunk in s.steps.chunks(CHUNK) {
            let began = gov.as_deref_mut().map(Governor::now);
            engine.run(chunk, t, &rule)?;
            if let (Some(g), Some(b)) = (gov.as_deref_mut(), began) {
                if engine.govern(g, b)? {
                    let reports = g.reports();
                    for cb in o.callbacks.iter_mut() {
                        cb.on_governor(&reports);
                    }
                }
            }
            t += chunk.len() as u64;
            done += chunk.len();
            for cb in o.callbacks.iter_mut() {
                cb.on_steps(epoch, done);
            }
            // Every participant reads the metrics at the same chunk (the read is collective
            // when several processes train together), when any of them is due.
            if engine.agree(done < nsteps && last_read.elapsed() >= PROGRESS_EVERY)? {
                let (loss, accuracy) = metrics(engine.sums()?);
                if !loss.is_finite() {
                    return Err(Error::NonFinite {
                        epoch: epoch + 1,
                        step: done,
                        value: loss,
                    });
                }
                let p = Progress {
                    epoch,
                    epochs: s.epochs,
                    step: done,
                    steps: nsteps,
                    loss,
                    accuracy,
                };
                let mut go = true;
                for cb in o.callbacks.iter_mut() {
                    go &= cb.on_progress(&p);
                }
                if engine.agree(!go)? {
                    return Err(Error::Interrupted {
                        epoch: epoch + 1,
                        step: done,
                    });
                }
                last_read = Instant::now();
            }
        }
        let sums = engine.sums()?;
        let trained = s.scoring.evaluation(&sums);
        let (loss, accuracy) = (trained.loss, trained.accuracy);
        if !loss.is_finite() {
            return Err(Error::NonFinite {
                epoch: epoch + 1,
                step: nsteps,
                value: loss,
            });
        }
        let report = engine.end_epoch(epoch)?;
        let seconds = t_epoch.elapsed().as_secs_f64();
        history.loss.push(loss);
        if let Some(a) = accuracy {
            history.accuracy.push(a);
        }
        for (name, v) in &trained.metrics {
            history.metrics.entry(name.clone()).or_default().push(*v);
        }
        let validation = if o.validation_freq.due(epoch) {
            engine.validate()?
        } else {
            None
        };
        if let Some(v) = &validation {
            history.val_loss.push(v.loss);
            if let Some(a) = v.accuracy {
                history.val_accuracy.push(a);
            }
            for (name, x) in &v.metrics {
                history
                    .metrics
                    .entry(format!("val_{name}"))
                    .or_default()
                    .push(*x);
            }
        }
        // The loss scale at the epoch's end: in the history and the epoch's logs (as Keras
        // users log `optimizer.dynamic_scale`).
        let mut epoch_metrics = trained.metrics;
        if let Some(scale) = report.loss_scale {
            history
                .metrics
                .entry("loss_scale".into())
                .or_default()
                .push(scale);
            epoch_metrics.push(("loss_scale".into(), scale));
        }
        history.epoch_seconds.push(seconds);
        history.utilisation.push(report.utilisation);
        let end = EpochEnd {
            epoch,
            epochs: s.epochs,
            steps: nsteps,
            seconds,
            loss,
            accuracy,
            metrics: epoch_metrics,
            sums,
            validation,
            samples_per_second: s.n_train as f64 / seconds.max(1e-9),
            detail: report.detail,
            shares: report.shares,
            exchange: report.exchange,
        };
        log::info!("epoch {}/{} {}", epoch + 1, s.epochs, end.keras_line());
        if let Some(path) = o.checkpoint {
            engine.save_checkpoint(path, epoch + 1, s.seed, &history)?;
        }
        if let Some(g) = gov.as_deref() {
            let reports = g.reports();
            for cb in o.callbacks.iter_mut() {
                cb.on_governor(&reports);
            }
        }
        let mut go = true;
        for cb in o.callbacks.iter_mut() {
            go &= cb.on_epoch_end(&end, &history);
        }
        if let Some(cb) = o.on_epoch_end.as_mut() {
            go &= cb(epoch, &history);
        }
        if engine.agree(!go)? {
            break;
        }
        if let Some(es) = o.early_stopping {
            let monitored = end.validation.as_ref().map_or(loss, |v| v.loss);
            if monitored < best - es.min_delta {
                best = monitored;
                since_best = 0;
            } else {
                since_best += 1;
                if since_best >= es.patience {
                    log::info!("early stopping after epoch {}", epoch + 1);
                    break;
                }
            }
        }
    }
    Ok(history)
}
