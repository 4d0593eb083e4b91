//! The training loop: captured step programs replayed on the device.
//!
//! Per batch size a [`Plan`] holds the batch buffers and two captured [`Program`]s: `gather`
//! (batch rows and labels from the resident dataset) and `body` (forward with fused
//! bias/activation, fused softmax cross-entropy backward, metrics, backward). In `fit` the
//! backward applies the optimizer inside each layer's weight-gradient product
//! ([`Backward::Fused`]): no gradient buffers and no optimizer dispatches, 10 dispatches a step
//! for a 3-layer MLP. Data-parallel training needs the gradients themselves
//! ([`Backward::Grads`]) and runs a separate optimizer program after combining them. Each step
//! only reads its per-step uniforms (the batch offset into the epoch's permutation, dropout
//! seeds, the optimizer's step scalars) from a table written once per chunk of steps, then
//! replays the programs: no allocation, no bind group, no readback per step.

use std::time::Instant;

use crate::data::Dataset;
use crate::kernel::Program;
use crate::kernels::elementwise::{self, derivative_from_output};
use crate::kernels::gather::IndexBuffer;
use crate::kernels::loss::{self, DenseLoss};
use crate::kernels::matmul::{self, Activation, Epilogue, Layout, MatmulArgs};
use crate::kernels::optim::{self, Rule};
use crate::kernels::softmax_xent;
use crate::memory::MemoryKind;
use crate::nn::model::{FitOptions, History, Loss, Sequential};
use crate::random::Rng;
use crate::{Device, Error, Result, Tensor};

/// Steps per submission.
pub(crate) const CHUNK: usize = 32;

pub(crate) struct Plan {
    pub(crate) b: usize,
    pub(crate) gather: Program,
    /// Forward, loss, backward (and, with [`Backward::Fused`], the optimizer step). Its
    /// table-bound dispatches read per-step uniforms; `dynamic[i]` says what its `i`-th such
    /// dispatch reads.
    pub(crate) body: Program,
    pub(crate) dynamic: Vec<Dyn>,
    // Buffers the programs are bound to (kept alive with them).
    _bufs: Vec<Tensor>,
}

/// What a table-bound dispatch of a plan's body reads at each step.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Dyn {
    /// The mask seed of dropout layer `k` (position in the model's dropout list).
    Dropout(usize),
    /// The fused optimizer step of layer `layer`, whose weight-gradient product has shape
    /// `mnk` ([`matmul::update_params`]).
    Update { layer: usize, mnk: (u32, u32, u32) },
}

/// What a plan's body does after the loss.
#[derive(Clone, Copy)]
pub(crate) enum Backward<'a> {
    /// Nothing: evaluation.
    None,
    /// Gradients into these buffers; the optimizer runs separately (several devices combine
    /// the gradients first).
    Grads(&'a Grads),
    /// Each layer's weight-gradient product applies this optimizer to the layer in place
    /// ([`Epilogue::Update`]), with the model's optimizer state and the step scalars from the
    /// table: no gradient buffers, no optimizer dispatches.
    Fused(Rule),
}

/// Slot layout of one step in the parameter table: `[gather 0, gather 1, dropout 0..nd, then
/// one per layer update]`.
pub(crate) fn dyn_slot(d: Dyn, dropout_layers: usize) -> usize {
    match d {
        Dyn::Dropout(k) => 2 + k,
        Dyn::Update { layer, .. } => 2 + dropout_layers + layer,
    }
}

pub(crate) struct Grads {
    pub(crate) w: Vec<Tensor>,
    pub(crate) b: Vec<Option<Tensor>>,
}

impl Grads {
    /// Gradient buffers shaped like the model's parameters.
    pub(crate) fn new(model: &Sequential) -> Result<Grads> {
        let dev = &model.device;
        let g = Grads {
            w: model
                .layers
                .iter()
                .map(|l| Tensor::empty(dev, &[l.in_dim, l.cfg.units]))
                .collect::<Result<_>>()?,
            b: model
                .layers
                .iter()
                .map(|l| {
                    l.b.as_ref()
                        .map(|_| Tensor::empty(dev, &[l.cfg.units]))
                        .transpose()
                })
                .collect::<Result<_>>()?,
        };
        for t in g.w.iter().chain(g.b.iter().flatten()) {
            t.set_memory_kind(MemoryKind::Gradients);
        }
        Ok(g)
    }
}

#[allow(clippy::too_many_arguments)] // one matmul's operands and shape, spelled out
fn mm(
    rec: &mut crate::kernel::Recorder<'_>,
    a: &Tensor,
    b: &Tensor,
    epilogue: Epilogue<'_>,
    c: &Tensor,
    mnk: (usize, usize, usize),
    layout: Layout,
    act: Activation,
) -> Result<()> {
    matmul::record(
        rec,
        &MatmulArgs {
            a: a.buffer(),
            b: b.buffer(),
            epilogue,
            c: c.buffer(),
            m: mnk.0 as u32,
            n: mnk.1 as u32,
            k: mnk.2 as u32,
            layout,
            act,
            accumulate: false,
        },
    )
}

fn bias_of(layer: &crate::nn::model::Layer) -> Epilogue<'_> {
    layer
        .b
        .as_ref()
        .map_or(Epilogue::None, |b| Epilogue::Bias(b.buffer()))
}

/// Builds the programs for batch size `b`; `backward` says what follows the loss.
#[allow(clippy::too_many_arguments)] // the plan's inputs, spelled out
pub(crate) fn plan(
    model: &Sequential,
    data: &Dataset,
    idx: &IndexBuffer,
    b: usize,
    backward: Backward<'_>,
    acc: &Tensor,
    table: &Tensor,
) -> Result<Plan> {
    let dev = &model.device;
    let layers = &model.layers;
    let nl = layers.len();
    let x0 = Tensor::empty(dev, &[b, data.row_len])?;
    let y = Tensor::empty(dev, &[b, data.target_len])?;
    let loss_kind = model.loss.unwrap_or(Loss::SparseCategoricalCrossentropy);
    let mut g = dev.capture_with_table(table.buffer());
    data.gather(&mut g, idx, 0, b, x0.buffer(), y.buffer())?;
    let gather = g.finish_capture();

    let mut bufs = vec![x0.clone(), y.clone()];
    // Fixed uniforms, except the dropout masks' seeds, which change every step.
    let mut rec = dev.capture_with_table(table.buffer());
    rec.set_table_uniforms(false);
    let training = !matches!(backward, Backward::None);
    let drop_index = dropout_layers(model);
    let mut dynamic = Vec::new();
    // Forward: outs[l] is the layer's output (the last layer's logits); pre[l] its
    // pre-activation where the derivative needs it; inputs[l] what layer l reads (the previous
    // output after dropout, while training).
    let mut outs: Vec<Tensor> = Vec::with_capacity(nl);
    let mut pre: Vec<Option<Tensor>> = Vec::with_capacity(nl);
    let mut inputs: Vec<Tensor> = vec![x0.clone()];
    for (l, layer) in layers.iter().enumerate() {
        let input = &inputs[l].clone();
        // A cross-entropy folds the last layer's softmax/sigmoid in: that layer yields logits.
        let act = if l + 1 == nl && loss_kind.takes_logits() {
            Activation::Linear
        } else {
            layer.cfg.activation.elementwise()
        };
        let out = Tensor::empty(dev, &[b, layer.cfg.units])?;
        let mnk = (b, layer.cfg.units, layer.in_dim);
        if derivative_from_output(act) {
            mm(
                &mut rec,
                input,
                &layer.w,
                bias_of(layer),
                &out,
                mnk,
                Layout::NN,
                act,
            )?;
            pre.push(None);
        } else {
            let z = Tensor::empty(dev, &[b, layer.cfg.units])?;
            mm(
                &mut rec,
                input,
                &layer.w,
                bias_of(layer),
                &z,
                mnk,
                Layout::NN,
                Activation::Linear,
            )?;
            elementwise::activation(&mut rec, act, z.buffer(), out.buffer(), b * layer.cfg.units)?;
            pre.push(Some(z));
        }
        let next = match drop_index[l] {
            Some(k) if training => {
                let d = Tensor::empty(dev, &[b, layer.cfg.units])?;
                rec.set_table_uniforms(true);
                let n = b * layer.cfg.units;
                elementwise::dropout(&mut rec, out.buffer(), d.buffer(), n, layer.cfg.dropout, 0)?;
                rec.set_table_uniforms(false);
                dynamic.push(Dyn::Dropout(k));
                d
            }
            _ => out.clone(),
        };
        inputs.push(next);
        outs.push(out);
    }
    let classes = layers[nl - 1].cfg.units;
    let last = &outs[nl - 1];
    let loss = Tensor::empty(dev, &[b])?;
    let dz_last = Tensor::empty(dev, &[b, classes])?;
    let scale = 1.0 / b as f32;
    let dense = match loss_kind {
        Loss::SparseCategoricalCrossentropy => None,
        Loss::CategoricalCrossentropy => Some(DenseLoss::CategoricalFromLogits),
        Loss::BinaryCrossentropy => Some(DenseLoss::BinaryFromLogits),
        Loss::MeanSquaredError => Some(DenseLoss::MeanSquared),
    };
    match dense {
        // Training: loss, gradient and metrics in one dispatch.
        None if training => softmax_xent::xent_train(
            &mut rec,
            last.buffer(),
            y.buffer(),
            loss.buffer(),
            dz_last.buffer(),
            acc.buffer(),
            b,
            classes,
            scale,
            false,
        )?,
        None => {
            softmax_xent::xent(
                &mut rec,
                last.buffer(),
                y.buffer(),
                loss.buffer(),
                None,
                b,
                classes,
                scale,
                false,
            )?;
            softmax_xent::metrics(
                &mut rec,
                last.buffer(),
                y.buffer(),
                loss.buffer(),
                acc.buffer(),
                b,
                classes,
            )?;
        }
        Some(kind) => {
            let act = layers[nl - 1].cfg.activation.elementwise();
            let through_act = kind == DenseLoss::MeanSquared && act != Activation::Linear;
            // MSE through a non-linear output: the loss gives d/dy, the activation d/dz.
            let dy = if through_act {
                Tensor::empty(dev, &[b, classes])?
            } else {
                dz_last.clone()
            };
            loss::backward(
                &mut rec,
                kind,
                last.buffer(),
                y.buffer(),
                loss.buffer(),
                dy.buffer(),
                b,
                classes,
                scale,
            )?;
            if through_act && training {
                elementwise::activation_output_backward(
                    &mut rec,
                    act,
                    last.buffer(),
                    dy.buffer(),
                    dz_last.buffer(),
                    b * classes,
                )?;
            }
            loss::metrics(
                &mut rec,
                kind,
                last.buffer(),
                y.buffer(),
                loss.buffer(),
                acc.buffer(),
                b,
                classes,
            )?;
            bufs.push(dy);
        }
    }
    if training {
        // Optimizer-state index of each layer's kernel (the bias follows it).
        let mut first_param = Vec::with_capacity(nl);
        let mut i = 0;
        for layer in layers {
            first_param.push(i);
            i += 1 + layer.b.is_some() as usize;
        }
        // Backward: dz is the gradient at the current layer's pre-activation. The input
        // gradient is computed first, while the weight still holds this step's value: a fused
        // update overwrites it.
        let mut dz = dz_last.clone();
        for l in (0..nl).rev() {
            let layer = &layers[l];
            let input = &inputs[l];
            let mut dz_prev = None;
            if l > 0 {
                // dz_prev = (dz·Wᵀ) ⊙ f'(·): W stored (in, units) = (N, K); the activation's
                // derivative is fused into the epilogue when it follows from the output.
                let prev = &layers[l - 1];
                let act = prev.cfg.activation.elementwise();
                let dz_prev_t = Tensor::empty(dev, &[b, layer.in_dim])?;
                let mnk = (b, layer.in_dim, layer.cfg.units);
                let n = b * layer.in_dim;
                match (&pre[l - 1], drop_index[l - 1]) {
                    (pre_act, Some(k)) => {
                        // Through the dropout: the same mask on the gradient, then the
                        // activation's derivative.
                        let da = Tensor::empty(dev, &[b, layer.in_dim])?;
                        let dd = Tensor::empty(dev, &[b, layer.in_dim])?;
                        mm(
                            &mut rec,
                            &dz,
                            &layer.w,
                            Epilogue::None,
                            &dd,
                            mnk,
                            Layout::NT,
                            Activation::Linear,
                        )?;
                        rec.set_table_uniforms(true);
                        elementwise::dropout(
                            &mut rec,
                            dd.buffer(),
                            da.buffer(),
                            n,
                            prev.cfg.dropout,
                            0,
                        )?;
                        rec.set_table_uniforms(false);
                        dynamic.push(Dyn::Dropout(k));
                        match pre_act {
                            None => elementwise::activation_output_backward(
                                &mut rec,
                                act,
                                outs[l - 1].buffer(),
                                da.buffer(),
                                dz_prev_t.buffer(),
                                n,
                            )?,
                            Some(z) => elementwise::activation_backward(
                                &mut rec,
                                act,
                                z.buffer(),
                                da.buffer(),
                                dz_prev_t.buffer(),
                                n,
                            )?,
                        }
                        bufs.push(da);
                        bufs.push(dd);
                    }
                    (None, None) => {
                        let gate = Epilogue::Gate(outs[l - 1].buffer(), act);
                        mm(
                            &mut rec,
                            &dz,
                            &layer.w,
                            gate,
                            &dz_prev_t,
                            mnk,
                            Layout::NT,
                            Activation::Linear,
                        )?;
                    }
                    (Some(z), None) => {
                        let da = Tensor::empty(dev, &[b, layer.in_dim])?;
                        mm(
                            &mut rec,
                            &dz,
                            &layer.w,
                            Epilogue::None,
                            &da,
                            mnk,
                            Layout::NT,
                            Activation::Linear,
                        )?;
                        elementwise::activation_backward(
                            &mut rec,
                            act,
                            z.buffer(),
                            da.buffer(),
                            dz_prev_t.buffer(),
                            b * layer.in_dim,
                        )?;
                        bufs.push(da);
                    }
                }
                dz_prev = Some(dz_prev_t);
            }
            // dW = inputᵀ·dz (input stored (B, in) = (K, M)), and db = Σ_rows dz from the
            // same kernel's loads of dz: into gradient buffers, or straight into the optimizer.
            let mnk = (layer.in_dim, layer.cfg.units, b);
            match backward {
                Backward::Grads(grads) => {
                    let epi = grads.b[l]
                        .as_ref()
                        .map_or(Epilogue::None, |gb| Epilogue::ColSum(gb.buffer()));
                    mm(
                        &mut rec,
                        input,
                        &dz,
                        epi,
                        &grads.w[l],
                        mnk,
                        Layout::TN,
                        Activation::Linear,
                    )?;
                }
                Backward::Fused(rule) => {
                    let st = |i: usize| -> Vec<&wgpu::Buffer> {
                        model.opt_state[i].iter().map(|t| t.buffer()).collect()
                    };
                    let w_state = st(first_param[l]);
                    let b_state = if layer.b.is_some() {
                        st(first_param[l] + 1)
                    } else {
                        Vec::new()
                    };
                    let bias = layer.b.as_ref().map(|bt| (bt.buffer(), &b_state[..]));
                    let epi = Epilogue::Update(matmul::Update {
                        rule,
                        step: 1,
                        state: &w_state,
                        bias,
                    });
                    rec.set_table_uniforms(true);
                    mm(
                        &mut rec,
                        input,
                        &dz,
                        epi,
                        &layer.w,
                        mnk,
                        Layout::TN,
                        Activation::Linear,
                    )?;
                    rec.set_table_uniforms(false);
                    let mnk = (mnk.0 as u32, mnk.1 as u32, mnk.2 as u32);
                    dynamic.push(Dyn::Update { layer: l, mnk });
                }
                Backward::None => {}
            }
            if let Some(p) = dz_prev {
                bufs.push(std::mem::replace(&mut dz, p));
            }
        }
        bufs.push(dz);
    }
    let body = rec.finish_capture();
    bufs.extend(inputs);
    bufs.extend(outs);
    bufs.extend(pre.into_iter().flatten());
    bufs.push(loss);
    bufs.push(dz_last);
    for t in &bufs {
        t.set_memory_kind(MemoryKind::Activations);
    }
    Ok(Plan {
        b,
        gather,
        body,
        dynamic,
        _bufs: bufs,
    })
}

/// For each layer, its position among the layers with dropout (None without).
fn dropout_layers(model: &Sequential) -> Vec<Option<usize>> {
    let mut k = 0;
    model
        .layers
        .iter()
        .map(|l| {
            (l.cfg.dropout > 0.0).then(|| {
                k += 1;
                k - 1
            })
        })
        .collect()
}

/// Units and rate of each layer with dropout, in order.
pub(crate) fn dropout_specs(model: &Sequential) -> Vec<(usize, f32)> {
    model
        .layers
        .iter()
        .filter(|l| l.cfg.dropout > 0.0)
        .map(|l| (l.cfg.units, l.cfg.dropout))
        .collect()
}

/// The dropout mask seed of the `k`-th layer with dropout at optimizer step `t` (1-based,
/// counted over the model's life) of a run with shuffle seed `seed`: a pure function of the
/// three, so a resumed run draws the same masks. Element `i` of that layer's (batch, units)
/// output is kept when `reference::dropout_keep(i, rate, mask_seed)`.
pub fn dropout_mask_seed(seed: u64, t: u64, k: usize) -> u32 {
    let mut x = seed
        ^ t.wrapping_mul(0x9E37_79B9_7F4A_7C15)
        ^ (k as u64).wrapping_mul(0xD1B5_4A32_D192_ED03);
    // splitmix64's finaliser.
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    (x ^ (x >> 31)) as u32
}

/// Element counts of the parameters in optimizer order (kernel, then bias, per layer).
pub(crate) fn param_sizes(model: &Sequential) -> Vec<usize> {
    let mut v = Vec::new();
    for layer in &model.layers {
        v.push(layer.w.numel());
        if let Some(b) = &layer.b {
            v.push(b.numel());
        }
    }
    v
}

/// The parameters in optimizer order: (param, grad) per kernel and bias.
pub(crate) fn params(model: &Sequential, grads: &Grads) -> Vec<(Tensor, Tensor)> {
    let mut v = Vec::new();
    for (l, layer) in model.layers.iter().enumerate() {
        v.push((layer.w.clone(), grads.w[l].clone()));
        if let (Some(b), Some(gb)) = (&layer.b, &grads.b[l]) {
            v.push((b.clone(), gb.clone()));
        }
    }
    v
}

pub(crate) fn read_acc(acc: &Tensor) -> Result<(f64, f64, f64)> {
    let v = acc.to_vec()?;
    Ok((v[0] as f64, v[1] as f64, v[2] as f64))
}

pub(crate) fn clear(dev: &Device, t: &Tensor) -> Result<()> {
    let mut rec = dev.recorder();
    rec.clear(t.buffer());
    rec.submit()?;
    Ok(())
}

/// The optimizer side of a training chunk: the plans' bodies apply `rule` themselves
/// ([`Backward::Fused`]).
#[derive(Clone, Copy)]
pub(crate) struct StepOptim<'a> {
    pub(crate) rule: &'a Rule,
    /// Optimizer steps taken before the chunk.
    pub(crate) t0: u64,
}

/// Replays `steps` (batch offsets and sizes); with `optim`, each step is a training step
/// numbered from `t0 + 1` on. Per-step uniforms (batch offsets, dropout seeds, optimizer
/// step scalars) are written into `table` once for the whole chunk, one aligned slot each
/// (laid out as [`dyn_slot`] says), and read at dynamic offsets: no per-step copy. `drops`
/// (units, rate) are the dropout layers, used only while training.
#[allow(clippy::too_many_arguments)] // the loop's state, spelled out
fn run_steps(
    dev: &Device,
    data: &Dataset,
    idx: &IndexBuffer,
    plans: &[&Plan],
    steps: &[(usize, usize)],
    optim: Option<StepOptim<'_>>,
    drops: &[(usize, f32)],
    seed: u64,
    table: &Tensor,
) -> Result<()> {
    let align = dev.uniform_alignment() as usize;
    let nd = if optim.is_some() { drops.len() } else { 0 };
    let plan_of = |b: usize| {
        plans.iter().find(|p| p.b == b).ok_or_else(|| Error::Gpu {
            op: "fit",
            message: format!("internal error: no plan for batch {b}"),
        })
    };
    let updates = plans.first().map_or(0, |p| {
        p.dynamic
            .iter()
            .filter(|d| matches!(d, Dyn::Update { .. }))
            .count()
    });
    let slots = 2 + nd + updates;
    let mut bytes = vec![0u8; slots * align * steps.len()];
    let mut put =
        |slot: usize, v: &[u8]| bytes[slot * align..slot * align + v.len()].copy_from_slice(v);
    for (s, &(offset, b)) in steps.iter().enumerate() {
        let plan = plan_of(b)?;
        let t = optim.map_or(0, |o| o.t0 + s as u64 + 1);
        let drops = if optim.is_some() { drops } else { &[] };
        put_step_uniforms(data, idx, offset, b, drops, seed, t, &mut |j, u| {
            put(s * slots + j, u)
        });
        let Some(o) = optim else { continue };
        for &d in &plan.dynamic {
            if let Dyn::Update { mnk: (m, n, k), .. } = d {
                let p = matmul::update_params(m, n, k, o.rule, t);
                put(s * slots + dyn_slot(d, nd), bytemuck::bytes_of(&p));
            }
        }
    }
    dev.wgpu_queue().write_buffer(table.buffer(), 0, &bytes);
    let mut rec = dev.recorder();
    for (s, &(_, b)) in steps.iter().enumerate() {
        let plan = plan_of(b)?;
        let slot = |j: usize| ((s * slots + j) * align) as u32;
        rec.replay_at(&plan.gather, &[slot(0), slot(1)][..plan.gather.len()])?;
        let offsets: Vec<u32> = plan
            .dynamic
            .iter()
            .map(|&d| slot(dyn_slot(d, nd)))
            .collect();
        rec.replay_at(&plan.body, &offsets)?;
    }
    rec.submit()?;
    Ok(())
}

/// A parameter table for chunks of `CHUNK` steps with `slots` dispatches each.
pub(crate) fn param_table(dev: &Device, slots: usize) -> Result<Tensor> {
    let t = Tensor::empty(dev, &[CHUNK * slots * dev.uniform_alignment() as usize / 4])?;
    t.set_memory_kind(MemoryKind::Activations);
    Ok(t)
}

/// Zeroed optimizer state for every parameter, unless the model already has it (a
/// continued `fit` or a loaded checkpoint); fresh state restarts the step count.
pub(crate) fn init_opt_state(model: &mut Sequential, rule: &Rule, sizes: &[usize]) -> Result<()> {
    if model.opt_state.len() == sizes.len() {
        return Ok(());
    }
    let dev = model.device.clone();
    model.opt_state = sizes
        .iter()
        .map(|&n| {
            (0..rule.state_count())
                .map(|_| {
                    let t = Tensor::zeros(&dev, &[n])?;
                    t.set_memory_kind(MemoryKind::OptimizerState);
                    Ok(t)
                })
                .collect::<Result<Vec<_>>>()
        })
        .collect::<Result<_>>()?;
    model.step = 0;
    Ok(())
}

/// The optimizer step over `ps` (param, grad) as a program whose uniforms are read from
/// `table` (bias corrections change every step).
pub(crate) fn optimizer_program(
    model: &Sequential,
    rule: &Rule,
    ps: &[(Tensor, Tensor)],
    table: &Tensor,
) -> Result<Program> {
    let mut rec = model.device.capture_with_table(table.buffer());
    for (i, (p, g)) in ps.iter().enumerate() {
        let st: Vec<&wgpu::Buffer> = model.opt_state[i].iter().map(|t| t.buffer()).collect();
        optim::step(&mut rec, rule, g.buffer(), p.buffer(), &st, p.numel(), 1)?;
    }
    Ok(rec.finish_capture())
}

/// Writes the uniforms a plan of batch `b` reads at step `t`: the gather's (slots 0 and 1)
/// and each dropout layer's mask seed (slots `2..2 + drops.len()`), through `put(slot, bytes)`.
#[allow(clippy::too_many_arguments)] // the step's inputs, spelled out
pub(crate) fn put_step_uniforms(
    data: &Dataset,
    idx: &IndexBuffer,
    offset: usize,
    b: usize,
    drops: &[(usize, f32)],
    seed: u64,
    t: u64,
    put: &mut dyn FnMut(usize, &[u8]),
) {
    for (j, u) in data.gather_uniforms(idx, offset, b).iter().enumerate() {
        put(j, u);
    }
    for (k, &(units, rate)) in drops.iter().enumerate() {
        let p = elementwise::dropout_params(b * units, rate, dropout_mask_seed(seed, t, k));
        put(2 + k, bytemuck::bytes_of(&p));
    }
}

/// `epochs` and `batch_size` are at least 1.
pub(crate) fn check_counts(op: &'static str, o: &FitOptions<'_>) -> Result<()> {
    if o.epochs == 0 || o.batch_size == 0 {
        return Err(Error::InvalidArgument {
            op,
            name: if o.epochs == 0 {
                "epochs"
            } else {
                "batch_size"
            },
            expected: "at least 1".into(),
            found: "0".into(),
        });
    }
    Ok(())
}

/// Epoch `epoch`'s shuffle of the previous order.
pub(crate) fn shuffle(perm: &mut [u32], seed: u64, epoch: usize) {
    Rng::new(seed ^ (epoch as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)).shuffle(perm);
}

/// `- loss: … - accuracy: …` (no accuracy for regression losses).
fn metrics_text(prefix: &str, loss: f64, accuracy: f64, has_acc: bool) -> String {
    if has_acc {
        format!("- {prefix}loss: {loss:.4} - {prefix}accuracy: {accuracy:.4}")
    } else {
        format!("- {prefix}loss: {loss:.4}")
    }
}

pub(crate) fn batches(rows: usize, b: usize) -> Vec<(usize, usize)> {
    (0..rows.div_ceil(b))
        .map(|s| (s * b, b.min(rows - s * b)))
        .collect()
}

pub(crate) fn evaluate(
    model: &Sequential,
    data: &Dataset,
    batch_size: usize,
) -> Result<(f64, f64)> {
    let rows: Vec<u32> = (0..data.rows as u32).collect();
    evaluate_rows(model, data, &rows, batch_size)
}

/// Loss and accuracy over the dataset rows `rows`.
pub(crate) fn evaluate_rows(
    model: &Sequential,
    data: &Dataset,
    rows: &[u32],
    batch_size: usize,
) -> Result<(f64, f64)> {
    model.check_dataset("evaluate", data)?;
    if batch_size == 0 {
        return Err(Error::InvalidArgument {
            op: "evaluate",
            name: "batch_size",
            expected: "at least 1".into(),
            found: "0".into(),
        });
    }
    let n = rows.len();
    let b = batch_size.clamp(1, n.max(1));
    let dev = &model.device;
    let idx = IndexBuffer::new(dev, rows)?;
    let acc = Tensor::zeros(dev, &[4])?;
    let steps = batches(n, b);
    let table = param_table(dev, 2)?;
    let full = plan(model, data, &idx, b, Backward::None, &acc, &table)?;
    let rem = n % b;
    let tail = if rem > 0 {
        Some(plan(model, data, &idx, rem, Backward::None, &acc, &table)?)
    } else {
        None
    };
    let mut plans = vec![&full];
    plans.extend(tail.as_ref());
    for chunk in steps.chunks(CHUNK) {
        run_steps(dev, data, &idx, &plans, chunk, None, &[], 0, &table)?;
    }
    let (loss, correct, n) = read_acc(&acc)?;
    let accuracy = if model.loss == Some(Loss::MeanSquaredError) {
        f64::NAN
    } else {
        correct / n
    };
    Ok((loss / n, accuracy))
}

pub(crate) fn fit(
    model: &mut Sequential,
    data: &Dataset,
    mut o: FitOptions<'_>,
) -> Result<History> {
    let (Some(optimizer), Some(_loss)) = (model.optimizer, model.loss) else {
        return Err(Error::InvalidArgument {
            op: "fit",
            name: "model",
            expected: "a compiled model (call compile first)".into(),
            found: "not compiled".into(),
        });
    };
    model.check_dataset("fit", data)?;
    if let Some(v) = o.validation_data {
        model.check_dataset("fit (validation data)", v)?;
    }
    let start = o.resume.map_or(0, |c| c.epoch);
    let seed = o.resume.map_or(o.seed, |c| c.seed);
    if let Some(c) = o.resume {
        if c.epoch >= o.epochs {
            return Err(Error::InvalidArgument {
                op: "fit",
                name: "epochs",
                expected: format!(
                    "more than the checkpoint's {} completed epochs (epochs is the total)",
                    c.epoch
                ),
                found: o.epochs.to_string(),
            });
        }
        if c.step != model.step || model.opt_state.is_empty() != (c.step == 0) {
            return Err(Error::InvalidArgument {
                op: "fit",
                name: "resume",
                expected: format!(
                    "the model loaded with this checkpoint (optimizer step {})",
                    c.step
                ),
                found: format!("a model at optimizer step {}", model.step),
            });
        }
    }
    check_counts("fit", &o)?;
    if !(0.0..1.0).contains(&o.validation_split) {
        return Err(Error::InvalidArgument {
            op: "fit",
            name: "validation_split",
            expected: "a fraction in [0, 1)".into(),
            found: o.validation_split.to_string(),
        });
    }
    // Keras's rule: the last fraction of the rows, taken before shuffling.
    let n_val = if o.validation_data.is_none() {
        (data.rows as f64 * o.validation_split) as usize
    } else {
        0
    };
    let n_train = data.rows - n_val;
    if n_train == 0 || (o.validation_split > 0.0 && o.validation_data.is_none() && n_val == 0) {
        return Err(Error::InvalidArgument {
            op: "fit",
            name: "validation_split",
            expected: "a split leaving at least one training and one validation row".into(),
            found: format!("{} of {} rows", o.validation_split, data.rows),
        });
    }
    let val_rows: Vec<u32> = (n_train as u32..data.rows as u32).collect();
    let dev = model.device.clone();
    let b = o.batch_size.min(n_train);
    let has_acc = model.loss != Some(Loss::MeanSquaredError);
    let sizes = param_sizes(model);
    let rule0 = optimizer.rule(optimizer.lr());
    init_opt_state(model, &rule0, &sizes)?;
    let idx = IndexBuffer::new(&dev, &vec![0u32; n_train])?;
    let acc = Tensor::zeros(&dev, &[4])?;
    acc.set_memory_kind(MemoryKind::Activations);
    let drops = dropout_specs(model);
    if model.layers.last().is_some_and(|l| l.cfg.dropout > 0.0) {
        return Err(Error::InvalidArgument {
            op: "fit",
            name: "dropout",
            expected: "dropout on hidden layers only".into(),
            found: format!(
                "dropout {} on the output layer",
                model.layers[model.layers.len() - 1].cfg.dropout
            ),
        });
    }
    // The optimizer runs inside each layer's weight-gradient product (one slot per layer).
    let table = param_table(&dev, 2 + drops.len() + model.layers.len())?;
    let fused = Backward::Fused(rule0);
    let full = plan(model, data, &idx, b, fused, &acc, &table)?;
    let rem = n_train % b;
    let tail = if rem > 0 {
        Some(plan(model, data, &idx, rem, fused, &acc, &table)?)
    } else {
        None
    };
    let mut plans = vec![&full];
    plans.extend(tail.as_ref());
    let steps = batches(n_train, b);
    let mut history = o
        .resume
        .map_or_else(History::default, |c| c.history.clone());
    // Early stopping picks up where the earlier epochs left it.
    let mut best = f64::INFINITY;
    let mut since_best = 0;
    let monitored: &[f64] = if history.val_loss.is_empty() {
        &history.loss
    } else {
        &history.val_loss
    };
    for &m in monitored {
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
    let mut perm: Vec<u32> = (0..n_train as u32).collect();
    if o.shuffle {
        for e in 0..start {
            shuffle(&mut perm, seed, e);
        }
    }
    for epoch in start..o.epochs {
        let t_epoch = Instant::now();
        let window = dev.utilisation_window();
        let lr = o.lr_schedule.map_or(optimizer.lr(), |f| f(epoch));
        if !(lr > 0.0 && lr.is_finite()) {
            return Err(Error::InvalidArgument {
                op: "fit",
                name: "lr_schedule",
                expected: "a finite learning rate > 0".into(),
                found: lr.to_string(),
            });
        }
        let rule = optimizer.rule(lr);
        if o.shuffle {
            shuffle(&mut perm, seed, epoch);
        }
        idx.write(&dev, &perm);
        clear(&dev, &acc)?;
        let bar = if o.verbose {
            let pb = indicatif::ProgressBar::new(steps.len() as u64);
            pb.set_style(
                indicatif::ProgressStyle::with_template(&format!(
                    "Epoch {}/{} {{bar:30}} {{pos}}/{{len}} {{msg}}",
                    epoch + 1,
                    o.epochs
                ))
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
            );
            Some(pb)
        } else {
            None
        };
        if let (Some(pb), true) = (&bar, epoch == start) {
            // On a software adapter a kernel is compiled at its first dispatch (seconds for
            // the unrolled matmuls on a cold shader cache): say so instead of looking stuck.
            pb.set_message("first steps: the driver compiles the kernels (cached afterwards)");
            pb.tick();
        }
        let mut last_show = Instant::now();
        let mut done = 0;
        for chunk in steps.chunks(CHUNK) {
            run_steps(
                &dev,
                data,
                &idx,
                &plans,
                chunk,
                Some(StepOptim {
                    rule: &rule,
                    t0: model.step,
                }),
                &drops,
                seed,
                &table,
            )?;
            model.step += chunk.len() as u64;
            done += chunk.len();
            if let Some(pb) = &bar {
                if last_show.elapsed().as_secs_f64() > 0.25 {
                    let (l, c, n) = read_acc(&acc)?;
                    pb.set_position(done as u64);
                    pb.set_message(metrics_text("", l / n, c / n, has_acc));
                    last_show = Instant::now();
                    if !l.is_finite() {
                        return Err(Error::NonFinite {
                            epoch: epoch + 1,
                            step: done,
                            value: l,
                        });
                    }
                }
            }
        }
        let (l, c, n) = read_acc(&acc)?;
        let busy = window.utilisation().fraction();
        let (loss, accuracy) = (l / n, if has_acc { c / n } else { f64::NAN });
        if !loss.is_finite() {
            if let Some(pb) = &bar {
                pb.abandon();
            }
            return Err(Error::NonFinite {
                epoch: epoch + 1,
                step: steps.len(),
                value: loss,
            });
        }
        let train_secs = t_epoch.elapsed().as_secs_f64();
        history.loss.push(loss);
        history.accuracy.push(accuracy);
        let mut line = format!(
            "{}/{} - {:.1}s {}",
            steps.len(),
            steps.len(),
            train_secs,
            metrics_text("", loss, accuracy, has_acc)
        );
        let val = match o.validation_data {
            Some(v) => Some(evaluate(model, v, 1000)?),
            None if n_val > 0 => Some(evaluate_rows(model, data, &val_rows, 1000)?),
            None => None,
        };
        if let Some((vl, va)) = val {
            history.val_loss.push(vl);
            history.val_accuracy.push(va);
            line.push_str(&format!(" {}", metrics_text("val_", vl, va, has_acc)));
        }
        line.push_str(&format!(
            " - {:.1}k samples/s",
            n_train as f64 / train_secs / 1e3
        ));
        history.epoch_seconds.push(train_secs);
        history.utilisation.push(busy);
        if let Some(pb) = bar {
            pb.finish_and_clear();
            println!("Epoch {}/{} {line}", epoch + 1, o.epochs);
        }
        log::info!("epoch {} {line}", epoch + 1);
        if let Some(path) = o.checkpoint {
            model.save_checkpoint(path, epoch + 1, seed, &history)?;
        }
        if let Some(cb) = o.on_epoch_end.as_mut() {
            if !cb(epoch, &history) {
                break;
            }
        }
        if let Some(es) = o.early_stopping {
            let monitored = history.val_loss.last().copied().unwrap_or(loss);
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

#[cfg(test)]
mod tests {
    #[test]
    fn batches_cover_every_row_once() {
        let b = super::batches(10, 4);
        assert_eq!(b, vec![(0, 4), (4, 4), (8, 2)]);
        assert_eq!(super::batches(8, 4), vec![(0, 4), (4, 4)]);
    }

    #[test]
    fn gelu_is_not_output_derivable() {
        assert!(!super::derivative_from_output(crate::Activation::Gelu));
        assert!(super::derivative_from_output(crate::Activation::Relu));
    }
}
