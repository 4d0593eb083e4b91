//! The gradient of a parameter several layers hold (the calls of a shared layer): each
//! call's weight gradient summed into the parameter's one gradient buffer, on the unfused
//! path (see [`crate::nn::graph::shared`]).
//!
//! The backward pass meets a parameter's holders last first. Every holder but the last met
//! (the first call) writes into a scratch tensor, summed with the ones before it; the last
//! writes into a scratch tensor too, and one add puts the sum in the gradient buffer. A
//! parameter held once is written straight into its buffer, as before: no dispatch is added
//! to a model without sharing. A parameter held `c` times costs `c − 1` adds.

use crate::error::Result;
use crate::kernels::elementwise::{self, BinaryOp};
use crate::nn::graph::model::Model;
use crate::nn::layer::Cx;
use crate::tensor::Tensor;

/// Where each holder of each parameter writes its gradient, and the sums (see the module
/// docs).
pub(crate) struct GradSums<'a> {
    grads: &'a [Tensor],
    /// Each layer's parameters' optimizer-order indices.
    per: Vec<Vec<usize>>,
    /// Per parameter: holders whose gradient is not recorded yet.
    remaining: Vec<usize>,
    /// Per parameter: the sum of the holders' gradients recorded so far.
    running: Vec<Option<Tensor>>,
}

impl<'a> GradSums<'a> {
    /// For `model`'s trainable layers, gradients into `grads` (optimizer order).
    pub(crate) fn new(model: &Model, grads: &'a [Tensor]) -> GradSums<'a> {
        let (params, per) = model.param_indices();
        let mut remaining = vec![0; params.len()];
        for (l, ix) in model.layers.iter().zip(&per) {
            if l.spec.trainable {
                for &i in ix {
                    remaining[i] += 1;
                }
            }
        }
        GradSums {
            grads,
            per,
            remaining,
            running: vec![None; params.len()],
        }
    }

    /// Where layer `l` writes its parameters' gradients, in order.
    pub(crate) fn targets(&mut self, cx: &mut Cx<'_>, l: usize) -> Result<Vec<Tensor>> {
        let mut out = Vec::with_capacity(self.per[l].len());
        for &i in &self.per[l] {
            self.remaining[i] = self.remaining[i].saturating_sub(1);
            let g = &self.grads[i];
            out.push(if self.remaining[i] == 0 && self.running[i].is_none() {
                g.clone()
            } else {
                cx.scratch(g.shape())?
            });
        }
        Ok(out)
    }

    /// After layer `l` wrote its gradients into `targets`: each summed with the other
    /// holders' (into the gradient buffer once the last holder is met).
    pub(crate) fn finish(&mut self, cx: &mut Cx<'_>, l: usize, targets: &[Tensor]) -> Result<()> {
        for (&i, t) in self.per[l].iter().zip(targets) {
            let g = &self.grads[i];
            if t.same_buffer(g) {
                continue;
            }
            let n = g.numel();
            self.running[i] = match (self.running[i].take(), self.remaining[i]) {
                (None, _) => Some(t.clone()),
                (Some(prev), 0) => {
                    elementwise::binary(
                        cx.rec(),
                        BinaryOp::Add,
                        prev.buffer(),
                        t.buffer(),
                        g.buffer(),
                        n,
                    )?;
                    None
                }
                (Some(prev), _) => {
                    let sum = cx.scratch(g.shape())?;
                    elementwise::binary(
                        cx.rec(),
                        BinaryOp::Add,
                        prev.buffer(),
                        t.buffer(),
                        sum.buffer(),
                        n,
                    )?;
                    Some(sum)
                }
            };
        }
        Ok(())
    }
}
