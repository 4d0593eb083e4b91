//! Data-parallel training over a [`DeviceGroup`].
//!
//! The model is replicated on every device. Each global batch (the same rows, in the same
//! order, as single-device training with the same seed) is cut into consecutive shards whose
//! sizes follow the devices' shares; every replica computes the mean gradient of its shard;
//! the host combines them weighted by shard size, `g = Σ_d (b_d / B)·g_d`, which is the
//! gradient of the whole batch; and every replica applies the same update with the same
//! kernels, so the replicas stay identical (checked at the end of every epoch). wgpu has no
//! device-to-device copy, so gradients travel through host memory: each step moves
//! `2 × parameters × 4` bytes per active device ([`ParallelHistory::bytes_per_step`]).
//!
//! A [`Balancer`] sets the shares: equal at first (or from
//! [`ParallelOptions::initial_shares`]), then from each device's measured throughput
//! (samples/s of its shard, smoothed), moved halfway to the target each step. They hold
//! while the devices finish within 5% of each other, and within a dead band of the target,
//! so they settle instead of oscillating; a floor keeps every device in. A device
//! whose sensor reports throttling, or a temperature at or above the watch's threshold, gets
//! its target cut by a fifth (and the event is logged).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::data::Dataset;
use crate::group::DeviceGroup;
use crate::kernel::Program;
use crate::kernels::gather::IndexBuffer;
use crate::kernels::optim;
use crate::memory::MemoryKind;
use crate::nn::model::{FitOptions, History, Sequential};
use crate::nn::train::{self, Grads, Plan};
use crate::{Device, Error, Result, Tensor};

/// Shares of the global batch per device, from measured throughput (see the module docs).
#[derive(Clone, Debug)]
pub struct Balancer {
    shares: Vec<f64>,
    rates: Vec<Option<f64>>,
    /// Smoothed shard seconds per device.
    times: Vec<Option<f64>>,
    /// Shares hold while the smoothed finish times differ by less than this fraction
    /// (default 0.05): when every device finishes together there is nothing to gain, and
    /// step-time noise would otherwise walk the shares around.
    pub time_band: f64,
    /// No device's share goes below this (default `0.25 / devices`).
    pub min_share: f64,
    /// Targets closer than this to the current share are ignored (default 0.01).
    pub dead_band: f64,
}

impl Balancer {
    /// Equal shares for `n` devices, or `initial` (normalised).
    pub fn new(n: usize, initial: Option<&[f64]>) -> Balancer {
        let mut shares = match initial {
            Some(s) if s.len() == n && s.iter().all(|v| *v > 0.0 && v.is_finite()) => s.to_vec(),
            _ => vec![1.0; n],
        };
        let total: f64 = shares.iter().sum();
        shares.iter_mut().for_each(|s| *s /= total);
        Balancer {
            shares,
            rates: vec![None; n],
            times: vec![None; n],
            time_band: 0.05,
            min_share: 0.25 / n as f64,
            dead_band: 0.01,
        }
    }

    /// The current shares (sum 1).
    pub fn shares(&self) -> &[f64] {
        &self.shares
    }

    /// Cuts `batch` rows into per-device shard sizes by the shares (largest remainder), each
    /// at least 1 while `batch` allows.
    pub fn split(&self, batch: usize) -> Vec<usize> {
        let n = self.shares.len();
        let exact: Vec<f64> = self.shares.iter().map(|s| s * batch as f64).collect();
        let mut sizes: Vec<usize> = exact.iter().map(|e| e.floor() as usize).collect();
        let left = batch - sizes.iter().sum::<usize>();
        let mut order: Vec<usize> = (0..n).collect();
        order.sort_by(|&a, &b| {
            (exact[b] - exact[b].floor()).total_cmp(&(exact[a] - exact[a].floor()))
        });
        for &d in order.iter().cycle().take(left) {
            sizes[d] += 1;
        }
        // Nobody idles while there are rows to share.
        if batch >= n {
            while let Some(z) = sizes.iter().position(|&s| s == 0) {
                let big = (0..n).max_by_key(|&d| sizes[d]).unwrap_or(0);
                sizes[big] -= 1;
                sizes[z] += 1;
            }
        }
        sizes
    }

    /// Updates the shares from one step: device `d` did `sizes[d]` rows in `secs[d]` seconds;
    /// `penalty[d]` (1 = none) scales its target (thermal throttling).
    pub fn observe(&mut self, sizes: &[usize], secs: &[f64], penalty: &[f64]) {
        for d in 0..self.shares.len() {
            if sizes[d] == 0 || secs[d] <= 0.0 {
                continue;
            }
            let r = sizes[d] as f64 / secs[d];
            self.rates[d] = Some(self.rates[d].map_or(r, |old| 0.5 * old + 0.5 * r));
            self.times[d] = Some(self.times[d].map_or(secs[d], |old| 0.5 * old + 0.5 * secs[d]));
        }
        if self.rates.iter().any(Option::is_none) {
            return;
        }
        let (lo, hi) = self
            .times
            .iter()
            .flatten()
            .fold((f64::INFINITY, 0.0f64), |(l, h), &t| (l.min(t), h.max(t)));
        if hi / lo - 1.0 < self.time_band && penalty.iter().all(|p| *p == 1.0) {
            return;
        }
        let weighted: Vec<f64> = self
            .rates
            .iter()
            .zip(penalty)
            .map(|(r, p)| r.unwrap_or(0.0) * p)
            .collect();
        let total: f64 = weighted.iter().sum();
        if total <= 0.0 {
            return;
        }
        let mut next = self.shares.clone();
        for d in 0..next.len() {
            let target = weighted[d] / total;
            if (target - self.shares[d]).abs() > self.dead_band {
                next[d] = self.shares[d] + 0.5 * (target - self.shares[d]);
            }
        }
        self.shares = with_floor(&next, self.min_share);
    }
}

/// Normalises `shares` to sum 1 with every share at least `floor`: shares below it are
/// raised to it and the others scaled down to make room (repeated until none falls below).
fn with_floor(shares: &[f64], floor: f64) -> Vec<f64> {
    let n = shares.len();
    let floor = floor.min(1.0 / n as f64);
    let mut pinned = vec![false; n];
    loop {
        let free: f64 = (0..n).filter(|&d| !pinned[d]).map(|d| shares[d]).sum();
        let room = 1.0 - floor * pinned.iter().filter(|p| **p).count() as f64;
        let out: Vec<f64> = (0..n)
            .map(|d| {
                if pinned[d] {
                    floor
                } else {
                    shares[d] / free.max(1e-300) * room
                }
            })
            .collect();
        match (0..n).find(|&d| !pinned[d] && out[d] < floor) {
            Some(d) => pinned[d] = true,
            None => return out,
        }
    }
}

/// Options of [`Sequential::fit_parallel`] beyond [`FitOptions`].
#[derive(Clone, Debug, Default)]
pub struct ParallelOptions {
    /// Starting shares (else equal).
    pub initial_shares: Option<Vec<f64>>,
    /// Test and benchmark hook: device `d`'s measured step time is stretched by
    /// `slowdown[d]` (≥ 1) by sleeping the difference, as if it were that much slower.
    pub slowdown: Vec<f64>,
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
    /// Bytes moved between host and devices per step (gradients down and up).
    pub bytes_per_step: u64,
    /// The replicas' weights were identical at every epoch end.
    pub replicas_identical: bool,
}

impl Sequential {
    /// A copy of this model (weights, optimizer, loss, optimizer state and step) on `device`.
    pub fn to_device(&self, device: &Device) -> Result<Sequential> {
        let mut m = Sequential::with_seed(device, self.seed);
        for l in &self.layers {
            let mut b = crate::nn::Dense::new(l.cfg.units, &l.cfg.activation.to_string())
                .use_bias(l.cfg.use_bias)
                .dropout(l.cfg.dropout)
                .initializer(l.cfg.initializer);
            if m.layers.is_empty() {
                b = b.input_dim(l.in_dim);
            }
            m.add(b)?;
            let r = m
                .layers
                .last_mut()
                .expect("internal error: layer just added");
            r.w = Tensor::from_slice(device, &l.w.to_vec()?, l.w.shape())?;
            if let Some(b) = &l.b {
                r.b = Some(Tensor::from_slice(device, &b.to_vec()?, b.shape())?);
            }
            r.tag();
        }
        if let (Some(o), Some(l)) = (self.optimizer, self.loss) {
            m.compile(o, l)?;
        }
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

    /// Data-parallel training over `group` (see the module docs). `data[d]` is the training
    /// set on device `d` (the same rows on every device). Uses `options`' epochs, batch size
    /// (the global batch), shuffle, seed, verbosity, learning-rate schedule, validation data
    /// (on the group's first device) and epoch callback; validation split, early stopping,
    /// checkpoints and resume are single-device only for now. This model supplies the
    /// starting weights and receives the trained ones.
    pub fn fit_parallel(
        &mut self,
        group: &DeviceGroup,
        data: &[Dataset],
        mut options: FitOptions<'_>,
        popts: &ParallelOptions,
    ) -> Result<ParallelHistory> {
        let o = &mut options;
        let (Some(optimizer), Some(_)) = (self.optimizer, self.loss) else {
            return Err(Error::InvalidArgument {
                op: "fit_parallel",
                name: "model",
                expected: "a compiled model (call compile first)".into(),
                found: "not compiled".into(),
            });
        };
        let nd = group.len();
        if data.len() != nd {
            return Err(Error::InvalidArgument {
                op: "fit_parallel",
                name: "data",
                expected: format!("one dataset per device ({nd})"),
                found: data.len().to_string(),
            });
        }
        train::check_counts("fit_parallel", o)?;
        let rows = data[0].rows;
        for (d, (ds, dev)) in data.iter().zip(group.devices()).enumerate() {
            if ds.rows != rows || ds.row_len != data[0].row_len {
                return Err(Error::ShapeMismatch {
                    op: "fit_parallel",
                    expected: format!("{rows} rows of {} on every device", data[0].row_len),
                    found: format!("{} rows of {} on device {d}", ds.rows, ds.row_len),
                });
            }
            if !ds.device.same_as(dev) {
                return Err(Error::DeviceMismatch {
                    op: "fit_parallel",
                    expected: format!("data[{d}] on {:?}", dev),
                    found: format!("{:?}", ds.device),
                });
            }
        }
        if self.layers.last().is_some_and(|l| l.cfg.dropout > 0.0) {
            return Err(Error::InvalidArgument {
                op: "fit_parallel",
                name: "dropout",
                expected: "dropout on hidden layers only".into(),
                found: "dropout on the output layer".into(),
            });
        }
        // Replicas, with their gradient buffers, optimizer state and step tables.
        let mut reps: Vec<Replica> = Vec::with_capacity(nd);
        for (dev, ds) in group.devices().iter().zip(data) {
            let mut m = self.to_device(dev)?;
            m.check_dataset("fit_parallel", ds)?;
            let grads = Grads::new(&m)?;
            let ps = train::params(&m, &grads);
            let sizes: Vec<usize> = ps.iter().map(|(p, _)| p.numel()).collect();
            train::init_opt_state(&mut m, &optimizer.rule(optimizer.lr()), &sizes)?;
            let drops = train::dropout_specs(&m);
            let table = train::param_table(dev, 2 + drops.len() + ps.len())?;
            let acc = Tensor::zeros(dev, &[4])?;
            let idx = IndexBuffer::new(dev, &vec![0u32; rows])?;
            let total: u64 = ps.iter().map(|(p, _)| p.numel() as u64 * 4).sum();
            let staging = dev.wgpu_device().create_buffer(&wgpu::BufferDescriptor {
                label: Some("suanli gradient readback"),
                size: total,
                usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            });
            reps.push(Replica {
                staging,
                dev: dev.clone(),
                model: m,
                grads,
                drops,
                table,
                acc,
                idx,
                plans: HashMap::new(),
            });
        }
        let nparams: usize = reps[0].params().iter().map(|(p, _)| p.numel()).sum();
        let mut out = ParallelHistory {
            bytes_per_step: 2 * nparams as u64 * 4,
            replicas_identical: true,
            ..Default::default()
        };
        let mut balancer = Balancer::new(nd, popts.initial_shares.as_deref());
        let mut watches: Vec<crate::telemetry::DeviceWatch> = group
            .devices()
            .iter()
            .map(crate::telemetry::DeviceWatch::new)
            .collect();
        let mut penalty = vec![1.0; nd];
        let steps = train::batches(rows, o.batch_size.min(rows));
        let mut perm: Vec<u32> = (0..rows as u32).collect();
        for epoch in 0..o.epochs {
            let t_epoch = Instant::now();
            let lr = o.lr_schedule.map_or(optimizer.lr(), |f| f(epoch));
            let rule = optimizer.rule(lr);
            let progs: Vec<Program> = reps
                .iter()
                .map(|r| r.optimizer_program(&rule))
                .collect::<Result<_>>()?;
            if o.shuffle {
                train::shuffle(&mut perm, o.seed, epoch);
            }
            for r in &reps {
                r.idx.write(&r.dev, &perm);
                train::clear(&r.dev, &r.acc)?;
            }
            let mut work = vec![(0usize, 0f64); nd];
            for &(offset, b) in &steps {
                let sizes = balancer.split(b);
                let t = reps[0].model.step + 1;
                // Forward and backward on every shard, all devices at once.
                let mut start = offset;
                let mut pending = Vec::with_capacity(nd);
                // A shard whose plan was just built also pays for its first use (lavapipe
                // compiles pipelines then): its time says nothing about the device's speed.
                let mut fresh = vec![false; nd];
                for (d, r) in reps.iter_mut().enumerate() {
                    let n = sizes[d];
                    if n > 0 {
                        fresh[d] = !r.plans.contains_key(&n);
                        pending.push((d, r.shard(&data[d], start, n, o.seed, t)?));
                    }
                    start += n;
                }
                let mut secs = vec![0.0; nd];
                for (d, done) in wait_all(&reps, pending)? {
                    let f = popts.slowdown.get(d).copied().unwrap_or(1.0).max(1.0);
                    if f > 1.0 {
                        std::thread::sleep(Duration::from_secs_f64((f - 1.0) * done));
                    }
                    if !fresh[d] {
                        secs[d] = done * f;
                        work[d].0 += sizes[d];
                        work[d].1 += secs[d];
                    }
                }
                // Combine the shard gradients (copied to each device's staging buffer in the
                // same submission as the shard), weighted by shard size, and share them.
                let mut combined: Vec<f64> = vec![0.0; nparams];
                let active: Vec<usize> = (0..nd).filter(|&d| sizes[d] > 0).collect();
                for (d, v) in read_staging(&reps, &active)? {
                    let w = sizes[d] as f64 / b as f64;
                    for (c, x) in combined.iter_mut().zip(&v) {
                        *c += w * *x as f64;
                    }
                }
                let mut combined: Vec<f32> = combined.into_iter().map(|x| x as f32).collect();
                let combined: Vec<Vec<f32>> = reps[0]
                    .params()
                    .iter()
                    .map(|(p, _)| combined.drain(..p.numel()).collect())
                    .collect();
                for (r, prog) in reps.iter_mut().zip(&progs) {
                    r.step_optimizer(prog, &rule, &combined, t)?;
                }
                log::debug!(
                    "step {t}: shards {sizes:?}, seconds {secs:?}, shares {:?}",
                    balancer.shares()
                );
                balancer.observe(&sizes, &secs, &penalty);
                out.shares.push(balancer.shares().to_vec());
            }
            // Epoch end: metrics over all shards, replicas checked, telemetry.
            let (mut l, mut c, mut n) = (0.0, 0.0, 0.0);
            for r in &reps {
                let (a, b2, c2) = train::read_acc(&r.acc)?;
                l += a;
                c += b2;
                n += c2;
            }
            let secs = t_epoch.elapsed().as_secs_f64();
            let h = &mut out.history;
            h.loss.push(l / n);
            h.accuracy.push(c / n);
            h.epoch_seconds.push(secs);
            h.utilisation.push(f64::NAN);
            let val = match o.validation_data {
                Some(v) => Some(reps[0].model.evaluate(v, 1000)?),
                None => None,
            };
            if let Some((vl, va)) = val {
                h.val_loss.push(vl);
                h.val_accuracy.push(va);
            }
            out.throughput
                .push(work.iter().map(|(s, t)| *s as f64 / t.max(1e-9)).collect());
            let w0 = reps[0].weights()?;
            for r in &reps[1..] {
                if r.weights()? != w0 {
                    out.replicas_identical = false;
                    log::error!("replica on {} drifted from replica 0", r.dev.name());
                }
            }
            for (d, w) in watches.iter_mut().enumerate() {
                let ev = w.epoch_end(epoch, h);
                penalty[d] = if ev.iter().any(|e| {
                    matches!(
                        e,
                        crate::telemetry::WatchEvent::Throttled
                            | crate::telemetry::WatchEvent::Hot { .. }
                    )
                }) {
                    log::warn!(
                        "{} is throttling or hot: its share of the batch is reduced",
                        group.devices()[d].name()
                    );
                    0.8
                } else {
                    1.0
                };
            }
            if o.verbose {
                let shares: Vec<String> = group
                    .devices()
                    .iter()
                    .zip(balancer.shares())
                    .zip(&out.throughput[epoch])
                    .map(|((dev, s), tp)| {
                        format!("{} {:.0}% {:.1}k/s", dev.id(), 100.0 * s, tp / 1e3)
                    })
                    .collect();
                let val = val.map_or(String::new(), |(vl, va)| {
                    format!(" - val_loss: {vl:.4} - val_accuracy: {va:.4}")
                });
                println!(
                    "Epoch {}/{} - {secs:.1}s - loss: {:.4} - accuracy: {:.4}{val} - shares [{}]",
                    epoch + 1,
                    o.epochs,
                    l / n,
                    c / n,
                    shares.join(", ")
                );
            }
            if let Some(cb) = o.on_epoch_end.as_mut() {
                if !cb(epoch, h) {
                    break;
                }
            }
        }
        // The trained weights and optimizer state come home.
        let back = reps[0].model.to_device(&self.device)?;
        self.layers = back.layers;
        self.opt_state = back.opt_state;
        self.step = back.step;
        Ok(out)
    }
}

/// One device's replica and its training state.
struct Replica {
    /// The shard's gradients, all parameters back to back, for one mapping per step.
    staging: wgpu::Buffer,
    dev: Device,
    model: Sequential,
    grads: Grads,
    drops: Vec<(usize, f32)>,
    table: Tensor,
    acc: Tensor,
    idx: IndexBuffer,
    /// Plans per shard size (shard sizes move with the balancer).
    plans: HashMap<usize, Plan>,
}

/// A submitted shard: when it was submitted, and the flag its device sets when done.
type Pending = (Instant, Arc<Mutex<Option<Instant>>>);

/// Plans kept per device; beyond this the cache is cleared (shard sizes settle quickly).
const MAX_PLANS: usize = 24;

impl Replica {
    fn params(&self) -> Vec<(Tensor, Tensor)> {
        train::params(&self.model, &self.grads)
    }

    fn optimizer_program(&self, rule: &optim::Rule) -> Result<Program> {
        train::optimizer_program(&self.model, rule, &self.params(), &self.table)
    }

    /// Submits the forward and backward pass over permutation rows `start..start + n` and
    /// returns when the device reports it done (a flag set by the queue).
    fn shard(
        &mut self,
        data: &Dataset,
        start: usize,
        n: usize,
        seed: u64,
        t: u64,
    ) -> Result<Pending> {
        if !self.plans.contains_key(&n) {
            if self.plans.len() >= MAX_PLANS {
                self.plans.clear();
            }
            let p = train::plan(
                &self.model,
                data,
                &self.idx,
                n,
                train::Backward::Grads(&self.grads),
                &self.acc,
                &self.table,
            )?;
            self.plans.insert(n, p);
        }
        let plan = &self.plans[&n];
        let align = self.dev.uniform_alignment() as usize;
        let mut bytes = vec![0u8; (2 + self.drops.len()) * align];
        train::put_step_uniforms(
            data,
            &self.idx,
            start,
            n,
            &self.drops,
            seed,
            t,
            &mut |j, u| bytes[j * align..j * align + u.len()].copy_from_slice(u),
        );
        self.dev
            .wgpu_queue()
            .write_buffer(self.table.buffer(), 0, &bytes);
        let mut rec = self.dev.recorder();
        rec.replay_at(&plan.gather, &[0, align as u32][..plan.gather.len()])?;
        let nd = self.drops.len();
        let offs: Vec<u32> = plan
            .dynamic
            .iter()
            .map(|&d| (train::dyn_slot(d, nd) * align) as u32)
            .collect();
        rec.replay_at(&plan.body, &offs)?;
        // The gradients go to the staging buffer in the same submission.
        let mut at = 0;
        for (_, g) in self.params() {
            let bytes = g.numel() as u64 * 4;
            rec.copy_at(g.buffer(), &self.staging, at, bytes);
            at += bytes;
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

    /// Uploads the combined gradients and applies the optimizer step `t`.
    fn step_optimizer(
        &mut self,
        prog: &Program,
        rule: &optim::Rule,
        grads: &[Vec<f32>],
        t: u64,
    ) -> Result<()> {
        let ps = self.params();
        let align = self.dev.uniform_alignment() as usize;
        let base = 2 + self.drops.len();
        let mut bytes = vec![0u8; ps.len() * align];
        for (i, ((p, g), v)) in ps.iter().zip(grads).enumerate() {
            self.dev
                .wgpu_queue()
                .write_buffer(g.buffer(), 0, bytemuck::cast_slice(v));
            let u = rule.params(p.numel(), t);
            bytes[i * align..i * align + std::mem::size_of_val(&u)]
                .copy_from_slice(bytemuck::bytes_of(&u));
        }
        self.dev
            .wgpu_queue()
            .write_buffer(self.table.buffer(), (base * align) as u64, &bytes);
        let offs: Vec<u32> = (0..ps.len()).map(|i| ((base + i) * align) as u32).collect();
        let mut rec = self.dev.recorder();
        rec.replay_at(prog, &offs)?;
        rec.submit()?;
        self.model.step = t;
        Ok(())
    }

    /// Every parameter, in order, as host floats.
    fn weights(&self) -> Result<Vec<Vec<f32>>> {
        self.params().iter().map(|(p, _)| p.to_vec()).collect()
    }
}

/// Maps the staging buffers of devices `active` (their work is done) and returns their
/// contents as floats.
fn read_staging(reps: &[Replica], active: &[usize]) -> Result<Vec<(usize, Vec<f32>)>> {
    let mut rx = Vec::with_capacity(active.len());
    for &d in active {
        let (tx, r) = std::sync::mpsc::channel();
        reps[d]
            .staging
            .map_async(wgpu::MapMode::Read, .., move |res| {
                let _ = tx.send(res);
            });
        rx.push((d, r));
    }
    let mut out = Vec::with_capacity(active.len());
    for (d, r) in rx {
        let dev = &reps[d].dev;
        dev.synchronize()?;
        let deadline = Instant::now() + dev.timeout();
        let res = loop {
            match r.recv_timeout(Duration::from_millis(1)) {
                Ok(res) => break res,
                Err(_) if Instant::now() > deadline => {
                    return Err(Error::Timeout {
                        op: "fit_parallel (gradient readback)",
                        seconds: dev.timeout().as_secs_f64(),
                    })
                }
                Err(_) => {
                    let _ = dev.wgpu_device().poll(wgpu::PollType::Poll);
                }
            }
        };
        res.map_err(|e| Error::Gpu {
            op: "fit_parallel (gradient readback)",
            message: e.to_string(),
        })?;
        let staging = &reps[d].staging;
        let view = staging.get_mapped_range(..).map_err(|e| Error::Gpu {
            op: "fit_parallel (gradient readback)",
            message: e.to_string(),
        })?;
        let v: Vec<f32> = bytemuck::pod_collect_to_vec(&view);
        drop(view);
        staging.unmap();
        out.push((d, v));
    }
    Ok(out)
}

/// Waits until every pending shard's device reports its work done; returns each device's
/// seconds from submission to completion.
fn wait_all(reps: &[Replica], pending: Vec<(usize, Pending)>) -> Result<Vec<(usize, f64)>> {
    let deadline = Instant::now() + reps[0].dev.timeout();
    let mut out = Vec::with_capacity(pending.len());
    let mut left = pending;
    while !left.is_empty() {
        let mut still = Vec::with_capacity(left.len());
        for (d, (t0, flag)) in left {
            let _ = reps[d].dev.wgpu_device().poll(wgpu::PollType::Poll);
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
