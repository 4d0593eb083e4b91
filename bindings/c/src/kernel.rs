//! Custom WGSL kernels (`suanli_kernel`): compiled once per device (validated by naga
//! first: errors name the line and column), launched on tensors with uniform bytes.

use std::ffi::c_char;

use suanli::{CustomKernel, Grid, KernelArg};

use crate::device::suanli_device;
use crate::tensor::suanli_tensor;
use crate::{deref, guard, put, suanli_status, text, Fail};

/// A compiled kernel (a handle: release it with `suanli_kernel_release`). Thread-safe:
/// several threads may launch one kernel.
pub struct suanli_kernel(pub(crate) CustomKernel);

/// Compiles `entry` of the WGSL `source` for `device`, into `*kernel`.
#[no_mangle]
pub unsafe extern "C" fn suanli_kernel_compile(
    device: *const suanli_device,
    source: *const c_char,
    entry: *const c_char,
    kernel: *mut *mut suanli_kernel,
) -> suanli_status {
    guard("suanli_kernel_compile", || {
        let d = deref(device, "device")?;
        let (source, entry) = (text(source, "source")?, text(entry, "entry")?);
        if kernel.is_null() {
            return Err(Fail::null("kernel"));
        }
        let k = CustomKernel::new(&d.0, entry, source, entry)?;
        put(kernel, Box::into_raw(Box::new(suanli_kernel(k))), "kernel")
    })
}

/// Launches the kernel: `tensors` (`count` handles) fill its storage bindings in order and
/// `uniform` (`uniform_len` bytes, or NULL) its `var<uniform>` binding. `groups_y` and
/// `groups_z` of 0 make `groups_x` a count of invocations (enough 1-D work-groups to cover
/// it, spilling onto y past the per-dimension limit); otherwise the three are work-group
/// counts. Returns once submitted; reading a tensor waits for it.
#[no_mangle]
pub unsafe extern "C" fn suanli_kernel_launch(
    kernel: *const suanli_kernel,
    tensors: *const *const suanli_tensor,
    count: usize,
    uniform: *const u8,
    uniform_len: usize,
    groups_x: u64,
    groups_y: u32,
    groups_z: u32,
) -> suanli_status {
    guard("suanli_kernel_launch", || {
        let k = deref(kernel, "kernel")?;
        let mut args: Vec<KernelArg<'_>> = tensor_args(tensors, count)?
            .into_iter()
            .map(KernelArg::Tensor)
            .collect();
        if !uniform.is_null() && uniform_len > 0 {
            args.push(KernelArg::Uniform(std::slice::from_raw_parts(
                uniform,
                uniform_len,
            )));
        }
        k.0.launch(&args, grid_of(groups_x, groups_y, groups_z)?)?;
        Ok(())
    })
}

/// The tensors of a launch: `count` handles at `tensors`, each checked for NULL.
pub(crate) unsafe fn tensor_args<'a>(
    tensors: *const *const suanli_tensor,
    count: usize,
) -> crate::Result<Vec<&'a suanli::Tensor>> {
    if count == 0 {
        return Ok(Vec::new());
    }
    if tensors.is_null() {
        return Err(Fail::null("tensors"));
    }
    std::slice::from_raw_parts(tensors, count)
        .iter()
        .enumerate()
        .map(|(i, &h)| Ok(&deref(h, &format!("tensors[{i}]"))?.0))
        .collect()
}

/// The grid a launch's three numbers describe (see `suanli_kernel_launch`).
pub(crate) fn grid_of(groups_x: u64, groups_y: u32, groups_z: u32) -> crate::Result<Grid> {
    if groups_y == 0 && groups_z == 0 {
        return Ok(Grid::Elements(groups_x));
    }
    let x = u32::try_from(groups_x).map_err(|_| {
        Fail::invalid(format!(
            "groups_x: expected a work-group count below 2^32; found {groups_x}"
        ))
    })?;
    Ok(Grid::Workgroups(x, groups_y.max(1), groups_z.max(1)))
}

/// Releases a kernel handle (NULL is ignored).
#[no_mangle]
pub unsafe extern "C" fn suanli_kernel_release(kernel: *mut suanli_kernel) {
    if !kernel.is_null() {
        drop(Box::from_raw(kernel));
    }
}
