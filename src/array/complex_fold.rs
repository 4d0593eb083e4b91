//! `prod`, `cumulative_sum`, `cumulative_prod` and `matmul` of complex64, made of the array
//! operations that take complex: the fold kernels (`reduce`, `scan`) carry one f32 word
//! per accumulator, so a complex product is folded here in log2(n) elementwise passes
//! (pairwise products, each pass halving the axis; running products by Hillis and Steele's
//! doubling), a complex sum is two compensated real scans, and a complex matrix product is
//! four real ones: (A + iB)(C + iD) = (AC - BD) + i(AD + BC) (Gauss's three-product form
//! saves one but loses accuracy to cancellation).

use crate::array::array::Array;
use crate::array::dtype::DType;
use crate::array::layout::{numel, Index};
use crate::array::ops::{Binary, Unary};
use crate::error::Result;

/// `start..stop` along `axis` of an `ndim`-axis array, every other axis whole.
fn along(ndim: usize, axis: usize, start: usize, stop: usize) -> Vec<Index> {
    (0..ndim)
        .map(|a| Index::Slice {
            start: (a == axis).then_some(start as isize),
            stop: (a == axis).then_some(stop as isize),
            step: None,
        })
        .collect()
}

/// `re + i·im` of two float32 arrays, each part kept exactly (infinities, NaN, -0).
pub(crate) fn compose(re: &Array, im: &Array) -> Result<Array> {
    re.binary(Binary::Complex, im)
}

/// Π of a complex64 array over `axes` (normalized, sorted): pairwise products, each pass
/// multiplying the first half of the remaining axis by the second (an odd one's middle
/// element carried), so the rounding grows as log2(n), not n.
pub(crate) fn prod(x: &Array, axes: &[usize], keepdims: bool) -> Result<Array> {
    let shape = x.shape().to_vec();
    let kept: Vec<usize> = (0..shape.len()).filter(|a| !axes.contains(a)).collect();
    let kshape: Vec<usize> = kept.iter().map(|&a| shape[a]).collect();
    let out_shape: Vec<usize> = if keepdims {
        (0..shape.len())
            .map(|a| if axes.contains(&a) { 1 } else { shape[a] })
            .collect()
    } else {
        kshape.clone()
    };
    let (n, mut r) = (
        numel(&kshape),
        axes.iter().map(|&a| shape[a]).product::<usize>(),
    );
    let dev = x.device();
    if n == 0 || r == 0 {
        return Array::ones(dev, &out_shape, DType::Complex64);
    }
    let order: Vec<usize> = kept.iter().chain(axes).copied().collect();
    let mut y = x.permute_dims(&order)?.reshape(&[Some(n), Some(r)])?;
    while r > 1 {
        let (h, m) = (r / 2, r - r / 2);
        let lo = y.index(&along(2, 1, 0, h))?;
        let hi = y.index(&along(2, 1, m, r))?;
        let z = Array::empty(dev, &[n, m], DType::Complex64)?;
        z.index(&along(2, 1, 0, h))?
            .assign(&lo.binary(Binary::Multiply, &hi)?)?;
        if m > h {
            z.index(&along(2, 1, h, m))?
                .assign(&y.index(&along(2, 1, h, m))?)?;
        }
        y = z;
        r = m;
    }
    let dims: Vec<Option<usize>> = out_shape.iter().map(|&d| Some(d)).collect();
    y.reshape(&dims)
}

/// Running sums or products of a complex64 array along `axis` (normalized), with a leading
/// 0 or 1 when `include_initial`.
pub(crate) fn cumulative(
    x: &Array,
    axis: usize,
    include_initial: bool,
    product: bool,
) -> Result<Array> {
    let shape = x.shape().to_vec();
    let nd = shape.len();
    let len = shape[axis];
    let dev = x.device();
    let y = if product {
        // Hillis and Steele: after the pass of distance d each element holds the product
        // of the 2d elements ending at it.
        let mut y = x.clone();
        let mut d = 1;
        while d < len {
            let z = Array::empty(dev, &shape, DType::Complex64)?;
            z.index(&along(nd, axis, 0, d))?
                .assign(&y.index(&along(nd, axis, 0, d))?)?;
            let p = y
                .index(&along(nd, axis, d, len))?
                .binary(Binary::Multiply, &y.index(&along(nd, axis, 0, len - d))?)?;
            z.index(&along(nd, axis, d, len))?.assign(&p)?;
            y = z;
            d *= 2;
        }
        y
    } else {
        let re = x.unary(Unary::Real)?.cumulative_sum(axis as isize, false)?;
        let im = x.unary(Unary::Imag)?.cumulative_sum(axis as isize, false)?;
        compose(&re, &im)?
    };
    if !include_initial {
        return Ok(y);
    }
    let mut out_shape = shape.clone();
    out_shape[axis] += 1;
    let out = Array::empty(dev, &out_shape, DType::Complex64)?;
    let first = if product { 1.0 } else { 0.0 };
    out.index(&along(nd, axis, 0, 1))?
        .assign(&Array::complex_scalar(dev, first, 0.0))?;
    out.index(&along(nd, axis, 1, len + 1))?.assign(&y)?;
    Ok(out)
}

/// The complex64 matrix product of two operands (either may be real): four float32
/// products of the parts.
pub(crate) fn matmul(a: &Array, b: &Array) -> Result<Array> {
    let part = |x: &Array, op| x.astype(DType::Complex64)?.unary(op);
    let (ar, ai) = (part(a, Unary::Real)?, part(a, Unary::Imag)?);
    let (br, bi) = (part(b, Unary::Real)?, part(b, Unary::Imag)?);
    let re = ar.matmul(&br)?.binary(Binary::Subtract, &ai.matmul(&bi)?)?;
    let im = ar.matmul(&bi)?.binary(Binary::Add, &ai.matmul(&br)?)?;
    compose(&re, &im)
}
