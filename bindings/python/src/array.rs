//! N-dimensional arrays (`suanli.numpy`): the crate's `suanli::array::Array` with a small
//! native surface; the namespace, operators and argument handling are Python
//! (`python/suanli/numpy/`). Operations that only build an expression hold the GIL (they
//! cost microseconds and touch no device); those that run or wait release it.

use pyo3::exceptions::{PyOverflowError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyTuple};
use suanli::array::fft::Norm;
use suanli::array::{Array, Binary, DType, Index, Indexer, Reduce, Scalar, Unary};

use crate::device::PyDevice;
use crate::errors::IntoPy;
use crate::tensor::PyTensor;

/// An array on a device (see `suanli.numpy.ndarray`, which wraps it).
#[pyclass(module = "suanli._native", name = "Array", frozen)]
pub struct PyArray(pub Array);

fn dtype(name: &str) -> PyResult<DType> {
    DType::from_name(name).map_err(|e| PyTypeError::new_err(e.to_string()))
}

fn scalar(v: &Bound<'_, PyAny>) -> PyResult<Scalar> {
    // bool before int: Python's bool is an int.
    if v.is_instance_of::<pyo3::types::PyBool>() {
        return Ok(Scalar::Bool(v.extract()?));
    }
    if v.is_instance_of::<pyo3::types::PyInt>() {
        // 128 bits hold every int64 and uint64 value; whether this one fits the array's
        // dtype is the operation's check (`int_overflow`).
        return v.extract::<i128>().map(Scalar::Int).map_err(|_| {
            PyOverflowError::new_err(format!(
                "a Python integer of at most 128 bits as a scalar operand, found {v}"
            ))
        });
    }
    if let Ok(c) = v.cast::<pyo3::types::PyComplex>() {
        return Ok(Scalar::Complex(c.real(), c.imag()));
    }
    if let Ok(f) = v.extract::<f64>() {
        return Ok(Scalar::Float(f));
    }
    Err(PyTypeError::new_err(format!(
        "expected an array or a Python bool, int, float or complex, found {}",
        v.get_type().name()?
    )))
}

/// NumPy raises `OverflowError` for a Python integer its array's dtype cannot hold
/// (`int8 + 1000`); the crate reports it as an invalid `scalar` argument.
fn int_overflow(r: suanli::Result<Array>) -> PyResult<PyArray> {
    match r {
        Err(e @ suanli::Error::InvalidArgument { name: "scalar", .. }) => {
            Err(PyOverflowError::new_err(e.to_string()))
        }
        r => r.py().map(PyArray),
    }
}

fn reduce_op(name: &str) -> PyResult<Reduce> {
    Ok(match name {
        "sum" => Reduce::Sum,
        "prod" => Reduce::Prod,
        "min" => Reduce::Min,
        "max" => Reduce::Max,
        "any" => Reduce::Any,
        "all" => Reduce::All,
        "argmin" => Reduce::ArgMin,
        "argmax" => Reduce::ArgMax,
        _ => return Err(PyValueError::new_err(format!("unknown reduction {name:?}"))),
    })
}

/// One entry of a parsed index: ("i", n), ("s", start, stop, step), ("n",), ("e",) or
/// ("a", array) (an integer array or a boolean mask).
fn index_entry(t: &Bound<'_, PyTuple>) -> PyResult<Indexer> {
    let kind: String = t.get_item(0)?.extract()?;
    Ok(Indexer::Basic(match kind.as_str() {
        "i" => Index::At(t.get_item(1)?.extract()?),
        "s" => Index::Slice {
            start: t.get_item(1)?.extract()?,
            stop: t.get_item(2)?.extract()?,
            step: t.get_item(3)?.extract()?,
        },
        "n" => Index::NewAxis,
        "e" => Index::Ellipsis,
        "a" => {
            let a = t.get_item(1)?;
            return Ok(Indexer::Array(a.cast::<PyArray>()?.get().0.clone()));
        }
        _ => return Err(PyValueError::new_err(format!("bad index entry {kind:?}"))),
    }))
}

#[pymethods]
impl PyArray {
    /// An array from C-contiguous host bytes of `dtype` (NumPy's `tobytes()`).
    #[staticmethod]
    fn from_bytes(
        py: Python<'_>,
        data: &[u8],
        dtype_name: &str,
        shape: Vec<usize>,
        device: &PyDevice,
    ) -> PyResult<PyArray> {
        let d = dtype(dtype_name)?;
        py.detach(|| Array::from_bytes(&device.0, d, data, &shape))
            .py()
            .map(PyArray)
    }

    /// `shape` filled with `value` (a Python number) as `dtype`.
    #[staticmethod]
    fn full(
        shape: Vec<usize>,
        value: f64,
        dtype_name: &str,
        device: &PyDevice,
    ) -> PyResult<PyArray> {
        Array::full(&device.0, &shape, value, dtype(dtype_name)?)
            .py()
            .map(PyArray)
    }

    /// An array of undefined contents.
    #[staticmethod]
    fn empty(shape: Vec<usize>, dtype_name: &str, device: &PyDevice) -> PyResult<PyArray> {
        Array::empty(&device.0, &shape, dtype(dtype_name)?)
            .py()
            .map(PyArray)
    }

    /// NumPy's `arange`.
    #[staticmethod]
    fn arange(
        start: f64,
        stop: f64,
        step: f64,
        dtype_name: &str,
        device: &PyDevice,
    ) -> PyResult<PyArray> {
        Array::arange(&device.0, start, stop, step, dtype(dtype_name)?)
            .py()
            .map(PyArray)
    }

    /// NumPy's `linspace`.
    #[staticmethod]
    fn linspace(
        start: f64,
        stop: f64,
        num: usize,
        endpoint: bool,
        dtype_name: &str,
        device: &PyDevice,
    ) -> PyResult<PyArray> {
        Array::linspace(&device.0, start, stop, num, endpoint, dtype(dtype_name)?)
            .py()
            .map(PyArray)
    }

    /// NumPy's `eye`.
    #[staticmethod]
    fn eye(n: usize, m: usize, k: isize, dtype_name: &str, device: &PyDevice) -> PyResult<PyArray> {
        Array::eye(&device.0, n, m, k, dtype(dtype_name)?)
            .py()
            .map(PyArray)
    }

    /// `where(cond, a, b)`.
    #[staticmethod]
    fn where_(cond: &PyArray, a: &PyArray, b: &PyArray) -> PyResult<PyArray> {
        Array::where_(&cond.0, &a.0, &b.0).py().map(PyArray)
    }

    /// A 0-d array of a Python scalar in the dtype it takes beside this array.
    fn scalar_like(&self, value: &Bound<'_, PyAny>) -> PyResult<PyArray> {
        int_overflow(self.0.scalar_like("asarray", scalar(value)?))
    }

    /// A 0-d complex64 array of `re + im·j`.
    #[staticmethod]
    fn complex_scalar(re: f64, im: f64, device: &PyDevice) -> PyArray {
        PyArray(Array::complex_scalar(&device.0, re, im))
    }

    /// `fft` (`inverse`: `ifft`) along `axis`, of length `n` (None: the axis's), with the
    /// standard's `norm`.
    fn fft(
        &self,
        py: Python<'_>,
        n: Option<usize>,
        axis: isize,
        norm: &str,
        inverse: bool,
    ) -> PyResult<PyArray> {
        let norm = Norm::from_name(norm).py()?;
        py.detach(|| {
            if inverse {
                self.0.ifft(n, axis, norm)
            } else {
                self.0.fft(n, axis, norm)
            }
        })
        .py()
        .map(PyArray)
    }

    /// `rfft` along `axis` (real input).
    fn rfft(&self, py: Python<'_>, n: Option<usize>, axis: isize, norm: &str) -> PyResult<PyArray> {
        let norm = Norm::from_name(norm).py()?;
        py.detach(|| self.0.rfft(n, axis, norm)).py().map(PyArray)
    }

    /// `irfft` along `axis` (real output of length `n`, default `2·(m - 1)`).
    fn irfft(
        &self,
        py: Python<'_>,
        n: Option<usize>,
        axis: isize,
        norm: &str,
    ) -> PyResult<PyArray> {
        let norm = Norm::from_name(norm).py()?;
        py.detach(|| self.0.irfft(n, axis, norm)).py().map(PyArray)
    }

    /// A 0-d array of `value` as `dtype`.
    #[staticmethod]
    fn scalar(value: f64, dtype_name: &str, device: &PyDevice) -> PyResult<PyArray> {
        Ok(PyArray(Array::scalar(&device.0, value, dtype(dtype_name)?)))
    }

    /// Shares an f32 Tensor's buffer.
    #[staticmethod]
    fn from_tensor(t: &PyTensor) -> PyResult<PyArray> {
        Array::from_tensor(&t.0).py().map(PyArray)
    }

    /// As an f32 Tensor (shared when the layout allows).
    fn to_tensor(&self, py: Python<'_>) -> PyResult<PyTensor> {
        py.detach(|| self.0.to_tensor()).py().map(PyTensor)
    }

    #[getter]
    fn shape<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, self.0.shape())
    }

    #[getter]
    fn dtype_name(&self) -> &'static str {
        self.0.dtype().name()
    }

    #[getter]
    fn device(&self) -> PyDevice {
        PyDevice(self.0.device().clone())
    }

    /// Whether the values are computed (an expression waiting to run is not).
    #[getter]
    fn evaluated(&self) -> bool {
        self.0.is_evaluated()
    }

    /// The elements in C order as host bytes of the dtype's width (waits).
    fn to_bytes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let v = py.detach(|| self.0.to_bytes()).py()?;
        Ok(PyBytes::new(py, &v))
    }

    /// Runs a pending expression (queued; does not wait).
    fn eval(&self, py: Python<'_>) -> PyResult<()> {
        py.detach(|| self.0.eval()).py()
    }

    /// A unary elementwise function by its standard name.
    fn unary(&self, name: &str) -> PyResult<PyArray> {
        let op = Unary::from_name(name)
            .ok_or_else(|| PyValueError::new_err(format!("unknown function {name:?}")))?;
        self.0.unary(op).py().map(PyArray)
    }

    /// A binary elementwise function with another array.
    fn binary(&self, name: &str, other: &PyArray) -> PyResult<PyArray> {
        let op = Binary::from_name(name)
            .ok_or_else(|| PyValueError::new_err(format!("unknown function {name:?}")))?;
        self.0.binary(op, &other.0).py().map(PyArray)
    }

    /// A binary elementwise function with a Python scalar (`reflected`: the scalar first).
    fn binary_scalar(
        &self,
        name: &str,
        value: &Bound<'_, PyAny>,
        reflected: bool,
    ) -> PyResult<PyArray> {
        let op = Binary::from_name(name)
            .ok_or_else(|| PyValueError::new_err(format!("unknown function {name:?}")))?;
        let s = scalar(value)?;
        int_overflow(if reflected {
            self.0.scalar_binary(s, op)
        } else {
            self.0.binary_scalar(op, s)
        })
    }

    /// The array as `dtype` (itself when it is).
    fn astype(&self, dtype_name: &str) -> PyResult<PyArray> {
        self.0.astype(dtype(dtype_name)?).py().map(PyArray)
    }

    /// `x[...]` from parsed entries (see `index_entry`): a view for basic entries, a copy
    /// with integer arrays or masks.
    fn index(&self, py: Python<'_>, entries: Vec<Bound<'_, PyTuple>>) -> PyResult<PyArray> {
        let idx: Vec<Indexer> = entries.iter().map(index_entry).collect::<PyResult<_>>()?;
        py.detach(|| self.0.getitem(&idx)).py().map(PyArray)
    }

    /// `x[...] = value` from parsed entries, in place.
    fn setitem(
        &self,
        py: Python<'_>,
        entries: Vec<Bound<'_, PyTuple>>,
        value: &PyArray,
    ) -> PyResult<()> {
        let idx: Vec<Indexer> = entries.iter().map(index_entry).collect::<PyResult<_>>()?;
        py.detach(|| self.0.setitem(&idx, &value.0)).py()
    }

    fn permute_dims(&self, py: Python<'_>, axes: Vec<usize>) -> PyResult<PyArray> {
        py.detach(|| self.0.permute_dims(&axes)).py().map(PyArray)
    }

    fn broadcast_to(&self, py: Python<'_>, shape: Vec<usize>) -> PyResult<PyArray> {
        py.detach(|| self.0.broadcast_to(&shape)).py().map(PyArray)
    }

    fn expand_dims(&self, py: Python<'_>, axis: usize) -> PyResult<PyArray> {
        py.detach(|| self.0.expand_dims(axis)).py().map(PyArray)
    }

    fn squeeze(&self, py: Python<'_>, axes: Vec<usize>) -> PyResult<PyArray> {
        py.detach(|| self.0.squeeze(&axes)).py().map(PyArray)
    }

    /// `reshape`, with -1 for one inferred extent.
    fn reshape(&self, py: Python<'_>, shape: Vec<i64>) -> PyResult<PyArray> {
        let mut s: Vec<Option<usize>> = Vec::new();
        for d in shape {
            s.push(match d {
                -1 => None,
                d if d >= 0 => Some(d as usize),
                d => {
                    return Err(PyValueError::new_err(format!(
                        "reshape: expected extents >= 0 or one -1, found {d}"
                    )))
                }
            });
        }
        py.detach(|| self.0.reshape(&s)).py().map(PyArray)
    }

    fn copy(&self, py: Python<'_>) -> PyResult<PyArray> {
        py.detach(|| self.0.copy()).py().map(PyArray)
    }

    /// Writes `value` (broadcast, converted) into this array's elements.
    fn assign(&self, py: Python<'_>, value: &PyArray) -> PyResult<()> {
        py.detach(|| self.0.assign(&value.0)).py()
    }

    /// A reduction by name over `axes` (None: all).
    fn reduce(
        &self,
        py: Python<'_>,
        name: &str,
        axes: Option<Vec<isize>>,
        keepdims: bool,
    ) -> PyResult<PyArray> {
        let op = reduce_op(name)?;
        py.detach(|| self.0.reduce(op, axes.as_deref(), keepdims))
            .py()
            .map(PyArray)
    }

    fn mean(&self, py: Python<'_>, axes: Option<Vec<isize>>, keepdims: bool) -> PyResult<PyArray> {
        py.detach(|| self.0.mean(axes.as_deref(), keepdims))
            .py()
            .map(PyArray)
    }

    fn var(
        &self,
        py: Python<'_>,
        axes: Option<Vec<isize>>,
        correction: f64,
        keepdims: bool,
    ) -> PyResult<PyArray> {
        py.detach(|| self.0.var(axes.as_deref(), correction, keepdims))
            .py()
            .map(PyArray)
    }

    fn std(
        &self,
        py: Python<'_>,
        axes: Option<Vec<isize>>,
        correction: f64,
        keepdims: bool,
    ) -> PyResult<PyArray> {
        py.detach(|| self.0.std(axes.as_deref(), correction, keepdims))
            .py()
            .map(PyArray)
    }

    /// `tril` (`upper` false) or `triu`.
    fn triangle(&self, k: isize, upper: bool) -> PyResult<PyArray> {
        self.0.triangle(k, upper).py().map(PyArray)
    }

    /// The matrix product (NumPy's broadcasting and 1-D rules).
    fn matmul(&self, py: Python<'_>, other: &PyArray) -> PyResult<PyArray> {
        py.detach(|| self.0.matmul(&other.0)).py().map(PyArray)
    }

    /// Whether two handles are the same array.
    fn same_as(&self, other: &PyArray) -> bool {
        self.0.same_as(&other.0)
    }
}
