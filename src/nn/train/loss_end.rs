//! The end of a step's forward pass: the loss of the output against the targets (per-row
//! losses, the gradient at the output or at the logits, the loss and accuracy sums), per-row
//! weights where the dataset has them, and the metrics beyond loss and accuracy. Every
//! captured step ([`crate::nn::train::step`]) ends here.

use crate::error::Result;
use crate::kernels::loss as dense_loss;
use crate::kernels::metric as metric_kernel;
use crate::kernels::prelude::AccAt;
use crate::kernels::{elementwise, softmax_xent};
use crate::nn::layer::Cx;
use crate::nn::train::metric::{self, Metric};
use crate::nn::train::options::Loss;
use crate::tensor::Tensor;
use crate::vocab::{Activation, DenseLoss};

/// Records the loss of `out` against the targets `y`: per-row losses, their sums added to
/// the block `acc` names, and the gradient at `out` (at the logits for a loss that takes
/// them) scaled by the output's loss `weight`. With per-row weights `w`, each row's loss and
/// gradient are multiplied by its weight before the metrics add the losses up.
#[allow(clippy::too_many_arguments)] // a step's loss inputs, spelled out
pub(crate) fn loss_end(
    cx: &mut Cx<'_>,
    loss: Loss,
    out: &Tensor,
    y: &Tensor,
    w: Option<&Tensor>,
    acc: AccAt<'_>,
    weight: f32,
    training: bool,
) -> Result<Tensor> {
    if let Some(w) = w {
        return weighted_loss_end(cx, loss, out, y, w, acc, weight, training);
    }
    let dense = dense_loss_of(loss);
    // Class labels may come one per position (a (positions, classes) output): every
    // position is a row of the loss, and the mean is over all of them.
    let positions = match dense {
        None => (y.numel() / cx.batch.max(1)).max(1),
        Some(_) => 1,
    };
    let b = cx.batch * positions;
    let classes = out.numel() / b.max(1);
    let rows = cx.tensor(&[positions])?;
    let dy = cx.tensor(&out.shape()[1..])?;
    let scale = weight / b as f32;
    let (o, t, l, a) = (out.buffer(), y.buffer(), rows.buffer(), acc);
    match dense {
        // Training: loss, gradient and metrics in one dispatch.
        None if training => {
            softmax_xent::xent_train(cx.rec(), o, t, l, dy.buffer(), a, b, classes, scale, false)?
        }
        None => {
            softmax_xent::xent(cx.rec(), o, t, l, None, b, classes, scale, false)?;
            softmax_xent::metrics(cx.rec(), o, t, l, a, b, classes)?;
        }
        Some(kind) => {
            dense_loss::backward(cx.rec(), kind, o, t, l, dy.buffer(), b, classes, scale)?;
            dense_loss::metrics(cx.rec(), kind, o, t, l, a, b, classes)?;
        }
    }
    Ok(dy)
}

/// [`loss_end`] with per-row weights: the loss and its gradient unfused, scaled row by row,
/// then the metrics on the scaled losses.
#[allow(clippy::too_many_arguments)] // a step's loss inputs, spelled out
fn weighted_loss_end(
    cx: &mut Cx<'_>,
    loss: Loss,
    out: &Tensor,
    y: &Tensor,
    w: &Tensor,
    acc: AccAt<'_>,
    weight: f32,
    training: bool,
) -> Result<Tensor> {
    let (b, classes) = (cx.batch, out.numel() / cx.batch.max(1));
    let (rows, scaled) = (cx.tensor(&[1])?, cx.tensor(&[1])?);
    let (dy, dyw) = (cx.tensor(&out.shape()[1..])?, cx.tensor(&out.shape()[1..])?);
    let scale = weight / b as f32;
    let (o, t, l) = (out.buffer(), y.buffer(), rows.buffer());
    let dense = dense_loss_of(loss);
    match dense {
        None => softmax_xent::xent(
            cx.rec(),
            o,
            t,
            l,
            Some(dy.buffer()),
            b,
            classes,
            scale,
            false,
        )?,
        Some(kind) => {
            dense_loss::backward(cx.rec(), kind, o, t, l, dy.buffer(), b, classes, scale)?
        }
    }
    elementwise::row_scale(cx.rec(), l, w.buffer(), scaled.buffer(), b, 1)?;
    if training {
        elementwise::row_scale(cx.rec(), dy.buffer(), w.buffer(), dyw.buffer(), b, classes)?;
    }
    let (ls, a) = (scaled.buffer(), acc);
    match dense {
        None => softmax_xent::metrics(cx.rec(), o, t, ls, a, b, classes)?,
        Some(kind) => dense_loss::metrics(cx.rec(), kind, o, t, ls, a, b, classes)?,
    }
    Ok(dyw)
}

/// The dense-target loss kernel of `loss` (`None`: sparse softmax cross-entropy).
fn dense_loss_of(loss: Loss) -> Option<DenseLoss> {
    match loss {
        Loss::SparseCategoricalCrossentropy => None,
        Loss::CategoricalCrossentropy => Some(DenseLoss::CategoricalFromLogits),
        Loss::BinaryCrossentropy => Some(DenseLoss::BinaryFromLogits),
        Loss::MeanSquaredError => Some(DenseLoss::MeanSquared),
        Loss::MeanAbsoluteError => Some(DenseLoss::MeanAbsolute),
        Loss::Huber => Some(DenseLoss::Huber),
    }
}

/// Records an output's metrics beyond loss and accuracy: each adds its sums to its slots of
/// the output's block `acc` ([`metric::layout`]), reading the predictions through the
/// output's activation `act` where its `loss` folded it in.
#[allow(clippy::too_many_arguments)] // an output's metric inputs, spelled out
pub(crate) fn metric_end(
    cx: &mut Cx<'_>,
    metrics: &[Metric],
    act: Activation,
    loss: Loss,
    out: &Tensor,
    y: &Tensor,
    acc: AccAt<'_>,
) -> Result<()> {
    if metrics.is_empty() {
        return Ok(());
    }
    let pred = metric::prediction(act, loss.takes_logits())?;
    let (b, cols) = (cx.batch, out.numel() / cx.batch.max(1));
    let (offsets, _) = metric::layout(metrics);
    for (m, o) in metrics.iter().zip(offsets) {
        m.check(loss)?;
        metric_kernel::sums(
            cx.rec(),
            m.sums(),
            pred,
            out.buffer(),
            y.buffer(),
            acc.buffer,
            acc.at + o,
            b,
            cols,
        )?;
    }
    Ok(())
}
