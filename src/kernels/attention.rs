//! `shaders/attention.wgsl` (forward) and `shaders/attention_backward.wgsl`, after their
//! prelude `shaders/attention_common.wgsl`: fused scaled dot-product attention
//! (FlashAttention's tiling and online softmax; the backward pass recomputes the
//! probabilities from the saved log-sum-exp) over a packed QKV tensor, as one projection of
//! width 3E produces it.
//!
//! Each kernel works like a small register-blocked GEMM: a workgroup of 64 invocations per
//! 32 rows of one (batch, head), each invocation holding 4 rows in registers and computing
//! 4×4 blocks of scores and of the output, so that every value loaded from workgroup memory
//! feeds 16 multiply-adds (the prelude's comment has the details). The blocks' width, `DW`,
//! is an override constant: the head size rounded up to 32, 64 or 128.
//!
//! Memory is linear in T: besides the output, forward saves one log-sum-exp per (batch,
//! head, query), and backward one `delta = Σ dO·O` per row; the T×T scores exist only a
//! tile at a time in workgroup memory. Every sum has one order fixed by the shape (no
//! atomics: dq is query-parallel, dk and dv key-parallel), so results are the same bits
//! every run.

use crate::error::{Error, Result};
use crate::exec::dispatch::Record;
use crate::services::pipeline::{Access, KernelSpec, Shader};

/// attention_common.wgsl, the prelude of both (listed for validation).
pub const COMMON: Shader = crate::services::pipeline::shader!("attention_common");

/// attention.wgsl: the forward pass.
pub const SHADER: Shader = crate::services::pipeline::shader!("attention" after "attention_common");

/// attention_backward.wgsl: the backward pass.
pub const SHADER_BACKWARD: Shader =
    crate::services::pipeline::shader!("attention_backward" after "attention_common");

use Access::{ReadOnly as RO, ReadWrite as RW, Uniform as U};

/// Forward: qkv → O, LSE.
pub const FORWARD: KernelSpec = KernelSpec {
    shader: SHADER,
    entry: "attention_forward",
    bindings: &[RO, RW, RW, U],
};

/// Backward, the queries' part: qkv, O, dO, LSE → dq (in dqkv), delta.
pub const BACKWARD_DQ: KernelSpec = KernelSpec {
    shader: SHADER_BACKWARD,
    entry: "attention_backward_dq",
    bindings: &[RO, RO, RO, RO, RW, RW, U],
};

/// Backward, the keys' and values' part: qkv, dO, LSE, delta → dk, dv (in dqkv).
pub const BACKWARD_DKV: KernelSpec = KernelSpec {
    shader: SHADER_BACKWARD,
    entry: "attention_backward_dkv",
    bindings: &[RO, RO, RO, RO, RW, U],
};

/// Every entry point of this family.
pub const KERNELS: &[KernelSpec] = &[FORWARD, BACKWARD_DQ, BACKWARD_DKV];

/// Rows per workgroup (attention.wgsl's `BQ`).
const WQ: usize = 32;

/// The largest head size (the widest `DW` of attention_common.wgsl).
pub const MAX_HEAD_SIZE: usize = 128;

/// The shape of an attention: `batch` sequences of `t` rows, `heads` heads of size `d`,
/// read from a packed (batch, t, `stride`) QKV tensor at offsets `q_off`, `k_off`, `v_off`
/// (head h's values at `off + h·d`), its output (batch, t, `o_stride`) at `h·d`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Shape {
    /// Sequences.
    pub batch: usize,
    /// Rows (queries and keys) per sequence.
    pub t: usize,
    /// Heads.
    pub heads: usize,
    /// Head size.
    pub d: usize,
    /// Key j is seen by queries i ≥ j only.
    pub causal: bool,
    /// Floats per row of the QKV tensor and its gradient.
    pub stride: usize,
    /// Offsets of the queries, keys and values in a row.
    pub offsets: [usize; 3],
    /// Floats per row of the output and its gradient.
    pub o_stride: usize,
    /// The scores' multiplier (1/√d for scaled dot-product attention).
    pub scale: f32,
}

impl Shape {
    /// Self-attention of a (batch, t, 3·heads·d) tensor holding queries, keys and values
    /// one after the other, its output (batch, t, heads·d), scale 1/√d.
    pub fn packed(batch: usize, t: usize, heads: usize, d: usize, causal: bool) -> Shape {
        let e = heads * d;
        Shape {
            batch,
            t,
            heads,
            d,
            causal,
            stride: 3 * e,
            offsets: [0, e, 2 * e],
            o_stride: e,
            scale: 1.0 / (d as f32).sqrt(),
        }
    }

    /// Elements of the QKV tensor.
    pub fn qkv_len(&self) -> usize {
        self.batch * self.t * self.stride
    }

    /// Elements of the output.
    pub fn o_len(&self) -> usize {
        self.batch * self.t * self.o_stride
    }

    /// Elements of the saved log-sum-exp (and of delta): one per (batch, head, row).
    pub fn lse_len(&self) -> usize {
        self.batch * self.heads * self.t
    }

    fn check(&self) -> Result<Params> {
        let bad = |name: &'static str, expected: String, found: String| {
            Err(Error::InvalidArgument {
                op: "attention",
                name,
                expected,
                found,
            })
        };
        if self.batch == 0 || self.t == 0 || self.heads == 0 || self.d == 0 {
            return bad(
                "shape",
                "at least one sequence, row, head and head value".into(),
                format!("{self:?}"),
            );
        }
        if self.d > MAX_HEAD_SIZE {
            return bad(
                "head size",
                format!("at most {MAX_HEAD_SIZE} values per head"),
                self.d.to_string(),
            );
        }
        let e = self.heads * self.d;
        if let Some(off) = self.offsets.iter().find(|&&o| o + e > self.stride) {
            return bad(
                "offsets",
                format!(
                    "{e} values per row from each offset within a row of {}",
                    self.stride
                ),
                format!("offset {off}"),
            );
        }
        if e > self.o_stride {
            return bad(
                "o_stride",
                format!("at least heads·d = {e}"),
                self.o_stride.to_string(),
            );
        }
        let u = |v: usize| u32::try_from(v).unwrap_or(u32::MAX);
        if self.qkv_len() > u32::MAX as usize || self.lse_len() > u32::MAX as usize {
            return bad(
                "shape",
                "fewer than 2^32 elements per tensor".into(),
                format!("{self:?}"),
            );
        }
        Ok(Params {
            t: u(self.t),
            heads: u(self.heads),
            d: u(self.d),
            causal: self.causal as u32,
            stride: u(self.stride),
            q_off: u(self.offsets[0]),
            k_off: u(self.offsets[1]),
            v_off: u(self.offsets[2]),
            o_stride: u(self.o_stride),
            scale: self.scale,
            _pad: [0; 2],
        })
    }

    fn groups(&self, rec: &dyn Record) -> Result<[u32; 3]> {
        let max = rec.device().info().limits.max_workgroups_per_dimension as usize;
        let (x, y) = (self.t.div_ceil(WQ), self.batch * self.heads);
        if x > max || y > max {
            return Err(Error::InvalidArgument {
                op: "attention",
                name: "shape",
                expected: format!(
                    "batch·heads and t/{WQ} at most {max} (workgroups per dimension)"
                ),
                found: format!("{y} and {x}"),
            });
        }
        Ok([x as u32, y as u32, 1])
    }

    /// The override constants: `DW`, the head size rounded up to 32, 64 or 128.
    fn constants(&self) -> [(&'static str, f64); 1] {
        let dw = self.d.next_power_of_two().max(32);
        [("DW", dw as f64)]
    }

    /// FLOPs of the forward pass (two products of t×t×d per head, halved when causal).
    fn flops(&self) -> f64 {
        let pairs = (self.t * self.t) as f64 * if self.causal { 0.5 } else { 1.0 };
        4.0 * pairs * (self.d * self.batch * self.heads) as f64
    }
}

/// Mirrors `Params` in attention.wgsl.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    t: u32,
    heads: u32,
    d: u32,
    causal: u32,
    stride: u32,
    q_off: u32,
    k_off: u32,
    v_off: u32,
    o_stride: u32,
    scale: f32,
    _pad: [u32; 2],
}

fn bytes(n: usize) -> u64 {
    n as u64 * 4
}

/// Records the forward pass: `o` = softmax(scale·q·kᵀ, causal) · v per head, and the
/// log-sum-exp of each row's scores into `lse` (what [`backward`] needs).
pub fn forward(
    rec: &mut dyn Record,
    s: &Shape,
    qkv: &wgpu::Buffer,
    o: &wgpu::Buffer,
    lse: &wgpu::Buffer,
) -> Result<()> {
    let p = s.check()?;
    let groups = s.groups(rec)?;
    let pipe = rec.pipeline(&FORWARD, &s.constants())?;
    let buffers = [
        (qkv, bytes(s.qkv_len())),
        (o, bytes(s.o_len())),
        (lse, bytes(s.lse_len())),
    ];
    rec.declare_work(s.flops(), buffers.iter().map(|b| b.1 as f64).sum());
    rec.dispatch(&pipe, &buffers, Some(bytemuck::bytes_of(&p)), groups)
}

/// Records the backward pass from `d_o`, the gradient at the output: the gradients of the
/// queries, keys and values into `dqkv` (laid out as `qkv`; other columns untouched),
/// with `delta` (as `lse`) as scratch. `o` and `lse` are the forward pass's.
#[allow(clippy::too_many_arguments)] // the kernels' bindings, spelled out
pub fn backward(
    rec: &mut dyn Record,
    s: &Shape,
    qkv: &wgpu::Buffer,
    o: &wgpu::Buffer,
    d_o: &wgpu::Buffer,
    lse: &wgpu::Buffer,
    delta: &wgpu::Buffer,
    dqkv: &wgpu::Buffer,
) -> Result<()> {
    let p = s.check()?;
    let groups = s.groups(rec)?;
    let (nq, no, nl) = (bytes(s.qkv_len()), bytes(s.o_len()), bytes(s.lse_len()));
    let pipe = rec.pipeline(&BACKWARD_DQ, &s.constants())?;
    rec.declare_work(s.flops(), (nq * 2 + no * 2 + nl * 2) as f64);
    rec.dispatch(
        &pipe,
        &[
            (qkv, nq),
            (o, no),
            (d_o, no),
            (lse, nl),
            (dqkv, nq),
            (delta, nl),
        ],
        Some(bytemuck::bytes_of(&p)),
        groups,
    )?;
    let pipe = rec.pipeline(&BACKWARD_DKV, &s.constants())?;
    rec.declare_work(1.5 * s.flops(), (nq * 2 + no + nl * 2) as f64);
    rec.dispatch(
        &pipe,
        &[(qkv, nq), (d_o, no), (lse, nl), (delta, nl), (dqkv, nq)],
        Some(bytemuck::bytes_of(&p)),
        groups,
    )
}
