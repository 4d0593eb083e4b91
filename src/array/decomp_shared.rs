//! What the float32 solvers ([`crate::array::decomp`]) and the float64 ones
//! (`decomp_f64`) share: the operand check, the naming of a failed matrix in
//! an error, and `det`/`slogdet` from U's diagonal and the row swaps. Its own module so that
//! `decomp` can call `decomp_f64` without either importing the other's helpers (no cycle).

use crate::array::array::Array;
use crate::array::dtype::DType;
use crate::array::ops::Binary;
use crate::array::reduce::Reduce;
use crate::error::{Error, Result};

/// The solvers take numbers: a bool matrix is refused rather than cast (NumPy's linalg
/// refuses bool too).
pub(crate) fn refuse_bool(op: &'static str, x: &Array) -> Result<()> {
    if x.dtype() == DType::Bool {
        return Err(Error::DType {
            op,
            expected: "a numeric array".into(),
            found: "bool".into(),
        });
    }
    Ok(())
}

/// Names matrix `i` of a batch for an error message: "the matrix" when there is no batch,
/// "the matrix at [2, 0] of the batch" (its batch position, not its flat index) otherwise.
pub(crate) fn which_matrix(batch: &[usize], mut i: usize) -> String {
    if batch.is_empty() {
        return "the matrix".into();
    }
    let mut at = vec![0; batch.len()];
    for (p, &d) in at.iter_mut().zip(batch).rev() {
        *p = i % d.max(1);
        i /= d.max(1);
    }
    format!("the matrix at {at:?} of the batch")
}

/// The permutation's sign, 1 - 2·(swaps mod 2), in `dtype`, from an integer count of row
/// swaps.
pub(crate) fn parity(swaps: &Array, dtype: DType) -> Result<Array> {
    swaps
        .binary_scalar(Binary::BitwiseAnd, 1i64.into())?
        .astype(dtype)?
        .mul_scalar(-2.0)?
        .add_scalar(1.0)
}

/// `slogdet`'s sign and log|det| and `det` (all of shape `batch`, in U's dtype) from U's
/// diagonal `d` (`batch + [n]`) and the permutation's sign, as NumPy's `umath_linalg`
/// computes them: det = sign·exp(log|det|), so that a product whose partial products leave
/// the dtype's range (1e-200·1e-200·1e300) does not under- or overflow where the determinant
/// does not. A zero on the diagonal makes the matrix singular: sign +0, log|det| -inf and det
/// +0 whatever else U holds (an ∞ above the zero pivot would make the rest NaN, and an odd
/// number of swaps would make the zero -0).
pub(crate) fn det_pieces(d: &Array, parity: &Array) -> Result<(Array, Array, Array)> {
    let dev = d.device();
    let dt = d.dtype();
    let sing = d
        .equal_scalar(0.0)?
        .reduce(Reduce::Any, Some(&[-1]), false)?
        .copy()?;
    let zero = Array::scalar(dev, 0.0, dt);
    let sign = d
        .sign()?
        .reduce(Reduce::Prod, Some(&[-1]), false)?
        .mul(parity)?;
    let sign = Array::where_(&sing, &zero, &sign)?.copy()?;
    let logabs = d.abs()?.log()?.reduce(Reduce::Sum, Some(&[-1]), false)?;
    let logabs =
        Array::where_(&sing, &Array::scalar(dev, f64::NEG_INFINITY, dt), &logabs)?.copy()?;
    let det = Array::where_(&sing, &zero, &sign.mul(&logabs.exp()?)?)?.copy()?;
    Ok((sign, logabs, det))
}
