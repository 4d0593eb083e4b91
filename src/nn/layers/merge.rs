//! The merge layers of graph models, Keras's `Add`, `Subtract`, `Multiply`, `Average`,
//! `Maximum` and `Concatenate(axis)`: several inputs, one output, no weights.
//!
//! Element-wise merges take inputs of one shape (Keras broadcasts a size-1 axis; here the
//! shapes must match, and a mismatch is an error naming every shape); `Subtract` takes
//! exactly two. `Concatenate` joins inputs along an axis (Keras's numbering: the batch is
//! axis 0, so `-1`, the default, is the channels) whose other sizes agree. Their backward
//! passes hand the gradient at the output to every input (`Add`), scaled (`Average`,
//! `Subtract`'s second input), multiplied by the other inputs (`Multiply`), routed to the
//! input that held the maximum (the earliest on a tie, as TensorFlow does), or sliced back out
//! (`Concatenate`). Merges never fuse a gate: an input of a merge is applied its own
//! activation's derivative by the layer that produced it.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::kernels::elementwise::{self, BinaryOp};
use crate::kernels::merge::{self, ConcatPart};
use crate::nn::layer::{Back, Cx, Dx, Io, Layer, Position, Saved, Weights};
use crate::nn::spec::{sample_shape, LayerKind, Shape};
use crate::tensor::Tensor;

/// What a merge computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Add,
    Subtract,
    Multiply,
    Average,
    Maximum,
    /// Along this axis of the per-sample shape.
    Concatenate(usize),
}

fn shapes_text(inputs: &[Shape]) -> String {
    inputs
        .iter()
        .map(|s| sample_shape(s))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The output shape of an element-wise merge `class` of `inputs` (`exactly` inputs, or at
/// least two).
fn elementwise_shape(
    class: &'static str,
    inputs: &[Shape],
    exactly: Option<usize>,
) -> Result<Shape> {
    let count_ok = match exactly {
        Some(n) => inputs.len() == n,
        None => inputs.len() >= 2,
    };
    if !count_ok {
        return Err(Error::InvalidArgument {
            op: class,
            name: "inputs",
            expected: match exactly {
                Some(n) => format!("exactly {n} inputs"),
                None => "at least 2 inputs".into(),
            },
            found: format!("{} inputs", inputs.len()),
        });
    }
    if inputs.iter().any(|s| s != &inputs[0]) {
        return Err(Error::ShapeMismatch {
            op: class,
            expected: "inputs of one shape".into(),
            found: shapes_text(inputs),
        });
    }
    Ok(inputs[0].clone())
}

macro_rules! elementwise_merge {
    ($(#[$doc:meta])* $name:ident, $op:expr, $exactly:expr) => {
        $(#[$doc])*
        #[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
        #[serde(deny_unknown_fields)]
        pub struct $name {}

        impl $name {
            /// The merge layer.
            pub fn new() -> $name {
                $name {}
            }
        }

        impl LayerKind for $name {
            const CLASS: &'static str = stringify!($name);
            const POSITIONAL: &'static [&'static str] = &[];

            fn check(&self) -> Result<()> {
                Ok(())
            }

            fn output_shape(&self, input: &[usize]) -> Result<Shape> {
                self.output_shape_n(&[input.to_vec()])
            }

            fn output_shape_n(&self, inputs: &[Shape]) -> Result<Shape> {
                elementwise_shape(Self::CLASS, inputs, $exactly)
            }

            fn instantiate(&self, io: Io, w: Weights) -> Result<Box<dyn Layer>> {
                Ok(Box::new(MergeLayer { op: $op, io, w }))
            }
        }
    };
}

elementwise_merge!(
    /// Keras's `Add()`: the sum of its inputs (two or more, of one shape).
    Add,
    Op::Add,
    None
);
elementwise_merge!(
    /// Keras's `Subtract()`: its first input minus its second.
    Subtract,
    Op::Subtract,
    Some(2)
);
elementwise_merge!(
    /// Keras's `Multiply()`: the element-wise product of its inputs.
    Multiply,
    Op::Multiply,
    None
);
elementwise_merge!(
    /// Keras's `Average()`: the element-wise mean of its inputs.
    Average,
    Op::Average,
    None
);
elementwise_merge!(
    /// Keras's `Maximum()`: the element-wise maximum of its inputs.
    Maximum,
    Op::Maximum,
    None
);

fn minus_one() -> i64 {
    -1
}

/// Keras's `Concatenate(axis=-1)`: its inputs joined along `axis` (Keras's numbering: 0 is
/// the batch, which cannot be joined; negative counts from the end).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Concatenate {
    /// The axis.
    #[serde(default = "minus_one")]
    pub axis: i64,
}

impl Default for Concatenate {
    fn default() -> Concatenate {
        Concatenate { axis: -1 }
    }
}

impl Concatenate {
    /// Joins along `axis` (Keras's numbering).
    pub fn new(axis: i64) -> Concatenate {
        Concatenate { axis }
    }

    /// The axis in the per-sample shape of rank `rank`.
    fn sample_axis(&self, rank: usize) -> Result<usize> {
        let full = rank as i64 + 1;
        let a = if self.axis < 0 {
            self.axis + full
        } else {
            self.axis
        };
        if a < 1 || a >= full {
            return Err(Error::InvalidArgument {
                op: "Concatenate",
                name: "axis",
                expected: format!(
                    "an axis of the samples: 1 to {} or -1 to -{} (axis 0 is the batch)",
                    rank, rank
                ),
                found: self.axis.to_string(),
            });
        }
        Ok(a as usize - 1)
    }
}

impl LayerKind for Concatenate {
    const CLASS: &'static str = "Concatenate";
    const POSITIONAL: &'static [&'static str] = &["axis"];

    fn check(&self) -> Result<()> {
        if self.axis == 0 {
            return Err(Error::InvalidArgument {
                op: "Concatenate",
                name: "axis",
                expected: "an axis other than 0 (the batch)".into(),
                found: "0".into(),
            });
        }
        Ok(())
    }

    fn output_shape(&self, input: &[usize]) -> Result<Shape> {
        self.output_shape_n(&[input.to_vec()])
    }

    fn output_shape_n(&self, inputs: &[Shape]) -> Result<Shape> {
        if inputs.len() < 2 {
            return Err(Error::InvalidArgument {
                op: "Concatenate",
                name: "inputs",
                expected: "at least 2 inputs".into(),
                found: format!("{} inputs", inputs.len()),
            });
        }
        let rank = inputs[0].len();
        let axis = self.sample_axis(rank)?;
        let same_elsewhere = inputs.iter().all(|s| {
            s.len() == rank
                && s.iter()
                    .zip(&inputs[0])
                    .enumerate()
                    .all(|(i, (a, b))| i == axis || a == b)
        });
        if !same_elsewhere {
            return Err(Error::ShapeMismatch {
                op: "Concatenate",
                expected: format!(
                    "inputs whose sizes agree on every axis but the joined one (axis {})",
                    self.axis
                ),
                found: shapes_text(inputs),
            });
        }
        let mut out = inputs[0].clone();
        out[axis] = inputs.iter().map(|s| s[axis]).sum();
        Ok(out)
    }

    fn instantiate(&self, io: Io, w: Weights) -> Result<Box<dyn Layer>> {
        let axis = self.sample_axis(io.input.len())?;
        Ok(Box::new(MergeLayer {
            op: Op::Concatenate(axis),
            io,
            w,
        }))
    }
}

struct MergeLayer {
    op: Op,
    io: Io,
    w: Weights,
}

impl MergeLayer {
    /// Input `k`'s place in a concatenation along `axis` of `batch` samples.
    fn part(&self, axis: usize, batch: usize, k: usize) -> ConcatPart {
        let block = |s: &[usize]| s[axis..].iter().product::<usize>();
        ConcatPart {
            blocks: batch * self.io.output[..axis].iter().product::<usize>(),
            inner: block(&self.io.inputs[k]),
            outer: block(&self.io.output),
            offset: self.io.inputs[..k].iter().map(|s| block(s)).sum(),
        }
    }
}

impl Layer for MergeLayer {
    fn io(&self) -> &Io {
        &self.io
    }

    fn weights(&self) -> &Weights {
        &self.w
    }

    fn forward(&self, cx: &mut Cx<'_>, pos: Position, x: &Tensor) -> Result<Saved> {
        self.forward_merge(cx, pos, std::slice::from_ref(x))
    }

    fn forward_merge(&self, cx: &mut Cx<'_>, _pos: Position, xs: &[Tensor]) -> Result<Saved> {
        if xs.len() != self.io.inputs.len() || xs.len() < 2 {
            return Err(Error::Internal {
                op: "merge",
                message: format!(
                    "{} inputs for a merge of {}",
                    xs.len(),
                    self.io.inputs.len()
                ),
            });
        }
        let n = xs[0].numel();
        let out = cx.tensor(&self.io.output)?;
        match self.op {
            Op::Concatenate(axis) => {
                for (k, x) in xs.iter().enumerate() {
                    let part = self.part(axis, cx.batch, k);
                    merge::concat(cx.rec(), x.buffer(), out.buffer(), part)?;
                }
            }
            op => {
                // Folded left to right; each partial result in its own buffer (a dispatch
                // may not read the buffer it writes), the last one in `out`.
                let last = xs.len() - 2;
                let mut acc = xs[0].clone();
                for (k, x) in xs[1..].iter().enumerate() {
                    let dst = if k == last && op != Op::Average {
                        out.clone()
                    } else {
                        cx.tensor(&self.io.output)?
                    };
                    let (a, b, c) = (acc.buffer(), x.buffer(), dst.buffer());
                    match op {
                        Op::Maximum => merge::maximum(cx.rec(), a, b, c, n)?,
                        Op::Subtract => elementwise::binary(cx.rec(), BinaryOp::Sub, a, b, c, n)?,
                        Op::Multiply => elementwise::binary(cx.rec(), BinaryOp::Mul, a, b, c, n)?,
                        _ => elementwise::binary(cx.rec(), BinaryOp::Add, a, b, c, n)?,
                    }
                    acc = dst;
                }
                if op == Op::Average {
                    let s = 1.0 / xs.len() as f32;
                    elementwise::scale(cx.rec(), acc.buffer(), out.buffer(), n, s)?;
                }
            }
        }
        Ok(Saved {
            input: xs[0].clone(),
            output: out,
            head: None,
            extra: xs.to_vec(),
        })
    }

    fn backward(&self, _cx: &mut Cx<'_>, _b: Back<'_>) -> Result<Option<Dx>> {
        Err(Error::Internal {
            op: "merge",
            message: "a merge's backward pass goes through backward_merge".into(),
        })
    }

    fn backward_merge(
        &self,
        cx: &mut Cx<'_>,
        saved: &Saved,
        dy: &Tensor,
        need: &[bool],
    ) -> Result<Vec<Option<Tensor>>> {
        let xs = &saved.extra;
        let n = dy.numel();
        let mut out: Vec<Option<Tensor>> = vec![None; xs.len()];
        match self.op {
            Op::Add => {
                for (o, &want) in out.iter_mut().zip(need) {
                    *o = want.then(|| dy.clone());
                }
            }
            Op::Average => {
                if need.iter().any(|&w| w) {
                    let g = cx.tensor(&self.io.output)?;
                    let s = 1.0 / xs.len() as f32;
                    elementwise::scale(cx.rec(), dy.buffer(), g.buffer(), n, s)?;
                    for (o, &want) in out.iter_mut().zip(need) {
                        *o = want.then(|| g.clone());
                    }
                }
            }
            Op::Subtract => {
                out[0] = need[0].then(|| dy.clone());
                if need[1] {
                    let g = cx.tensor(&self.io.output)?;
                    elementwise::scale(cx.rec(), dy.buffer(), g.buffer(), n, -1.0)?;
                    out[1] = Some(g);
                }
            }
            Op::Multiply => {
                for (i, o) in out.iter_mut().enumerate() {
                    if !need[i] {
                        continue;
                    }
                    // dy times every other input.
                    let mut acc = dy.clone();
                    for (_, x) in xs.iter().enumerate().filter(|&(j, _)| j != i) {
                        let dst = cx.tensor(&self.io.output)?;
                        let (a, b, c) = (acc.buffer(), x.buffer(), dst.buffer());
                        elementwise::binary(cx.rec(), BinaryOp::Mul, a, b, c, n)?;
                        acc = dst;
                    }
                    *o = Some(acc);
                }
            }
            Op::Maximum => {
                // Every input in order, needed or not, so the earliest holder takes a tie.
                let taken = cx.tensor(&self.io.output)?;
                for (i, x) in xs.iter().enumerate() {
                    if !need[i..].iter().any(|&w| w) {
                        break;
                    }
                    let dx = cx.tensor(&self.io.output)?;
                    merge::maximum_backward(
                        cx.rec(),
                        x.buffer(),
                        saved.output.buffer(),
                        dy.buffer(),
                        dx.buffer(),
                        taken.buffer(),
                        n,
                        i == 0,
                    )?;
                    out[i] = need[i].then_some(dx);
                }
            }
            Op::Concatenate(axis) => {
                for (k, o) in out.iter_mut().enumerate() {
                    if need[k] {
                        let dx = cx.tensor(&self.io.inputs[k])?;
                        let part = self.part(axis, cx.batch, k);
                        merge::concat_backward(cx.rec(), dy.buffer(), dx.buffer(), part)?;
                        *o = Some(dx);
                    }
                }
            }
        }
        Ok(out)
    }
}
