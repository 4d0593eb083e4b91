//! Devices: the adapter table and opened devices (`suanli_device`).

use std::ffi::c_char;

use suanli::Device;

use crate::{deref, guard, put, suanli_status, text, Fail};

/// An opened device (a handle: release it with `suanli_device_release`). Thread-safe: one
/// device may be used from several threads at once.
pub struct suanli_device(pub(crate) Device);

/// One adapter, as `suanli_device_describe` gives it. Strings are NUL-terminated, cut to
/// fit.
#[repr(C)]
pub struct suanli_device_info {
    /// The spec that opens it (`"vulkan:0"`, …).
    pub spec: [c_char; 64],
    /// The adapter's name.
    pub name: [c_char; 256],
    /// The vendor (`"NVIDIA"`, `"AMD"`, `"Intel"`, `"Apple"`, `"Mesa"`, …).
    pub vendor: [c_char; 64],
    /// The backend (`"vulkan"`, `"metal"`, `"dx12"`, `"gl"`).
    pub backend: [c_char; 32],
    /// 1 for a hardware GPU, 0 for a software adapter (lavapipe, llvmpipe, WARP).
    pub is_gpu: i32,
    /// The smallest and largest subgroup sizes (0 when subgroups are not supported).
    pub subgroup_min: u32,
    /// See `subgroup_min`.
    pub subgroup_max: u32,
    /// 1 when the adapter computes in f16.
    pub shader_f16: i32,
    /// The largest buffer, and the largest storage binding, in bytes.
    pub max_buffer_size: u64,
    /// See `max_buffer_size`.
    pub max_storage_binding: u64,
}

pub(crate) fn copy(dst: &mut [c_char], s: &str) {
    let n = s.len().min(dst.len() - 1);
    for (d, b) in dst.iter_mut().zip(&s.as_bytes()[..n]) {
        *d = *b as c_char;
    }
    dst[n] = 0;
}

/// The number of adapters (after `SUANLI_VISIBLE_DEVICES` / suanli.toml), into `*count`.
#[no_mangle]
pub unsafe extern "C" fn suanli_device_count(count: *mut usize) -> suanli_status {
    guard("suanli_device_count", || {
        let n = suanli::devices()?.len();
        put(count, n, "count")
    })
}

/// Adapter `index`'s description, into `*info`.
#[no_mangle]
pub unsafe extern "C" fn suanli_device_describe(
    index: usize,
    info: *mut suanli_device_info,
) -> suanli_status {
    guard("suanli_device_describe", || {
        if info.is_null() {
            return Err(Fail::null("info"));
        }
        let all = suanli::devices()?;
        let d = all.get(index).ok_or_else(|| {
            Fail::invalid(format!(
                "index: expected an adapter index below {}; found {index}",
                all.len()
            ))
        })?;
        let mut out = suanli_device_info {
            spec: [0; 64],
            name: [0; 256],
            vendor: [0; 64],
            backend: [0; 32],
            is_gpu: d.is_gpu() as i32,
            subgroup_min: if d.features.subgroups {
                d.limits.subgroup_size.0
            } else {
                0
            },
            subgroup_max: if d.features.subgroups {
                d.limits.subgroup_size.1
            } else {
                0
            },
            shader_f16: d.features.shader_f16 as i32,
            max_buffer_size: d.limits.max_buffer_size,
            max_storage_binding: d.limits.max_storage_binding,
        };
        copy(&mut out.spec, &d.spec().to_string());
        copy(&mut out.name, &d.name);
        copy(&mut out.vendor, &d.vendor.to_string());
        copy(&mut out.backend, &d.backend.to_string());
        info.write(out);
        Ok(())
    })
}

/// Opens the device `spec` names (`"auto"`, `"gpu:0"`, `"/GPU:0"`, `"cpu"`, `"vulkan:1"`, a
/// name fragment: the same strings as Rust's `Device::open`), into `*device`.
#[no_mangle]
pub unsafe extern "C" fn suanli_device_open(
    spec: *const c_char,
    device: *mut *mut suanli_device,
) -> suanli_status {
    guard("suanli_device_open", || {
        let spec = text(spec, "spec")?;
        if device.is_null() {
            return Err(Fail::null("device"));
        }
        let d = Device::open(spec)?;
        put(device, Box::into_raw(Box::new(suanli_device(d))), "device")
    })
}

/// The device's adapter name, into `buf` (NUL-terminated, cut to `len`).
#[no_mangle]
pub unsafe extern "C" fn suanli_device_name(
    device: *const suanli_device,
    buf: *mut c_char,
    len: usize,
) -> suanli_status {
    guard("suanli_device_name", || {
        let d = deref(device, "device")?;
        if buf.is_null() || len == 0 {
            return Err(Fail::null("buf"));
        }
        let dst = std::slice::from_raw_parts_mut(buf, len);
        copy(dst, d.0.name());
        Ok(())
    })
}

/// Bytes of device memory in use and held for reuse by suanli's pool.
#[no_mangle]
pub unsafe extern "C" fn suanli_device_memory(
    device: *const suanli_device,
    in_use: *mut u64,
    pooled: *mut u64,
) -> suanli_status {
    guard("suanli_device_memory", || {
        let d = deref(device, "device")?;
        let s = d.0.memory_stats();
        put(in_use, s.in_use, "in_use")?;
        put(pooled, s.cached, "pooled")
    })
}

/// Waits until the device has finished all submitted work.
#[no_mangle]
pub unsafe extern "C" fn suanli_device_synchronize(device: *const suanli_device) -> suanli_status {
    guard("suanli_device_synchronize", || {
        deref(device, "device")?.0.synchronize()?;
        Ok(())
    })
}

/// Releases a device handle (NULL is ignored). Tensors, kernels and models made on it keep
/// the device alive until they are released too.
#[no_mangle]
pub unsafe extern "C" fn suanli_device_release(device: *mut suanli_device) {
    if !device.is_null() {
        drop(Box::from_raw(device));
    }
}
