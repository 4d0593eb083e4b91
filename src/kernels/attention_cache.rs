//! `shaders/attention_cache.wgsl`: attention against a key/value cache, what generation
//! runs once per new token instead of the whole window again.
//!
//! The new rows of a packed QKV tensor (a MultiHeadAttention's input projection of the new
//! tokens only) append their keys and values to the cache ([`append`]); then each new query
//! attends to every cached position up to its own ([`attend`], causal). Memory is linear in
//! the context: the cache, and one row of scores per new query and head. Sums run in
//! position order inside one invocation and reductions over fixed trees, so the result is
//! the same bits every run; it equals the fused kernel's within rounding (the order of the
//! softmax's sums differs), which `tests/generate.rs` checks through the tokens generated.

use crate::error::{Error, Result};
use crate::exec::dispatch::Record;
use crate::kernels::prelude::check_loops;
use crate::services::pipeline::{grid_1d, Access, KernelSpec, Shader};

/// attention_cache.wgsl.
pub const SHADER: Shader = crate::services::pipeline::shader!("attention_cache");

use Access::{ReadOnly as RO, ReadWrite as RW, Uniform as U};

/// The new rows' keys and values into the cache.
pub const APPEND: KernelSpec = KernelSpec {
    shader: SHADER,
    entry: "kv_append",
    bindings: &[RO, RW, RW, U],
};

/// The new queries against the cache.
pub const DECODE: KernelSpec = KernelSpec {
    shader: SHADER,
    entry: "attention_decode",
    bindings: &[RO, RO, RO, RW, RW, U],
};

/// Every entry point of this family.
pub const KERNELS: &[KernelSpec] = &[APPEND, DECODE];

/// Invocations per work-group (attention_cache.wgsl's `WG`).
const WG: u32 = 64;

/// Self-attention of `n` new rows per sequence after `past` cached ones: `batch` sequences,
/// `heads` heads of size `d`, the cache holding `cap` positions per sequence.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CacheShape {
    /// Sequences.
    pub batch: usize,
    /// New rows per sequence.
    pub n: usize,
    /// Positions already in the cache.
    pub past: usize,
    /// Heads.
    pub heads: usize,
    /// Head size.
    pub d: usize,
    /// Positions the cache holds per sequence.
    pub cap: usize,
}

/// Mirrors `Params` in attention_cache.wgsl.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    batch: u32,
    n: u32,
    past: u32,
    heads: u32,
    d: u32,
    stride: u32,
    cap: u32,
    scale: f32,
}

impl CacheShape {
    /// Elements of the packed QKV tensor of the new rows (batch, n, 3·H·D).
    pub fn qkv_len(&self) -> usize {
        self.batch * self.n * 3 * self.heads * self.d
    }

    /// Elements of the output (batch, n, H·D).
    pub fn o_len(&self) -> usize {
        self.batch * self.n * self.heads * self.d
    }

    /// Elements of the key cache (and of the value cache): (batch, cap, H·D).
    pub fn cache_len(&self) -> usize {
        self.batch * self.cap * self.heads * self.d
    }

    /// Elements of the scores scratch: (batch, heads, n, cap).
    pub fn scores_len(&self) -> usize {
        self.batch * self.heads * self.n * self.cap
    }

    fn check(&self, rec: &dyn Record) -> Result<Params> {
        let bad = |name: &'static str, expected: String, found: String| {
            Err(Error::InvalidArgument {
                op: "attention (cached)",
                name,
                expected,
                found,
            })
        };
        if self.batch == 0 || self.n == 0 || self.heads == 0 || self.d == 0 {
            return bad(
                "shape",
                "at least one sequence, new row, head and head value".into(),
                format!("{self:?}"),
            );
        }
        if self.past + self.n > self.cap {
            return bad(
                "past",
                format!(
                    "at most {} positions (the cache's) after the new rows",
                    self.cap
                ),
                format!("{} cached and {} new", self.past, self.n),
            );
        }
        let max = rec.device().info().limits.max_workgroups_per_dimension as usize;
        if self.n > max || self.heads > max || self.batch > max {
            return bad(
                "shape",
                format!(
                    "new rows, heads and sequences at most {max} each (workgroups per dimension)"
                ),
                format!("{self:?}"),
            );
        }
        if [self.cache_len(), self.scores_len(), self.qkv_len()]
            .iter()
            .any(|&n| n > u32::MAX as usize)
        {
            return bad(
                "shape",
                "fewer than 2^32 elements per tensor".into(),
                format!("{self:?}"),
            );
        }
        let u = |v: usize| v as u32;
        Ok(Params {
            batch: u(self.batch),
            n: u(self.n),
            past: u(self.past),
            heads: u(self.heads),
            d: u(self.d),
            stride: u(3 * self.heads * self.d),
            cap: u(self.cap),
            scale: 1.0 / (self.d as f32).sqrt(),
        })
    }
}

fn bytes(n: usize) -> u64 {
    n as u64 * 4
}

/// Records the new rows' keys and values (columns H·D.. and 2·H·D.. of `qkv`) into rows
/// `past..past + n` of the caches `kc` and `vc`.
pub fn append(
    rec: &mut dyn Record,
    s: &CacheShape,
    qkv: &wgpu::Buffer,
    kc: &wgpu::Buffer,
    vc: &wgpu::Buffer,
) -> Result<()> {
    let p = s.check(rec)?;
    let max = rec.device().info().limits.max_workgroups_per_dimension;
    let pipe = rec.pipeline(&APPEND, &[])?;
    let buffers = [
        (qkv, bytes(s.qkv_len())),
        (kc, bytes(s.cache_len())),
        (vc, bytes(s.cache_len())),
    ];
    rec.declare_work(0.0, bytes(4 * s.o_len()) as f64);
    rec.dispatch(
        &pipe,
        &buffers,
        Some(bytemuck::bytes_of(&p)),
        grid_1d(s.o_len() as u64, WG, max),
    )
}

/// Records the attention of the new queries (columns 0.. of `qkv`) against the caches, the
/// new rows already appended: `o` (batch, n, H·D) = softmax(q·kᵀ/√D over positions
/// `0..=past + i`)·v, with `scores` as scratch.
pub fn attend(
    rec: &mut dyn Record,
    s: &CacheShape,
    qkv: &wgpu::Buffer,
    (kc, vc): (&wgpu::Buffer, &wgpu::Buffer),
    scores: &wgpu::Buffer,
    o: &wgpu::Buffer,
) -> Result<()> {
    let p = s.check(rec)?;
    let keys = (s.past + s.n) as u64;
    // The longest loops: the channel loop's keys, then a pass over a share of the keys.
    let trips = keys * (s.d as u64).div_ceil(WG as u64) + 2 * keys.div_ceil(WG as u64) + 8;
    check_loops(rec.device(), "attention (cached)", trips, || {
        format!("{keys} cached positions")
    })?;
    let pipe = rec.pipeline(&DECODE, &[])?;
    let buffers = [
        (qkv, bytes(s.qkv_len())),
        (kc, bytes(s.cache_len())),
        (vc, bytes(s.cache_len())),
        (scores, bytes(s.scores_len())),
        (o, bytes(s.o_len())),
    ];
    let pairs = (s.batch * s.heads * s.n) as f64 * keys as f64;
    rec.declare_work(4.0 * pairs * s.d as f64, 2.0 * bytes(s.cache_len()) as f64);
    rec.dispatch(
        &pipe,
        &buffers,
        Some(bytemuck::bytes_of(&p)),
        [s.n as u32, s.heads as u32, s.batch as u32],
    )
}
