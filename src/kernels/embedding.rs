//! `shaders/embedding.wgsl`: Keras's `Embedding`, rows of a table selected by ids, and the
//! table's gradient as a deterministic scatter-add.
//!
//! Forward: `out[i, e] = table[id_i, e]`, zeros for an id outside `[0, rows)` (never an
//! out-of-bounds read). Backward: several positions may hold the same id, so the table's
//! gradient is a scatter-add. Float atomics would make it depend on thread timing (and WGSL
//! has none), so it is a counting sort instead, four dispatches: a count per row, an
//! exclusive prefix of the counts, each row's positions listed in position order, then one
//! invocation per (row, column) summing its positions' `dy` in that order. The result is
//! the same bits on every run. Work: `O(V·N)` comparisons for the count and the list (one
//! invocation per row scans the `N` ids, which the invocations read together), `O(N·E)`
//! additions for the sums; so the whole pass is `O(V·N + N·E)` against the `O(V·N·E)` of a
//! plain scan per (row, column).
//!
//! Loops: an invocation of the count or the list runs `N` iterations, one of the sums at most
//! `N`, one of the prefix `2·⌈V/256⌉ + 256`: on llvmpipe, which stops loops past 65,535
//! iterations, a batch of more ids than that is refused ([`check_loops`]).

use crate::error::{Error, Result};
use crate::exec::dispatch::Record;
use crate::kernels::prelude::check_loops;
use crate::services::pipeline::{grid_1d, Access, KernelSpec, Shader};

/// embedding.wgsl (no prelude).
pub const SHADER: Shader = crate::services::pipeline::shader!("embedding");

use Access::{ReadOnly as RO, ReadWrite as RW, Uniform as U};

/// `out[i, e] = table[id_i, e]` (0 for an invalid id). Bindings: ids, table, out, params.
pub const FORWARD: KernelSpec = KernelSpec {
    shader: SHADER,
    entry: "embedding_forward",
    bindings: &[RO, RO, RW, U],
};
/// `counts[v] = #{i : id_i = v}`. Bindings: ids, counts, params.
pub const COUNT: KernelSpec = KernelSpec {
    shader: SHADER,
    entry: "embedding_count_backward",
    bindings: &[RO, RW, U],
};
/// `starts[v] = Σ_{u<v} counts[u]` for v ≤ V. Bindings: counts, starts, params.
pub const SCAN: KernelSpec = KernelSpec {
    shader: SHADER,
    entry: "embedding_scan_backward",
    bindings: &[RO, RW, U],
};
/// Row v's positions, ascending, at `positions[starts[v]..]`. Bindings: ids, starts,
/// positions, params.
pub const FILL: KernelSpec = KernelSpec {
    shader: SHADER,
    entry: "embedding_fill_backward",
    bindings: &[RO, RO, RW, U],
};
/// `dtable[v, e] = Σ dy[positions[k], e]` over row v's positions in order. Bindings: dy,
/// starts, positions, dtable, params.
pub const BACKWARD: KernelSpec = KernelSpec {
    shader: SHADER,
    entry: "embedding_backward",
    bindings: &[RO, RO, RO, RW, U],
};

/// Every entry point of this family.
pub const KERNELS: &[KernelSpec] = &[FORWARD, COUNT, SCAN, FILL, BACKWARD];

/// Work-group size of every kernel in this family.
pub const WG: u32 = 256;

/// The most rows a table may have: ids are exact f32 values below 2^24, and the kernels
/// compare an id's bits with `f32(rows)`'s, which must be exact.
pub const MAX_ROWS: usize = 1 << 24;

/// Mirrors `Params` in embedding.wgsl.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub struct Params {
    /// Ids in the batch (N).
    pub positions: u32,
    /// The table's rows (V).
    pub rows: u32,
    /// The table's columns (E).
    pub dim: u32,
    /// `f32(rows).to_bits()`: a valid id's bits are below it.
    pub limit: u32,
}

/// A lookup's geometry: `positions` ids (the batch times the ids per sample) into a table
/// of `rows × dim`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EmbShape {
    /// Ids in the batch (N).
    pub positions: usize,
    /// The table's rows (V, Keras's `input_dim`).
    pub rows: usize,
    /// The table's columns (E, Keras's `output_dim`).
    pub dim: usize,
}

/// The backward pass's scratch, u32 words each (any buffers of at least these sizes):
/// a count per row, the rows' starts (`rows + 1`), and the positions listed by row.
#[derive(Clone, Copy, Debug)]
pub struct Scratch<'a> {
    /// `rows` words.
    pub counts: &'a wgpu::Buffer,
    /// `rows + 1` words.
    pub starts: &'a wgpu::Buffer,
    /// `positions` words.
    pub positions: &'a wgpu::Buffer,
}

impl EmbShape {
    /// The sizes of [`Scratch`]'s buffers, in words: counts, starts, positions.
    pub fn scratch_words(&self) -> [usize; 3] {
        [self.rows, self.rows + 1, self.positions]
    }

    /// The kernels' uniform, after checking that every index fits their u32 arithmetic.
    fn params(&self, op: &'static str) -> Result<Params> {
        let bad = |name: &'static str, expected: String, found: String| Error::InvalidArgument {
            op,
            name,
            expected,
            found,
        };
        if self.rows == 0 || self.rows > MAX_ROWS {
            return Err(bad(
                "rows",
                format!("1 to {MAX_ROWS} rows (ids are exact f32 values below 2^24)"),
                self.rows.to_string(),
            ));
        }
        if self.dim == 0 {
            return Err(bad("dim", "at least 1 column".into(), "0".into()));
        }
        if self.positions == 0 {
            return Err(bad("positions", "at least 1 id".into(), "0".into()));
        }
        let most = self.rows.max(self.positions).checked_mul(self.dim);
        if most.is_none_or(|n| n > u32::MAX as usize) {
            return Err(bad(
                "shape",
                format!("at most {} elements in the table and the output", u32::MAX),
                format!("{self:?}"),
            ));
        }
        Ok(Params {
            positions: self.positions as u32,
            rows: self.rows as u32,
            dim: self.dim as u32,
            limit: (self.rows as f32).to_bits(),
        })
    }
}

fn words(n: usize) -> u64 {
    n as u64 * 4
}

fn launch(
    rec: &mut dyn Record,
    spec: &KernelSpec,
    s: &EmbShape,
    p: Params,
    buffers: &[(&wgpu::Buffer, u64)],
    invocations: usize,
) -> Result<()> {
    let max = rec.device().info().limits.max_workgroups_per_dimension;
    let pipe = rec.pipeline(spec, &[("DIM", s.dim as f64)])?;
    let groups = if spec.entry == SCAN.entry {
        [1, 1, 1]
    } else {
        grid_1d(invocations as u64, WG, max)
    };
    rec.declare_work(0.0, buffers.iter().map(|(_, b)| *b as f64).sum::<f64>());
    rec.dispatch(&pipe, buffers, Some(bytemuck::bytes_of(&p)), groups)
}

/// Records `out = table[ids]`: `ids` holds `positions` f32 ids, `table` is (rows, dim),
/// `out` (positions, dim). An id outside `[0, rows)` (negative, too large, NaN) gives a row
/// of zeros; a fractional one is truncated.
pub fn forward(
    rec: &mut dyn Record,
    s: &EmbShape,
    ids: &wgpu::Buffer,
    table: &wgpu::Buffer,
    out: &wgpu::Buffer,
) -> Result<()> {
    let p = s.params("embedding")?;
    let n = s.positions * s.dim;
    let bufs = [
        (ids, words(s.positions)),
        (table, words(s.rows * s.dim)),
        (out, words(n)),
    ];
    launch(rec, &FORWARD, s, p, &bufs, n)
}

/// Records the table's gradient `dtable[v, e] = Σ_{i : id_i = v} dy[i, e]` (summed in
/// position order: the same bits every run), every row written (0 where no id selects it).
/// `ids` as [`forward`]'s, `dy` (positions, dim), `dtable` (rows, dim); `scratch` is
/// overwritten. Four dispatches (see the module docs).
pub fn backward(
    rec: &mut dyn Record,
    s: &EmbShape,
    ids: &wgpu::Buffer,
    dy: &wgpu::Buffer,
    scratch: Scratch<'_>,
    dtable: &wgpu::Buffer,
) -> Result<()> {
    let p = s.params("embedding backward")?;
    let dev = rec.device().clone();
    let trips = (s.positions as u64).max(2 * s.rows.div_ceil(WG as usize) as u64 + WG as u64);
    check_loops(&dev, "embedding backward", trips, || {
        format!("{} ids into a table of {} rows", s.positions, s.rows)
    })?;
    let [nc, ns, np] = s.scratch_words();
    let (ids_b, counts, starts) = (
        (ids, words(s.positions)),
        (scratch.counts, words(nc)),
        (scratch.starts, words(ns)),
    );
    let positions = (scratch.positions, words(np));
    launch(rec, &COUNT, s, p, &[ids_b, counts], s.rows)?;
    launch(rec, &SCAN, s, p, &[counts, starts], 1)?;
    launch(rec, &FILL, s, p, &[ids_b, starts, positions], s.rows)?;
    let bufs = [
        (dy, words(s.positions * s.dim)),
        starts,
        positions,
        (dtable, words(s.rows * s.dim)),
    ];
    launch(rec, &BACKWARD, s, p, &bufs, s.rows * s.dim)
}
