//! Adapters and the bottom of a device: discovery, classification and selection
//! ([`adapter`]), the wgpu handle of an opened device (`core`, crate-private) and its measured
//! per-device choices (`tune`, crate-private).
//!
//! Backends searched: `WGPU_BACKEND` if set (e.g. `vulkan`, `vulkan,gl`), else Vulkan, Metal
//! and DX12, and OpenGL only when those find nothing. The order and numbering of adapters,
//! and selection by spec, are in [`adapter`]. The [`crate::runtime::Device`] handle that users
//! hold is assembled above this layer, from a `DeviceCore` and the pool, pipeline
//! cache and profiler built on it.

pub mod adapter;
pub mod coop;
pub(crate) mod core;
pub(crate) mod tune;

pub use adapter::{
    arrange, format_table, select, AdapterDesc, ComputeFeatures, ComputeLimits, DeviceKind, Vendor,
};
pub use coop::{CoopMatrix, CoopScalar};

use crate::config::Config;
use crate::device::adapter::arrange_with;
use crate::error::Result;

/// Every visible adapter with its wgpu handle, in the documented order.
pub(crate) fn enumerate(config: &Config) -> Result<Vec<(AdapterDesc, wgpu::Adapter)>> {
    crate::config::quiet_headless_vulkan();
    let (backends, explicit) = config.backends_to_search();
    let mut desc = wgpu::InstanceDescriptor::new_without_display_handle();
    desc.backends = backends;
    let instance = wgpu::Instance::new(desc);
    let mut adapters = pollster::block_on(instance.enumerate_adapters(backends));
    if adapters.is_empty() && !explicit {
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

/// The backends `config` searches, for messages (`"vulkan, metal, dx12"`).
pub(crate) fn searched(config: &Config) -> String {
    let (b, explicit) = config.backends_to_search();
    let b = if explicit { b } else { b | wgpu::Backends::GL };
    b.iter_names()
        .map(|(n, _)| n.to_ascii_lowercase())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Lists the visible adapters in the documented order (see [`adapter`]), honouring
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
