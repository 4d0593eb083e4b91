//! `shaders/reduce.wgsl`: sums, means, max and argmax over rows or columns of a (rows, cols)
//! matrix, in a fixed order (same input, same bits).

use crate::error::Result;
use crate::exec::dispatch::Record;
use crate::kernels::prelude::check_loops;
use crate::services::pipeline::{grid_1d, Access, KernelSpec, Shader};

/// reduce.wgsl.
pub const SHADER: Shader = crate::services::pipeline::shader!("reduce");
/// reduce_subgroup.wgsl, after reduce.wgsl (whose bindings and helpers it uses).
pub const SHADER_SUBGROUP: Shader =
    crate::services::pipeline::shader!("reduce_subgroup" after "reduce");

use Access::{ReadOnly as RO, ReadWrite as RW, Uniform as U};

/// `out[r] = OP(x[r, :])`, one 256-wide work-group per row (tree in workgroup memory).
pub const ROWS: KernelSpec = KernelSpec {
    shader: SHADER,
    entry: "reduce_rows_forward",
    bindings: &[RO, RW, U],
};
/// `out[c] = Σ_r x[r, c]`, one invocation per column.
pub const COLS: KernelSpec = KernelSpec {
    shader: SHADER,
    entry: "reduce_cols_forward",
    bindings: &[RO, RW, U],
};

/// [`ROWS`] with subgroup operations (adapters with subgroups).
pub const ROWS_SUBGROUP: KernelSpec = KernelSpec {
    shader: SHADER_SUBGROUP,
    entry: "reduce_rows_sg_forward",
    bindings: &[RO, RW, U],
};

/// Every entry point of this family.
pub const KERNELS: &[KernelSpec] = &[ROWS, COLS, ROWS_SUBGROUP];

/// Mirrors `Params` in reduce.wgsl (the row-wise families share one layout).
pub type Params = crate::kernels::prelude::RowParams;

/// What a row reduction computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RowOp {
    /// Sum times `scale`.
    Sum,
    /// Maximum (with NaN inputs the result is the driver's: Vulkan leaves NaN comparisons undefined).
    Max,
    /// Index of the first maximum, as f32.
    ArgMax,
}

/// Records a per-row reduction of `x` (rows, cols) into `out` (rows), with subgroup
/// operations where the adapter has them.
pub fn rows(
    rec: &mut dyn Record,
    op: RowOp,
    x: &wgpu::Buffer,
    out: &wgpu::Buffer,
    rows: usize,
    cols: usize,
    scale: f32,
) -> Result<()> {
    let subgroups = rec.device().info().features.subgroups;
    rows_with(rec, op, x, out, rows, cols, scale, subgroups)
}

/// [`rows`] choosing the path: `subgroups` selects [`ROWS_SUBGROUP`] (the adapter must have
/// subgroups), else the plain workgroup tree.
#[allow(clippy::too_many_arguments)] // buffers and shape: a binding, spelled out
pub fn rows_with(
    rec: &mut dyn Record,
    op: RowOp,
    x: &wgpu::Buffer,
    out: &wgpu::Buffer,
    rows: usize,
    cols: usize,
    scale: f32,
    subgroups: bool,
) -> Result<()> {
    let dev = rec.device().clone();
    let code = match op {
        RowOp::Sum => 0,
        RowOp::Max => 1,
        RowOp::ArgMax => 2,
    };
    check_loops(
        &dev,
        "row reduction",
        cols.div_ceil(256) as u64 + 264,
        || format!("rows of {cols} columns"),
    )?;
    let spec = if subgroups { &ROWS_SUBGROUP } else { &ROWS };
    let pipe = rec.pipeline(spec, &[("OP", code as f64)])?;
    let p = Params::new(rows, cols, scale);
    // One work-group per row, spilled onto y.
    let groups = grid_1d(
        rows as u64,
        1,
        dev.info().limits.max_workgroups_per_dimension,
    );
    let bufs = [(x, (rows * cols) as u64 * 4), (out, rows as u64 * 4)];
    rec.dispatch(&pipe, &bufs, Some(bytemuck::bytes_of(&p)), groups)
}

/// Records per-column sums of `x` (rows, cols) into `out` (cols), times `scale`.
pub fn cols(
    rec: &mut dyn Record,
    x: &wgpu::Buffer,
    out: &wgpu::Buffer,
    rows: usize,
    cols: usize,
    scale: f32,
) -> Result<()> {
    let dev = rec.device().clone();
    check_loops(&dev, "column sum", rows.div_ceil(4) as u64 + 3, || {
        format!("{rows} rows")
    })?;
    let pipe = rec.pipeline(&COLS, &[])?;
    let p = Params::new(rows, cols, scale);
    let groups = grid_1d(
        cols as u64,
        256,
        dev.info().limits.max_workgroups_per_dimension,
    );
    let bufs = [(x, (rows * cols) as u64 * 4), (out, cols as u64 * 4)];
    rec.dispatch(&pipe, &bufs, Some(bytemuck::bytes_of(&p)), groups)
}
