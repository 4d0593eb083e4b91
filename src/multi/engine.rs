//! The engine of data-parallel training (see [`crate::multi::data_parallel`]): one global
//! step at a time, each replica's shard submitted segment by segment, buckets read and handed
//! to the exchange as their segments finish, the combined gradients uploaded and applied with
//! the next step's first submission; the per-epoch checks (identical replicas) and reports.

use std::hash::{Hash, Hasher};
use std::path::Path;
use std::time::{Duration, Instant};

use crate::data::dataset::Dataset;
use crate::error::{Error, Result};
use crate::multi::balancer::Balancer;
use crate::multi::exchange::{self, Exchange};
use crate::multi::replica::{Bucket, Flag, Pollers, Replica};
use crate::nn::train::evaluate::Evaluator;
use crate::nn::train::fit::{Engine, EpochReport};
use crate::nn::train::options::{Evaluation, History};
use crate::nn::train::scoring::Scoring;
use crate::nn::train::step::{self, RuleAt};
use crate::services::profile::UtilisationWindow;
use crate::telemetry::governor::Governor;
use crate::telemetry::{DeviceWatch, WatchEvent};
use crate::vocab::Rule;

/// What the exchange cost in one epoch.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ExchangeReport {
    /// Bytes this process sent to other processes per step (0 in one process).
    pub bytes_sent_per_step: f64,
    /// Bytes moved between the host and this process's devices per step (gradients up and
    /// down).
    pub host_bytes_per_step: f64,
    /// Seconds per step the exchange worked on buckets.
    pub seconds_per_step: f64,
    /// Seconds per step training waited for the exchange after the last bucket's gradients
    /// were in host memory.
    pub exposed_per_step: f64,
    /// The share of the exchange's time hidden behind computation: 1 − exposed / exchange.
    pub hidden: f64,
    /// Buckets per step.
    pub buckets: usize,
}

/// What [`crate::nn::Sequential::fit_parallel`] measured.
#[derive(Clone, Debug, Default)]
pub struct ParallelHistory {
    /// The usual per-epoch history (loss and accuracy over all shards).
    pub history: History,
    /// Shares of this process's devices after every step.
    pub shares: Vec<Vec<f64>>,
    /// Per epoch, per device of this process: samples per second of compute (shard rows /
    /// shard time).
    pub throughput: Vec<Vec<f64>>,
    /// Per epoch, per process: samples per second (rows trained / epoch seconds).
    pub rank_throughput: Vec<Vec<f64>>,
    /// Per epoch: the exchange's cost.
    pub exchange: Vec<ExchangeReport>,
    /// Bytes moved between host and devices per step per active device (gradients down and
    /// up).
    pub bytes_per_step: u64,
}

/// `n` cut into `parts` consecutive pieces as equal as possible, the larger ones first.
pub(crate) fn even_split(n: usize, parts: usize) -> Vec<usize> {
    let parts = parts.max(1);
    (0..parts)
        .map(|i| n / parts + usize::from(i < n % parts))
        .collect()
}

/// Per-epoch exchange accounting.
#[derive(Default)]
pub(crate) struct Tally {
    pub(crate) steps: usize,
    pub(crate) exchange: f64,
    pub(crate) exposed: f64,
    pub(crate) rows: usize,
    pub(crate) started: Option<Instant>,
}

pub(crate) struct ParallelEngine<'a> {
    pub(crate) reps: Vec<Replica>,
    /// With several devices: when each finished its step (the balancer's input).
    pub(crate) pollers: Option<Pollers>,
    pub(crate) data: &'a [Dataset],
    pub(crate) ex: &'a mut dyn Exchange,
    pub(crate) buckets: Vec<Bucket>,
    pub(crate) balancer: Balancer,
    pub(crate) watches: Vec<DeviceWatch>,
    pub(crate) penalty: Vec<f64>,
    /// The governor's scaling of each device's share (1: not held back).
    pub(crate) gov_factor: Vec<f64>,
    pub(crate) slowdown: Vec<f64>,
    pub(crate) simulated: Option<Vec<f64>>,
    pub(crate) fail_at: Option<u64>,
    pub(crate) seed: u64,
    /// Per device: rows and seconds of compute this epoch.
    pub(crate) work: Vec<(usize, f64)>,
    /// This process's slice of the validation rows (`None`: no validation; an evaluator of
    /// `None` inside: this process's slice is empty).
    pub(crate) validation: Option<(Option<Evaluator>, &'a Dataset)>,
    pub(crate) tally: Tally,
    /// Queue utilisation of the first device over the epoch.
    pub(crate) window: Option<UtilisationWindow>,
    pub(crate) out: ParallelHistory,
}

/// A hash of every parameter's bits (the replicas' identity check across processes).
pub(crate) fn weights_hash(w: &[Vec<f32>]) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    for p in w {
        p.len().hash(&mut h);
        for v in p {
            v.to_bits().hash(&mut h);
        }
    }
    h.finish()
}

impl ParallelEngine<'_> {
    /// Runs one global step of `b` rows at permutation offset `offset`, optimizer step `t`.
    fn step(&mut self, offset: usize, b: usize, t: u64, rule: &Rule) -> Result<()> {
        if self.fail_at == Some(t) {
            return Err(Error::DeviceLost {
                op: "fit_parallel",
                device: self.reps[0].dev.name().to_string(),
                reason: format!("a fault injected at step {t} by ParallelOptions::fail_at_step"),
            });
        }
        let nd = self.reps.len();
        let (rank, ranks) = (self.ex.rank(), self.ex.ranks());
        let per_rank = even_split(b, ranks);
        let mine = per_rank[rank];
        let sizes = self.balancer.split(mine);
        let first = offset + per_rank[..rank].iter().sum::<usize>();
        let mut start = first;
        let mut fresh = vec![false; nd];
        let mut flags: Vec<Option<(Instant, Flag)>> = vec![None; nd];
        let mut began = vec![Instant::now(); nd];
        for (d, r) in self.reps.iter_mut().enumerate() {
            let n = sizes[d];
            if n > 0 {
                fresh[d] = !r.has_plan(n);
                r.begin_step(&self.data[d], start, n, self.seed, t, rule)?;
            } else {
                // Idle this step: the previous step's update runs now, before the new
                // gradients overwrite its inputs.
                r.flush(&self.data[d])?;
            }
            start += n;
        }
        // Segment by segment across devices, so no device waits behind another's queue.
        let nseg = self.buckets.len();
        for seg in 0..nseg {
            for (d, r) in self.reps.iter_mut().enumerate() {
                if sizes[d] == 0 {
                    continue;
                }
                if seg == 0 {
                    began[d] = Instant::now();
                }
                let index = r.submit_segment(seg)?;
                if let (true, Some(p)) = (seg + 1 == nseg, &self.pollers) {
                    let f: Flag = Default::default();
                    flags[d] = Some((began[d], f.clone()));
                    p.watch(d, index, f);
                }
            }
        }
        // Bucket by bucket: read every device's part as soon as its segment is done and hand
        // it to the exchange, which combines it while later segments run.
        let mut ready_last = Instant::now();
        for (seg, bucket) in self.buckets.iter().enumerate() {
            let mut parts = Vec::with_capacity(nd);
            for (d, r) in self.reps.iter().enumerate() {
                parts.push(if sizes[d] > 0 {
                    r.read_bucket(seg, sizes[d] as f32 / b as f32)?
                } else {
                    vec![0.0; bucket.len]
                });
            }
            ready_last = Instant::now();
            self.ex.start(seg, parts)?;
        }
        let mut busy = 0.0;
        let mut combined = Vec::with_capacity(nseg);
        for seg in 0..nseg {
            let c = self.ex.finish(seg)?;
            busy += c.done.saturating_duration_since(c.started).as_secs_f64();
            combined.push(c.data);
        }
        self.tally.exposed += ready_last.elapsed().as_secs_f64().min(busy);
        for (seg, c) in combined.iter().enumerate() {
            for r in &self.reps {
                r.upload_bucket(seg, c)?;
            }
        }
        self.tally.exchange += busy;
        self.tally.steps += 1;
        self.tally.rows += mine;
        for r in self.reps.iter_mut() {
            r.set_pending(t, *rule);
        }
        // Each device's compute time, for the balancer.
        let mut secs = vec![0.0; nd];
        for d in 0..nd {
            let Some((t0, flag)) = &flags[d] else {
                continue;
            };
            let done = wait_flag(&self.reps[d], flag)?;
            let took = done.saturating_duration_since(*t0).as_secs_f64();
            let f = self.slowdown.get(d).copied().unwrap_or(1.0).max(1.0);
            if f > 1.0 {
                std::thread::sleep(Duration::from_secs_f64((f - 1.0) * took));
            }
            let simulated = self
                .simulated
                .as_ref()
                .and_then(|r| r.get(d))
                .map(|rate| sizes[d] as f64 / rate.max(1e-9));
            if let Some(s) = simulated {
                secs[d] = s;
            } else if !fresh[d] {
                secs[d] = took * f;
            }
            if secs[d] > 0.0 {
                self.work[d].0 += sizes[d];
                self.work[d].1 += secs[d];
            }
        }
        if nd > 1 {
            log::debug!(
                "step {t}: shards {sizes:?}, seconds {secs:?}, shares {:?}",
                self.balancer.shares()
            );
            let penalty: Vec<f64> = self
                .penalty
                .iter()
                .zip(&self.gov_factor)
                .map(|(p, g)| p * g)
                .collect();
            self.balancer.observe(&sizes, &secs, &penalty);
        }
        self.out.shares.push(self.balancer.shares().to_vec());
        Ok(())
    }

    /// Applies every replica's pending update.
    pub(crate) fn flush(&mut self) -> Result<()> {
        for (d, r) in self.reps.iter_mut().enumerate() {
            r.flush(&self.data[d])?;
        }
        Ok(())
    }

    /// Makes every replica's non-trainable state (batch normalisation's moving statistics)
    /// the mean over all replicas of all processes, as TensorFlow's mirrored training does:
    /// each replica normalises with its own shard's batch statistics and so moves its
    /// moving statistics on its own. Summed in replica and rank order, so every process
    /// gets the same bits.
    pub(crate) fn sync_state(&mut self) -> Result<()> {
        let states = self
            .reps
            .iter()
            .map(|r| r.state())
            .collect::<Result<Vec<_>>>()?;
        let Some(first) = states.first().filter(|s| !s.is_empty()) else {
            return Ok(());
        };
        let sizes: Vec<usize> = first.iter().map(Vec::len).collect();
        let mut local = vec![0.0f64; sizes.iter().sum::<usize>() + 1];
        for st in &states {
            for (o, &v) in local.iter_mut().zip(st.iter().flatten()) {
                *o += v as f64;
            }
        }
        *local.last_mut().unwrap_or(&mut 0.0) = states.len() as f64;
        let all = exchange::sum_f64(self.ex, &local)?;
        let count = all.last().copied().unwrap_or(1.0).max(1.0);
        let mut mean = Vec::with_capacity(sizes.len());
        let mut at = 0;
        for n in sizes {
            mean.push(
                all[at..at + n]
                    .iter()
                    .map(|v| (v / count) as f32)
                    .collect::<Vec<f32>>(),
            );
            at += n;
        }
        for r in &self.reps {
            r.set_state(&mean)?;
        }
        Ok(())
    }
}

/// Waits (bounded by the device's timeout) until `flag` is set by the device's queue.
fn wait_flag(r: &Replica, flag: &Flag) -> Result<Instant> {
    let deadline = Instant::now() + r.dev.timeout();
    loop {
        if let Some(t) = flag.lock().ok().and_then(|g| *g) {
            return Ok(t);
        }
        if Instant::now() > deadline {
            return Err(Error::Timeout {
                op: "fit_parallel",
                seconds: r.dev.timeout().as_secs_f64(),
            });
        }
        std::thread::sleep(Duration::from_micros(50));
    }
}

impl Engine for ParallelEngine<'_> {
    fn begin_epoch(&mut self, perm: &[u32]) -> Result<()> {
        for r in &self.reps {
            r.idx.write(&r.dev, perm)?;
            step::clear(&r.dev, &r.acc)?;
        }
        self.work = vec![(0, 0.0); self.reps.len()];
        self.tally = Tally {
            started: Some(Instant::now()),
            ..Tally::default()
        };
        self.ex.take_stats();
        self.window = Some(self.reps[0].dev.utilisation_window());
        Ok(())
    }

    fn run(&mut self, steps: &[(usize, usize)], t0: u64, rule: &RuleAt<'_>) -> Result<()> {
        for (i, &(offset, b)) in steps.iter().enumerate() {
            let t = t0 + i as u64 + 1;
            self.step(offset, b, t, &rule(t)?)?;
        }
        Ok(())
    }

    fn sums(&mut self) -> Result<Vec<f64>> {
        let mut s: Vec<f64> = Vec::new();
        for r in &self.reps {
            let a = step::read_acc(&r.acc)?;
            s.resize(a.len(), 0.0);
            for (x, y) in s.iter_mut().zip(a) {
                *x += y;
            }
        }
        exchange::sum_f64(self.ex, &s)
    }

    fn agree(&mut self, flag: bool) -> Result<bool> {
        exchange::any(self.ex, flag)
    }

    /// In a group, a device's duty cuts its share of the batch (the others take the rows);
    /// the group pauses only at the largest duty, when every device is held back.
    fn govern(&mut self, g: &mut Governor, began: Instant) -> Result<bool> {
        let changed = g.update();
        let factors = g.share_factors();
        if factors.len() == self.gov_factor.len() {
            if changed && self.reps.len() > 1 {
                log::info!("governor: shares of the batch scaled by {factors:.2?}");
            }
            self.gov_factor = factors;
        }
        if g.pacing() {
            // Every step already waited for its devices (the exchange needs their gradients).
            let busy = g.now().saturating_duration_since(began);
            g.pace_after(busy);
        }
        Ok(changed)
    }

    fn end_epoch(&mut self, epoch: usize) -> Result<EpochReport> {
        self.flush()?;
        self.sync_state()?;
        let seconds = self
            .tally
            .started
            .map_or(0.0, |t| t.elapsed().as_secs_f64());
        let throughput: Vec<f64> = self
            .work
            .iter()
            .map(|(s, t)| *s as f64 / t.max(1e-9))
            .collect();
        // Identical replicas: bitwise in this process, by hash across processes.
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
        let mine = self.tally.rows as f64 / seconds.max(1e-9);
        let mut msg = weights_hash(&w0).to_le_bytes().to_vec();
        msg.extend(mine.to_le_bytes());
        let all = self.ex.all_gather(msg)?;
        let hashes: Vec<u64> = all
            .iter()
            .map(|b| u64::from_le_bytes(b[..8].try_into().unwrap_or([0; 8])))
            .collect();
        if let Some(r) = hashes.iter().position(|h| *h != hashes[0]) {
            return Err(Error::Internal {
                op: "fit_parallel",
                message: format!(
                    "the replica of rank {r} differs from rank 0's after epoch {} (weight hashes {:016x} and {:016x})",
                    epoch + 1,
                    hashes[r],
                    hashes[0]
                ),
            });
        }
        let rank_tp: Vec<f64> = all
            .iter()
            .map(|b| f64::from_le_bytes(b[8..16].try_into().unwrap_or([0; 8])))
            .collect();
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
        let steps = self.tally.steps.max(1) as f64;
        let stats = self.ex.take_stats();
        let floats: usize = self.buckets.iter().map(|b| b.len).sum();
        let report = ExchangeReport {
            bytes_sent_per_step: stats.bytes_sent as f64 / steps,
            host_bytes_per_step: (2 * floats * 4 * self.reps.len()) as f64,
            seconds_per_step: self.tally.exchange / steps,
            exposed_per_step: self.tally.exposed / steps,
            hidden: if self.tally.exchange > 0.0 {
                (1.0 - self.tally.exposed / self.tally.exchange).clamp(0.0, 1.0)
            } else {
                0.0
            },
            buckets: self.buckets.len(),
        };
        let mut detail = Vec::new();
        if self.reps.len() > 1 {
            detail.push(format!(
                "shares [{}]",
                self.reps
                    .iter()
                    .zip(self.balancer.shares())
                    .zip(&throughput)
                    .map(|((r, s), tp)| format!(
                        "{} {:.0}% {:.1}k/s",
                        r.dev.id(),
                        100.0 * s,
                        tp / 1e3
                    ))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        if self.ex.ranks() > 1 {
            detail.push(format!(
                "ranks [{}] - exchange {:.1} KB/step, {:.2} ms/step, {:.0}% hidden",
                rank_tp
                    .iter()
                    .map(|v| format!("{:.1}k/s", v / 1e3))
                    .collect::<Vec<_>>()
                    .join(", "),
                report.bytes_sent_per_step / 1e3,
                report.seconds_per_step * 1e3,
                100.0 * report.hidden
            ));
        } else {
            detail.push(format!(
                "exchange {:.2} ms/step, {:.0}% hidden",
                report.seconds_per_step * 1e3,
                100.0 * report.hidden
            ));
        }
        self.out.throughput.push(throughput);
        self.out.rank_throughput.push(rank_tp);
        self.out.exchange.push(report);
        Ok(EpochReport {
            utilisation: self
                .window
                .take()
                .map_or(f64::NAN, |w| w.utilisation().fraction()),
            detail: detail.join(" - "),
            shares: if self.reps.len() > 1 {
                self.reps
                    .iter()
                    .zip(self.balancer.shares())
                    .map(|(r, s)| (r.dev.info().spec().to_string(), *s))
                    .collect()
            } else {
                Vec::new()
            },
            exchange: (self.ex.ranks() > 1)
                .then_some((report.bytes_sent_per_step, report.seconds_per_step)),
            loss_scale: None,
        })
    }

    fn validate(&mut self) -> Result<Option<Evaluation>> {
        let Some((eval, data)) = &self.validation else {
            return Ok(None);
        };
        // A process without validation rows adds zeros of the same length.
        let scoring = Scoring::of(&self.reps[0].model);
        let mut sums = vec![0.0; scoring.len()];
        if let Some(e) = eval {
            sums = e.run_sums(&self.reps[0].dev, data)?;
        }
        let all = exchange::sum_f64(self.ex, &sums)?;
        Ok(Some(scoring.evaluation(&all)))
    }

    fn save_checkpoint(
        &mut self,
        path: &Path,
        epoch: usize,
        seed: u64,
        history: &History,
    ) -> Result<()> {
        if self.ex.rank() == 0 {
            self.reps[0]
                .model
                .save_checkpoint(path, epoch, seed, history)?;
        }
        Ok(())
    }
}
