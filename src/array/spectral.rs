//! The singular value decomposition and the symmetric eigensolver, batched over leading
//! axes, by one-sided Jacobi on the device ([`crate::kernels::jacobi`]): `svd` (the reduced
//! form), `svdvals`, `eigh`, `eigvalsh`. float32 for 32-bit operands; float64, int64 and
//! uint64 operands in float64 (the kernel's f64 twin, tolerance √m·ε₆₄), which fails with
//! [`Error::NoConvergence`] (NumPy's `LinAlgError`) if [`jacobi::MAX_SWEEPS`] sweeps do not
//! converge, where float32 uses what it has.
//!
//! `eigh` factors B = A + c·I with c = ‖A‖∞ (so B is positive semidefinite, its singular
//! values its eigenvalues and its right singular vectors its eigenvectors), then subtracts c:
//! the eigenvalues are accurate to about ε·‖A‖∞ in absolute terms (up to √n·ε·‖A‖₂, a
//! little above a backward-stable symmetric eigensolver's ε·‖A‖₂; small eigenvalues of a
//! matrix with large ones lose relative accuracy). Like NumPy's `eigh`, only the lower triangle is read.

use crate::array::array::Array;
use crate::array::array::Strided;
use crate::array::decomp::{balanced, float_copy, square, work_dtype};
use crate::array::dtype::DType;
use crate::array::eval::alloc_words;
use crate::array::ops::Binary;
use crate::array::reduce::Reduce;
use crate::error::{Error, Result};
use crate::kernels::jacobi;

/// The rotated matrices A·V (`batch + [m, n]`) and V (`batch + [n, n]`) of `x` (m ≥ n).
fn orthogonalized(op: &'static str, x: &Array) -> Result<(Array, Array)> {
    let r = x.ndim();
    let (m, n) = (x.shape()[r - 2], x.shape()[r - 1]);
    let batch = &x.shape()[..r - 2];
    let count: usize = batch.iter().product();
    crate::kernels::lu::check_size(op, count, m.max(n), m.max(n))?;
    let dt = work_dtype(op, x)?;
    let a = float_copy(op, x, x.shape(), dt)?;
    let mut vshape = batch.to_vec();
    vshape.extend([n, n]);
    let eye = Array::eye(x.device(), n, n, 0, dt)?;
    let v = float_copy(op, &eye, &vshape, dt)?;
    let info = alloc_words(x.device(), count.max(1))?;
    let f64 = dt == DType::Float64;
    let sweeps = jacobi::orthogonalize(
        x.device(),
        a.data.buffer(),
        v.data.buffer(),
        &info,
        count,
        m,
        n,
        f64,
    )?;
    converged(op, sweeps, f64, count, m, n)?;
    let wrap = |s: Strided| Array::from_strided(x.device(), dt, s);
    Ok((wrap(a), wrap(v)))
}

/// [`Error::NoConvergence`] where the float64 rotations of `count` m×n matrices had not
/// converged after [`jacobi::MAX_SWEEPS`] sweeps (`sweeps` is `None`); float32 uses what it
/// has (its columns orthogonal to within a few ulps of the tolerance).
fn converged(
    op: &'static str,
    sweeps: Option<usize>,
    f64: bool,
    count: usize,
    m: usize,
    n: usize,
) -> Result<()> {
    if sweeps.is_none() && f64 {
        return Err(Error::NoConvergence {
            op,
            found: format!(
                "the Jacobi rotations of {count} matrices of {m}×{n} did not converge in {} sweeps",
                jacobi::MAX_SWEEPS
            ),
        });
    }
    Ok(())
}

/// `u` (`(..., m, k)`, m ≥ k) with orthonormal columns: Jacobi's U = A·V/σ is accurate
/// only where σ is well above rounding, and zero where σ = 0, so U's columns are made
/// orthonormal by a Householder QR. Q·diag(sign(diag R)) keeps each accurate column (R is
/// ±1 on the diagonal for orthonormal input) and completes the rest to an orthonormal set.
fn orthonormal(u: &Array) -> Result<Array> {
    let (q, r) = u.qr(false)?;
    let k = r.shape()[r.ndim() - 1];
    let dt = u.dtype();
    let eye = Array::eye(u.device(), k, k, 0, dt)?;
    let d = r.mul(&eye)?.reduce(Reduce::Sum, Some(&[-1]), false)?;
    let negative = d.binary_scalar(Binary::Less, 0.0.into())?;
    let one = Array::scalar(u.device(), 1.0, dt);
    let sign = Array::where_(&negative, &one.neg()?, &one)?;
    q.mul(&sign.expand_dims(sign.ndim() - 1)?)?.copy()
}

/// The columns of `x` (`(..., rows, n)`) in the order `order` (`(..., n)`) gives.
fn columns(x: &Array, order: &Array) -> Result<Array> {
    let idx = order
        .expand_dims(order.ndim() - 1)?
        .broadcast_to(x.shape())?;
    x.take_along_axis(&idx, -1)
}

fn at_least_2d(op: &'static str, x: &Array) -> Result<()> {
    if x.ndim() < 2 {
        return Err(Error::ShapeMismatch {
            op,
            expected: "matrices in the last two axes (shape (..., m, n))".into(),
            found: format!("shape {:?}", x.shape()),
        });
    }
    Ok(())
}

impl Array {
    /// The reduced SVD of the matrices in the last two axes: (U `(..., m, k)`, S `(..., k)`
    /// descending, Vh `(..., k, n)`) with k = min(m, n) and A = U·diag(S)·Vh, U's and Vh's
    /// rows orthonormal also where the matrix is rank-deficient (as LAPACK's).
    pub fn svd(&self) -> Result<(Array, Array, Array)> {
        self.svd_with(true)
    }

    /// `svd`, with U made orthonormal only when `vectors` (`svdvals` does not need it).
    fn svd_with(&self, vectors: bool) -> Result<(Array, Array, Array)> {
        const OP: &str = "svd";
        at_least_2d(OP, self)?;
        let r = self.ndim();
        let (m, n) = (self.shape()[r - 2], self.shape()[r - 1]);
        if m < n {
            let (u, s, vh) = self.matrix_transpose()?.svd_with(vectors)?;
            return Ok((vh.matrix_transpose()?, s, u.matrix_transpose()?));
        }
        let batch = self.shape()[..r - 2].to_vec();
        let f = work_dtype(OP, self)?;
        if n == 0 || batch.contains(&0) {
            let shape = |t: &[usize]| [batch.clone(), t.to_vec()].concat();
            let d = self.device();
            return Ok((
                Array::zeros(d, &shape(&[m, n]), f)?.copy()?,
                Array::zeros(d, &shape(&[n]), f)?.copy()?,
                Array::zeros(d, &shape(&[n, n]), f)?.copy()?,
            ));
        }
        let (scaled, up) = balanced(OP, self)?;
        let (av, v) = orthogonalized(OP, &scaled)?;
        let sigma = av
            .mul(&av)?
            .reduce(Reduce::Sum, Some(&[-2]), false)?
            .sqrt()?;
        let order = sigma.argsort(-1, true)?;
        let s = sigma.take_along_axis(&order, -1)?;
        let sr = s.expand_dims(s.ndim() - 1)?;
        let positive = sr.binary_scalar(Binary::Greater, 0.0.into())?;
        let up = up.squeeze(&[up.ndim() - 1])?;
        let cols = columns(&av, &order)?;
        let zero = Array::scalar(self.device(), 0.0, f);
        let u = Array::where_(&positive, &cols.div(&sr)?, &zero)?.copy()?;
        let u = if vectors { orthonormal(&u)? } else { u };
        let s = s.mul(&up)?.copy()?;
        let vh = columns(&v, &order)?.matrix_transpose()?.copy()?;
        Ok((u, s, vh))
    }

    /// The singular values of the matrices in the last two axes, descending.
    pub fn svdvals(&self) -> Result<Array> {
        Ok(self.svd_with(false)?.1)
    }

    /// The eigenvalues (ascending, `(..., n)`) and eigenvectors (columns, `(..., n, n)`) of
    /// the symmetric matrices whose lower triangles are in the last two axes.
    pub fn eigh(&self) -> Result<(Array, Array)> {
        const OP: &str = "eigh";
        let (batch, n) = square(OP, self)?;
        let f = work_dtype(OP, self)?;
        if n == 0 || batch.contains(&0) {
            let d = self.device();
            let shape = |t: &[usize]| [batch.clone(), t.to_vec()].concat();
            return Ok((
                Array::zeros(d, &shape(&[n]), f)?.copy()?,
                Array::zeros(d, &shape(&[n, n]), f)?.copy()?,
            ));
        }
        // Balanced by the lower triangle alone: the upper one is not read.
        let (scaled, up) = balanced(OP, &self.triangle(0, false)?)?;
        let x = float_copy(OP, &scaled, self.shape(), f)?;
        let x = Array::from_strided(self.device(), f, x);
        let sym = x
            .triangle(0, false)?
            .add(&x.triangle(-1, false)?.matrix_transpose()?)?
            .copy()?;
        // c = max_i Σ_j |a_ij| ≥ every |λ|.
        let c = sym
            .abs()?
            .reduce(Reduce::Sum, Some(&[-1]), true)?
            .reduce(Reduce::Max, Some(&[-2]), true)?
            .copy()?;
        let eye = Array::eye(self.device(), n, n, 0, f)?;
        let shifted = sym.add(&eye.mul(&c)?)?.copy()?;
        let (bv, v) = orthogonalized(OP, &shifted)?;
        let sigma = bv
            .mul(&bv)?
            .reduce(Reduce::Sum, Some(&[-2]), false)?
            .sqrt()?;
        let order = sigma.argsort(-1, false)?;
        let c1 = c.squeeze(&[c.ndim() - 1])?;
        let up = up.squeeze(&[up.ndim() - 1])?;
        let w = sigma
            .take_along_axis(&order, -1)?
            .sub(&c1)?
            .mul(&up)?
            .copy()?;
        let vecs = columns(&v, &order)?.copy()?;
        Ok((w, vecs))
    }

    /// The eigenvalues (ascending) of the symmetric matrices in the last two axes.
    pub fn eigvalsh(&self) -> Result<Array> {
        Ok(self.eigh()?.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// No matrix is known that one-sided Jacobi fails to converge on in 30 sweeps, so the
    /// error path is tested where a non-converged batch becomes the error.
    #[test]
    fn an_unconverged_float64_batch_is_no_convergence() {
        match converged("svd", None, true, 3, 5, 4) {
            Err(Error::NoConvergence { op, found }) => {
                assert_eq!(op, "svd");
                assert!(found.contains("3 matrices of 5×4"), "{found}");
                assert!(found.contains("30 sweeps"), "{found}");
            }
            other => panic!("expected NoConvergence, found {other:?}"),
        }
        let e = converged("eigh", None, true, 1, 2, 2).unwrap_err();
        assert!(e.to_string().contains("eigh"), "{e}");
        // Converged float64, and float32 whatever happened, go on.
        assert!(converged("svd", Some(7), true, 3, 5, 4).is_ok());
        assert!(converged("svd", None, false, 3, 5, 4).is_ok());
    }
}
