//! Sorting rows on the device (`shaders/array_sort.wgsl`, `shaders/array_sort_step.wgsl`):
//! order-preserving u32 keys from the values, a bitonic network over (key, position) pairs
//! (stable, because positions break ties), and a gather of the values in sorted order.
//!
//! Why bitonic: its comparisons do not depend on the data, so every step is one dispatch of
//! independent compare-exchanges on any adapter, with or without subgroups or atomics, and
//! the result does not depend on timing. It costs log²(n)/2 passes over the keys (300 for
//! 2^24 keys); a radix sort would cost fewer passes but needs atomics or prefix sums per
//! digit. All steps of a sort are recorded into one submission.

use crate::error::{Error, Result};
use crate::exec::dispatch::Record;
use crate::services::pipeline::{grid_1d, Access, KernelSpec, Shader};

/// `shaders/array_sort.wgsl`: keys and the gather.
pub const SHADER: Shader = crate::services::pipeline::shader!("array_sort");
/// `shaders/array_sort_step.wgsl`: one step of the network.
pub const SHADER_STEP: Shader = crate::services::pipeline::shader!("array_sort_step");

use Access::{ReadOnly as RO, ReadWrite as RW, Uniform as U};

/// Keys and positions from the values (rows padded to a power of two).
pub const INIT: KernelSpec = KernelSpec {
    shader: SHADER,
    entry: "sort_init",
    bindings: &[RO, RW, RW, U],
};
/// One compare-exchange step.
pub const STEP: KernelSpec = KernelSpec {
    shader: SHADER_STEP,
    entry: "sort_step",
    bindings: &[RW, RW, U],
};
/// The values in sorted order.
pub const GATHER: KernelSpec = KernelSpec {
    shader: SHADER,
    entry: "sort_gather",
    bindings: &[RO, RW, RW, U],
};
/// Every kernel of the family.
pub const KERNELS: &[KernelSpec] = &[INIT, STEP, GATHER];

/// How the value words order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyKind {
    /// float32 (NaN last, -0.0 equal to 0.0).
    Float,
    /// Signed integer words.
    Signed,
    /// Unsigned integer and bool words.
    Unsigned,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    rows: u32,
    len: u32,
    padded: u32,
    j: u32,
    k: u32,
    descending: u32,
    _pad: [u32; 2],
}

/// Buffers of one sort: the contiguous source rows (`rows × len` words), the scratch keys
/// and positions (`rows × padded` words each), the output values (`rows × len` words).
pub struct SortBuffers<'a> {
    /// The values, row-major.
    pub src: &'a wgpu::Buffer,
    /// Scratch keys.
    pub keys: &'a wgpu::Buffer,
    /// The sorted positions (row-major, `padded` per row; the first `len` are the row's).
    pub pos: &'a wgpu::Buffer,
    /// The sorted values, when wanted.
    pub out: Option<&'a wgpu::Buffer>,
}

/// The padded row length.
pub fn padded(len: usize) -> usize {
    len.next_power_of_two().max(1)
}

/// Records sorting `rows` rows of `len` values of `kind` (descending if asked).
pub fn record(
    rec: &mut dyn Record,
    b: &SortBuffers<'_>,
    kind: KeyKind,
    rows: usize,
    len: usize,
    descending: bool,
) -> Result<()> {
    let pl = padded(len);
    let total = rows
        .checked_mul(pl)
        .filter(|&t| t <= u32::MAX as usize)
        .ok_or_else(|| Error::InvalidArgument {
            op: "sort",
            name: "shape",
            expected: "fewer than 2^32 padded elements".into(),
            found: format!("{rows} rows of {len} (padded to {pl})"),
        })?;
    if total == 0 {
        return Ok(());
    }
    let kcode = match kind {
        KeyKind::Float => 0.0,
        KeyKind::Signed => 1.0,
        KeyKind::Unsigned => 2.0,
    };
    let max = rec.device().info().limits.max_workgroups_per_dimension;
    let groups = grid_1d(total as u64, 256, max);
    let params = |j: usize, k: usize| Params {
        rows: rows as u32,
        len: len as u32,
        padded: pl as u32,
        j: j as u32,
        k: k as u32,
        descending: descending as u32,
        _pad: [0; 2],
    };
    let (words, words_p) = ((rows * len) as u64 * 4, total as u64 * 4);
    let init = rec.pipeline(&INIT, &[("KIND", kcode)])?;
    rec.dispatch(
        &init,
        &[(b.src, words.max(4)), (b.keys, words_p), (b.pos, words_p)],
        Some(bytemuck::bytes_of(&params(0, 0))),
        groups,
    )?;
    let step = rec.pipeline(&STEP, &[])?;
    let mut k = 2;
    while k <= pl {
        let mut j = k / 2;
        while j >= 1 {
            rec.declare_work(0.0, (total * 16) as f64);
            rec.dispatch(
                &step,
                &[(b.keys, words_p), (b.pos, words_p)],
                Some(bytemuck::bytes_of(&params(j, k))),
                groups,
            )?;
            j /= 2;
        }
        k *= 2;
    }
    if let Some(out) = b.out {
        if rows * len > 0 {
            let gather = rec.pipeline(&GATHER, &[])?;
            rec.dispatch(
                &gather,
                &[(b.src, words), (out, words), (b.pos, words_p)],
                Some(bytemuck::bytes_of(&params(0, 0))),
                grid_1d((rows * len) as u64, 256, max),
            )?;
        }
    }
    Ok(())
}
