//! Walking a model's graph: the forward pass in topological order (training, evaluation and
//! prediction record the same walk), which layer reads which output, and which gates may be
//! fused across an edge. The backward walk, which needs the step's optimizer path, is in
//! [`crate::nn::train::step`].
//!
//! A gate (a layer's activation derivative applied by the layer after it, see
//! [`crate::nn::layer`]) crosses an edge only when the producing layer's output is read once
//! (looking through views): where a tensor fans out, its consumers' gradients are summed
//! first and the producer applies its own derivative, so a branch never sees a gradient the
//! other branches changed.

use crate::error::{Error, Result};
use crate::exec::recorder::Recorder;
use crate::kernels::elementwise::{self, BinaryOp};
use crate::nn::graph::model::Model;
use crate::nn::layer::{Cx, Gate, Mode, Saved, Src};
use crate::nn::spec::sample_shape;
use crate::tensor::Tensor;

/// For each layer, how many layer inputs read its output (an input listed twice counts
/// twice), a model output counting as one more reader.
pub(crate) fn consumers(model: &Model) -> Vec<usize> {
    let mut n = vec![0; model.layers.len()];
    for j in model.output_layers() {
        n[j] += 1;
    }
    for l in &model.layers {
        for s in &l.inbound {
            if let Src::Layer(j) = s {
                n[*j] += 1;
            }
        }
    }
    n
}

/// The tensors `srcs` name: model inputs or saved outputs.
fn gather_inputs(srcs: &[Src], inputs: &[Tensor], saved: &[Saved]) -> Result<Vec<Tensor>> {
    srcs.iter()
        .map(|s| {
            match *s {
                Src::Input(k) => inputs.get(k).cloned(),
                Src::Layer(j) => saved.get(j).map(|s| s.output.clone()),
            }
            .ok_or_else(|| Error::Internal {
                op: "model graph",
                message: format!("{s:?} is not recorded before its reader"),
            })
        })
        .collect()
}

/// Records every layer's forward pass in order, the model's inputs being `inputs` (batch
/// first); what each layer saved, the last one's output being the model's. Gives `cx` the
/// model's precision policy first.
pub(crate) fn forward(model: &Model, cx: &mut Cx<'_>, inputs: &[Tensor]) -> Result<Vec<Saved>> {
    // Every pass over a model starts here: the layers of this pass and of the backward pass
    // recorded after it read the model's precision policy from the context.
    cx.precision = model.precision;
    let positions = model.positions();
    let mut saved: Vec<Saved> = Vec::with_capacity(model.layers.len());
    for (l, pos) in model.layers.iter().zip(positions) {
        let xs = gather_inputs(&l.inbound, inputs, &saved)?;
        let s = match xs.as_slice() {
            [x] => l.forward(cx, pos, x)?,
            _ => l.forward_merge(cx, pos, &xs)?,
        };
        saved.push(s);
    }
    Ok(saved)
}

/// The gate offered across the edge from `src` to its reader: the producing layer's, looking
/// through views, when every output on the way is read once.
pub(crate) fn gate_into(
    model: &Model,
    cx: &Cx<'_>,
    saved: &[Saved],
    consumers: &[usize],
    src: Src,
) -> Option<Gate> {
    let Src::Layer(mut j) = src else {
        return None;
    };
    loop {
        if consumers[j] != 1 {
            return None;
        }
        let l = &model.layers[j];
        if !l.is_view() {
            return l.gate(cx, &saved[j]);
        }
        match l.inbound.as_slice() {
            [Src::Layer(p)] => j = *p,
            _ => return None,
        }
    }
}

/// Adds `g`, a gradient at layer `j`'s output, to what `grads[j]` holds: the first one is
/// kept as it is (with whether it is gated); a second is summed with it on the device into a
/// new buffer (a fanned-out output, whose gradients are never gated).
pub(crate) fn accumulate(
    cx: &mut Cx<'_>,
    grads: &mut [Option<(Tensor, bool)>],
    j: usize,
    g: Tensor,
    gated: bool,
) -> Result<()> {
    match grads[j].take() {
        None => grads[j] = Some((g, gated)),
        Some((prev, prev_gated)) => {
            if prev_gated || gated || prev.numel() != g.numel() {
                return Err(Error::Internal {
                    op: "model graph",
                    message: format!(
                        "gradients of layer {j} cannot be summed ({:?} gated {prev_gated}, {:?} gated {gated})",
                        prev.shape(),
                        g.shape()
                    ),
                });
            }
            let sum = cx.scratch(prev.shape())?;
            let n = g.numel();
            elementwise::binary(
                cx.rec(),
                BinaryOp::Add,
                prev.buffer(),
                g.buffer(),
                sum.buffer(),
                n,
            )?;
            grads[j] = Some((sum, false));
        }
    }
    Ok(())
}

impl Model {
    /// Outputs (probabilities for a softmax model) for `x` of shape (samples, input
    /// shape…): the same forward description as training, recorded with every activation
    /// applied and the moving statistics of normalisation layers.
    pub fn predict(&self, x: &Tensor) -> Result<Tensor> {
        self.predict_inputs(&[x])
    }

    /// [`Model::predict`] for a model of several inputs: one tensor per input, in the
    /// model's order, each (samples, that input's shape…) with the same samples.
    pub fn predict_inputs(&self, xs: &[&Tensor]) -> Result<Tensor> {
        let mut outs = self.predict_outputs(xs)?;
        if outs.len() != 1 {
            return Err(Error::InvalidArgument {
                op: "predict",
                name: "model",
                expected: "a model of one output (predict_outputs gives every output)".into(),
                found: format!("{} outputs", outs.len()),
            });
        }
        Ok(outs.remove(0))
    }

    /// Every output of the model ([`Model::output_layers`] order) for inputs as
    /// [`Model::predict_inputs`] takes them.
    pub fn predict_outputs(&self, xs: &[&Tensor]) -> Result<Vec<Tensor>> {
        let wants = self.input_shapes();
        if xs.len() != wants.len() {
            return Err(Error::InvalidArgument {
                op: "predict",
                name: "x",
                expected: format!(
                    "{} arrays (the model's inputs: {})",
                    wants.len(),
                    self.input_names().join(", ")
                ),
                found: format!("{} arrays", xs.len()),
            });
        }
        let mut rows = None;
        let mut inputs = Vec::with_capacity(xs.len());
        for (k, (x, want)) in xs.iter().zip(&wants).enumerate() {
            x.check_device(&self.device, "predict")?;
            let r = match x.shape().split_first() {
                Some((&r, rest))
                    if r > 0
                        && rows.is_none_or(|n| n == r)
                        && (rest == *want || rest == [want.iter().product::<usize>()]) =>
                {
                    r
                }
                _ => {
                    return Err(Error::ShapeMismatch {
                        op: "predict",
                        expected: format!(
                            "(samples ≥ 1{}, {}) for samples of shape {} (input {k})",
                            rows.map_or(String::new(), |n| format!(" = {n}")),
                            want.iter()
                                .map(|d| d.to_string())
                                .collect::<Vec<_>>()
                                .join(", "),
                            sample_shape(want)
                        ),
                        found: format!("{:?}", x.shape()),
                    })
                }
            };
            rows = Some(r);
            let mut shape = vec![r];
            shape.extend_from_slice(want);
            inputs.push(x.reshape(&shape)?);
        }
        let rows = rows.unwrap_or(0);
        let mut rec = Recorder::new(&self.device);
        let mut cx = Cx::new(&mut rec, rows, Mode::Predict);
        let saved = forward(self, &mut cx, &inputs)?;
        if saved.is_empty() {
            return Err(Error::InvalidArgument {
                op: "predict",
                name: "model",
                expected: "at least one layer".into(),
                found: "none".into(),
            });
        }
        let h: Vec<Tensor> = self
            .output_layers()
            .iter()
            .map(|&j| saved[j].output.clone())
            .collect();
        drop(saved);
        // Scratch buffers go back to the pool only once the work using them is submitted.
        let keep = std::mem::take(&mut cx.keep);
        drop(cx);
        rec.submit()?;
        drop(keep);
        Ok(h)
    }

    /// The most likely class of each sample.
    pub fn predict_classes(&self, x: &Tensor) -> Result<Vec<usize>> {
        let out = self.predict(x)?;
        let rows = out.shape()[0];
        let out = out.reshape(&[rows, out.numel() / rows.max(1)])?;
        Ok(out
            .argmax_rows()?
            .to_vec()?
            .into_iter()
            .map(|v| v as usize)
            .collect())
    }
}
