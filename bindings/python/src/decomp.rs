//! `suanli.numpy.linalg`'s solvers and factorisations: the crate's `array::decomp` (LU with
//! partial pivoting, Cholesky and Householder QR on the device; a singular or indefinite
//! matrix raises `LinAlgError`) and `array::spectral` (SVD and the symmetric eigensolver by Jacobi).

use pyo3::prelude::*;

use crate::array::PyArray;
use crate::errors::IntoPy;

/// X with A·X = B (`b` of shape `(..., n, k)`, or `(n,)` for one vector).
#[pyfunction]
pub fn array_solve(py: Python<'_>, a: &PyArray, b: &PyArray) -> PyResult<PyArray> {
    py.detach(|| a.0.solve(&b.0)).py().map(PyArray)
}

/// The inverses of the square matrices in the last two axes.
#[pyfunction]
pub fn array_inv(py: Python<'_>, x: &PyArray) -> PyResult<PyArray> {
    py.detach(|| x.0.inv()).py().map(PyArray)
}

/// The determinants of the square matrices in the last two axes.
#[pyfunction]
pub fn array_det(py: Python<'_>, x: &PyArray) -> PyResult<PyArray> {
    py.detach(|| x.0.det()).py().map(PyArray)
}

/// (sign, log|det|) of the square matrices in the last two axes.
#[pyfunction]
pub fn array_slogdet(py: Python<'_>, x: &PyArray) -> PyResult<(PyArray, PyArray)> {
    py.detach(|| x.0.slogdet())
        .py()
        .map(|(s, l)| (PyArray(s), PyArray(l)))
}

/// The Cholesky factor (lower, or its transpose when `upper`).
#[pyfunction]
pub fn array_cholesky(py: Python<'_>, x: &PyArray, upper: bool) -> PyResult<PyArray> {
    py.detach(|| x.0.cholesky(upper)).py().map(PyArray)
}

/// The reduced SVD (U, S descending, Vh) of the matrices in the last two axes.
#[pyfunction]
pub fn array_svd(py: Python<'_>, x: &PyArray) -> PyResult<(PyArray, PyArray, PyArray)> {
    py.detach(|| x.0.svd())
        .py()
        .map(|(u, s, vh)| (PyArray(u), PyArray(s), PyArray(vh)))
}

/// The eigenvalues (ascending) and eigenvectors of the symmetric matrices (lower triangle).
#[pyfunction]
pub fn array_eigh(py: Python<'_>, x: &PyArray) -> PyResult<(PyArray, PyArray)> {
    py.detach(|| x.0.eigh())
        .py()
        .map(|(w, v)| (PyArray(w), PyArray(v)))
}

/// The Householder QR (Q, R), reduced or `complete`.
#[pyfunction]
pub fn array_qr(py: Python<'_>, x: &PyArray, complete: bool) -> PyResult<(PyArray, PyArray)> {
    py.detach(|| x.0.qr(complete))
        .py()
        .map(|(q, r)| (PyArray(q), PyArray(r)))
}
