//! `shaders/windows.wgsl`: a language model's batch drawn on the device from a text resident
//! there, nanoGPT's `get_batch` without the host: `batch` random windows of `block + 1`
//! tokens, the inputs and the next tokens written as f32 ids. The window of each row is a
//! counter-based hash of (seed, step, row), so a training step uploads nothing but its
//! uniform, which the step table writes anyway. The host's copy, bit for bit, is
//! [`crate::reference::windows`].

use crate::error::{Error, Result};
use crate::exec::dispatch::Record;
use crate::services::pipeline::{Access, KernelSpec, Shader};
use crate::tensor::ByteBuffer;

/// windows.wgsl.
pub const SHADER: Shader = crate::services::pipeline::shader!("windows");

use Access::{ReadOnly as RO, ReadWrite as RW, Uniform as U};

/// `x[r, j] = tokens[start(r) + j]`, `y[r, j] = tokens[start(r) + j + 1]`. Bindings: tokens,
/// x, y, params.
pub const WINDOWS: KernelSpec = KernelSpec {
    shader: SHADER,
    entry: "windows_forward",
    bindings: &[RO, RW, RW, U],
};

/// Every entry point of this family.
pub const KERNELS: &[KernelSpec] = &[WINDOWS];

/// Invocations per work-group along a window (windows.wgsl's `@workgroup_size`).
const WG: usize = 64;

/// The token ids of a text on the device: one byte each when every id is below 256 (four per
/// u32 word), else one u32 each.
#[derive(Debug)]
pub struct Tokens {
    buffer: ByteBuffer,
    len: usize,
    packed: bool,
}

impl Tokens {
    /// Uploads `ids` (each below 2^24, so exact as the f32 values the kernel writes).
    pub fn new(dev: &crate::runtime::Device, ids: &[u32]) -> Result<Tokens> {
        if let Some(i) = ids.iter().position(|&v| v >= 1 << 24) {
            return Err(Error::InvalidArgument {
                op: "windows",
                name: "tokens",
                expected: "ids below 2^24 (exact as floats)".into(),
                found: format!("{} at position {i}", ids[i]),
            });
        }
        let packed = ids.iter().all(|&v| v < 256);
        let bytes: Vec<u8> = if packed {
            ids.iter().map(|&v| v as u8).collect()
        } else {
            ids.iter().flat_map(|v| v.to_le_bytes()).collect()
        };
        Ok(Tokens {
            buffer: ByteBuffer::new(dev, &bytes)?,
            len: ids.len(),
            packed,
        })
    }

    /// How many tokens.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True if there are none.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether they are stored as bytes.
    pub fn is_packed(&self) -> bool {
        self.packed
    }
}

/// Which windows a dispatch draws: rows `row0..row0 + batch` of step `step` of the stream
/// seeded by `seed`, `block` tokens each.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Draw {
    /// The stream's seed.
    pub seed: u64,
    /// The step (a training step's optimizer step; 0 for evaluation).
    pub step: u64,
    /// The first row's number.
    pub row0: usize,
    /// Windows drawn.
    pub batch: usize,
    /// Tokens per window (inputs; the targets are the same window one token on).
    pub block: usize,
}

/// Mirrors `Params` in windows.wgsl.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub struct Params {
    seed_lo: u32,
    seed_hi: u32,
    step_lo: u32,
    step_hi: u32,
    row0: u32,
    batch: u32,
    block: u32,
    starts: u32,
    packed: u32,
    _pad: [u32; 3],
}

/// The uniform of `draw` from `tokens`, after checking it: a block of at least one token
/// whose window and next token fit the text (`block < n`), at least one window, rows
/// numbered within u32.
pub fn params(tokens: &Tokens, draw: &Draw) -> Result<Params> {
    let bad = |name: &'static str, expected: String, found: String| Error::InvalidArgument {
        op: "windows",
        name,
        expected,
        found,
    };
    if draw.block == 0 || draw.block >= tokens.len {
        return Err(bad(
            "block",
            format!(
                "at least 1 and below the text's {} tokens (a window and the token after it)",
                tokens.len
            ),
            draw.block.to_string(),
        ));
    }
    if draw.batch == 0 {
        return Err(bad("batch", "at least one window".into(), "0".into()));
    }
    if u32::try_from(draw.row0 + draw.batch).is_err() || u32::try_from(tokens.len).is_err() {
        return Err(bad(
            "rows",
            "rows and tokens numbered below 2^32".into(),
            format!("rows {}..{}", draw.row0, draw.row0 + draw.batch),
        ));
    }
    Ok(Params {
        seed_lo: draw.seed as u32,
        seed_hi: (draw.seed >> 32) as u32,
        step_lo: draw.step as u32,
        step_hi: (draw.step >> 32) as u32,
        row0: draw.row0 as u32,
        batch: draw.batch as u32,
        block: draw.block as u32,
        starts: (tokens.len - draw.block) as u32,
        packed: u32::from(tokens.packed),
        _pad: [0; 3],
    })
}

/// Records drawing `draw`'s windows from `tokens` into `x` and `y` (f32, `batch × block`
/// each, row-major).
pub fn windows(
    rec: &mut dyn Record,
    tokens: &Tokens,
    draw: &Draw,
    x: &wgpu::Buffer,
    y: &wgpu::Buffer,
) -> Result<()> {
    let p = params(tokens, draw)?;
    let max = rec.device().info().limits.max_workgroups_per_dimension as usize;
    if draw.batch > max {
        return Err(Error::InvalidArgument {
            op: "windows",
            name: "batch",
            expected: format!("at most {max} windows per dispatch"),
            found: draw.batch.to_string(),
        });
    }
    let n = (draw.batch * draw.block) as u64;
    let pipe = rec.pipeline(&WINDOWS, &[])?;
    let groups = [draw.block.div_ceil(WG) as u32, draw.batch as u32, 1];
    let per_token = if tokens.packed { 1 } else { 4 };
    // Reads two tokens and writes two floats per element.
    rec.declare_work(0.0, (n * (2 * per_token + 8)) as f64);
    rec.dispatch(
        &pipe,
        &[tokens.buffer.binding(), (x, n * 4), (y, n * 4)],
        Some(bytemuck::bytes_of(&p)),
        groups,
    )
}
