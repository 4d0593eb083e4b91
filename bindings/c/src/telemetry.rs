//! Telemetry (`suanli_reading`): one sample of an adapter's sensors, the numbers
//! `suanli-smi` prints, from the vendor's interface where there is one (NVML, amdgpu
//! and i915 sysfs) and "not available" where there is none (software adapters).

use std::ffi::c_char;

use crate::device::copy;
use crate::{guard, put, suanli_status, Fail};

/// One sample of an adapter's sensors. A value the platform does not expose is NaN (the
/// `double` fields), `UINT64_MAX` (memory) or -1 (`throttled`).
#[repr(C)]
pub struct suanli_reading {
    /// Where the numbers come from: `"nvml"`, `"amdgpu sysfs"`, `"i915 sysfs"`, `"none"`.
    pub source: [c_char; 32],
    /// Percent of the last sample period the GPU was busy.
    pub utilisation: f64,
    /// Device memory in use, bytes.
    pub memory_used: u64,
    /// Device memory in total, bytes.
    pub memory_total: u64,
    /// GPU temperature, °C.
    pub temperature_c: f64,
    /// Board power draw, W.
    pub power_w: f64,
    /// Power limit, W.
    pub power_limit_w: f64,
    /// Graphics / shader clock, MHz.
    pub graphics_clock_mhz: f64,
    /// Memory clock, MHz.
    pub memory_clock_mhz: f64,
    /// 1 when clocks are reduced for heat or power, 0 when not, -1 when unknown.
    pub throttled: i32,
}

/// A sample of adapter `index`'s sensors (the order of `suanli_device_describe`), into
/// `*reading`.
#[no_mangle]
pub unsafe extern "C" fn suanli_telemetry_read(
    index: usize,
    reading: *mut suanli_reading,
) -> suanli_status {
    guard("suanli_telemetry_read", || {
        if reading.is_null() {
            return Err(Fail::null("reading"));
        }
        let all = suanli::telemetry::snapshot()?;
        let Some((_, r)) = all.get(index) else {
            return Err(Fail::invalid(format!(
                "index: expected an adapter index below {}; found {index}",
                all.len()
            )));
        };
        let f = |v: Option<f64>| v.unwrap_or(f64::NAN);
        let mut out = suanli_reading {
            source: [0; 32],
            utilisation: f(r.utilisation),
            memory_used: r.memory_used.unwrap_or(u64::MAX),
            memory_total: r.memory_total.unwrap_or(u64::MAX),
            temperature_c: f(r.temperature_c),
            power_w: f(r.power_w),
            power_limit_w: f(r.power_limit_w),
            graphics_clock_mhz: f(r.graphics_clock_mhz),
            memory_clock_mhz: f(r.memory_clock_mhz),
            throttled: r.throttled.map_or(-1, i32::from),
        };
        copy(&mut out.source, &r.source);
        put(reading, out, "reading")
    })
}
