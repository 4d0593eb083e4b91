//! Data-parallel training over a [`DeviceGroup`]: an engine for the one training loop.
//!
//! The model is replicated on every device. Each global batch (the same rows, in the same
//! order, as single-device training with the same seed) is cut into consecutive shards whose
//! sizes follow the [`Balancer`]'s shares; every replica computes the mean gradient of its
//! shard; the host combines them weighted by shard size, `g = Σ_d (b_d / B)·g_d` summed in
//! device order in f64, which is the gradient of the whole batch; and every replica applies
//! the same update with the same kernels, so the replicas stay identical (checked at the end
//! of every epoch: a difference is an error). wgpu has no device-to-device copy, so gradients
//! travel through host memory: each step moves `2 × parameters × 4` bytes per active device.
//!
//! Everything else (validation, checkpoints, resume, early stopping, the learning-rate
//! schedule, the NaN stop, callbacks) is the shared loop's.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::data::dataset::Dataset;
use crate::error::{Error, Result};
use crate::exec::capture::Program;
use crate::exec::recorder::Recorder;
use crate::memory::MemoryKind;
use crate::multi::balancer::Balancer;
use crate::multi::group::DeviceGroup;
use crate::nn::evaluate::Evaluator;
use crate::nn::fit::{self, Engine, EpochReport, Setup};
use crate::nn::layer::Slot;
use crate::nn::model::Sequential;
use crate::nn::options::{Evaluation, FitOptions, History};
use crate::nn::step::{self, Backward, Chunk, StepInputs, StepLayout, StepProgram};
use crate::runtime::Device;
use crate::telemetry::{DeviceWatch, WatchEvent};
use crate::tensor::{IndexBuffer, Tensor};
use crate::vocab::Rule;

/// Options of [`Sequential::fit_parallel`] beyond [`FitOptions`].
#[derive(Clone, Debug, Default)]
pub struct ParallelOptions {
    /// Starting shares (else equal).
    pub initial_shares: Option<Vec<f64>>,
    /// Benchmark hook: device `d`'s measured step time is stretched by `slowdown[d]` (≥ 1)
    /// by sleeping the difference, as if it were that much slower.
    pub slowdown: Vec<f64>,
    /// Test hook, an injected clock: device `d`'s shard time is taken to be `rows /
    /// simulated_rates[d]` seconds instead of measured, so balancing is tested without
    /// depending on how fast or how noisy the machine is.
    pub simulated_rates: Option<Vec<f64>>,
}

/// What [`Sequential::fit_parallel`] measured.
#[derive(Clone, Debug, Default)]
pub struct ParallelHistory {
    /// The usual per-epoch history (loss and accuracy over all shards).
    pub history: History,
    /// Shares after every step.
    pub shares: Vec<Vec<f64>>,
    /// Per epoch, per device: samples per second of compute (shard rows / shard time).
    pub throughput: Vec<Vec<f64>>,
    /// Bytes moved between host and devices per step per active device (gradients down and
    /// up).
    pub bytes_per_step: u64,
}

/// One device's replica and its training state.
struct Replica {
    dev: Device,
    model: Sequential,
    grads: Vec<Tensor>,
    /// The shard's gradients, all parameters back to back, for one mapping per step.
    staging: wgpu::Buffer,
    acc: Tensor,
    idx: IndexBuffer,
    layout: StepLayout,
    table: Tensor,
    /// Step programs per shard size (shard sizes move with the balancer).
    plans: HashMap<usize, StepProgram>,
    optimizer: (Program, Vec<Slot>),
}

/// Step programs kept per device; beyond this the cache is cleared (shard sizes settle).
const MAX_PLANS: usize = 24;

/// A submitted shard: when it was submitted, and the flag its device sets when done.
type Pending = (Instant, Arc<Mutex<Option<Instant>>>);

struct ParallelEngine<'a> {
    reps: Vec<Replica>,
    data: &'a [Dataset],
    balancer: Balancer,
    watches: Vec<DeviceWatch>,
    penalty: Vec<f64>,
    slowdown: Vec<f64>,
    simulated: Option<Vec<f64>>,
    seed: u64,
    /// Per device: rows and seconds of compute this epoch.
    work: Vec<(usize, f64)>,
    validation: Option<(Evaluator, &'a Dataset)>,
    out: ParallelHistory,
}

impl Replica {
    fn new(
        model: &Sequential,
        dev: &Device,
        data: &Dataset,
        rows: usize,
        rule: &Rule,
    ) -> Result<Replica> {
        let mut m = model.to_device(dev)?;
        m.check_dataset("fit_parallel", data)?;
        m.init_opt_state(rule)?;
        let grads = step::gradient_buffers(&m)?;
        let layout = StepLayout::new(&m, data, Backward::Grads(&grads));
        let table = layout.table(dev)?;
        let acc = Tensor::zeros(dev, &[4])?;
        acc.set_memory_kind(MemoryKind::Activations);
        let idx = IndexBuffer::new(dev, &vec![0u32; rows])?;
        let total: u64 = grads.iter().map(|g| g.byte_len()).sum();
        let staging = dev.wgpu_device().create_buffer(&wgpu::BufferDescriptor {
            label: Some("suanli gradient readback"),
            size: total,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let optimizer = step::optimizer_program(&m, rule, &grads, &table)?;
        Ok(Replica {
            dev: dev.clone(),
            model: m,
            grads,
            staging,
            acc,
            idx,
            layout,
            table,
            plans: HashMap::new(),
            optimizer,
        })
    }

    /// Submits the forward and backward pass over permutation rows `start..start + n` at
    /// optimizer step `t`, and the copy of its gradients to the staging buffer; returns a
    /// flag the queue sets when it is done.
    fn shard(
        &mut self,
        data: &Dataset,
        start: usize,
        n: usize,
        seed: u64,
        t: u64,
        rule: &Rule,
    ) -> Result<Pending> {
        if !self.plans.contains_key(&n) {
            if self.plans.len() >= MAX_PLANS {
                self.plans.clear();
            }
            let p = StepProgram::build(
                &self.model,
                data,
                &self.idx,
                n,
                Backward::Grads(&self.grads),
                &self.acc,
                &self.table,
            )?;
            self.plans.insert(n, p);
        }
        let plan = &self.plans[&n];
        // The whole step's uniforms, the optimizer's included, in one upload.
        let mut chunk = Chunk::new(&self.layout, 1);
        let inputs = StepInputs {
            data,
            idx: &self.idx,
            offset: start,
            batch: n,
            seed,
            t,
            rule: Some(rule),
        };
        chunk.put(0, plan.slots(), &inputs)?;
        chunk.put(0, &self.optimizer.1, &inputs)?;
        chunk.upload(&self.dev, &self.table);
        let mut rec = Recorder::new(&self.dev);
        plan.replay(&mut rec, &chunk, 0)?;
        let mut at = 0;
        for g in &self.grads {
            rec.copy_at(g.buffer(), &self.staging, at, g.byte_len());
            at += g.byte_len();
        }
        let t0 = Instant::now();
        rec.submit()?;
        let flag = Arc::new(Mutex::new(None));
        let f2 = flag.clone();
        self.dev.wgpu_queue().on_submitted_work_done(move || {
            if let Ok(mut g) = f2.lock() {
                *g = Some(Instant::now());
            }
        });
        Ok((t0, flag))
    }

    /// Uploads the combined gradients and applies the optimizer step `t` (its uniforms were
    /// written with the shard's).
    fn step_optimizer(&mut self, combined: &[f32], t: u64) -> Result<()> {
        let mut at = 0;
        for g in &self.grads {
            let n = g.numel();
            self.dev.wgpu_queue().write_buffer(
                g.buffer(),
                0,
                bytemuck::cast_slice(&combined[at..at + n]),
            );
            at += n;
        }
        let chunk = Chunk::new(&self.layout, 1);
        let mut rec = Recorder::new(&self.dev);
        rec.replay_at(&self.optimizer.0, &chunk.offsets(0, &self.optimizer.1)?)?;
        rec.submit()?;
        self.model.step = t;
        Ok(())
    }

    /// Every parameter, in order, as host floats.
    fn weights(&self) -> Result<Vec<Vec<f32>>> {
        self.model.params().iter().map(|p| p.to_vec()).collect()
    }
}

impl Engine for ParallelEngine<'_> {
    fn begin_epoch(&mut self, perm: &[u32]) -> Result<()> {
        for r in &self.reps {
            r.idx.write(&r.dev, perm)?;
            step::clear(&r.dev, &r.acc)?;
        }
        self.work = vec![(0, 0.0); self.reps.len()];
        Ok(())
    }

    fn run(&mut self, steps: &[(usize, usize)], t0: u64, rule: &Rule) -> Result<()> {
        let nd = self.reps.len();
        let nparams: usize = self.reps[0].grads.iter().map(|g| g.numel()).sum();
        for (i, &(offset, b)) in steps.iter().enumerate() {
            let t = t0 + i as u64 + 1;
            let sizes = self.balancer.split(b);
            // Forward and backward on every shard, all devices at once.
            let mut start = offset;
            let mut pending = Vec::with_capacity(nd);
            // A shard whose program was just built also pays for its first use (lavapipe
            // compiles pipelines then): its time says nothing about the device's speed.
            let mut fresh = vec![false; nd];
            for (d, r) in self.reps.iter_mut().enumerate() {
                let n = sizes[d];
                if n > 0 {
                    fresh[d] = !r.plans.contains_key(&n);
                    pending.push((d, r.shard(&self.data[d], start, n, self.seed, t, rule)?));
                }
                start += n;
            }
            let mut secs = vec![0.0; nd];
            for (d, done) in wait_all(&self.reps, pending)? {
                let f = self.slowdown.get(d).copied().unwrap_or(1.0).max(1.0);
                if f > 1.0 {
                    std::thread::sleep(Duration::from_secs_f64((f - 1.0) * done));
                }
                let simulated = self
                    .simulated
                    .as_ref()
                    .and_then(|r| r.get(d))
                    .map(|rate| sizes[d] as f64 / rate.max(1e-9));
                if let Some(t) = simulated {
                    secs[d] = t;
                    self.work[d].0 += sizes[d];
                    self.work[d].1 += t;
                } else if !fresh[d] {
                    secs[d] = done * f;
                    self.work[d].0 += sizes[d];
                    self.work[d].1 += secs[d];
                }
            }
            // Combine the shard gradients weighted by shard size, in device order.
            let mut combined = vec![0.0f64; nparams];
            for d in (0..nd).filter(|&d| sizes[d] > 0) {
                let r = &self.reps[d];
                let bytes = r
                    .dev
                    .core()
                    .map_read(&r.staging, "fit_parallel (gradients)")?;
                let v: Vec<f32> = bytemuck::pod_collect_to_vec(&bytes);
                let w = sizes[d] as f64 / b as f64;
                for (c, x) in combined.iter_mut().zip(&v) {
                    *c += w * *x as f64;
                }
            }
            let combined: Vec<f32> = combined.into_iter().map(|x| x as f32).collect();
            for r in self.reps.iter_mut() {
                r.step_optimizer(&combined, t)?;
            }
            log::debug!(
                "step {t}: shards {sizes:?}, seconds {secs:?}, shares {:?}",
                self.balancer.shares()
            );
            self.balancer.observe(&sizes, &secs, &self.penalty);
            self.out.shares.push(self.balancer.shares().to_vec());
        }
        Ok(())
    }

    fn sums(&mut self) -> Result<[f64; 3]> {
        let mut s = [0.0; 3];
        for r in &self.reps {
            let a = step::read_acc(&r.acc)?;
            for i in 0..3 {
                s[i] += a[i];
            }
        }
        Ok(s)
    }

    fn end_epoch(&mut self, epoch: usize) -> Result<EpochReport> {
        let throughput: Vec<f64> = self
            .work
            .iter()
            .map(|(s, t)| *s as f64 / t.max(1e-9))
            .collect();
        let w0 = self.reps[0].weights()?;
        for r in &self.reps[1..] {
            if r.weights()? != w0 {
                return Err(Error::Internal {
                    op: "fit_parallel",
                    message: format!(
                        "the replica on {} (id {}) drifted from replica 0 after epoch {}",
                        r.dev.name(),
                        r.dev.id(),
                        epoch + 1
                    ),
                });
            }
        }
        for (d, w) in self.watches.iter_mut().enumerate() {
            let ev = w.epoch_end(epoch, None);
            let hot = ev
                .iter()
                .any(|e| matches!(e, WatchEvent::Throttled | WatchEvent::Hot { .. }));
            if hot {
                log::warn!(
                    "{} is throttling or hot: its share of the batch is reduced",
                    self.reps[d].dev.name()
                );
            }
            self.penalty[d] = if hot { 0.8 } else { 1.0 };
        }
        let detail = format!(
            "shares [{}]",
            self.reps
                .iter()
                .zip(self.balancer.shares())
                .zip(&throughput)
                .map(|((r, s), tp)| format!("{} {:.0}% {:.1}k/s", r.dev.id(), 100.0 * s, tp / 1e3))
                .collect::<Vec<_>>()
                .join(", ")
        );
        self.out.throughput.push(throughput);
        Ok(EpochReport {
            utilisation: f64::NAN,
            detail,
        })
    }

    fn validate(&mut self) -> Result<Option<Evaluation>> {
        match &self.validation {
            Some((e, data)) => Ok(Some(e.run(&self.reps[0].dev, data)?)),
            None => Ok(None),
        }
    }

    fn save_checkpoint(
        &mut self,
        path: &Path,
        epoch: usize,
        seed: u64,
        history: &History,
    ) -> Result<()> {
        self.reps[0]
            .model
            .save_checkpoint(path, epoch, seed, history)
    }
}

impl Sequential {
    /// Data-parallel training over `group` (see the module docs). `data[d]` is the training
    /// set on device `d` (the same rows on every device); `options` work as in
    /// [`Sequential::fit`], with the batch size as the global batch and validation data on
    /// the group's first device. This model supplies the starting weights (and optimizer
    /// state, when resuming) and receives the trained ones.
    pub fn fit_parallel(
        &mut self,
        group: &DeviceGroup,
        data: &[Dataset],
        mut options: FitOptions<'_>,
        popts: &ParallelOptions,
    ) -> Result<ParallelHistory> {
        let nd = group.len();
        if data.len() != nd {
            return Err(Error::InvalidArgument {
                op: "fit_parallel",
                name: "data",
                expected: format!("one dataset per device ({nd})"),
                found: data.len().to_string(),
            });
        }
        let rows = data[0].len();
        for (d, (ds, dev)) in data.iter().zip(group.devices()).enumerate() {
            if ds.len() != rows || ds.row_len() != data[0].row_len() {
                return Err(Error::ShapeMismatch {
                    op: "fit_parallel",
                    expected: format!("{rows} rows of {} on every device", data[0].row_len()),
                    found: format!("{} rows of {} on device {d}", ds.len(), ds.row_len()),
                });
            }
            if !ds.device().same_as(dev) {
                return Err(Error::DeviceMismatch {
                    op: "fit_parallel",
                    expected: format!("data[{d}] on {dev:?}"),
                    found: format!("{:?}", ds.device()),
                });
            }
        }
        let setup = Setup::new("fit_parallel", self, rows, &options)?;
        let rule0 = setup.optimizer.rule(setup.lrs[setup.start]);
        let reps = group
            .devices()
            .iter()
            .zip(data)
            .map(|(dev, ds)| Replica::new(self, dev, ds, setup.n_train, &rule0))
            .collect::<Result<Vec<_>>>()?;
        if let Some(v) = options.validation_data {
            reps[0]
                .model
                .check_dataset("fit_parallel (validation data)", v)?;
        }
        let validation = match options.validation_data {
            Some(v) => Some((Evaluator::new(&reps[0].model, v, None, 1000)?, v)),
            None if setup.n_train < rows => {
                let split = setup.split_rows(rows);
                Some((
                    Evaluator::new(&reps[0].model, &data[0], Some(&split), 1000)?,
                    &data[0],
                ))
            }
            None => None,
        };
        let nparams: usize = reps[0].grads.iter().map(|g| g.numel()).sum();
        let t0 = reps[0].model.step;
        let mut engine = ParallelEngine {
            reps,
            data,
            balancer: Balancer::new(nd, popts.initial_shares.as_deref()),
            watches: group.devices().iter().map(DeviceWatch::new).collect(),
            penalty: vec![1.0; nd],
            slowdown: popts.slowdown.clone(),
            simulated: popts.simulated_rates.clone(),
            seed: setup.seed,
            work: vec![(0, 0.0); nd],
            validation,
            out: ParallelHistory {
                bytes_per_step: 2 * nparams as u64 * 4,
                ..Default::default()
            },
        };
        let history = fit::run(&mut engine, &setup, &mut options, t0)?;
        // The trained weights and optimizer state come home.
        let back = engine.reps[0].model.to_device(&self.device)?;
        self.layers = back.layers;
        self.opt_state = back.opt_state;
        self.step = back.step;
        let mut out = engine.out;
        out.history = history;
        Ok(out)
    }
}

/// Waits until every pending shard's device reports its work done; returns each device's
/// seconds from submission to completion. Bounded by the first device's timeout.
fn wait_all(reps: &[Replica], pending: Vec<(usize, Pending)>) -> Result<Vec<(usize, f64)>> {
    let deadline = Instant::now() + reps[0].dev.timeout();
    let mut out = Vec::with_capacity(pending.len());
    let mut left = pending;
    while !left.is_empty() {
        let mut still = Vec::with_capacity(left.len());
        for (d, (t0, flag)) in left {
            reps[d].dev.core().poll();
            let done = flag.lock().ok().and_then(|g| *g);
            match done {
                Some(t) => out.push((d, t.duration_since(t0).as_secs_f64())),
                None => still.push((d, (t0, flag))),
            }
        }
        left = still;
        if !left.is_empty() {
            if Instant::now() > deadline {
                return Err(Error::Timeout {
                    op: "fit_parallel",
                    seconds: reps[0].dev.timeout().as_secs_f64(),
                });
            }
            std::thread::sleep(Duration::from_micros(100));
        }
    }
    Ok(out)
}
