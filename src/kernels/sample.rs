//! `shaders/sample.wgsl`: the next token drawn from a row of logits on the device
//! (temperature, top-k, a seeded draw; greedy at temperature 0), written to the list of
//! generated tokens and, as an f32 id, to where the next step's input reads it, so
//! generation reads nothing back between steps. nanoGPT's rule; the f64 reference is
//! [`crate::reference::sample_token`], the draw's uniform [`crate::reference::sample_uniform`].

use crate::error::{Error, Result};
use crate::exec::dispatch::Record;
use crate::kernels::prelude::check_loops;
use crate::services::pipeline::{Access, KernelSpec, Shader};

/// sample.wgsl.
pub const SHADER: Shader = crate::services::pipeline::shader!("sample");

use Access::{ReadOnly as RO, ReadWrite as RW, Uniform as U};

/// One token from one row of logits.
pub const SAMPLE: KernelSpec = KernelSpec {
    shader: SHADER,
    entry: "sample_token",
    bindings: &[RO, RW, RW, U],
};

/// Every entry point of this family.
pub const KERNELS: &[KernelSpec] = &[SAMPLE];

/// Invocations of the one work-group (sample.wgsl's `WG`).
const WG: usize = 256;

/// How a token is drawn.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Draw {
    /// Logits divide by it; 0 is greedy.
    pub temperature: f32,
    /// Only the `top_k` largest logits (ties with the k-th too) may be drawn; `None`: all.
    pub top_k: Option<usize>,
    /// The generator's seed.
    pub seed: u64,
}

/// Mirrors `Params` in sample.wgsl.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    vocab: u32,
    offset: u32,
    top_k: u32,
    temperature: f32,
    seed_lo: u32,
    seed_hi: u32,
    step: u32,
    _pad: u32,
}

/// Records the draw of token number `step` from the `vocab` logits at `offset` of `logits`
/// (of `len` elements): the token to `tokens[step]` (u32; `tokens` of `steps` elements) and
/// to `next[0]` (f32).
#[allow(clippy::too_many_arguments)] // the row, the rule and where the token goes
pub fn sample(
    rec: &mut dyn Record,
    logits: (&wgpu::Buffer, usize),
    (offset, vocab): (usize, usize),
    draw: &Draw,
    step: usize,
    tokens: (&wgpu::Buffer, usize),
    next: &wgpu::Buffer,
) -> Result<()> {
    let bad = |name: &'static str, expected: String, found: String| {
        Err(Error::InvalidArgument {
            op: "sample",
            name,
            expected,
            found,
        })
    };
    if vocab == 0 || offset + vocab > logits.1 || vocab > u32::MAX as usize {
        return bad(
            "logits",
            format!("a row of at least one logit within {} elements", logits.1),
            format!("{vocab} logits at {offset}"),
        );
    }
    if step >= tokens.1 {
        return bad(
            "step",
            format!("below {} (the tokens' length)", tokens.1),
            step.to_string(),
        );
    }
    if !draw.temperature.is_finite() || draw.temperature < 0.0 {
        return bad(
            "temperature",
            "a finite value ≥ 0 (0: greedy)".into(),
            draw.temperature.to_string(),
        );
    }
    if draw.top_k == Some(0) {
        return bad(
            "top_k",
            "at least 1 (None keeps every logit)".into(),
            "0".into(),
        );
    }
    let chunk = vocab.div_ceil(WG) as u64;
    check_loops(rec.device(), "sample", 34 * chunk + 2 * WG as u64, || {
        format!("{vocab} logits")
    })?;
    let p = Params {
        vocab: vocab as u32,
        offset: offset as u32,
        top_k: draw.top_k.map_or(vocab, |k| k.min(vocab)) as u32,
        temperature: draw.temperature,
        seed_lo: draw.seed as u32,
        seed_hi: (draw.seed >> 32) as u32,
        step: step as u32,
        _pad: 0,
    };
    let pipe = rec.pipeline(&SAMPLE, &[])?;
    let buffers = [
        (logits.0, logits.1 as u64 * 4),
        (tokens.0, tokens.1 as u64 * 4),
        (next, 4),
    ];
    rec.declare_work(0.0, vocab as f64 * 4.0 * 34.0);
    rec.dispatch(&pipe, &buffers, Some(bytemuck::bytes_of(&p)), [1, 1, 1])
}
