//! `shaders/loss.wgsl`: losses with dense targets (categorical and binary cross-entropy from
//! logits, mean squared error), per-row loss and gradient in one pass, plus device metrics.

use crate::error::Result;
use crate::exec::dispatch::Record;
use crate::kernels::prelude::{check_loops, AccAt};
use crate::services::pipeline::{grid_1d, Access, KernelSpec, Shader};
use crate::vocab::DenseLoss;

/// loss.wgsl.
pub const SHADER: Shader = crate::services::pipeline::shader!("loss");

use Access::{ReadOnly as RO, ReadWrite as RW, Uniform as U};

/// Per-row loss and gradient. Bindings: x, t, loss, grad, params.
pub const BACKWARD: KernelSpec = KernelSpec {
    shader: SHADER,
    entry: "loss_backward",
    bindings: &[RO, RO, RW, RW, U],
};
/// Accumulates `[Σ loss, Σ correct, rows]`. Bindings: x, t, loss, acc, params.
pub const METRICS: KernelSpec = KernelSpec {
    shader: SHADER,
    entry: "loss_metrics_forward",
    bindings: &[RO, RO, RO, RW, U],
};

/// Every entry point of this family.
pub const KERNELS: &[KernelSpec] = &[BACKWARD, METRICS];

/// Mirrors `Params` in loss.wgsl (the row-wise families share one layout).
pub type Params = crate::kernels::prelude::RowParams;

fn loss_code(kind: DenseLoss) -> f64 {
    match kind {
        DenseLoss::CategoricalFromLogits => 1.0,
        DenseLoss::BinaryFromLogits => 2.0,
        DenseLoss::MeanSquared => 3.0,
        DenseLoss::MeanAbsolute => 4.0,
        DenseLoss::Huber => 5.0,
    }
}

/// Records per-row `loss` and `grad = ∂(mean loss)/∂x · (scale·B)` for `x`, `t` of (rows, cols).
#[allow(clippy::too_many_arguments)] // buffers and shape: a binding, spelled out
pub fn backward(
    rec: &mut dyn Record,
    kind: DenseLoss,
    x: &wgpu::Buffer,
    t: &wgpu::Buffer,
    loss: &wgpu::Buffer,
    grad: &wgpu::Buffer,
    rows: usize,
    cols: usize,
    scale: f32,
) -> Result<()> {
    let passes = if kind == DenseLoss::CategoricalFromLogits {
        3
    } else {
        1
    };
    check_loops(rec.device(), "loss", passes * cols as u64, || {
        format!("rows of {cols} columns")
    })?;
    let pipe = rec.pipeline(&BACKWARD, &[("LOSS", loss_code(kind))])?;
    let p = Params::new(rows, cols, scale);
    let n = (rows * cols) as u64 * 4;
    let g = grid_1d(
        rows as u64,
        64,
        rec.device().info().limits.max_workgroups_per_dimension,
    );
    rec.dispatch(
        &pipe,
        &[(x, n), (t, n), (loss, rows as u64 * 4), (grad, n)],
        Some(bytemuck::bytes_of(&p)),
        g,
    )
}

/// Records `acc += [Σ loss, Σ correct, rows]` (see loss.wgsl for what counts as correct).
#[allow(clippy::too_many_arguments)] // buffers and shape: a binding, spelled out
pub fn metrics<'a>(
    rec: &mut dyn Record,
    kind: DenseLoss,
    x: &wgpu::Buffer,
    t: &wgpu::Buffer,
    loss: &wgpu::Buffer,
    acc: impl Into<AccAt<'a>>,
    rows: usize,
    cols: usize,
) -> Result<()> {
    let acc = acc.into();
    check_loops(
        rec.device(),
        "loss metrics",
        rows.div_ceil(64) as u64 * (cols as u64 + 1) + 8,
        || format!("{rows} rows of {cols} columns"),
    )?;
    let pipe = rec.pipeline(&METRICS, &[("LOSS", loss_code(kind))])?;
    let mut p = Params::new(rows, cols, 1.0);
    p.at = acc.at as u32;
    let n = (rows * cols) as u64 * 4;
    rec.dispatch(
        &pipe,
        &[(x, n), (t, n), (loss, rows as u64 * 4), acc.binding()],
        Some(bytemuck::bytes_of(&p)),
        [1, 1, 1],
    )
}
