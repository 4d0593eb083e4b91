//! Batched and strided matmul: one product per work-group z, each operand's matrix z at its
//! own offset, its stored rows `ld` apart (`shaders/matmul.wgsl`, "Batches and strides").
//!
//! Why offsets of the form `base + (z / heads)·outer + (z % heads)·inner` with a row stride:
//! attention's products then read a packed (batch, t, 3E) QKV tensor where it lies (z =
//! b·H + h, outer the sequence's floats, inner the head's first column, ld the packed row) and
//! write head h's columns of a (batch, t, E) output, with no permuting copy and no scratch.
//! Every kernel variant takes the same geometry (the templates' shared rewrite,
//! `matmul_gen::batched`, rewrites each entry point's loads), so the tuner's choice holds for
//! batched products too.
//! The 16-byte-load twins apply when every stride and offset is a multiple of 4 as well as
//! the shape ([`Batch::vec4_ok`]).
//!
//! The geometry travels in the uniform's optimizer words: a batched product refuses the
//! fused update (and the other epilogues, whose auxiliary buffers are not batched).

use crate::error::{Error, Result};
use crate::vocab::Layout;

/// Where one operand's matrices lie: matrix z starts at `base + (z / heads)·outer + (z %
/// heads)·inner` floats, its stored rows `ld` floats apart.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Strided {
    /// Offset of matrix 0.
    pub base: u32,
    /// Offset between groups of `heads` matrices.
    pub outer: u32,
    /// Offset between matrices of a group.
    pub inner: u32,
    /// Floats between stored rows (at least the stored row's length).
    pub ld: u32,
}

/// A batch of products of the same (M, N, K), one per work-group z.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Batch {
    /// Products.
    pub count: u32,
    /// Matrices per group (`z / heads` is the group, `z % heads` the matrix in it).
    pub heads: u32,
    /// A's matrices (stored (M, K), or (K, M) for [`Layout::TN`]).
    pub a: Strided,
    /// B's matrices (stored (K, N), or (N, K) for [`Layout::NT`]).
    pub b: Strided,
    /// C's matrices (M, N).
    pub c: Strided,
}

/// The stored (rows, columns) of A, B and C of an (M, N, K) product.
fn stored(m: u32, n: u32, k: u32, layout: Layout) -> [(u32, u32); 3] {
    let a = if layout == Layout::TN { (k, m) } else { (m, k) };
    let b = if layout == Layout::NT { (n, k) } else { (k, n) };
    [a, b, (m, n)]
}

/// The matmul uniform with its optimizer words holding the batch geometry (the same 80
/// bytes): `heads` in the element count, then A's, B's and C's (base, outer, inner, ld) in
/// the next twelve words, which matmul.wgsl's `batch_begin`, `a_ld`, `b_ld` and `c_ld` read
/// back with `bitcast`.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub(crate) struct BatchedParams {
    m: u32,
    n: u32,
    k: u32,
    alpha: f32,
    heads: u32,
    a: [u32; 4],
    b: [u32; 4],
    c: [u32; 4],
    _pad: [u32; 3],
}

fn words(s: &Strided) -> [u32; 4] {
    [s.base, s.outer, s.inner, s.ld]
}

impl Batch {
    /// `count` dense (M, N, K) products one after the other in each buffer (matrix z of A at
    /// z·M·K, and so on), rows their stored length apart.
    pub fn contiguous(count: u32, m: u32, n: u32, k: u32, layout: Layout) -> Batch {
        let [a, b, c] = stored(m, n, k, layout).map(|(r, c)| Strided {
            base: 0,
            outer: r.saturating_mul(c),
            inner: 0,
            ld: c,
        });
        Batch {
            count,
            heads: 1,
            a,
            b,
            c,
        }
    }

    /// The uniform of this batch for an (M, N, K) product with leaky-ReLU slope `alpha`.
    pub(crate) fn params(&self, (m, n, k): (u32, u32, u32), alpha: f32) -> BatchedParams {
        BatchedParams {
            m,
            n,
            k,
            alpha,
            heads: self.heads,
            a: words(&self.a),
            b: words(&self.b),
            c: words(&self.c),
            _pad: [0; 3],
        }
    }

    /// Whether the 16-byte loads and stores stay aligned: every offset and row stride a
    /// multiple of 4 floats.
    pub fn vec4_ok(&self) -> bool {
        [self.a, self.b, self.c]
            .iter()
            .all(|s| [s.base, s.outer, s.inner, s.ld].iter().all(|v| v % 4 == 0))
    }

    /// Checks the geometry against an (M, N, K) product of `layout` and returns the floats
    /// each operand spans (A, B, C): the binding sizes.
    pub(crate) fn check(
        &self,
        (m, n, k): (u32, u32, u32),
        layout: Layout,
        max_groups: u32,
    ) -> Result<[u64; 3]> {
        let bad = |name: &'static str, expected: String, found: String| {
            Err(Error::InvalidArgument {
                op: "matmul (batched)",
                name,
                expected,
                found,
            })
        };
        if self.count == 0 || self.heads == 0 {
            return bad(
                "batch",
                "at least one product and one matrix per group".into(),
                format!("count {}, heads {}", self.count, self.heads),
            );
        }
        if self.count > max_groups {
            return bad(
                "batch",
                format!("at most {max_groups} products (work-groups per dimension)"),
                self.count.to_string(),
            );
        }
        let (last, h) = (self.count as u64 - 1, self.heads as u64);
        let mut spans = [0u64; 3];
        let names = ["a", "b", "c"];
        for (i, (s, (rows, cols))) in [self.a, self.b, self.c]
            .iter()
            .zip(stored(m, n, k, layout))
            .enumerate()
        {
            if s.ld < cols {
                return bad(
                    names[i],
                    format!("a row stride of at least the stored row's {cols} floats"),
                    format!("ld {}", s.ld),
                );
            }
            // The largest offset of any matrix z < count.
            let (o, r) = (last / h, last % h);
            let mut off = o * s.outer as u64 + r * s.inner as u64;
            if o > 0 {
                off = off.max((o - 1) * s.outer as u64 + (h - 1) * s.inner as u64);
            }
            let span = s.base as u64 + off + (rows as u64 - 1) * s.ld as u64 + cols as u64;
            if span > u32::MAX as u64 {
                return bad(
                    names[i],
                    "fewer than 2^32 floats spanned".into(),
                    span.to_string(),
                );
            }
            spans[i] = span;
        }
        Ok(spans)
    }
}
