//! `shaders/batchnorm.wgsl`: batch normalisation over the channels (last axis) of an (M, C)
//! tensor, training (batch statistics, moving statistics updated) and inference (moving
//! statistics), and its backward pass. The shader's header has the formulas; this module
//! records them.
//!
//! Training forward: statistics per (chunk of rows, channel), merged per channel, normalise
//! (3 dispatches). Backward: Σ dy and Σ dy·x̂ per (chunk, channel), merged per channel into
//! dβ and dγ (written where the caller says: gradient buffers, or scratch the optimizer steps
//! from), then dx (3 dispatches). Chunks keep every invocation's loop short (llvmpipe's loop
//! limit) and sums in a fixed order.

use crate::error::{Error, Result};
use crate::exec::dispatch::Record;
use crate::kernels::prelude::act_code;
use crate::services::pipeline::{grid_1d, Access, KernelSpec, Shader};
use crate::vocab::Activation;

/// batchnorm.wgsl, after the activation prelude.
pub const SHADER: Shader = crate::services::pipeline::shader!("batchnorm" after "activation");

use Access::{ReadOnly as RO, ReadWrite as RW, Uniform as U};

/// (count, mean, M2) per (chunk, channel). Bindings: x, partials, params.
pub const STATS: KernelSpec = KernelSpec {
    shader: SHADER,
    entry: "batchnorm_stats",
    bindings: &[RO, RW, U],
};
/// Merges the chunks: [mean…, 1/√(σ²+ε)…], and the moving statistics while training.
/// Bindings: partials, stats, moving mean, moving variance, params.
pub const COMBINE: KernelSpec = KernelSpec {
    shader: SHADER,
    entry: "batchnorm_combine",
    bindings: &[RO, RW, RW, RW, U],
};
/// Normalises with the batch's statistics. Bindings: x, γ, β, stats, stats, y, params.
pub const FORWARD: KernelSpec = KernelSpec {
    shader: SHADER,
    entry: "batchnorm_forward",
    bindings: &[RO, RO, RO, RO, RO, RW, U],
};
/// Normalises with the moving statistics. Bindings: x, γ, β, moving mean, moving variance,
/// y, params.
pub const INFERENCE: KernelSpec = KernelSpec {
    shader: SHADER,
    entry: "batchnorm_inference",
    bindings: &[RO, RO, RO, RO, RO, RW, U],
};
/// Σ dy and Σ dy·x̂ per (chunk, channel). Bindings: dy, x, stats, partials, params.
pub const BACKWARD_STATS: KernelSpec = KernelSpec {
    shader: SHADER,
    entry: "batchnorm_backward_stats",
    bindings: &[RO, RO, RO, RW, U],
};
/// Merges them into dγ and dβ. Bindings: partials, dγ, dβ, params.
pub const BACKWARD_COMBINE: KernelSpec = KernelSpec {
    shader: SHADER,
    entry: "batchnorm_backward_combine",
    bindings: &[RO, RW, RW, U],
};
/// dx. Bindings: dy, x, stats, γ, dγ, dβ, gate output, dx, params.
pub const BACKWARD: KernelSpec = KernelSpec {
    shader: SHADER,
    entry: "batchnorm_backward",
    bindings: &[RO, RO, RO, RO, RO, RO, RO, RW, U],
};

/// Every entry point of this family.
pub const KERNELS: &[KernelSpec] = &[
    STATS,
    COMBINE,
    FORWARD,
    INFERENCE,
    BACKWARD_STATS,
    BACKWARD_COMBINE,
    BACKWARD,
];

/// Mirrors `Params` in batchnorm.wgsl.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    m: u32,
    c: u32,
    chunk: u32,
    chunks: u32,
    eps: f32,
    momentum: f32,
    n: u32,
    alpha: f32,
}

/// Rows per chunk of the two-step reductions.
const CHUNK: usize = 512;
/// Rows per invocation of the normalising kernels (`ROWS` in batchnorm.wgsl).
const ROWS: usize = 8;

/// A normalisation's shape and constants: `rows` × `channels`, ε, momentum, and which of γ
/// and β exist.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BnShape {
    /// Rows (N·H·W).
    pub rows: usize,
    /// Channels.
    pub channels: usize,
    /// ε.
    pub eps: f32,
    /// Momentum of the moving statistics.
    pub momentum: f32,
    /// Keras's `scale` (γ exists).
    pub scale: bool,
    /// Keras's `center` (β exists).
    pub center: bool,
}

impl BnShape {
    /// Chunks of the two-step reductions.
    pub fn chunks(&self) -> usize {
        self.rows.div_ceil(CHUNK)
    }

    /// Values of a partial buffer for the forward (3 per chunk and channel) or backward (2)
    /// reduction.
    pub fn partials(&self) -> usize {
        3 * self.chunks() * self.channels
    }

    /// Invocations of the normalising kernels: one per channel and [`ROWS`] rows.
    fn normalise_jobs(&self) -> usize {
        self.rows.div_ceil(ROWS) * self.channels
    }

    fn params(&self, n: usize, alpha: f32) -> Params {
        Params {
            m: self.rows as u32,
            c: self.channels as u32,
            chunk: CHUNK as u32,
            chunks: self.chunks() as u32,
            eps: self.eps,
            momentum: self.momentum,
            n: n as u32,
            alpha,
        }
    }

    fn check(&self) -> Result<()> {
        if self.rows == 0
            || self.channels == 0
            || self.eps.is_nan()
            || self.eps <= 0.0
            || !(0.0..=1.0).contains(&self.momentum)
        {
            return Err(Error::InvalidArgument {
                op: "batchnorm",
                name: "shape",
                expected: "rows and channels of at least 1, ε > 0, momentum in [0, 1]".into(),
                found: format!("{self:?}"),
            });
        }
        Ok(())
    }

    fn constants(
        &self,
        update: bool,
        gate: Option<Activation>,
    ) -> Result<Vec<(&'static str, f64)>> {
        Ok(vec![
            ("HAS_GAMMA", self.scale as u32 as f64),
            ("HAS_BETA", self.center as u32 as f64),
            ("UPDATE", update as u32 as f64),
            ("GATE", gate.map_or(Ok(0), act_code)? as f64),
        ])
    }
}

fn launch(
    rec: &mut dyn Record,
    spec: &KernelSpec,
    constants: &[(&str, f64)],
    buffers: &[(&wgpu::Buffer, u64)],
    params: Params,
    n: usize,
) -> Result<()> {
    let dev = rec.device().clone();
    let pipe = rec.pipeline(spec, constants)?;
    let bytes: u64 = buffers.iter().map(|b| b.1).sum();
    rec.declare_work(0.0, bytes as f64);
    let groups = grid_1d(
        n as u64,
        256,
        dev.info().limits.max_workgroups_per_dimension,
    );
    rec.dispatch(&pipe, buffers, Some(bytemuck::bytes_of(&params)), groups)
}

/// The optional affine parameters, or stand-ins the kernel never reads.
fn affine<'a>(
    s: &BnShape,
    gamma: Option<&'a wgpu::Buffer>,
    beta: Option<&'a wgpu::Buffer>,
    stand_in: &'a wgpu::Buffer,
) -> Result<[(&'a wgpu::Buffer, u64); 2]> {
    if gamma.is_some() != s.scale || beta.is_some() != s.center {
        return Err(Error::Internal {
            op: "batchnorm",
            message: "γ and β must be given exactly when scale and center are on".into(),
        });
    }
    let c = s.channels as u64 * 4;
    Ok([
        gamma.map_or((stand_in, c), |g| (g, c)),
        beta.map_or((stand_in, c), |b| (b, c)),
    ])
}

/// Records the training forward pass: the batch statistics into `stats` (2·C: means, then
/// 1/√(σ²+ε)) through `part` (scratch of [`BnShape::partials`]), the moving statistics
/// updated, and `y = γ·x̂ + β`.
#[allow(clippy::too_many_arguments)] // a pass's operands, spelled out
pub fn train_forward(
    rec: &mut dyn Record,
    s: &BnShape,
    x: &wgpu::Buffer,
    gamma: Option<&wgpu::Buffer>,
    beta: Option<&wgpu::Buffer>,
    moving: (&wgpu::Buffer, &wgpu::Buffer),
    part: &wgpu::Buffer,
    stats: &wgpu::Buffer,
    y: &wgpu::Buffer,
) -> Result<()> {
    s.check()?;
    let (n, c) = ((s.rows * s.channels) as u64 * 4, s.channels as u64 * 4);
    let jobs = s.chunks() * s.channels;
    let pb = s.partials() as u64 * 4;
    launch(
        rec,
        &STATS,
        &s.constants(false, None)?,
        &[(x, n), (part, pb)],
        s.params(jobs, 0.0),
        jobs,
    )?;
    launch(
        rec,
        &COMBINE,
        &s.constants(true, None)?,
        &[(part, pb), (stats, 2 * c), (moving.0, c), (moving.1, c)],
        s.params(s.channels, 0.0),
        s.channels,
    )?;
    let [g, b] = affine(s, gamma, beta, stats)?;
    let el = s.normalise_jobs();
    launch(
        rec,
        &FORWARD,
        &s.constants(false, None)?,
        &[(x, n), g, b, (stats, 2 * c), (stats, 2 * c), (y, n)],
        s.params(el, 0.0),
        el,
    )
}

/// Records the inference pass: `y` normalised with the moving statistics.
pub fn inference(
    rec: &mut dyn Record,
    s: &BnShape,
    x: &wgpu::Buffer,
    gamma: Option<&wgpu::Buffer>,
    beta: Option<&wgpu::Buffer>,
    moving: (&wgpu::Buffer, &wgpu::Buffer),
    y: &wgpu::Buffer,
) -> Result<()> {
    s.check()?;
    let (n, c) = ((s.rows * s.channels) as u64 * 4, s.channels as u64 * 4);
    let [g, b] = affine(s, gamma, beta, moving.0)?;
    let el = s.normalise_jobs();
    launch(
        rec,
        &INFERENCE,
        &s.constants(false, None)?,
        &[(x, n), g, b, (moving.0, c), (moving.1, c), (y, n)],
        s.params(el, 0.0),
        el,
    )
}

/// Records the backward pass: `dgamma` = Σ dy·x̂ and `dbeta` = Σ dy (C each; written even
/// without γ or β, as dx needs them) through `part`, then `dx` times `gate`'s derivative
/// computed from its output (this layer's input) when given. `stats` as the forward pass
/// left it; γ must still hold the value the forward pass used.
#[allow(clippy::too_many_arguments)] // a pass's operands, spelled out
pub fn backward(
    rec: &mut dyn Record,
    s: &BnShape,
    dy: &wgpu::Buffer,
    x: &wgpu::Buffer,
    gamma: Option<&wgpu::Buffer>,
    stats: &wgpu::Buffer,
    part: &wgpu::Buffer,
    (dgamma, dbeta): (&wgpu::Buffer, &wgpu::Buffer),
    gate: Option<(Activation, &wgpu::Buffer)>,
    dx: &wgpu::Buffer,
) -> Result<()> {
    s.check()?;
    if let Some((a, _)) = gate {
        if !a.derivative_from_output() {
            return Err(Error::InvalidArgument {
                op: "batchnorm backward",
                name: "gate",
                expected: "an activation whose derivative follows from its output".into(),
                found: format!("{a:?}"),
            });
        }
    }
    let (n, c) = ((s.rows * s.channels) as u64 * 4, s.channels as u64 * 4);
    let jobs = s.chunks() * s.channels;
    let pb = s.partials() as u64 * 4;
    let k = s.constants(false, gate.map(|g| g.0))?;
    launch(
        rec,
        &BACKWARD_STATS,
        &k,
        &[(dy, n), (x, n), (stats, 2 * c), (part, pb)],
        s.params(jobs, 0.0),
        jobs,
    )?;
    launch(
        rec,
        &BACKWARD_COMBINE,
        &k,
        &[(part, pb), (dgamma, c), (dbeta, c)],
        s.params(s.channels, 0.0),
        s.channels,
    )?;
    let el = s.normalise_jobs();
    let g = gamma.map_or((stats, c), |g| (g, c));
    let gy = gate.map_or((dy, n), |(_, y)| (y, n));
    let alpha = gate.map_or(0.0, |(a, _)| a.alpha());
    launch(
        rec,
        &BACKWARD,
        &k,
        &[
            (dy, n),
            (x, n),
            (stats, 2 * c),
            g,
            (dgamma, c),
            (dbeta, c),
            gy,
            (dx, n),
        ],
        s.params(el, alpha),
        el,
    )
}
