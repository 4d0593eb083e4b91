//! `suanli.numpy.sort`, `argsort`, `take`, `take_along_axis` and `searchsorted`: the
//! crate's device sort and gathers.

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

/// `take(x, indices, axis)`.
#[pyfunction]
pub fn array_take(
    py: Python<'_>,
    x: &PyArray,
    indices: &PyArray,
    axis: isize,
) -> PyResult<PyArray> {
    py.detach(|| x.0.take(&indices.0, axis)).py().map(PyArray)
}

/// `take_along_axis(x, indices, axis)`.
#[pyfunction]
pub fn array_take_along_axis(
    py: Python<'_>,
    x: &PyArray,
    indices: &PyArray,
    axis: isize,
) -> PyResult<PyArray> {
    py.detach(|| x.0.take_along_axis(&indices.0, axis))
        .py()
        .map(PyArray)
}

/// `searchsorted(x1, x2, side)`.
#[pyfunction]
pub fn array_searchsorted(
    py: Python<'_>,
    x1: &PyArray,
    x2: &PyArray,
    right: bool,
) -> PyResult<PyArray> {
    py.detach(|| x1.0.searchsorted(&x2.0, right))
        .py()
        .map(PyArray)
}

/// `cumulative_sum` (`product` false) or `cumulative_prod` along `axis`.
#[pyfunction]
pub fn array_cumulative(
    py: Python<'_>,
    x: &PyArray,
    axis: isize,
    include_initial: bool,
    product: bool,
) -> PyResult<PyArray> {
    py.detach(|| {
        if product {
            x.0.cumulative_prod(axis, include_initial)
        } else {
            x.0.cumulative_sum(axis, include_initial)
        }
    })
    .py()
    .map(PyArray)
}
