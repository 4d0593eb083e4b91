//! Unfused scaled dot-product attention: the scores, the probabilities and the output as
//! separate dispatches, the general case (cross-attention's tq ≠ tk, dk ≠ dv, a padding
//! mask, any head size) and the fallback of the fused kernels ([`crate::kernels::attention`]),
//! whose tiles stop at 128 values per head.
//!
//! Every product is a batched matmul ([`crate::kernels::matmul_batch`]) reading the operands
//! where they lie: work-group z = b·H + h takes head h of sequence b straight from a packed
//! (batch, t, stride) tensor (head h's values at `off + h·width`) and writes head h's columns
//! of the output, so there is no permuting copy and no scratch buffer. Between the products, `shaders/attention_softmax.wgsl` turns a row of scores into
//! probabilities in place (scale, causal and padding masks) and, backward, dP into scale·dS.
//!
//! The work is in phases, so that a caller can put the attention-probability dropout between
//! them: [`probs`] (P = softmax(scale·Q·Kᵀ)), then the caller's dropout of P, then [`output`]
//! (O = P·V); backward, [`backward_v`] (dV, dP), the caller's dropout backward of dP, then
//! [`backward_qk`] (dS, dQ, dK). Memory is quadratic in T: the probabilities (B·H·tq·tk) are
//! saved for the backward pass, and dP is as large.
//!
//! Every dispatch binds one writable buffer, and a phase writes only its own columns, so q, k
//! and v may be one packed buffer, and their gradients another.

use crate::error::{Error, Result};
use crate::exec::dispatch::Record;
use crate::kernels::matmul::{Epilogue, MatmulArgs};
use crate::kernels::matmul_batch::{Batch, Strided};
use crate::kernels::matmul_tune::record_batched;
use crate::services::pipeline::{Access, KernelSpec, Shader};
use crate::vocab::{Activation, Layout};

/// attention_softmax.wgsl: the row softmax and its backward.
pub const SHADER: Shader = crate::services::pipeline::shader!("attention_softmax");

use Access::{ReadOnly as RO, ReadWrite as RW, Uniform as U};

/// Forward: mask (a dummy without one), scores → probabilities in place.
pub const SOFTMAX_FORWARD: KernelSpec = KernelSpec {
    shader: SHADER,
    entry: "attention_softmax_forward",
    bindings: &[RO, RW, U],
};

/// Backward: probabilities, dP → scale·dS in place.
pub const SOFTMAX_BACKWARD: KernelSpec = KernelSpec {
    shader: SHADER,
    entry: "attention_softmax_backward",
    bindings: &[RO, RW, U],
};

/// Every entry point of this family.
pub const KERNELS: &[KernelSpec] = &[SOFTMAX_FORWARD, SOFTMAX_BACKWARD];

/// Where one operand's rows are: a (batch, rows, stride) f32 tensor, head h's values at
/// `off + h·width` (width: dk for queries and keys, dv for values and the output).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Operand {
    /// Floats per row.
    pub stride: usize,
    /// Offset of head 0's first value in a row.
    pub off: usize,
}

/// The shape of a general attention.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct General {
    /// Sequences.
    pub batch: usize,
    /// Heads.
    pub heads: usize,
    /// Query rows per sequence.
    pub tq: usize,
    /// Key and value rows per sequence.
    pub tk: usize,
    /// Head size of queries and keys.
    pub dk: usize,
    /// Head size of values (and of the output).
    pub dv: usize,
    /// Query i sees key j only if j ≤ i (Keras's `use_causal_mask`: lower-triangular (tq, tk)).
    pub causal: bool,
    /// A (batch, tq, tk) f32 mask is given: 0.0 hides key j from query i (Keras's
    /// `attention_mask`), combined with `causal`.
    pub masked: bool,
    /// The scores' multiplier (1/√dk normally).
    pub scale: f32,
    /// Queries (rows tq, head width dk); their gradient is laid out alike.
    pub q: Operand,
    /// Keys (rows tk, width dk); their gradient alike.
    pub k: Operand,
    /// Values (rows tk, width dv); their gradient alike.
    pub v: Operand,
    /// The output (rows tq, width dv); its gradient alike.
    pub o: Operand,
}

/// Mirrors `Params` in attention_softmax.wgsl.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    tq: u32,
    tk: u32,
    heads: u32,
    causal: u32,
    masked: u32,
    scale: f32,
    _pad: [u32; 2],
}

fn bytes(n: usize) -> u64 {
    n as u64 * 4
}

impl General {
    /// Self-attention over a packed (batch, t, 3·heads·d) QKV tensor (queries, keys, values
    /// one after the other), output (batch, t, heads·d), scale 1/√d: the fused kernel's
    /// [`crate::kernels::attention::Shape::packed`].
    pub fn packed(batch: usize, t: usize, heads: usize, d: usize, causal: bool) -> General {
        let e = heads * d;
        General {
            batch,
            heads,
            tq: t,
            tk: t,
            dk: d,
            dv: d,
            causal,
            masked: false,
            scale: 1.0 / (d as f32).sqrt(),
            q: Operand {
                stride: 3 * e,
                off: 0,
            },
            k: Operand {
                stride: 3 * e,
                off: e,
            },
            v: Operand {
                stride: 3 * e,
                off: 2 * e,
            },
            o: Operand { stride: e, off: 0 },
        }
    }

    /// batch·heads·tq·tk: the saved probabilities (and dP).
    pub fn probs_len(&self) -> usize {
        self.batch * self.heads * self.tq * self.tk
    }

    /// Floats of a tensor of `rows` rows per sequence laid out as `op`.
    pub fn len_of(&self, op: &Operand, rows: usize) -> usize {
        self.batch * rows * op.stride
    }

    /// Floats of the mask: batch·tq·tk.
    pub fn mask_len(&self) -> usize {
        self.batch * self.tq * self.tk
    }

    /// Typed errors for shapes the kernels cannot run.
    pub fn check(&self) -> Result<()> {
        let bad = |name: &'static str, expected: String, found: String| {
            Err(Error::InvalidArgument {
                op: "attention (unfused)",
                name,
                expected,
                found,
            })
        };
        let dims = [self.batch, self.heads, self.tq, self.tk, self.dk, self.dv];
        if dims.contains(&0) {
            return bad(
                "shape",
                "at least one sequence, head, query, key and value per head".into(),
                format!("{self:?}"),
            );
        }
        for (name, op, width) in [
            ("q", self.q, self.dk),
            ("k", self.k, self.dk),
            ("v", self.v, self.dv),
            ("o", self.o, self.dv),
        ] {
            if op.off + self.heads * width > op.stride {
                return bad(
                    name,
                    format!(
                        "heads·width = {} values from offset {} within a row",
                        self.heads * width,
                        op.off
                    ),
                    format!("a row of {}", op.stride),
                );
            }
        }
        let rows = (self.batch * self.heads).max(self.tq);
        if rows > u16::MAX as usize {
            return bad(
                "shape",
                "batch·heads and tq at most 65,535 (work-groups per dimension)".into(),
                format!("{} and {}", self.batch * self.heads, self.tq),
            );
        }
        let largest = [
            self.probs_len(),
            self.len_of(&self.q, self.tq),
            self.len_of(&self.k, self.tk),
            self.len_of(&self.v, self.tk),
            self.len_of(&self.o, self.tq),
        ];
        if largest.iter().any(|&n| n > u32::MAX as usize) {
            return bad(
                "shape",
                "fewer than 2^32 floats per tensor".into(),
                format!("{self:?}"),
            );
        }
        Ok(())
    }

    /// An operand's batch geometry: `rows` rows per sequence, head h at `off + h·width`.
    fn head(&self, op: &Operand, rows: usize, width: usize) -> Strided {
        Strided {
            base: op.off as u32,
            outer: (rows * op.stride) as u32,
            inner: width as u32,
            ld: op.stride as u32,
        }
    }

    /// The probabilities' (and dP's) geometry: contiguous (B·H, tq, tk).
    fn scores(&self) -> Strided {
        Strided {
            base: 0,
            outer: (self.heads * self.tq * self.tk) as u32,
            inner: (self.tq * self.tk) as u32,
            ld: self.tk as u32,
        }
    }

    fn batch_of(&self, a: Strided, b: Strided, c: Strided) -> Batch {
        Batch {
            count: (self.batch * self.heads) as u32,
            heads: self.heads as u32,
            a,
            b,
            c,
        }
    }

    fn params(&self) -> Params {
        Params {
            tq: self.tq as u32,
            tk: self.tk as u32,
            heads: self.heads as u32,
            causal: self.causal as u32,
            masked: self.masked as u32,
            scale: self.scale,
            _pad: [0; 2],
        }
    }

    fn rows_grid(&self) -> [u32; 3] {
        [self.tq as u32, (self.batch * self.heads) as u32, 1]
    }
}

/// One batched product C = op(A)·op(B) over every (sequence, head).
#[allow(clippy::too_many_arguments)] // a product spelled out
fn product(
    rec: &mut dyn Record,
    g: &General,
    (a, sa): (&wgpu::Buffer, Strided),
    (b, sb): (&wgpu::Buffer, Strided),
    (c, sc): (&wgpu::Buffer, Strided),
    (m, n, k): (usize, usize, usize),
    layout: Layout,
) -> Result<()> {
    let args = MatmulArgs {
        a,
        b,
        epilogue: Epilogue::None,
        c,
        m: m as u32,
        n: n as u32,
        k: k as u32,
        layout,
        act: Activation::Linear,
        accumulate: false,
        half: false,
    };
    record_batched(rec, &args, &g.batch_of(sa, sb, sc))
}

/// P = softmax(scale·Q·Kᵀ, masks) into `probs` (B, H, tq, tk). A hidden key's probability is
/// exactly 0; a row with every key hidden is all zeros (Keras 3 multiplies its softmax by the
/// mask, which gives the same; PyTorch gives NaN). `mask` is required when `g.masked`.
pub fn probs(
    rec: &mut dyn Record,
    g: &General,
    q: &wgpu::Buffer,
    k: &wgpu::Buffer,
    mask: Option<&wgpu::Buffer>,
    probs: &wgpu::Buffer,
) -> Result<()> {
    g.check()?;
    if g.masked != mask.is_some() {
        return Err(Error::InvalidArgument {
            op: "attention (unfused)",
            name: "mask",
            expected: format!("a mask exactly when `masked` ({})", g.masked),
            found: format!("mask given: {}", mask.is_some()),
        });
    }
    product(
        rec,
        g,
        (q, g.head(&g.q, g.tq, g.dk)),
        (k, g.head(&g.k, g.tk, g.dk)),
        (probs, g.scores()),
        (g.tq, g.tk, g.dk),
        Layout::NT,
    )?;
    let dev = rec.device().clone();
    let (mask, mask_bytes) = match mask {
        Some(m) => (m, bytes(g.mask_len())),
        None => (dev.core().dummy_buffer(), 16),
    };
    let pipe = rec.pipeline(&SOFTMAX_FORWARD, &[])?;
    rec.declare_work(
        5.0 * g.probs_len() as f64,
        (bytes(g.probs_len()) * 3 + if g.masked { mask_bytes } else { 0 }) as f64,
    );
    rec.dispatch(
        &pipe,
        &[(mask, mask_bytes), (probs, bytes(g.probs_len()))],
        Some(bytemuck::bytes_of(&g.params())),
        g.rows_grid(),
    )
}

/// O = P·V into `o`'s columns (other columns untouched). `p` is [`probs`]'s output or its
/// dropped-out copy.
pub fn output(
    rec: &mut dyn Record,
    g: &General,
    p: &wgpu::Buffer,
    v: &wgpu::Buffer,
    o: &wgpu::Buffer,
) -> Result<()> {
    g.check()?;
    product(
        rec,
        g,
        (p, g.scores()),
        (v, g.head(&g.v, g.tk, g.dv)),
        (o, g.head(&g.o, g.tq, g.dv)),
        (g.tq, g.dv, g.tk),
        Layout::NN,
    )
}

/// Backward, part 1: dV = Pᵀ·dO into `dv`'s columns (laid out as v), and dP = dO·Vᵀ into
/// `dp` (probs_len floats). `p` as given to [`output`]; `d_o` laid out as the output.
#[allow(clippy::too_many_arguments)] // the phase's buffers, spelled out
pub fn backward_v(
    rec: &mut dyn Record,
    g: &General,
    p: &wgpu::Buffer,
    v: &wgpu::Buffer,
    d_o: &wgpu::Buffer,
    dv: &wgpu::Buffer,
    dp: &wgpu::Buffer,
) -> Result<()> {
    g.check()?;
    let so = g.head(&g.o, g.tq, g.dv);
    let sv = g.head(&g.v, g.tk, g.dv);
    product(
        rec,
        g,
        (p, g.scores()),
        (d_o, so),
        (dv, sv),
        (g.tk, g.dv, g.tq),
        Layout::TN,
    )?;
    product(
        rec,
        g,
        (d_o, so),
        (v, sv),
        (dp, g.scores()),
        (g.tq, g.tk, g.dv),
        Layout::NT,
    )
}

/// Backward, part 2: dS = P ⊙ (dP − rowsum(dP ⊙ P)) with `probs` the undropped
/// probabilities, written over `dp` (times the scale), then dQ = scale·dS·K into `dq`'s
/// columns and dK = scale·dSᵀ·Q into `dk`'s columns (laid out as q and k; they may be one
/// buffer). `dp` is the gradient of the undropped probabilities (after the caller's dropout
/// backward), and holds scale·dS afterwards.
#[allow(clippy::too_many_arguments)] // the phase's buffers, spelled out
pub fn backward_qk(
    rec: &mut dyn Record,
    g: &General,
    probs: &wgpu::Buffer,
    dp: &wgpu::Buffer,
    q: &wgpu::Buffer,
    k: &wgpu::Buffer,
    dq: &wgpu::Buffer,
    dk: &wgpu::Buffer,
) -> Result<()> {
    g.check()?;
    let n = bytes(g.probs_len());
    let pipe = rec.pipeline(&SOFTMAX_BACKWARD, &[])?;
    rec.declare_work(4.0 * g.probs_len() as f64, (n * 3) as f64);
    rec.dispatch(
        &pipe,
        &[(probs, n), (dp, n)],
        Some(bytemuck::bytes_of(&g.params())),
        g.rows_grid(),
    )?;
    let sq = g.head(&g.q, g.tq, g.dk);
    let sk = g.head(&g.k, g.tk, g.dk);
    product(
        rec,
        g,
        (dp, g.scores()),
        (k, sk),
        (dq, sq),
        (g.tq, g.dk, g.tk),
        Layout::NN,
    )?;
    product(
        rec,
        g,
        (dp, g.scores()),
        (q, sq),
        (dk, sk),
        (g.tk, g.dk, g.tq),
        Layout::TN,
    )
}
