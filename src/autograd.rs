//! Reverse-mode automatic differentiation over tensor ops, for models beyond `Sequential`.
//!
//! A [`Tape`] records every op applied to its [`Var`]s, each op's backward written next to its
//! forward. [`Tape::backward`] walks the tape in reverse from a scalar and *accumulates* the
//! gradients of the leaves made with [`Tape::param`] (read them with [`Tape::grad`], clear them
//! with [`Tape::zero_grad`]); [`Tape::clear`] drops the recorded ops but keeps parameters and
//! their gradients, so one tape serves a whole training loop. The fused dense op
//! ([`Var::linear`]: matmul + bias + activation in one kernel) has a fused backward.
//!
//! ```no_run
//! use suanli::autograd::Tape;
//! use suanli::{Activation, Device, Labels, Tensor};
//! let dev = Device::open("auto")?;
//! let tape = Tape::new();
//! let w = tape.param(&Tensor::randn(&dev, &[4, 3], 0.0, 0.5, 1)?);
//! let b = tape.param(&Tensor::zeros(&dev, &[3])?);
//! let x = tape.constant(&Tensor::rand_uniform(&dev, &[8, 4], -1.0, 1.0, 2)?);
//! let labels = Labels::new(&dev, &[0, 1, 2, 0, 1, 2, 0, 1])?;
//! let loss = x.linear(&w, Some(&b), Activation::Tanh)?.softmax_cross_entropy_mean(&labels)?;
//! tape.backward(&loss)?;
//! let dw = tape.grad(&w).unwrap(); // (4, 3)
//! # Ok::<(), suanli::Error>(())
//! ```

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use crate::error::{Error, Result};
use crate::exec::recorder::Recorder;
use crate::kernels::elementwise;
use crate::ops::Labels;
use crate::tensor::Tensor;
use crate::vocab::{Activation, Layout};

type Backward = Box<dyn Fn(&Tensor) -> Result<Vec<Option<Tensor>>> + Send + Sync>;

struct Node {
    inputs: Vec<usize>,
    backward: Option<Backward>,
    leaf_param: bool,
}

#[derive(Default)]
struct TapeInner {
    nodes: Vec<Node>,
    /// Parameter node id → accumulated gradient.
    grads: HashMap<usize, Tensor>,
    /// Parameter ids survive `clear`.
    params: Vec<usize>,
}

/// Records ops for reverse-mode differentiation. Cheap to clone (shared).
#[derive(Clone, Default)]
pub struct Tape {
    inner: Arc<Mutex<TapeInner>>,
}

/// A tensor recorded on a tape.
#[derive(Clone)]
pub struct Var {
    id: usize,
    tape: Tape,
    value: Tensor,
}

impl std::fmt::Debug for Var {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Var(#{}, {:?})", self.id, self.value.shape())
    }
}

impl Tape {
    /// An empty tape.
    pub fn new() -> Tape {
        Tape::default()
    }

    fn lock(&self) -> MutexGuard<'_, TapeInner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn push(
        &self,
        value: Tensor,
        inputs: Vec<usize>,
        backward: Option<Backward>,
        leaf_param: bool,
    ) -> Var {
        let mut t = self.lock();
        t.nodes.push(Node {
            inputs,
            backward,
            leaf_param,
        });
        let id = t.nodes.len() - 1;
        if leaf_param {
            t.params.push(id);
        }
        Var {
            id,
            tape: self.clone(),
            value,
        }
    }

    /// A leaf whose gradient is accumulated by [`Tape::backward`].
    pub fn param(&self, value: &Tensor) -> Var {
        self.push(value.clone(), vec![], None, true)
    }

    /// A leaf without gradient (inputs, targets).
    pub fn constant(&self, value: &Tensor) -> Var {
        self.push(value.clone(), vec![], None, false)
    }

    /// The gradient accumulated for a parameter, if any backward pass reached it.
    pub fn grad(&self, v: &Var) -> Option<Tensor> {
        self.lock().grads.get(&v.id).cloned()
    }

    /// Forgets accumulated gradients.
    pub fn zero_grad(&self) {
        self.lock().grads.clear();
    }

    /// Drops the recorded ops (keeps parameters, their ids and gradients). Nodes up to the
    /// last parameter stay in place, so parameter ids remain valid, but lose their ops.
    pub fn clear(&self) {
        let mut t = self.lock();
        let last_param = t.params.iter().copied().max().map_or(0, |p| p + 1);
        t.nodes.truncate(last_param);
        for n in t.nodes.iter_mut() {
            if !n.leaf_param {
                n.backward = None;
                n.inputs.clear();
            }
        }
    }

    /// Differentiates the scalar `loss` (one element) and accumulates parameter gradients.
    pub fn backward(&self, loss: &Var) -> Result<()> {
        if loss.value.numel() != 1 {
            return Err(Error::ShapeMismatch {
                op: "backward",
                expected: "a scalar loss (one element)".into(),
                found: format!("{:?}", loss.value.shape()),
            });
        }
        let seed = Tensor::full(loss.value.device(), loss.value.shape(), 1.0)?;
        let mut grads: HashMap<usize, Tensor> = HashMap::from([(loss.id, seed)]);
        // Inputs always precede their outputs, so descending ids is a reverse topological order.
        for id in (0..=loss.id).rev() {
            let Some(g) = grads.remove(&id) else { continue };
            let mut t = self.lock();
            if t.nodes[id].leaf_param {
                let acc = match t.grads.remove(&id) {
                    Some(prev) => prev.add(&g)?,
                    None => g,
                };
                t.grads.insert(id, acc);
                continue;
            }
            let inputs = t.nodes[id].inputs.clone();
            let Some(bw) = t.nodes[id].backward.take() else {
                continue;
            };
            drop(t); // the backward closure may record nothing, but keep the lock short
            let result = bw(&g);
            self.lock().nodes[id].backward = Some(bw);
            for (inp, gi) in inputs.into_iter().zip(result?) {
                if let Some(gi) = gi {
                    let merged = match grads.remove(&inp) {
                        Some(prev) => prev.add(&gi)?,
                        None => gi,
                    };
                    grads.insert(inp, merged);
                }
            }
        }
        Ok(())
    }
}

impl Var {
    /// The value.
    pub fn value(&self) -> &Tensor {
        &self.value
    }

    fn same_tape(&self, op: &'static str, other: &Var) -> Result<()> {
        if Arc::ptr_eq(&self.tape.inner, &other.tape.inner) {
            Ok(())
        } else {
            Err(Error::InvalidArgument {
                op,
                name: "tape",
                expected: "variables of one tape".into(),
                found: "two tapes".into(),
            })
        }
    }

    fn op(&self, value: Tensor, inputs: Vec<usize>, bw: Backward) -> Var {
        self.tape.push(value, inputs, Some(bw), false)
    }

    /// `self · other` (transposes by `layout`, see [`Tensor::linear_with`]).
    pub fn matmul_with(&self, other: &Var, layout: Layout) -> Result<Var> {
        self.same_tape("matmul", other)?;
        let y = self
            .value
            .linear_with(&other.value, None, Activation::Linear, layout)?;
        let (a, b) = (self.value.clone(), other.value.clone());
        Ok(self.op(
            y,
            vec![self.id, other.id],
            Box::new(move |dy| {
                // NN: C = A·B → dA = dC·Bᵀ, dB = Aᵀ·dC. TN: C = Aᵀ·B → dA = B·dCᵀ, dB = A·dC.
                // NT: C = A·Bᵀ → dA = dC·B, dB = dCᵀ·A.
                Ok(match layout {
                    Layout::NN => vec![Some(dy.matmul_nt(&b)?), Some(a.matmul_tn(dy)?)],
                    Layout::TN => vec![Some(b.matmul_nt(dy)?), Some(a.matmul(dy)?)],
                    Layout::NT => vec![Some(dy.matmul(&b)?), Some(dy.matmul_tn(&a)?)],
                })
            }),
        ))
    }

    /// `self · other`.
    pub fn matmul(&self, other: &Var) -> Result<Var> {
        self.matmul_with(other, Layout::NN)
    }

    /// A dense layer in one kernel, `act(self·w + b)`, with a fused backward: the activation's
    /// derivative is taken from the output where it can be (no stored pre-activation), then
    /// `dx = dz·Wᵀ`, `dW = xᵀ·dz`, `db = Σ_rows dz`.
    pub fn linear(&self, w: &Var, b: Option<&Var>, act: Activation) -> Result<Var> {
        self.same_tape("linear", w)?;
        if let Some(b) = b {
            self.same_tape("linear", b)?;
        }
        if act == Activation::Softmax {
            return self.linear(w, b, Activation::Linear)?.softmax();
        }
        let from_out = act.derivative_from_output();
        let (y, z) = if from_out {
            (self.value.linear(&w.value, b.map(|b| &b.value), act)?, None)
        } else {
            let z = self
                .value
                .linear(&w.value, b.map(|b| &b.value), Activation::Linear)?;
            (z.activation(act)?, Some(z))
        };
        let (x, wv, yv, has_b) = (self.value.clone(), w.value.clone(), y.clone(), b.is_some());
        let mut inputs = vec![self.id, w.id];
        inputs.extend(b.map(|b| b.id));
        Ok(self.op(
            y,
            inputs,
            Box::new(move |dy| {
                let dz = Tensor::empty(dy.device(), dy.shape())?;
                let mut rec = Recorder::new(dy.device());
                match &z {
                    None => elementwise::activation_output_backward(
                        &mut rec,
                        act,
                        yv.buffer(),
                        dy.buffer(),
                        dz.buffer(),
                        dy.numel(),
                    )?,
                    Some(z) => elementwise::activation_backward(
                        &mut rec,
                        act,
                        z.buffer(),
                        dy.buffer(),
                        dz.buffer(),
                        dy.numel(),
                    )?,
                }
                rec.submit()?;
                let mut g = vec![Some(dz.matmul_nt(&wv)?), Some(x.matmul_tn(&dz)?)];
                if has_b {
                    g.push(Some(dz.sum(0)?));
                }
                Ok(g)
            }),
        ))
    }

    /// `self + bias` broadcast over rows.
    pub fn add_bias(&self, bias: &Var) -> Result<Var> {
        self.same_tape("add_bias", bias)?;
        let y = self.value.add_bias(&bias.value)?;
        Ok(self.op(
            y,
            vec![self.id, bias.id],
            Box::new(|dy| Ok(vec![Some(dy.clone()), Some(dy.sum(0)?)])),
        ))
    }

    /// Elementwise activation (softmax: [`Var::softmax`]).
    pub fn activation(&self, act: Activation) -> Result<Var> {
        if act == Activation::Softmax {
            return self.softmax();
        }
        let y = self.value.activation(act)?;
        let x = self.value.clone();
        Ok(self.op(
            y,
            vec![self.id],
            Box::new(move |dy| Ok(vec![Some(x.activation_backward(act, dy)?)])),
        ))
    }

    /// ReLU.
    pub fn relu(&self) -> Result<Var> {
        self.activation(Activation::Relu)
    }

    /// `self + other` (same shapes).
    pub fn add(&self, other: &Var) -> Result<Var> {
        self.same_tape("add", other)?;
        let y = self.value.add(&other.value)?;
        Ok(self.op(
            y,
            vec![self.id, other.id],
            Box::new(|dy| Ok(vec![Some(dy.clone()), Some(dy.clone())])),
        ))
    }

    /// `self − other`.
    pub fn sub(&self, other: &Var) -> Result<Var> {
        self.same_tape("sub", other)?;
        let y = self.value.sub(&other.value)?;
        Ok(self.op(
            y,
            vec![self.id, other.id],
            Box::new(|dy| Ok(vec![Some(dy.clone()), Some(dy.scale(-1.0)?)])),
        ))
    }

    /// `self * other` elementwise.
    pub fn mul(&self, other: &Var) -> Result<Var> {
        self.same_tape("mul", other)?;
        let y = self.value.mul(&other.value)?;
        let (a, b) = (self.value.clone(), other.value.clone());
        Ok(self.op(
            y,
            vec![self.id, other.id],
            Box::new(move |dy| Ok(vec![Some(dy.mul(&b)?), Some(dy.mul(&a)?)])),
        ))
    }

    /// `s · self`.
    pub fn scale(&self, s: f32) -> Result<Var> {
        let y = self.value.scale(s)?;
        Ok(self.op(
            y,
            vec![self.id],
            Box::new(move |dy| Ok(vec![Some(dy.scale(s)?)])),
        ))
    }

    /// Sum over `axis` (see [`Tensor::sum`]).
    pub fn sum(&self, axis: usize) -> Result<Var> {
        self.reduce(axis, false)
    }

    /// Mean over `axis`.
    pub fn mean(&self, axis: usize) -> Result<Var> {
        self.reduce(axis, true)
    }

    fn reduce(&self, axis: usize, mean: bool) -> Result<Var> {
        let y = if mean {
            self.value.mean(axis)?
        } else {
            self.value.sum(axis)?
        };
        let shape = self.value.shape().to_vec();
        let (rows, cols) = match shape.as_slice() {
            [n] => (1, *n),
            [r, c] => (*r, *c),
            _ => (0, 0), // rejected by the forward above
        };
        let two_d = shape.len() == 2;
        Ok(self.op(
            y,
            vec![self.id],
            Box::new(move |dy| {
                let dev = dy.device();
                // Broadcast dy back over the reduced axis as a rank-1 product.
                let g = if axis == 0 && two_d {
                    // dy (cols) → every row.
                    let s = if mean { 1.0 / rows as f32 } else { 1.0 };
                    Tensor::full(dev, &[rows, 1], s)?.matmul(&dy.reshape(&[1, cols])?)?
                } else {
                    // dy (rows) → every column.
                    let s = if mean { 1.0 / cols as f32 } else { 1.0 };
                    dy.reshape(&[rows, 1])?
                        .matmul(&Tensor::full(dev, &[1, cols], s)?)?
                };
                Ok(vec![Some(g.reshape(&shape)?)])
            }),
        ))
    }

    /// Mean sparse categorical cross-entropy of logits `self` (B, C): a scalar, with the fused
    /// backward `(softmax − onehot)/B` scaled by the incoming gradient.
    pub fn softmax_cross_entropy_mean(&self, labels: &Labels) -> Result<Var> {
        let loss = self.value.softmax_cross_entropy(labels)?.mean(0)?;
        let (x, labels) = (self.value.clone(), labels.clone());
        Ok(self.op(
            loss,
            vec![self.id],
            Box::new(move |dy| {
                let (g, _) = x.softmax_cross_entropy_backward(&labels)?;
                // Scale by the scalar incoming gradient without reading it back: a rank-1 product.
                let n = g.numel();
                let scaled = g
                    .reshape(&[n, 1])?
                    .matmul(&dy.reshape(&[1, 1])?)?
                    .reshape(x.shape())?;
                Ok(vec![Some(scaled)])
            }),
        ))
    }

    /// Softmax over the last axis (backward: `y ⊙ (dy − Σ y·dy)` per row).
    pub fn softmax(&self) -> Result<Var> {
        let y = self
            .value
            .softmax(self.value.shape().len().saturating_sub(1))?;
        let yv = y.clone();
        Ok(self.op(
            y,
            vec![self.id],
            Box::new(move |dy| {
                let (rows, cols) = match yv.shape() {
                    [n] => (1, *n),
                    [r, c] => (*r, *c),
                    s => {
                        return Err(Error::ShapeMismatch {
                            op: "softmax backward",
                            expected: "1-D or 2-D".into(),
                            found: format!("{s:?}"),
                        })
                    }
                };
                let ydy = yv.mul(dy)?;
                let s = ydy.sum(1)?; // (rows)
                let sb = s
                    .reshape(&[rows, 1])?
                    .matmul(&Tensor::full(dy.device(), &[1, cols], 1.0)?)?
                    .reshape(yv.shape())?;
                Ok(vec![Some(yv.mul(&dy.sub(&sb)?)?)])
            }),
        ))
    }
}
