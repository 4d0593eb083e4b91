//! `shaders/clip.wgsl`: gradient clipping on the device, for the optimizer path that sees
//! whole gradients: a gradient's sum of squares into its slot of a norms buffer, then each
//! gradient scaled to a norm limit over a range of slots (its own: Keras's `clipnorm`; all:
//! `global_clipnorm`) and clamped (`clipvalue`). Nothing is read back.

use crate::error::Result;
use crate::exec::dispatch::Record;
use crate::kernels::prelude::check_loops;
use crate::services::pipeline::{grid_1d, Access, KernelSpec, Shader};

/// clip.wgsl (no prelude).
pub const SHADER: Shader = crate::services::pipeline::shader!("clip");

use Access::{ReadOnly as RO, ReadWrite as RW, Uniform as U};

/// `norms[first] = Σ x²` (one work-group).
pub const SUMSQ: KernelSpec = KernelSpec {
    shader: SHADER,
    entry: "sumsq_forward",
    bindings: &[RO, RW, U],
};
/// `g *= min(1, limit / √Σ norms[first..first+count])`, then `g = clamp(g, ±value)`.
pub const SCALE: KernelSpec = KernelSpec {
    shader: SHADER,
    entry: "scale_forward",
    bindings: &[RO, RW, U],
};

/// Every entry point of this family.
pub const KERNELS: &[KernelSpec] = &[SUMSQ, SCALE];

/// Mirrors `Params` in clip.wgsl.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
pub struct Params {
    /// Elements of the gradient.
    pub n: u32,
    /// The slot written (sumsq), or the first slot summed (scale).
    pub first: u32,
    /// Slots summed (scale).
    pub count: u32,
    /// Padding.
    pub pad: u32,
    /// The largest norm (0: none).
    pub limit: f32,
    /// The largest magnitude (0: none).
    pub value: f32,
    /// Padding.
    pub pad1: [f32; 2],
}

/// Work-group size of both kernels.
pub const WG: u32 = 256;

/// Records `norms[slot] = Σ x[..n]²`.
pub fn sumsq(
    rec: &mut dyn Record,
    x: &wgpu::Buffer,
    n: usize,
    norms: &wgpu::Buffer,
    slots: usize,
    slot: usize,
) -> Result<()> {
    let dev = rec.device().clone();
    check_loops(
        &dev,
        "gradient clipping",
        n.div_ceil(WG as usize) as u64,
        || format!("a gradient of {n} values"),
    )?;
    let pipe = rec.pipeline(&SUMSQ, &[])?;
    let p = Params {
        n: n as u32,
        first: slot as u32,
        ..Default::default()
    };
    rec.declare_work(2.0 * n as f64, 4.0 * n as f64);
    rec.dispatch(
        &pipe,
        &[(x, 4 * n as u64), (norms, 4 * slots as u64)],
        Some(bytemuck::bytes_of(&p)),
        [1, 1, 1],
    )
}

/// Records the clipping of `g[..n]` in place: scaled so the norm over slots `first..first +
/// count` of `norms` is at most `limit` (0: not scaled), then clamped to `±value` (0: not
/// clamped).
#[allow(clippy::too_many_arguments)] // the kernel's inputs, spelled out
pub fn scale(
    rec: &mut dyn Record,
    g: &wgpu::Buffer,
    n: usize,
    norms: &wgpu::Buffer,
    slots: usize,
    (first, count): (usize, usize),
    limit: f32,
    value: f32,
) -> Result<()> {
    let dev = rec.device().clone();
    let pipe = rec.pipeline(&SCALE, &[])?;
    let p = Params {
        n: n as u32,
        first: first as u32,
        count: count as u32,
        limit,
        value,
        ..Default::default()
    };
    let groups = grid_1d(n as u64, WG, dev.info().limits.max_workgroups_per_dimension);
    rec.declare_work(2.0 * n as f64, 8.0 * n as f64);
    rec.dispatch(
        &pipe,
        &[(norms, 4 * slots as u64), (g, 4 * n as u64)],
        Some(bytemuck::bytes_of(&p)),
        groups,
    )
}
