//! complex64 arrays against f64 complex references: host bytes both ways, the elementwise
//! operations that take complex (on contiguous arrays, transposed and strided views, 0-d and
//! empty shapes, mixed with real dtypes and Python scalars), `where`, casts, views, copies
//! and assignment through a poisoned target, `sum`/`mean`, and the typed refusal of every
//! operation that does not take complex.

mod common;

use common::arrays::views;
use suanli::array::{Array, Binary, DType, Index, Reduce, Scalar, Unary};
use suanli::{Device, Error};

type C = (f64, f64);

fn cnoise(n: usize, seed: u64) -> Vec<C> {
    let mut s = seed.wrapping_mul(0x9E3779B97F4A7C15) | 1;
    let mut next = || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        (((s >> 11) as f64 / (1u64 << 53) as f64) * 8.0 - 4.0) as f32 as f64
    };
    (0..n).map(|_| (next(), next())).collect()
}

fn upload(dev: &Device, v: &[C], shape: &[usize]) -> Array {
    let f: Vec<(f32, f32)> = v.iter().map(|&(a, b)| (a as f32, b as f32)).collect();
    Array::from_complex(dev, &f, shape).unwrap()
}

fn mul(a: C, b: C) -> C {
    (a.0 * b.0 - a.1 * b.1, a.0 * b.1 + a.1 * b.0)
}

fn div(a: C, b: C) -> C {
    let d = b.0 * b.0 + b.1 * b.1;
    ((a.0 * b.0 + a.1 * b.1) / d, (a.1 * b.0 - a.0 * b.1) / d)
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

fn close(what: &str, got: &[C], want: &[C], rtol: f64) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        if g == w {
            continue;
        }
        let m = w.0.hypot(w.1).max(1e-30);
        let e = (g.0 - w.0).hypot(g.1 - w.1);
        assert!(e <= rtol * m, "{what}[{i}]: got {g:?}, want {w:?}");
    }
}

fn unary_ref(op: Unary, z: C) -> C {
    match op {
        Unary::Negative => (-z.0, -z.1),
        Unary::Positive => z,
        Unary::Conj => (z.0, -z.1),
        Unary::Real => (z.0, 0.0),
        Unary::Imag => (z.1, 0.0),
        Unary::Abs => (z.0.hypot(z.1), 0.0),
        Unary::Square => mul(z, z),
        Unary::Sqrt => sqrt(z),
        Unary::Exp => {
            let e = z.0.exp();
            (e * z.1.cos(), e * z.1.sin())
        }
        _ => unreachable!(),
    }
}

#[test]
fn bytes_round_trip_and_views() {
    let dev = dev_or_skip!();
    let v = cnoise(24, 1);
    let a = upload(&dev, &v, &[4, 6]);
    assert_eq!(a.dtype(), DType::Complex64);
    assert_eq!(DType::Complex64.host_size(), 8);
    let bytes = a.to_bytes().unwrap();
    assert_eq!(bytes.len(), 24 * 8);
    let b = Array::from_bytes(&dev, DType::Complex64, &bytes, &[6, 4]).unwrap();
    assert_eq!(b.to_bytes().unwrap(), bytes);
    for (k, (x, want)) in views(&a, &v).into_iter().enumerate() {
        close(
            &format!("view {k}"),
            &x.to_complex_vec().unwrap(),
            &want,
            0.0,
        );
        close(
            &format!("copy {k}"),
            &x.copy().unwrap().to_complex_vec().unwrap(),
            &want,
            0.0,
        );
    }
    let r = a.reshape(&[Some(3), None]).unwrap();
    assert_eq!(r.shape(), &[3, 8]);
    close("reshape", &r.to_complex_vec().unwrap(), &v, 0.0);
    assert!(matches!(a.to_f64_vec(), Err(Error::DType { .. })));
    assert_eq!(DType::from_name("complex64").unwrap(), DType::Complex64);
    assert!(DType::from_name("complex128").is_err());
}

#[test]
fn unary_ops_on_views() {
    let dev = dev_or_skip!();
    let mut v = cnoise(24, 2);
    v[5] = (0.0, 0.0);
    v[6] = (-3.0, 0.0);
    v[7] = (2.5, -0.0);
    let a = upload(&dev, &v, &[4, 6]);
    use Unary::*;
    for op in [Negative, Positive, Conj, Real, Imag, Abs, Square, Sqrt, Exp] {
        for (k, (x, xv)) in views(&a, &v).into_iter().enumerate() {
            let y = x.unary(op).unwrap();
            let real_out = matches!(op, Real | Imag | Abs);
            assert_eq!(
                y.dtype(),
                if real_out {
                    DType::Float32
                } else {
                    DType::Complex64
                }
            );
            let got = y.to_complex_vec().unwrap();
            let want: Vec<C> = xv.iter().map(|&z| unary_ref(op, z)).collect();
            let rtol = if matches!(op, Exp | Sqrt) { 2e-6 } else { 3e-7 };
            close(&format!("{}(view {k})", op.name()), &got, &want, rtol);
        }
    }
    // exp and sqrt of a real value have an imaginary part of exactly 0.
    let r = upload(&dev, &[(0.5, 0.0), (4.0, 0.0)], &[2]);
    for op in [Exp, Sqrt] {
        let got = r.unary(op).unwrap().to_complex_vec().unwrap();
        assert!(got.iter().all(|z| z.1 == 0.0), "{}: {got:?}", op.name());
    }
    let s = upload(
        &dev,
        &[
            (f64::NAN, 0.0),
            (0.0, f64::INFINITY),
            (1.0, 2.0),
            (0.0, 0.0),
        ],
        &[4],
    );
    let flags = |op| s.unary(op).unwrap().to_f64_vec().unwrap();
    assert_eq!(flags(IsNan), [1.0, 0.0, 0.0, 0.0]);
    assert_eq!(flags(IsInf), [0.0, 1.0, 0.0, 0.0]);
    assert_eq!(flags(IsFinite), [0.0, 0.0, 1.0, 1.0]);
    assert_eq!(flags(LogicalNot), [0.0, 0.0, 0.0, 1.0]);
    assert_eq!(
        s.astype(DType::Bool).unwrap().to_f64_vec().unwrap(),
        [1.0, 1.0, 1.0, 0.0]
    );
}

#[test]
fn binary_ops_broadcast_and_mix_dtypes() {
    let dev = dev_or_skip!();
    let av = cnoise(24, 3);
    let bv = cnoise(6, 4);
    let a = upload(&dev, &av, &[4, 6]);
    let b = upload(&dev, &bv, &[6]);
    let fv: Vec<f64> = (0..6).map(|i| i as f64 - 2.5).collect();
    let f = Array::from_f64(&dev, &fv, &[6], DType::Float32).unwrap();
    let i = Array::from_f64(&dev, &[1.0, -2.0, 3.0, 0.0, 5.0, 7.0], &[6], DType::Int32).unwrap();
    let iv = [1.0, -2.0, 3.0, 0.0, 5.0, 7.0];
    use Binary::*;
    for op in [Add, Subtract, Multiply, Divide] {
        let r = |x: C, y: C| match op {
            Add => (x.0 + y.0, x.1 + y.1),
            Subtract => (x.0 - y.0, x.1 - y.1),
            Multiply => mul(x, y),
            _ => div(x, y),
        };
        for (k, (x, xv)) in views(&a, &av).into_iter().take(2).enumerate() {
            let cols = if k == 0 { 6 } else { 4 };
            if cols != 6 {
                continue;
            }
            let y = x.binary(op, &b).unwrap();
            assert_eq!(y.dtype(), DType::Complex64);
            let want: Vec<C> = xv
                .iter()
                .enumerate()
                .map(|(j, &z)| r(z, bv[j % 6]))
                .collect();
            close(op.name(), &y.to_complex_vec().unwrap(), &want, 4e-7);
            // float32 and int32 operands on either side promote to complex64.
            let y = f.binary(op, &x).unwrap();
            assert_eq!(y.dtype(), DType::Complex64);
            let want: Vec<C> = xv
                .iter()
                .enumerate()
                .map(|(j, &z)| r((fv[j % 6], 0.0), z))
                .collect();
            close(
                &format!("float32 {}", op.name()),
                &y.to_complex_vec().unwrap(),
                &want,
                4e-7,
            );
            let y = x.binary(op, &i).unwrap();
            let want: Vec<C> = xv
                .iter()
                .enumerate()
                .map(|(j, &z)| r(z, (iv[j % 6], 0.0)))
                .collect();
            let got = y.to_complex_vec().unwrap();
            if op == Divide {
                // Division by 0 + 0j: not finite, as in NumPy.
                for (g, w) in got.iter().zip(&want) {
                    if w.0.is_finite() {
                        assert!((g.0 - w.0).hypot(g.1 - w.1) <= 4e-7 * w.0.hypot(w.1));
                    } else {
                        assert!(!g.0.is_finite() || !g.1.is_finite());
                    }
                }
            } else {
                close(&format!("int32 {}", op.name()), &got, &want, 4e-7);
            }
        }
        // Python scalars: a complex literal with a real array, a float with a complex one.
        let y = f.binary_scalar(op, Scalar::Complex(0.5, -2.0)).unwrap();
        let want: Vec<C> = fv.iter().map(|&x| r((x, 0.0), (0.5, -2.0))).collect();
        close("complex scalar", &y.to_complex_vec().unwrap(), &want, 4e-7);
        let y = b.scalar_binary(Scalar::Float(3.0), op).unwrap();
        let want: Vec<C> = bv.iter().map(|&z| r((3.0, 0.0), z)).collect();
        close(
            "reflected float scalar",
            &y.to_complex_vec().unwrap(),
            &want,
            4e-7,
        );
    }
    let c = upload(
        &dev,
        &[(1.0, 2.0), (1.0, 2.0), (1.0, -2.0), (3.0, 0.0)],
        &[4],
    );
    let d = upload(
        &dev,
        &[(1.0, 2.0), (1.0, 3.0), (1.0, 2.0), (3.0, 0.0)],
        &[4],
    );
    assert_eq!(
        c.equal(&d).unwrap().to_f64_vec().unwrap(),
        [1.0, 0.0, 0.0, 1.0]
    );
    assert_eq!(
        c.not_equal(&d).unwrap().to_f64_vec().unwrap(),
        [0.0, 1.0, 1.0, 0.0]
    );
    let three = Array::scalar(&dev, 3.0, DType::Float32);
    assert_eq!(
        c.equal(&three).unwrap().to_f64_vec().unwrap(),
        [0.0, 0.0, 0.0, 1.0]
    );
    // where: a real and a complex branch give complex64, the condition may be complex.
    let cond = Array::from_f64(&dev, &[1.0, 0.0, 1.0, 0.0], &[4], DType::Bool).unwrap();
    let w = Array::where_(&cond, &c, &three).unwrap();
    close(
        "where",
        &w.to_complex_vec().unwrap(),
        &[(1.0, 2.0), (3.0, 0.0), (1.0, -2.0), (3.0, 0.0)],
        0.0,
    );
    let z = upload(&dev, &[(0.0, 1.0), (0.0, 0.0)], &[2]);
    let w = Array::where_(&z, &three, &Array::scalar(&dev, 1.0, DType::Float32)).unwrap();
    assert_eq!(w.to_f64_vec().unwrap(), [3.0, 1.0]);
}

#[test]
fn casts_reductions_and_assignment() {
    let dev = dev_or_skip!();
    let fv = [1.5, -2.0, f64::INFINITY];
    let f = Array::from_f64(&dev, &fv, &[3], DType::Float32).unwrap();
    let c = f.astype(DType::Complex64).unwrap();
    close(
        "astype",
        &c.to_complex_vec().unwrap(),
        &[(1.5, 0.0), (-2.0, 0.0), (f64::INFINITY, 0.0)],
        0.0,
    );
    let i = Array::from_f64(&dev, &[7.0, -3.0], &[2], DType::Int8).unwrap();
    close(
        "int8 astype",
        &i.astype(DType::Complex64)
            .unwrap()
            .to_complex_vec()
            .unwrap(),
        &[(7.0, 0.0), (-3.0, 0.0)],
        0.0,
    );
    for d in [DType::Float32, DType::Int32, DType::UInt8] {
        match c.astype(d) {
            Err(Error::DType { op, found, .. }) => {
                assert_eq!(op, "astype");
                assert!(found.contains("complex64"), "{found}");
            }
            other => panic!("astype complex64 to {d}: {other:?}"),
        }
    }
    let v = cnoise(24, 5);
    let a = upload(&dev, &v, &[4, 6]);
    for (axes, keep) in [
        (None, false),
        (Some(&[0isize][..]), true),
        (Some(&[1][..]), false),
    ] {
        let s = a.sum(axes, keep).unwrap();
        let m = a.mean(axes, keep).unwrap();
        assert_eq!(s.dtype(), DType::Complex64);
        let (rows, cols, n) = match axes {
            None => (1, 1, 24.0),
            Some([0]) => (1, 6, 4.0),
            _ => (4, 1, 6.0),
        };
        let mut want = vec![(0.0, 0.0); rows * cols];
        for r in 0..4 {
            for k in 0..6 {
                let o = if rows == 1 { 0 } else { r } * cols + if cols == 1 { 0 } else { k };
                want[o].0 += v[r * 6 + k].0;
                want[o].1 += v[r * 6 + k].1;
            }
        }
        close("sum", &s.to_complex_vec().unwrap(), &want, 1e-6);
        let wm: Vec<C> = want.iter().map(|&(a, b)| (a / n, b / n)).collect();
        close("mean", &m.to_complex_vec().unwrap(), &wm, 1e-6);
    }
    assert_eq!(
        a.reduce(Reduce::Any, None, false)
            .unwrap()
            .to_f64_vec()
            .unwrap(),
        [1.0]
    );
    // Assignment through a strided view of a poisoned target writes only the view.
    let nan = Array::complex_scalar(&dev, f64::NAN, f64::NAN);
    let t = Array::zeros(&dev, &[3, 4], DType::Complex64)
        .unwrap()
        .copy()
        .unwrap();
    t.assign(&nan).unwrap();
    let view = t
        .index(&[
            Index::Slice {
                start: None,
                stop: None,
                step: Some(2),
            },
            Index::Slice {
                start: Some(3),
                stop: None,
                step: Some(-2),
            },
        ])
        .unwrap();
    view.assign(
        &f.index(&[Index::Slice {
            start: Some(0),
            stop: Some(2),
            step: None,
        }])
        .unwrap(),
    )
    .unwrap();
    let got = t.to_complex_vec().unwrap();
    for (k, z) in got.iter().enumerate() {
        let (r, c) = (k / 4, k % 4);
        let hit = r % 2 == 0 && c % 2 == 1;
        if hit {
            let want = if c == 3 { 1.5 } else { -2.0 };
            assert_eq!(*z, (want, 0.0), "[{r}, {c}]");
        } else {
            assert!(
                z.0.is_nan() && z.1.is_nan(),
                "[{r}, {c}] was written: {z:?}"
            );
        }
    }
    // Creation in complex64: a fractional arange step is kept, eye is 1 + 0j.
    let r = Array::arange(&dev, 0.0, 2.0, 0.5, DType::Complex64).unwrap();
    close(
        "arange",
        &r.to_complex_vec().unwrap(),
        &[(0.0, 0.0), (0.5, 0.0), (1.0, 0.0), (1.5, 0.0)],
        0.0,
    );
    let e = Array::eye(&dev, 2, 2, 0, DType::Complex64).unwrap();
    close(
        "eye",
        &e.to_complex_vec().unwrap(),
        &[(1.0, 0.0), (0.0, 0.0), (0.0, 0.0), (1.0, 0.0)],
        0.0,
    );
    // A complex value does not go into a real array.
    assert!(matches!(f.assign(&c), Err(Error::DType { .. })));
}

#[test]
fn var_and_std_are_real_means_of_squared_distances() {
    let dev = dev_or_skip!();
    // Around an offset far from 0, where a one-pass formula would cancel.
    let v: Vec<C> = cnoise(24, 9)
        .into_iter()
        .map(|(r, i)| (r + 100.0, i - 50.0))
        .collect();
    let a = upload(&dev, &v, &[4, 6]);
    // The f64 reference of one line of values: Σ|z - mean|² / (N - correction).
    let var = |zs: &[C], corr: f64| {
        let n = zs.len() as f64;
        let (mr, mi) = zs.iter().fold((0.0, 0.0), |s, z| (s.0 + z.0, s.1 + z.1));
        let (mr, mi) = (mr / n, mi / n);
        zs.iter()
            .map(|z| (z.0 - mr).powi(2) + (z.1 - mi).powi(2))
            .sum::<f64>()
            / (n - corr)
    };
    for (k, (x, xv)) in views(&a, &v).into_iter().enumerate() {
        let got = x.var(None, 1.0, false).unwrap();
        assert_eq!(got.dtype(), DType::Float32, "view {k}");
        let want = if xv.len() > 1 {
            var(&xv, 1.0)
        } else {
            f64::NAN
        };
        let g = got.to_f64_vec().unwrap()[0];
        assert!(
            (want.is_nan() && g.is_nan()) || (g - want).abs() <= 1e-5 * want,
            "view {k}: var {g}, want {want}"
        );
    }
    // Along an axis, and std as its root.
    let got = a.std(Some(&[1]), 0.0, true).unwrap();
    assert_eq!(got.shape(), &[4, 1]);
    for (r, g) in got.to_f64_vec().unwrap().into_iter().enumerate() {
        let want = var(&v[r * 6..r * 6 + 6], 0.0).sqrt();
        assert!(
            (g - want).abs() <= 1e-5 * want,
            "row {r}: std {g}, want {want}"
        );
    }
}

#[test]
fn other_operations_refuse_complex_by_name() {
    let dev = dev_or_skip!();
    let a = upload(&dev, &cnoise(6, 6), &[2, 3]);
    let named = |r: suanli::Result<Array>, name: &str| match r {
        Err(Error::DType { op, found, .. }) => {
            assert_eq!(op, name);
            assert!(found.contains("complex64"), "{name}: {found}");
        }
        other => panic!("{name}: expected a dtype error, found {other:?}"),
    };
    for op in [
        Unary::Floor,
        Unary::Ceil,
        Unary::Trunc,
        Unary::Signbit,
        Unary::BitwiseInvert,
    ] {
        named(a.unary(op), op.name());
    }
    for op in [
        Binary::Less,
        Binary::Maximum,
        Binary::Atan2,
        Binary::FloorDivide,
    ] {
        named(a.binary(op, &a), op.name());
    }
    named(a.reduce(Reduce::Min, None, false), "min");
    named(a.reduce(Reduce::Max, None, false), "max");
    // take and integer/mask indexing move both words (tests/array_gather_wide.rs).
    let k = suanli::array::custom::ElementwiseKernel::new("T x", "T y", "y = x", "copy").unwrap();
    named(
        k.call(std::slice::from_ref(&a)).map(|mut v| v.remove(0)),
        "ElementwiseKernel",
    );
    assert!(a.to_tensor().is_err());
    assert!(a.clip(Some(0.0), None).is_err());
}

#[test]
fn nan_in_either_part_is_unequal_to_everything() {
    let dev = dev_or_skip!();
    let nan = f64::NAN;
    let a = upload(
        &dev,
        &[(nan, 0.0), (0.0, nan), (1.0, 2.0), (1.0, 2.0)],
        &[4],
    );
    let b = upload(
        &dev,
        &[(nan, 0.0), (0.0, nan), (1.0, 2.0), (1.0, -2.0)],
        &[4],
    );
    let ne = a
        .binary(Binary::NotEqual, &b)
        .unwrap()
        .to_f64_vec()
        .unwrap();
    let eq = a.binary(Binary::Equal, &b).unwrap().to_f64_vec().unwrap();
    assert_eq!(ne, vec![1.0, 1.0, 0.0, 1.0]);
    assert_eq!(eq, vec![0.0, 0.0, 1.0, 0.0]);
}

#[test]
fn sort_is_numpys_order_with_nan_classes_last() {
    let dev = dev_or_skip!();
    let nan = f64::NAN;
    let v: Vec<C> = vec![
        (1.0, 2.0),
        (1.0, -2.0),
        (-1.0, 0.0),
        (1.0, nan),
        (nan, 1.0),
        (nan, nan),
        (1.0, 2.0),
        (-0.0, 0.0),
        (0.0, -0.0),
        (f64::INFINITY, -1.0),
        (f64::NEG_INFINITY, 3.0),
        (2.5, -1.0),
        (-3.0, nan),
        (nan, -4.0),
    ];
    // NumPy's order (numpy.sort's notes): R+Rj < R+nanj < nan+Rj < nan+nanj, each class by
    // its non-NaN parts (real first), -0 equal to +0; stable.
    let rank = |z: C| match (z.0.is_nan(), z.1.is_nan()) {
        (false, false) => (0, z.0 + 0.0, z.1 + 0.0),
        (false, true) => (1, z.0 + 0.0, 0.0),
        (true, false) => (2, z.1 + 0.0, 0.0),
        (true, true) => (3, 0.0, 0.0),
    };
    let mut want: Vec<usize> = (0..v.len()).collect();
    want.sort_by(|&i, &j| rank(v[i]).partial_cmp(&rank(v[j])).unwrap());
    let x = upload(&dev, &v, &[v.len()]);
    let got: Vec<usize> = x
        .argsort(0, false)
        .unwrap()
        .to_f64_vec()
        .unwrap()
        .iter()
        .map(|&p| p as usize)
        .collect();
    assert_eq!(got, want);
    let sorted = x.sort(0, false).unwrap().to_complex_vec().unwrap();
    for (k, (&p, s)) in want.iter().zip(&sorted).enumerate() {
        let w = v[p];
        let same = |a: f64, b: f64| (a.is_nan() && b.is_nan()) || a == b;
        assert!(same(s.0, w.0) && same(s.1, w.1), "[{k}]: {s:?} vs {w:?}");
    }
}
