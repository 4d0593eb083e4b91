//! `shaders/elementwise.wgsl`: elementwise kernels.

use crate::kernel::{grid_1d, Access, KernelSpec, Recorder, Shader};
use crate::Result;

/// The shader file.
pub const SHADER: Shader = crate::shader!("elementwise");

/// `fill_forward`: `out[i] = value`. Bindings: `out` (rw), `params`.
pub const FILL: KernelSpec = KernelSpec {
    shader: SHADER,
    entry: "fill_forward",
    bindings: &[Access::ReadWrite, Access::Uniform],
};

/// Every entry point of this family.
pub const KERNELS: &[KernelSpec] = &[FILL];

/// Mirrors `Params` in elementwise.wgsl.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub struct Params {
    /// Element count.
    pub n: u32,
    /// Scalar operand.
    pub value: f32,
    /// Padding to 16 bytes.
    pub _pad: [u32; 2],
}

/// Work-group size of every kernel in this family.
pub const WG: u32 = 256;

/// Records `out[..n] = value`.
pub fn fill(rec: &mut Recorder<'_>, out: &wgpu::Buffer, n: usize, value: f32) -> Result<()> {
    let dev = rec.device();
    let pipe = dev.pipeline(&FILL, &[])?;
    let params = Params {
        n: n as u32,
        value,
        _pad: [0; 2],
    };
    let groups = grid_1d(n as u64, WG, dev.info().limits.max_workgroups_per_dimension);
    rec.dispatch(
        &pipe,
        &[(out, n as u64 * 4)],
        Some(bytemuck::bytes_of(&params)),
        groups,
    )
}
