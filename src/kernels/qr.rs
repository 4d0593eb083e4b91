//! Householder QR of batches of contiguous m×n float32 or float64 matrices on the device
//! (`shaders/array_qr.wgsl`, its f64 twin by [`crate::kernels::prelude::f64_twin`]), for `array::spectral`'s `qr`: LAPACK's unblocked geqr2 and
//! org2r, each column's reflector one workgroup per matrix, its application one workgroup
//! per (matrix, column). The reflectors stay in A below the diagonal (v_0 = 1 implied) and
//! their factors in `tau`; R is A's upper triangle.
//!
//! Why unblocked: each step is a reduction and an update that any adapter runs with short
//! loops; a blocked (WY) form on the matmul kernels would be the way to large orders.

use crate::error::Result;
use crate::exec::dispatch::Record;
use crate::exec::recorder::Recorder;
use crate::kernels::lu::flush;
use crate::kernels::prelude::f64_twin;
use crate::runtime::Device;
use crate::services::pipeline::{Access, KernelSpec, Shader};

/// `shaders/array_qr.wgsl`.
pub const SHADER: Shader = crate::services::pipeline::shader!("array_qr");

use Access::{ReadWrite as RW, Uniform as U};

/// A reflector, or its application to columns of A or Q (the MODE constant).
pub const STEP: KernelSpec = KernelSpec {
    shader: SHADER,
    entry: "qr_step",
    bindings: &[RW, RW, RW, U],
};
/// Every kernel of the family.
pub const KERNELS: &[KernelSpec] = &[STEP];

/// [`STEP`] in float64.
pub fn step_f64() -> Result<&'static KernelSpec> {
    static CELL: std::sync::OnceLock<KernelSpec> = std::sync::OnceLock::new();
    f64_twin(&STEP, "array_qr_f64", &CELL)
}

#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    batch: u32,
    m: u32,
    n: u32,
    k: u32,
    qcols: u32,
    col0: u32,
    cols: u32,
    _pad: u32,
}

fn groups(device: &Device, count: usize) -> [u32; 3] {
    let max = device.info().limits.max_workgroups_per_dimension;
    if count as u64 <= max as u64 {
        [count as u32, 1, 1]
    } else {
        [max, count.div_ceil(max as usize) as u32, 1]
    }
}

/// Factors `batch` m×n matrices in `a` in place (reflectors below the diagonal, R on and
/// above it, min(m, n) factors per matrix in `tau`), then forms Q (m × `qcols`, which must
/// hold the first `qcols` columns of the identity) by applying the reflectors to it; all in
/// f32, or f64 when `f64`.
#[allow(clippy::too_many_arguments)]
pub fn factor(
    device: &Device,
    a: &wgpu::Buffer,
    tau: &wgpu::Buffer,
    q: &wgpu::Buffer,
    batch: usize,
    m: usize,
    n: usize,
    qcols: usize,
    f64: bool,
) -> Result<()> {
    let k = m.min(n);
    if batch == 0 || k == 0 {
        return Ok(());
    }
    let spec = if f64 { step_f64()? } else { &STEP };
    let size = if f64 { 8 } else { 4 };
    let (aw, tw, qw) = (
        (batch * m * n) as u64 * size,
        (batch * k) as u64 * size,
        (batch * m * qcols).max(1) as u64 * size,
    );
    let params = |step: usize, col0: usize, cols: usize| Params {
        batch: batch as u32,
        m: m as u32,
        n: n as u32,
        k: step as u32,
        qcols: qcols as u32,
        col0: col0 as u32,
        cols: cols as u32,
        _pad: 0,
    };
    let mut rec = Recorder::new(device);
    let house = rec.pipeline(spec, &[("MODE", 0.0)])?;
    let apply = rec.pipeline(spec, &[("MODE", 1.0)])?;
    let form = rec.pipeline(spec, &[("MODE", 2.0)])?;
    let bufs = [(a, aw), (tau, tw), (q, qw)];
    let mut count = 0;
    for step in 0..k {
        rec.dispatch(
            &house,
            &bufs,
            Some(bytemuck::bytes_of(&params(step, 0, 1))),
            groups(device, batch),
        )?;
        flush(device, &mut rec, &mut count)?;
        let trailing = n - step - 1;
        if trailing > 0 {
            rec.dispatch(
                &apply,
                &bufs,
                Some(bytemuck::bytes_of(&params(step, step + 1, trailing))),
                groups(device, batch * trailing),
            )?;
            flush(device, &mut rec, &mut count)?;
        }
    }
    if qcols > 0 {
        for step in (0..k).rev() {
            rec.dispatch(
                &form,
                &bufs,
                Some(bytemuck::bytes_of(&params(step, 0, qcols))),
                groups(device, batch * qcols),
            )?;
            flush(device, &mut rec, &mut count)?;
        }
    }
    rec.submit()?;
    Ok(())
}
