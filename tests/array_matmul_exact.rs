//! `Array::matmul` computing in the operands' own dtype: float64 against an f64 host
//! reference, int64/uint64 and the narrow integers against an i128 reference wrapped to the
//! dtype's width (NumPy's wrapping products and sums), on ragged, empty, batched and
//! broadcast shapes, 1-D operands, and non-contiguous views (a transposed operand, a
//! reversed strided one). Without SHADER_INT64/SHADER_F64 the helpers check the typed
//! refusals instead.

mod common;

use common::float64::{self, f64_device};
use common::int64::{self, i64_device};
use suanli::array::{Array, DType, Index};

/// (shape of A, shape of B): plain, broadcast batch axes, empty, k = 0, 1-D operands, a long
/// contracted axis, and one over 1024 (the reduction's chunks and its second pass).
const CASES: &[(&[usize], &[usize])] = &[
    (&[3, 5], &[5, 4]),
    (&[2, 1, 3, 7], &[4, 7, 2]),
    (&[0, 3], &[3, 2]),
    (&[3, 0], &[0, 2]),
    (&[2, 0, 3, 3], &[3, 1]),
    (&[5], &[5, 3]),
    (&[2, 3, 4], &[4]),
    (&[6], &[6]),
    (&[1, 300], &[300, 2]),
    (&[2, 1500], &[1500, 3]),
];

/// NumPy's matmul on the host over values of any type: the 1-D rules, batch broadcasting.
fn host<T: Copy>(
    a: &[T],
    sa: &[usize],
    b: &[T],
    sb: &[usize],
    zero: T,
    fma: impl Fn(T, T, T) -> T,
) -> (Vec<T>, Vec<usize>) {
    let a2: Vec<usize> = if sa.len() == 1 {
        vec![1, sa[0]]
    } else {
        sa.to_vec()
    };
    let b2: Vec<usize> = if sb.len() == 1 {
        vec![sb[0], 1]
    } else {
        sb.to_vec()
    };
    let (m, k) = (a2[a2.len() - 2], a2[a2.len() - 1]);
    let n = b2[b2.len() - 1];
    let (ba, bb) = (&a2[..a2.len() - 2], &b2[..b2.len() - 2]);
    let nb = ba.len().max(bb.len());
    let pad = |s: &[usize]| -> Vec<usize> {
        let mut p = vec![1; nb - s.len()];
        p.extend_from_slice(s);
        p
    };
    let (pa, pb) = (pad(ba), pad(bb));
    let batch: Vec<usize> = pa
        .iter()
        .zip(&pb)
        .map(|(&x, &y)| if x == 1 { y } else { x })
        .collect();
    let count: usize = batch.iter().product();
    let mut out = Vec::with_capacity(count * m * n);
    for i in 0..count {
        // The batch index in each operand (stride 0 along its broadcast axes).
        let (mut ia, mut ib, mut rest) = (0, 0, i);
        let (mut sta, mut stb) = (1, 1);
        for ax in (0..nb).rev() {
            let c = rest % batch[ax];
            rest /= batch[ax];
            if pa[ax] > 1 {
                ia += c * sta;
            }
            if pb[ax] > 1 {
                ib += c * stb;
            }
            sta *= pa[ax];
            stb *= pb[ax];
        }
        for r in 0..m {
            for c in 0..n {
                let mut s = zero;
                for p in 0..k {
                    s = fma(s, a[ia * m * k + r * k + p], b[ib * k * n + p * n + c]);
                }
                out.push(s);
            }
        }
    }
    let mut shape = batch;
    if sa.len() > 1 {
        shape.push(m);
    }
    if sb.len() > 1 {
        shape.push(n);
    }
    (out, shape)
}

/// `v` (shape `shape`) on the device three ways: contiguous, as the transpose of its stored
/// transpose, and as every other row of a twice-as-tall reversed array; 1-D arrays only
/// the first and a reversed strided one.
fn layouts<T: Copy + Default>(
    v: &[T],
    shape: &[usize],
    make: &dyn Fn(&[T], &[usize]) -> Array,
) -> Vec<(&'static str, Array)> {
    let mut out = vec![("contiguous", make(v, shape))];
    let r = shape.len();
    if r >= 2 {
        let (rows, cols) = (shape[r - 2], shape[r - 1]);
        let mats = v.len().checked_div(rows * cols).unwrap_or(0);
        let mut tshape = shape.to_vec();
        tshape.swap(r - 1, r - 2);
        let mut tv = Vec::with_capacity(v.len());
        for b in 0..mats {
            for c in 0..cols {
                for q in 0..rows {
                    tv.push(v[b * rows * cols + q * cols + c]);
                }
            }
        }
        out.push(("transposed", make(&tv, &tshape).matrix_transpose().unwrap()));
    }
    // Twice as long along the first axis, read as [::-2]: element i is stored at 2n-1-2i.
    let first = shape[0];
    let inner: usize = shape[1..].iter().product();
    let mut big = vec![T::default(); 2 * first * inner];
    for i in 0..first {
        let at = 2 * first - 1 - 2 * i;
        big[at * inner..(at + 1) * inner].copy_from_slice(&v[i * inner..(i + 1) * inner]);
    }
    let mut bshape = shape.to_vec();
    bshape[0] *= 2;
    let rev = make(&big, &bshape)
        .index(&[Index::Slice {
            start: None,
            stop: None,
            step: Some(-2),
        }])
        .unwrap();
    out.push(("reversed step -2", rev));
    out
}

#[test]
fn float64_matmul_computes_in_f64() {
    let Some(dev) = f64_device() else { return };
    let make = |v: &[f64], s: &[usize]| float64::up(&dev, v, s);
    for (ci, &(sa, sb)) in CASES.iter().enumerate() {
        let av = float64::noise(sa.iter().product(), 100 + ci as u64, 3.0);
        let bv = float64::noise(sb.iter().product(), 200 + ci as u64, 3.0);
        let (want, shape) = host(&av, sa, &bv, sb, 0.0, |s, x, y| s + x * y);
        let (mag, _) = host(&av, sa, &bv, sb, 0.0, |s, x, y| s + (x * y).abs());
        let k = sa[sa.len() - 1] as f64;
        let tol: Vec<f64> = mag
            .iter()
            .map(|m| 2.0 * (k + 2.0) * f64::EPSILON * m)
            .collect();
        for (la, a) in layouts(&av, sa, &make) {
            for (lb, b) in layouts(&bv, sb, &make) {
                let what = format!("{sa:?} ({la}) @ {sb:?} ({lb})");
                let c = a.matmul(&b).unwrap();
                assert_eq!(c.dtype(), DType::Float64, "{what}");
                assert_eq!(c.shape(), &shape[..], "{what}");
                float64::close(&what, &float64::read(&c), &want, &tol);
            }
        }
    }
    // float64 with float32 (and with int32) is float64, computed in f64: 2^24 + 1 survives.
    let big = float64::up(&dev, &[16777216.0, 1.0], &[1, 2]);
    let ones = Array::from_f32(&dev, &[1.0, 1.0], &[2, 1]).unwrap();
    let c = big.matmul(&ones).unwrap();
    assert_eq!(float64::read(&c), [16777217.0]);
}

/// `x` wrapped to `d`'s width (two's complement, sign-extended when signed).
fn wrap(d: DType, x: i128) -> i128 {
    let bits = d.bits();
    let m = x & ((1i128 << bits) - 1);
    if d.range().0 < 0.0 && m >> (bits - 1) == 1 {
        m - (1i128 << bits)
    } else {
        m
    }
}

#[test]
fn integer_matmul_wraps_in_the_dtype() {
    let Some(dev) = common::device() else { return };
    // The narrow dtypes on any device; int64/uint64 where the adapter holds them.
    let mut dtypes = vec![
        DType::Int32,
        DType::UInt32,
        DType::Int16,
        DType::UInt8,
        DType::Int8,
    ];
    if i64_device().is_some() {
        dtypes.extend([DType::Int64, DType::UInt64]);
    }
    for d in dtypes {
        let make = |v: &[i128], s: &[usize]| -> Array {
            if d.bits() == 64 {
                let w: Vec<i64> = v.iter().map(|&x| x as i64).collect();
                int64::up(&dev, &w, s, d)
            } else {
                let f: Vec<f64> = v.iter().map(|&x| x as f64).collect();
                Array::from_f64(&dev, &f, s, d).unwrap()
            }
        };
        for (ci, &(sa, sb)) in CASES.iter().enumerate() {
            // All 64 bits in use (the limits among them), wrapped into the dtype's range:
            // the products and sums overflow, as NumPy's wrap.
            let draw = |n: usize, seed: u64| -> Vec<i128> {
                let v = int64::noise(n, seed);
                v.iter().map(|&x| wrap(d, x as i128)).collect()
            };
            let av = draw(sa.iter().product(), 300 + ci as u64);
            let bv = draw(sb.iter().product(), 400 + ci as u64);
            let (want, shape) = host(&av, sa, &bv, sb, 0i128, |s, x, y| {
                wrap(d, s.wrapping_add(wrap(d, x.wrapping_mul(y))))
            });
            for (la, a) in layouts(&av, sa, &make) {
                for (lb, b) in layouts(&bv, sb, &make) {
                    let what = format!("{d} {sa:?} ({la}) @ {sb:?} ({lb})");
                    let c = a.matmul(&b).unwrap();
                    assert_eq!(c.dtype(), d, "{what}");
                    assert_eq!(c.shape(), &shape[..], "{what}");
                    let got: Vec<i128> = if d.bits() == 64 {
                        int64::read(&c)
                            .iter()
                            .map(|&x| wrap(d, x as i128))
                            .collect()
                    } else {
                        c.to_f64_vec().unwrap().iter().map(|&x| x as i128).collect()
                    };
                    assert_eq!(got, want, "{what}");
                }
            }
        }
    }
}

/// Narrow integer products stay on the float32 kernels while every sum is exact there
/// (k·max|a|·max|b| ≤ 2^24) and take the exact path past it. At k = bound the sums reach
/// 2^24; at k = bound + 1 they pass it with an odd total that float32 cannot hold, so a bound
/// one too loose gives a wrong (rounded) result. Checked against the i128 reference wrapped to
/// the result dtype, the second row and columns seeded values over the whole range.
#[test]
fn narrow_integer_matmul_float32_bound() {
    let Some(dev) = common::device() else { return };
    // (A's dtype, B's, the largest exact k, A's and B's limit values, the odd last pair).
    let cases = [
        (DType::Int8, DType::Int8, 1024, (-128, -128), (127, 127)),
        (DType::UInt8, DType::UInt8, 258, (255, 255), (255, 255)),
        (DType::Int8, DType::UInt8, 514, (-128, 255), (-127, 255)),
    ];
    for (ci, &(da, db, bound, (la, lb), (oa, ob))) in cases.iter().enumerate() {
        let out = suanli::array::promote(da, db).unwrap();
        for k in [bound, bound + 1] {
            let seeded = |d: DType, n: usize, seed: u64| -> Vec<i128> {
                int64::noise(n, seed)
                    .iter()
                    .map(|&x| wrap(d, x as i128))
                    .collect()
            };
            // A: (2, k), row 0 the limit value and the odd one last; B: (k, 3), column 0 so.
            let mut av = vec![la as i128; k];
            av[k - 1] = oa;
            av.extend(seeded(da, k, 500 + ci as u64));
            let rand_b = seeded(db, 2 * k, 600 + ci as u64);
            let mut bv = Vec::with_capacity(3 * k);
            for r in 0..k {
                let first = if r + 1 == k { ob } else { lb as i128 };
                bv.extend([first, rand_b[2 * r], rand_b[2 * r + 1]]);
            }
            let up = |v: &[i128], s: &[usize], d: DType| {
                let f: Vec<f64> = v.iter().map(|&x| x as f64).collect();
                Array::from_f64(&dev, &f, s, d).unwrap()
            };
            let c = up(&av, &[2, k], da).matmul(&up(&bv, &[k, 3], db)).unwrap();
            let (want, _) = host(&av, &[2, k], &bv, &[k, 3], 0i128, |s, x, y| s + x * y);
            let want: Vec<i128> = want.iter().map(|&x| wrap(out, x)).collect();
            let got: Vec<i128> = c.to_f64_vec().unwrap().iter().map(|&x| x as i128).collect();
            assert_eq!(c.dtype(), out, "{da} @ {db} k {k}");
            assert_eq!(got, want, "{da} @ {db} k {k}");
        }
    }
}
