//! `suanli.numpy.sort`, `argsort`, `take`, `take_along_axis`, `searchsorted`, `nonzero`
//! and `unique_*`: the crate's device sort, gathers and compaction.

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

/// `nonzero(x)`: one int32 index array per axis (reads the count back).
#[pyfunction]
pub fn array_nonzero(py: Python<'_>, x: &PyArray) -> PyResult<Vec<PyArray>> {
    py.detach(|| x.0.nonzero())
        .py()
        .map(|v| v.into_iter().map(PyArray).collect())
}

/// What `array_unique` returns: values, then indices, inverse and counts when asked for.
type UniqueParts = (PyArray, Option<PyArray>, Option<PyArray>, Option<PyArray>);

/// `unique_*`: (values, indices, inverse, counts), each but the values `None` unless asked.
#[pyfunction]
pub fn array_unique(
    py: Python<'_>,
    x: &PyArray,
    indices: bool,
    inverse: bool,
    counts: bool,
) -> PyResult<UniqueParts> {
    let u = py.detach(|| x.0.unique(indices, inverse, counts)).py()?;
    Ok((
        PyArray(u.values),
        u.indices.map(PyArray),
        u.inverse.map(PyArray),
        u.counts.map(PyArray),
    ))
}
