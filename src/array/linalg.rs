//! `matmul` on arrays (the standard's, NumPy's broadcasting and 1-D rules), on the tuned
//! matmul kernels through their batched, strided form: an operand that is a transposed view
//! is read in place (the TN and NT layouts), batch axes that broadcast have stride 0, and
//! only what the kernels cannot address (negative strides, more than two batch axes that do
//! not merge, both operands transposed) is copied first.
//! float64 and the integer dtypes compute in their own dtype instead (`exact`), except the
//! narrow integer products float32 sums exactly (`exact_in_f32`), which keep the fast kernels.

use crate::array::array::{Array, Strided};
use crate::array::complex_fold;
use crate::array::dtype::{promote, DType, Kind};
use crate::array::eval::alloc_words;
use crate::array::layout::{broadcast_shapes, coalesce, Layout};
use crate::array::ops::Binary;
use crate::error::{Error, Result};
use crate::exec::recorder::Recorder;
use crate::kernels::matmul::{Epilogue, MatmulArgs};
use crate::kernels::matmul_batch::{Batch, Strided as MatStrided};
use crate::kernels::matmul_tune::record_batched;
use crate::vocab::{Activation, Layout as MatLayout};

/// How a matrix view of `rows × cols` with strides `(sr, sc)` is stored for the kernels:
/// (transposed, row stride), or None when they cannot read it in place.
fn stored(rows: usize, cols: usize, sr: isize, sc: isize) -> Option<(bool, u32)> {
    if sr < 0 || sc < 0 {
        return None;
    }
    let (sr, sc) = (sr as usize, sc as usize);
    if (cols == 1 || sc == 1) && (rows == 1 || sr >= cols) {
        return Some((false, if rows == 1 { cols } else { sr } as u32));
    }
    if (rows == 1 || sr == 1) && (cols == 1 || sc >= rows) {
        return Some((true, if cols == 1 { rows } else { sc } as u32));
    }
    None
}

impl Array {
    /// The matrix product over the last two axes, batch axes broadcast; a 1-D operand is a
    /// row (first) or a column (second) vector whose axis the result drops, as in NumPy.
    /// float32 and float16 run on the tuned matmul kernels (float16 rounded once at the end),
    /// and so do the narrow integers where float32 sums them exactly (`exact_in_f32`);
    /// float64 and the other integer products compute in the dtype itself (`exact`).
    pub fn matmul(&self, other: &Array) -> Result<Array> {
        self.check_device(other, "matmul")?;
        let out_dtype = promote(self.dtype(), other.dtype())?;
        if out_dtype.is_complex() && self.ndim() > 0 && other.ndim() > 0 {
            return complex_fold::matmul(self, other);
        }
        if out_dtype == DType::Bool || self.ndim() == 0 || other.ndim() == 0 {
            return Err(Error::DType {
                op: "matmul",
                expected: "numeric arrays of at least one axis".into(),
                found: format!(
                    "{} of shape {:?} and {} of shape {:?}",
                    self.dtype(),
                    self.shape(),
                    other.dtype(),
                    other.shape()
                ),
            });
        }
        let a1 = self.ndim() == 1;
        let b1 = other.ndim() == 1;
        let a = if a1 {
            self.expand_dims(0)?
        } else {
            self.clone()
        };
        let b = if b1 {
            other.expand_dims(1)?
        } else {
            other.clone()
        };
        let (ra, rb) = (a.ndim(), b.ndim());
        let (m, k) = (a.shape()[ra - 2], a.shape()[ra - 1]);
        let (k2, n) = (b.shape()[rb - 2], b.shape()[rb - 1]);
        if k != k2 {
            return Err(Error::ShapeMismatch {
                op: "matmul",
                expected: format!(
                    "the first's last axis ({k}) equal to the second's second-to-last"
                ),
                found: format!("shapes {:?} and {:?}", self.shape(), other.shape()),
            });
        }
        let batch = broadcast_shapes("matmul", &[&a.shape()[..ra - 2], &b.shape()[..rb - 2]])?;
        let mut out_shape = batch.clone();
        out_shape.extend([m, n]);
        let fast_int = exact_in_f32(self.dtype(), other.dtype(), k);
        if !fast_int && (out_dtype == DType::Float64 || out_dtype.kind() != Kind::Float) {
            let mut r = exact(&a, &b, out_dtype)?;
            if a1 {
                r = r.squeeze(&[r.ndim() - 2])?;
            }
            if b1 {
                r = r.squeeze(&[r.ndim() - 1])?;
            }
            return Ok(r);
        }
        let count: usize = batch.iter().product();
        let device = self.device().clone();
        let f = DType::Float32;
        let result = if count == 0 || m == 0 || n == 0 {
            Array::empty(&device, &out_shape, f)?
        } else if k == 0 {
            Array::zeros(&device, &out_shape, f)?.copy()?
        } else {
            let mut ashape = batch.clone();
            ashape.extend([m, k]);
            let mut bshape = batch.clone();
            bshape.extend([k, n]);
            let av = a.astype(f)?.broadcast_to(&ashape)?;
            let bv = b.astype(f)?.broadcast_to(&bshape)?;
            product(&av, &bv, &batch, (m, n, k), &out_shape)?
        };
        let mut r = result;
        if a1 {
            r = r.squeeze(&[r.ndim() - 2])?;
        }
        if b1 {
            r = r.squeeze(&[r.ndim() - 1])?;
        }
        if out_dtype == f {
            Ok(r)
        } else {
            // float16: products and sums in float32, each result rounded once. Integers
            // (`exact_in_f32`): every sum is an integer of at most 2^24, exact in float32,
            // and the cast truncates nothing and wraps to the dtype's width as NumPy's sum
            // does.
            r.astype(out_dtype)
        }
    }
}

/// Whether an integer (or bool) `a @ b` over `k` terms is exact on the float32 kernels:
/// every product and partial sum is an integer of magnitude at most k·max|a|·max|b|, and
/// float32 holds every integer up to 2^24. So int8 @ int8 (128·128) stays on the fast
/// kernels up to k = 1024, uint8 @ uint8 up to k = 258, int8 @ uint8 up to k = 514; wider
/// dtypes or longer sums take the exact, slower path in the dtype itself.
fn exact_in_f32(a: DType, b: DType, k: usize) -> bool {
    let bound = |d: DType| -> Option<f64> {
        if d.kind() == Kind::Float || d.kind() == Kind::Complex || d.is_wide_int() {
            return None;
        }
        let (lo, hi) = d.range();
        Some(lo.abs().max(hi))
    };
    match (bound(a), bound(b)) {
        (Some(x), Some(y)) => k as f64 * x * y <= (1u64 << 24) as f64,
        _ => false,
    }
}

/// `a @ b` (`a`: `(..., m, k)`, `b`: `(..., k, n)`, batch axes broadcasting) computed in
/// `dtype` itself, as NumPy does: float64 in float64, integers wrapping in their width. It is
/// the reduction `Σ_k a[..., m, k, None] · b[..., None, k, n]` over the fused broadcast
/// product, so the `m × k × n` products are never stored, and one generated kernel per
/// dtype does the work: float sums are compensated (Kahan), and integer sums wrap in 32 or
/// 64 bits, which modulo 2^8 or 2^16 is the narrow dtype's own wrapping product once cast
/// back. Not tiled: correctness first, the float32 path is the fast one.
fn exact(a: &Array, b: &Array, dtype: DType) -> Result<Array> {
    let (ra, rb) = (a.ndim(), b.ndim());
    let av = a.astype(dtype)?.expand_dims(ra)?;
    let bv = b.astype(dtype)?.expand_dims(rb - 2)?;
    let r = av.binary(Binary::Multiply, &bv)?.sum(Some(&[-2]), false)?;
    if r.dtype() == dtype {
        Ok(r)
    } else {
        r.astype(dtype)
    }
}

/// C = A·B for float32 views already broadcast to the batch.
fn product(
    a: &Array,
    b: &Array,
    batch: &[usize],
    (m, n, k): (usize, usize, usize),
    out_shape: &[usize],
) -> Result<Array> {
    let device = a.device().clone();
    let nb = batch.len();
    let mut sa = a.strided()?;
    let mut sb = b.strided()?;
    let mat = |s: &Strided, r: usize, c: usize| {
        stored(r, c, s.layout.strides[nb], s.layout.strides[nb + 1])
    };
    let copy = |x: &Array| -> Result<Strided> { x.copy()?.strided() };
    if mat(&sa, m, k).is_none() {
        sa = copy(a)?;
    }
    let lb = mat(&sb, k, n);
    if lb.is_none() || (mat(&sa, m, k).is_some_and(|l| l.0) && lb.is_some_and(|l| l.0)) {
        sb = copy(b)?;
    }
    // Batch axes merged across the operands and the contiguous output.
    let out_strides = Layout::contiguous(out_shape).strides;
    let batch_strides = |s: &Strided| s.layout.strides[..nb].to_vec();
    let mut all = vec![
        batch_strides(&sa),
        batch_strides(&sb),
        out_strides[..nb].to_vec(),
    ];
    let (mut cb, mut cs) = coalesce(batch, &all);
    if cb.len() > 2 || cs.iter().flatten().any(|&s| s < 0) {
        sa = copy(&Array::from_strided(&device, DType::Float32, sa))?;
        sb = copy(&Array::from_strided(&device, DType::Float32, sb))?;
        all = vec![
            batch_strides(&sa),
            batch_strides(&sb),
            out_strides[..nb].to_vec(),
        ];
        (cb, cs) = coalesce(batch, &all);
    }
    // The matrices' layouts, read from the operands as they are now: a copy made for the
    // batch axes is row-major whatever the view it replaced was.
    let (Some((ta, lda)), Some((tb, ldb))) = (mat(&sa, m, k), mat(&sb, k, n)) else {
        return Err(Error::Internal {
            op: "matmul",
            message: "a contiguous copy is not addressable".into(),
        });
    };
    let layout = match (ta, tb) {
        (false, false) => MatLayout::NN,
        (true, false) => MatLayout::TN,
        (false, true) => MatLayout::NT,
        (true, true) => {
            return Err(Error::Internal {
                op: "matmul",
                message: "both operands transposed after B was copied".into(),
            })
        }
    };
    let geometry = |i: usize, base: usize, ld: u32| -> MatStrided {
        let st = &cs[i];
        let (outer, inner) = match cb.len() {
            0 => (0, 0),
            1 => (st[0], 0),
            _ => (st[0], st[1]),
        };
        MatStrided {
            base: base as u32,
            outer: outer as u32,
            inner: inner as u32,
            ld,
        }
    };
    let count: usize = batch.iter().product();
    let heads = if cb.len() == 2 { cb[1] } else { 1 };
    let c = alloc_words(&device, out_shape.iter().product())?;
    let geo = Batch {
        count: count as u32,
        heads: heads as u32,
        a: geometry(0, sa.layout.offset, lda),
        b: geometry(1, sb.layout.offset, ldb),
        c: geometry(2, 0, n as u32),
    };
    let args = MatmulArgs {
        a: sa.data.buffer(),
        b: sb.data.buffer(),
        epilogue: Epilogue::None,
        c: c.buffer(),
        m: m as u32,
        n: n as u32,
        k: k as u32,
        layout,
        act: Activation::Linear,
        accumulate: false,
        half: false,
    };
    let mut rec = Recorder::new(&device);
    record_batched(&mut rec, &args, &geo)?;
    rec.submit()?;
    Ok(Array::from_strided(
        &device,
        DType::Float32,
        Strided {
            data: c,
            layout: Layout::contiguous(out_shape),
        },
    ))
}
