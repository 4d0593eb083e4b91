//! LU with partial pivoting, Cholesky and triangular solves of batches of contiguous n×n
//! float32 matrices on the device (`shaders/array_lu.wgsl`, `shaders/array_lu_update.wgsl`,
//! `shaders/array_lu_trailing.wgsl`, `shaders/array_trsm.wgsl`,
//! `shaders/array_trsv_permute.wgsl`), for `array::decomp`.
//!
//! LU is right-looking and blocked by panels of [`PANEL`] columns: a workgroup per matrix
//! factors a panel (`shaders/array_lu_panel.wgsl`: pivot, swap, scale and the panel's
//! rank-1 update per column, barriers between), one dispatch turns the panel's rows right of
//! it into U12, and the trailing block takes the panel's whole rank-[`PANEL`] update as one
//! product on the tuned matmul kernels (T = L21·U12) and one subtraction, so most of the
//! O(n³) work runs at matmul speed. Cholesky, and LU of batches too large for the batched
//! matmul, take two dispatches per column instead (pivot, swap and scale in a workgroup per
//! matrix; the rank-1 update with an invocation per element). The triangular solves are
//! blocked the same way. No invocation loops more than about 32,768 times (llvmpipe stops
//! an invocation's loops after 65,535 iterations) and nothing depends on subgroups or
//! atomics. The steps are recorded into submissions of at most [`PER_SUBMIT`] dispatches
//! each, which bounds the uniforms held at once for large n.

use crate::error::{Error, Result};
use crate::exec::dispatch::Record;
use crate::exec::recorder::Recorder;
use crate::kernels::matmul::{Epilogue, MatmulArgs};
use crate::kernels::matmul_batch::{Batch, Strided as MatStrided};
use crate::kernels::matmul_tune::record_batched_f32 as record_batched;
use crate::runtime::Device;
use crate::services::pipeline::{grid_1d, Access, KernelSpec, Shader};
use crate::vocab::{Activation, Layout as MatLayout};

/// `shaders/array_lu.wgsl`: Cholesky's column step.
pub const SHADER: Shader = crate::services::pipeline::shader!("array_lu");
/// `shaders/array_lu_update.wgsl`: their trailing update.
pub const SHADER_UPDATE: Shader = crate::services::pipeline::shader!("array_lu_update");
/// `shaders/array_lu_trailing.wgsl`: a panel's trailing update.
pub const SHADER_TRAILING: Shader = crate::services::pipeline::shader!("array_lu_trailing");
/// `shaders/array_lu_panel.wgsl`: a panel of the blocked LU in few dispatches.
pub const SHADER_PANEL: Shader = crate::services::pipeline::shader!("array_lu_panel");
/// `shaders/array_trsm.wgsl`: the blocked triangular solves.
pub const SHADER_TRSM: Shader = crate::services::pipeline::shader!("array_trsm");
/// `shaders/array_trsv_permute.wgsl`: the right-hand sides in the permutation's order.
pub const SHADER_PERMUTE: Shader = crate::services::pipeline::shader!("array_trsv_permute");

use Access::{ReadOnly as RO, ReadWrite as RW, Uniform as U};

/// Cholesky's diagonal and the scaling of column k (one workgroup per matrix).
pub const CHOL_PIVOT: KernelSpec = KernelSpec {
    shader: SHADER,
    entry: "chol_pivot",
    bindings: &[RW, RW, U],
};
/// The rank-1 update of the trailing block.
pub const UPDATE: KernelSpec = KernelSpec {
    shader: SHADER_UPDATE,
    entry: "lu_update",
    bindings: &[RW, U],
};
/// The right-hand sides' rows in the permutation's order.
pub const PERMUTE: KernelSpec = KernelSpec {
    shader: SHADER_PERMUTE,
    entry: "trsv_permute",
    bindings: &[RO, RO, RW, U],
};
/// Columns k0..k1 of an LU panel (one workgroup per matrix).
pub const PANEL_STEPS: KernelSpec = KernelSpec {
    shader: SHADER_PANEL,
    entry: "lu_panel",
    bindings: &[RW, RW, RW, U],
};
/// U12 = L11⁻¹·A12 after a panel (a workgroup per column).
pub const U12: KernelSpec = KernelSpec {
    shader: SHADER_UPDATE,
    entry: "lu_u12",
    bindings: &[RW, U],
};
/// The diagonal block of one panel of a triangular solve.
pub const BLOCK: KernelSpec = KernelSpec {
    shader: SHADER_TRSM,
    entry: "trsm_block",
    bindings: &[RO, RW, U],
};
/// X2 -= T after a panel's product.
pub const SUB: KernelSpec = KernelSpec {
    shader: SHADER_TRSM,
    entry: "trsm_sub",
    bindings: &[RO, RW, U],
};
/// A22 -= T after a panel's product.
pub const TRAILING: KernelSpec = KernelSpec {
    shader: SHADER_TRAILING,
    entry: "lu_trailing",
    bindings: &[RO, RW, U],
};
/// Every kernel of the family.
pub const KERNELS: &[KernelSpec] = &[
    CHOL_PIVOT,
    UPDATE,
    TRAILING,
    PERMUTE,
    PANEL_STEPS,
    U12,
    BLOCK,
    SUB,
];

/// Columns per panel of the blocked LU.
pub const PANEL: usize = 64;

/// Dispatches per submission.
pub const PER_SUBMIT: usize = 512;

#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    batch: u32,
    n: u32,
    k: u32,
    rhs: u32,
}

/// `shaders/array_lu_panel.wgsl`'s uniforms.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
struct PanelParams {
    batch: u32,
    n: u32,
    k0: u32,
    k1: u32,
    jend: u32,
    _pad: [u32; 3],
}

/// Columns one `lu_panel` dispatch factors for order n: each costs an invocation about
/// ⌈n/4⌉ + 3·⌈n/256⌉ + 8 loop iterations, kept under 32,768 in all (llvmpipe stops an
/// invocation after 65,535), the same on every adapter so results do not depend on it.
fn panel_chunk(n: usize) -> usize {
    (32_768 / (n.div_ceil(4) + 3 * n.div_ceil(256) + 8)).clamp(1, PANEL)
}

/// `shaders/array_trsm.wgsl`'s uniforms.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
struct TrsmParams {
    batch: u32,
    n: u32,
    rhs: u32,
    row0: u32,
    rows: u32,
    _pad: [u32; 3],
}

/// Which factorisation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Factor {
    /// P·A = L·U, L unit lower and U in one matrix.
    Lu,
    /// A = L·Lᵀ from the lower triangle (the upper is left as it was).
    Cholesky,
}

/// The device buffers of a factorisation: `batch` contiguous n×n matrices factored in
/// place, the permutation (`batch × n` u32 words) and two info words per matrix (1 + the
/// first failing column or 0; the number of row swaps).
pub struct FactorBuffers<'a> {
    /// The matrices.
    pub a: &'a wgpu::Buffer,
    /// The permutation.
    pub perm: &'a wgpu::Buffer,
    /// The info words.
    pub info: &'a wgpu::Buffer,
    /// Scratch for a panel's product (at least [`scratch_words`]), for the blocked LU.
    pub scratch: Option<&'a wgpu::Buffer>,
}

/// The words of scratch the blocked LU of `batch` matrices of order n uses (0: unblocked).
pub fn scratch_words(batch: usize, n: usize) -> usize {
    if n > PANEL && batch <= u16::MAX as usize {
        batch * (n - PANEL) * (n - PANEL)
    } else {
        0
    }
}

/// Checks that `batch` matrices of `n × cols` words are addressable by u32 indices.
pub fn check_size(op: &'static str, batch: usize, n: usize, cols: usize) -> Result<()> {
    let fits = batch
        .checked_mul(n)
        .and_then(|v| v.checked_mul(cols.max(n)))
        .is_some_and(|v| v <= u32::MAX as usize);
    if fits {
        Ok(())
    } else {
        Err(Error::InvalidArgument {
            op,
            name: "shape",
            expected: "fewer than 2^32 elements in all".into(),
            found: format!("{batch} matrices of {n}×{}", cols.max(n)),
        })
    }
}

/// Submits what `rec` holds once it has [`PER_SUBMIT`] dispatches, starting a new one.
pub(crate) fn flush<'d>(
    device: &'d Device,
    rec: &mut Recorder<'d>,
    count: &mut usize,
) -> Result<()> {
    *count += 1;
    if *count >= PER_SUBMIT {
        std::mem::replace(rec, Recorder::new(device)).submit()?;
        *count = 0;
    }
    Ok(())
}

/// Factors `batch` n×n matrices in place (see [`FactorBuffers`]).
pub fn factor(
    device: &Device,
    b: &FactorBuffers<'_>,
    which: Factor,
    batch: usize,
    n: usize,
) -> Result<()> {
    check_size("lu", batch, n, n)?;
    if batch == 0 || n == 0 {
        return Ok(());
    }
    let max = device.info().limits.max_workgroups_per_dimension;
    let mode = match which {
        Factor::Lu => 0.0,
        Factor::Cholesky => 1.0,
    };
    let words = ((batch * n * n) as u64) * 4;
    let pwords = ((batch * n) as u64) * 4;
    let iwords = ((batch * 2) as u64) * 4;
    let params = |k: usize, jend: usize| Params {
        batch: batch as u32,
        n: n as u32,
        k: k as u32,
        rhs: jend as u32,
    };
    let mut rec = Recorder::new(device);
    let chol_pivot = rec.pipeline(&CHOL_PIVOT, &[])?;
    let update = rec.pipeline(&UPDATE, &[("MODE", mode)])?;
    // The identity permutation and cleared info words, from the host.
    let ident: Vec<u32> = (0..batch).flat_map(|_| 0..n as u32).collect();
    let queue = device.wgpu_queue();
    queue.write_buffer(b.perm, 0, bytemuck::cast_slice(&ident));
    queue.write_buffer(b.info, 0, bytemuck::cast_slice(&vec![0u32; batch * 2]));
    let one_per_matrix = if batch as u64 <= max as u64 {
        [batch as u32, 1, 1]
    } else {
        [max, batch.div_ceil(max as usize) as u32, 1]
    };
    let blocked = which == Factor::Lu && scratch_words(batch, n) > 0;
    // LU panels (or a whole matrix of order ≤ PANEL) factor in a workgroup per matrix;
    // Cholesky, and LU of huge batches of large matrices, take a dispatch pair per column.
    let panels = which == Factor::Lu && (blocked || n <= PANEL);
    let trailing = rec.pipeline(&TRAILING, &[])?;
    let panel_steps = rec.pipeline(&PANEL_STEPS, &[])?;
    let u12 = rec.pipeline(&U12, &[])?;
    let pp = |k0: usize, k1: usize, jend: usize| PanelParams {
        batch: batch as u32,
        n: n as u32,
        k0: k0 as u32,
        k1: k1 as u32,
        jend: jend as u32,
        _pad: [0; 3],
    };
    let all = [(b.a, words), (b.perm, pwords), (b.info, iwords)];
    let mut count = 0;
    let mut j0 = 0;
    while j0 < n {
        let jend = if blocked { (j0 + PANEL).min(n) } else { n };
        if panels {
            for k0 in (j0..jend).step_by(panel_chunk(n)) {
                let k1 = (k0 + panel_chunk(n)).min(jend);
                let per = (n - k0) * (jend - k0);
                rec.declare_work(
                    (2 * batch * per * (k1 - k0)) as f64,
                    (8 * batch * per) as f64,
                );
                rec.dispatch(
                    &panel_steps,
                    &all,
                    Some(bytemuck::bytes_of(&pp(k0, k1, jend))),
                    one_per_matrix,
                )?;
                flush(device, &mut rec, &mut count)?;
            }
        } else {
            for k in j0..jend {
                // LU's pivot, swap and scale are a one-column panel step (no update in it).
                match which {
                    Factor::Lu => rec.dispatch(
                        &panel_steps,
                        &all,
                        Some(bytemuck::bytes_of(&pp(k, k + 1, k + 1))),
                        one_per_matrix,
                    )?,
                    Factor::Cholesky => rec.dispatch(
                        &chol_pivot,
                        &[(b.a, words), (b.info, iwords)],
                        Some(bytemuck::bytes_of(&params(k, 0))),
                        one_per_matrix,
                    )?,
                }
                flush(device, &mut rec, &mut count)?;
                let r = n - k - 1;
                let per = match which {
                    Factor::Lu => r * (jend - k - 1),
                    Factor::Cholesky => r * r,
                };
                if per > 0 {
                    rec.declare_work((2 * batch * per) as f64, (12 * batch * per) as f64);
                    rec.dispatch(
                        &update,
                        &[(b.a, words)],
                        Some(bytemuck::bytes_of(&params(k, jend))),
                        grid_1d((batch * per) as u64, 256, max),
                    )?;
                    flush(device, &mut rec, &mut count)?;
                }
            }
        }
        // U12: the panel's rows right of it, once all of the panel's swaps are made.
        if blocked && jend < n {
            let grid = grid_1d((batch * (n - jend)) as u64, 64, max);
            let per = (jend - j0) * (jend - j0) * (n - jend);
            rec.declare_work((batch * per) as f64, (8 * batch * per) as f64);
            rec.dispatch(
                &u12,
                &[(b.a, words)],
                Some(bytemuck::bytes_of(&params(j0, jend))),
                grid,
            )?;
            flush(device, &mut rec, &mut count)?;
            // A22 -= L21·U12.
            let t = b.scratch.ok_or_else(|| Error::Internal {
                op: "lu",
                message: "the blocked LU was given no scratch".into(),
            })?;
            panel_product(&mut rec, b.a, t, batch, n, j0, jend)?;
            let r = n - jend;
            rec.dispatch(
                &trailing,
                &[(t, (batch * r * r) as u64 * 4), (b.a, words)],
                Some(bytemuck::bytes_of(&params(jend, 0))),
                grid_1d((batch * r * r) as u64, 256, max),
            )?;
            flush(device, &mut rec, &mut count)?;
        }
        j0 = jend;
    }
    rec.submit()?;
    Ok(())
}

/// T = L21·U12 of the panel j0..jend (each matrix's rows jend.. of columns j0..jend times
/// its rows j0..jend of columns jend..), read in place by the batched, strided matmul.
fn panel_product(
    rec: &mut Recorder<'_>,
    a: &wgpu::Buffer,
    t: &wgpu::Buffer,
    batch: usize,
    n: usize,
    j0: usize,
    jend: usize,
) -> Result<()> {
    let r = n - jend;
    let nn = (n * n) as u32;
    let geo = Batch {
        count: batch as u32,
        heads: 1,
        a: MatStrided {
            base: (jend * n + j0) as u32,
            outer: nn,
            inner: 0,
            ld: n as u32,
        },
        b: MatStrided {
            base: (j0 * n + jend) as u32,
            outer: nn,
            inner: 0,
            ld: n as u32,
        },
        c: MatStrided {
            base: 0,
            outer: (r * r) as u32,
            inner: 0,
            ld: r as u32,
        },
    };
    let args = MatmulArgs {
        a,
        b: a,
        epilogue: Epilogue::None,
        c: t,
        m: r as u32,
        n: r as u32,
        k: (jend - j0) as u32,
        layout: MatLayout::NN,
        act: Activation::Linear,
        accumulate: false,
        half: false,
    };
    record_batched(rec, &args, &geo)
}

/// Solves A·X = B for `batch` systems from the LU factors in `lu` and the permutation in
/// `perm` (as [`factor`] leaves them): `rhs_in` holds B (`batch × n × rhs`, contiguous),
/// `x` receives X, `scratch` holds a panel's product (at least `batch × n × rhs` words).
///
/// Blocked by panels of [`PANEL`] rows, as the factorisation is: each panel's diagonal block
/// is one dispatch and the rows still to solve take its update as one matmul and one
/// subtraction, so a solve is about 6n/[`PANEL`] dispatches (it was 2n, a dispatch per
/// column, which left `solve` dispatch-bound) and most of its O(n²·rhs) work runs on the
/// matmul kernels.
#[allow(clippy::too_many_arguments)]
pub fn solve(
    device: &Device,
    lu: &wgpu::Buffer,
    perm: &wgpu::Buffer,
    rhs_in: &wgpu::Buffer,
    x: &wgpu::Buffer,
    scratch: &wgpu::Buffer,
    batch: usize,
    n: usize,
    rhs: usize,
) -> Result<()> {
    check_size("solve", batch, n, rhs)?;
    if batch == 0 || n == 0 || rhs == 0 {
        return Ok(());
    }
    let max = device.info().limits.max_workgroups_per_dimension;
    let words = ((batch * n * n) as u64) * 4;
    let pwords = ((batch * n) as u64) * 4;
    let xwords = ((batch * n * rhs) as u64) * 4;
    let mut rec = Recorder::new(device);
    let permute = rec.pipeline(&PERMUTE, &[])?;
    let params = Params {
        batch: batch as u32,
        n: n as u32,
        k: 0,
        rhs: rhs as u32,
    };
    rec.dispatch(
        &permute,
        &[(rhs_in, xwords), (perm, pwords), (x, xwords)],
        Some(bytemuck::bytes_of(&params)),
        grid_1d((batch * n * rhs) as u64, 256, max),
    )?;
    let panels: Vec<usize> = (0..n).step_by(PANEL).collect();
    let mut count = 1;
    for lower in [true, false] {
        let block = rec.pipeline(&BLOCK, &[("LOWER", if lower { 1.0 } else { 0.0 })])?;
        let sub = rec.pipeline(&SUB, &[])?;
        let order: Vec<usize> = if lower {
            panels.clone()
        } else {
            panels.iter().rev().copied().collect()
        };
        for j0 in order {
            let jend = (j0 + PANEL).min(n);
            let tp = |row0: usize, rows: usize| TrsmParams {
                batch: batch as u32,
                n: n as u32,
                rhs: rhs as u32,
                row0: row0 as u32,
                rows: rows as u32,
                _pad: [0; 3],
            };
            let grid = grid_1d((batch * rhs) as u64, 64, max);
            rec.declare_work(
                (batch * (jend - j0).pow(2) * rhs) as f64,
                (4 * batch * (jend - j0) * (jend - j0 + 2 * rhs)) as f64,
            );
            rec.dispatch(
                &block,
                &[(lu, words), (x, xwords)],
                Some(bytemuck::bytes_of(&tp(j0, jend - j0))),
                grid,
            )?;
            flush(device, &mut rec, &mut count)?;
            // The rows still to solve: below the panel going down, above it going up.
            let (row0, rows) = if lower { (jend, n - jend) } else { (0, j0) };
            if rows == 0 {
                continue;
            }
            panel_rhs_product(
                &mut rec,
                lu,
                x,
                scratch,
                batch,
                n,
                rhs,
                (j0, jend),
                row0,
                rows,
            )?;
            flush(device, &mut rec, &mut count)?;
            rec.dispatch(
                &sub,
                &[(scratch, (batch * rows * rhs) as u64 * 4), (x, xwords)],
                Some(bytemuck::bytes_of(&tp(row0, rows))),
                grid_1d((batch * rows * rhs) as u64, 256, max),
            )?;
            flush(device, &mut rec, &mut count)?;
        }
    }
    rec.submit()?;
    Ok(())
}

/// T = F[row0..row0+rows, j0..jend]·X[j0..jend, :] for every matrix (F the factors, X the
/// right-hand sides), into `t` (`batch × rows × rhs`), by the batched strided matmul in
/// batches of at most 65,535 (a dispatch's z extent).
#[allow(clippy::too_many_arguments)]
fn panel_rhs_product(
    rec: &mut Recorder<'_>,
    lu: &wgpu::Buffer,
    x: &wgpu::Buffer,
    t: &wgpu::Buffer,
    batch: usize,
    n: usize,
    rhs: usize,
    (j0, jend): (usize, usize),
    row0: usize,
    rows: usize,
) -> Result<()> {
    const MAX_BATCH: usize = u16::MAX as usize;
    for first in (0..batch).step_by(MAX_BATCH) {
        let count = (batch - first).min(MAX_BATCH);
        let geo = Batch {
            count: count as u32,
            heads: 1,
            a: MatStrided {
                base: (first * n * n + row0 * n + j0) as u32,
                outer: (n * n) as u32,
                inner: 0,
                ld: n as u32,
            },
            b: MatStrided {
                base: (first * n * rhs + j0 * rhs) as u32,
                outer: (n * rhs) as u32,
                inner: 0,
                ld: rhs as u32,
            },
            c: MatStrided {
                base: (first * rows * rhs) as u32,
                outer: (rows * rhs) as u32,
                inner: 0,
                ld: rhs as u32,
            },
        };
        let args = MatmulArgs {
            a: lu,
            b: x,
            epilogue: Epilogue::None,
            c: t,
            m: rows as u32,
            n: rhs as u32,
            k: (jend - j0) as u32,
            layout: MatLayout::NN,
            act: Activation::Linear,
            accumulate: false,
            half: false,
        };
        record_batched(rec, &args, &geo)?;
    }
    Ok(())
}
