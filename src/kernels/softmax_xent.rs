//! `shaders/softmax_xent.wgsl`: softmax / log-softmax and fused sparse categorical
//! cross-entropy (forward: per-row loss; backward: `(softmax − onehot)·scale` plus the loss).

use crate::error::Result;
use crate::exec::dispatch::Record;
use crate::kernels::prelude::{check_loops, AccAt};
use crate::services::pipeline::{grid_1d, Access, KernelSpec, Shader};

/// softmax_xent.wgsl.
pub const SHADER: Shader = crate::services::pipeline::shader!("softmax_xent");

use Access::{ReadOnly as RO, ReadWrite as RW, Uniform as U};

/// `y = softmax(x)` per row (`LOG`: log-softmax). Bindings: x, y, params.
pub const SOFTMAX: KernelSpec = KernelSpec {
    shader: SHADER,
    entry: "softmax_forward",
    bindings: &[RO, RW, U],
};
/// [`SOFTMAX`] with a work-group per row, for rows wider than [`WIDE_COLS`]. Bindings: x, y, params.
pub const SOFTMAX_WIDE: KernelSpec = KernelSpec {
    shader: SHADER,
    entry: "softmax_wide_forward",
    bindings: &[RO, RW, U],
};
/// `loss[r]`. Bindings: x, labels, loss, params.
pub const XENT: KernelSpec = KernelSpec {
    shader: SHADER,
    entry: "xent_forward",
    bindings: &[RO, RO, RW, U],
};
/// `grad = (softmax − onehot)·scale` and `loss[r]`. Bindings: x, labels, loss, grad, params.
pub const XENT_BACKWARD: KernelSpec = KernelSpec {
    shader: SHADER,
    entry: "xent_backward",
    bindings: &[RO, RO, RW, RW, U],
};

/// Accumulates `[Σ loss, #correct, #rows]` into a 3-float buffer. Bindings: x, labels, loss, acc, params.
pub const METRICS: KernelSpec = KernelSpec {
    shader: SHADER,
    entry: "xent_metrics_forward",
    bindings: &[RO, RO, RO, RW, U],
};

/// [`XENT_BACKWARD`] and [`METRICS`] in one single-work-group dispatch, same bits.
/// Bindings: x, labels, loss, grad, acc, params.
pub const XENT_TRAIN: KernelSpec = KernelSpec {
    shader: SHADER,
    entry: "xent_train_forward",
    bindings: &[RO, RO, RW, RW, RW, U],
};

/// Every entry point of this family.
pub const KERNELS: &[KernelSpec] = &[
    SOFTMAX,
    SOFTMAX_WIDE,
    XENT,
    XENT_BACKWARD,
    METRICS,
    XENT_TRAIN,
];

/// Largest batch the fused training kernel takes (one work-group loops over the rows); above
/// it [`xent_train`] records the two kernels.
pub const FUSED_MAX_ROWS: usize = 4096;

/// Rows wider than this take [`SOFTMAX_WIDE`]: a work-group per row beats a lane per row once
/// the row fills a work-group, and its invocations loop 256× less (llvmpipe's loop limit).
pub const WIDE_COLS: usize = 256;

/// Mirrors `Params` in softmax_xent.wgsl (the row-wise families share one layout).
pub type Params = crate::kernels::prelude::RowParams;

/// Work-group size (rows per work-group).
pub const WG: u32 = 64;

fn groups(rec: &dyn Record, rows: usize) -> [u32; 3] {
    grid_1d(
        rows as u64,
        WG,
        rec.device().info().limits.max_workgroups_per_dimension,
    )
}

/// Records `y = softmax(x)` (or log-softmax) over rows of `x` (rows, cols).
pub fn softmax(
    rec: &mut dyn Record,
    x: &wgpu::Buffer,
    y: &wgpu::Buffer,
    rows: usize,
    cols: usize,
    log: bool,
) -> Result<()> {
    let wide = cols > WIDE_COLS;
    let (spec, g) = if wide {
        let max = rec.device().info().limits.max_workgroups_per_dimension;
        (&SOFTMAX_WIDE, grid_1d(rows as u64, 1, max))
    } else {
        (&SOFTMAX, groups(rec, rows))
    };
    let per_lane = if wide { cols.div_ceil(256) } else { cols };
    check_loops(rec.device(), "softmax", 3 * per_lane as u64 + 16, || {
        format!("rows of {cols} columns")
    })?;
    let pipe = rec.pipeline(spec, &[("LOG", log as u32 as f64)])?;
    let p = Params::new(rows, cols, 1.0);
    let n = (rows * cols) as u64 * 4;
    rec.dispatch(&pipe, &[(x, n), (y, n)], Some(bytemuck::bytes_of(&p)), g)
}

/// Records per-row cross-entropy losses. `from_probs`: `x` holds probabilities, not logits.
/// Labels must already be checked to lie in `0..cols`.
#[allow(clippy::too_many_arguments)] // buffers and shape: a binding, spelled out
pub fn xent(
    rec: &mut dyn Record,
    x: &wgpu::Buffer,
    labels: &wgpu::Buffer,
    loss: &wgpu::Buffer,
    grad: Option<&wgpu::Buffer>,
    rows: usize,
    cols: usize,
    scale: f32,
    from_probs: bool,
) -> Result<()> {
    let spec = if grad.is_some() {
        &XENT_BACKWARD
    } else {
        &XENT
    };
    check_loops(
        rec.device(),
        "cross-entropy",
        xent_trips(cols, grad.is_some(), from_probs),
        || format!("rows of {cols} classes"),
    )?;
    let pipe = rec.pipeline(spec, &[("FROM_PROBS", from_probs as u32 as f64)])?;
    let p = Params::new(rows, cols, scale);
    let n = (rows * cols) as u64 * 4;
    let r = rows as u64 * 4;
    let g = groups(rec, rows);
    match grad {
        Some(gb) => rec.dispatch(
            &pipe,
            &[(x, n), (labels, r), (loss, r), (gb, n)],
            Some(bytemuck::bytes_of(&p)),
            g,
        ),
        None => rec.dispatch(
            &pipe,
            &[(x, n), (labels, r), (loss, r)],
            Some(bytemuck::bytes_of(&p)),
            g,
        ),
    }
}

/// Records `acc += [Σ loss, #(argmax x == label), rows]` (a block of 3 floats, at the offset
/// [`AccAt`] gives).
pub fn metrics<'a>(
    rec: &mut dyn Record,
    x: &wgpu::Buffer,
    labels: &wgpu::Buffer,
    loss: &wgpu::Buffer,
    acc: impl Into<AccAt<'a>>,
    rows: usize,
    cols: usize,
) -> Result<()> {
    let acc = acc.into();
    check_loops(
        rec.device(),
        "cross-entropy metrics",
        metrics_trips(rows, cols),
        || format!("{rows} rows of {cols} classes"),
    )?;
    let pipe = rec.pipeline(&METRICS, &[])?;
    let mut p = Params::new(rows, cols, 1.0);
    p.at = acc.at as u32;
    let r = rows as u64 * 4;
    let bufs = [(x, r * cols as u64), (labels, r), (loss, r), acc.binding()];
    rec.dispatch(&pipe, &bufs, Some(bytemuck::bytes_of(&p)), [1, 1, 1])
}

/// Loop iterations of one [`XENT`] / [`XENT_BACKWARD`] invocation (a row).
fn xent_trips(cols: usize, backward: bool, from_probs: bool) -> u64 {
    let c = cols as u64;
    match (from_probs, backward) {
        (true, false) => 0,
        (true, true) => c,
        (false, false) => 2 * c,
        (false, true) => 3 * c,
    }
}

/// Loop iterations of one [`METRICS`] invocation (rows i, i+64, … and the tree).
fn metrics_trips(rows: usize, cols: usize) -> u64 {
    rows.div_ceil(WG as usize) as u64 * (cols as u64 + 1) + 8
}

/// The loss end of a training step: per-row loss and `grad = (softmax − onehot)·scale`, and
/// `acc += [Σ loss, #correct, rows]`. One dispatch up to [`FUSED_MAX_ROWS`] rows (the same
/// bits as [`xent`] then [`metrics`], which it records above that).
#[allow(clippy::too_many_arguments)] // buffers and shape: a binding, spelled out
pub fn xent_train<'a>(
    rec: &mut dyn Record,
    x: &wgpu::Buffer,
    labels: &wgpu::Buffer,
    loss: &wgpu::Buffer,
    grad: &wgpu::Buffer,
    acc: impl Into<AccAt<'a>>,
    rows: usize,
    cols: usize,
    scale: f32,
    from_probs: bool,
) -> Result<()> {
    let acc = acc.into();
    let fused_trips = rows.div_ceil(WG as usize) as u64
        * (xent_trips(cols, true, from_probs) + cols as u64 + 1)
        + 8;
    let fused_fits = rec
        .device()
        .info()
        .limits
        .max_loop_iterations
        .is_none_or(|l| fused_trips <= l as u64);
    if rows > FUSED_MAX_ROWS || !fused_fits {
        xent(
            rec,
            x,
            labels,
            loss,
            Some(grad),
            rows,
            cols,
            scale,
            from_probs,
        )?;
        return metrics(rec, x, labels, loss, acc, rows, cols);
    }
    let pipe = rec.pipeline(&XENT_TRAIN, &[("FROM_PROBS", from_probs as u32 as f64)])?;
    let mut p = Params::new(rows, cols, scale);
    p.at = acc.at as u32;
    let n = (rows * cols) as u64 * 4;
    let r = rows as u64 * 4;
    rec.dispatch(
        &pipe,
        &[(x, n), (labels, r), (loss, r), (grad, n), acc.binding()],
        Some(bytemuck::bytes_of(&p)),
        [1, 1, 1],
    )
}
