//! Building elementwise expressions: the result's dtype and shape are settled here (type
//! promotion, broadcasting, the standard's rule for Python scalars), the work waits for
//! [`Array::eval`] or a reader.

use crate::array::array::{Array, Expr, Scalar};
use crate::array::dtype::{promote, DType};
use crate::array::layout::broadcast_shapes;
use crate::array::ops::{Binary, Unary};
use crate::error::{Error, Result};

impl Array {
    /// `op(self)`.
    pub fn unary(&self, op: Unary) -> Result<Array> {
        let (t, out) = op.dtypes(self.dtype())?;
        Array::lazy(op.name(), out, self.shape().to_vec(), &[self], |o| {
            Expr::Unary(op, t, o[0].clone())
        })
    }

    /// `op(self, other)`, broadcast.
    pub fn binary(&self, op: Binary, other: &Array) -> Result<Array> {
        let (t, out) = op.dtypes(self.dtype(), other.dtype())?;
        // The computing dtype may be one neither operand has (uint32 == int8 compares in
        // int64): the device must hold it too.
        t.check_device(self.device(), op.name())?;
        let shape = broadcast_shapes(op.name(), &[self.shape(), other.shape()])?;
        Array::lazy(op.name(), out, shape, &[self, other], |o| {
            Expr::Binary(op, t, o[0].clone(), o[1].clone())
        })
    }

    /// `op(self, value)` with a Python scalar, which takes the array's dtype as the
    /// standard (and NumPy 2) say, except that a float with an integer or bool array gives
    /// float32 and an integer with a bool array int32. An integer that the array's integer
    /// dtype cannot hold is an error, as in NumPy 2.
    pub fn binary_scalar(&self, op: Binary, value: Scalar) -> Result<Array> {
        let s = self.scalar_like(op.name(), value)?;
        self.binary(op, &s)
    }

    /// `op(value, self)` (reflected operators: `2 - x`).
    pub fn scalar_binary(&self, value: Scalar, op: Binary) -> Result<Array> {
        let s = self.scalar_like(op.name(), value)?;
        s.binary(op, self)
    }

    /// A 0-d array of `value` in the dtype it takes beside this array.
    pub fn scalar_like(&self, op: &'static str, value: Scalar) -> Result<Array> {
        let d = self.dtype();
        let (v, t) = match value {
            Scalar::Bool(b) => (b as u8 as f64, d),
            Scalar::Int(i) if d == DType::Bool => (i as f64, DType::Int32),
            Scalar::Int(i) => (i as f64, d),
            Scalar::Float(f) if !d.is_float() => (f, DType::Float32),
            Scalar::Float(f) => (f, d),
            Scalar::Complex(re, im) => return Ok(Array::complex_scalar(self.device(), re, im)),
        };
        if let Scalar::Int(i) = value {
            if let Some((lo, hi)) = t.int_bounds() {
                if i < lo || i > hi {
                    return Err(Error::InvalidArgument {
                        op,
                        name: "scalar",
                        expected: format!("an integer that {t} holds ({lo}..={hi})"),
                        found: i.to_string(),
                    });
                }
                // Exact: an int64 or uint64 operand beyond 2^53 must not pass through f64.
                return Ok(Array::scalar_int(self.device(), i, t));
            }
        }
        Ok(Array::scalar(self.device(), v, t))
    }

    /// `where(cond, self, other)`: this array's values where `cond` is true, else `other`'s.
    pub fn where_(cond: &Array, a: &Array, b: &Array) -> Result<Array> {
        let t = promote(a.dtype(), b.dtype())?;
        let shape = broadcast_shapes("where", &[cond.shape(), a.shape(), b.shape()])?;
        Array::lazy("where", t, shape, &[cond, a, b], |o| {
            Expr::Where(o[0].clone(), o[1].clone(), o[2].clone())
        })
    }

    /// The array converted to `dtype` (`astype`); the same array when it already is.
    pub fn astype(&self, dtype: DType) -> Result<Array> {
        if dtype == self.dtype() {
            return Ok(self.clone());
        }
        if self.dtype().is_complex() && !dtype.is_complex() && dtype != DType::Bool {
            // The standard leaves complex to real unspecified and NumPy drops the imaginary
            // part with a warning: refused here, `real`/`imag`/`abs` say which is meant.
            return Err(Error::DType {
                op: "astype",
                expected: format!("a complex or bool dtype for a complex64 array (take real, imag or abs for {dtype})"),
                found: format!("complex64 to {dtype}"),
            });
        }
        Array::lazy("astype", dtype, self.shape().to_vec(), &[self], |o| {
            Expr::Cast(o[0].clone())
        })
    }
}
