//! The user's WGSL snippets as array kernels (`suanli.numpy.ElementwiseKernel` and
//! `ReductionKernel`, CuPy's names): the crate's `suanli::array::custom` with the arguments
//! already turned into arrays by the Python wrapper (`python/suanli/numpy/_kernels.py`).

use pyo3::prelude::*;
use suanli::array::custom::{ElementwiseKernel, Param, ParamType, ReductionKernel};

use crate::array::PyArray;
use crate::errors::IntoPy;
use crate::tensor::PyTensor;

/// Each parameter as (name, dtype name or placeholder, whether a placeholder).
fn describe(params: &[Param]) -> Vec<(String, String, bool)> {
    params
        .iter()
        .map(|p| match &p.ty {
            ParamType::Fixed(d) => (p.name.clone(), d.name().to_string(), false),
            ParamType::Generic(t) => (p.name.clone(), t.clone(), true),
        })
        .collect()
}

fn arrays(inputs: &[PyRef<'_, PyArray>]) -> Vec<suanli::array::Array> {
    inputs.iter().map(|a| a.0.clone()).collect()
}

/// A declared elementwise kernel (see `suanli.numpy.ElementwiseKernel`).
#[pyclass(module = "suanli._native", name = "ElementwiseKernel", frozen)]
pub struct PyElementwiseKernel(ElementwiseKernel);

#[pymethods]
impl PyElementwiseKernel {
    #[new]
    #[pyo3(signature = (in_params, out_params, operation, name, preamble=""))]
    fn new(
        in_params: &str,
        out_params: &str,
        operation: &str,
        name: &str,
        preamble: &str,
    ) -> PyResult<Self> {
        ElementwiseKernel::new(in_params, out_params, operation, name)
            .py()
            .map(|k| PyElementwiseKernel(k.with_preamble(preamble)))
    }

    /// The input parameters: (name, dtype or placeholder, is a placeholder).
    fn inputs(&self) -> Vec<(String, String, bool)> {
        describe(self.0.inputs())
    }

    /// Runs it over arrays, one per input parameter: the outputs.
    fn call(&self, py: Python<'_>, inputs: Vec<PyRef<'_, PyArray>>) -> PyResult<Vec<PyArray>> {
        let xs = arrays(&inputs);
        let out = py.detach(|| self.0.call(&xs)).py()?;
        Ok(out.into_iter().map(PyArray).collect())
    }
}

/// A declared reduction kernel (see `suanli.numpy.ReductionKernel`).
#[pyclass(module = "suanli._native", name = "ReductionKernel", frozen)]
pub struct PyReductionKernel(ReductionKernel);

#[pymethods]
impl PyReductionKernel {
    #[new]
    #[pyo3(signature = (in_params, out_params, map_expr, reduce_expr, post_map_expr, identity, name, reduce_type=None, preamble=""))]
    #[allow(clippy::too_many_arguments)] // CuPy's constructor, argument for argument
    fn new(
        in_params: &str,
        out_params: &str,
        map_expr: &str,
        reduce_expr: &str,
        post_map_expr: &str,
        identity: &str,
        name: &str,
        reduce_type: Option<&str>,
        preamble: &str,
    ) -> PyResult<Self> {
        let mut k = ReductionKernel::new(
            in_params,
            out_params,
            map_expr,
            reduce_expr,
            post_map_expr,
            identity,
            name,
        )
        .py()?
        .with_preamble(preamble);
        if let Some(t) = reduce_type {
            k = k.with_reduce_type(t).py()?;
        }
        Ok(PyReductionKernel(k))
    }

    /// The input parameters: (name, dtype or placeholder, is a placeholder).
    fn inputs(&self) -> Vec<(String, String, bool)> {
        describe(self.0.inputs())
    }

    /// Reduces arrays (one per input parameter) over `axes` (None: all).
    fn call(
        &self,
        py: Python<'_>,
        inputs: Vec<PyRef<'_, PyArray>>,
        axes: Option<Vec<isize>>,
        keepdims: bool,
    ) -> PyResult<PyArray> {
        let xs = arrays(&inputs);
        py.detach(|| self.0.call(&xs, axes.as_deref(), keepdims))
            .py()
            .map(PyArray)
    }
}

/// An array's device words as a tensor sharing its buffer, for `RawKernel` calls over
/// arrays; None when the array is a view that does not cover its buffer exactly.
#[pyfunction]
pub fn array_device_words(py: Python<'_>, x: &PyArray) -> PyResult<Option<PyTensor>> {
    py.detach(|| x.0.device_words())
        .py()
        .map(|t| t.map(PyTensor))
}
