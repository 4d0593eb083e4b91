//! NVIDIA telemetry through NVML, loaded at run time (`libnvidia-ml.so` / `nvml.dll`) by the
//! `nvml-wrapper` crate: nothing NVIDIA is needed to build, and where the library or driver
//! is absent [`status`] says why and the adapter's readings are `n/a`.
//!
//! `SUANLI_NVML_LIB` names the library file where it is not on the loader's path (containers
//! that mount the driver elsewhere, WSL's `/usr/lib/wsl/lib/libnvidia-ml.so.1`); the tests
//! point it at a fake (`tests/fixtures/fake_nvml.c`) to run this path without NVIDIA.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;
use std::sync::{Arc, OnceLock};

use nvml_wrapper::bitmasks::device::ThrottleReasons;
use nvml_wrapper::enum_wrappers::device::{Clock, TemperatureSensor};
use nvml_wrapper::enums::device::UsedGpuMemory;
use nvml_wrapper::error::NvmlError;
use nvml_wrapper::Nvml;

use crate::telemetry::processes::DeviceProcess;
use crate::telemetry::reading::{PciAddress, Reading, Sensor};

/// The environment variable naming the NVML library file.
pub const LIB_ENV: &str = "SUANLI_NVML_LIB";

/// NVML, initialised once per process (or the reason it could not be).
fn nvml() -> Result<Arc<Nvml>, String> {
    static NVML: OnceLock<Result<Arc<Nvml>, String>> = OnceLock::new();
    NVML.get_or_init(|| {
        let path = std::env::var_os(LIB_ENV).filter(|p| !p.is_empty());
        let nvml = match &path {
            Some(p) => Nvml::builder()
                .lib_path(p)
                .init()
                .map_err(|e| format!("{e} (loading {} from {LIB_ENV})", p.to_string_lossy())),
            None => Nvml::init().map_err(|e| e.to_string()),
        };
        nvml.map(Arc::new)
    })
    .clone()
}

/// Whether NVML could be loaded here, and if not, why (for reports).
pub fn status() -> Result<(), String> {
    nvml().map(|_| ())
}

/// A sensor for the NVIDIA GPU at `pci`, or why there is none.
pub(crate) fn open(pci: PciAddress) -> Result<NvmlSensor, String> {
    let nvml = nvml()?;
    // NVML spells the domain with 8 digits; look the device up once to prove it is there.
    let bus_id = pci.nvml_string();
    nvml.device_by_pci_bus_id(bus_id.as_str())
        .map_err(|e| format!("NVML has no device at {bus_id}: {e}"))?;
    Ok(NvmlSensor { nvml, bus_id })
}

/// An NVML value: `None` where the GPU does not support it, and also, counted in `errors`,
/// where the call failed.
fn ok<T>(v: Result<T, NvmlError>, errors: &mut u32) -> Option<T> {
    match v {
        Ok(v) => Some(v),
        Err(NvmlError::NotSupported) => None,
        Err(_) => {
            *errors += 1;
            None
        }
    }
}

/// Reads one NVIDIA GPU through NVML.
pub struct NvmlSensor {
    nvml: Arc<Nvml>,
    bus_id: String,
}

impl Sensor for NvmlSensor {
    fn source(&self) -> String {
        "nvml".into()
    }

    fn read(&mut self) -> Reading {
        let mut r = Reading::unavailable("nvml");
        let d = match self.nvml.device_by_pci_bus_id(self.bus_id.as_str()) {
            Ok(d) => d,
            Err(_) => {
                r.errors = 1;
                return r;
            }
        };
        // NotSupported: the GPU has no such sensor (`None`); any other error counts.
        let mut e = 0u32;
        r.utilisation = ok(d.utilization_rates().map(|u| u.gpu as f64), &mut e);
        if let Some(m) = ok(d.memory_info(), &mut e) {
            r.memory_used = Some(m.used);
            r.memory_total = Some(m.total);
        }
        r.temperature_c = ok(d.temperature(TemperatureSensor::Gpu).map(f64::from), &mut e);
        r.power_w = ok(d.power_usage().map(|mw| mw as f64 / 1e3), &mut e);
        r.power_limit_w = ok(d.enforced_power_limit().map(|mw| mw as f64 / 1e3), &mut e);
        r.graphics_clock_mhz = ok(d.clock_info(Clock::Graphics).map(f64::from), &mut e);
        r.memory_clock_mhz = ok(d.clock_info(Clock::Memory).map(f64::from), &mut e);
        let slow = ThrottleReasons::HW_SLOWDOWN
            | ThrottleReasons::SW_THERMAL_SLOWDOWN
            | ThrottleReasons::HW_THERMAL_SLOWDOWN
            | ThrottleReasons::SW_POWER_CAP
            | ThrottleReasons::HW_POWER_BRAKE_SLOWDOWN;
        r.throttled = ok(d.current_throttle_reasons(), &mut e).map(|t| t.intersects(slow));
        r.errors = e;
        r
    }
}

/// The processes with a compute or graphics context on the NVIDIA GPU at `pci` (NVML lists a
/// process with both in both lists: it is counted once), with the memory NVML attributes to
/// it; names from `proc_root` (normally `/proc`). NVIDIA's driver writes no DRM fdinfo, so
/// this is where `suanli-smi --processes` learns about NVIDIA GPUs.
pub(crate) fn processes(pci: PciAddress, proc_root: &Path) -> Result<Vec<DeviceProcess>, String> {
    let nvml = nvml()?;
    let bus_id = pci.nvml_string();
    let d = nvml
        .device_by_pci_bus_id(bus_id.as_str())
        .map_err(|e| format!("NVML has no device at {bus_id}: {e}"))?;
    let mut lists = Vec::new();
    let mut failed = Vec::new();
    for (kind, list) in [
        ("compute", d.running_compute_processes()),
        ("graphics", d.running_graphics_processes()),
    ] {
        match list {
            Ok(l) => lists.extend(l),
            Err(NvmlError::NotSupported) => {}
            Err(e) => failed.push(format!("{kind}: {e}")),
        }
    }
    if lists.is_empty() && !failed.is_empty() {
        return Err(format!(
            "NVML cannot list processes on {bus_id}: {}",
            failed.join("; ")
        ));
    }
    let mut out: BTreeMap<u32, DeviceProcess> = BTreeMap::new();
    for p in lists {
        let mem = match p.used_gpu_memory {
            UsedGpuMemory::Used(b) => Some(b),
            UsedGpuMemory::Unavailable => None,
        };
        let e = out.entry(p.pid).or_insert_with(|| DeviceProcess {
            pci_bus_id: pci.linux_string(),
            pid: p.pid,
            name: fs::read_to_string(proc_root.join(p.pid.to_string()).join("comm"))
                .map(|s| s.trim().to_string())
                .unwrap_or_default(),
            driver: "nvidia".into(),
            clients: 1,
            memory_bytes: None,
            engine_ns: None,
        });
        // The same allocation is reported in each list: the larger figure, not the sum.
        e.memory_bytes = e.memory_bytes.max(mem);
    }
    Ok(out.into_values().collect())
}

/// Sets the power limit of the NVIDIA GPU at `pci` to `watts` (needs root): the limit before
/// and the range NVML allows, both in W; or why not.
pub(crate) fn set_power_limit(pci: PciAddress, watts: f64) -> Result<(f64, (f64, f64)), String> {
    let nvml = nvml()?;
    let bus_id = pci.nvml_string();
    let mut d = nvml
        .device_by_pci_bus_id(bus_id.as_str())
        .map_err(|e| format!("NVML has no device at {bus_id}: {e}"))?;
    let range = d
        .power_management_limit_constraints()
        .map_err(|e| format!("NVML cannot tell the allowed range: {e}"))?;
    let (lo, hi) = (range.min_limit as f64 / 1e3, range.max_limit as f64 / 1e3);
    if !(lo..=hi).contains(&watts) {
        return Err(format!(
            "{watts} W is outside the board's range {lo}-{hi} W"
        ));
    }
    let before = d
        .power_management_limit()
        .map_err(|e| format!("NVML cannot read the limit: {e}"))? as f64
        / 1e3;
    d.set_power_management_limit((watts * 1e3).round() as u32)
        .map_err(|e| match e {
            NvmlError::NoPermission => "NVML refused: setting a power limit needs root".to_string(),
            e => format!("NVML refused: {e}"),
        })?;
    Ok((before, (lo, hi)))
}
