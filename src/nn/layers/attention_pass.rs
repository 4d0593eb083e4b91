//! The MultiHeadAttention layer on a device ([`crate::nn::layers::attention`] is its
//! configuration): its input projections (one GEMM each; one
//! packed QKV GEMM for self-attention, nanoGPT's `c_attn`), the attention, and the output
//! projection (H·value_dim → E_out).
//!
//! The attention runs one of two paths ([`crate::kernels::attention_tune`]): the fused kernel
//! ([`crate::kernels::attention`]: online softmax, causal tiles skipped, T×T never stored) for
//! self-attention whose keys and values have one head size of at most 128, with no mask and
//! no dropout, where the device's measurement says it is faster; otherwise the unfused path
//! ([`crate::kernels::attention_unfused`]: batched GEMMs around a masked softmax, keeping the
//! probabilities), which also does cross-attention, `value_dim ≠ key_dim`, the attention
//! mask, and dropout on the probabilities between its phases (the dropout layer's kernel,
//! seeded per step through the step table, so backward draws the same mask).
//!
//! Backward: `dO = dy·Woᵀ`, `dWo = Oᵀ·dy` (the bias gradient as its column sums), the
//! attention's dq, dk, dv into the projections' gradients, then per projection
//! `dx = dP·Wᵀ` (with the previous layer's gate in its epilogue, for a one-input layer) and
//! `dW = xᵀ·dP`. Each parameter's gradient is written whole and stepped by the optimizer.

use crate::error::{Error, Result};
use crate::kernels::attention;
use crate::kernels::attention_cache::{self, CacheShape};
use crate::kernels::attention_tune::{self, Path};
use crate::kernels::attention_unfused::{self, General, Operand};
use crate::kernels::elementwise;
use crate::kernels::matmul::{Epilogue, MatmulArgs};
use crate::kernels::matmul_tune;
use crate::nn::layer::{
    Back, BackMulti, Cx, Dx, Gate, Io, Layer, Mode, Position, Saved, Slot, WeightGrad, Weights,
};
use crate::runtime::Device;
use crate::tensor::Tensor;
use crate::vocab::{Activation, Layout};

/// What the configuration decided: sizes, flags, the inputs' roles and the projections.
pub(crate) struct Spec {
    /// Heads.
    pub(crate) heads: usize,
    /// Head size of queries and keys.
    pub(crate) dk: usize,
    /// Head size of values.
    pub(crate) dv: usize,
    /// Query i sees keys j ≤ i only.
    pub(crate) causal: bool,
    /// Biases on the projections.
    pub(crate) bias: bool,
    /// Dropout on the probabilities while training.
    pub(crate) rate: f32,
    /// What each input is.
    pub(crate) roles: Roles,
    /// The input projections, in weight order.
    pub(crate) projs: Vec<Projection>,
}

/// The layer of a MultiHeadAttention configuration with inputs `io.inputs`.
pub(crate) fn instantiate(c: Spec, io: Io, w: Weights) -> Result<Box<dyn Layer>> {
    let hk = c.heads * c.dk;
    // Where the queries, keys and values are: (projection, column offset).
    let places = if !c.roles.cross() {
        [(0, 0), (0, hk), (0, 2 * hk)]
    } else if c.projs.len() == 2 {
        [(0, 0), (1, 0), (1, hk)]
    } else {
        [(0, 0), (1, 0), (2, 0)]
    };
    Ok(Box::new(AttentionLayer {
        tq: io.inputs[0][0],
        tk: io.inputs[c.roles.value][0],
        out: io.output[1],
        heads: c.heads,
        dk: c.dk,
        dv: c.dv,
        causal: c.causal,
        bias: c.bias,
        rate: c.rate,
        roles: c.roles,
        projs: c.projs,
        places,
        io,
        w,
    }))
}

/// What the inputs of a MultiHeadAttention are (indices into its inputs; the query is
/// input 0).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Roles {
    /// The values' input.
    pub(crate) value: usize,
    /// The keys' input.
    pub(crate) key: usize,
    /// The attention mask's input, last.
    pub(crate) mask: Option<usize>,
}

impl Roles {
    /// Queries and keys from different inputs.
    pub(crate) fn cross(&self) -> bool {
        self.value != 0
    }
}

/// One input projection of a MultiHeadAttention: `x[input]·kernel (+ bias)`, `width`
/// columns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Projection {
    /// Which input it reads.
    pub(crate) input: usize,
    /// Its output columns.
    pub(crate) width: usize,
    /// Its kernel's and bias's weight names.
    pub(crate) names: (&'static str, &'static str),
}

/// A multi-head attention layer of a model.
struct AttentionLayer {
    io: Io,
    w: Weights,
    tq: usize,
    tk: usize,
    out: usize,
    heads: usize,
    dk: usize,
    dv: usize,
    causal: bool,
    bias: bool,
    rate: f32,
    roles: Roles,
    projs: Vec<Projection>,
    places: [(usize, usize); 3],
}

/// What the forward pass keeps, in `Saved::extra`: the inputs after the first, each
/// projection's output, the attention's output, then the path's state (the log-sum-exp for
/// the fused path; the probabilities, and their dropped-out copy when dropout ran, for the
/// unfused one).
struct Kept<'a> {
    inputs: Vec<&'a Tensor>,
    projected: &'a [Tensor],
    o: &'a Tensor,
    state: &'a [Tensor],
}

impl AttentionLayer {
    fn hk(&self) -> usize {
        self.heads * self.dk
    }

    fn hv(&self) -> usize {
        self.heads * self.dv
    }

    /// (kernel, bias) of projection `i` (the output projection is `projs.len()`), and the
    /// kernel's parameter index.
    fn param(&self, i: usize) -> (usize, &Tensor, Option<&Tensor>) {
        let p = &self.w.params;
        if self.bias {
            (2 * i, &p[2 * i], Some(&p[2 * i + 1]))
        } else {
            (i, &p[i], None)
        }
    }

    /// Rows of input `i` per sample.
    fn rows_of(&self, input: usize) -> usize {
        if input == 0 {
            self.tq
        } else {
            self.tk
        }
    }

    /// The dropout mask's slot while training with dropout.
    fn drops(&self, cx: &Cx<'_>, pos: Position) -> Option<usize> {
        pos.dropout
            .filter(|_| cx.mode == Mode::Train && self.rate > 0.0)
    }

    /// The unfused path's shape.
    fn general(&self, batch: usize) -> General {
        let width = |i: usize| self.projs[self.places[i].0].width;
        let operand = |i: usize| Operand {
            stride: width(i),
            off: self.places[i].1,
        };
        General {
            batch,
            heads: self.heads,
            tq: self.tq,
            tk: self.tk,
            dk: self.dk,
            dv: self.dv,
            causal: self.causal,
            masked: self.roles.mask.is_some(),
            scale: 1.0 / (self.dk as f32).sqrt(),
            q: operand(0),
            k: operand(1),
            v: operand(2),
            o: Operand {
                stride: self.hv(),
                off: 0,
            },
        }
    }

    /// Which path runs: the unfused one for cross-attention, a mask or dropout, else the
    /// device's choice for the shape (`SUANLI_ATTENTION`, cached, or measured; see
    /// [`attention_tune`]), with the fused kernels' shape when they run.
    fn path(&self, cx: &mut Cx<'_>, pos: Position) -> Result<(Path, Option<attention::Shape>)> {
        let g = self.general(cx.batch);
        if self.roles.cross() || self.drops(cx, pos).is_some() {
            return Ok((Path::Unfused, None));
        }
        match attention_tune::choose(cx.rec(), &g)? {
            Path::Fused => Ok((Path::Fused, attention_tune::fused_shape(&g))),
            Path::Unfused => Ok((Path::Unfused, None)),
        }
    }

    /// Records `c = a·op(b) (+ bias)`.
    #[allow(clippy::too_many_arguments)] // one GEMM's operands, spelled out
    fn gemm(
        cx: &mut Cx<'_>,
        a: &Tensor,
        b: &Tensor,
        c: &Tensor,
        (m, n, k): (usize, usize, usize),
        layout: Layout,
        epilogue: Epilogue<'_>,
    ) -> Result<()> {
        let args = MatmulArgs {
            a: a.buffer(),
            b: b.buffer(),
            epilogue,
            c: c.buffer(),
            m: m as u32,
            n: n as u32,
            k: k as u32,
            layout,
            act: Activation::Linear,
            accumulate: false,
            half: false,
        };
        matmul_tune::record(cx.rec(), &args)
    }

    /// A weight's gradient `aᵀ·b` (with the bias gradient as `b`'s column sums) written
    /// where `grad` says, then stepped when updating.
    #[allow(clippy::too_many_arguments)] // the product and where its two results go
    fn weight_grad(
        &self,
        cx: &mut Cx<'_>,
        grad: &WeightGrad<'_>,
        pos: Position,
        proj: usize,
        a: &Tensor,
        b: &Tensor,
        (m, n, k): (usize, usize, usize),
    ) -> Result<()> {
        let (i, w, bias) = self.param(proj);
        let gw = grad.target(cx, i, w.shape())?;
        let gb = match bias {
            Some(t) => Some(grad.target(cx, i + 1, t.shape())?),
            None => None,
        };
        let epilogue = gb
            .as_ref()
            .map_or(Epilogue::None, |g| Epilogue::ColSum(g.buffer()));
        Self::gemm(cx, a, b, &gw, (m, n, k), Layout::TN, epilogue)?;
        grad.apply(cx, pos, i, w, &gw)?;
        if let (Some(t), Some(g)) = (bias, &gb) {
            grad.apply(cx, pos, i + 1, t, g)?;
        }
        Ok(())
    }

    /// Generation: these rows are the new tokens, the earlier ones in the layer's cache.
    fn attend_cached(&self, cx: &mut Cx<'_>, qkv: &Tensor, o: &Tensor) -> Result<Option<Tensor>> {
        let refuse = |found: &str| {
            Error::InvalidArgument {
            op: "generate",
            name: "MultiHeadAttention",
            expected: "causal self-attention (use_causal_mask=True) with one head size and no attention mask: a cache of keys and values needs later tokens never to change earlier ones".into(),
            found: found.into(),
        }
        };
        let Some(cache) = cx.kv_cache(self.hk())? else {
            return Ok(None);
        };
        if !self.causal {
            return Err(refuse("an attention without the causal mask"));
        }
        if self.roles.cross() || self.roles.mask.is_some() || self.dk != self.dv {
            return Err(refuse(
                "cross-attention, an attention mask, or value_dim other than key_dim",
            ));
        }
        let s = CacheShape {
            batch: cx.batch,
            n: self.tq,
            past: cache.past,
            heads: self.heads,
            d: self.dk,
            cap: cache.cap,
        };
        attention_cache::append(
            cx.rec(),
            &s,
            qkv.buffer(),
            cache.k.buffer(),
            cache.v.buffer(),
        )?;
        let scores = cx.scratch(&[s.scores_len()])?;
        let kv = (cache.k.buffer(), cache.v.buffer());
        attention_cache::attend(cx.rec(), &s, qkv.buffer(), kv, scores.buffer(), o.buffer())?;
        Ok(Some(scores))
    }

    /// The forward pass of inputs `xs`.
    fn forward_all(&self, cx: &mut Cx<'_>, pos: Position, xs: &[Tensor]) -> Result<Saved> {
        let batch = cx.batch;
        let mut projected = Vec::with_capacity(self.projs.len());
        for (i, p) in self.projs.iter().enumerate() {
            let rows = self.rows_of(p.input);
            let x = &xs[p.input];
            let t = cx.tensor(&[rows, p.width])?;
            let (_, w, b) = self.param(i);
            let e = self.io.inputs[p.input][1];
            let epilogue = b.map_or(Epilogue::None, |t| Epilogue::Bias(t.buffer()));
            Self::gemm(
                cx,
                x,
                w,
                &t,
                (batch * rows, p.width, e),
                Layout::NN,
                epilogue,
            )?;
            projected.push(t);
        }
        let o = cx.tensor(&[self.tq, self.hv()])?;
        let state = if let Some(scores) = self.attend_cached(cx, &projected[0], &o)? {
            vec![scores]
        } else {
            let (path, fused) = self.path(cx, pos)?;
            match (path, fused) {
                (Path::Fused, Some(shape)) => {
                    let lse = cx.scratch(&[shape.lse_len()])?;
                    let qkv = projected[0].buffer();
                    attention::forward(cx.rec(), &shape, qkv, o.buffer(), lse.buffer())?;
                    vec![lse]
                }
                _ => self.unfused_forward(cx, pos, xs, &projected, &o)?,
            }
        };
        let y = cx.tensor(&[self.tq, self.out])?;
        let (_, wo, bo) = self.param(self.projs.len());
        let epilogue = bo.map_or(Epilogue::None, |t| Epilogue::Bias(t.buffer()));
        let shape = (batch * self.tq, self.out, self.hv());
        Self::gemm(cx, &o, wo, &y, shape, Layout::NN, epilogue)?;
        let mut extra: Vec<Tensor> = xs[1..].to_vec();
        extra.extend(projected);
        extra.push(o);
        extra.extend(state);
        Ok(Saved::plain(&xs[0], y, extra))
    }

    /// The unfused attention: probabilities, dropout on them while training, then ·V.
    fn unfused_forward(
        &self,
        cx: &mut Cx<'_>,
        pos: Position,
        xs: &[Tensor],
        projected: &[Tensor],
        o: &Tensor,
    ) -> Result<Vec<Tensor>> {
        let g = self.general(cx.batch);
        let buf = |i: usize| projected[self.places[i].0].buffer();
        let probs = cx.scratch(&[g.probs_len()])?;
        let mask = self.roles.mask.map(|m| xs[m].buffer());
        attention_unfused::probs(cx.rec(), &g, buf(0), buf(1), mask, probs.buffer())?;
        let mut state = vec![probs.clone()];
        if let Some(k) = self.drops(cx, pos) {
            let dropped = cx.scratch(&[g.probs_len()])?;
            let (n, rate) = (g.probs_len(), self.rate);
            cx.per_step(&[Slot::Dropout(k)], |rec| {
                elementwise::dropout(rec, probs.buffer(), dropped.buffer(), n, rate, 0)
            })?;
            state.push(dropped);
        }
        let p = state.last().unwrap_or(&probs);
        attention_unfused::output(cx.rec(), &g, p.buffer(), buf(2), o.buffer())?;
        Ok(state)
    }

    /// Splits what forward kept.
    fn kept<'a>(&self, saved: &'a Saved) -> Result<Kept<'a>> {
        let n_in = self.io.inputs.len();
        let np = self.projs.len();
        let extra = &saved.extra;
        if extra.len() < n_in - 1 + np + 2 {
            return Err(Error::Internal {
                op: "MultiHeadAttention",
                message: "the forward pass saved no attention state".into(),
            });
        }
        let mut inputs = vec![&saved.input];
        inputs.extend(&extra[..n_in - 1]);
        let projected = &extra[n_in - 1..n_in - 1 + np];
        Ok(Kept {
            inputs,
            projected,
            o: &extra[n_in - 1 + np],
            state: &extra[n_in + np..],
        })
    }

    /// The backward pass from `dy`: weight gradients, and the gradient at each input for
    /// which `need` says so (the first input's with `gate` applied in its GEMM).
    #[allow(clippy::too_many_arguments)] // Back's and BackMulti's common fields, spelled out
    fn backward_all(
        &self,
        cx: &mut Cx<'_>,
        pos: Position,
        saved: &Saved,
        dy: &Tensor,
        need: &[bool],
        grad: &WeightGrad<'_>,
        gate: Option<&Gate>,
    ) -> Result<Vec<Option<Tensor>>> {
        let k = self.kept(saved)?;
        let batch = cx.batch;
        let (hv, out) = (self.hv(), self.out);
        // The output projection: dO before the weight moves, then its gradient.
        let d_o = cx.tensor(&[self.tq, hv])?;
        let (_, wo, _) = self.param(self.projs.len());
        Self::gemm(
            cx,
            dy,
            wo,
            &d_o,
            (batch * self.tq, hv, out),
            Layout::NT,
            Epilogue::None,
        )?;
        let shape = (hv, out, batch * self.tq);
        self.weight_grad(cx, grad, pos, self.projs.len(), k.o, dy, shape)?;
        // The attention: dq, dk, dv into the projections' gradients.
        let mut dproj = Vec::with_capacity(self.projs.len());
        for p in &self.projs {
            dproj.push(cx.tensor(&[self.rows_of(p.input), p.width])?);
        }
        // The same choice as forward's: the device's cached measurement, the same mode.
        match self.path(cx, pos)? {
            (Path::Fused, Some(shape)) => {
                let delta = cx.scratch(&[shape.lse_len()])?;
                attention::backward(
                    cx.rec(),
                    &shape,
                    k.projected[0].buffer(),
                    k.o.buffer(),
                    d_o.buffer(),
                    k.state[0].buffer(),
                    delta.buffer(),
                    dproj[0].buffer(),
                )?;
            }
            _ => self.unfused_backward(cx, pos, &k, &d_o, &dproj)?,
        }
        // The input projections: dx (the gate before applied) before the weight moves.
        let mut dxs: Vec<Option<Tensor>> = vec![None; self.io.inputs.len()];
        for (i, p) in self.projs.iter().enumerate().rev() {
            let rows = batch * self.rows_of(p.input);
            let e = self.io.inputs[p.input][1];
            if need[p.input] {
                let (_, w, _) = self.param(i);
                let dx = cx.tensor(&self.io.inputs[p.input])?;
                let epilogue = match gate.filter(|_| p.input == 0) {
                    Some((act, y)) => Epilogue::Gate(y.buffer(), *act),
                    None => Epilogue::None,
                };
                Self::gemm(
                    cx,
                    &dproj[i],
                    w,
                    &dx,
                    (rows, e, p.width),
                    Layout::NT,
                    epilogue,
                )?;
                dxs[p.input] = Some(dx);
            }
            let x = k.inputs[p.input];
            self.weight_grad(cx, grad, pos, i, x, &dproj[i], (e, p.width, rows))?;
        }
        Ok(dxs)
    }

    /// The unfused attention's backward pass, dropout's included.
    fn unfused_backward(
        &self,
        cx: &mut Cx<'_>,
        pos: Position,
        k: &Kept<'_>,
        d_o: &Tensor,
        dproj: &[Tensor],
    ) -> Result<()> {
        let g = self.general(cx.batch);
        let buf = |i: usize| k.projected[self.places[i].0].buffer();
        let dbuf = |i: usize| dproj[self.places[i].0].buffer();
        let probs = &k.state[0];
        let used = k.state.last().unwrap_or(probs);
        let dp = cx.scratch(&[g.probs_len()])?;
        attention_unfused::backward_v(
            cx.rec(),
            &g,
            used.buffer(),
            buf(2),
            d_o.buffer(),
            dbuf(2),
            dp.buffer(),
        )?;
        let dp = match self.drops(cx, pos).filter(|_| k.state.len() == 2) {
            Some(slot) => {
                let undropped = cx.scratch(&[g.probs_len()])?;
                let (n, rate) = (g.probs_len(), self.rate);
                cx.per_step(&[Slot::Dropout(slot)], |rec| {
                    elementwise::dropout_backward(
                        rec,
                        dp.buffer(),
                        None,
                        undropped.buffer(),
                        n,
                        rate,
                        0,
                    )
                })?;
                undropped
            }
            None => dp,
        };
        attention_unfused::backward_qk(
            cx.rec(),
            &g,
            probs.buffer(),
            dp.buffer(),
            buf(0),
            buf(1),
            dbuf(0),
            dbuf(1),
        )
    }
}

impl Layer for AttentionLayer {
    fn io(&self) -> &Io {
        &self.io
    }

    fn weights(&self) -> &Weights {
        &self.w
    }

    fn dropout(&self) -> Option<f32> {
        (self.rate > 0.0).then_some(self.rate)
    }

    fn dropout_values(&self) -> usize {
        self.heads * self.tq * self.tk
    }

    fn prepare(&self, dev: &Device) -> Result<()> {
        // The path's choice for this shape (and the matmul choice both paths use); a
        // capture may not tune.
        attention_tune::prepare(dev, &self.general(1)).map(|_| ())
    }

    fn forward(&self, cx: &mut Cx<'_>, pos: Position, x: &Tensor) -> Result<Saved> {
        self.forward_all(cx, pos, std::slice::from_ref(x))
    }

    fn forward_merge(&self, cx: &mut Cx<'_>, pos: Position, xs: &[Tensor]) -> Result<Saved> {
        if xs.len() != self.io.inputs.len() {
            return Err(Error::Internal {
                op: "MultiHeadAttention",
                message: format!(
                    "{} inputs for a layer of {}",
                    xs.len(),
                    self.io.inputs.len()
                ),
            });
        }
        self.forward_all(cx, pos, xs)
    }

    fn backward_multi(&self, cx: &mut Cx<'_>, b: BackMulti<'_>) -> Result<Vec<Option<Tensor>>> {
        self.backward_all(cx, b.pos, b.saved, b.dy, b.need, &b.grad, None)
    }

    fn backward(&self, cx: &mut Cx<'_>, b: Back<'_>) -> Result<Option<Dx>> {
        let Back {
            pos,
            saved,
            dy,
            dx_gate,
            need_dx,
            grad,
            ..
        } = b;
        let mut dxs = self.backward_all(cx, pos, saved, dy, &[need_dx], &grad, dx_gate)?;
        Ok(dxs.pop().flatten().map(|grad| Dx {
            grad,
            gated: dx_gate.is_some(),
        }))
    }
}
