//! A training (or evaluation) step as a captured program.
//!
//! [`StepProgram::build`] captures, for one batch size, everything a step runs: the batch
//! gather, every layer's forward pass ([`crate::nn::layer::Layer::forward`]), the loss (with
//! the metrics accumulated on the device), and every layer's backward pass in reverse order.
//! Replaying it costs no allocation, no bind group and no readback.
//!
//! Values that change every step are read from a parameter table at dynamic offsets; the
//! step protocol ([`crate::nn::train::table`]: [`StepLayout`], [`Chunk`]) says where.

use crate::data::dataset::Dataset;
use crate::error::{Error, Result};
use crate::exec::capture::Capture;
use crate::exec::dispatch::Program;
use crate::exec::recorder::Recorder;
use crate::kernels::prelude::AccAt;
use crate::kernels::{matmul_tune, optim};
use crate::memory::MemoryKind;
use crate::nn::graph::model::Sequential;
use crate::nn::graph::walk;
use crate::nn::layer::{Back, BackMulti, Cx, Mode, Slot, Src, WeightGrad};
use crate::nn::train::grad_sum::GradSums;
use crate::nn::train::scoring::Scoring;
use crate::nn::train::table::{Backward, Chunk, StepInputs, StepLayout};
use crate::nn::train::{clip, loss_end, loss_scale};
use crate::runtime::Device;
use crate::tensor::{IndexBuffer, Tensor};
use crate::vocab::Rule;

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
        // Each output's loss, its gradient scaled by the output's weight, its sums and its
        // metrics' in its block of the accumulator.
        let (outs, losses, weights) = (model.output_layers(), model.losses(), model.loss_weights());
        let acts = model.output_activations();
        let scoring = Scoring::of(model);
        if ys.len() != outs.len() {
            return Err(Error::Internal {
                op: "step program",
                message: format!("{} target columns for {} outputs", ys.len(), outs.len()),
            });
        }
        // Loss scaling (unfused path only): the seed gradients multiplied by the current
        // scale, the gradients checked and unscaled before the optimizer (below).
        let scaler = match backward {
            Backward::Unfused(..) if model.loss_scale().is_some() => Some(
                model
                    .loss_scale_state
                    .clone()
                    .ok_or_else(|| Error::Internal {
                        op: "step program",
                        message: "loss scaling on without its device state".into(),
                    })?,
            ),
            _ => None,
        };
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
            let at = AccAt {
                buffer: acc.buffer(),
                at: scoring.block(k),
            };
            let metrics = scoring.metrics(k);
            loss_end::metric_end(&mut cx, metrics, acts[k], losses[k], &h, &ys[k], at)?;
            if let Some(st) = &scaler {
                loss_scale::record_seed(cx.rec(), st, &dy)?;
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
            Backward::Grads(g) | Backward::Unfused(_, g, _) => Some(GradSums::new(model, g)),
            _ => None,
        };
        if training {
            let positions = model.positions();
            let consumers = walk::consumers(model);
            // The gradient at each layer's output once every reader has added its part, and
            // whether it is already at the pre-activation (gated). The loss gives the
            // gradient at the logits when it folds the last activation.
            let mut grads: Vec<Option<(Tensor, bool)>> = vec![None; model.layers.len()];
            // Whether grads[j] is in a buffer nothing else reads (see `Back::dx_into`).
            let mut own = vec![false; model.layers.len()];
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
                    // Another reader's gradient at this input, in a buffer of its own: this
                    // layer may add its part into it.
                    let into = match (*src, &grads) {
                        (Src::Layer(j), g) if own[j] => match &g[j] {
                            Some((t, false)) => Some(t.clone()),
                            _ => None,
                        },
                        _ => None,
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
                            dx_into: into.as_ref(),
                        },
                    )?;
                    if let Some(s) = sums.as_mut().filter(|_| layer.spec.trainable) {
                        s.finish(&mut cx, l, &targets)?;
                    }
                    if let (Some(dx), Src::Layer(j)) = (dx, *src) {
                        let added = into.as_ref().is_some_and(|t| t.same_buffer(&dx.grad));
                        if added {
                            grads[j] = Some((dx.grad, false));
                        } else {
                            let first = grads[j].is_none();
                            walk::accumulate(&mut cx, &mut grads, j, dx.grad, dx.gated)?;
                            // A sum is a fresh buffer; a first gradient is the layer's own
                            // only if it says so.
                            own[j] = !first || layer.owns_dx();
                        }
                    }
                } else {
                    let need: Vec<bool> = layer
                        .inbound
                        .iter()
                        .map(|s| matches!(s, Src::Layer(_)))
                        .collect();
                    // A layer of several inputs with weights (cross-attention) steps them
                    // as a one-input layer does; a merge has none.
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
                    let back = BackMulti {
                        pos,
                        saved: &saved[l],
                        dy: &dy,
                        need: &need,
                        grad,
                    };
                    let dxs = layer.backward_multi(&mut cx, back)?;
                    if let Some(s) = sums.as_mut().filter(|_| layer.spec.trainable) {
                        s.finish(&mut cx, l, &targets)?;
                    }
                    for (src, dx) in layer.inbound.iter().zip(dxs) {
                        if let (Src::Layer(j), Some(g)) = (*src, dx) {
                            // A merge may hand one tensor to several inputs: never its own.
                            let first = grads[j].is_none();
                            walk::accumulate(&mut cx, &mut grads, j, g, false)?;
                            own[j] = !first;
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
        if let Backward::Unfused(rule, grads, accs) = backward {
            let norms = cx.scratch(&[grads.len().max(1)])?;
            let live: Vec<bool> = model.frozen_params().iter().map(|f| !f).collect();
            // Loss scaling: checked, the scale updated, unscaled before clipping sees them
            // (accumulation with scaling is refused before anything is captured).
            if let Some(st) = &scaler {
                loss_scale::record_unscale(cx.rec(), st, grads, &live)?;
            }
            // Accumulating: each gradient is added to its accumulator, which the optimizer
            // reads (clipping is refused with accumulation before anything is captured).
            let grads = if accs.is_empty() {
                clip::record(cx.rec(), &model.clip, grads, &live, &norms)?;
                grads
            } else {
                for (i, (g, a)) in grads.iter().zip(accs).enumerate() {
                    if !live[i] {
                        continue;
                    }
                    let n = g.numel();
                    cx.per_step(&[Slot::Accumulate { param: i, n }], |rec| {
                        optim::accumulate(rec, g.buffer(), a.buffer(), n, Default::default())
                    })?;
                }
                accs
            };
            let params = model.params();
            for (i, (p, g)) in params.iter().zip(grads).enumerate() {
                if !live[i] {
                    continue;
                }
                let st: Vec<&wgpu::Buffer> =
                    model.opt_state[i].iter().map(|t| t.buffer()).collect();
                let n = p.numel();
                // With loss scaling, behind the skip word: an overflowing step leaves the
                // parameter and its optimizer state untouched.
                let guard = scaler.as_ref().map(|t| t.buffer());
                cx.per_step(&[Slot::Optim { param: i, n }], |rec| {
                    optim::step_guarded(rec, &rule, g.buffer(), p.buffer(), &st, n, 1, guard)
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
        // Accumulating over k batches, the rule (a schedule's learning rate) is the one of
        // the optimizer step the batch belongs to.
        let k = layout.accumulation() as u64;
        let r = match rule {
            Some(f) => Some(f(t.div_ceil(k))?),
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
