//! What a layer type is to the training engine: the [`Layer`] trait, the context a layer
//! records its forward and backward passes in ([`Cx`]), and what passes between them.
//!
//! A layer describes its forward pass once ([`Layer::forward`]); that one description serves
//! training and evaluation (recorded into a captured step program) and prediction (recorded
//! and submitted at once). Its backward pass ([`Layer::backward`]) receives the gradient at
//! its output and returns the one at its input, producing or applying its parameters'
//! gradients on the way. Layers see per-sample shapes (channels last); a layer's description,
//! parameters and shapes come from its spec ([`crate::nn::spec`]), so saving, loading,
//! copying to another device and the summary need nothing from the layer type.
//!
//! Fusions across the boundary are offered, never imposed:
//! - A layer whose activation's derivative follows from its output offers it as a *gate*
//!   ([`Layer::gate`]). The layer after it may multiply the input gradient it computes by
//!   that derivative in the same kernel (a matmul or pooling epilogue, the dropout mask) and
//!   say so ([`Dx::gated`]); the first layer's backward then starts from the gradient at its
//!   pre-activation. A layer that cannot fuse it declines, and the first applies its own
//!   derivative ([`crate::nn::layers::head`]).
//! - A parameter whose gradient comes from one GEMM may have the optimizer applied inside
//!   that kernel ([`WeightGrad::fused`]); any other parameter's gradient is written whole and
//!   stepped by the optimizer kernel ([`WeightGrad::target`], [`WeightGrad::apply`]).

use crate::error::{Error, Result};
use crate::exec::dispatch::Record;
use crate::kernels::optim;
use crate::memory::MemoryKind;
use crate::runtime::Device;
use crate::tensor::Tensor;
use crate::vocab::{Activation, Precision, Rule};

/// How a forward pass is recorded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Prediction: every activation applied (softmax included); no dropout; moving
    /// statistics.
    Predict,
    /// Evaluation: the last layer's activation folded into a loss that takes logits; no
    /// dropout; moving statistics.
    Evaluate,
    /// Training: as evaluation, with dropout and batch statistics.
    Train,
}

/// A dispatch of a step program that reads its uniform from the per-step parameter table
/// (see [`crate::nn::train::table::StepLayout`], which owns their order).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Slot {
    /// The `j`-th dispatch of the batch gather.
    Gather(usize),
    /// The mask seed of the `k`-th dropout layer.
    Dropout(usize),
    /// An optimizer step fused into the kernel that computes parameter `param`'s gradient
    /// (and, where the kernel updates it too, the bias after it). The uniform is `head`
    /// (the kernel's shape words) followed by the optimizer's step over `count` elements.
    Update {
        /// The parameter's index in optimizer order.
        param: usize,
        /// The kernel's first 16 bytes of uniform.
        head: [u32; 4],
        /// Elements of the parameter.
        count: u32,
    },
    /// The optimizer kernel's step of parameter `param`, of `n` elements, from a gradient
    /// written whole.
    Optim {
        /// The parameter's index in optimizer order.
        param: usize,
        /// Its element count.
        n: usize,
    },
    /// Gradient accumulation's `acc = a·acc + b·grad` of parameter `param`, of `n` elements
    /// (its uniform says `a` and `b` each step).
    Accumulate {
        /// The parameter's index in optimizer order.
        param: usize,
        /// Its element count.
        n: usize,
    },
}

/// Where a layer records: a recorder or a capture, the batch size, the mode, the table slots
/// its per-step dispatches take (in order) and the scratch tensors the recording binds.
pub(crate) struct Cx<'r> {
    rec: &'r mut dyn Record,
    /// Rows per batch.
    pub(crate) batch: usize,
    /// What is being recorded.
    pub(crate) mode: Mode,
    /// One entry per table-bound dispatch, in recording order.
    pub(crate) slots: Vec<Slot>,
    /// Scratch tensors bound by the recorded work (kept alive with the program).
    pub(crate) keep: Vec<Tensor>,
    /// Generation's key/value caches, while a model runs on new tokens only.
    pub(crate) decode: Option<Decode>,
    /// The model's precision policy (`Model::set_precision_policy`): under
    /// [`Precision::MixedFloat16`] the Dense and Conv2D products round their operands to
    /// float16 ([`Cx::half`]). Set from the model by the forward walk
    /// (`nn::graph::walk::forward`), which every pass over a model (training,
    /// evaluation, prediction, generation) starts with, so its backward pass sees it too.
    pub(crate) precision: Precision,
}

/// Generation's key/value caches ([`crate::nn::graph::generate`]): while a [`Cx`] holds
/// them, the forward pass sees only the new tokens (rows `past..past + n` of each
/// sequence), and each causal attention layer, in the order the walk reaches them, appends
/// their keys and values to its cache and attends to every cached position. Layers that
/// work per position need nothing of it.
pub(crate) struct Decode {
    /// Positions already cached.
    pub(crate) past: usize,
    /// Positions a cache holds per sequence.
    pub(crate) cap: usize,
    /// Keys and values of each attention layer, (batch, cap, width) each, made at first use.
    pub(crate) caches: Vec<(Tensor, Tensor)>,
    /// The cache the next attention layer of this pass takes.
    pub(crate) next: usize,
}

/// An attention layer's cache for this pass, from [`Cx::kv_cache`].
pub(crate) struct KvCache {
    /// Keys, (batch, cap, width).
    pub(crate) k: Tensor,
    /// Values, as the keys.
    pub(crate) v: Tensor,
    /// Positions already cached.
    pub(crate) past: usize,
    /// Positions it holds per sequence.
    pub(crate) cap: usize,
}

impl<'r> Cx<'r> {
    /// A context recording into `rec`.
    pub(crate) fn new(rec: &'r mut dyn Record, batch: usize, mode: Mode) -> Cx<'r> {
        Cx {
            rec,
            batch,
            mode,
            slots: Vec::new(),
            keep: Vec::new(),
            decode: None,
            precision: Precision::Float32,
        }
    }

    /// Whether the layers' matmuls and convolutions take float16 operands: the model's policy
    /// is [`Precision::MixedFloat16`]. Attention, normalisation statistics, softmax and the
    /// losses stay f32 whatever the policy.
    pub(crate) fn half(&self) -> bool {
        self.precision == Precision::MixedFloat16
    }

    /// The next attention layer's key/value cache of `width` values per position, made
    /// (zeros) at its first use; `None` unless generating with caches.
    pub(crate) fn kv_cache(&mut self, width: usize) -> Result<Option<KvCache>> {
        let device = self.device();
        let batch = self.batch;
        let Some(d) = self.decode.as_mut() else {
            return Ok(None);
        };
        let k = d.next;
        d.next += 1;
        if d.caches.len() <= k {
            let shape = [batch, d.cap, width];
            let kc = Tensor::zeros(&device, &shape)?;
            let vc = Tensor::zeros(&device, &shape)?;
            d.caches.push((kc, vc));
        }
        let (kc, vc) = &d.caches[k];
        if kc.shape() != [batch, d.cap, width] {
            return Err(Error::Internal {
                op: "generate",
                message: format!(
                    "attention cache {k} is {:?}, not ({batch}, {}, {width})",
                    kc.shape(),
                    d.cap
                ),
            });
        }
        Ok(Some(KvCache {
            k: kc.clone(),
            v: vc.clone(),
            past: d.past,
            cap: d.cap,
        }))
    }

    /// The device.
    pub(crate) fn device(&self) -> Device {
        self.rec.device().clone()
    }

    /// Where fixed-uniform work is recorded.
    pub(crate) fn rec(&mut self) -> &mut dyn Record {
        &mut *self.rec
    }

    /// A (batch, `shape`…) scratch tensor, kept alive with the recording.
    pub(crate) fn tensor(&mut self, shape: &[usize]) -> Result<Tensor> {
        let mut full = vec![self.batch];
        full.extend_from_slice(shape);
        self.scratch(&full)
    }

    /// A scratch tensor of any shape, kept alive with the recording.
    pub(crate) fn scratch(&mut self, shape: &[usize]) -> Result<Tensor> {
        let t = Tensor::empty(&self.device(), shape)?;
        t.set_memory_kind(MemoryKind::Activations);
        self.keep.push(t.clone());
        Ok(t)
    }

    /// Records work whose dispatches read their uniforms from the parameter table, one
    /// dispatch per entry of `slots` (checked).
    pub(crate) fn per_step(
        &mut self,
        slots: &[Slot],
        f: impl FnOnce(&mut dyn Record) -> Result<()>,
    ) -> Result<()> {
        if !self.rec.set_table_uniforms(true) {
            return Err(Error::Internal {
                op: "step program",
                message: "a per-step dispatch was recorded without a parameter table".into(),
            });
        }
        let r = f(&mut *self.rec);
        self.rec.set_table_uniforms(false);
        r?;
        self.slots.extend_from_slice(slots);
        Ok(())
    }
}

/// Where a layer sits in its model.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Position {
    /// Its position among the dropout layers.
    pub(crate) dropout: Option<usize>,
    /// The last layer, whose activation a loss taking logits folds in.
    pub(crate) folded: bool,
    /// Index of its first parameter in optimizer order.
    pub(crate) first_param: usize,
}

/// What a layer's forward pass leaves for its backward pass.
#[derive(Clone)]
pub(crate) struct Saved {
    /// What the layer read.
    pub(crate) input: Tensor,
    /// What the next layer reads.
    pub(crate) output: Tensor,
    /// The activation head's record (layers with an activation).
    pub(crate) head: Option<HeadOut>,
    /// Whatever else the layer's backward pass needs (argmax indices, batch statistics).
    pub(crate) extra: Vec<Tensor>,
}

impl Saved {
    /// A record of a layer without an activation head.
    pub(crate) fn plain(input: &Tensor, output: Tensor, extra: Vec<Tensor>) -> Saved {
        Saved {
            input: input.clone(),
            output,
            head: None,
            extra,
        }
    }
}

/// The gradient at a layer's input, and whether the gate offered to it (the previous
/// layer's activation derivative) is already applied.
pub(crate) struct Dx {
    /// The gradient.
    pub(crate) grad: Tensor,
    /// The offered gate was applied: the previous layer starts from its pre-activation.
    pub(crate) gated: bool,
}

/// A layer's weights, in the order its spec lists them (trainable parameters, then state).
#[derive(Clone, Default)]
pub(crate) struct Weights {
    /// Trainable parameters, in optimizer order.
    pub(crate) params: Vec<Tensor>,
    /// Non-trainable state (moving statistics), which the optimizer never sees.
    pub(crate) state: Vec<Tensor>,
}

/// What a layer does with its parameters' gradients in a backward pass.
pub(crate) enum WeightGrad<'a> {
    /// Write them into these buffers (one per parameter of the layer, in order).
    Into(&'a [Tensor]),
    /// Apply this optimizer step to the parameters in place, with these states (per
    /// parameter of the model, in optimizer order).
    Update {
        /// The rule.
        rule: Rule,
        /// Each parameter's optimizer states.
        state: &'a [Vec<Tensor>],
    },
    /// The layer is frozen (`trainable = false`): its parameters stay as they are. Layers
    /// need not know: no fused update is offered, the gradient goes to a scratch tensor and
    /// `apply` does nothing (the gradient at the input, which the layers below need, is
    /// computed as always).
    Frozen,
}

/// An optimizer step a GEMM can apply to parameter `i` of a layer in place: the rule and the
/// parameter's states (its per-step uniform goes in the parameter's [`Slot::Update`]).
pub(crate) struct Fused<'a> {
    /// The rule.
    pub(crate) rule: Rule,
    /// The parameter's states.
    pub(crate) state: Vec<&'a wgpu::Buffer>,
}

impl<'a> WeightGrad<'a> {
    /// The fused optimizer step of the layer's parameter `i` (the layer at `pos`), when
    /// updating in place; `None` when gradients are written out.
    pub(crate) fn fused(&self, pos: Position, i: usize) -> Option<Fused<'a>> {
        match self {
            WeightGrad::Into(_) | WeightGrad::Frozen => None,
            WeightGrad::Update { rule, state } => Some(Fused {
                rule: *rule,
                state: state[pos.first_param + i]
                    .iter()
                    .map(|t| t.buffer())
                    .collect(),
            }),
        }
    }

    /// Where the layer writes the whole gradient of its parameter `i` of shape `shape`: the
    /// gradient buffer, or a scratch tensor that [`WeightGrad::apply`] then steps from.
    pub(crate) fn target(&self, cx: &mut Cx<'_>, i: usize, shape: &[usize]) -> Result<Tensor> {
        match self {
            WeightGrad::Into(g) => g.get(i).cloned().ok_or_else(|| Error::Internal {
                op: "backward",
                message: format!("no gradient buffer for parameter {i}"),
            }),
            WeightGrad::Update { .. } | WeightGrad::Frozen => cx.scratch(shape),
        }
    }

    /// After the layer wrote parameter `i`'s whole gradient `g` into its
    /// [`WeightGrad::target`]: when updating, records the optimizer's step of `param` from
    /// it (a table-bound dispatch); otherwise nothing.
    pub(crate) fn apply(
        &self,
        cx: &mut Cx<'_>,
        pos: Position,
        i: usize,
        param: &Tensor,
        g: &Tensor,
    ) -> Result<()> {
        let WeightGrad::Update { rule, state } = self else {
            return Ok(());
        };
        let index = pos.first_param + i;
        let st: Vec<&wgpu::Buffer> = state[index].iter().map(|t| t.buffer()).collect();
        let n = param.numel();
        cx.per_step(&[Slot::Optim { param: index, n }], |rec| {
            optim::step(rec, rule, g.buffer(), param.buffer(), &st, n, 1)
        })
    }
}

/// What a layer's backward pass receives: one value, so the contract reads as one step
/// and a new input does not change every layer's signature.
pub(crate) struct Back<'a> {
    /// Where the layer sits in its model.
    pub(crate) pos: Position,
    /// What its forward pass left.
    pub(crate) saved: &'a Saved,
    /// The gradient at its output — or already at its pre-activation when `gated` (its gate
    /// was applied by the layer after it, or the loss gave the gradient at the logits).
    pub(crate) dy: &'a Tensor,
    /// See `dy`.
    pub(crate) gated: bool,
    /// The previous layer's gate, which the layer may apply in the kernel computing its
    /// input gradient (and then says so in [`Dx::gated`]).
    pub(crate) dx_gate: Option<&'a Gate>,
    /// Whether the gradient at the input is wanted (not for a layer reading the model's
    /// input).
    pub(crate) need_dx: bool,
    /// What to do with its parameters' gradients.
    pub(crate) grad: WeightGrad<'a>,
    /// Where its input fans out and another reader's gradient is already there, in a buffer
    /// nothing else reads: a layer whose input-gradient kernel can add into its output (a
    /// Dense's GEMM) adds its part there and returns that tensor, saving the sum's own
    /// dispatch; others ignore it (the walk then adds the two).
    pub(crate) dx_into: Option<&'a Tensor>,
}

/// What the backward pass of a layer with several inputs gets ([`Layer::backward_multi`]).
pub(crate) struct BackMulti<'a> {
    /// Where the layer sits in its model.
    pub(crate) pos: Position,
    /// What its forward pass left.
    pub(crate) saved: &'a Saved,
    /// The gradient at its output (such layers offer no gate, so never gated).
    pub(crate) dy: &'a Tensor,
    /// Which inputs want a gradient (those read from a layer, not the model's inputs).
    pub(crate) need: &'a [bool],
    /// What to do with its parameters' gradients.
    pub(crate) grad: WeightGrad<'a>,
}

/// A gate handed to the layer after: multiply the input gradient by `act'(y)`, `y` being this
/// tensor.
pub(crate) type Gate = (Activation, Tensor);

/// What the activation head ([`crate::nn::layers::head`]) recorded for the backward pass.
#[derive(Clone)]
pub(crate) struct HeadOut {
    /// The activation's output (logits when the activation is folded into the loss).
    pub(crate) activated: Tensor,
    /// The pre-activation, kept where the derivative needs it.
    pub(crate) pre: Option<Tensor>,
    /// The activation as recorded (linear when folded).
    pub(crate) act: Activation,
}

impl HeadOut {
    /// The gate the layer offers the layer after it: its derivative from its output.
    pub(crate) fn gate(&self) -> Option<Gate> {
        (self.pre.is_none() && self.act != Activation::Linear && self.act.derivative_from_output())
            .then(|| (self.act, self.activated.clone()))
    }
}

/// A layer's per-sample input and output shapes.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Io {
    /// Input shape (the first input's, for a merge).
    pub(crate) input: Vec<usize>,
    /// Every input's shape, in order (one for all but merges).
    pub(crate) inputs: Vec<Vec<usize>>,
    /// Output shape.
    pub(crate) output: Vec<usize>,
}

/// Where an input of a layer in a model comes from: a model input, or the output of an
/// earlier layer (layers are kept in a topological order, so always an earlier one).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Src {
    /// The model's input `k`.
    Input(usize),
    /// The output of layer `l`.
    Layer(usize),
}

impl From<Option<usize>> for Src {
    /// `None`: the first input; `Some(j)`: layer `j` (the form of a one-input graph).
    fn from(r: Option<usize>) -> Src {
        r.map_or(Src::Input(0), Src::Layer)
    }
}

/// A layer of a model (see the module docs). Its shapes and weights are generic (the model
/// keeps its spec); what a type implements is how it records its passes.
pub(crate) trait Layer: Send + Sync {
    /// Its shapes.
    fn io(&self) -> &Io;
    /// Its weights.
    fn weights(&self) -> &Weights;

    /// The activation of its output (linear for none).
    fn activation(&self) -> Activation {
        Activation::Linear
    }

    /// The rate of a dropout layer.
    fn dropout(&self) -> Option<f32> {
        None
    }

    /// How many values per sample its dropout masks (a dropout layer's input; an attention's
    /// probabilities, heads × queries × keys).
    fn dropout_values(&self) -> usize {
        self.io().input.iter().product()
    }

    /// A view (Flatten, Reshape): its output is its input reshaped, so the engine hands the
    /// gate of the layer before it to the layer after it, and `gated` passes through its
    /// backward pass unchanged.
    fn is_view(&self) -> bool {
        false
    }

    /// Makes the per-device choices the layer's kernels need (tuning submits work of its
    /// own, which a capture must not contain): called before a step is captured.
    fn prepare(&self, _dev: &Device) -> Result<()> {
        Ok(())
    }

    /// Records the forward pass of `x` (batch, input shape…).
    fn forward(&self, cx: &mut Cx<'_>, pos: Position, x: &Tensor) -> Result<Saved>;

    /// Records the forward pass of a layer with several inputs (a merge: `Add`,
    /// `Concatenate`…), which the engine calls instead of [`Layer::forward`] for them. Merges
    /// have no activation and offer no gate; a layer with one input never sees this.
    fn forward_merge(&self, _cx: &mut Cx<'_>, _pos: Position, _xs: &[Tensor]) -> Result<Saved> {
        Err(Error::Internal {
            op: "forward",
            message: "a layer with one input was handed several".into(),
        })
    }

    /// The backward pass of a merge from `dy`, the gradient at its output: the gradient at
    /// each input for which `need` says so (the same tensor may be handed to several inputs:
    /// the engine never writes into a gradient it was handed).
    fn backward_merge(
        &self,
        _cx: &mut Cx<'_>,
        _saved: &Saved,
        _dy: &Tensor,
        _need: &[bool],
    ) -> Result<Vec<Option<Tensor>>> {
        Err(Error::Internal {
            op: "backward",
            message: "a layer with one input was asked for several gradients".into(),
        })
    }

    /// The backward pass of a layer with several inputs: a merge's ([`Layer::backward_merge`],
    /// the default) or one with weights too (cross-attention), whose parameters' gradients go
    /// where `b.grad` says. The gradient at each input for which `b.need` says so.
    fn backward_multi(&self, cx: &mut Cx<'_>, b: BackMulti<'_>) -> Result<Vec<Option<Tensor>>> {
        self.backward_merge(cx, b.saved, b.dy, b.need)
    }

    /// Whether the input gradient it returns is in a buffer of its own, which nothing else
    /// reads (not a view of its `dy`, not shared between inputs): another reader of the
    /// same input may then add its gradient into it ([`Back::dx_into`]).
    fn owns_dx(&self) -> bool {
        false
    }

    /// The gate this layer offers the layer after it (see the module docs), if any.
    fn gate(&self, _cx: &Cx<'_>, saved: &Saved) -> Option<Gate> {
        saved.head.as_ref().and_then(HeadOut::gate)
    }

    /// Records the backward pass (see [`Back`]). Returns the gradient at the input when
    /// `need_dx`, saying whether it applied the previous layer's gate ([`Dx::gated`]).
    fn backward(&self, cx: &mut Cx<'_>, b: Back<'_>) -> Result<Option<Dx>>;
}
