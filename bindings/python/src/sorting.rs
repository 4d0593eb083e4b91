//! `suanli.numpy.sort` and `argsort`: the crate's stable device sort along an axis.

use pyo3::prelude::*;

use crate::array::PyArray;
use crate::errors::IntoPy;

/// The values of `x` sorted along `axis`.
#[pyfunction]
pub fn array_sort(py: Python<'_>, x: &PyArray, axis: isize, descending: bool) -> PyResult<PyArray> {
    py.detach(|| x.0.sort(axis, descending)).py().map(PyArray)
}

/// The int32 positions that sort `x` along `axis` (stable).
#[pyfunction]
pub fn array_argsort(
    py: Python<'_>,
    x: &PyArray,
    axis: isize,
    descending: bool,
) -> PyResult<PyArray> {
    py.detach(|| x.0.argsort(axis, descending))
        .py()
        .map(PyArray)
}
