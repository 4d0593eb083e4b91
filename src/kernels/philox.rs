//! Philox4x32-10 random words and the distributions drawn from them
//! (`shaders/array_random.wgsl`), for `crate::array::random`'s generators.
//!
//! Why a counter-based generator: value i of a stream is a pure function of (key, counter),
//! so any invocation computes its own values with no state to carry between dispatches,
//! draws are reproducible from a seed on any device and any number of work-groups, and
//! streams (different counters' high words) are independent (Salmon et al., SC 2011; CuPy,
//! JAX and PyTorch's CUDA generator use Philox for the same reasons).

use crate::error::{Error, Result};
use crate::exec::dispatch::Record;
use crate::services::pipeline::{Access, KernelSpec, Shader};

/// `shaders/array_random.wgsl`.
pub const SHADER: Shader = crate::services::pipeline::shader!("array_random");

/// The draw: the output words, then the parameters.
pub const DRAW: KernelSpec = KernelSpec {
    shader: SHADER,
    entry: "main",
    bindings: &[Access::ReadWrite, Access::Uniform],
};

/// Every kernel of the family.
pub const KERNELS: &[KernelSpec] = &[DRAW];

/// What the words become.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Kind {
    /// The raw 32-bit words.
    Bits,
    /// float32 in `[low, high)`: `low + (high - low) · u`, u from a word's top 24 bits.
    Uniform {
        /// Inclusive bound.
        low: f32,
        /// Exclusive bound.
        high: f32,
    },
    /// float32 from N(mean, std²) by Box-Muller on word pairs.
    Normal {
        /// The mean.
        mean: f32,
        /// The standard deviation.
        std: f32,
    },
    /// Integer words in `[low, low + range)` (`low` as the dtype's word), by multiply-shift.
    Integers {
        /// The smallest value, as the dtype's device word.
        low: u32,
        /// How many values.
        range: u32,
    },
}

impl Kind {
    fn code(self) -> f64 {
        match self {
            Kind::Bits => 0.0,
            Kind::Uniform { .. } => 1.0,
            Kind::Normal { .. } => 2.0,
            Kind::Integers { .. } => 3.0,
        }
    }
}

#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    n: u32,
    base_lo: u32,
    base_hi: u32,
    stream_lo: u32,
    stream_hi: u32,
    key0: u32,
    key1: u32,
    range: u32,
    lo: f32,
    hi: f32,
    ilo: u32,
    _pad: u32,
}

/// Where a draw's words come from: the key (the seed), the stream, and the first block
/// (four words each) of the counter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Counter {
    /// The key: the generator's seed.
    pub key: u64,
    /// The counter's high 64 bits: one stream per value.
    pub stream: u64,
    /// The counter's low 64 bits at the draw's first block.
    pub block: u64,
}

/// Blocks a draw of `n` values uses (the counter advances by this much).
pub fn blocks(n: usize) -> u64 {
    n.div_ceil(4) as u64
}

/// Records writing `n` values of `kind` into `out` (n words).
pub fn record(
    rec: &mut dyn Record,
    out: &wgpu::Buffer,
    n: usize,
    at: Counter,
    kind: Kind,
) -> Result<()> {
    if n == 0 {
        return Ok(());
    }
    if n > u32::MAX as usize {
        return Err(Error::InvalidArgument {
            op: "random",
            name: "size",
            expected: format!("at most {} values", u32::MAX),
            found: n.to_string(),
        });
    }
    let (lo, hi, range, ilo) = match kind {
        Kind::Bits => (0.0, 0.0, 0, 0),
        Kind::Uniform { low, high } => (low, high, 0, 0),
        Kind::Normal { mean, std } => (mean, std, 0, 0),
        Kind::Integers { low, range } => (0.0, 0.0, range, low),
    };
    let p = Params {
        n: n as u32,
        base_lo: at.block as u32,
        base_hi: (at.block >> 32) as u32,
        stream_lo: at.stream as u32,
        stream_hi: (at.stream >> 32) as u32,
        key0: at.key as u32,
        key1: (at.key >> 32) as u32,
        range,
        lo,
        hi,
        ilo,
        _pad: 0,
    };
    let pipe = rec.pipeline(&DRAW, &[("KIND", kind.code())])?;
    let groups = crate::services::pipeline::grid_1d(
        blocks(n),
        64,
        rec.device().info().limits.max_workgroups_per_dimension,
    );
    rec.declare_work(0.0, (n * 4) as f64);
    rec.dispatch(
        &pipe,
        &[(out, n as u64 * 4)],
        Some(bytemuck::bytes_of(&p)),
        groups,
    )
}
