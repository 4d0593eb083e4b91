//! Adapters and devices: `suanli.devices()`, `suanli.is_gpu_available()`, `suanli.Device`.

use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::errors::IntoPy;

/// One adapter as `suanli.devices()` lists it.
#[pyclass(module = "suanli._native", name = "DeviceInfo", frozen, get_all)]
pub struct PyDeviceInfo {
    /// Position in `devices()`.
    pub index: usize,
    /// The spec that selects it: `gpu:0`, `cpu:0`, …
    pub spec: String,
    /// The adapter's name.
    pub name: String,
    /// `discrete`, `integrated`, `virtual`, `software`, …
    pub kind: String,
    /// `vulkan`, `metal`, `dx12`, `gl`.
    pub backend: String,
    /// `nvidia`, `amd`, `intel`, `apple`, `mesa`, …
    pub vendor: String,
    /// The driver and its version.
    pub driver: String,
    /// Device memory in bytes where the driver reports it (NVML, sysfs), else None.
    pub memory: Option<u64>,
    /// The subgroup size when the adapter fixes one, else None (a range, or no subgroups).
    pub subgroup_size: Option<u32>,
    /// Smallest and largest subgroup size the adapter reports ((0, 0): none).
    pub subgroup_range: (u32, u32),
    /// Largest buffer in bytes.
    pub max_buffer_size: u64,
    /// Largest storage-buffer binding in bytes.
    pub max_storage_binding: u64,
    /// True for hardware GPUs, False for software adapters.
    pub is_gpu: bool,
    /// `f64` in shaders (with `shader_int64`, what `suanli.numpy.float64` needs).
    pub shader_f64: bool,
    /// 64-bit integers in shaders.
    pub shader_int64: bool,
}

impl PyDeviceInfo {
    fn new(d: &suanli::AdapterDesc, memory: Option<u64>) -> Self {
        let (lo, hi) = d.limits.subgroup_size;
        PyDeviceInfo {
            index: d.index,
            spec: d.spec().to_string(),
            name: d.name.clone(),
            kind: d.kind.to_string(),
            backend: d.backend.to_string(),
            vendor: d.vendor.to_string(),
            driver: format!("{} {}", d.driver, d.driver_info).trim().to_string(),
            memory,
            subgroup_size: (lo == hi && lo > 0).then_some(lo),
            subgroup_range: (lo, hi),
            max_buffer_size: d.limits.max_buffer_size,
            max_storage_binding: d.limits.max_storage_binding,
            is_gpu: d.is_gpu(),
            shader_f64: d.features.shader_f64,
            shader_int64: d.features.shader_int64,
        }
    }
}

#[pymethods]
impl PyDeviceInfo {
    fn __repr__(&self) -> String {
        format!(
            "DeviceInfo(spec={:?}, name={:?}, kind={:?}, backend={:?}, vendor={:?}, subgroup_size={})",
            self.spec,
            self.name,
            self.kind,
            self.backend,
            self.vendor,
            self.subgroup_size
                .map_or("None".to_string(), |s| s.to_string())
        )
    }
}

/// Every adapter, in selection order, after SUANLI_VISIBLE_DEVICES / suanli.toml.
#[pyfunction]
pub fn devices(py: Python<'_>) -> PyResult<Vec<PyDeviceInfo>> {
    let list = py.detach(suanli::telemetry::snapshot).py()?;
    Ok(list
        .iter()
        .map(|(d, r)| PyDeviceInfo::new(d, r.memory_total))
        .collect())
}

/// Whether a hardware GPU is visible (software adapters do not count).
#[pyfunction]
pub fn is_gpu_available(py: Python<'_>) -> bool {
    py.detach(suanli::is_gpu_available)
}

/// An opened device. Models and tensors live on one; `suanli.device(spec)` selects it.
#[pyclass(module = "suanli._native", name = "Device", frozen)]
pub struct PyDevice(pub suanli::Device);

#[pymethods]
impl PyDevice {
    /// Opens the adapter `spec` selects: `auto`, `gpu:0`, `/GPU:0`, `cpu`, `vulkan:1`, a
    /// name fragment…; None opens the configured default (SUANLI_DEVICE, suanli.toml, else
    /// `auto`). SUANLI_VISIBLE_DEVICES and the memory limit apply either way.
    #[new]
    #[pyo3(signature = (spec = None))]
    fn new(py: Python<'_>, spec: Option<String>) -> PyResult<Self> {
        py.detach(move || match spec {
            Some(s) => suanli::Device::open(&s),
            None => suanli::Device::default_device(),
        })
        .py()
        .map(PyDevice)
    }

    /// The adapter's name.
    #[getter]
    fn name(&self) -> String {
        self.0.name().to_owned()
    }

    /// The spec that selects this adapter (`gpu:0`, `cpu:0`, …).
    #[getter]
    fn spec(&self) -> String {
        self.0.info().spec().to_string()
    }

    /// True for a hardware GPU.
    #[getter]
    fn is_gpu(&self) -> bool {
        self.0.is_gpu()
    }

    /// The adapter's description.
    #[getter]
    fn info(&self) -> PyDeviceInfo {
        PyDeviceInfo::new(self.0.info(), None)
    }

    /// Pool statistics in bytes and counts.
    fn memory_stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let m = self.0.memory_stats();
        let d = PyDict::new(py);
        d.set_item("in_use", m.in_use)?;
        d.set_item("cached", m.cached)?;
        d.set_item("peak_in_use", m.peak_in_use)?;
        d.set_item("allocations", m.allocations)?;
        d.set_item("hits", m.hits)?;
        d.set_item("misses", m.misses)?;
        d.set_item("limit", m.limit)?;
        d.set_item("breakdown", m.breakdown())?;
        Ok(d)
    }

    /// Returns the pool's cached (free) buffers to the driver (CuPy's `free_all_blocks`).
    fn empty_cache(&self) {
        self.0.empty_cache();
    }

    /// Starts or stops counting and timing dispatches (see `profile`).
    fn set_profiling(&self, on: bool) {
        self.0.set_profiling(on);
    }

    /// Forgets the dispatches counted so far.
    fn reset_profile(&self) {
        self.0.reset_profile();
    }

    /// The dispatches counted while profiling: `{"kernels": [{"name", "calls", "total_ns"}],
    /// "untimed": count, "table": printable}` (waits for the timings).
    fn profile<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let p = py.detach(|| self.0.profile());
        let d = PyDict::new(py);
        let kernels = pyo3::types::PyList::empty(py);
        for k in &p.kernels {
            let e = PyDict::new(py);
            e.set_item("name", &k.name)?;
            e.set_item("calls", k.calls)?;
            e.set_item("total_ns", k.total_ns)?;
            e.set_item("gflops", k.gflops())?;
            e.set_item("gbps", k.gbps())?;
            kernels.append(e)?;
        }
        d.set_item("kernels", kernels)?;
        d.set_item("untimed", p.untimed)?;
        d.set_item("table", p.table(usize::MAX))?;
        Ok(d)
    }

    /// Writes the timed dispatches as a Chrome trace (chrome://tracing, ui.perfetto.dev).
    fn write_chrome_trace(&self, py: Python<'_>, path: std::path::PathBuf) -> PyResult<()> {
        py.detach(|| self.0.write_chrome_trace(&path)).py()
    }

    /// Waits until all submitted work has finished.
    fn synchronize(&self, py: Python<'_>) -> PyResult<()> {
        py.detach(|| self.0.synchronize()).py()
    }

    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other
            .cast::<PyDevice>()
            .map(|o| o.get().0.id() == self.0.id())
            .unwrap_or(false)
    }

    fn __hash__(&self) -> u64 {
        self.0.id()
    }

    fn __repr__(&self) -> String {
        format!(
            "Device({:?}, spec={:?}, {})",
            self.0.name(),
            self.spec(),
            if self.0.is_gpu() { "GPU" } else { "software" }
        )
    }
}
