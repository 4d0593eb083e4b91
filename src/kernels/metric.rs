//! `shaders/metric.wgsl`: the metrics beyond loss and accuracy (mean absolute and squared
//! error, the confusion counts behind precision and recall, the histograms behind AUC),
//! accumulated on the device as per-sample sums so an epoch reads them back once.

use crate::error::{Error, Result};
use crate::exec::dispatch::Record;
use crate::kernels::prelude::check_loops;
use crate::services::pipeline::{Access, KernelSpec, Shader};

/// metric.wgsl.
pub const SHADER: Shader = crate::services::pipeline::shader!("metric");

use Access::{ReadOnly as RO, ReadWrite as RW, Uniform as U};

/// Adds one metric's sums into `acc[offset..]`. Bindings: x, t, acc, params.
pub const SUMS: KernelSpec = KernelSpec {
    shader: SHADER,
    entry: "metric_sums",
    bindings: &[RO, RO, RW, U],
};

/// Every entry point of this family.
pub const KERNELS: &[KernelSpec] = &[SUMS];

/// The most thresholds one AUC histograms (work-group memory holds two counters each).
pub const MAX_BUCKETS: usize = 1024;

/// Mirrors `Params` in metric.wgsl.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub struct Params {
    /// Rows.
    pub rows: u32,
    /// Columns.
    pub cols: u32,
    /// Precision and recall's decision threshold.
    pub threshold: f32,
    /// First slot of `acc` this metric adds to.
    pub offset: u32,
    /// AUC's thresholds.
    pub buckets: u32,
    /// Padding to 32 bytes.
    pub _pad: [u32; 3],
}

/// What a dispatch sums (see metric.wgsl).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Sums {
    /// Σ over rows of the mean |p − t| (one slot).
    AbsoluteError,
    /// Σ over rows of the mean (p − t)² (one slot).
    SquaredError,
    /// `[TP, FP, FN]` at `p > threshold` (three slots).
    Confusion {
        /// Decision threshold.
        threshold: f32,
    },
    /// Positives then negatives per bucket of `buckets` evenly spread thresholds
    /// (`2·buckets` slots).
    Histogram {
        /// Thresholds, 2..=[`MAX_BUCKETS`].
        buckets: usize,
    },
}

impl Sums {
    /// Slots of the accumulator it adds to.
    pub fn slots(self) -> usize {
        match self {
            Sums::AbsoluteError | Sums::SquaredError => 1,
            Sums::Confusion { .. } => 3,
            Sums::Histogram { buckets } => 2 * buckets,
        }
    }

    fn code(self) -> f64 {
        match self {
            Sums::AbsoluteError => 1.0,
            Sums::SquaredError => 2.0,
            Sums::Confusion { .. } => 3.0,
            Sums::Histogram { .. } => 4.0,
        }
    }
}

/// How predictions follow from what the last kernel wrote.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Prediction {
    /// The values themselves.
    AsIs,
    /// Their sigmoid (the loss folded a sigmoid output in).
    Sigmoid,
    /// Each row's softmax (the loss folded a softmax output in).
    Softmax,
}

/// Records `acc[offset..offset + what.slots()] += what` for `x`, `t` of (rows, cols).
#[allow(clippy::too_many_arguments)] // buffers and shape: a binding, spelled out
pub fn sums(
    rec: &mut dyn Record,
    what: Sums,
    pred: Prediction,
    x: &wgpu::Buffer,
    t: &wgpu::Buffer,
    acc: &wgpu::Buffer,
    offset: usize,
    rows: usize,
    cols: usize,
) -> Result<()> {
    let buckets = match what {
        Sums::Histogram { buckets } if !(2..=MAX_BUCKETS).contains(&buckets) => {
            return Err(Error::InvalidArgument {
                op: "metric",
                name: "num_thresholds",
                expected: format!("2..={MAX_BUCKETS}"),
                found: buckets.to_string(),
            })
        }
        Sums::Histogram { buckets } => buckets,
        _ => 2,
    };
    let threshold = match what {
        Sums::Confusion { threshold } => threshold,
        _ => 0.5,
    };
    check_loops(
        rec.device(),
        "metric",
        rows.div_ceil(64) as u64 * (3 * cols as u64 + 1) + 2 * MAX_BUCKETS as u64,
        || format!("{rows} rows of {cols} columns"),
    )?;
    let prob = match pred {
        Prediction::AsIs => 0.0,
        Prediction::Sigmoid => 1.0,
        Prediction::Softmax => 2.0,
    };
    let pipe = rec.pipeline(&SUMS, &[("METRIC", what.code()), ("PROB", prob)])?;
    let p = Params {
        rows: rows as u32,
        cols: cols as u32,
        threshold,
        offset: offset as u32,
        buckets: buckets as u32,
        _pad: [0; 3],
    };
    let n = (rows * cols) as u64 * 4;
    rec.dispatch(
        &pipe,
        &[(x, n), (t, n), (acc, ((offset + what.slots()) * 4) as u64)],
        Some(bytemuck::bytes_of(&p)),
        [1, 1, 1],
    )
}
