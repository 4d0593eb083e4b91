//! The tensor API over the kernels: `a.matmul(&b)`, `x.relu()`, `x.softmax(1)`, `x.sum(0)`…
//!
//! Each op checks devices and shapes, allocates its output from the pool, records its kernel
//! and submits without waiting (reading a result back waits). Matrices are 2-D row-major; a
//! 1-D tensor counts as one row where an op needs a matrix.

use crate::error::{Error, Result};
use crate::exec::dispatch::Record;
use crate::exec::recorder::Recorder;
use crate::kernels::elementwise::{self, BinaryOp};
use crate::kernels::matmul::{self, MatmulArgs};
use crate::kernels::matmul_tune;
use crate::kernels::reduce::{self, RowOp};
use crate::kernels::softmax_xent;
use crate::runtime::Device;
use crate::tensor::Tensor;
use crate::vocab::{Activation, Layout};

/// An integer type that can hold a class index (`u8` pixels' labels, `u32`, `i64` from NumPy…).
pub trait ClassIndex: Copy + std::fmt::Display {
    /// The index, or `None` when it is negative.
    fn index(self) -> Option<u64>;
}

macro_rules! class_index {
    ($($t:ty),*) => {$(
        impl ClassIndex for $t {
            #[allow(clippy::unnecessary_fallible_conversions)] // the same body serves signed types
            fn index(self) -> Option<u64> {
                u64::try_from(self).ok()
            }
        }
    )*};
}
class_index!(u8, u16, u32, u64, usize, i8, i16, i32, i64);

/// Class labels on the device (stored as f32 class indices, exact below 2^24) whose range was
/// checked on the host when they were created, so losses can check them without a readback.
/// The one labels type: tensor ops and datasets both hold labels as this.
#[derive(Clone, Debug)]
pub struct Labels {
    tensor: Tensor,
    max: u32,
}

/// The largest class index a label may hold (f32 represents integers exactly below 2^24).
pub const MAX_CLASS: u64 = (1 << 24) - 1;

impl Labels {
    /// Uploads class indices of any integer type; each must lie in `0..2^24`.
    pub fn new<L: ClassIndex>(device: &Device, labels: &[L]) -> Result<Labels> {
        let mut data = Vec::with_capacity(labels.len());
        let mut max = 0u32;
        for &l in labels {
            match l.index().filter(|&v| v <= MAX_CLASS) {
                Some(v) => {
                    max = max.max(v as u32);
                    data.push(v as f32);
                }
                None => {
                    return Err(Error::InvalidArgument {
                        op: "Labels::new",
                        name: "labels",
                        expected: format!("class indices in 0..={MAX_CLASS}"),
                        found: l.to_string(),
                    })
                }
            }
        }
        Ok(Labels {
            tensor: Tensor::from_slice(device, &data, &[labels.len()])?,
            max,
        })
    }

    /// The labels as an f32 tensor.
    pub fn tensor(&self) -> &Tensor {
        &self.tensor
    }

    /// Number of labels.
    pub fn len(&self) -> usize {
        self.tensor.numel()
    }

    /// True if there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The largest label.
    pub fn max(&self) -> u32 {
        self.max
    }
}

/// (rows, cols) of a tensor seen as a matrix.
fn matrix(op: &'static str, t: &Tensor) -> Result<(usize, usize)> {
    match t.shape() {
        [n] => Ok((1, *n)),
        [r, c] => Ok((*r, *c)),
        s => Err(Error::ShapeMismatch {
            op,
            expected: "a 1-D or 2-D tensor".into(),
            found: format!("{s:?}"),
        }),
    }
}

fn u32_dim(op: &'static str, v: usize) -> Result<u32> {
    u32::try_from(v).map_err(|_| Error::InvalidArgument {
        op,
        name: "shape",
        expected: "dimensions below 2^32".into(),
        found: v.to_string(),
    })
}

fn nonempty(op: &'static str, t: &Tensor) -> Result<()> {
    if t.numel() == 0 {
        return Err(Error::ShapeMismatch {
            op,
            expected: "a non-empty tensor".into(),
            found: format!("{:?}", t.shape()),
        });
    }
    Ok(())
}

impl Tensor {
    /// A tensor filled with `value` (on the device, no upload).
    pub fn full(device: &Device, shape: &[usize], value: f32) -> Result<Tensor> {
        let t = Tensor::empty(device, shape)?;
        t.run(|rec| elementwise::fill(rec, t.buffer(), t.numel(), value))?;
        Ok(t)
    }

    fn run(&self, f: impl FnOnce(&mut dyn Record) -> Result<()>) -> Result<()> {
        let mut rec = Recorder::new(self.device());
        f(&mut rec)?;
        rec.submit()?;
        Ok(())
    }

    /// Fused `act(op(self)·op(w) + bias)`. `layout` says which operands are stored transposed.
    pub fn linear_with(
        &self,
        w: &Tensor,
        bias: Option<&Tensor>,
        act: Activation,
        layout: Layout,
    ) -> Result<Tensor> {
        const OP: &str = "matmul";
        if act == Activation::Softmax {
            return self
                .linear_with(w, bias, Activation::Linear, layout)?
                .softmax(1);
        }
        w.check_device(self.device(), OP)?;
        let (ar, ac) = matrix(OP, self)?;
        let (br, bc) = matrix(OP, w)?;
        let (m, k) = if layout == Layout::TN {
            (ac, ar)
        } else {
            (ar, ac)
        };
        let (kb, n) = if layout == Layout::NT {
            (bc, br)
        } else {
            (br, bc)
        };
        if k != kb {
            return Err(Error::ShapeMismatch {
                op: OP,
                expected: format!("inner dimensions to agree for {layout:?}: left gives K={k}"),
                found: format!("right gives K={kb} ({:?} · {:?})", self.shape(), w.shape()),
            });
        }
        if let Some(b) = bias {
            b.check_device(self.device(), OP)?;
            if b.numel() != n {
                return Err(Error::ShapeMismatch {
                    op: OP,
                    expected: format!("a bias of {n} elements"),
                    found: format!("{:?}", b.shape()),
                });
            }
        }
        let out = Tensor::empty(self.device(), &[m, n])?;
        let args = MatmulArgs {
            a: self.buffer(),
            b: w.buffer(),
            epilogue: bias.map_or(matmul::Epilogue::None, |b| {
                matmul::Epilogue::Bias(b.buffer())
            }),
            c: out.buffer(),
            m: u32_dim(OP, m)?,
            n: u32_dim(OP, n)?,
            k: u32_dim(OP, k)?,
            layout,
            act,
            accumulate: false,
            half: false,
        };
        self.run(|rec| matmul_tune::record(rec, &args))?;
        Ok(out)
    }

    /// `self · other`: (M, K)·(K, N) → (M, N).
    ///
    /// ```no_run
    /// # let dev = suanli::Device::open("auto")?;
    /// let a = suanli::Tensor::from_slice(&dev, &[1.0, 2.0, 3.0, 4.0], &[2, 2])?;
    /// let c = a.matmul(&a)?;
    /// assert_eq!(c.to_vec()?, vec![7.0, 10.0, 15.0, 22.0]);
    /// # Ok::<(), suanli::Error>(())
    /// ```
    pub fn matmul(&self, other: &Tensor) -> Result<Tensor> {
        self.linear_with(other, None, Activation::Linear, Layout::NN)
    }

    /// `selfᵀ · other`: self stored (K, M), other (K, N) → (M, N) (weight gradients).
    pub fn matmul_tn(&self, other: &Tensor) -> Result<Tensor> {
        self.linear_with(other, None, Activation::Linear, Layout::TN)
    }

    /// `self · otherᵀ`: self (M, K), other stored (N, K) → (M, N) (input gradients).
    pub fn matmul_nt(&self, other: &Tensor) -> Result<Tensor> {
        self.linear_with(other, None, Activation::Linear, Layout::NT)
    }

    /// A dense layer in one kernel: `act(self · w + bias)`.
    pub fn linear(&self, w: &Tensor, bias: Option<&Tensor>, act: Activation) -> Result<Tensor> {
        self.linear_with(w, bias, act, Layout::NN)
    }

    /// `act(self)` elementwise (softmax: along the last axis).
    pub fn activation(&self, act: Activation) -> Result<Tensor> {
        if act == Activation::Softmax {
            return self.softmax(self.shape().len().saturating_sub(1));
        }
        let out = Tensor::empty(self.device(), self.shape())?;
        let n = self.numel();
        self.run(|rec| elementwise::activation(rec, act, self.buffer(), out.buffer(), n))?;
        Ok(out)
    }

    /// `dy · act'(self)`: the backward pass of [`Tensor::activation`], `self` being its input.
    pub fn activation_backward(&self, act: Activation, dy: &Tensor) -> Result<Tensor> {
        self.same_shape("activation_backward", dy)?;
        let out = Tensor::empty(self.device(), self.shape())?;
        let n = self.numel();
        self.run(|rec| {
            elementwise::activation_backward(rec, act, self.buffer(), dy.buffer(), out.buffer(), n)
        })?;
        Ok(out)
    }

    /// ReLU.
    pub fn relu(&self) -> Result<Tensor> {
        self.activation(Activation::Relu)
    }

    /// Sigmoid.
    pub fn sigmoid(&self) -> Result<Tensor> {
        self.activation(Activation::Sigmoid)
    }

    /// tanh.
    pub fn tanh(&self) -> Result<Tensor> {
        self.activation(Activation::Tanh)
    }

    /// GELU (exact, erf).
    pub fn gelu(&self) -> Result<Tensor> {
        self.activation(Activation::Gelu)
    }

    fn same_shape(&self, op: &'static str, other: &Tensor) -> Result<()> {
        other.check_device(self.device(), op)?;
        if self.shape() != other.shape() {
            return Err(Error::ShapeMismatch {
                op,
                expected: format!("{:?}", self.shape()),
                found: format!("{:?}", other.shape()),
            });
        }
        Ok(())
    }

    fn binary(&self, op: BinaryOp, name: &'static str, other: &Tensor) -> Result<Tensor> {
        self.same_shape(name, other)?;
        let out = Tensor::empty(self.device(), self.shape())?;
        let n = self.numel();
        self.run(|rec| {
            elementwise::binary(rec, op, self.buffer(), other.buffer(), out.buffer(), n)
        })?;
        Ok(out)
    }

    /// Elementwise `self + other` (same shapes).
    pub fn add(&self, other: &Tensor) -> Result<Tensor> {
        self.binary(BinaryOp::Add, "add", other)
    }

    /// Elementwise `self - other`.
    pub fn sub(&self, other: &Tensor) -> Result<Tensor> {
        self.binary(BinaryOp::Sub, "sub", other)
    }

    /// Elementwise `self * other`.
    pub fn mul(&self, other: &Tensor) -> Result<Tensor> {
        self.binary(BinaryOp::Mul, "mul", other)
    }

    /// Elementwise `self / other`.
    pub fn div(&self, other: &Tensor) -> Result<Tensor> {
        self.binary(BinaryOp::Div, "div", other)
    }

    /// `s · self`.
    pub fn scale(&self, s: f32) -> Result<Tensor> {
        let out = Tensor::empty(self.device(), self.shape())?;
        let n = self.numel();
        self.run(|rec| elementwise::scale(rec, self.buffer(), out.buffer(), n, s))?;
        Ok(out)
    }

    /// `self[r, c] + bias[c]` for a (rows, cols) matrix and a bias of `cols` elements.
    pub fn add_bias(&self, bias: &Tensor) -> Result<Tensor> {
        bias.check_device(self.device(), "add_bias")?;
        let (rows, cols) = matrix("add_bias", self)?;
        if bias.numel() != cols {
            return Err(Error::ShapeMismatch {
                op: "add_bias",
                expected: format!("a bias of {cols} elements"),
                found: format!("{:?}", bias.shape()),
            });
        }
        let out = Tensor::empty(self.device(), self.shape())?;
        self.run(|rec| {
            elementwise::bias_add(rec, self.buffer(), bias.buffer(), out.buffer(), rows, cols)
        })?;
        Ok(out)
    }

    fn axis(&self, op: &'static str, axis: usize) -> Result<(usize, usize)> {
        nonempty(op, self)?;
        let (rows, cols) = matrix(op, self)?;
        if axis > 1 || (self.shape().len() == 1 && axis != 0) {
            return Err(Error::InvalidArgument {
                op,
                name: "axis",
                expected: format!("an axis below {}", self.shape().len()),
                found: axis.to_string(),
            });
        }
        Ok((rows, cols))
    }

    fn reduce_axis(&self, op: &'static str, axis: usize, mean: bool) -> Result<Tensor> {
        let (rows, cols) = self.axis(op, axis)?;
        if axis == 0 && self.shape().len() == 2 {
            let out = Tensor::empty(self.device(), &[cols])?;
            let s = if mean { 1.0 / rows as f32 } else { 1.0 };
            self.run(|rec| reduce::cols(rec, self.buffer(), out.buffer(), rows, cols, s))?;
            Ok(out)
        } else {
            let out = Tensor::empty(self.device(), &[rows])?;
            let s = if mean { 1.0 / cols as f32 } else { 1.0 };
            self.run(|rec| {
                reduce::rows(rec, RowOp::Sum, self.buffer(), out.buffer(), rows, cols, s)
            })?;
            Ok(out)
        }
    }

    /// Sum over `axis` (0: down the columns of a matrix, giving one value per column — the
    /// bias gradient; 1: along each row). A 1-D tensor sums to one element with axis 0.
    pub fn sum(&self, axis: usize) -> Result<Tensor> {
        self.reduce_axis("sum", axis, false)
    }

    /// Mean over `axis` (see [`Tensor::sum`]).
    pub fn mean(&self, axis: usize) -> Result<Tensor> {
        self.reduce_axis("mean", axis, true)
    }

    fn row_op(&self, op: &'static str, what: RowOp) -> Result<Tensor> {
        nonempty(op, self)?;
        let (rows, cols) = matrix(op, self)?;
        let out = Tensor::empty(self.device(), &[rows])?;
        self.run(|rec| reduce::rows(rec, what, self.buffer(), out.buffer(), rows, cols, 1.0))?;
        Ok(out)
    }

    /// Maximum of each row (the last axis).
    pub fn max_rows(&self) -> Result<Tensor> {
        self.row_op("max_rows", RowOp::Max)
    }

    /// Index of the first maximum of each row, as f32.
    pub fn argmax_rows(&self) -> Result<Tensor> {
        self.row_op("argmax_rows", RowOp::ArgMax)
    }

    /// Softmax along `axis` (only the last axis, 1 for a matrix, is supported).
    pub fn softmax(&self, axis: usize) -> Result<Tensor> {
        self.softmax_impl("softmax", axis, false)
    }

    /// Log-softmax along the last axis.
    pub fn log_softmax(&self, axis: usize) -> Result<Tensor> {
        self.softmax_impl("log_softmax", axis, true)
    }

    fn softmax_impl(&self, op: &'static str, axis: usize, log: bool) -> Result<Tensor> {
        nonempty(op, self)?;
        let last = self.shape().len().saturating_sub(1);
        if axis != last {
            return Err(Error::InvalidArgument {
                op,
                name: "axis",
                expected: format!("the last axis ({last})"),
                found: axis.to_string(),
            });
        }
        let (rows, cols) = matrix(op, self)?;
        let out = Tensor::empty(self.device(), self.shape())?;
        self.run(|rec| softmax_xent::softmax(rec, self.buffer(), out.buffer(), rows, cols, log))?;
        Ok(out)
    }

    fn check_labels(&self, op: &'static str, labels: &Labels) -> Result<(usize, usize)> {
        labels.tensor.check_device(self.device(), op)?;
        nonempty(op, self)?;
        let (rows, cols) = matrix(op, self)?;
        if labels.len() != rows {
            return Err(Error::ShapeMismatch {
                op,
                expected: format!("{rows} labels (one per row)"),
                found: labels.len().to_string(),
            });
        }
        if labels.max as usize >= cols {
            return Err(Error::InvalidArgument {
                op,
                name: "labels",
                expected: format!("class indices in 0..{cols}"),
                found: format!("a label of {}", labels.max),
            });
        }
        Ok((rows, cols))
    }

    /// Sparse categorical cross-entropy of logits `self` (B, C): per-row losses (B).
    /// Take `.mean(0)` for the mean loss.
    pub fn softmax_cross_entropy(&self, labels: &Labels) -> Result<Tensor> {
        let (rows, cols) = self.check_labels("softmax_cross_entropy", labels)?;
        let loss = Tensor::empty(self.device(), &[rows])?;
        self.run(|rec| {
            softmax_xent::xent(
                rec,
                self.buffer(),
                labels.tensor.buffer(),
                loss.buffer(),
                None,
                rows,
                cols,
                1.0,
                false,
            )
        })?;
        Ok(loss)
    }

    /// The fused backward pass: `((softmax(self) − onehot) / B, per-row losses)`.
    pub fn softmax_cross_entropy_backward(&self, labels: &Labels) -> Result<(Tensor, Tensor)> {
        let (rows, cols) = self.check_labels("softmax_cross_entropy_backward", labels)?;
        let loss = Tensor::empty(self.device(), &[rows])?;
        let grad = Tensor::empty(self.device(), self.shape())?;
        let scale = 1.0 / rows as f32;
        self.run(|rec| {
            softmax_xent::xent(
                rec,
                self.buffer(),
                labels.tensor.buffer(),
                loss.buffer(),
                Some(grad.buffer()),
                rows,
                cols,
                scale,
                false,
            )
        })?;
        Ok((grad, loss))
    }
}
