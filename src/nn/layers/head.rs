//! The activation head: the one place that decides how a layer's activation is recorded and
//! how the gradient goes back through it, for every layer type with an `activation`
//! (Dense, Conv2D, …). Dropout, the other half of what follows a layer's kernel, is a layer
//! of its own ([`crate::nn::layers::dropout`]) that applies the gate this head offers.
//!
//! Forward: an activation whose derivative follows from its output is fused into the layer's
//! kernel, and only the output is kept; softmax (a row operation) and GELU (whose derivative
//! needs the input) run after a linear kernel, GELU keeping its pre-activation. A loss that
//! takes logits folds the last layer's activation in (recorded as linear). Backward: the
//! derivative from the output or from the kept pre-activation, unless the layer after
//! applied it as a gate.

use crate::error::Result;
use crate::kernels::{elementwise, softmax_xent};
use crate::nn::layer::{Cx, HeadOut, Mode, Position};
use crate::tensor::Tensor;
use crate::vocab::Activation;

/// Records a layer's output of per-sample shape `shape` with activation `act`:
/// `produce(cx, out, fused)` records the layer's kernel writing into `out` with the pointwise
/// activation `fused` applied (linear when the head applies it itself).
pub(crate) fn forward(
    cx: &mut Cx<'_>,
    pos: Position,
    act: Activation,
    shape: &[usize],
    produce: impl FnOnce(&mut Cx<'_>, &Tensor, Activation) -> Result<()>,
) -> Result<HeadOut> {
    // A loss that takes logits folds the last layer's activation in.
    let act = if pos.folded && cx.mode != Mode::Predict {
        Activation::Linear
    } else {
        act
    };
    let n = cx.batch * shape.iter().product::<usize>();
    if act == Activation::Softmax {
        let z = cx.tensor(shape)?;
        produce(cx, &z, Activation::Linear)?;
        let y = cx.tensor(shape)?;
        let cols = *shape.last().unwrap_or(&1);
        softmax_xent::softmax(
            cx.rec(),
            z.buffer(),
            y.buffer(),
            n / cols.max(1),
            cols,
            false,
        )?;
        return Ok(HeadOut {
            activated: y,
            pre: None,
            act,
        });
    }
    if act.derivative_from_output() {
        let y = cx.tensor(shape)?;
        produce(cx, &y, act)?;
        return Ok(HeadOut {
            activated: y,
            pre: None,
            act,
        });
    }
    let z = cx.tensor(shape)?;
    produce(cx, &z, Activation::Linear)?;
    let y = cx.tensor(shape)?;
    elementwise::activation(cx.rec(), act, z.buffer(), y.buffer(), n)?;
    Ok(HeadOut {
        activated: y,
        pre: Some(z),
        act,
    })
}

/// The gradient at the pre-activation from `dy`, the gradient at the head's output: its
/// derivative computed from the output where it can be, from the kept pre-activation
/// otherwise.
pub(crate) fn backward(cx: &mut Cx<'_>, head: &HeadOut, dy: &Tensor) -> Result<Tensor> {
    if head.act == Activation::Linear {
        return Ok(dy.clone());
    }
    let shape = &dy.shape()[1..];
    let n = dy.numel();
    let dz = cx.tensor(shape)?;
    match &head.pre {
        None => elementwise::activation_output_backward(
            cx.rec(),
            head.act,
            head.activated.buffer(),
            dy.buffer(),
            dz.buffer(),
            n,
        )?,
        Some(z) => elementwise::activation_backward(
            cx.rec(),
            head.act,
            z.buffer(),
            dy.buffer(),
            dz.buffer(),
            n,
        )?,
    }
    Ok(dz)
}
