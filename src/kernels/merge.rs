//! `shaders/merge.wgsl`: what the merge layers of a graph model need beyond the element-wise
//! family: the element-wise maximum and its gradient (ties to the earliest input), and the
//! block copies of `Concatenate` (each input's block into its place along the axis, and the
//! gradient's block back out).

use crate::error::{Error, Result};
use crate::exec::dispatch::Record;
use crate::services::pipeline::{grid_1d, Access, KernelSpec, Shader};

/// merge.wgsl (no prelude).
pub const SHADER: Shader = crate::services::pipeline::shader!("merge");

use Access::{ReadOnly as RO, ReadWrite as RW, Uniform as U};

/// `c = max(a, b)`.
pub const MAXIMUM: KernelSpec = KernelSpec {
    shader: SHADER,
    entry: "maximum_forward",
    bindings: &[RO, RO, RW, U],
};
/// `dx = (x == y ∧ ¬taken) ? dy : 0`, `taken |= (x == y)` (`FIRST`: nothing taken yet).
pub const MAXIMUM_BACKWARD: KernelSpec = KernelSpec {
    shader: SHADER,
    entry: "maximum_backward",
    bindings: &[RO, RO, RO, RW, RW, U],
};
/// `out[o·outer + offset + j] = x[o·inner + j]`.
pub const CONCAT: KernelSpec = KernelSpec {
    shader: SHADER,
    entry: "concat_forward",
    bindings: &[RO, RW, U],
};
/// `dx[o·inner + j] = dy[o·outer + offset + j]`.
pub const CONCAT_BACKWARD: KernelSpec = KernelSpec {
    shader: SHADER,
    entry: "concat_backward",
    bindings: &[RO, RW, U],
};

/// Every entry point of this family.
pub const KERNELS: &[KernelSpec] = &[MAXIMUM, MAXIMUM_BACKWARD, CONCAT, CONCAT_BACKWARD];

/// Mirrors `Params` in merge.wgsl.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
pub struct Params {
    /// Elements written.
    pub n: u32,
    /// The input's block (concatenate).
    pub inner: u32,
    /// The output's block (concatenate).
    pub outer: u32,
    /// This input's offset in the output's block (concatenate).
    pub offset: u32,
}

/// Work-group size of every kernel in this family.
pub const WG: u32 = 256;

fn launch(
    rec: &mut dyn Record,
    spec: &KernelSpec,
    constants: &[(&str, f64)],
    buffers: &[(&wgpu::Buffer, u64)],
    params: Params,
) -> Result<()> {
    let dev = rec.device().clone();
    let pipe = rec.pipeline(spec, constants)?;
    let groups = grid_1d(
        params.n as u64,
        WG,
        dev.info().limits.max_workgroups_per_dimension,
    );
    rec.declare_work(0.0, buffers.iter().map(|(_, b)| *b as f64).sum::<f64>());
    rec.dispatch(&pipe, buffers, Some(bytemuck::bytes_of(&params)), groups)
}

fn bytes(n: usize) -> u64 {
    n as u64 * 4
}

/// Element counts are `u32` in the kernels: refuse what does not fit.
fn count(op: &'static str, n: usize) -> Result<u32> {
    u32::try_from(n).map_err(|_| Error::InvalidArgument {
        op,
        name: "elements",
        expected: format!("at most {} elements", u32::MAX),
        found: n.to_string(),
    })
}

/// Records `c = max(a, b)` over `n` elements.
pub fn maximum(
    rec: &mut dyn Record,
    a: &wgpu::Buffer,
    b: &wgpu::Buffer,
    c: &wgpu::Buffer,
    n: usize,
) -> Result<()> {
    let p = Params {
        n: count("maximum", n)?,
        ..Default::default()
    };
    launch(
        rec,
        &MAXIMUM,
        &[],
        &[(a, bytes(n)), (b, bytes(n)), (c, bytes(n))],
        p,
    )
}

/// Records the gradient of one input `x` of a maximum `y` from `dy` into `dx`, over `n`
/// elements; `taken` marks where an earlier input already took it (`first`: none did; it is
/// written, not read).
#[allow(clippy::too_many_arguments)] // the kernel's bindings, spelled out
pub fn maximum_backward(
    rec: &mut dyn Record,
    x: &wgpu::Buffer,
    y: &wgpu::Buffer,
    dy: &wgpu::Buffer,
    dx: &wgpu::Buffer,
    taken: &wgpu::Buffer,
    n: usize,
    first: bool,
) -> Result<()> {
    let p = Params {
        n: count("maximum_backward", n)?,
        ..Default::default()
    };
    launch(
        rec,
        &MAXIMUM_BACKWARD,
        &[("FIRST", if first { 1.0 } else { 0.0 })],
        &[
            (x, bytes(n)),
            (y, bytes(n)),
            (dy, bytes(n)),
            (dx, bytes(n)),
            (taken, bytes(n)),
        ],
        p,
    )
}

/// How one input of a concatenation sits in the output: `blocks` blocks of `inner` values,
/// at `offset` in the output's blocks of `outer`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConcatPart {
    /// Blocks (the product of the dimensions before the axis, batch included).
    pub blocks: usize,
    /// The input's block (its axis length times the dimensions after it).
    pub inner: usize,
    /// The output's block.
    pub outer: usize,
    /// Where the input's block starts in the output's.
    pub offset: usize,
}

fn concat_params(op: &'static str, part: ConcatPart) -> Result<Params> {
    if part.inner == 0 || part.offset + part.inner > part.outer {
        return Err(Error::Internal {
            op,
            message: format!("{part:?} does not fit its output"),
        });
    }
    Ok(Params {
        n: count(op, part.blocks * part.inner)?,
        inner: part.inner as u32,
        outer: count(op, part.outer)?,
        offset: part.offset as u32,
    })
}

/// Records the copy of `x` into its place in `out` (see [`ConcatPart`]).
pub fn concat(
    rec: &mut dyn Record,
    x: &wgpu::Buffer,
    out: &wgpu::Buffer,
    part: ConcatPart,
) -> Result<()> {
    let p = concat_params("concatenate", part)?;
    let (n, m) = (part.blocks * part.inner, part.blocks * part.outer);
    launch(rec, &CONCAT, &[], &[(x, bytes(n)), (out, bytes(m))], p)
}

/// Records the copy of `x`'s place in `dy` into `dx` (the gradient of [`concat`]).
pub fn concat_backward(
    rec: &mut dyn Record,
    dy: &wgpu::Buffer,
    dx: &wgpu::Buffer,
    part: ConcatPart,
) -> Result<()> {
    let p = concat_params("concatenate backward", part)?;
    let (n, m) = (part.blocks * part.inner, part.blocks * part.outer);
    launch(
        rec,
        &CONCAT_BACKWARD,
        &[],
        &[(dy, bytes(m)), (dx, bytes(n))],
        p,
    )
}
