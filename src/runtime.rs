//! The [`Device`] handle: an opened adapter with its buffer pool, pipeline cache, profiler and
//! measured kernel choices.
//!
//! Each part is built on the device core below it and knows nothing of the others; this
//! module only assembles them, so what a device *is* can be read in one struct. Recording
//! work ([`crate::exec::Recorder`]), tensors and kernels sit above and take a `&Device`.
//!
//! # No global state
//! A `Device` is a cheap, clonable handle (an `Arc`). Nothing is process-global, so several
//! devices (or the same adapter opened twice) coexist in one process.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::config::{Config, DeviceSpec};
use crate::device::adapter::{no_adapter_error, select, AdapterDesc};
use crate::device::core::DeviceCore;
use crate::device::tune::TuneCache;
use crate::error::Result;
use crate::memory::{DriverMemory, MemoryStats, Pool};
use crate::services::pipeline::PipelineCache;
use crate::services::profile::{Profile, ProfileClock, Profiler, TraceEvent, UtilisationWindow};

struct Inner {
    core: Arc<DeviceCore>,
    pool: Pool,
    pipelines: PipelineCache,
    profiler: Arc<Profiler>,
    tune: TuneCache,
    config: Config,
}

/// A handle to an opened device: cheap to clone, `Send + Sync`, no global state.
///
/// ```no_run
/// let dev = suanli::Device::open("auto")?;
/// println!("running on {}", dev.name());
/// # Ok::<(), suanli::Error>(())
/// ```
#[derive(Clone)]
pub struct Device {
    inner: Arc<Inner>,
}

const _: () = {
    // A device is shared across threads (a DeviceGroup's workers, a user's pool of threads).
    const fn send_sync<T: Send + Sync>() {}
    send_sync::<Device>();
};

impl fmt::Debug for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let d = self.info();
        write!(f, "Device({} #{}, {})", d.spec(), self.id(), d.name)
    }
}

impl Device {
    /// Opens the device a spec string names (see [`DeviceSpec`]), with the configured
    /// visible devices and memory limit.
    pub fn open(spec: &str) -> Result<Device> {
        let spec: DeviceSpec = spec.parse()?;
        let mut config = Config::from_env()?;
        config.device = Some(spec);
        Device::with_config(&config)
    }

    /// Opens the configured default device (`SUANLI_DEVICE`, the config file, else `auto`).
    pub fn default_device() -> Result<Device> {
        Device::with_config(&Config::from_env()?)
    }

    /// Opens a device from an explicit configuration.
    pub fn with_config(config: &Config) -> Result<Device> {
        let spec = config.device.clone().unwrap_or(DeviceSpec::Auto);
        let mut all = crate::device::enumerate(config)?;
        if all.is_empty() {
            return Err(no_adapter_error(&crate::device::searched(config)));
        }
        let descs: Vec<AdapterDesc> = all.iter().map(|(d, _)| d.clone()).collect();
        let i = select(&spec, &descs)?;
        let (desc, adapter) = all.swap_remove(i);
        let core = Arc::new(DeviceCore::open(desc, adapter)?);
        let pool = Pool::new(config.memory_limit, core.desc().limits.max_buffer_size);
        let tune = TuneCache::new(core.desc(), config.cache_dir.clone());
        Ok(Device {
            inner: Arc::new(Inner {
                core,
                pool,
                pipelines: PipelineCache::default(),
                profiler: Arc::new(Profiler::default()),
                tune,
                config: config.clone(),
            }),
        })
    }

    /// The adapter this device was opened on.
    pub fn info(&self) -> &AdapterDesc {
        self.inner.core.desc()
    }

    /// The adapter's name.
    pub fn name(&self) -> &str {
        &self.info().name
    }

    /// True for a hardware GPU, false for a software adapter.
    pub fn is_gpu(&self) -> bool {
        self.info().is_gpu()
    }

    /// A process-unique id; two handles to the same opened device share it.
    pub fn id(&self) -> u64 {
        self.inner.core.id()
    }

    /// The configuration the device was opened with.
    pub fn config(&self) -> &Config {
        &self.inner.config
    }

    /// Pool statistics: bytes in use and cached, peak, allocations, hits and misses.
    pub fn memory_stats(&self) -> MemoryStats {
        self.inner.pool.stats()
    }

    /// The driver's view of this device's memory (wgpu's allocator report), where the backend
    /// gives one (Vulkan, DX12); `None` elsewhere.
    pub fn driver_memory(&self) -> Option<DriverMemory> {
        let r = self.wgpu_device().generate_allocator_report()?;
        Some(DriverMemory {
            allocated: r.total_allocated_bytes,
            reserved: r.total_reserved_bytes,
            blocks: r.blocks.len() as u64,
            allocations: r.allocations.len() as u64,
        })
    }

    /// Releases all cached (unused) buffers back to the driver.
    pub fn empty_cache(&self) {
        self.inner.pool.empty_cache()
    }

    /// Number of compute pipelines compiled and cached on this device.
    pub fn cached_pipelines(&self) -> usize {
        self.inner.pipelines.len()
    }

    /// The underlying wgpu device, for interop.
    pub fn wgpu_device(&self) -> &wgpu::Device {
        self.inner.core.device()
    }

    /// The underlying wgpu queue, for interop.
    pub fn wgpu_queue(&self) -> &wgpu::Queue {
        self.inner.core.queue()
    }

    /// The longest any wait for the GPU may take before it fails with
    /// [`Error::Timeout`](crate::error::Error::Timeout) (default 120 s), so a wedged driver
    /// is an error, not a hang.
    pub fn set_timeout(&self, timeout: Duration) {
        self.inner.core.set_timeout(timeout)
    }

    /// The wait timeout ([`Device::set_timeout`]).
    pub fn timeout(&self) -> Duration {
        self.inner.core.timeout()
    }

    /// True once the driver has reported the device lost.
    pub fn is_lost(&self) -> bool {
        self.inner.core.is_lost()
    }

    /// Blocks until all submitted work has finished (or the device's timeout passes).
    pub fn synchronize(&self) -> Result<()> {
        self.inner.core.wait(None, "synchronize")
    }

    /// The alignment of dynamic uniform offsets on this device (at least 256).
    pub fn uniform_alignment(&self) -> u64 {
        self.inner.core.uniform_alignment()
    }

    /// Turns the kernel profiler on (GPU timestamps around dispatches where the adapter has
    /// timestamp queries inside compute passes, at pass boundaries where it has them only
    /// there, the wall clock around submissions otherwise) or off.
    pub fn set_profiling(&self, on: bool) {
        self.inner.profiler.set_enabled(&self.inner.core, on)
    }

    /// Turns the profiler on with a given clock (see [`ProfileClock`]).
    pub fn set_profiling_clock(&self, clock: ProfileClock) -> Result<()> {
        self.inner.profiler.set_clock(&self.inner.core, clock)
    }

    /// Whether the profiler is on.
    pub fn profiling(&self) -> bool {
        self.inner.profiler.enabled()
    }

    /// Opens a utilisation window: its `utilisation()` is the fraction of the wall time since
    /// now during which this device's queue was busy.
    pub fn utilisation_window(&self) -> UtilisationWindow {
        self.inner.profiler.utilisation_window(&self.inner.core)
    }

    /// The profiler's per-kernel table so far.
    pub fn profile(&self) -> Profile {
        self.inner.profiler.profile()
    }

    /// Clears the profiler's table and trace.
    pub fn reset_profile(&self) {
        self.inner.profiler.reset()
    }

    /// The timed dispatches so far, in submission order.
    pub fn trace_events(&self) -> Vec<TraceEvent> {
        self.inner.profiler.trace_events()
    }

    /// Writes the timed dispatches as a Chrome trace (the format chrome://tracing and Perfetto read).
    pub fn write_chrome_trace(&self, path: &std::path::Path) -> Result<()> {
        self.inner.profiler.write_chrome_trace(path, self.name())
    }

    /// True if both handles are the same opened device.
    pub fn same_as(&self, other: &Device) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    /// The device core (wgpu handle, waits, mapping).
    pub(crate) fn core(&self) -> &DeviceCore {
        &self.inner.core
    }

    /// The buffer pool.
    pub(crate) fn pool(&self) -> &Pool {
        &self.inner.pool
    }

    /// The pipeline cache.
    pub(crate) fn pipelines(&self) -> &PipelineCache {
        &self.inner.pipelines
    }

    /// The profiler.
    pub(crate) fn profiler(&self) -> &Profiler {
        &self.inner.profiler
    }

    /// Measured kernel choices.
    pub(crate) fn tune(&self) -> &TuneCache {
        &self.inner.tune
    }

    /// The kernel choices the tuner has made (or loaded) on this device so far, as (kernel
    /// family, shape class, chosen variant), e.g. `("matmul", "large", "rb16x8")`: which
    /// kernel each class of shapes runs with, for reports such as `--profile`.
    pub fn tuned_choices(&self) -> Vec<(String, String, String)> {
        self.inner.tune.choices()
    }
}
