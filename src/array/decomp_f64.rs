//! float64 solvers and factorisations: `solve`, `inv`, `det`, `slogdet` (LU with partial
//! pivoting, LAPACK's `getrf` choice: the first largest pivot) and `cholesky`, computed in
//! f64 on the device (int64/uint64 operands too, as NumPy factors them in float64).
//!
//! Unlike the float32 path ([`crate::kernels::lu`], blocked, hand-written kernels) these are
//! the unblocked algorithms written with the array operations, so every step is a generated
//! kernel in f64 (the fused elementwise kernels, reductions, `take_along_axis` and the
//! in-dtype matmul of [`crate::array::linalg`]): one column (or one row of a triangular
//! solve) per step, batched over the leading axes, a few dispatches a step. Correctness
//! first: a matrix of order n costs O(n) dispatches, which the float32 kernels avoid.

use crate::array::array::Array;
use crate::array::decomp_shared::{det_pieces, parity, refuse_bool, which_matrix};
use crate::array::dtype::DType;
use crate::array::layout::Index;
use crate::array::reduce::Reduce;
use crate::error::{Error, Result};

const F: DType = DType::Float64;

/// Whether a solver given these dtypes computes in float64 here (float64, int64, uint64).
pub(crate) fn wanted(dtypes: &[DType]) -> bool {
    dtypes
        .iter()
        .any(|&d| d == DType::Float64 || d.is_wide_int())
}

fn range(start: Option<usize>, stop: Option<usize>) -> Index {
    Index::Slice {
        start: start.map(|v| v as isize),
        stop: stop.map(|v| v as isize),
        step: None,
    }
}

fn at(i: usize) -> Index {
    Index::At(i as isize)
}

/// `x[..., idx...]`.
fn ix(x: &Array, idx: &[Index]) -> Result<Array> {
    let mut all = vec![Index::Ellipsis];
    all.extend_from_slice(idx);
    x.index(&all)
}

/// The LU factorisation of `x`'s matrices broadcast to `batch`: the factors (L below the
/// unit diagonal, U on and above it; contiguous f64 `batch + [n, n]`), the row permutation
/// (int32 `batch + [n]`: row i of L·U is row `perm[i]` of the matrix) and the number of
/// row swaps (int32 `batch`).
pub(crate) struct Lu {
    pub a: Array,
    pub perm: Array,
    pub swaps: Array,
}

pub(crate) fn lu(op: &'static str, x: &Array, batch: &[usize], n: usize) -> Result<Lu> {
    refuse_bool(op, x)?;
    let dev = x.device().clone();
    let mut shape = batch.to_vec();
    shape.extend([n, n]);
    let mut a = x.astype(F)?.broadcast_to(&shape)?.copy()?;
    let mut vshape = batch.to_vec();
    vshape.push(n);
    let rows = Array::arange(&dev, 0.0, n as f64, 1.0, DType::Int32)?;
    let mut perm = rows.broadcast_to(&vshape)?.copy()?;
    let mut swaps = Array::zeros(&dev, batch, DType::Int32)?;
    let count: usize = batch.iter().product();
    if count == 0 {
        return Ok(Lu { a, perm, swaps });
    }
    let one = Array::scalar(&dev, 1.0, F);
    for k in 0..n {
        // The first largest |a[r, k]|, r >= k (argmax keeps the first of equals).
        let col = ix(&a, &[range(Some(k), None), at(k)])?;
        let p = col
            .abs()?
            .reduce(Reduce::ArgMax, Some(&[-1]), true)?
            .add_scalar(k as i64)?
            .copy()?;
        // The transposition k <-> p as a gather of whole rows.
        let kk = Array::scalar_int(&dev, k as i128, DType::Int32);
        let idx = Array::where_(
            &rows.equal_scalar(k as i64)?,
            &p,
            &Array::where_(&rows.equal(&p)?, &kk, &rows)?,
        )?
        .copy()?;
        a = a.take_along_axis(&idx.expand_dims(idx.ndim())?.broadcast_to(&shape)?, -2)?;
        perm = perm.take_along_axis(&idx, -1)?;
        swaps = swaps
            .add(
                &p.squeeze(&[p.ndim() - 1])?
                    .not_equal(&kk)?
                    .astype(DType::Int32)?,
            )?
            .copy()?;
        if k + 1 == n {
            break;
        }
        // Scale the column below the pivot (a zero pivot has a zero column under it: it is
        // left as it is, as LAPACK does) and update the trailing matrix.
        let piv = ix(
            &a,
            &[range(Some(k), Some(k + 1)), range(Some(k), Some(k + 1))],
        )?;
        let safe = Array::where_(&piv.equal_scalar(0.0)?, &one, &piv)?;
        let lview = ix(&a, &[range(Some(k + 1), None), range(Some(k), Some(k + 1))])?;
        let l = lview.div(&safe)?.copy()?;
        let urow = ix(&a, &[range(Some(k), Some(k + 1)), range(Some(k + 1), None)])?;
        let trail = ix(&a, &[range(Some(k + 1), None), range(Some(k + 1), None)])?;
        let updated = trail.sub(&l.mul(&urow)?)?.copy()?;
        trail.assign(&updated)?;
        lview.assign(&l)?;
    }
    Ok(Lu { a, perm, swaps })
}

/// The diagonal of contiguous `batch + [n, n]` matrices, `batch + [n]`.
pub(crate) fn diagonal(a: &Array, batch: &[usize], n: usize) -> Result<Array> {
    let mut flat: Vec<Option<usize>> = batch.iter().map(|&d| Some(d)).collect();
    flat.push(Some(n * n));
    ix(
        &a.reshape(&flat)?,
        &[Index::Slice {
            start: None,
            stop: None,
            step: Some(n as isize + 1),
        }],
    )
}

impl Lu {
    /// The first matrix (flat batch position) with an exactly zero pivot, and its column.
    fn singular(&self, batch: &[usize], n: usize) -> Result<Option<(usize, usize)>> {
        if n == 0 || batch.iter().product::<usize>() == 0 {
            return Ok(None);
        }
        let zero = diagonal(&self.a, batch, n)?
            .equal_scalar(0.0)?
            .to_f64_vec()?;
        Ok(zero.iter().position(|&z| z != 0.0).map(|i| (i / n, i % n)))
    }
}

/// The determinant of each of `x`'s matrices, in f64 (0 for a singular one), as
/// [`det_pieces`] builds it.
pub(crate) fn det(op: &'static str, x: &Array, batch: &[usize], n: usize) -> Result<Array> {
    let f = lu(op, x, batch, n)?;
    let (_, _, det) = det_pieces(&diagonal(&f.a, batch, n)?, &parity(&f.swaps, F)?)?;
    Ok(det)
}

/// `slogdet`'s sign (±1, 0 for a singular matrix) and log|det| (-inf), in f64.
pub(crate) fn slogdet(
    op: &'static str,
    x: &Array,
    batch: &[usize],
    n: usize,
) -> Result<(Array, Array)> {
    let f = lu(op, x, batch, n)?;
    let (sign, logabs, _) = det_pieces(&diagonal(&f.a, batch, n)?, &parity(&f.swaps, F)?)?;
    Ok((sign, logabs))
}

/// X with A·X = B, `b` already `(..., n, rhs)`, both broadcast to `batch`.
pub(crate) fn solve(
    op: &'static str,
    a: &Array,
    b: &Array,
    batch: &[usize],
    n: usize,
    rhs: usize,
) -> Result<Array> {
    refuse_bool(op, b)?;
    let f = lu(op, a, batch, n)?;
    if let Some((i, col)) = f.singular(batch, n)? {
        return Err(Error::Singular {
            op,
            found: format!(
                "{} has no nonzero pivot in column {col}",
                which_matrix(batch, i)
            ),
        });
    }
    let mut shape = batch.to_vec();
    shape.extend([n, rhs]);
    let count: usize = batch.iter().product();
    if count == 0 || n == 0 || rhs == 0 {
        return Array::zeros(a.device(), &shape, F);
    }
    // P·B: row i is B's row perm[i].
    let pidx = f.perm.expand_dims(f.perm.ndim())?.broadcast_to(&shape)?;
    let y = b
        .astype(F)?
        .broadcast_to(&shape)?
        .take_along_axis(&pidx, -2)?
        .copy()?;
    // L·Z = P·B (unit diagonal), then U·X = Z, a row at a time.
    for i in 1..n {
        let row = ix(&y, &[range(Some(i), Some(i + 1)), range(None, None)])?;
        let li = ix(&f.a, &[range(Some(i), Some(i + 1)), range(None, Some(i))])?;
        let done = ix(&y, &[range(None, Some(i)), range(None, None)])?;
        let next = row.sub(&li.matmul(&done)?)?.copy()?;
        row.assign(&next)?;
    }
    for i in (0..n).rev() {
        let row = ix(&y, &[range(Some(i), Some(i + 1)), range(None, None)])?;
        let ui = ix(
            &f.a,
            &[range(Some(i), Some(i + 1)), range(Some(i + 1), None)],
        )?;
        let done = ix(&y, &[range(Some(i + 1), None), range(None, None)])?;
        let piv = ix(
            &f.a,
            &[range(Some(i), Some(i + 1)), range(Some(i), Some(i + 1))],
        )?;
        let next = row.sub(&ui.matmul(&done)?)?.div(&piv)?.copy()?;
        row.assign(&next)?;
    }
    Ok(y)
}

/// The lower Cholesky factor of each matrix (read from its lower triangle), in f64, or
/// `Error::Singular` naming the first matrix that is not positive definite.
pub(crate) fn cholesky(op: &'static str, x: &Array, batch: &[usize], n: usize) -> Result<Array> {
    refuse_bool(op, x)?;
    let a = x.astype(F)?;
    let mut shape = batch.to_vec();
    shape.extend([n, n]);
    let l = Array::zeros(x.device(), &shape, F)?.copy()?;
    if batch.iter().product::<usize>() == 0 {
        return Ok(l);
    }
    for j in 0..n {
        let lj = ix(&l, &[at(j), range(None, Some(j))])?;
        let ajj = ix(&a, &[at(j), at(j)])?;
        let d = ajj
            .sub(&lj.square()?.reduce(Reduce::Sum, Some(&[-1]), false)?)?
            .sqrt()?
            .copy()?;
        ix(&l, &[at(j), at(j)])?.assign(&d)?;
        if j + 1 < n {
            let below = ix(&l, &[range(Some(j + 1), None), range(None, Some(j))])?;
            let acol = ix(&a, &[range(Some(j + 1), None), at(j)])?;
            // Lⱼ as a column (batch + [j, 1]), so that matmul does not take it for a matrix.
            let prod = below.matmul(&lj.expand_dims(lj.ndim())?)?;
            let col = acol
                .sub(&prod.squeeze(&[prod.ndim() - 1])?)?
                .div(&d.expand_dims(d.ndim())?)?
                .copy()?;
            ix(&l, &[range(Some(j + 1), None), at(j)])?.assign(&col)?;
        }
    }
    // A pivot that is not positive (or NaN) makes the matrix not positive definite.
    let bad = diagonal(&l, batch, n)?
        .greater_scalar(0.0)?
        .logical_not()?
        .to_f64_vec()?;
    if let Some(i) = bad.iter().position(|&z| z != 0.0) {
        return Err(Error::Singular {
            op,
            found: format!(
                "{} is not positive definite (pivot {} is not positive)",
                which_matrix(batch, i / n),
                i % n
            ),
        });
    }
    Ok(l)
}
