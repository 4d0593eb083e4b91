//! f64 references for the array operations, and value generators per dtype.

use suanli::array::{Array, Binary, DType, Index, Unary};
use suanli::Device;

/// `v` rounded once to binary16 (ties to even). Not `half::f16::from_f64`, which rounds
/// through f32 twice and ties the wrong way just past a midpoint (1 + 2⁻¹¹ + 2⁻⁴⁰ → 1): the
/// f32 step is rounded to odd here, so the second rounding is the correct one.
pub fn f16_round(v: f64) -> f64 {
    let f = v as f32;
    let b = f.to_bits();
    let f = if v.is_nan() || f as f64 == v || b & 1 == 1 {
        f
    } else if v.abs() > (f as f64).abs() {
        f32::from_bits(b + 1)
    } else {
        f32::from_bits(b - 1)
    };
    half::f16::from_f32(f).to_f64()
}

/// A value as `dtype` holds it: floats rounded to f32, integers wrapped, bools 0/1.
pub fn fit(d: DType, v: f64) -> f64 {
    match d {
        DType::Float32 => v as f32 as f64,
        DType::Float64 => v,
        DType::Float16 => f16_round(v),
        DType::Bool => (v != 0.0) as u8 as f64,
        _ => {
            if v.is_nan() {
                return 0.0;
            }
            let bits = match d {
                DType::Int8 | DType::UInt8 => 8,
                DType::Int16 | DType::UInt16 => 16,
                DType::Int64 | DType::UInt64 => 64,
                _ => 32,
            };
            let i = v.trunc() as i128;
            let m = 1i128 << bits;
            let u = i.rem_euclid(m);
            let signed = matches!(d, DType::Int8 | DType::Int16 | DType::Int32 | DType::Int64);
            if signed && u >= m / 2 {
                (u - m) as f64
            } else {
                u as f64
            }
        }
    }
}

/// `n` random values valid for `dtype`, drawn from `[lo, hi]` (integers: whole numbers).
pub fn values(d: DType, n: usize, seed: u64, lo: f64, hi: f64) -> Vec<f64> {
    let mut s = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let u = (s >> 11) as f64 / (1u64 << 53) as f64;
            let v = lo + (hi - lo) * u;
            if d.is_float() {
                fit(d, v)
            } else {
                let (a, b) = d.range();
                v.round().clamp(a, b)
            }
        })
        .collect()
}

/// Uploads `vals` as `d` with `shape`.
pub fn upload(dev: &Device, d: DType, vals: &[f64], shape: &[usize]) -> Array {
    Array::from_f64(dev, vals, shape, d).unwrap()
}

fn floor_div(a: f64, b: f64, int: bool) -> f64 {
    if int {
        if b == 0.0 {
            0.0
        } else {
            (a / b).floor()
        }
    } else {
        standard_floor_quotient(a, b, npy_divmod(a, b).0)
    }
}

/// The array API standard's floor_divide given NumPy's quotient `q`: where one operand is
/// infinite and the other finite, ±inf (an infinite dividend) or ±0 (an infinite divisor),
/// negative when the signs differ (NumPy gives NaN, or -1 for -5 // inf).
pub fn standard_floor_quotient(a: f64, b: f64, q: f64) -> f64 {
    let sign = if a.is_sign_negative() != b.is_sign_negative() {
        -1.0
    } else {
        1.0
    };
    if a.is_infinite() && b.is_finite() {
        f64::INFINITY * sign
    } else if b.is_infinite() && a.is_finite() {
        0.0 * sign
    } else {
        q
    }
}

fn remainder(a: f64, b: f64, int: bool) -> f64 {
    if int {
        if b == 0.0 {
            return 0.0;
        }
        a - b * (a / b).floor()
    } else {
        npy_divmod(a, b).1
    }
}

/// NumPy's npy_divmod (Python's divmod) in the float type `$t`: (floor quotient, remainder).
/// x // 0 is x / 0, an infinite dividend gives NaN, and 5 // inf is 0 while -5 // inf is -1
/// (remainder inf).
macro_rules! npy_divmod {
    ($name:ident, $t:ty) => {
        pub fn $name(a: $t, b: $t) -> ($t, $t) {
            let m0 = a % b; // fmod, exact
            if b == 0.0 {
                return (a / b, m0);
            }
            let mut m = m0;
            let mut div = (a - m) / b;
            // C's `if (mod)` and `if (div)` are true for NaN.
            if m != 0.0 || m.is_nan() {
                if (b < 0.0) != (m < 0.0) {
                    m += b;
                    div -= 1.0;
                }
            } else {
                m = (0.0 as $t).copysign(b);
            }
            let q = if div != 0.0 || div.is_nan() {
                let f = div.floor();
                if div - f > 0.5 {
                    f + 1.0
                } else {
                    f
                }
            } else {
                (0.0 as $t).copysign(a / b)
            };
            (q, m)
        }
    };
}
npy_divmod!(npy_divmod, f64);
npy_divmod!(npy_divmod32, f32);

/// The reference of a unary op on `x` computed in `t`, before fitting to the output.
pub fn unary_ref(op: Unary, t: DType, x: f64) -> f64 {
    use Unary::*;
    let int = !t.is_float();
    match op {
        Negative => -x,
        Positive => x,
        Abs => x.abs(),
        Sign => {
            if x.is_nan() {
                x
            } else if x == 0.0 {
                0.0
            } else {
                x.signum()
            }
        }
        Square => x * x,
        Sqrt => x.sqrt(),
        Exp => x.exp(),
        Expm1 => x.exp_m1(),
        Log => x.ln(),
        Log1p => x.ln_1p(),
        Log2 => x.log2(),
        Log10 => x.log10(),
        Sin => x.sin(),
        Cos => x.cos(),
        Tan => x.tan(),
        Asin => x.asin(),
        Acos => x.acos(),
        Atan => x.atan(),
        Sinh => x.sinh(),
        Cosh => x.cosh(),
        Tanh => x.tanh(),
        Asinh => x.asinh(),
        Acosh => x.acosh(),
        Atanh => x.atanh(),
        Floor => x.floor(),
        Ceil => x.ceil(),
        Round => {
            let r = x.round();
            if (x - x.trunc()).abs() == 0.5 {
                2.0 * (x / 2.0).round()
            } else {
                r
            }
        }
        Trunc => x.trunc(),
        IsNan => x.is_nan() as u8 as f64,
        IsInf => x.is_infinite() as u8 as f64,
        IsFinite => x.is_finite() as u8 as f64,
        Signbit => x.is_sign_negative() as u8 as f64,
        LogicalNot => (x == 0.0) as u8 as f64,
        BitwiseInvert if t == DType::Bool => 1.0 - x,
        BitwiseInvert if int => -x - 1.0,
        BitwiseInvert => unreachable!("no float bitwise_invert"),
        Conj | Real => x,
        Imag => 0.0,
    }
}

/// The reference of a binary op on `a`, `b` computed in `t`, before fitting to the output.
pub fn binary_ref(op: Binary, t: DType, a: f64, b: f64) -> f64 {
    use Binary::*;
    let int = !t.is_float();
    // Two's complement in i64, wrapped to the type by `fit` afterwards.
    let bits = |v: f64| v as i64;
    let bool_ = |c: bool| c as u8 as f64;
    match op {
        Add => a + b,
        Subtract => a - b,
        Multiply => {
            if int {
                // Exact in i128, then wrapped by `fit`.
                ((a as i128 * b as i128) % (1i128 << 64)) as i64 as f64
            } else {
                a * b
            }
        }
        Divide => a / b,
        FloorDivide => floor_div(a, b, int),
        Remainder => remainder(a, b, int),
        Pow => {
            if int {
                let mut r: i64 = 1;
                for _ in 0..(b as i64) {
                    r = r.wrapping_mul(a as i64);
                }
                r as f64
            } else {
                a.powf(b)
            }
        }
        Maximum => {
            if a.is_nan() || b.is_nan() {
                f64::NAN
            } else {
                a.max(b)
            }
        }
        Minimum => {
            if a.is_nan() || b.is_nan() {
                f64::NAN
            } else {
                a.min(b)
            }
        }
        Equal => bool_(a == b),
        NotEqual => bool_(a != b),
        Less => bool_(a < b),
        LessEqual => bool_(a <= b),
        Greater => bool_(a > b),
        GreaterEqual => bool_(a >= b),
        LogicalAnd => bool_(a != 0.0 && b != 0.0),
        LogicalOr => bool_(a != 0.0 || b != 0.0),
        LogicalXor => bool_((a != 0.0) != (b != 0.0)),
        BitwiseAnd => (bits(a) & bits(b)) as f64,
        BitwiseOr => (bits(a) | bits(b)) as f64,
        BitwiseXor => (bits(a) ^ bits(b)) as f64,
        BitwiseLeftShift => {
            if b >= t.bits() as f64 || b < 0.0 {
                0.0
            } else {
                ((a as i64) << (b as i64)) as f64
            }
        }
        BitwiseRightShift => {
            if b < 0.0 {
                0.0
            } else {
                ((a as i64) >> (b as i64).min(63)) as f64
            }
        }
        Atan2 => a.atan2(b),
        Copysign => a.abs() * if b.is_sign_negative() { -1.0 } else { 1.0 },
        Hypot => a.hypot(b),
        Nextafter if t == DType::Float16 => {
            let (x, y) = (half::f16::from_f64(a), half::f16::from_f64(b));
            if x.is_nan() || y.is_nan() {
                f64::NAN
            } else if a == b {
                b
            } else if a == 0.0 {
                half::f16::from_bits((y.to_bits() & 0x8000) | 1).to_f64()
            } else if (a < b) == (a > 0.0) {
                half::f16::from_bits(x.to_bits() + 1).to_f64()
            } else {
                half::f16::from_bits(x.to_bits() - 1).to_f64()
            }
        }
        // float64's neighbours (computed in f64: shaders/array_math_f64_more.wgsl).
        Nextafter if t == DType::Float64 => {
            if a.is_nan() || b.is_nan() {
                f64::NAN
            } else if a == b {
                b
            } else if a == 0.0 {
                f64::from_bits((b.to_bits() & (1 << 63)) | 1)
            } else if (a < b) == (a > 0.0) {
                f64::from_bits(a.to_bits() + 1)
            } else {
                f64::from_bits(a.to_bits() - 1)
            }
        }
        Nextafter => {
            let (x, y) = (a as f32, b as f32);
            if x.is_nan() || y.is_nan() {
                f64::NAN
            } else if x == y {
                y as f64
            } else if x == 0.0 {
                f32::from_bits((y.to_bits() & 0x8000_0000) | 1) as f64
            } else if (x < y) == (x > 0.0) {
                f32::from_bits(x.to_bits() + 1) as f64
            } else {
                f32::from_bits(x.to_bits() - 1) as f64
            }
        }
        Logaddexp => {
            let m = a.max(b);
            if a == b {
                a + std::f64::consts::LN_2
            } else {
                m + (-(a - b).abs()).exp().ln_1p()
            }
        }
        Complex => unreachable!("complex results are not real; tests/array_complex_fold.rs"),
    }
}

/// Checks `got` against `want` (already fitted to `d`): integers exactly, floats within
/// `rtol` relative (plus `atol`), NaN where NaN.
pub fn assert_close(what: &str, d: DType, got: &[f64], want: &[f64], rtol: f64, atol: f64) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        let ok = if d.is_float() {
            (g.is_nan() && w.is_nan()) || g == w || (g - w).abs() <= rtol * w.abs() + atol
        } else {
            g == w
        };
        assert!(ok, "{what}: element {i}: got {g}, want {w}");
    }
}

/// Views of a (4, 6) array and their host values (`v` row-major, any element type): all,
/// transposed, a reversed strided slice, an element (0-d), and an empty slice.
pub fn views<T: Copy>(a: &Array, v: &[T]) -> Vec<(Array, Vec<T>)> {
    let t = a.matrix_transpose().unwrap();
    let tv: Vec<T> = (0..24).map(|k| v[(k % 4) * 6 + k / 4]).collect();
    let s = a
        .index(&[
            Index::Slice {
                start: None,
                stop: None,
                step: Some(-2),
            },
            Index::Slice {
                start: Some(1),
                stop: None,
                step: Some(2),
            },
        ])
        .unwrap();
    let sv: Vec<T> = [3usize, 1]
        .iter()
        .flat_map(|&r| [1usize, 3, 5].map(|c| v[r * 6 + c]))
        .collect();
    let e = a.index(&[Index::At(2), Index::At(-1)]).unwrap();
    let z = a
        .index(&[Index::Slice {
            start: Some(2),
            stop: Some(2),
            step: None,
        }])
        .unwrap();
    vec![
        (a.clone(), v.to_vec()),
        (t, tv),
        (s, sv),
        (e, vec![v[17]]),
        (z, vec![]),
    ]
}

/// NumPy's sort order of floats: NaN after everything, -0.0 equal to 0.0.
pub fn numpy_order(a: f64, b: f64) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    match (a.is_nan(), b.is_nan()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        _ => a.partial_cmp(&b).unwrap(),
    }
}

/// The stable argsort of each row of length `len` of a row-major array in NumPy's order
/// (`descending`: reversed order, equal values keeping theirs).
pub fn stable_argsort_rows(vals: &[f64], len: usize, descending: bool) -> Vec<usize> {
    let mut out = Vec::new();
    for row in vals.chunks(len.max(1)) {
        let mut idx: Vec<usize> = (0..row.len()).collect();
        idx.sort_by(|&i, &j| {
            let o = numpy_order(row[i], row[j]);
            if descending {
                o.reverse()
            } else {
                o
            }
        });
        out.extend(idx);
    }
    out
}
