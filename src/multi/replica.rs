//! One device's share of data-parallel training: a copy of the model, its gradients grouped
//! into buckets, step programs cut at the bucket boundaries, and the submissions that let a
//! bucket leave the device while the backward pass of the layers below it still runs.
//!
//! Buckets follow PyTorch DDP: parameters in reverse layer order (the order the backward pass
//! produces their gradients), a bucket closing at the first layer boundary where it holds at
//! least the bucket size. A step is one submission per bucket: segment `i` computes bucket
//! `i`'s gradients and copies them to a staging buffer, so the host can read them and the
//! exchange combine them while segment `i + 1` runs. The optimizer step that applies the
//! combined gradients is recorded at the start of the next step's first submission (one
//! submission fewer per step), or on its own when nothing follows.

use std::collections::HashMap;
use std::ops::Range;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use crate::data::dataset::Dataset;
use crate::error::{Error, Result};
use crate::exec::dispatch::Program;
use crate::exec::recorder::Recorder;
use crate::nn::graph::model::Sequential;
use crate::nn::layer::Slot;
use crate::nn::train::step::{self, StepProgram};
use crate::nn::train::table::{Backward, Chunk, StepInputs, StepLayout};
use crate::runtime::Device;
use crate::tensor::{IndexBuffer, Tensor};
use crate::vocab::Rule;

/// A group of parameters whose gradients travel together.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Bucket {
    /// Layers, lowest first (a bucket holds consecutive layers).
    pub layers: Range<usize>,
    /// Parameters in optimizer order.
    pub params: Range<usize>,
    /// Values (f32).
    pub len: usize,
}

/// Buckets of at least `bucket_bytes` each (the last one possibly smaller), in reverse layer
/// order (see the module docs). Layers without parameters join the bucket below them.
pub fn buckets(model: &Sequential, bucket_bytes: usize) -> Vec<Bucket> {
    if model.has_shared_weights() {
        // A tensor several layers hold (a shared layer's calls, a tied projection) has one
        // gradient, complete only once its lowest holder's backward has run, and layers'
        // parameters are no longer consecutive in optimizer order: one bucket, read after
        // the whole backward pass.
        let params = model.params();
        return vec![Bucket {
            layers: 0..model.layers.len(),
            params: 0..params.len(),
            len: params.iter().map(|t| t.numel()).sum(),
        }];
    }
    let positions = model.positions();
    let counts: Vec<(usize, usize)> = model
        .layers
        .iter()
        .map(|l| {
            let p = &l.weights().params;
            (p.len(), p.iter().map(|t| t.numel()).sum())
        })
        .collect();
    let mut out = Vec::new();
    let mut hi = model.layers.len();
    let mut len = 0;
    for l in (0..model.layers.len()).rev() {
        len += counts[l].1;
        if (len * 4 >= bucket_bytes.max(1) && len > 0) || l == 0 {
            let first = positions[l].first_param;
            let end = positions[hi - 1].first_param + counts[hi - 1].0;
            out.push(Bucket {
                layers: l..hi,
                params: first..end,
                len,
            });
            hi = l;
            len = 0;
        }
    }
    out
}

/// The moments a device's part of a step was submitted and finished.
pub(crate) type Flag = Arc<Mutex<Option<Instant>>>;

/// One device's replica (see the module docs).
pub(crate) struct Replica {
    pub(crate) dev: Device,
    pub(crate) model: Sequential,
    grads: Vec<Tensor>,
    /// Per bucket, a staging buffer its gradients are copied to for reading.
    staging: Vec<wgpu::Buffer>,
    pub(crate) acc: Tensor,
    pub(crate) idx: IndexBuffer,
    layout: StepLayout,
    table: Tensor,
    /// Step programs per shard size (shard sizes move with the balancer).
    plans: HashMap<usize, StepProgram>,
    optimizer: (Program, Vec<Slot>),
    /// The gradient norms the optimizer program's clipping writes (kept with it).
    _norms: Tensor,
    buckets: Vec<Bucket>,
    cut_after: Vec<usize>,
    /// The optimizer step whose combined gradients are uploaded but not yet applied.
    pending: Option<(u64, Rule)>,
    /// This step's shard size, and the submission index of each segment.
    current: Option<usize>,
    submitted: Vec<wgpu::SubmissionIndex>,
}

/// Step programs kept per device; beyond this the cache is cleared (shard sizes settle).
const MAX_PLANS: usize = 24;

impl Replica {
    /// A replica of `model` on `dev` training on `data` (`rows` training rows) with buckets
    /// `buckets`.
    pub(crate) fn new(
        model: &Sequential,
        dev: &Device,
        data: &Dataset,
        rows: usize,
        rule: &Rule,
        buckets: &[Bucket],
    ) -> Result<Replica> {
        let mut m = model.to_device(dev)?;
        m.check_dataset("fit_parallel", data)?;
        m.init_opt_state(rule)?;
        let grads = step::gradient_buffers(&m)?;
        let layout = StepLayout::new(&m, data, Backward::Grads(&grads));
        let table = layout.table(dev)?;
        let acc = step::accumulator(&m)?;
        let idx = IndexBuffer::new(dev, &vec![0u32; rows])?;
        let staging = buckets
            .iter()
            .map(|b| {
                dev.wgpu_device().create_buffer(&wgpu::BufferDescriptor {
                    label: Some("suanli gradient bucket readback"),
                    size: (b.len.max(1) * 4) as u64,
                    usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                    mapped_at_creation: false,
                })
            })
            .collect();
        let norms = Tensor::empty(dev, &[grads.len().max(1)])?;
        let optimizer = step::optimizer_program(&m, rule, &grads, &norms, &table)?;
        // Segment i ends after the lowest layer of bucket i (the last bucket ends the step).
        let cut_after = buckets[..buckets.len().saturating_sub(1)]
            .iter()
            .map(|b| b.layers.start)
            .collect();
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
            _norms: norms,
            buckets: buckets.to_vec(),
            cut_after,
            pending: None,
            current: None,
            submitted: Vec::new(),
        })
    }

    /// Whether the step program for `n` rows exists already (a new one compiles pipelines at
    /// its first use, so its time says nothing about the device's speed).
    pub(crate) fn has_plan(&self, n: usize) -> bool {
        self.plans.contains_key(&n)
    }

    /// Prepares the step over permutation rows `start..start + n` at optimizer step `t`: its
    /// uniforms, and the pending optimizer step's, in one upload.
    #[allow(clippy::too_many_arguments)] // a step's inputs, spelled out
    pub(crate) fn begin_step(
        &mut self,
        data: &Dataset,
        start: usize,
        n: usize,
        seed: u64,
        t: u64,
        rule: &Rule,
    ) -> Result<()> {
        if !self.plans.contains_key(&n) {
            if self.plans.len() >= MAX_PLANS {
                self.plans.clear();
            }
            let p = StepProgram::build_cut(
                &self.model,
                data,
                &self.idx,
                n,
                Backward::Grads(&self.grads),
                &self.acc,
                &self.table,
                &self.cut_after,
            )?;
            if p.segments() != self.buckets.len() {
                return Err(Error::Internal {
                    op: "fit_parallel",
                    message: format!(
                        "{} segments for {} buckets",
                        p.segments(),
                        self.buckets.len()
                    ),
                });
            }
            self.plans.insert(n, p);
        }
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
        chunk.put(0, self.plans[&n].slots(), &inputs)?;
        if let Some((tp, rp)) = &self.pending {
            let pending = StepInputs {
                t: *tp,
                rule: Some(rp),
                ..inputs
            };
            chunk.put(0, &self.optimizer.1, &pending)?;
        }
        chunk.upload(&self.dev, &self.table);
        self.current = Some(n);
        self.submitted.clear();
        Ok(())
    }

    /// Submits segment `seg` of the prepared step and the copy of its bucket to staging (the
    /// first segment starts with the pending optimizer step); returns its submission.
    pub(crate) fn submit_segment(&mut self, seg: usize) -> Result<wgpu::SubmissionIndex> {
        let n = self.current.ok_or_else(|| Error::Internal {
            op: "fit_parallel",
            message: "a segment submitted before its step".into(),
        })?;
        let chunk = Chunk::new(&self.layout, 1);
        let mut rec = Recorder::new(&self.dev);
        if seg == 0 && self.pending.take().is_some() {
            rec.replay_at(&self.optimizer.0, &chunk.offsets(0, &self.optimizer.1)?)?;
        }
        self.plans[&n].replay_segment(&mut rec, &chunk, 0, seg)?;
        let b = &self.buckets[seg];
        let mut at = 0;
        for g in &self.grads[b.params.clone()] {
            rec.copy_at(g.buffer(), &self.staging[seg], at, g.byte_len());
            at += g.byte_len();
        }
        let index = rec.submit()?;
        self.submitted.push(index.clone());
        Ok(index)
    }

    /// Bucket `seg`'s gradients of the submitted step, once its segment is done (later
    /// segments may still run), times `weight`.
    pub(crate) fn read_bucket(&self, seg: usize, weight: f32) -> Result<Vec<f32>> {
        let index = self.submitted.get(seg).cloned();
        let bytes = self.dev.core().map_read_after(
            &self.staging[seg],
            index,
            "fit_parallel (gradients)",
        )?;
        let mut v: Vec<f32> = bytemuck::pod_collect_to_vec(&bytes);
        v.truncate(self.buckets[seg].len);
        if weight != 1.0 {
            v.iter_mut().for_each(|x| *x *= weight);
        }
        Ok(v)
    }

    /// Uploads bucket `seg`'s combined gradients into the gradient buffers.
    pub(crate) fn upload_bucket(&self, seg: usize, combined: &[f32]) -> Result<()> {
        let b = &self.buckets[seg];
        if combined.len() != b.len {
            return Err(Error::Internal {
                op: "fit_parallel",
                message: format!("bucket {seg}: {} values for {}", combined.len(), b.len),
            });
        }
        let mut at = 0;
        for g in &self.grads[b.params.clone()] {
            let n = g.numel();
            self.dev.wgpu_queue().write_buffer(
                g.buffer(),
                0,
                bytemuck::cast_slice(&combined[at..at + n]),
            );
            at += n;
        }
        Ok(())
    }

    /// The combined gradients of optimizer step `t` are uploaded: apply them with the next
    /// submission (or [`Replica::flush`]).
    pub(crate) fn set_pending(&mut self, t: u64, rule: Rule) {
        self.pending = Some((t, rule));
        self.model.step = t;
    }

    /// Applies a pending optimizer step now (before reading weights, validating, saving).
    pub(crate) fn flush(&mut self, data: &Dataset) -> Result<()> {
        let Some((t, rule)) = self.pending.take() else {
            return Ok(());
        };
        let mut chunk = Chunk::new(&self.layout, 1);
        let inputs = StepInputs {
            data,
            idx: &self.idx,
            offset: 0,
            batch: 0,
            seed: 0,
            t,
            rule: Some(&rule),
        };
        chunk.put(0, &self.optimizer.1, &inputs)?;
        chunk.upload(&self.dev, &self.table);
        let mut rec = Recorder::new(&self.dev);
        rec.replay_at(&self.optimizer.0, &chunk.offsets(0, &self.optimizer.1)?)?;
        rec.submit()?;
        Ok(())
    }

    /// Every parameter, then every state tensor, in order, as host floats (what replicas
    /// must agree on).
    pub(crate) fn weights(&self) -> Result<Vec<Vec<f32>>> {
        let (p, s) = (self.model.params(), self.model.state());
        p.iter().chain(&s).map(|t| t.to_vec()).collect()
    }

    /// The non-trainable state (moving statistics), in order, as host floats.
    pub(crate) fn state(&self) -> Result<Vec<Vec<f32>>> {
        self.model.state().iter().map(|t| t.to_vec()).collect()
    }

    /// Replaces the non-trainable state's values (same shapes, in order).
    pub(crate) fn set_state(&self, values: &[Vec<f32>]) -> Result<()> {
        let state = self.model.state();
        if state.len() != values.len()
            || state.iter().zip(values).any(|(t, v)| t.numel() != v.len())
        {
            return Err(Error::Internal {
                op: "fit_parallel",
                message: "state values do not match the replica's state".into(),
            });
        }
        for (t, v) in state.iter().zip(values) {
            self.dev
                .wgpu_queue()
                .write_buffer(t.buffer(), 0, bytemuck::cast_slice(v));
        }
        Ok(())
    }
}

/// One thread per device that waits for the step's last submission and notes when it
/// finished, so that moment does not depend on when the training thread gets round to polling
/// that device (polling devices one after the other made the second look slower than the
/// first, and starved it of rows). A thread sleeps until it is given a submission to wait for;
/// they stop when this is dropped.
pub(crate) struct Pollers {
    senders: Vec<std::sync::mpsc::Sender<(wgpu::SubmissionIndex, Flag)>>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Pollers {
    /// One poller per device.
    pub(crate) fn start(devices: &[Device]) -> Pollers {
        let (senders, threads) = devices
            .iter()
            .map(|d| {
                let dev = d.wgpu_device().clone();
                let timeout = d.timeout();
                let (tx, rx) = std::sync::mpsc::channel::<(wgpu::SubmissionIndex, Flag)>();
                let t = std::thread::spawn(move || {
                    for (index, flag) in rx {
                        let _ = dev.poll(wgpu::PollType::Wait {
                            submission_index: Some(index),
                            timeout: Some(timeout),
                        });
                        if let Ok(mut g) = flag.lock() {
                            *g = Some(Instant::now());
                        }
                    }
                });
                (tx, t)
            })
            .unzip();
        Pollers { senders, threads }
    }

    /// Device `d`'s poller notes in `flag` when `index` is done.
    pub(crate) fn watch(&self, d: usize, index: wgpu::SubmissionIndex, flag: Flag) {
        if let Some(tx) = self.senders.get(d) {
            let _ = tx.send((index, flag));
        }
    }
}

impl Drop for Pollers {
    fn drop(&mut self) {
        self.senders.clear();
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}
