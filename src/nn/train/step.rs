//! A training (or evaluation) step as a captured program, and the step protocol: which
//! per-step uniforms a step reads from the parameter table, and where.
//!
//! [`StepProgram::build`] captures, for one batch size, everything a step runs: the batch
//! gather, every layer's forward pass ([`crate::nn::layer::Layer::forward`]), the loss (with
//! the metrics accumulated on the device), and every layer's backward pass in reverse order.
//! Replaying it costs no allocation, no bind group and no readback.
//!
//! Values that change every step are read from a parameter table at dynamic offsets:
//! [`StepLayout`] owns the layout of one step's slots (`[gather…, dropout seeds…, one per
//! parameter…]`) and [`Chunk`] writes a chunk of steps' uniforms with one
//! upload. Nothing else in the crate knows a slot's position.

use crate::data::dataset::Dataset;
use crate::error::{Error, Result};
use crate::exec::capture::Capture;
use crate::exec::dispatch::Program;
use crate::exec::recorder::Recorder;
use crate::kernels::prelude::AccAt;
use crate::kernels::{elementwise, matmul_tune, optim};
use crate::memory::MemoryKind;
use crate::nn::graph::model::Sequential;
use crate::nn::graph::walk;
use crate::nn::layer::{Back, Cx, Mode, Slot, Src, WeightGrad};
use crate::nn::train::grad_sum::GradSums;
use crate::nn::train::scoring::Scoring;
use crate::nn::train::{clip, loss_end};
use crate::runtime::Device;
use crate::tensor::{IndexBuffer, Tensor};
use crate::vocab::Rule;

/// Steps per submission (and per table upload).
pub(crate) const CHUNK: usize = 32;

/// What a step program does after the loss.
#[derive(Clone, Copy)]
pub(crate) enum Backward<'a> {
    /// Nothing: evaluation.
    None,
    /// Gradients into these buffers (one per parameter, optimizer order); the optimizer runs
    /// separately ([`optimizer_program`]), after several devices have combined them.
    Grads(&'a [Tensor]),
    /// Each layer applies this optimizer to its parameters in its weight-gradient product:
    /// no gradient buffers, no optimizer dispatches.
    Fused(Rule),
    /// Gradients into these buffers, then, in the same step, clipped as the model says
    /// ([`crate::nn::train::clip`]) and applied by one optimizer dispatch per parameter: for
    /// whatever needs the whole gradient before it is applied.
    Unfused(Rule, &'a [Tensor]),
}

/// The layout of one step's slots in the parameter table (see the module docs).
#[derive(Clone, Debug)]
pub(crate) struct StepLayout {
    gather: usize,
    /// (values per sample, rate) of each dropout layer.
    dropout: Vec<(usize, f32)>,
    /// Parameters: one slot each while training, for the optimizer step that updates it
    /// (fused into the kernel computing its gradient, or the optimizer kernel's).
    params: usize,
    /// Whether weight decay applies to each parameter (the model's
    /// [`crate::nn::DecayFilter`]; an excluded one's uniform has a decay of 0).
    decays: Vec<bool>,
    align: usize,
}

impl StepLayout {
    /// The layout for `model` trained (or evaluated) on `data`: gather slots always, dropout
    /// seeds and one slot per parameter while training.
    pub(crate) fn new(model: &Sequential, data: &Dataset, backward: Backward<'_>) -> StepLayout {
        let training = !matches!(backward, Backward::None);
        StepLayout {
            gather: data.gather_dispatches(),
            dropout: if training {
                model.dropout_specs()
            } else {
                Vec::new()
            },
            params: if training { model.params().len() } else { 0 },
            decays: if training {
                model.decay_mask()
            } else {
                Vec::new()
            },
            align: model.device.uniform_alignment() as usize,
        }
    }

    /// The update rule of parameter `param`: `rule`, without its weight decay where the
    /// model's filter excludes the parameter.
    fn rule_of(&self, rule: &Rule, param: usize) -> Rule {
        match self.decays.get(param) {
            Some(false) => crate::nn::train::decay::undecayed(rule),
            _ => *rule,
        }
    }

    /// Slots per step.
    pub(crate) fn slots(&self) -> usize {
        self.gather + self.dropout.len() + self.params
    }

    /// A slot's position within a step.
    fn index(&self, s: Slot) -> Result<usize> {
        let base_d = self.gather;
        let base_p = base_d + self.dropout.len();
        let found = match s {
            Slot::Gather(j) => (j < self.gather).then_some(j),
            Slot::Dropout(k) => (k < self.dropout.len()).then_some(base_d + k),
            Slot::Update { param, .. } | Slot::Optim { param, .. } => {
                (param < self.params).then_some(base_p + param)
            }
        };
        found.ok_or_else(|| Error::Internal {
            op: "step table",
            message: format!("{s:?} has no slot in {self:?}"),
        })
    }

    /// A parameter table for chunks of `CHUNK` steps.
    pub(crate) fn table(&self, dev: &Device) -> Result<Tensor> {
        let t = Tensor::empty(
            dev,
            &[(CHUNK * self.slots().max(1) * self.align).div_ceil(4)],
        )?;
        t.set_memory_kind(MemoryKind::Activations);
        Ok(t)
    }
}

/// What the uniforms of one step depend on.
#[derive(Clone, Copy)]
pub(crate) struct StepInputs<'a> {
    pub(crate) data: &'a Dataset,
    pub(crate) idx: &'a IndexBuffer,
    /// First row of the batch in the epoch's permutation.
    pub(crate) offset: usize,
    pub(crate) batch: usize,
    /// The run's seed (dropout masks).
    pub(crate) seed: u64,
    /// The optimizer step this is (1-based; 0 when not training).
    pub(crate) t: u64,
    pub(crate) rule: Option<&'a Rule>,
}

/// One chunk of steps' uniforms, uploaded to the table at once.
pub(crate) struct Chunk<'l> {
    layout: &'l StepLayout,
    bytes: Vec<u8>,
}

impl<'l> Chunk<'l> {
    /// Room for `steps` steps.
    pub(crate) fn new(layout: &'l StepLayout, steps: usize) -> Chunk<'l> {
        Chunk {
            layout,
            bytes: vec![0; steps * layout.slots() * layout.align],
        }
    }

    fn at(&self, step: usize, slot: Slot) -> Result<usize> {
        Ok((step * self.layout.slots() + self.layout.index(slot)?) * self.layout.align)
    }

    /// Writes step `step`'s uniform for each of `slots`.
    pub(crate) fn put(&mut self, step: usize, slots: &[Slot], u: &StepInputs<'_>) -> Result<()> {
        let gather = u.data.gather_uniforms(u.idx, u.offset, u.batch);
        let need_rule = || {
            u.rule.ok_or_else(|| Error::Internal {
                op: "step table",
                message: "an optimizer slot without a rule".into(),
            })
        };
        for &slot in slots {
            let bytes: Vec<u8> = match slot {
                Slot::Gather(j) => gather.get(j).cloned().unwrap_or_default(),
                Slot::Dropout(k) => {
                    let (values, rate) = self.layout.dropout[k];
                    let p = elementwise::dropout_params(
                        u.batch * values,
                        rate,
                        dropout_mask_seed(u.seed, u.t, k),
                    );
                    bytemuck::bytes_of(&p).to_vec()
                }
                Slot::Update {
                    head, count, param, ..
                } => {
                    // The kernel's shape words, then the optimizer's step (the layout every
                    // fused-update kernel's uniform shares: matmul, the split-K reduction).
                    let mut b = bytemuck::bytes_of(&head).to_vec();
                    let rule = self.layout.rule_of(need_rule()?, param);
                    let q = optim::params(&rule, count as usize, u.t);
                    b.extend_from_slice(bytemuck::bytes_of(&q));
                    b
                }
                Slot::Optim { n, param } => {
                    let rule = self.layout.rule_of(need_rule()?, param);
                    bytemuck::bytes_of(&optim::params(&rule, n, u.t)).to_vec()
                }
            };
            let at = self.at(step, slot)?;
            self.bytes[at..at + bytes.len()].copy_from_slice(&bytes);
        }
        Ok(())
    }

    /// The dynamic offsets of `slots` at step `step`, for [`Recorder::replay_at`].
    pub(crate) fn offsets(&self, step: usize, slots: &[Slot]) -> Result<Vec<u32>> {
        slots
            .iter()
            .map(|&s| self.at(step, s).map(|a| a as u32))
            .collect()
    }

    /// Uploads the chunk to `table`.
    pub(crate) fn upload(&self, dev: &Device, table: &Tensor) {
        if !self.bytes.is_empty() {
            dev.wgpu_queue()
                .write_buffer(table.buffer(), 0, &self.bytes);
        }
    }
}

/// The dropout mask seed of the `k`-th dropout layer at optimizer step `t` (1-based,
/// counted over the model's life) of a run with seed `seed`: a pure function of the three,
/// so a resumed run draws the same masks. Element `i` of that layer's output (batch, values
/// per sample, row-major) is kept when `reference::dropout_keep(i, rate, mask_seed)`.
pub fn dropout_mask_seed(seed: u64, t: u64, k: usize) -> u32 {
    let mut x = seed
        ^ t.wrapping_mul(0x9E37_79B9_7F4A_7C15)
        ^ (k as u64).wrapping_mul(0xD1B5_4A32_D192_ED03);
    // splitmix64's finaliser.
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    (x ^ (x >> 31)) as u32
}

/// One batch size's step, captured (see the module docs), in one segment or, for
/// data-parallel training, in several: segment `i` ends once the gradients of bucket `i` are
/// computed, so they can leave the device while the next segment runs.
pub(crate) struct StepProgram {
    pub(crate) batch: usize,
    /// Each segment's program and the table slots it reads.
    segments: Vec<(Program, Vec<Slot>)>,
    /// Every segment's slots, in order.
    slots: Vec<Slot>,
    /// Buffers the program is bound to.
    _keep: Vec<Tensor>,
}

impl StepProgram {
    /// Captures a step of `batch` rows of `data` (chosen by `idx`), accumulating
    /// `[Σ loss, Σ correct, rows]` into `acc`; `backward` says what follows the loss.
    pub(crate) fn build(
        model: &Sequential,
        data: &Dataset,
        idx: &IndexBuffer,
        batch: usize,
        backward: Backward<'_>,
        acc: &Tensor,
        table: &Tensor,
    ) -> Result<StepProgram> {
        StepProgram::build_cut(model, data, idx, batch, backward, acc, table, &[])
    }

    /// [`StepProgram::build`] in segments: a segment ends after the backward pass of each
    /// layer in `cut_after` (layer indices; the last segment ends the step).
    #[allow(clippy::too_many_arguments)] // a step's inputs, spelled out
    pub(crate) fn build_cut(
        model: &Sequential,
        data: &Dataset,
        idx: &IndexBuffer,
        batch: usize,
        backward: Backward<'_>,
        acc: &Tensor,
        table: &Tensor,
        cut_after: &[usize],
    ) -> Result<StepProgram> {
        let dev = &model.device;
        // The tuners submit work of their own: never inside the capture.
        matmul_tune::prepare(dev)?;
        for l in &model.layers {
            l.prepare(dev)?;
        }
        let training = !matches!(backward, Backward::None);
        let mode = if training {
            Mode::Train
        } else {
            Mode::Evaluate
        };
        let mut cap = Capture::with_table(dev, table.buffer());
        cap.set_table_uniforms(false);
        let mut cx = Cx::new(&mut cap, batch, mode);
        let x0 = cx.tensor(model.expected_input_shape().unwrap_or(&[data.row_len()]))?;
        // The other inputs' batches, from the dataset's other columns.
        let more: Vec<Tensor> = model.input_shapes()[1..]
            .iter()
            .map(|s| cx.tensor(s))
            .collect::<Result<_>>()?;
        // Each output's targets, the first's first.
        let ys: Vec<Tensor> = data
            .all_targets()
            .map(|t| cx.tensor(&[t.len()]))
            .collect::<Result<_>>()?;
        let y = &ys[0];
        let w = if data.has_weights() {
            Some(cx.tensor(&[1])?)
        } else {
            None
        };
        let gather: Vec<Slot> = (0..data.gather_dispatches()).map(Slot::Gather).collect();
        cx.per_step(&gather, |rec| {
            let wb = w.as_ref().map(|w| w.buffer());
            let mb: Vec<&wgpu::Buffer> = more.iter().chain(&ys[1..]).map(|t| t.buffer()).collect();
            data.gather(rec, idx, 0, batch, x0.buffer(), y.buffer(), wb, &mb)
        })?;
        let inputs: Vec<Tensor> = std::iter::once(x0).chain(more).collect();
        let saved = walk::forward(model, &mut cx, &inputs)?;
        if saved.is_empty() {
            return Err(Error::InvalidArgument {
                op: "fit",
                name: "model",
                expected: "at least one layer".into(),
                found: "none".into(),
            });
        }
        // Each output's loss, its gradient scaled by the output's weight, its sums in its
        // block of the accumulator; the metrics read the first output.
        let (outs, losses, weights) = (model.output_layers(), model.losses(), model.loss_weights());
        let scoring = Scoring::of(model);
        if ys.len() != outs.len() {
            return Err(Error::Internal {
                op: "step program",
                message: format!("{} target columns for {} outputs", ys.len(), outs.len()),
            });
        }
        let mut seeds = Vec::with_capacity(outs.len());
        for (k, &j) in outs.iter().enumerate() {
            let h = saved[j].output.clone();
            let at = AccAt {
                buffer: acc.buffer(),
                at: scoring.block(k),
            };
            let dy = loss_end::loss_end(
                &mut cx,
                losses[k],
                &h,
                &ys[k],
                w.as_ref(),
                at,
                weights[k],
                training,
            )?;
            if k == 0 {
                loss_end::metric_end(&mut cx, model, losses[0], &h, y, acc)?;
            }
            seeds.push((j, dy, losses[k].takes_logits()));
        }
        let mut segments = Vec::new();
        if matches!(backward, Backward::Fused(_)) && model.has_shared_weights() {
            // Two in-kernel updates of one weight would each step it (and its state).
            return Err(Error::Internal {
                op: "step program",
                message: "a model with shared weights on the fused optimizer path".into(),
            });
        }
        let mut sums = match backward {
            Backward::Grads(g) | Backward::Unfused(_, g) => Some(GradSums::new(model, g)),
            _ => None,
        };
        if training {
            let positions = model.positions();
            let consumers = walk::consumers(model);
            // The gradient at each layer's output once every reader has added its part, and
            // whether it is already at the pre-activation (gated). The loss gives the
            // gradient at the logits when it folds the last activation.
            let mut grads: Vec<Option<(Tensor, bool)>> = vec![None; model.layers.len()];
            for (j, dy, gated) in seeds {
                walk::accumulate(&mut cx, &mut grads, j, dy, gated)?;
            }
            for l in (0..model.layers.len()).rev() {
                let layer = &model.layers[l];
                let pos = positions[l];
                let Some((dy, gated)) = grads[l].take() else {
                    return Err(Error::Internal {
                        op: "step program",
                        message: format!("layer {l} does not lead to the output"),
                    });
                };
                if let [src] = layer.inbound.as_slice() {
                    // The gate of the layer below, looking through views.
                    let dx_gate = walk::gate_into(model, &cx, &saved, &consumers, *src);
                    let targets = match &mut sums {
                        Some(s) if layer.spec.trainable => s.targets(&mut cx, l)?,
                        _ => Vec::new(),
                    };
                    let grad = match backward {
                        _ if !layer.spec.trainable => WeightGrad::Frozen,
                        Backward::Grads(_) | Backward::Unfused(..) => WeightGrad::Into(&targets),
                        Backward::Fused(rule) => WeightGrad::Update {
                            rule,
                            state: &model.opt_state,
                        },
                        Backward::None => unreachable!("not training"),
                    };
                    let dx = layer.backward(
                        &mut cx,
                        Back {
                            pos,
                            saved: &saved[l],
                            dy: &dy,
                            gated,
                            dx_gate: dx_gate.as_ref(),
                            need_dx: matches!(src, Src::Layer(_)),
                            grad,
                        },
                    )?;
                    if let Some(s) = sums.as_mut().filter(|_| layer.spec.trainable) {
                        s.finish(&mut cx, l, &targets)?;
                    }
                    if let (Some(dx), Src::Layer(j)) = (dx, *src) {
                        walk::accumulate(&mut cx, &mut grads, j, dx.grad, dx.gated)?;
                    }
                } else {
                    let need: Vec<bool> = layer
                        .inbound
                        .iter()
                        .map(|s| matches!(s, Src::Layer(_)))
                        .collect();
                    let dxs = layer.backward_merge(&mut cx, &saved[l], &dy, &need)?;
                    for (src, dx) in layer.inbound.iter().zip(dxs) {
                        if let (Src::Layer(j), Some(g)) = (*src, dx) {
                            walk::accumulate(&mut cx, &mut grads, j, g, false)?;
                        }
                    }
                }
                if l > 0 && cut_after.contains(&l) {
                    let program = cx.rec().cut().ok_or_else(|| Error::Internal {
                        op: "step program",
                        message: "a step captured by a recorder that cannot cut".into(),
                    })?;
                    segments.push((program, std::mem::take(&mut cx.slots)));
                }
            }
        }
        if let Backward::Unfused(rule, grads) = backward {
            let norms = cx.scratch(&[grads.len().max(1)])?;
            let live: Vec<bool> = model.frozen_params().iter().map(|f| !f).collect();
            clip::record(cx.rec(), &model.clip, grads, &live, &norms)?;
            let params = model.params();
            for (i, (p, g)) in params.iter().zip(grads).enumerate() {
                if !live[i] {
                    continue;
                }
                let st: Vec<&wgpu::Buffer> =
                    model.opt_state[i].iter().map(|t| t.buffer()).collect();
                let n = p.numel();
                cx.per_step(&[Slot::Optim { param: i, n }], |rec| {
                    optim::step(rec, &rule, g.buffer(), p.buffer(), &st, n, 1)
                })?;
            }
        }
        let last = std::mem::take(&mut cx.slots);
        let keep = std::mem::take(&mut cx.keep);
        drop(cx);
        segments.push((cap.finish(), last));
        for (program, slots) in &segments {
            if program.table_bound() != slots.len() {
                return Err(Error::Internal {
                    op: "step program",
                    message: format!(
                        "{} table-bound dispatches but {} slots",
                        program.table_bound(),
                        slots.len()
                    ),
                });
            }
        }
        let slots = segments.iter().flat_map(|(_, s)| s.clone()).collect();
        Ok(StepProgram {
            batch,
            segments,
            slots,
            _keep: keep,
        })
    }

    /// Number of segments.
    pub(crate) fn segments(&self) -> usize {
        self.segments.len()
    }

    /// Records segment `i` of the step whose uniforms are at `step` of `chunk`.
    pub(crate) fn replay_segment(
        &self,
        rec: &mut Recorder<'_>,
        chunk: &Chunk<'_>,
        step: usize,
        i: usize,
    ) -> Result<()> {
        let (program, slots) = &self.segments[i];
        rec.replay_at(program, &chunk.offsets(step, slots)?)
    }

    /// The table slots the program reads, in order.
    pub(crate) fn slots(&self) -> &[Slot] {
        &self.slots
    }

    /// Records the step whose uniforms are at `step` of `chunk`.
    pub(crate) fn replay(
        &self,
        rec: &mut Recorder<'_>,
        chunk: &Chunk<'_>,
        step: usize,
    ) -> Result<()> {
        for i in 0..self.segments.len() {
            self.replay_segment(rec, chunk, step, i)?;
        }
        Ok(())
    }
}

/// Gradient buffers shaped like the model's parameters (optimizer order).
pub(crate) fn gradient_buffers(model: &Sequential) -> Result<Vec<Tensor>> {
    model
        .params()
        .iter()
        .map(|p| {
            let g = Tensor::empty(&model.device, p.shape())?;
            g.set_memory_kind(MemoryKind::Gradients);
            Ok(g)
        })
        .collect()
}

/// The separate optimizer step over every parameter from `grads` (clipped first as the
/// model says, `norms` holding a value per gradient), as a program whose uniforms are read
/// from `table` (bias corrections change every step), and its slots.
pub(crate) fn optimizer_program(
    model: &Sequential,
    rule: &Rule,
    grads: &[Tensor],
    norms: &Tensor,
    table: &Tensor,
) -> Result<(Program, Vec<Slot>)> {
    let mut cap = Capture::with_table(&model.device, table.buffer());
    let mut slots = Vec::new();
    let frozen = model.frozen_params();
    let live: Vec<bool> = frozen.iter().map(|f| !f).collect();
    // The clipping's uniforms are fixed; only the optimizer steps read the table.
    cap.set_table_uniforms(false);
    clip::record(&mut cap, &model.clip, grads, &live, norms)?;
    cap.set_table_uniforms(true);
    for (i, (p, g)) in model.params().iter().zip(grads).enumerate() {
        if frozen[i] {
            // A frozen layer's gradient (zeros: it was never written) is not applied.
            continue;
        }
        let st: Vec<&wgpu::Buffer> = model.opt_state[i].iter().map(|t| t.buffer()).collect();
        optim::step(&mut cap, rule, g.buffer(), p.buffer(), &st, p.numel(), 1)?;
        slots.push(Slot::Optim {
            param: i,
            n: p.numel(),
        });
    }
    Ok((cap.finish(), slots))
}

/// The update rule of optimizer step `t` (1-based): the learning rate may change per step.
pub(crate) type RuleAt<'a> = dyn Fn(u64) -> Result<Rule> + 'a;

/// Replays `steps` (batch offsets and sizes) of `plans` in one submission, their uniforms
/// written into `table` with one upload. With a `rule`, step `s` is optimizer step
/// `t0 + s + 1`.
#[allow(clippy::too_many_arguments)] // a chunk's inputs, spelled out
pub(crate) fn run_chunk(
    dev: &Device,
    layout: &StepLayout,
    table: &Tensor,
    plans: &[StepProgram],
    steps: &[(usize, usize)],
    data: &Dataset,
    idx: &IndexBuffer,
    seed: u64,
    t0: u64,
    rule: Option<&RuleAt<'_>>,
) -> Result<()> {
    let plan_of = |b: usize| {
        plans
            .iter()
            .find(|p| p.batch == b)
            .ok_or_else(|| Error::Internal {
                op: "fit",
                message: format!("no step program for batch {b}"),
            })
    };
    let mut chunk = Chunk::new(layout, steps.len());
    for (s, &(offset, batch)) in steps.iter().enumerate() {
        let t = rule.map_or(0, |_| t0 + s as u64 + 1);
        let r = match rule {
            Some(f) => Some(f(t)?),
            None => None,
        };
        let u = StepInputs {
            data,
            idx,
            offset,
            batch,
            seed,
            t,
            rule: r.as_ref(),
        };
        chunk.put(s, plan_of(batch)?.slots(), &u)?;
    }
    chunk.upload(dev, table);
    let mut rec = Recorder::new(dev);
    for (s, &(_, batch)) in steps.iter().enumerate() {
        plan_of(batch)?.replay(&mut rec, &chunk, s)?;
    }
    rec.submit()?;
    Ok(())
}

/// Batches covering `rows` rows: `(offset, size)`, the last one possibly shorter.
pub(crate) fn batches(rows: usize, b: usize) -> Vec<(usize, usize)> {
    (0..rows.div_ceil(b))
        .map(|s| (s * b, b.min(rows - s * b)))
        .collect()
}

/// An accumulator's contents: `[Σ loss, Σ correct, rows, pad]`, then each metric's sums
/// ([`metric::layout`]).
pub(crate) fn read_acc(acc: &Tensor) -> Result<Vec<f64>> {
    Ok(acc.to_vec()?.into_iter().map(f64::from).collect())
}

/// A zeroed accumulator for `model`'s loss, accuracy and metrics.
pub(crate) fn accumulator(model: &Sequential) -> Result<Tensor> {
    let acc = Tensor::zeros(&model.device, &[Scoring::of(model).len()])?;
    acc.set_memory_kind(MemoryKind::Activations);
    Ok(acc)
}

/// Zeroes `t` (an accumulator) on the device.
pub(crate) fn clear(dev: &Device, t: &Tensor) -> Result<()> {
    let mut rec = Recorder::new(dev);
    rec.clear(t.buffer());
    rec.submit()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn batches_cover_every_row_once() {
        assert_eq!(super::batches(10, 4), vec![(0, 4), (4, 4), (8, 2)]);
        assert_eq!(super::batches(8, 4), vec![(0, 4), (4, 4)]);
    }
}
