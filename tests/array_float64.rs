//! float64 arrays against Rust's f64: host bytes both ways, creation, casts to and from every
//! dtype, the elementwise operations float64 takes (exactly equal for what IEEE rounds: a
//! kernel computing in f32 anywhere fails them), on contiguous arrays, transposed and strided
//! views, 0-d and empty shapes, broadcast and with Python scalars. On an adapter without
//! SHADER_F64/SHADER_INT64 (WGPU_BACKEND=gl) every test checks instead that float64 is a
//! typed `Error::DType`. Reductions, promotion and refusals: `tests/array_float64_reduce.rs`.

mod common;

use common::arrays::views;
use common::float64::{exact, f64_device, noise, read, up, BinRef, CmpRef, FlagRef, UnRef};
use suanli::array::{Array, Binary, DType, Scalar, Unary};
use suanli::Error;

fn divmod(a: f64, b: f64) -> (f64, f64) {
    let m = a % b;
    if b == 0.0 {
        return ((a / b).floor(), f64::NAN);
    }
    let mut div = (a - m) / b;
    let mut r = m;
    if m != 0.0 {
        if (b < 0.0) != (m < 0.0) {
            r += b;
            div -= 1.0;
        }
    } else {
        r = 0.0f64.copysign(b);
    }
    let q = if div != 0.0 {
        let f = div.floor();
        if div - f > 0.5 {
            f + 1.0
        } else {
            f
        }
    } else {
        0.0f64.copysign(a / b)
    };
    (q, r)
}

#[test]
fn bytes_round_trip_views_and_creation() {
    let Some(dev) = f64_device() else { return };
    let v = noise(24, 1, 1e3);
    let a = up(&dev, &v, &[4, 6]);
    assert_eq!(DType::Float64.host_size(), 8);
    assert_eq!(DType::from_name("float64").unwrap(), DType::Float64);
    let bytes = a.to_bytes().unwrap();
    let want: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
    assert_eq!(bytes, want);
    let b = Array::from_bytes(&dev, DType::Float64, &bytes, &[6, 4]).unwrap();
    exact("from_bytes", &read(&b), &v);
    for (k, (x, want)) in views(&a, &v).into_iter().enumerate() {
        exact(&format!("view {k}"), &read(&x), &want);
        exact(&format!("copy {k}"), &read(&x.copy().unwrap()), &want);
    }
    let third = 1.0 / 3.0;
    exact(
        "full",
        &read(&Array::full(&dev, &[2, 3], third, DType::Float64).unwrap()),
        &[third; 6],
    );
    exact(
        "zeros",
        &read(&Array::zeros(&dev, &[0, 3], DType::Float64).unwrap()),
        &[],
    );
    exact(
        "ones 0-d",
        &read(&Array::ones(&dev, &[], DType::Float64).unwrap()),
        &[1.0],
    );
    let ar = read(&Array::arange(&dev, 0.1, 1.0, 0.1, DType::Float64).unwrap());
    let want: Vec<f64> = (0..9).map(|i| i as f64 * 0.1 + 0.1).collect();
    exact("arange", &ar, &want);
    let ls = read(&Array::linspace(&dev, 0.0, 1.0, 7, true, DType::Float64).unwrap());
    let want: Vec<f64> = (0..7)
        .map(|i| if i == 6 { 1.0 } else { i as f64 * (1.0 / 6.0) })
        .collect();
    exact("linspace", &ls, &want);
    let e = read(&Array::eye(&dev, 3, 4, 1, DType::Float64).unwrap());
    let want: Vec<f64> = (0..12)
        .map(|k| ((k / 4) + 1 == k % 4) as u8 as f64)
        .collect();
    exact("eye", &e, &want);
}

#[test]
fn arithmetic_is_exactly_rounded_on_views_and_broadcasts() {
    let Some(dev) = f64_device() else { return };
    let v = noise(24, 2, 100.0);
    let w = noise(24, 3, 100.0);
    let a = up(&dev, &v, &[4, 6]);
    let b = up(&dev, &w, &[4, 6]);
    let ops: [BinRef; 4] = [
        (Binary::Add, |x, y| x + y),
        (Binary::Subtract, |x, y| x - y),
        (Binary::Multiply, |x, y| x * y),
        (Binary::Divide, |x, y| x / y),
    ];
    let bviews = views(&b, &w);
    for (k, (x, xv)) in views(&a, &v).into_iter().enumerate() {
        let (y, yv) = &bviews[k];
        for (op, f) in ops {
            let got = read(&x.binary(op, y).unwrap());
            let want: Vec<f64> = xv.iter().zip(yv).map(|(&p, &q)| f(p, q)).collect();
            exact(&format!("{}(view {k})", op.name()), &got, &want);
            // A Python scalar that float32 cannot hold keeps every bit.
            let got = read(&x.binary_scalar(op, Scalar::Float(0.1)).unwrap());
            let want: Vec<f64> = xv.iter().map(|&p| f(p, 0.1)).collect();
            exact(&format!("{}(view {k}, 0.1)", op.name()), &got, &want);
            let got = read(&x.scalar_binary(Scalar::Int(7), op).unwrap());
            let want: Vec<f64> = xv.iter().map(|&p| f(7.0, p)).collect();
            exact(&format!("{}(7, view {k})", op.name()), &got, &want);
        }
        let got = read(&x.unary(Unary::Abs).unwrap().unary(Unary::Sqrt).unwrap());
        let want: Vec<f64> = xv.iter().map(|p| p.abs().sqrt()).collect();
        exact(&format!("sqrt(view {k})"), &got, &want);
    }
    // Broadcasting (4, 1) against (1, 6), fused into one expression.
    let col = up(&dev, &v[..4], &[4, 1]);
    let row = up(&dev, &w[..6], &[1, 6]);
    let got = read(
        &col.binary(Binary::Multiply, &row)
            .unwrap()
            .binary(Binary::Add, &col)
            .unwrap(),
    );
    let want: Vec<f64> = (0..24).map(|k| v[k / 6] * w[k % 6] + v[k / 6]).collect();
    exact("broadcast", &got, &want);
    // Special values.
    let s = [
        0.0,
        -0.0,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
        1e-310,
    ];
    // Every pair (two arrays: Mesa folds `x + (-x)` of one value to 0, for f32 alike).
    let sx: Vec<f64> = (0..36).map(|k| s[k / 6]).collect();
    let sy: Vec<f64> = (0..36).map(|k| s[k % 6]).collect();
    let (ax, ay) = (up(&dev, &sx, &[36]), up(&dev, &sy, &[36]));
    for (op, f) in ops {
        let got = read(&ax.binary(op, &ay).unwrap());
        let want: Vec<f64> = sx.iter().zip(&sy).map(|(&p, &q)| f(p, q)).collect();
        exact(&format!("{} specials", op.name()), &got, &want);
    }
}

#[test]
fn unary_comparisons_where_and_rounding() {
    let Some(dev) = f64_device() else { return };
    let mut v = noise(24, 4, 10.0);
    v[0] = 2.5;
    v[1] = -2.5;
    v[2] = 0.5;
    v[3] = -0.0;
    v[4] = f64::NAN;
    v[5] = f64::INFINITY;
    v[6] = 1e-310;
    v[7] = 4503599627370497.5f64.floor() + 0.5; // 2^52 + 1.5: below 2^53, a half
    let a = up(&dev, &v, &[4, 6]);
    let unary: [UnRef; 8] = [
        (Unary::Negative, |x| -x),
        (Unary::Abs, f64::abs),
        (Unary::Square, |x| x * x),
        (Unary::Floor, f64::floor),
        (Unary::Ceil, f64::ceil),
        (Unary::Trunc, f64::trunc),
        (Unary::Round, f64::round_ties_even),
        (Unary::Sign, |x| {
            if x.is_nan() {
                x
            } else if x > 0.0 {
                1.0
            } else if x < 0.0 {
                -1.0
            } else {
                0.0
            }
        }),
    ];
    for (k, (x, xv)) in views(&a, &v).into_iter().enumerate() {
        for (op, f) in unary {
            let got = read(&x.unary(op).unwrap());
            let want: Vec<f64> = xv.iter().map(|&p| f(p)).collect();
            exact(&format!("{}(view {k})", op.name()), &got, &want);
        }
        let flags: [FlagRef; 4] = [
            (Unary::IsNan, f64::is_nan),
            (Unary::IsInf, f64::is_infinite),
            (Unary::IsFinite, f64::is_finite),
            (Unary::Signbit, f64::is_sign_negative),
        ];
        for (op, f) in flags {
            let y = x.unary(op).unwrap();
            assert_eq!(y.dtype(), DType::Bool);
            let want: Vec<f64> = xv.iter().map(|&p| f(p) as u8 as f64).collect();
            assert_eq!(y.to_f64_vec().unwrap(), want, "{}(view {k})", op.name());
        }
    }
    let w = noise(24, 5, 10.0);
    let mut w = w;
    w[3] = v[3];
    w[9] = v[9];
    let b = up(&dev, &w, &[4, 6]);
    let cmp: [CmpRef; 6] = [
        (Binary::Equal, |x, y| x == y),
        (Binary::NotEqual, |x, y| x != y),
        (Binary::Less, |x, y| x < y),
        (Binary::LessEqual, |x, y| x <= y),
        (Binary::Greater, |x, y| x > y),
        (Binary::GreaterEqual, |x, y| x >= y),
    ];
    for (op, f) in cmp {
        let got = a.binary(op, &b).unwrap().to_f64_vec().unwrap();
        let want: Vec<f64> = v
            .iter()
            .zip(&w)
            .map(|(&x, &y)| f(x, y) as u8 as f64)
            .collect();
        assert_eq!(got, want, "{}", op.name());
    }
    // Values 1 ulp apart compare as different (a float32 compare would call them equal).
    let n = up(&dev, &[1.0, 1.0 + f64::EPSILON], &[2]);
    let one = Array::scalar(&dev, 1.0, DType::Float64);
    assert_eq!(
        n.binary(Binary::Equal, &one).unwrap().to_f64_vec().unwrap(),
        [1.0, 0.0]
    );
    let mx: [BinRef; 3] = [
        (Binary::Maximum, |x, y| {
            if x.is_nan() || y.is_nan() {
                f64::NAN
            } else {
                x.max(y)
            }
        }),
        (Binary::Minimum, |x, y| {
            if x.is_nan() || y.is_nan() {
                f64::NAN
            } else {
                x.min(y)
            }
        }),
        (Binary::Copysign, f64::copysign),
    ];
    for (op, f) in mx {
        let got = read(&a.binary(op, &b).unwrap());
        let want: Vec<f64> = v.iter().zip(&w).map(|(&x, &y)| f(x, y)).collect();
        exact(op.name(), &got, &want);
    }
    let c = a.binary(Binary::Greater, &b).unwrap();
    let got = read(&Array::where_(&c, &a, &b).unwrap());
    let want: Vec<f64> = v
        .iter()
        .zip(&w)
        .map(|(&x, &y)| if x > y { x } else { y })
        .collect();
    exact("where", &got, &want);
    let got = read(&a.clip(Some(-1.25), Some(3.1)).unwrap());
    let want: Vec<f64> = v
        .iter()
        .map(|&x| if x.is_nan() { x } else { x.clamp(-1.25, 3.1) })
        .collect();
    exact("clip", &got, &want);
}

/// NumPy's divmod of floats (npy_divmod): the quotient and the remainder.
#[test]
fn floor_divide_and_remainder_are_exact() {
    let Some(dev) = f64_device() else { return };
    let mut v = noise(300, 6, 1e6);
    let mut w = noise(300, 7, 10.0);
    v[0] = 1e300;
    w[0] = 3.3e-7;
    v[1] = -7.5;
    w[1] = 2.5;
    v[2] = 0.0;
    w[3] = 0.0;
    v[4] = 5e-320;
    w[4] = 3e-321;
    let a = up(&dev, &v, &[300]);
    let b = up(&dev, &w, &[300]);
    let q = read(&a.binary(Binary::FloorDivide, &b).unwrap());
    let r = read(&a.binary(Binary::Remainder, &b).unwrap());
    let (wq, wr): (Vec<f64>, Vec<f64>) = v.iter().zip(&w).map(|(&x, &y)| divmod(x, y)).unzip();
    exact("floor_divide", &q, &wq);
    exact("remainder", &r, &wr);
}

#[test]
fn casts_to_and_from_every_dtype() {
    let Some(dev) = f64_device() else { return };
    let mut v = noise(24, 8, 300.0);
    v[0] = 0.1;
    v[1] = -0.0;
    v[2] = f64::NAN;
    v[3] = 1e40;
    v[4] = -3e9;
    v[5] = 2.5;
    // Just past float16 midpoints by less than an f32 ulp: rounding through f32 would tie.
    v[6] = 1.0 + 2f64.powi(-11) + 2f64.powi(-40);
    v[7] = -v[6];
    v[8] = 2f64.powi(-25) + 2f64.powi(-60);
    v[9] = 65519.99999;
    let a = up(&dev, &v, &[4, 6]);
    for d in DType::ALL {
        let y = a.astype(d).unwrap();
        assert_eq!(y.dtype(), d);
        match d {
            DType::Float64 => exact("astype float64", &read(&y), &v),
            DType::Float32 => {
                let want: Vec<f64> = v.iter().map(|&x| x as f32 as f64).collect();
                exact("astype float32", &y.to_f64_vec().unwrap(), &want);
            }
            DType::Complex64 => {
                let got = y.to_complex_vec().unwrap();
                for (g, &x) in got.iter().zip(&v) {
                    let w = x as f32 as f64;
                    assert!(g.1 == 0.0 && (g.0 == w || (w.is_nan() && g.0.is_nan())));
                }
            }
            DType::Bool => {
                let want: Vec<f64> = v.iter().map(|&x| (x != 0.0) as u8 as f64).collect();
                assert_eq!(y.to_f64_vec().unwrap(), want, "astype bool");
            }
            DType::Float16 => {
                // Rounded once, f64 to binary16 (as NumPy), never through a tie in f32.
                let got = y.to_f64_vec().unwrap();
                for (g, &x) in got.iter().zip(&v) {
                    let w = common::arrays::f16_round(x);
                    assert!(
                        *g == w || (w.is_nan() && g.is_nan()),
                        "astype float16 of {x}: {g} vs {w}"
                    );
                }
            }
            _ => {
                // In range of int32: truncated then wrapped to the type, as the float32 path.
                let got = y.to_f64_vec().unwrap();
                for (i, &x) in v.iter().enumerate() {
                    if x.is_nan() || x.abs() > 2e9 {
                        continue;
                    }
                    assert_eq!(
                        got[i],
                        common::arrays::fit(d, x.trunc()),
                        "astype {d} of {x}"
                    );
                }
            }
        }
    }
    // Every dtype to float64 and back keeps the values.
    for d in DType::ALL {
        if d == DType::Complex64 || d == DType::Float64 {
            continue;
        }
        let vals = common::arrays::values(d, 24, 9, -100.0, 100.0);
        let x = common::arrays::upload(&dev, d, &vals, &[4, 6]);
        let y = x.astype(DType::Float64).unwrap();
        exact(&format!("{d} -> float64"), &read(&y), &vals);
        assert_eq!(
            y.astype(d).unwrap().to_f64_vec().unwrap(),
            vals,
            "{d} round trip"
        );
    }
    assert!(matches!(
        up(&dev, &v, &[4, 6])
            .astype(DType::Complex64)
            .unwrap()
            .astype(DType::Float64),
        Err(Error::DType { .. })
    ));
}
