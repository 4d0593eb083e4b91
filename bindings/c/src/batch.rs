//! Batches (`suanli_batch`): several kernel launches, of one kernel or many, recorded into one
//! submission, as Rust's `CustomKernel::record` into a `Recorder` does. A submission costs far
//! more than a dispatch, so a loop of small kernels runs several times faster batched.

use suanli::exec::Recorder;
use suanli::{CustomKernel, Device, Grid, KernelArg, Tensor};

use crate::device::suanli_device;
use crate::kernel::{grid_of, suanli_kernel, tensor_args};
use crate::tensor::suanli_tensor;
use crate::{deref, guard, put, suanli_status, Fail};

/// One launch waiting in a batch: its own references to the kernel and tensors, so releasing
/// the caller's handles before the submission is safe.
struct Launch {
    kernel: CustomKernel,
    tensors: Vec<Tensor>,
    uniform: Option<Vec<u8>>,
    grid: Grid,
}

/// Launches waiting to be submitted together (a handle: release it with
/// `suanli_batch_release`). Not thread-safe: one thread at a time per batch.
pub struct suanli_batch {
    device: Device,
    launches: Vec<Launch>,
}

/// A new, empty batch for `device`, into `*batch`.
#[no_mangle]
pub unsafe extern "C" fn suanli_batch_new(
    device: *const suanli_device,
    batch: *mut *mut suanli_batch,
) -> suanli_status {
    guard("suanli_batch_new", || {
        let d = deref(device, "device")?;
        if batch.is_null() {
            return Err(Fail::null("batch"));
        }
        let b = suanli_batch {
            device: d.0.clone(),
            launches: Vec::new(),
        };
        put(batch, Box::into_raw(Box::new(b)), "batch")
    })
}

/// Adds a launch to the batch, with the arguments of `suanli_kernel_launch`. Nothing runs
/// until `suanli_batch_submit`; the arguments are checked against the kernel's bindings then.
#[no_mangle]
#[allow(clippy::too_many_arguments)] // suanli_kernel_launch's arguments, spelled out
pub unsafe extern "C" fn suanli_batch_launch(
    batch: *mut suanli_batch,
    kernel: *const suanli_kernel,
    tensors: *const *const suanli_tensor,
    count: usize,
    uniform: *const u8,
    uniform_len: usize,
    groups_x: u64,
    groups_y: u32,
    groups_z: u32,
) -> suanli_status {
    guard("suanli_batch_launch", || {
        if batch.is_null() {
            return Err(Fail::null("batch"));
        }
        let b = &mut *batch;
        let k = deref(kernel, "kernel")?;
        let ts: Vec<Tensor> = tensor_args(tensors, count)?.into_iter().cloned().collect();
        let uniform = (!uniform.is_null() && uniform_len > 0)
            .then(|| std::slice::from_raw_parts(uniform, uniform_len).to_vec());
        b.launches.push(Launch {
            kernel: k.0.clone(),
            tensors: ts,
            uniform,
            grid: grid_of(groups_x, groups_y, groups_z)?,
        });
        Ok(())
    })
}

/// Records every launch of the batch, in order, into one submission and submits it (without
/// waiting: reading a tensor waits). A launch whose arguments do not match its kernel fails
/// the call, naming its index, and nothing is submitted. The batch is empty afterwards,
/// ready for more.
#[no_mangle]
pub unsafe extern "C" fn suanli_batch_submit(batch: *mut suanli_batch) -> suanli_status {
    guard("suanli_batch_submit", || {
        if batch.is_null() {
            return Err(Fail::null("batch"));
        }
        let b = &mut *batch;
        let launches = std::mem::take(&mut b.launches);
        let mut rec = Recorder::new(&b.device);
        for (i, l) in launches.iter().enumerate() {
            let mut args: Vec<KernelArg<'_>> = l.tensors.iter().map(KernelArg::Tensor).collect();
            if let Some(u) = &l.uniform {
                args.push(KernelArg::Uniform(u));
            }
            l.kernel
                .record(&mut rec, &args, l.grid)
                .map_err(|e| Fail::from_error(e, &format!("launch {i} of the batch: ")))?;
        }
        rec.submit()?;
        Ok(())
    })
}

/// Launches waiting in the batch.
#[no_mangle]
pub unsafe extern "C" fn suanli_batch_len(
    batch: *const suanli_batch,
    len: *mut usize,
) -> suanli_status {
    guard("suanli_batch_len", || {
        let b = deref(batch, "batch")?;
        put(len, b.launches.len(), "len")
    })
}

/// Releases a batch and the launches still in it, unsubmitted (NULL is ignored).
#[no_mangle]
pub unsafe extern "C" fn suanli_batch_release(batch: *mut suanli_batch) {
    if !batch.is_null() {
        drop(Box::from_raw(batch));
    }
}
