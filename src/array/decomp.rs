//! Solvers and factorisations of square float32 matrices, batched over leading axes, on the
//! device ([`crate::kernels::lu`], [`crate::kernels::qr`]): `solve`, `inv`, `det` and
//! `slogdet` from an LU factorisation with partial pivoting (NumPy's LAPACK `getrf`
//! semantics: the largest pivot, the first on ties), `cholesky`, and Householder `qr`.
//! Integer operands up to 32 bits are factored in float32; float64, int64 and uint64 ones in
//! float64 by `decomp_f64` (`solve`, `inv`, `det`, `slogdet`, `cholesky`) and, for `qr`, by
//! the float64 twin of the Householder kernels.
//!
//! A singular matrix (an exactly zero pivot) makes `solve` and `inv` fail with
//! [`Error::Singular`], as NumPy's `LinAlgError`; `det` is then 0 and `slogdet` (0, -inf),
//! as in NumPy. A matrix that is not positive definite makes `cholesky` fail the same way.

use crate::array::array::{Array, Strided};
use crate::array::decomp_f64;
use crate::array::decomp_shared::{det_pieces, parity, refuse_bool, which_matrix};
use crate::array::dtype::DType;
use crate::array::eval::alloc_words;
use crate::array::layout::{broadcast_shapes, Index, Layout};
use crate::array::reduce::Reduce;
use crate::error::{Error, Result};
use crate::kernels::lu::{self, Factor, FactorBuffers};
use crate::kernels::qr;
use crate::tensor::Tensor;

/// A batch of factored matrices: the factors (`batch × n × n`, contiguous), the
/// permutation and the info words of [`crate::kernels::lu::FactorBuffers`].
struct Factored {
    a: Tensor,
    info: Tensor,
    perm: Tensor,
    batch: Vec<usize>,
    n: usize,
}

impl Factored {
    fn count(&self) -> usize {
        self.batch.iter().product()
    }

    /// The first matrix whose factorisation failed, and at which column.
    fn failed(&self) -> Result<Option<(usize, usize)>> {
        if self.count() == 0 || self.n == 0 {
            return Ok(None);
        }
        let info = self.info.to_vec()?;
        Ok(info
            .chunks(2)
            .take(self.count())
            .enumerate()
            .find(|(_, w)| w[0].to_bits() != 0)
            .map(|(i, w)| (i, w[0].to_bits() as usize - 1)))
    }

    /// The factors as an array of shape `batch + [n, n]`.
    fn matrices(&self, device: &crate::runtime::Device) -> Array {
        let mut shape = self.batch.clone();
        shape.extend([self.n, self.n]);
        Array::from_strided(
            device,
            DType::Float32,
            Strided {
                data: self.a.clone(),
                layout: Layout::contiguous(&shape),
            },
        )
    }
}

/// The batch shape and order of square matrices, or the error NumPy's `LinAlgError` names.
pub(crate) fn square(op: &'static str, x: &Array) -> Result<(Vec<usize>, usize)> {
    let r = x.ndim();
    if r < 2 || x.shape()[r - 1] != x.shape()[r - 2] {
        return Err(Error::ShapeMismatch {
            op,
            expected: "square matrices in the last two axes (shape (..., n, n))".into(),
            found: format!("shape {:?}", x.shape()),
        });
    }
    Ok((x.shape()[..r - 2].to_vec(), x.shape()[r - 1]))
}

/// The dtype `qr`, `svd` and `eigh` compute `x` in: float64 for float64, int64 and uint64
/// (as NumPy factors them in float64), float32 for the other numeric dtypes; bool and
/// complex are refused.
pub(crate) fn work_dtype(op: &'static str, x: &Array) -> Result<DType> {
    refuse_bool(op, x)?;
    if decomp_f64::wanted(&[x.dtype()]) {
        return Ok(DType::Float64);
    }
    solvable(op, x)?;
    Ok(DType::Float32)
}

/// `x` as `dt` (float32, or float64 from [`work_dtype`]) in a new contiguous buffer that
/// starts at word 0, broadcast to `shape`.
pub(crate) fn float_copy(
    op: &'static str,
    x: &Array,
    shape: &[usize],
    dt: DType,
) -> Result<Strided> {
    if dt != DType::Float64 {
        solvable(op, x)?;
    }
    let s = x.astype(dt)?.broadcast_to(shape)?.copy()?.strided()?;
    if s.layout.offset != 0 {
        return Err(Error::Internal {
            op,
            message: "a new copy does not start its buffer".into(),
        });
    }
    Ok(s)
}

/// The solvers take numbers and run in float32: a bool matrix is refused rather than cast,
/// and a float64 one rather than silently rounded.
fn solvable(op: &'static str, x: &Array) -> Result<()> {
    x.dtype().refuse_wide(op)?;
    refuse_bool(op, x)
}

/// `x` (in its [`work_dtype`]) with each matrix of the last two axes scaled by a power of
/// two 2^-k that brings its largest magnitude into [1, 2), and 2^k (shape `(..., 1, 1)`) to
/// scale the results back.
///
/// Householder norms and Jacobi's column dot products square the entries: without this a
/// float32 matrix of magnitude 1e-25 underflows to zero columns and one of 1e25 overflows
/// to infinity, though both are well within float32's range. A power of two scales without
/// rounding; k is held to [-126, 126] so that neither factor overflows or is subnormal (2^-127
/// is, and flushed to zero it zeroed a matrix near 3e38; ±1022 in float64), and a matrix
/// that is zero or holds ∞/NaN keeps k = 0 (its non-finite values pass through as NumPy's
/// do). float64 squares overflow only past 1e154, but the same scaling costs nothing there.
pub(crate) fn balanced(op: &'static str, x: &Array) -> Result<(Array, Array)> {
    let dt = work_dtype(op, x)?;
    let limit = if dt == DType::Float64 { 1022.0 } else { 126.0 };
    let x = x.astype(dt)?;
    let k = x
        .abs()?
        .reduce(Reduce::Max, Some(&[-2, -1]), true)?
        .log2()?
        .floor()?;
    let zero = Array::scalar(x.device(), 0.0, dt);
    let k = Array::where_(&k.isfinite()?, &k, &zero)?
        .maximum_scalar(-limit)?
        .minimum_scalar(limit)?
        .copy()?;
    let two = Array::scalar(x.device(), 2.0, dt);
    let down = two.pow(&k.neg()?)?;
    let up = two.pow(&k)?.copy()?;
    Ok((x.mul(&down)?, up))
}

/// Factors copies of the matrices of `x` broadcast to `batch`.
fn factor(op: &'static str, x: &Array, batch: &[usize], which: Factor) -> Result<Factored> {
    let (_, n) = square(op, x)?;
    let mut shape = batch.to_vec();
    shape.extend([n, n]);
    let count: usize = batch.iter().product();
    lu::check_size(op, count, n, n)?;
    let s = float_copy(op, x, &shape, DType::Float32)?;
    let device = x.device();
    let perm = alloc_words(device, count * n)?;
    let info = alloc_words(device, count * 2)?;
    let scratch = match which {
        Factor::Lu => lu::scratch_words(count, n),
        Factor::Cholesky => 0,
    };
    let scratch = if scratch > 0 {
        Some(alloc_words(device, scratch)?)
    } else {
        None
    };
    lu::factor(
        device,
        &FactorBuffers {
            a: s.data.buffer(),
            perm: perm.buffer(),
            info: info.buffer(),
            scratch: scratch.as_ref().map(|t| t.buffer()),
        },
        which,
        count,
        n,
    )?;
    Ok(Factored {
        a: s.data,
        info,
        perm,
        batch: batch.to_vec(),
        n,
    })
}

impl Array {
    /// X with A·X = B for the square matrices A of `self` (`(..., n, n)`) and `b` of shape
    /// `(..., n, k)` (batch axes broadcast) or `(n,)` (one vector for every matrix; the result
    /// drops that axis), as the array API standard's `linalg.solve`.
    pub fn solve(&self, b: &Array) -> Result<Array> {
        const OP: &str = "solve";
        self.check_device(b, OP)?;
        let (abatch, n) = square(OP, self)?;
        let vector = b.ndim() == 1;
        let b2 = if vector { b.expand_dims(1)? } else { b.clone() };
        let rb = b2.ndim();
        if rb < 2 || b2.shape()[rb - 2] != n {
            return Err(Error::ShapeMismatch {
                op: OP,
                expected: format!("b of shape ({n},) or (..., {n}, k) for matrices of order {n}"),
                found: format!("shape {:?}", b.shape()),
            });
        }
        let rhs = b2.shape()[rb - 1];
        let batch = if vector {
            abatch.clone()
        } else {
            broadcast_shapes(OP, &[&abatch, &b2.shape()[..rb - 2]])?
        };
        let mut out_shape = batch.clone();
        out_shape.extend([n, rhs]);
        // One matrix against a batch of right-hand sides: factored once, in either dtype.
        let count: usize = batch.iter().product();
        if count > 1 && abatch.iter().product::<usize>() == 1 {
            return self.solve_columns(&b2, &batch, rhs);
        }
        if decomp_f64::wanted(&[self.dtype(), b.dtype()]) {
            let r = decomp_f64::solve(OP, self, &b2, &batch, n, rhs)?;
            return if vector {
                r.squeeze(&[r.ndim() - 1])
            } else {
                Ok(r)
            };
        }
        lu::check_size(OP, count, n, rhs)?;
        let f = factor(OP, self, &batch, Factor::Lu)?;
        if let Some((i, col)) = f.failed()? {
            return Err(Error::Singular {
                op: OP,
                found: format!(
                    "{} has no nonzero pivot in column {col}",
                    which_matrix(&batch, i)
                ),
            });
        }
        let src = float_copy(OP, &b2, &out_shape, DType::Float32)?;
        let device = self.device();
        let x = alloc_words(device, count * n * rhs)?;
        let scratch = alloc_words(device, count * n * rhs)?;
        lu::solve(
            device,
            f.a.buffer(),
            f.perm.buffer(),
            src.data.buffer(),
            x.buffer(),
            scratch.buffer(),
            count,
            n,
            rhs,
        )?;
        let r = Array::from_strided(
            device,
            DType::Float32,
            Strided {
                data: x,
                layout: Layout::contiguous(&out_shape),
            },
        );
        if vector {
            r.squeeze(&[r.ndim() - 1])
        } else {
            Ok(r)
        }
    }

    /// `solve` of one matrix (`self`, batch axes all 1) against a batch of right-hand sides
    /// `b` (`batch + [n, rhs]`): the batch becomes columns of one system, so the matrix is
    /// factored once (LAPACK's way) instead of once per right-hand side.
    fn solve_columns(&self, b: &Array, batch: &[usize], rhs: usize) -> Result<Array> {
        let n = self.shape()[self.ndim() - 1];
        let count: usize = batch.iter().product();
        let r = batch.len();
        let mut out_shape = batch.to_vec();
        out_shape.extend([n, rhs]);
        // (batch..., n, rhs) -> (n, batch..., rhs) -> (n, count·rhs).
        let mut front = vec![r];
        front.extend(0..r);
        front.push(r + 1);
        let cols = b
            .broadcast_to(&out_shape)?
            .permute_dims(&front)?
            .reshape(&[Some(n), Some(count * rhs)])?;
        let x = self.reshape(&[Some(n), Some(n)])?.solve(&cols)?;
        let mut split = vec![Some(n)];
        split.extend(batch.iter().map(|&d| Some(d)));
        split.push(Some(rhs));
        let mut back: Vec<usize> = (1..=r).collect();
        back.extend([0, r + 1]);
        x.reshape(&split)?.permute_dims(&back)?.copy()
    }

    /// The inverses of the square matrices in the last two axes.
    pub fn inv(&self) -> Result<Array> {
        let (_, n) = square("inv", self)?;
        let eye = Array::eye(self.device(), n, n, 0, DType::Float32)?;
        self.solve(&eye.broadcast_to(self.shape())?)
            .map_err(|e| match e {
                Error::Singular { found, .. } => Error::Singular { op: "inv", found },
                e => e,
            })
    }

    /// The sign (±1, or 0 for a singular matrix) and the natural logarithm of the absolute
    /// determinant (-inf for a singular matrix) of each square matrix, as NumPy's `slogdet`.
    pub fn slogdet(&self) -> Result<(Array, Array)> {
        if decomp_f64::wanted(&[self.dtype()]) {
            let (batch, n) = square("slogdet", self)?;
            return decomp_f64::slogdet("slogdet", self, &batch, n);
        }
        let (d, parity) = diagonal_and_parity(self, "slogdet")?;
        let (sign, logabs, _) = det_pieces(&d, &parity)?;
        Ok((sign, logabs))
    }

    /// The determinant of each square matrix: the sign of the permutation and of U's
    /// diagonal times exp(Σ log|U's diagonal|), as NumPy computes it (0 for a singular
    /// matrix; ±inf only where the determinant itself leaves float32's range).
    pub fn det(&self) -> Result<Array> {
        if decomp_f64::wanted(&[self.dtype()]) {
            let (batch, n) = square("det", self)?;
            return decomp_f64::det("det", self, &batch, n);
        }
        let (d, parity) = diagonal_and_parity(self, "det")?;
        let (_, _, det) = det_pieces(&d, &parity)?;
        Ok(det)
    }

    /// The Cholesky factor of each symmetric positive-definite matrix, read from its lower
    /// triangle: L (lower) with A = L·Lᵀ, or U = Lᵀ (`upper`) with A = Uᵀ·U.
    pub fn cholesky(&self, upper: bool) -> Result<Array> {
        const OP: &str = "cholesky";
        let (batch, n) = square(OP, self)?;
        if decomp_f64::wanted(&[self.dtype()]) {
            let l = decomp_f64::cholesky(OP, self, &batch, n)?;
            return if upper {
                l.matrix_transpose()?.copy()
            } else {
                Ok(l)
            };
        }
        let f = factor(OP, self, &batch, Factor::Cholesky)?;
        if let Some((i, col)) = f.failed()? {
            return Err(Error::Singular {
                op: OP,
                found: format!(
                    "{} is not positive definite (pivot {col} is not positive)",
                    which_matrix(&batch, i)
                ),
            });
        }
        let l = f.matrices(self.device()).triangle(0, false)?;
        if upper {
            l.matrix_transpose()?.copy()
        } else {
            l.copy()
        }
    }
}

/// U's diagonal (`batch + [n]`, a view of the factors) and the permutation's sign
/// (`batch`, float32 ±1) of the LU factorisation of `x`.
fn diagonal_and_parity(x: &Array, op: &'static str) -> Result<(Array, Array)> {
    let (batch, n) = square(op, x)?;
    let f = factor(op, x, &batch, Factor::Lu)?;
    let device = x.device();
    let count = f.count();
    let mut dshape = batch.clone();
    dshape.push(n);
    let mut dstrides = Layout::contiguous(&dshape).strides;
    let bn = batch.len();
    for (i, s) in dstrides.iter_mut().enumerate().take(bn) {
        *s = (dshape[i + 1..bn].iter().product::<usize>() * n * n) as isize;
    }
    dstrides[bn] = n as isize + 1;
    let diag = Array::from_strided(
        device,
        DType::Float32,
        Strided {
            data: f.a.clone(),
            layout: Layout {
                shape: dshape,
                strides: dstrides,
                offset: 0,
            },
        },
    );
    let parity = if count == 0 || n == 0 {
        Array::ones(device, &batch, DType::Float32)?
    } else {
        let mut ishape = batch.clone();
        ishape.push(2);
        let mut istrides = Layout::contiguous(&ishape).strides;
        istrides.pop();
        let swaps = Array::from_strided(
            device,
            DType::UInt32,
            Strided {
                data: f.info.clone(),
                layout: Layout {
                    shape: batch.clone(),
                    strides: istrides,
                    offset: 1,
                },
            },
        );
        parity(&swaps, DType::Float32)?
    };
    Ok((diag, parity))
}

impl Array {
    /// The Householder QR of the matrices in the last two axes (LAPACK's geqrf and orgqr
    /// semantics: R's diagonal may be negative): Q `(..., m, k)` with orthonormal columns and
    /// R `(..., k, n)` upper triangular, k = min(m, n), or with `complete` Q `(..., m, m)` and
    /// R `(..., m, n)`.
    pub fn qr(&self, complete: bool) -> Result<(Array, Array)> {
        const OP: &str = "qr";
        let r = self.ndim();
        if r < 2 {
            return Err(Error::ShapeMismatch {
                op: OP,
                expected: "matrices in the last two axes (shape (..., m, n))".into(),
                found: format!("shape {:?}", self.shape()),
            });
        }
        let (m, n) = (self.shape()[r - 2], self.shape()[r - 1]);
        let batch = self.shape()[..r - 2].to_vec();
        let count: usize = batch.iter().product();
        let k = m.min(n);
        let qcols = if complete { m } else { k };
        lu::check_size(OP, count, m.max(n), m.max(n))?;
        let device = self.device();
        let dt = work_dtype(OP, self)?;
        let mut qshape = batch.clone();
        qshape.extend([m, qcols]);
        let rows = if complete { m } else { k };
        if count == 0 || k == 0 {
            // Nothing to factor (and no largest magnitude to balance by): Q is the identity's
            // first columns, R zero, as NumPy's.
            let mut rshape = batch.clone();
            rshape.extend([rows, n]);
            let eye = Array::eye(device, m, qcols, 0, dt)?;
            return Ok((
                eye.broadcast_to(&qshape)?.copy()?,
                Array::zeros(device, &rshape, dt)?.copy()?,
            ));
        }
        let (scaled, up) = balanced(OP, self)?;
        let a = float_copy(OP, &scaled, self.shape(), dt)?;
        let eye = Array::eye(device, m, qcols, 0, dt)?;
        let q = float_copy(OP, &eye, &qshape, dt)?;
        let tau = alloc_words(device, (count * k).max(1) * dt.words())?;
        qr::factor(
            device,
            a.data.buffer(),
            tau.buffer(),
            q.data.buffer(),
            count,
            m,
            n,
            qcols,
            dt == DType::Float64,
        )?;
        let full = Array::from_strided(device, dt, a).triangle(0, true)?;
        let r = full
            .index(&[
                Index::Ellipsis,
                Index::Slice {
                    start: None,
                    stop: Some(rows as isize),
                    step: None,
                },
                Index::full(),
            ])?
            .mul(&up)?
            .copy()?;
        Ok((Array::from_strided(device, dt, q), r))
    }
}
