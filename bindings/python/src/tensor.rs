//! Tensors (`suanli.asarray`, `Tensor.numpy()`, a few ops) and CuPy-style raw WGSL kernels.

use numpy::prelude::*;
use numpy::{PyArray1, PyArrayDyn};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyTuple};
use suanli::exec::pipeline::Access;
use suanli::{CustomKernel, Grid, KernelArg, Tensor};

use crate::convert;
use crate::device::PyDevice;
use crate::errors::IntoPy;

/// An f32 array resident on a device.
#[pyclass(module = "suanli._native", name = "Tensor", frozen)]
pub struct PyTensor(pub Tensor);

/// Uploads `obj` (any numeric array, any layout) to `device` as float32.
#[pyfunction]
pub fn asarray(py: Python<'_>, obj: &Bound<'_, PyAny>, device: &PyDevice) -> PyResult<PyTensor> {
    if let Ok(t) = obj.cast::<PyTensor>() {
        let t = &t.get().0;
        if t.device().same_as(&device.0) {
            return Ok(PyTensor(t.clone()));
        }
        let v = py.detach(|| t.to_vec()).py()?;
        let shape = t.shape().to_vec();
        return py
            .detach(|| Tensor::from_slice(&device.0, &v, &shape))
            .py()
            .map(PyTensor);
    }
    let (shape, values) = convert::values(obj, "asarray", false)?;
    let data = match values {
        convert::Values::F32(v) => v,
        convert::Values::U8(v) => v.into_iter().map(f32::from).collect(),
    };
    py.detach(|| Tensor::from_slice(&device.0, &data, &shape))
        .py()
        .map(PyTensor)
}

/// A tensor operand or a Python number.
fn operand<'a>(other: &'a Bound<'_, PyAny>) -> Option<Result<&'a Tensor, f32>> {
    if let Ok(t) = other.cast::<PyTensor>() {
        return Some(Ok(&t.get().0));
    }
    other.extract::<f32>().ok().map(Err)
}

#[pymethods]
impl PyTensor {
    /// The shape.
    #[getter]
    fn shape<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, self.0.shape())
    }

    /// Always "float32".
    #[getter]
    fn dtype(&self) -> &'static str {
        "float32"
    }

    /// Number of dimensions.
    #[getter]
    fn ndim(&self) -> usize {
        self.0.shape().len()
    }

    /// Number of elements.
    #[getter]
    fn size(&self) -> usize {
        self.0.numel()
    }

    /// The device it lives on.
    #[getter]
    fn device(&self) -> PyDevice {
        PyDevice(self.0.device().clone())
    }

    /// Copies the values back into a new float32 NumPy array of the same shape (waits for
    /// the work that writes it).
    fn numpy<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArrayDyn<f32>>> {
        let v = py.detach(|| self.0.to_vec()).py()?;
        PyArray1::from_vec(py, v).reshape(self.0.shape())
    }

    /// NumPy's array protocol: `np.asarray(tensor)` copies it back.
    #[pyo3(signature = (dtype = None, copy = None))]
    fn __array__<'py>(
        &self,
        py: Python<'py>,
        dtype: Option<Bound<'py, PyAny>>,
        copy: Option<bool>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let _ = copy; // always a fresh array
        let a = self.numpy(py)?.into_any();
        match dtype {
            Some(d) => a.call_method1("astype", (d,)),
            None => Ok(a),
        }
    }

    /// The same values in another shape (a view: no copy).
    fn reshape(&self, shape: Vec<usize>) -> PyResult<PyTensor> {
        self.0.reshape(&shape).py().map(PyTensor)
    }

    /// Matrix product of two 2-D tensors.
    fn matmul(&self, py: Python<'_>, other: &PyTensor) -> PyResult<PyTensor> {
        py.detach(|| self.0.matmul(&other.0)).py().map(PyTensor)
    }

    fn __matmul__(&self, py: Python<'_>, other: &PyTensor) -> PyResult<PyTensor> {
        self.matmul(py, other)
    }

    /// `self + other`: a tensor of the same shape, a row of the last dimension's length
    /// (added to every row, as a bias), or a number.
    fn __add__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let r = match operand(other) {
            Some(Ok(t)) if t.shape() != self.0.shape() && t.shape().len() == 1 => {
                py.detach(|| self.0.add_bias(t))
            }
            Some(Ok(t)) => py.detach(|| self.0.add(t)),
            Some(Err(s)) => py.detach(|| {
                Tensor::full(self.0.device(), self.0.shape(), s).and_then(|c| self.0.add(&c))
            }),
            None => return Ok(py.NotImplemented()),
        };
        Ok(PyTensor(r.py()?).into_pyobject(py)?.into_any().unbind())
    }

    fn __radd__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        self.__add__(py, other)
    }

    fn __sub__(&self, py: Python<'_>, other: &PyTensor) -> PyResult<PyTensor> {
        py.detach(|| self.0.sub(&other.0)).py().map(PyTensor)
    }

    /// `self * other`: elementwise with a tensor of the same shape, or scaled by a number.
    fn __mul__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let r = match operand(other) {
            Some(Ok(t)) => py.detach(|| self.0.mul(t)),
            Some(Err(s)) => py.detach(|| self.0.scale(s)),
            None => return Ok(py.NotImplemented()),
        };
        Ok(PyTensor(r.py()?).into_pyobject(py)?.into_any().unbind())
    }

    fn __rmul__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        self.__mul__(py, other)
    }

    /// max(x, 0).
    fn relu(&self, py: Python<'_>) -> PyResult<PyTensor> {
        py.detach(|| self.0.relu()).py().map(PyTensor)
    }

    /// 1 / (1 + e^-x).
    fn sigmoid(&self, py: Python<'_>) -> PyResult<PyTensor> {
        py.detach(|| self.0.sigmoid()).py().map(PyTensor)
    }

    /// tanh(x).
    fn tanh(&self, py: Python<'_>) -> PyResult<PyTensor> {
        py.detach(|| self.0.tanh()).py().map(PyTensor)
    }

    /// Mean over `axis` of a 2-D tensor (0: down the columns, 1: along the rows).
    #[pyo3(signature = (axis = 0))]
    fn mean(&self, py: Python<'_>, axis: usize) -> PyResult<PyTensor> {
        py.detach(|| self.0.mean(axis)).py().map(PyTensor)
    }

    /// The index of each row's largest value (a 2-D tensor's rows), as float32 indices.
    fn argmax_rows(&self, py: Python<'_>) -> PyResult<PyTensor> {
        py.detach(|| self.0.argmax_rows()).py().map(PyTensor)
    }

    /// Sum over `axis` of a 2-D tensor (0: down the columns, 1: along the rows).
    #[pyo3(signature = (axis = 0))]
    fn sum(&self, py: Python<'_>, axis: usize) -> PyResult<PyTensor> {
        py.detach(|| self.0.sum(axis)).py().map(PyTensor)
    }

    /// Softmax over `axis` (1: each row) of a 2-D tensor.
    #[pyo3(signature = (axis = 1))]
    fn softmax(&self, py: Python<'_>, axis: usize) -> PyResult<PyTensor> {
        py.detach(|| self.0.softmax(axis)).py().map(PyTensor)
    }

    fn __len__(&self) -> usize {
        self.0.shape().first().copied().unwrap_or(0)
    }

    /// As TensorFlow shows an eager tensor: shape, dtype and the values (read back; NumPy
    /// summarises large arrays).
    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let shape: Vec<String> = self.0.shape().iter().map(|d| d.to_string()).collect();
        let shape = match shape.len() {
            1 => format!("({},)", shape[0]),
            _ => format!("({})", shape.join(", ")),
        };
        let values = self.numpy(py)?.repr()?;
        Ok(format!(
            "<suanli.Tensor: shape={shape}, dtype=float32, device={:?}, numpy={values}>",
            self.0.device().name()
        ))
    }
}

/// A user's WGSL compute kernel, validated by naga and compiled once for a device.
#[pyclass(module = "suanli._native", name = "RawKernel", frozen)]
pub struct PyRawKernel {
    kernel: CustomKernel,
}

/// The bytes of a uniform value: bytes-like objects, or a NumPy array / scalar (`tobytes()`).
fn uniform_bytes(obj: &Bound<'_, PyAny>) -> PyResult<Vec<u8>> {
    if let Ok(b) = obj.cast::<PyBytes>() {
        return Ok(b.as_bytes().to_vec());
    }
    if obj.hasattr("tobytes")? {
        return obj.call_method0("tobytes")?.extract::<Vec<u8>>();
    }
    // Only buffers: `bytes(16)` of a Python int would be 16 zero bytes, not the number 16.
    let is_buffer = obj.cast::<pyo3::types::PyByteArray>().is_ok()
        || obj.is_instance(&obj.py().import("builtins")?.getattr("memoryview")?)?;
    let wrong = || {
        PyTypeError::new_err(format!(
            "uniforms: expected bytes, a bytearray/memoryview, or a NumPy array or scalar (e.g. np.array([n], np.uint32)); found {}",
            obj.get_type().name().map(|n| n.to_string()).unwrap_or_default()
        ))
    };
    if !is_buffer {
        return Err(wrong());
    }
    obj.py()
        .import("builtins")?
        .getattr("bytes")?
        .call1((obj,))
        .and_then(|b| b.extract::<Vec<u8>>())
        .map_err(|_| wrong())
}

#[pymethods]
impl PyRawKernel {
    /// Compiles `entry` of `source` for `device`. WGSL errors raise ValueError with the line
    /// and column; bindings must be `@group(0)`, numbered 0..n.
    #[new]
    #[pyo3(signature = (source, entry, device, name = None))]
    fn new(
        py: Python<'_>,
        source: &str,
        entry: &str,
        device: &PyDevice,
        name: Option<&str>,
    ) -> PyResult<Self> {
        let name = name.unwrap_or(entry);
        py.detach(|| CustomKernel::new(&device.0, name, source, entry))
            .py()
            .map(|kernel| PyRawKernel { kernel })
    }

    /// The bindings in order: (name, access) with access "read", "read_write" or "uniform".
    #[getter]
    fn bindings(&self) -> Vec<(String, String)> {
        self.kernel
            .bindings()
            .iter()
            .map(|b| {
                let a = match b.access {
                    Access::ReadOnly => "read",
                    Access::ReadWrite => "read_write",
                    Access::Uniform => "uniform",
                };
                (b.name.clone(), a.to_string())
            })
            .collect()
    }

    /// The entry point's `@workgroup_size`.
    #[getter]
    fn workgroup_size(&self) -> (u32, u32, u32) {
        let [x, y, z] = self.kernel.workgroup_size();
        (x, y, z)
    }

    /// Launches the kernel: `grid` is the number of invocations (an int: enough work-groups
    /// to cover it) or work-group counts (a tuple of 1 to 3 ints); `args` the tensors of the
    /// storage bindings in binding order; `uniforms` the value (or a list of values, in
    /// order) of the `var<uniform>` bindings. Everything is checked before anything runs.
    /// Returns at once; reading a tensor waits for the work that writes it.
    #[pyo3(signature = (grid, args, uniforms = None))]
    fn __call__(
        &self,
        py: Python<'_>,
        grid: &Bound<'_, PyAny>,
        args: &Bound<'_, PyAny>,
        uniforms: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let grid = if let Ok(n) = grid.extract::<u64>() {
            Grid::Elements(n)
        } else if let Ok(v) = grid.extract::<Vec<u32>>() {
            match v[..] {
                [x] => Grid::Workgroups(x, 1, 1),
                [x, y] => Grid::Workgroups(x, y, 1),
                [x, y, z] => Grid::Workgroups(x, y, z),
                _ => {
                    return Err(PyValueError::new_err(format!(
                        "grid: expected an invocation count or 1 to 3 work-group counts; found {} values",
                        v.len()
                    )))
                }
            }
        } else {
            return Err(PyTypeError::new_err(
                "grid: expected an int (invocations) or a tuple of 1 to 3 ints (work-groups)",
            ));
        };
        let tensors: Vec<Bound<'_, PyTensor>> = args
            .try_iter()
            .map_err(|_| PyTypeError::new_err("args: expected a tuple of suanli Tensors"))?
            .map(|a| {
                a.and_then(|a| {
                    a.cast_into::<PyTensor>().map_err(|e| {
                        PyTypeError::new_err(format!(
                            "args: expected suanli Tensors (suanli.asarray(array)); {e}"
                        ))
                    })
                })
            })
            .collect::<PyResult<_>>()?;
        let mut blobs: Vec<Vec<u8>> = Vec::new();
        if let Some(u) = uniforms {
            let many = u.cast::<pyo3::types::PyList>().is_ok() || u.cast::<PyTuple>().is_ok();
            if many {
                for item in u.try_iter()? {
                    blobs.push(uniform_bytes(&item?)?);
                }
            } else {
                blobs.push(uniform_bytes(u)?);
            }
        }
        let want_uniforms = self
            .kernel
            .bindings()
            .iter()
            .filter(|b| b.access == Access::Uniform)
            .count();
        let want_tensors = self.kernel.bindings().len() - want_uniforms;
        if tensors.len() != want_tensors || blobs.len() != want_uniforms {
            return Err(PyValueError::new_err(format!(
                "this kernel takes {want_tensors} tensor(s) and {want_uniforms} uniform(s) ({}); found {} tensor(s) and {} uniform(s)",
                self.bindings()
                    .iter()
                    .map(|(n, a)| format!("{n}: {a}"))
                    .collect::<Vec<_>>()
                    .join(", "),
                tensors.len(),
                blobs.len()
            )));
        }
        let (mut ti, mut ui) = (0, 0);
        let mut kargs: Vec<KernelArg<'_>> = Vec::with_capacity(self.kernel.bindings().len());
        for b in self.kernel.bindings() {
            if b.access == Access::Uniform {
                kargs.push(KernelArg::Uniform(&blobs[ui]));
                ui += 1;
            } else {
                kargs.push(KernelArg::Tensor(&tensors[ti].get().0));
                ti += 1;
            }
        }
        py.detach(|| self.kernel.launch(&kargs, grid)).py()
    }

    fn __repr__(&self) -> String {
        format!("RawKernel({:?})", self.kernel)
    }
}
