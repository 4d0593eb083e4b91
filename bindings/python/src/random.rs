//! `suanli.numpy.random`'s generator: the crate's `array::random::Generator` (Philox4x32-10
//! on the device). The NumPy-style signatures are in `python/suanli/numpy/random.py`.

use std::sync::Mutex;

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use suanli::array::random::Generator;
use suanli::array::DType;

use crate::array::PyArray;
use crate::device::PyDevice;
use crate::errors::IntoPy;

/// A random generator on a device: a seed and its position in its stream.
#[pyclass(module = "suanli._native", name = "Generator", frozen)]
pub struct PyGenerator(Mutex<Generator>);

impl PyGenerator {
    fn with<T>(&self, f: impl FnOnce(&mut Generator) -> suanli::Result<T>) -> PyResult<T> {
        let mut g = self
            .0
            .lock()
            .map_err(|_| PyRuntimeError::new_err("the generator was poisoned by a panic"))?;
        f(&mut g).py()
    }
}

#[pymethods]
impl PyGenerator {
    #[new]
    fn new(device: &PyDevice, seed: u64, stream: u64) -> PyGenerator {
        PyGenerator(Mutex::new(Generator::stream(&device.0, seed, stream)))
    }

    fn uniform(&self, low: f64, high: f64, shape: Vec<usize>) -> PyResult<PyArray> {
        self.with(|g| g.uniform(low, high, &shape)).map(PyArray)
    }

    fn normal(&self, loc: f64, scale: f64, shape: Vec<usize>) -> PyResult<PyArray> {
        self.with(|g| g.normal(loc, scale, &shape)).map(PyArray)
    }

    fn integers(
        &self,
        low: i64,
        high: i64,
        shape: Vec<usize>,
        dtype_name: &str,
    ) -> PyResult<PyArray> {
        let d = DType::from_name(dtype_name).py()?;
        self.with(|g| g.integers(low, high, &shape, d)).map(PyArray)
    }

    fn bits(&self, shape: Vec<usize>) -> PyResult<PyArray> {
        self.with(|g| g.bits(&shape)).map(PyArray)
    }

    /// A random permutation of `0..n` (int32).
    fn permutation(&self, py: Python<'_>, n: usize) -> PyResult<PyArray> {
        py.detach(|| self.with(|g| g.permutation(n))).map(PyArray)
    }

    /// `x` reordered at random along `axis` (a copy).
    fn permuted(&self, py: Python<'_>, x: &PyArray, axis: isize) -> PyResult<PyArray> {
        py.detach(|| self.with(|g| g.permuted(&x.0, axis)))
            .map(PyArray)
    }

    /// `x` reordered at random along `axis`, in place.
    fn shuffle(&self, py: Python<'_>, x: &PyArray, axis: isize) -> PyResult<()> {
        py.detach(|| self.with(|g| g.shuffle(&x.0, axis)))
    }

    /// `shape` positions in `0..n` (int32), with or without replacement, optionally with
    /// probabilities `p`.
    fn choice(
        &self,
        py: Python<'_>,
        n: usize,
        shape: Vec<usize>,
        replace: bool,
        p: Option<&PyArray>,
    ) -> PyResult<PyArray> {
        let p = p.map(|a| a.0.clone());
        py.detach(|| self.with(|g| g.choice(n, &shape, replace, p.as_ref())))
            .map(PyArray)
    }
}
