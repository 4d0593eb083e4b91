//! Adapter discovery, classification, selection, and the [`Device`] handle.
//!
//! Backends searched: `WGPU_BACKEND` if set (e.g. `vulkan`, `vulkan,gl`), else Vulkan, Metal and
//! DX12, and OpenGL only when those find nothing. The order and numbering of adapters, and
//! selection by spec, are in [`crate::adapter`].
//!
//! # No global state
//! A [`Device`] is a cheap, clonable handle (an `Arc`) that owns its wgpu device and queue,
//! its buffer pool and its pipeline cache. Nothing is process-global, so several devices (or
//! the same adapter opened twice) coexist in one process.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::adapter::arrange_with;
pub use crate::adapter::{
    arrange, format_table, select, AdapterDesc, ComputeFeatures, ComputeLimits, DeviceKind, Vendor,
};
use crate::config::{Config, DeviceSpec};
use crate::kernel::PipelineCache;
use crate::memory::{MemoryStats, Pool};
use crate::{Error, Result};

/// The backends to search: `WGPU_BACKEND` if set, else Vulkan, Metal and DX12.
pub(crate) fn backends_from_env() -> wgpu::Backends {
    wgpu::Backends::from_env().unwrap_or(wgpu::Backends::PRIMARY)
}

fn enumerate(config: &Config) -> Result<Vec<(AdapterDesc, wgpu::Adapter)>> {
    let mut desc = wgpu::InstanceDescriptor::new_without_display_handle();
    desc.backends = backends_from_env();
    let backends = desc.backends;
    let instance = wgpu::Instance::new(desc);
    let mut adapters = pollster::block_on(instance.enumerate_adapters(backends));
    if adapters.is_empty() && wgpu::Backends::from_env().is_none() {
        // Last resort: OpenGL/GLES (probing it by default makes EGL print noise on headless
        // machines, and its compute support is the weakest).
        let mut desc = wgpu::InstanceDescriptor::new_without_display_handle();
        desc.backends = wgpu::Backends::GL;
        let gl = wgpu::Instance::new(desc);
        adapters = pollster::block_on(gl.enumerate_adapters(wgpu::Backends::GL));
    }
    let raw = adapters
        .into_iter()
        .filter_map(|a| AdapterDesc::from_adapter(&a).map(|d| (d, a)))
        .collect();
    arrange_with(raw, config.visible_devices.as_deref())
}

/// Lists the visible adapters in the documented order (see the module docs), honouring
/// `SUANLI_VISIBLE_DEVICES`, `WGPU_BACKEND` and the config file.
///
/// ```no_run
/// for d in suanli::devices()? {
///     println!("{} {} ({})", d.spec(), d.name, d.kind);
/// }
/// # Ok::<(), suanli::Error>(())
/// ```
pub fn devices() -> Result<Vec<AdapterDesc>> {
    devices_with(&Config::from_env()?)
}

/// [`devices`] with an explicit configuration.
pub fn devices_with(config: &Config) -> Result<Vec<AdapterDesc>> {
    Ok(enumerate(config)?.into_iter().map(|(d, _)| d).collect())
}

/// True only when a hardware GPU is visible; a software adapter never counts.
pub fn is_gpu_available() -> bool {
    devices()
        .map(|v| v.iter().any(|d| d.gpu_index.is_some()))
        .unwrap_or(false)
}

static NEXT_DEVICE_ID: AtomicU64 = AtomicU64::new(1);

pub(crate) struct DeviceInner {
    pub(crate) id: u64,
    pub(crate) desc: AdapterDesc,
    pub(crate) device: wgpu::Device,
    pub(crate) queue: wgpu::Queue,
    pub(crate) pool: Pool,
    pub(crate) pipelines: PipelineCache,
    /// Errors wgpu reported outside any error scope, kept instead of panicking.
    pub(crate) uncaptured: Arc<Mutex<Vec<String>>>,
    /// Longest wait for the GPU, in milliseconds ([`Device::set_timeout`]).
    pub(crate) timeout_ms: std::sync::atomic::AtomicU64,
    /// Set by wgpu's device-lost callback.
    pub(crate) lost: Arc<Mutex<Option<String>>>,
    /// Kernel profiler (off by default).
    pub(crate) profiler: crate::profile::Profiler,
    /// A small storage buffer bound where a kernel's optional read-write slot is unused.
    pub(crate) dummy: std::sync::OnceLock<wgpu::Buffer>,
    /// The matmul kernel chosen for this device (tuned on first use).
    pub(crate) matmul_variant: std::sync::OnceLock<crate::kernels::matmul::Variant>,
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
    pub(crate) inner: Arc<DeviceInner>,
}

impl fmt::Debug for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Device({} #{}, {})",
            self.inner.desc.spec(),
            self.inner.id,
            self.inner.desc.name
        )
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
        let mut all = enumerate(config)?;
        let descs: Vec<AdapterDesc> = all.iter().map(|(d, _)| d.clone()).collect();
        let i = select(&spec, &descs)?;
        let (desc, adapter) = all.swap_remove(i);
        Device::from_adapter(desc, adapter, config.memory_limit)
    }

    fn from_adapter(
        desc: AdapterDesc,
        adapter: wgpu::Adapter,
        memory_limit: Option<u64>,
    ) -> Result<Device> {
        let wanted = wgpu::Features::SUBGROUP
            | wgpu::Features::SHADER_F16
            | wgpu::Features::TIMESTAMP_QUERY
            | wgpu::Features::TIMESTAMP_QUERY_INSIDE_PASSES
            | wgpu::Features::TIMESTAMP_QUERY_INSIDE_ENCODERS;
        let features = adapter.features() & wanted;
        let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
            label: Some("suanli"),
            required_features: features,
            required_limits: adapter.limits(),
            ..Default::default()
        }))
        .map_err(|e| Error::DeviceRequest {
            adapter: desc.name.clone(),
            message: e.to_string(),
        })?;
        let uncaptured = Arc::new(Mutex::new(Vec::new()));
        let sink = uncaptured.clone();
        device.on_uncaptured_error(Arc::new(move |e: wgpu::Error| {
            log::error!("uncaptured GPU error: {e}");
            if let Ok(mut v) = sink.lock() {
                v.push(e.to_string());
            }
        }));
        log::info!(
            "opened {} ({}, {}, {})",
            desc.name,
            desc.kind,
            desc.backend,
            desc.driver_info
        );
        if !desc.is_gpu() {
            log::warn!("{} is a software adapter: it runs on the CPU", desc.name);
        }
        let lost = Arc::new(Mutex::new(None));
        let flag = lost.clone();
        let name = desc.name.clone();
        device.set_device_lost_callback(move |reason, message| {
            log::error!("device {name} lost: {reason:?} {message}");
            if let Ok(mut l) = flag.lock() {
                *l = Some(format!("{reason:?}: {message}"));
            }
        });
        let pool = Pool::new(memory_limit, desc.limits.max_buffer_size);
        Ok(Device {
            inner: Arc::new(DeviceInner {
                id: NEXT_DEVICE_ID.fetch_add(1, Ordering::Relaxed),
                desc,
                device,
                queue,
                pool,
                pipelines: PipelineCache::default(),
                uncaptured,
                timeout_ms: std::sync::atomic::AtomicU64::new(120_000),
                lost,
                matmul_variant: std::sync::OnceLock::new(),
                dummy: std::sync::OnceLock::new(),
                profiler: crate::profile::Profiler::default(),
            }),
        })
    }

    /// The adapter this device was opened on.
    pub fn info(&self) -> &AdapterDesc {
        &self.inner.desc
    }

    /// The adapter's name.
    pub fn name(&self) -> &str {
        &self.inner.desc.name
    }

    /// True for a hardware GPU, false for a software adapter.
    pub fn is_gpu(&self) -> bool {
        self.inner.desc.is_gpu()
    }

    /// A process-unique id; two handles to the same opened device share it.
    pub fn id(&self) -> u64 {
        self.inner.id
    }

    /// Pool statistics: bytes in use and cached, peak, allocations, hits and misses.
    pub fn memory_stats(&self) -> MemoryStats {
        self.inner.pool.stats()
    }

    /// The driver's view of this device's memory (wgpu's allocator report), where the backend
    /// gives one (Vulkan, DX12); `None` elsewhere.
    pub fn driver_memory(&self) -> Option<crate::memory::DriverMemory> {
        let r = self.inner.device.generate_allocator_report()?;
        Some(crate::memory::DriverMemory {
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
        &self.inner.device
    }

    /// The underlying wgpu queue, for interop.
    pub fn wgpu_queue(&self) -> &wgpu::Queue {
        &self.inner.queue
    }

    /// The longest any wait for the GPU may take before it fails with [`Error::Timeout`]
    /// (default 120 s), so a wedged driver is an error, not a hang.
    pub fn set_timeout(&self, timeout: Duration) {
        let ms = timeout.as_millis().clamp(1, u64::MAX as u128) as u64;
        self.inner
            .timeout_ms
            .store(ms, std::sync::atomic::Ordering::Relaxed);
    }

    /// The wait timeout ([`Device::set_timeout`]).
    pub fn timeout(&self) -> Duration {
        Duration::from_millis(
            self.inner
                .timeout_ms
                .load(std::sync::atomic::Ordering::Relaxed),
        )
    }

    /// True once the driver has reported the device lost.
    pub fn is_lost(&self) -> bool {
        self.inner.lost.lock().map_or(true, |l| l.is_some())
    }

    /// `Err(DeviceLost)` once the device is lost.
    pub(crate) fn check_alive(&self, op: &'static str) -> Result<()> {
        let reason = match self.inner.lost.lock() {
            Ok(l) => l.clone(),
            Err(_) => Some("internal error: lost-flag lock poisoned".into()),
        };
        match reason {
            None => Ok(()),
            Some(reason) => Err(Error::DeviceLost {
                op,
                device: self.name().to_string(),
                reason,
            }),
        }
    }

    /// Blocks until all submitted work has finished (or the device's timeout passes).
    pub fn synchronize(&self) -> Result<()> {
        self.wait(None, "synchronize")
    }

    pub(crate) fn wait(
        &self,
        index: Option<wgpu::SubmissionIndex>,
        op: &'static str,
    ) -> Result<()> {
        self.check_alive(op)?;
        let timeout = self.timeout();
        match self.inner.device.poll(wgpu::PollType::Wait {
            submission_index: index,
            timeout: Some(timeout),
        }) {
            Ok(_) => {
                self.check_alive(op)?;
                self.take_uncaptured(op)
            }
            Err(wgpu::PollError::Timeout) => Err(Error::Timeout {
                op,
                seconds: timeout.as_secs_f64(),
            }),
            Err(e) => Err(Error::Gpu {
                op,
                message: e.to_string(),
            }),
        }
    }

    /// Turns errors wgpu reported outside error scopes into an `Error`.
    pub(crate) fn take_uncaptured(&self, op: &'static str) -> Result<()> {
        let mut v = match self.inner.uncaptured.lock() {
            Ok(v) => v,
            Err(p) => p.into_inner(),
        };
        if v.is_empty() {
            Ok(())
        } else {
            let message = v.join("; ");
            v.clear();
            Err(Error::Gpu { op, message })
        }
    }

    /// Runs `f` inside a wgpu error scope and returns what it caught as an [`Error::Gpu`].
    pub(crate) fn scoped<T>(&self, op: &'static str, f: impl FnOnce() -> T) -> Result<T> {
        let oom = self
            .inner
            .device
            .push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let val = self
            .inner
            .device
            .push_error_scope(wgpu::ErrorFilter::Validation);
        let out = f();
        let v = pollster::block_on(val.pop());
        let o = pollster::block_on(oom.pop());
        match (v, o) {
            (None, None) => Ok(out),
            (Some(e), _) | (None, Some(e)) => Err(Error::Gpu {
                op,
                message: e.to_string(),
            }),
        }
    }

    /// A 256-byte storage buffer that is never handed out by the pool: bound where a kernel's
    /// optional read-write slot is unused, so it never aliases a real operand.
    pub(crate) fn dummy_buffer(&self) -> &wgpu::Buffer {
        self.inner.dummy.get_or_init(|| {
            self.inner.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("suanli dummy"),
                size: 256,
                usage: crate::memory::POOL_USAGE,
                mapped_at_creation: false,
            })
        })
    }

    pub(crate) fn same_as(&self, other: &Device) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }
}
