//! What a layer type is to the training engine: the [`Layer`] trait, and the context a layer
//! records its forward and backward passes in ([`Cx`]).
//!
//! A layer describes its forward pass once ([`Layer::forward`]); that one description serves
//! training and evaluation (recorded into a captured step program) and prediction (recorded
//! and submitted at once). Its backward pass ([`Layer::backward`]) receives the gradient at
//! its output and returns the one at its input, applying or producing its weight gradient on
//! the way. Adding a layer type means implementing this trait in one file (see
//! [`crate::nn::dense`]) and naming it in the model-file loader.
//!
//! Two layers may fuse across their boundary: a layer whose activation's derivative follows
//! from its output offers it as a *gate* ([`Layer::gate`]), and the layer after it multiplies
//! the input gradient it computes by that derivative in the same kernel (the matmul's gate
//! epilogue), so the first layer's backward starts from the gradient at its pre-activation.

use crate::error::{Error, Result};
use crate::exec::dispatch::Record;
use crate::memory::MemoryKind;
use crate::runtime::Device;
use crate::tensor::Tensor;
use crate::vocab::{Activation, Rule};

/// How a forward pass is recorded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Prediction: every activation applied (softmax included); no dropout.
    Predict,
    /// Evaluation: the last layer's activation folded into a loss that takes logits; no
    /// dropout.
    Evaluate,
    /// Training: as evaluation, with dropout.
    Train,
}

/// A dispatch of a step program that reads its uniform from the per-step parameter table
/// (see [`crate::nn::step::StepLayout`], which owns their order).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Slot {
    /// The `j`-th dispatch of the batch gather.
    Gather(usize),
    /// The mask seed of the `k`-th layer with dropout.
    Dropout(usize),
    /// The fused optimizer step of layer `layer`, whose weight-gradient product has shape
    /// (M, N, K).
    Update {
        /// The layer's index.
        layer: usize,
        /// The product's shape.
        mnk: (u32, u32, u32),
    },
    /// The separate optimizer step of parameter `i` (data-parallel training), of `n`
    /// elements.
    Optim {
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
        }
    }

    /// The device.
    pub(crate) fn device(&self) -> Device {
        self.rec.device().clone()
    }

    /// Where fixed-uniform work is recorded.
    pub(crate) fn rec(&mut self) -> &mut dyn Record {
        &mut *self.rec
    }

    /// A (batch, `cols`) scratch tensor, kept alive with the recording.
    pub(crate) fn tensor(&mut self, cols: usize) -> Result<Tensor> {
        let t = Tensor::empty(&self.device(), &[self.batch, cols])?;
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
    /// Its index.
    pub(crate) index: usize,
    /// Its position among the layers with dropout.
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
    /// The activation's output (logits when the activation is folded into the loss).
    pub(crate) activated: Tensor,
    /// The pre-activation, kept where the derivative needs it.
    pub(crate) pre: Option<Tensor>,
    /// What the next layer reads (the activated output after dropout, while training).
    pub(crate) output: Tensor,
    /// The activation as recorded (linear when folded).
    pub(crate) act: Activation,
}

/// What a layer does with its weight gradients in a backward pass.
pub(crate) enum WeightGrad<'a> {
    /// Write them into these buffers (one per parameter, in optimizer order).
    Into(&'a [Tensor]),
    /// Apply this optimizer step to the parameters in place, with these states (per
    /// parameter, in optimizer order): no gradient buffers, no optimizer dispatch.
    Update {
        /// The rule.
        rule: Rule,
        /// Each parameter's optimizer states.
        state: &'a [Vec<Tensor>],
    },
}

/// A gate handed to the layer after: multiply the input gradient by `act'(y)`, `y` being this
/// tensor.
pub(crate) type Gate = (Activation, Tensor);

/// A layer type (see the module docs).
pub(crate) trait Layer: Send + Sync {
    /// The type's name, as the summary and the model file write it (`"Dense"`).
    fn type_name(&self) -> &'static str;
    /// Input features.
    fn in_dim(&self) -> usize;
    /// Output features.
    fn out_dim(&self) -> usize;
    /// The layer's activation.
    fn activation(&self) -> Activation;
    /// The dropout rate applied to the output while training (0: none).
    fn dropout(&self) -> f32;
    /// The parameters in optimizer order.
    fn params(&self) -> Vec<Tensor>;
    /// The parameters' names in the model file, in the same order (`"kernel"`, `"bias"`).
    fn param_names(&self) -> Vec<&'static str>;
    /// Replaces the parameters (same order and shapes as [`Layer::params`]).
    fn set_params(&mut self, params: Vec<Tensor>) -> Result<()>;
    /// The architecture record the model file stores.
    fn architecture(&self) -> serde_json::Value;
    /// Summary rows: (name, output shape, parameter count).
    fn summary_rows(&self, index: usize) -> Vec<(String, String, usize)>;
    /// The same layer with copies of its parameters on `device`.
    fn to_device(&self, device: &Device) -> Result<Box<dyn Layer>>;

    /// Records the forward pass of `x` (batch, in_dim).
    fn forward(&self, cx: &mut Cx<'_>, pos: Position, x: &Tensor) -> Result<Saved>;

    /// The gate this layer offers the layer after it (see the module docs), if any.
    fn gate(&self, cx: &Cx<'_>, saved: &Saved) -> Option<Gate>;

    /// Records the backward pass from `dy`, the gradient at the output — or already at the
    /// pre-activation when `gated` (this layer's gate was used, or the loss gave the gradient
    /// at the logits). Returns the gradient at the input when `need_dx`, multiplied by
    /// `dx_gate` (the previous layer's gate) when given.
    #[allow(clippy::too_many_arguments)] // one backward step's inputs, spelled out
    fn backward(
        &self,
        cx: &mut Cx<'_>,
        pos: Position,
        saved: &Saved,
        dy: &Tensor,
        gated: bool,
        dx_gate: Option<&Gate>,
        need_dx: bool,
        grad: WeightGrad<'_>,
    ) -> Result<Option<Tensor>>;
}
