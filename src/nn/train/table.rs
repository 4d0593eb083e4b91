//! The step protocol: what a captured step does after its loss ([`Backward`]), which
//! per-step uniforms it reads from the parameter table and where ([`StepLayout`] owns the
//! layout of one step's slots: `[gather…, dropout seeds…, one per parameter…, one per
//! parameter accumulating…]`), and [`Chunk`], which writes a chunk of steps' uniforms with
//! one upload. Nothing else in the crate knows a slot's position. The step programs that
//! read the table are in [`crate::nn::train::step`].

use crate::data::dataset::Dataset;
use crate::error::{Error, Result};
use crate::kernels::{elementwise, optim};
use crate::memory::MemoryKind;
use crate::nn::graph::model::Sequential;
use crate::nn::layer::Slot;
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
    /// whatever needs the whole gradient before it is applied. With gradient accumulation
    /// ([`crate::nn::Model::set_gradient_accumulation`]) the third list holds an accumulator
    /// per parameter, which every step adds its gradient to and the optimizer reads on a
    /// cycle's last step (empty otherwise).
    Unfused(Rule, &'a [Tensor], &'a [Tensor]),
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
    /// Batches per optimizer step (1: no accumulation; above, a second slot per parameter
    /// for its accumulation).
    accum: usize,
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
            accum: match backward {
                Backward::Unfused(_, _, accs) if !accs.is_empty() => model.accumulation,
                _ => 1,
            },
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

    /// Batches per optimizer step.
    pub(crate) fn accumulation(&self) -> usize {
        self.accum
    }

    /// Slots per step.
    pub(crate) fn slots(&self) -> usize {
        let accumulating = if self.accum > 1 { self.params } else { 0 };
        self.gather + self.dropout.len() + self.params + accumulating
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
            Slot::Accumulate { param, .. } => {
                (self.accum > 1 && param < self.params).then_some(base_p + self.params + param)
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
        // Only where a gather reads them: an optimizer-only program is put with no batch.
        let gather = if slots.iter().any(|s| matches!(s, Slot::Gather(_))) {
            u.data.gather_uniforms(u.idx, u.offset, u.batch, u.t)?
        } else {
            Vec::new()
        };
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
                    // Accumulating: the optimizer steps on a cycle's last batch only (a
                    // count of 0 makes the dispatch do nothing), as step t / k.
                    let k = self.layout.accum as u64;
                    let (n, t) = match k {
                        1 => (n, u.t),
                        _ if u.t.is_multiple_of(k) => (n, u.t / k),
                        _ => (0, 1),
                    };
                    bytemuck::bytes_of(&optim::params(&rule, n, t)).to_vec()
                }
                Slot::Accumulate { n, .. } => {
                    let k = self.layout.accum as u64;
                    let p = optim::AccParams {
                        n: n as u32,
                        a: if (u.t.max(1) - 1).is_multiple_of(k) {
                            0.0
                        } else {
                            1.0
                        },
                        b: (1.0 / k as f64) as f32,
                        _pad: 0,
                    };
                    bytemuck::bytes_of(&p).to_vec()
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
