//! The complex64 elementwise functions (`shaders/array_complex.wgsl`) against f64
//! references written out here from the textbook identities (in f64 their cancellations
//! stay far below float32's rounding on these inputs): seeded random values over several
//! magnitudes, values near 0 and near the branch points, the real and imaginary axes with
//! both signs of zero, on a transposed view, 0-d and empty shapes, into a poisoned output;
//! then the standard's special cases (C99 Annex G) value by value, signed zeros included.

mod common;

use std::f64::consts::{FRAC_PI_2, FRAC_PI_4, PI};

use suanli::array::{Array, Binary, Scalar, Unary};

type C = (f64, f64);

fn mul(a: C, b: C) -> C {
    (a.0 * b.0 - a.1 * b.1, a.0 * b.1 + a.1 * b.0)
}
fn times_i(z: C) -> C {
    (-z.1, z.0)
}
fn times_mi(z: C) -> C {
    (z.1, -z.0)
}
fn exp(z: C) -> C {
    let e = z.0.exp();
    (e * z.1.cos(), e * z.1.sin())
}
fn log(z: C) -> C {
    (z.0.hypot(z.1).ln(), z.1.atan2(z.0))
}
fn sqrt(z: C) -> C {
    let r = z.0.hypot(z.1);
    let t = ((z.0.abs() + r) / 2.0).sqrt();
    if t == 0.0 {
        (0.0, z.1)
    } else if z.0 >= 0.0 {
        (t, z.1 / (2.0 * t))
    } else {
        (z.1.abs() / (2.0 * t), t.copysign(z.1))
    }
}
fn sinh(z: C) -> C {
    (z.0.sinh() * z.1.cos(), z.0.cosh() * z.1.sin())
}
fn cosh(z: C) -> C {
    (z.0.cosh() * z.1.cos(), z.0.sinh() * z.1.sin())
}
fn tanh(z: C) -> C {
    let d = (2.0 * z.0).cosh() + (2.0 * z.1).cos();
    ((2.0 * z.0).sinh() / d, (2.0 * z.1).sin() / d)
}
/// log(z + √(z² + 1)) on the right half plane, odd symmetry on the left.
fn asinh(z: C) -> C {
    if z.0.is_sign_negative() {
        let w = asinh((-z.0, -z.1));
        return (-w.0, -w.1);
    }
    let z2 = mul(z, z);
    let s = sqrt((z2.0 + 1.0, z2.1));
    log((z.0 + s.0, z.1 + s.1))
}
fn asin(z: C) -> C {
    times_mi(asinh(times_i(z)))
}
fn acos(z: C) -> C {
    let a = asin(z);
    (FRAC_PI_2 - a.0, -a.1)
}
fn acosh(z: C) -> C {
    let w = acos(z);
    (w.1.abs(), w.0.copysign(z.1))
}
fn atanh(z: C) -> C {
    let a = log((1.0 + z.0, z.1));
    let b = log((1.0 - z.0, -z.1));
    (0.5 * (a.0 - b.0), 0.5 * (a.1 - b.1))
}

fn reference(op: Unary, z: C) -> C {
    use Unary::*;
    match op {
        Exp => exp(z),
        Expm1 => {
            let h = (0.5 * z.1).sin();
            (
                z.0.exp_m1() * z.1.cos() - 2.0 * h * h,
                z.0.exp() * z.1.sin(),
            )
        }
        Log => log(z),
        Log1p => (
            0.5 * (z.0 * (2.0 + z.0) + z.1 * z.1).ln_1p(),
            z.1.atan2(1.0 + z.0),
        ),
        Log2 => {
            let w = log(z);
            (w.0 / 2f64.ln(), w.1 / 2f64.ln())
        }
        Log10 => {
            let w = log(z);
            (w.0 / 10f64.ln(), w.1 / 10f64.ln())
        }
        Sqrt => sqrt(z),
        Sin => times_mi(sinh(times_i(z))),
        Cos => cosh(times_i(z)),
        Tan => times_mi(tanh(times_i(z))),
        Sinh => sinh(z),
        Cosh => cosh(z),
        Tanh => tanh(z),
        Asin => asin(z),
        Acos => acos(z),
        Atan => times_mi(atanh(times_i(z))),
        Asinh => asinh(z),
        Acosh => acosh(z),
        Atanh => atanh(z),
        Sign => {
            let m = z.0.hypot(z.1);
            if m == 0.0 {
                (0.0, 0.0)
            } else {
                (z.0 / m, z.1 / m)
            }
        }
        Round => (z.0.round_ties_even(), z.1.round_ties_even()),
        Square => mul(z, z),
        _ => unreachable!(),
    }
}

const OPS: [Unary; 22] = {
    use Unary::*;
    [
        Exp, Expm1, Log, Log1p, Log2, Log10, Sqrt, Sin, Cos, Tan, Sinh, Cosh, Tanh, Asin, Acos,
        Atan, Asinh, Acosh, Atanh, Sign, Round, Square,
    ]
};

/// Seeded values, rounded to float32: magnitudes from 1e-6 to 30 (and to 1e30 for the
/// functions that do not overflow there), near ±1 and ±i, and on the axes with ±0.
fn inputs(n: usize, seed: u64, big: bool) -> Vec<C> {
    let mut s = seed.wrapping_mul(0x9E3779B97F4A7C15) | 1;
    let mut u = move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        (s >> 11) as f64 / (1u64 << 53) as f64
    };
    let hi = if big { 30.0 } else { 1.5 };
    (0..n)
        .map(|k| {
            let mag = |u: f64| 10f64.powf(-6.0 + u * (6.0 + hi)) * if u > 0.5 { 1.0 } else { -1.0 };
            let (a, b) = (u(), u());
            let z = match k % 6 {
                0 | 1 => (mag(a), mag(b)),
                2 => ((a - 0.5) * 8.0, (b - 0.5) * 8.0),
                3 => (1.0 + (a - 0.5) * 1e-3, (b - 0.5) * 1e-3),
                4 => (
                    (a - 0.5) * 1e-3,
                    if b > 0.5 { 1.0 } else { -1.0 } + (u() - 0.5) * 1e-3,
                ),
                _ if a < 0.5 => ((b - 0.5) * 6.0, if u() > 0.5 { 0.0 } else { -0.0 }),
                _ => (if b > 0.5 { 0.0 } else { -0.0 }, (u() - 0.5) * 6.0),
            };
            (z.0 as f32 as f64, z.1 as f32 as f64)
        })
        .collect()
}

/// Error relative to |w| (the usual measure for complex functions), NaN and infinities
/// matched exactly.
fn max_err(op: &str, got: &[C], want: &[C]) -> f64 {
    assert_eq!(got.len(), want.len(), "{op}: length");
    let mut worst = 0.0f64;
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        if !(w.0.is_finite() && w.1.is_finite()) || w.0.abs() > 3e38 || w.1.abs() > 3e38 {
            continue; // float32 overflow: the special cases below cover infinities
        }
        let m = w.0.hypot(w.1).max(1e-37);
        let e = (g.0 - w.0).hypot(g.1 - w.1) / m;
        assert!(e.is_finite(), "{op}[{i}]: got {g:?}, want {w:?}");
        if e > worst && e > 4e-6 {
            eprintln!("  {op}[{i}]: got {g:?}, want {w:?}");
        }
        worst = worst.max(e);
    }
    worst
}

#[test]
fn functions_against_f64() {
    let dev = dev_or_skip!();
    for (k, &op) in OPS.iter().enumerate() {
        // exp-like functions overflow float32 past |x| ~ 88: their inputs stay small.
        let big = !matches!(
            op,
            Unary::Exp | Unary::Expm1 | Unary::Sinh | Unary::Cosh | Unary::Sin | Unary::Cos
        );
        let v = inputs(600, 40 + k as u64, big);
        let f: Vec<(f32, f32)> = v.iter().map(|&(a, b)| (a as f32, b as f32)).collect();
        // Read through a transpose: the kernel walks a non-contiguous view.
        let a = Array::from_complex(&dev, &f, &[20, 30]).unwrap();
        let t = a.matrix_transpose().unwrap();
        let want: Vec<C> = (0..600)
            .map(|j| reference(op, v[(j % 20) * 30 + j / 20]))
            .collect();
        let got = t.unary(op).unwrap().to_complex_vec().unwrap();
        let e = max_err(op.name(), &got, &want);
        let tol = match op {
            Unary::Round | Unary::Square => 1e-6,
            _ => 4e-6,
        };
        eprintln!("{}: max error {e:.2e} (relative to |w|)", op.name());
        assert!(e <= tol, "{}: max error {e:e} > {tol:e}", op.name());
        // 0-d and empty shapes.
        let s = Array::from_complex(&dev, &f[..1], &[])
            .unwrap()
            .unary(op)
            .unwrap();
        assert_eq!(s.shape(), &[] as &[usize]);
        let e = max_err(
            op.name(),
            &s.to_complex_vec().unwrap(),
            &[reference(op, v[0])],
        );
        assert!(e <= tol, "0-d {}: error {e:e} > {tol:e}", op.name());
        let e0 = Array::from_complex(&dev, &[], &[0, 3])
            .unwrap()
            .unary(op)
            .unwrap();
        assert_eq!(e0.shape(), &[0, 3]);
        assert!(e0.to_complex_vec().unwrap().is_empty());
    }
}

#[test]
fn pow_against_f64() {
    let dev = dev_or_skip!();
    let mut a = inputs(240, 7, false);
    let mut b = inputs(240, 8, false);
    // Small integer exponents take NumPy's repeated products.
    for (j, z) in b.iter_mut().enumerate().step_by(4) {
        *z = (((j % 7) as f64) - 3.0, 0.0);
    }
    // 0 ** b: 0 where Re b > 0, else NaN (NumPy 2's rule).
    a[..3].fill((0.0, 0.0));
    b[1] = (-1.0, 1.0);
    b[2] = (0.5, 1.0);
    let up = |v: &[C]| {
        let f: Vec<(f32, f32)> = v.iter().map(|&(x, y)| (x as f32, y as f32)).collect();
        Array::from_complex(&dev, &f, &[v.len()]).unwrap()
    };
    let got = up(&a)
        .binary(Binary::Pow, &up(&b))
        .unwrap()
        .to_complex_vec()
        .unwrap();
    let want: Vec<C> = a
        .iter()
        .zip(&b)
        .map(|(&x, &y)| {
            if y == (0.0, 0.0) {
                (1.0, 0.0)
            } else if x == (0.0, 0.0) && y.0 > 0.0 {
                (0.0, 0.0)
            } else if x == (0.0, 0.0) {
                (f64::NAN, f64::NAN)
            } else {
                exp(mul(y, log(x)))
            }
        })
        .collect();
    assert!(
        got[0].0.is_nan() && got[1].1.is_nan() && got[2] == (0.0, 0.0),
        "{:?}",
        &got[..3]
    );
    let e = max_err("pow", &got, &want);
    eprintln!("pow: max error {e:.2e}");
    assert!(e <= 2e-5, "pow: {e:e}");
    // With Python scalars on either side: a complex array ** 2.0, 2 ** z, z ** (0.5+1j).
    let x = up(&a[..16]);
    let sq = x.binary_scalar(Binary::Pow, Scalar::Float(2.0)).unwrap();
    let w: Vec<C> = a[..16].iter().map(|&z| mul(z, z)).collect();
    assert!(max_err("z**2", &sq.to_complex_vec().unwrap(), &w) <= 1e-6);
    let r = x.scalar_binary(Scalar::Float(2.0), Binary::Pow).unwrap();
    let w: Vec<C> = a[..16]
        .iter()
        .map(|&z| exp(mul(z, (2f64.ln(), 0.0))))
        .collect();
    assert!(max_err("2**z", &r.to_complex_vec().unwrap(), &w) <= 2e-5);
    let c = x
        .binary_scalar(Binary::Pow, Scalar::Complex(0.5, 1.0))
        .unwrap();
    let w: Vec<C> = a[..16]
        .iter()
        .map(|&z| exp(mul((0.5, 1.0), log(z))))
        .collect();
    assert!(max_err("z**(0.5+1j)", &c.to_complex_vec().unwrap(), &w) <= 2e-5);
    // A real array with a complex scalar gives complex64.
    let re = Array::from_f64(&dev, &[2.0, 0.5], &[2], suanli::array::DType::Float32).unwrap();
    let rc = re
        .binary_scalar(Binary::Pow, Scalar::Complex(0.0, 1.0))
        .unwrap();
    let w: Vec<C> = [2.0f64, 0.5].iter().map(|&r| exp((0.0, r.ln()))).collect();
    assert!(max_err("2**1j", &rc.to_complex_vec().unwrap(), &w) <= 2e-5);
}

/// Matches NaN to NaN and, where the standard fixes it, the sign of a zero (`Z` below is
/// "either sign").
fn same(g: f64, w: f64) -> bool {
    if w.is_nan() {
        return g.is_nan();
    }
    if w == Z {
        return g == 0.0;
    }
    if w == 0.0 {
        return g == 0.0 && g.is_sign_negative() == w.is_sign_negative();
    }
    if w == INF_ANY {
        return g.is_infinite();
    }
    if w.is_infinite() {
        return g == w;
    }
    (g - w).abs() <= 1e-6 * w.abs()
}

/// Stand-ins for "the sign is unspecified": a zero of either sign, an infinity of either.
const Z: f64 = 1.5e-300;
const INF_ANY: f64 = f64::MAX;

#[test]
fn special_cases() {
    let dev = dev_or_skip!();
    use Unary::*;
    let (n, i) = (f64::NAN, f64::INFINITY);
    #[rustfmt::skip]
    let cases: &[(Unary, C, C)] = &[
        (Exp, (0.0, 0.0), (1.0, 0.0)),
        (Exp, (-0.0, 0.0), (1.0, 0.0)),
        (Exp, (1.0, i), (n, n)),
        (Exp, (1.0, n), (n, n)),
        (Exp, (i, 0.0), (i, 0.0)),
        (Exp, (-i, 1.0), (0.0 * 1f64.cos(), 0.0)),
        (Exp, (i, 1.0), (i, i)),
        (Exp, (-i, i), (Z, Z)),
        (Exp, (-i, n), (Z, Z)),
        (Exp, (i, n), (i, n)),
        (Exp, (n, 0.0), (n, 0.0)),
        (Exp, (n, 1.0), (n, n)),
        (Expm1, (0.0, 0.0), (0.0, 0.0)),
        (Expm1, (-0.0, 0.0), (0.0, 0.0)),
        (Expm1, (-i, i), (-1.0, Z)),
        (Expm1, (i, 0.0), (i, 0.0)),
        (Expm1, (n, 0.0), (n, 0.0)),
        (Log, (-0.0, 0.0), (-i, PI)),
        (Log, (0.0, 0.0), (-i, 0.0)),
        (Log, (1.0, i), (i, FRAC_PI_2)),
        (Log, (1.0, n), (n, n)),
        (Log, (-i, 1.0), (i, PI)),
        (Log, (i, 1.0), (i, 0.0)),
        (Log, (-i, i), (i, 3.0 * FRAC_PI_4)),
        (Log, (i, i), (i, FRAC_PI_4)),
        (Log, (i, n), (i, n)),
        (Log, (n, i), (i, n)),
        (Log, (n, 1.0), (n, n)),
        (Log1p, (-1.0, 0.0), (-i, 0.0)),
        (Log1p, (-i, 1.0), (i, PI)),
        (Log1p, (1e-30, 1e-30), (1e-30, 1e-30)),
        (Sqrt, (-0.0, 0.0), (0.0, 0.0)),
        (Sqrt, (1.0, i), (i, i)),
        (Sqrt, (n, i), (i, i)),
        (Sqrt, (-i, 1.0), (0.0, i)),
        (Sqrt, (i, 1.0), (i, 0.0)),
        (Sqrt, (-i, n), (n, INF_ANY)),
        (Sqrt, (i, n), (i, n)),
        (Sqrt, (-4.0, 0.0), (0.0, 2.0)),
        (Sqrt, (-4.0, -0.0), (0.0, -2.0)),
        (Sinh, (0.0, 0.0), (0.0, 0.0)),
        (Sinh, (0.0, i), (Z, n)),
        (Sinh, (1.0, i), (n, n)),
        (Sinh, (i, 0.0), (i, 0.0)),
        (Sinh, (i, i), (INF_ANY, n)),
        (Sinh, (n, 0.0), (n, 0.0)),
        (Cosh, (0.0, 0.0), (1.0, 0.0)),
        (Cosh, (0.0, i), (n, Z)),
        (Cosh, (i, 0.0), (i, 0.0)),
        (Cosh, (i, i), (i, n)),
        (Cosh, (n, 0.0), (n, Z)),
        (Cosh, (1.0, n), (n, n)),
        (Tanh, (0.0, 0.0), (0.0, 0.0)),
        (Tanh, (0.0, i), (0.0, n)),
        (Tanh, (0.0, n), (0.0, n)),
        (Tanh, (1.0, i), (n, n)),
        (Tanh, (i, 1.0), (1.0, 0.0)),
        (Tanh, (i, 2.0), (1.0, 0.0)),
        (Tanh, (-i, -2.0), (-1.0, -0.0)),
        (Tanh, (i, i), (1.0, Z)),
        (Tanh, (i, n), (1.0, Z)),
        (Tanh, (n, 0.0), (n, 0.0)),
        (Tanh, (n, 1.0), (n, n)),
        (Asinh, (0.0, 0.0), (0.0, 0.0)),
        (Asinh, (1.0, i), (i, FRAC_PI_2)),
        (Asinh, (1.0, n), (n, n)),
        (Asinh, (i, 1.0), (i, 0.0)),
        (Asinh, (i, i), (i, FRAC_PI_4)),
        (Asinh, (n, 0.0), (n, 0.0)),
        (Asinh, (n, i), (INF_ANY, n)),
        (Asinh, (n, 1.0), (n, n)),
        (Acos, (0.0, 0.0), (FRAC_PI_2, -0.0)),
        (Acos, (-0.0, 0.0), (FRAC_PI_2, -0.0)),
        (Acos, (0.0, n), (FRAC_PI_2, n)),
        (Acos, (1.0, i), (FRAC_PI_2, -i)),
        (Acos, (1.0, n), (n, n)),
        (Acos, (-i, 1.0), (PI, -i)),
        (Acos, (i, 1.0), (0.0, -i)),
        (Acos, (-i, i), (3.0 * FRAC_PI_4, -i)),
        (Acos, (i, i), (FRAC_PI_4, -i)),
        (Acos, (i, n), (n, INF_ANY)),
        (Acos, (n, 1.0), (n, n)),
        (Acos, (n, i), (n, -i)),
        (Acos, (1.0, 0.0), (0.0, -0.0)),
        (Acosh, (0.0, 0.0), (0.0, FRAC_PI_2)),
        (Acosh, (-0.0, 0.0), (0.0, FRAC_PI_2)),
        (Acosh, (1.0, i), (i, FRAC_PI_2)),
        (Acosh, (0.0, n), (n, FRAC_PI_2)),
        (Acosh, (1.0, n), (n, n)),
        (Acosh, (-i, 1.0), (i, PI)),
        (Acosh, (i, 1.0), (i, 0.0)),
        (Acosh, (-i, i), (i, 3.0 * FRAC_PI_4)),
        (Acosh, (i, i), (i, FRAC_PI_4)),
        (Acosh, (i, n), (i, n)),
        (Acosh, (n, 1.0), (n, n)),
        (Acosh, (n, i), (i, n)),
        (Atanh, (0.0, 0.0), (0.0, 0.0)),
        (Atanh, (0.0, n), (0.0, n)),
        (Atanh, (1.0, 0.0), (i, 0.0)),
        (Atanh, (1.0, i), (0.0, FRAC_PI_2)),
        (Atanh, (1.0, n), (n, n)),
        (Atanh, (i, 1.0), (0.0, FRAC_PI_2)),
        (Atanh, (i, i), (0.0, FRAC_PI_2)),
        (Atanh, (i, n), (0.0, n)),
        (Atanh, (n, 1.0), (n, n)),
        (Atanh, (n, i), (Z, FRAC_PI_2)),
        (Sign, (-0.0, -0.0), (0.0, 0.0)),
        (Sign, (3.0, -4.0), (0.6, -0.8)),
        (Sign, (n, 1.0), (n, n)),
        (Sign, (i, -2.0), (1.0, -0.0)),
        (Sign, (0.5, -i), (0.0, -1.0)),
        (Sign, (i, i), (n, n)),
        (Round, (2.5, -1.5), (2.0, -2.0)),
        (Sin, (0.0, 0.0), (0.0, 0.0)),
        (Cos, (0.0, 0.0), (1.0, -0.0)),
        (Tan, (0.0, 0.0), (0.0, 0.0)),
        (Asin, (0.0, 0.0), (0.0, 0.0)),
        (Atan, (0.0, 0.0), (0.0, 0.0)),
        (Atan, (0.0, 1.0), (0.0, i)),
    ];
    // Each function's cases in one array (with a poisoned output written through `assign`).
    let mut bad = Vec::new();
    for op in OPS {
        let mine: Vec<&(Unary, C, C)> = cases.iter().filter(|c| c.0 == op).collect();
        if mine.is_empty() {
            continue;
        }
        let f: Vec<(f32, f32)> = mine
            .iter()
            .map(|c| (c.1 .0 as f32, c.1 .1 as f32))
            .collect();
        let got = Array::from_complex(&dev, &f, &[f.len()])
            .unwrap()
            .unary(op)
            .unwrap()
            .to_complex_vec()
            .unwrap();
        for (c, g) in mine.iter().zip(&got) {
            if !(same(g.0, c.2 .0) && same(g.1, c.2 .1)) {
                bad.push(format!("{}{:?}: got {g:?}, want {:?}", op.name(), c.1, c.2));
            }
        }
    }
    assert!(bad.is_empty(), "special cases:\n{}", bad.join("\n"));
}

#[test]
fn predicates_and_fusion() {
    let dev = dev_or_skip!();
    let (n, i) = (f32::NAN, f32::INFINITY);
    let v = [(1.0, 2.0), (n, 0.0), (0.0, -i), (i, n), (-0.0, 0.0)];
    let a = Array::from_complex(&dev, &v, &[5]).unwrap();
    let get = |op| a.unary(op).unwrap().to_f64_vec().unwrap();
    assert_eq!(get(Unary::IsNan), [0.0, 1.0, 0.0, 1.0, 0.0]);
    assert_eq!(get(Unary::IsInf), [0.0, 0.0, 1.0, 1.0, 0.0]);
    assert_eq!(get(Unary::IsFinite), [1.0, 0.0, 0.0, 0.0, 1.0]);
    // A fused chain: exp(log(z)) == z where z is finite and non-zero, read in one kernel.
    let z = Array::from_complex(&dev, &[(1.5, -2.0), (0.25, 3.0)], &[2]).unwrap();
    let back = z.unary(Unary::Log).unwrap().unary(Unary::Exp).unwrap();
    let d = back
        .binary(Binary::Subtract, &z)
        .unwrap()
        .unary(Unary::Abs)
        .unwrap()
        .to_f64_vec()
        .unwrap();
    assert!(d.iter().all(|&e| e < 1e-5), "{d:?}");
    let eq = z
        .unary(Unary::Sqrt)
        .unwrap()
        .unary(Unary::Square)
        .unwrap()
        .binary(Binary::Equal, &z)
        .unwrap()
        .to_f64_vec()
        .unwrap();
    assert_eq!(eq.len(), 2);
}

/// Beyond |x| = 88 e^|x| overflows float32 while sinh x · cos y, cosh x · sin y and
/// e^x · cos y - 1 need not (cos y small), and where they do overflow the infinity takes the
/// sign of the f64 product. The f64 formulas do not overflow here (e^100 ~ 3e43).
#[test]
fn large_real_parts_against_f64() {
    let dev = dev_or_skip!();
    let max = f32::MAX as f64;
    // cos y small (the float32 nearest ±π/2, 3π/2, a little off π/2), sin y small (π, 1e-3).
    use std::f32::consts::{FRAC_PI_2 as H32, PI as PI32};
    let ys: Vec<f64> = [
        H32,
        -H32,
        3.0 * H32,
        H32 - 1e-4,
        PI32,
        1e-3,
        -2.5,
        0.7,
        1e-30,
        0.0,
    ]
    .iter()
    .map(|&y| y as f64)
    .collect();
    let xs = [
        84.5f64, 86.0, 88.0, 88.5, 88.8, 89.0, 89.3, 89.5, 90.0, 91.0, 95.0, 100.0, 110.0, 130.0,
        180.0, 200.0,
    ];
    let mut v: Vec<C> = Vec::new();
    for &x in &xs {
        for &y in &ys {
            v.push((x, y));
            v.push((-x, y));
        }
    }
    use Unary::*;
    let mut bad = Vec::new();
    for op in [Sinh, Cosh, Expm1, Exp, Sin, Cos] {
        // sin and cos: the large part on the imaginary axis (sin z = -i sinh(iz)).
        let zs: Vec<C> = match op {
            Sin | Cos => v.iter().map(|&(x, y)| (y, x)).collect(),
            _ => v.clone(),
        };
        let f: Vec<(f32, f32)> = zs.iter().map(|&(a, b)| (a as f32, b as f32)).collect();
        let got = Array::from_complex(&dev, &f, &[f.len()])
            .unwrap()
            .unary(op)
            .unwrap()
            .to_complex_vec()
            .unwrap();
        for (&z, g) in zs.iter().zip(&got) {
            let w = match op {
                Expm1 => (z.0.exp() * z.1.cos() - 1.0, z.0.exp() * z.1.sin()),
                _ => reference(op, z),
            };
            let m = w.0.hypot(w.1);
            for (gc, wc) in [(g.0, w.0), (g.1, w.1)] {
                let ok = if wc.abs() > max {
                    gc.is_infinite() && gc.signum() == wc.signum()
                } else {
                    // Below float32's least normal a driver may flush to 0 (e^-100).
                    gc.is_finite()
                        && ((gc - wc).abs() <= 1e-5 * m.min(max).max(wc.abs())
                            || (gc.abs() < 1.2e-38 && wc.abs() < 1.2e-38))
                };
                if !ok {
                    bad.push(format!("{}{z:?}: got {g:?}, want {w:?}", op.name()));
                    break;
                }
            }
        }
    }
    assert!(bad.is_empty(), "{} wrong:\n{}", bad.len(), bad.join("\n"));
    // The real float32 functions on the same edge: e^x overflows from 88.72 while cosh stays
    // finite to 89.41, and expm1's um·x/log(u) overflowed from 84.3.
    let xs32 = [84.5f32, 86.0, 88.0, 88.8, 89.0, 89.4, -89.0, 89.5];
    let a = Array::from_f32(&dev, &xs32, &[xs32.len()]).unwrap();
    for (op, f) in [(Cosh, f64::cosh as fn(f64) -> f64), (Expm1, f64::exp_m1)] {
        let got = a.unary(op).unwrap().to_f64_vec().unwrap();
        for (&x, &g) in xs32.iter().zip(&got) {
            let w = f(x as f64);
            let ok = if w.abs() > max {
                g.is_infinite() && g.signum() == w.signum()
            } else {
                (g - w).abs() <= 1e-5 * w.abs()
            };
            assert!(ok, "real {}({x}): got {g}, want {w}", op.name());
        }
    }
}

/// atanh and atan at |x| = 1 (|y| = 1 for atan) with a tiny other part: the real part is
/// (log 2 - log|y|) / 2, finite, where (1 - |x|)² + y² underflows (C99 / musl's catanh).
#[test]
fn atanh_near_the_branch_points() {
    let dev = dev_or_skip!();
    let mut v: Vec<C> = Vec::new();
    for x in [1.0f32, -1.0, 1.0 - f32::EPSILON / 2.0, 1.0 + f32::EPSILON] {
        // 1e-40 and 1e-45 are subnormal in float32.
        for y in [
            1e-30f32, -1e-30, 1e-20, 3e-10, 1e-7, 1e-3, 0.5, 1e-40, -1e-45,
        ] {
            v.push((x as f64, y as f64));
        }
    }
    let mut bad = Vec::new();
    for op in [Unary::Atanh, Unary::Atan] {
        let zs: Vec<C> = match op {
            Unary::Atan => v.iter().map(|&(x, y)| (y, x)).collect(),
            _ => v.clone(),
        };
        let f: Vec<(f32, f32)> = zs.iter().map(|&(a, b)| (a as f32, b as f32)).collect();
        let got = Array::from_complex(&dev, &f, &[f.len()])
            .unwrap()
            .unary(op)
            .unwrap()
            .to_complex_vec()
            .unwrap();
        for (&z, g) in zs.iter().zip(&got) {
            let w = reference(op, z);
            let e = (g.0 - w.0).hypot(g.1 - w.1) / w.0.hypot(w.1);
            if e.is_nan() || e > 4e-6 {
                bad.push(format!("{}{z:?}: got {g:?}, want {w:?}", op.name()));
            }
        }
    }
    assert!(bad.is_empty(), "{} wrong:\n{}", bad.len(), bad.join("\n"));
}
