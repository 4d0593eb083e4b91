//! Floating floor_divide and remainder against a host reimplementation of NumPy's
//! npy_divmod (Python's divmod: exact fmod, the remainder on the divisor's sign, the
//! quotient snapped to an integer, x // 0 = x / 0, x % 0 = NaN; the quotient with the array
//! API standard's infinite cases, `common::arrays::standard_floor_quotient`), in float32, float64 and
//! float16 (NumPy's half divmod is the float32 one rounded): every pair of signed zeros,
//! infinities, NaN and finite values, then seeded random pairs, through a transposed view
//! and into poisoned outputs. Results match bit for bit (the sign of a zero included).

mod common;

use common::arrays::{npy_divmod, npy_divmod32};
use half::f16;
use suanli::array::{Array, Binary, DType};

/// Equal bits, any NaN matching any NaN.
fn same(g: f64, w: f64) -> bool {
    (g.is_nan() && w.is_nan()) || g.to_bits() == w.to_bits()
}

const SPECIAL: [f64; 14] = [
    0.0,
    -0.0,
    5.0,
    -5.0,
    0.5,
    -7.25,
    3.0,
    -3.0,
    1e30,
    -1e-30,
    f64::INFINITY,
    f64::NEG_INFINITY,
    f64::NAN,
    1.5,
];

/// All pairs of the special values, then seeded random pairs of mixed magnitudes (some
/// with integer quotients, so the remainder is a signed zero).
fn pairs(n: usize, seed: u64) -> (Vec<f64>, Vec<f64>) {
    let mut a = Vec::new();
    let mut b = Vec::new();
    for &x in &SPECIAL {
        for &y in &SPECIAL {
            a.push(x);
            b.push(y);
        }
    }
    let mut s = seed.wrapping_mul(0x9E3779B97F4A7C15) | 1;
    let mut u = move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        (s >> 11) as f64 / (1u64 << 53) as f64
    };
    while a.len() < n {
        let sa = if u() < 0.5 { -1.0 } else { 1.0 };
        let sb = if u() < 0.5 { -1.0 } else { 1.0 };
        let y = sb * 10f64.powf(u() * 6.0 - 3.0);
        let x = if u() < 0.2 {
            y * ((u() * 40.0).floor() - 20.0)
        } else {
            sa * 10f64.powf(u() * 8.0 - 3.0)
        };
        a.push(x);
        b.push(y);
    }
    (a, b)
}

fn check(what: &str, a: &[f64], b: &[f64], got: &[f64], want: &[f64]) {
    let bad: Vec<String> = (0..want.len())
        .filter(|&i| !same(got[i], want[i]))
        .map(|i| {
            format!(
                "{what}({}, {}): got {}, want {}",
                a[i], b[i], got[i], want[i]
            )
        })
        .collect();
    assert!(
        bad.is_empty(),
        "{} wrong:\n{}",
        bad.len(),
        bad[..bad.len().min(40)].join("\n")
    );
}

/// Runs floor_divide and remainder of `dtype` on (n/8, 8) arrays read through transposes
/// (the kernel walks non-contiguous views) into poisoned outputs; `round` is the host
/// value of the dtype nearest each input, `reference` the host divmod.
fn run(dtype: DType, round: fn(f64) -> f64, reference: fn(f64, f64) -> (f64, f64)) {
    let dev = match dtype {
        DType::Float64 => match common::float64::f64_device() {
            Some(d) => d,
            None => return,
        },
        _ => dev_or_skip!(),
    };
    let (a, b) = pairs(400, round(0.1).to_bits());
    let a: Vec<f64> = a.iter().map(|&x| round(x)).collect();
    let b: Vec<f64> = b.iter().map(|&x| round(x)).collect();
    let n = a.len();
    assert_eq!(n % 8, 0);
    // Uploaded as (8, n/8), read as its (n/8, 8) transpose: element (i, j) is v[j*(n/8)+i].
    let up = |v: &[f64]| {
        Array::from_f64(&dev, v, &[8, n / 8], dtype)
            .unwrap()
            .matrix_transpose()
            .unwrap()
    };
    let order: Vec<usize> = (0..n).map(|k| (k % 8) * (n / 8) + k / 8).collect();
    let (x, y) = (up(&a), up(&b));
    let a_t: Vec<f64> = order.iter().map(|&k| a[k]).collect();
    let b_t: Vec<f64> = order.iter().map(|&k| b[k]).collect();
    for (op, pick) in [(Binary::FloorDivide, 0), (Binary::Remainder, 1)] {
        // A freed buffer of NaNs, so an unwritten output shows.
        drop(
            Array::full(&dev, &[4 * n], f64::NAN, DType::Float32)
                .unwrap()
                .eval(),
        );
        let got = x.binary(op, &y).unwrap().to_f64_vec().unwrap();
        let want: Vec<f64> = a_t
            .iter()
            .zip(&b_t)
            .map(|(&p, &q)| {
                let r = reference(p, q);
                let quotient = common::arrays::standard_floor_quotient(p, q, r.0);
                round(if pick == 0 { quotient } else { r.1 })
            })
            .collect();
        check(&format!("{dtype:?} {}", op.name()), &a_t, &b_t, &got, &want);
    }
    // 0-d and empty.
    let s = Array::from_f64(&dev, &[-5.0], &[], dtype).unwrap();
    let inf = Array::from_f64(&dev, &[f64::INFINITY], &[], dtype).unwrap();
    // -5 // inf: the standard's -0 (NumPy's -1).
    let q = s
        .binary(Binary::FloorDivide, &inf)
        .unwrap()
        .to_f64_vec()
        .unwrap();
    assert_eq!(q[0].to_bits(), (-0.0f64).to_bits());
    assert_eq!(
        s.binary(Binary::Remainder, &inf)
            .unwrap()
            .to_f64_vec()
            .unwrap(),
        [f64::INFINITY]
    );
    let e = Array::from_f64(&dev, &[], &[0, 2], dtype).unwrap();
    assert_eq!(e.binary(Binary::Remainder, &e).unwrap().shape(), &[0, 2]);
}

#[test]
fn float32_matches_npy_divmod() {
    run(
        DType::Float32,
        |x| x as f32 as f64,
        |a, b| {
            let (q, m) = npy_divmod32(a as f32, b as f32);
            (q as f64, m as f64)
        },
    );
}

#[test]
fn float64_matches_npy_divmod() {
    run(DType::Float64, |x| x, npy_divmod);
}

#[test]
fn float16_matches_npy_divmod() {
    // NumPy's npy_half_divmod: the float32 divmod of the widened values, rounded back.
    run(
        DType::Float16,
        |x| f16::from_f64(x).to_f64(),
        |a, b| {
            let (q, m) = npy_divmod32(a as f32, b as f32);
            (q as f64, m as f64)
        },
    );
}
