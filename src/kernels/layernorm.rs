//! `shaders/layernorm.wgsl`: layer normalisation over the last axis of a (rows, cols)
//! tensor, each row with its own mean and variance (Keras's `LayerNormalization`, nanoGPT's
//! `LayerNorm`), and its backward pass. The shader's header has the formulas; this module
//! records them.
//!
//! Forward: one dispatch, saving each row's mean and 1/√(σ² + ε). Backward: the input
//! gradient (one dispatch), and the parameter
//! gradients dγ = Σ dy·x̂, dβ = Σ dy as a sum per (chunk of rows, column) merged per column
//! (two dispatches). Every reduction is a fixed tree or a fixed order, so results never depend
//! on thread timing, and none uses subgroups or atomics, so every adapter runs them (GL
//! included). The two row kernels give each row [`LnShape::lanes`] invocations: a work-group
//! per row on GPUs, an invocation per row on software adapters, where a barrier costs more
//! than the row's work (on lavapipe, a GPT's 768 rows of 128 take 15 ms a work-group per
//! row).

use crate::error::{Error, Result};
use crate::exec::dispatch::Record;
use crate::kernels::prelude::{act_code, check_loops};
use crate::services::pipeline::{grid_1d, Access, KernelSpec, Shader};
use crate::vocab::Activation;

/// layernorm.wgsl, after the activation prelude.
pub const SHADER: Shader = crate::services::pipeline::shader!("layernorm" after "activation");

use Access::{ReadOnly as RO, ReadWrite as RW, Uniform as U};

/// `y = γ·x̂ + β` and the row statistics. Bindings: x, γ, β, y, stats, params.
pub const FORWARD: KernelSpec = KernelSpec {
    shader: SHADER,
    entry: "layernorm_forward",
    bindings: &[RO, RO, RO, RW, RW, U],
};
/// dx. Bindings: dy, x, γ, stats, gate output, dx, params.
pub const BACKWARD: KernelSpec = KernelSpec {
    shader: SHADER,
    entry: "layernorm_backward",
    bindings: &[RO, RO, RO, RO, RO, RW, U],
};
/// Σ dy·x̂ and Σ dy per (chunk, column). Bindings: dy, x, stats, partials, params.
pub const PARAMS_BACKWARD: KernelSpec = KernelSpec {
    shader: SHADER,
    entry: "layernorm_params_backward",
    bindings: &[RO, RO, RO, RW, U],
};
/// Merges the chunks into dγ and dβ. Bindings: partials, dγ, dβ, params.
pub const PARAMS_COMBINE: KernelSpec = KernelSpec {
    shader: SHADER,
    entry: "layernorm_params_combine",
    bindings: &[RO, RW, RW, U],
};

/// Every entry point of this family.
pub const KERNELS: &[KernelSpec] = &[FORWARD, BACKWARD, PARAMS_BACKWARD, PARAMS_COMBINE];

/// Mirrors `Params` in layernorm.wgsl.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    rows: u32,
    cols: u32,
    chunk: u32,
    chunks: u32,
    eps: f32,
    alpha: f32,
    n: u32,
    _pad: u32,
}

/// Rows per chunk of the parameter gradients: many chunks keep a GPU busy when the width is
/// small; each invocation's loop stays far below llvmpipe's limit.
const CHUNK: usize = 256;
/// Invocations per row of the row kernels (`RW_WG` in the shader).
const ROW_WG: usize = 64;
/// Invocations per work-group of the one-per-element kernels (`EL_WG`).
const EL_WG: u32 = 256;

/// A normalisation's shape and constants: `rows` rows of `cols`, ε, and which of γ and β
/// exist.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LnShape {
    /// Rows (every position of every sample: B·T for a (B, T, E) input).
    pub rows: usize,
    /// The normalised width (the last axis).
    pub cols: usize,
    /// ε.
    pub eps: f32,
    /// Keras's `scale` (γ exists).
    pub scale: bool,
    /// Keras's `center` (β exists).
    pub center: bool,
    /// Invocations per row of the row kernels (1, 2, 4 … 64); `None`: the adapter's
    /// ([`LnShape::lanes`]).
    pub lanes: Option<usize>,
}

impl LnShape {
    /// Chunks of the parameter gradients' reduction.
    pub fn chunks(&self) -> usize {
        self.rows.div_ceil(CHUNK)
    }

    /// Values of the partial buffer of [`params_backward`].
    pub fn partials(&self) -> usize {
        2 * self.chunks() * self.cols
    }

    /// Values of the statistics buffer: a mean and a 1/√(σ² + ε) per row.
    pub fn stats(&self) -> usize {
        2 * self.rows
    }

    fn params(&self, n: usize, alpha: f32) -> Params {
        Params {
            rows: self.rows as u32,
            cols: self.cols as u32,
            chunk: CHUNK as u32,
            chunks: self.chunks() as u32,
            eps: self.eps,
            alpha,
            n: n as u32,
            _pad: 0,
        }
    }

    /// Invocations per row on `dev`: as given, else 1 on a software adapter and 64 (a
    /// work-group) on others.
    pub fn lanes(&self, dev: &crate::runtime::Device) -> usize {
        self.lanes.unwrap_or(
            if dev.info().kind == crate::device::adapter::DeviceKind::Software {
                1
            } else {
                ROW_WG
            },
        )
    }

    fn check(&self, rec: &dyn Record, op: &'static str) -> Result<()> {
        if let Some(l) = self.lanes.filter(|l| !l.is_power_of_two() || *l > ROW_WG) {
            return Err(Error::InvalidArgument {
                op,
                name: "lanes",
                expected: format!("a power of two up to {ROW_WG}"),
                found: l.to_string(),
            });
        }
        if self.rows == 0
            || self.cols == 0
            || !(self.eps > 0.0 && self.eps.is_finite())
            || (self.rows * self.cols) > u32::MAX as usize
        {
            return Err(Error::InvalidArgument {
                op,
                name: "shape",
                expected:
                    "rows and columns of at least 1 (fewer than 2³² elements), a finite ε > 0"
                        .into(),
                found: format!("{self:?}"),
            });
        }
        // The row kernels: three passes over a row's columns and two 6-step trees; the
        // parameter gradients: a chunk, then the chunks.
        let per_row = 3 * self.cols.div_ceil(self.lanes(rec.device())) + 12;
        let trips = per_row.max(CHUNK).max(self.chunks());
        check_loops(rec.device(), op, trips as u64, || format!("{self:?}"))
    }

    fn constants(
        &self,
        dev: &crate::runtime::Device,
        gate: Option<Activation>,
    ) -> Result<Vec<(&'static str, f64)>> {
        Ok(vec![
            ("HAS_GAMMA", self.scale as u32 as f64),
            ("HAS_BETA", self.center as u32 as f64),
            ("GATE", gate.map_or(Ok(0), act_code)? as f64),
            ("LANES", self.lanes(dev) as f64),
        ])
    }

    /// Work-groups of the row kernels.
    fn row_groups(&self, dev: &crate::runtime::Device) -> usize {
        self.rows.div_ceil(ROW_WG / self.lanes(dev))
    }
}

/// How a launch spreads: a work-group per row, or an invocation per job.
enum Grid {
    Rows(usize),
    Jobs(usize),
}

fn launch(
    rec: &mut dyn Record,
    spec: &KernelSpec,
    constants: &[(&str, f64)],
    buffers: &[(&wgpu::Buffer, u64)],
    params: Params,
    grid: Grid,
    flops: usize,
) -> Result<()> {
    let max = rec.device().info().limits.max_workgroups_per_dimension;
    let pipe = rec.pipeline(spec, constants)?;
    let bytes: u64 = buffers.iter().map(|b| b.1).sum();
    rec.declare_work(flops as f64, bytes as f64);
    let groups = match grid {
        Grid::Rows(rows) => grid_1d(rows as u64, 1, max),
        Grid::Jobs(n) => grid_1d(n as u64, EL_WG, max),
    };
    rec.dispatch(&pipe, buffers, Some(bytemuck::bytes_of(&params)), groups)
}

/// The optional affine parameters, or `stand_in` (never read) where absent.
fn affine<'a>(
    s: &LnShape,
    gamma: Option<&'a wgpu::Buffer>,
    beta: Option<&'a wgpu::Buffer>,
    stand_in: &'a wgpu::Buffer,
) -> Result<[(&'a wgpu::Buffer, u64); 2]> {
    if gamma.is_some() != s.scale || beta.is_some() != s.center {
        return Err(Error::Internal {
            op: "layernorm",
            message: "γ and β must be given exactly when scale and center are on".into(),
        });
    }
    let c = s.cols as u64 * 4;
    Ok([
        gamma.map_or((stand_in, c), |g| (g, c)),
        beta.map_or((stand_in, c), |b| (b, c)),
    ])
}

/// Records the forward pass: `y = γ·x̂ + β` for `x` (rows, cols), and `stats`
/// ([`LnShape::stats`]: the rows' means, then their 1/√(σ² + ε)) for the backward pass.
pub fn forward(
    rec: &mut dyn Record,
    s: &LnShape,
    x: &wgpu::Buffer,
    gamma: Option<&wgpu::Buffer>,
    beta: Option<&wgpu::Buffer>,
    y: &wgpu::Buffer,
    stats: &wgpu::Buffer,
) -> Result<()> {
    s.check(rec, "layernorm")?;
    let dev = rec.device().clone();
    let n = (s.rows * s.cols) as u64 * 4;
    let [g, b] = affine(s, gamma, beta, x)?;
    launch(
        rec,
        &FORWARD,
        &s.constants(&dev, None)?,
        &[(x, n), g, b, (y, n), (stats, s.stats() as u64 * 4)],
        s.params(0, 0.0),
        Grid::Rows(s.row_groups(&dev)),
        8 * s.rows * s.cols,
    )
}

/// Records the input gradient `dx` from `dy`, `x` and the forward pass's `stats`, times
/// `gate`'s derivative computed from its output (this layer's input) when given. γ must still
/// hold the value the forward pass used.
#[allow(clippy::too_many_arguments)] // a pass's operands, spelled out
pub fn backward(
    rec: &mut dyn Record,
    s: &LnShape,
    dy: &wgpu::Buffer,
    x: &wgpu::Buffer,
    gamma: Option<&wgpu::Buffer>,
    stats: &wgpu::Buffer,
    gate: Option<(Activation, &wgpu::Buffer)>,
    dx: &wgpu::Buffer,
) -> Result<()> {
    s.check(rec, "layernorm backward")?;
    let dev = rec.device().clone();
    if let Some((a, _)) = gate {
        if !a.derivative_from_output() {
            return Err(Error::InvalidArgument {
                op: "layernorm backward",
                name: "gate",
                expected: "an activation whose derivative follows from its output".into(),
                found: format!("{a:?}"),
            });
        }
    }
    if gamma.is_some() != s.scale {
        return Err(Error::Internal {
            op: "layernorm backward",
            message: "γ must be given exactly when scale is on".into(),
        });
    }
    let n = (s.rows * s.cols) as u64 * 4;
    let g = gamma.map_or((x, s.cols as u64 * 4), |g| (g, s.cols as u64 * 4));
    let gy = gate.map_or((dy, n), |(_, y)| (y, n));
    let alpha = gate.map_or(0.0, |(a, _)| a.alpha());
    launch(
        rec,
        &BACKWARD,
        &s.constants(&dev, gate.map(|g| g.0))?,
        &[
            (dy, n),
            (x, n),
            g,
            (stats, s.stats() as u64 * 4),
            gy,
            (dx, n),
        ],
        s.params(0, alpha),
        Grid::Rows(s.row_groups(&dev)),
        10 * s.rows * s.cols,
    )
}

/// Records the parameter gradients: `dgamma` = Σ_rows dy·x̂ and `dbeta` = Σ_rows dy (cols
/// each; both written whichever of γ and β exist) through `part` ([`LnShape::partials`]).
#[allow(clippy::too_many_arguments)] // a pass's operands, spelled out
pub fn params_backward(
    rec: &mut dyn Record,
    s: &LnShape,
    dy: &wgpu::Buffer,
    x: &wgpu::Buffer,
    stats: &wgpu::Buffer,
    part: &wgpu::Buffer,
    dgamma: &wgpu::Buffer,
    dbeta: &wgpu::Buffer,
) -> Result<()> {
    s.check(rec, "layernorm parameter gradients")?;
    let (n, c) = ((s.rows * s.cols) as u64 * 4, s.cols as u64 * 4);
    let pb = s.partials() as u64 * 4;
    let jobs = s.chunks() * s.cols;
    let k = s.constants(&rec.device().clone(), None)?;
    launch(
        rec,
        &PARAMS_BACKWARD,
        &k,
        &[(dy, n), (x, n), (stats, s.stats() as u64 * 4), (part, pb)],
        s.params(jobs, 0.0),
        Grid::Jobs(jobs),
        4 * s.rows * s.cols,
    )?;
    launch(
        rec,
        &PARAMS_COMBINE,
        &k,
        &[(part, pb), (dgamma, c), (dbeta, c)],
        s.params(s.cols, 0.0),
        Grid::Jobs(s.cols),
        2 * s.partials(),
    )
}
