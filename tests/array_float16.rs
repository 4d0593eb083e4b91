//! float16 arrays (f32 device words rounded to binary16 after every operation) against f64
//! references rounded to binary16 (the rounding itself is tested exhaustively in
//! array_float16_rounding.rs): every elementwise operation on contiguous, transposed, strided, 0-d,
//! empty and broadcast operands into poisoned outputs (exact for the correctly rounded
//! operations, one binary16 ulp for the transcendental ones), fusion, casts both ways,
//! reductions, scans, sorting, gathers, matmul and the typed refusals.

mod common;

use common::arrays::{binary_ref, fit, unary_ref, upload, values, views};
use half::f16;
use suanli::array::{Array, Binary, DType, Index, Indexer, Reduce, Unary};
use suanli::{Device, Error};

const H: DType = DType::Float16;

/// Leaves a freed buffer of `words` NaNs in the pool, so an output the kernels fail to write
/// shows as NaN.
fn poison(dev: &Device, words: usize) {
    let p = Array::full(dev, &[words.max(1)], f64::NAN, DType::Float32).unwrap();
    p.eval().unwrap();
    drop(p);
}

/// The binary16 value nearest `v`.
fn r16(v: f64) -> f64 {
    fit(H, v)
}

/// One binary16 ulp at `v`'s magnitude (2^-24 below the normal range).
fn ulp16(v: f64) -> f64 {
    let a = v.abs();
    if a < 2f64.powi(-14) {
        2f64.powi(-24)
    } else {
        2f64.powi(a.log2().floor() as i32 - 10)
    }
}

/// Every value is a binary16 value, and equal to `want` (or within `ulps` binary16 ulps).
fn check(what: &str, got: &[f64], want: &[f64], ulps: f64) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        assert!(
            g.is_nan() || r16(g) == g,
            "{what}[{i}]: {g} is not a float16 value"
        );
        let ok = (g.is_nan() && w.is_nan())
            || g == w
            || (ulps > 0.0
                && g.is_finite()
                && w.is_finite()
                && (g - w).abs() <= ulps * ulp16(g.abs().max(w.abs())));
        assert!(ok, "{what}[{i}]: got {g}, want {w}");
    }
}

/// 24 float16 values: random ones in [lo, hi] with zeros, infinities, NaN, subnormals and
/// the largest finite value among them.
fn sample(seed: u64, lo: f64, hi: f64) -> Vec<f64> {
    let mut v = values(H, 24, seed, lo, hi);
    let special = [
        0.0,
        -0.0,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
        2f64.powi(-24),
        -3.0 * 2f64.powi(-20),
        65504.0,
    ];
    for (k, s) in special.iter().enumerate() {
        v[3 * k + 1] = *s;
    }
    v
}

fn exact_unary(op: Unary) -> bool {
    use Unary::*;
    matches!(
        op,
        Negative
            | Positive
            | Abs
            | Sign
            | Square
            | Sqrt
            | Floor
            | Ceil
            | Round
            | Trunc
            | Conj
            | Real
            | Imag
    )
}

#[test]
fn unary_ops_round_once_on_views() {
    let dev = dev_or_skip!();
    let v = sample(1, -3.0, 3.0);
    let a = upload(&dev, H, &v, &[4, 6]);
    assert_eq!(a.dtype(), H);
    for op in Unary::ALL {
        if op == Unary::BitwiseInvert {
            assert!(matches!(a.unary(op), Err(Error::DType { .. })));
            continue;
        }
        for (k, (x, xv)) in views(&a, &v).into_iter().enumerate() {
            let y = x.unary(op).unwrap();
            let bool_out = matches!(
                op,
                Unary::IsNan | Unary::IsInf | Unary::IsFinite | Unary::Signbit | Unary::LogicalNot
            );
            assert_eq!(y.dtype(), if bool_out { DType::Bool } else { H }, "{op:?}");
            poison(&dev, 24);
            let got = y.to_f64_vec().unwrap();
            let want: Vec<f64> = xv.iter().map(|&x| r16(unary_ref(op, H, x))).collect();
            let ulps = if exact_unary(op) || bool_out {
                0.0
            } else {
                1.0
            };
            check(&format!("{}(view {k})", op.name()), &got, &want, ulps);
        }
    }
}

/// The f64 reference rounded to float16 (nextafter's steps float16's neighbours).
fn binary_want(op: Binary, a: f64, b: f64) -> f64 {
    r16(binary_ref(op, H, a, b))
}

#[test]
fn binary_ops_round_once_with_broadcasting_and_scalars() {
    let dev = dev_or_skip!();
    let av = sample(2, -4.0, 4.0);
    let bv = sample(3, -4.0, 4.0);
    let a = upload(&dev, H, &av, &[4, 6]);
    let b = upload(&dev, H, &bv, &[4, 6]);
    let row = upload(&dev, H, &bv[..6], &[6]);
    use Binary::*;
    for op in Binary::ALL {
        if matches!(
            op,
            BitwiseAnd | BitwiseOr | BitwiseXor | BitwiseLeftShift | BitwiseRightShift
        ) {
            assert!(
                matches!(a.binary(op, &b), Err(Error::DType { .. })),
                "{op:?}"
            );
            continue;
        }
        let cmp = matches!(
            op,
            Equal
                | NotEqual
                | Less
                | LessEqual
                | Greater
                | GreaterEqual
                | LogicalAnd
                | LogicalOr
                | LogicalXor
        );
        // Correctly rounded in f32, so exact in float16; the others within one ulp.
        let exact = cmp
            || matches!(
                op,
                Add | Subtract | Multiply | Divide | Maximum | Minimum | Copysign | Nextafter
            );
        let ulps = if exact { 0.0 } else { 1.0 };
        let out = if cmp { DType::Bool } else { H };
        let name = op.name();
        // Full arrays, a transposed operand against a transposed one, and a row broadcast.
        let y = a.binary(op, &b).unwrap();
        assert_eq!(y.dtype(), out);
        poison(&dev, 24);
        let want: Vec<f64> = (0..24).map(|i| binary_want(op, av[i], bv[i])).collect();
        check(name, &y.to_f64_vec().unwrap(), &want, ulps);
        let t = a
            .matrix_transpose()
            .unwrap()
            .binary(op, &b.matrix_transpose().unwrap())
            .unwrap();
        let want_t: Vec<f64> = (0..24)
            .map(|k| {
                let i = (k % 4) * 6 + k / 4;
                binary_want(op, av[i], bv[i])
            })
            .collect();
        check(
            &format!("{name} T"),
            &t.to_f64_vec().unwrap(),
            &want_t,
            ulps,
        );
        let r = a.binary(op, &row).unwrap();
        let want_r: Vec<f64> = (0..24).map(|i| binary_want(op, av[i], bv[i % 6])).collect();
        check(
            &format!("{name} row"),
            &r.to_f64_vec().unwrap(),
            &want_r,
            ulps,
        );
        // A Python float beside float16 is float16 (rounded once on upload).
        let s = a.binary_scalar(op, 1.3.into()).unwrap();
        assert_eq!(s.dtype(), out);
        let want_s: Vec<f64> = av.iter().map(|&x| binary_want(op, x, r16(1.3))).collect();
        check(
            &format!("{name} scalar"),
            &s.to_f64_vec().unwrap(),
            &want_s,
            ulps,
        );
        // Empty and 0-d operands.
        let e = a
            .index(&[Index::Slice {
                start: Some(1),
                stop: Some(1),
                step: None,
            }])
            .unwrap();
        assert_eq!(e.binary(op, &row).unwrap().to_f64_vec().unwrap().len(), 0);
        let z = a.index(&[Index::At(1), Index::At(2)]).unwrap();
        let zz = z.binary(op, &z).unwrap();
        assert_eq!(zz.shape(), &[] as &[usize]);
        check(
            &format!("{name} 0-d"),
            &zz.to_f64_vec().unwrap(),
            &[binary_want(op, av[8], av[8])],
            ulps,
        );
    }
}

#[test]
fn fused_expressions_round_after_every_operation() {
    let dev = dev_or_skip!();
    // Ragged shape; values where float32 intermediates would differ from float16 ones.
    let n = 3 * 5 * 7;
    let av = values(H, n, 4, -300.0, 300.0);
    let bv = values(H, n, 5, 0.5, 2.0);
    let a = upload(&dev, H, &av, &[3, 5, 7]);
    let b = upload(&dev, H, &bv, &[3, 5, 7]);
    // ((a * b + 1000) - 1000) / b, and sqrt(|a|) * 3 + a: each step rounded.
    let y = a
        .binary(Binary::Multiply, &b)
        .unwrap()
        .binary_scalar(Binary::Add, 1000.0.into())
        .unwrap()
        .binary_scalar(Binary::Subtract, 1000.0.into())
        .unwrap()
        .binary(Binary::Divide, &b)
        .unwrap();
    let z = a
        .unary(Unary::Abs)
        .unwrap()
        .unary(Unary::Sqrt)
        .unwrap()
        .binary_scalar(Binary::Multiply, 3.0.into())
        .unwrap()
        .binary(Binary::Add, &a)
        .unwrap();
    poison(&dev, n);
    let want_y: Vec<f64> = (0..n)
        .map(|i| r16(r16(r16(r16(av[i] * bv[i]) + 1000.0) - 1000.0) / bv[i]))
        .collect();
    let want_z: Vec<f64> = (0..n)
        .map(|i| r16(r16(r16(av[i].abs().sqrt()) * 3.0) + av[i]))
        .collect();
    check("fused y", &y.to_f64_vec().unwrap(), &want_y, 0.0);
    check("fused z", &z.to_f64_vec().unwrap(), &want_z, 0.0);
    // The f32 chain would have kept more bits somewhere.
    let f32_chain: Vec<f64> = (0..n)
        .map(|i| (((av[i] * bv[i]) as f32 + 1000.0 - 1000.0) / bv[i] as f32) as f64)
        .collect();
    assert!(f32_chain.iter().zip(&want_y).any(|(a, b)| r16(*a) != *b));
    // where() of float16 and a float16 scalar.
    let c = a.binary_scalar(Binary::Greater, 0.0.into()).unwrap();
    let w = Array::where_(&c, &a, &Array::scalar(&dev, 0.1, H)).unwrap();
    assert_eq!(w.dtype(), H);
    let want_w: Vec<f64> = av
        .iter()
        .map(|&x| if x > 0.0 { x } else { r16(0.1) })
        .collect();
    check("where", &w.to_f64_vec().unwrap(), &want_w, 0.0);
}

#[test]
fn casts_promotion_and_host_bytes() {
    let dev = dev_or_skip!();
    assert_eq!(DType::from_name("float16").unwrap(), H);
    assert_eq!(H.host_size(), 2);
    assert!(H.is_float());
    let v = sample(6, -300.0, 300.0);
    let a = upload(&dev, H, &v, &[4, 6]);
    let bytes = a.to_bytes().unwrap();
    assert_eq!(bytes.len(), 48);
    let want_bytes: Vec<u8> = v
        .iter()
        .flat_map(|&x| f16::from_f64(x).to_le_bytes())
        .collect();
    for (i, (g, w)) in bytes.chunks(2).zip(want_bytes.chunks(2)).enumerate() {
        assert!(g == w || v[i].is_nan(), "byte pair {i}");
    }
    let back = Array::from_bytes(&dev, H, &bytes, &[2, 12]).unwrap();
    assert_eq!(back.to_bytes().unwrap(), bytes);
    // float64 where the adapter holds it (not on GL).
    for to in DType::ALL
        .into_iter()
        .filter(|d| d.check_device(&dev, "test").is_ok())
    {
        if to.is_complex() {
            let c = a.astype(to).unwrap().to_complex_vec().unwrap();
            let re: Vec<f64> = c.iter().map(|z| z.0).collect();
            check("to complex64", &re, &v, 0.0);
            continue;
        }
        poison(&dev, 24);
        let got = a.astype(to).unwrap().to_f64_vec().unwrap();
        for (&g, &x) in got.iter().zip(&v) {
            let want = if to.is_integer() && !x.is_finite() {
                // NaN and infinities: saturated or 0 (the cast kernels' choice).
                continue;
            } else if to.is_integer() {
                let t = x.trunc();
                let (lo, hi) = to.range();
                if t < lo || t > hi {
                    continue;
                }
                t
            } else {
                fit(to, x)
            };
            assert!(
                g == want || (g.is_nan() && want.is_nan()),
                "float16 {x} as {to}: got {g}, want {want}"
            );
        }
        // And back: every dtype's values round once into float16.
        let src = values(to, 24, 7, -70000.0, 70000.0);
        let x = upload(&dev, to, &src, &[24]);
        let got = x.astype(H).unwrap().to_f64_vec().unwrap();
        let want: Vec<f64> = src.iter().map(|&s| r16(fit(to, s))).collect();
        check(&format!("{to} as float16"), &got, &want, 0.0);
        // Promotion: float16 with float32 is float32; with integers and bool, float16.
        let p = a
            .binary(Binary::Add, &x.index(&[Index::At(0)]).unwrap())
            .unwrap();
        let expect = match to {
            DType::Float32 | DType::Float64 | DType::Complex64 => to,
            _ => H,
        };
        assert_eq!(p.dtype(), expect, "float16 + {to}");
    }
    // int16 2049 is not a float16 value: ties to even (2048); 65520 overflows.
    let i = upload(
        &dev,
        DType::Int32,
        &[2049.0, 2051.0, 65519.0, 65520.0],
        &[4],
    );
    assert_eq!(
        i.astype(H).unwrap().to_f64_vec().unwrap(),
        [2048.0, 2052.0, 65504.0, f64::INFINITY]
    );
}

#[test]
fn reductions_accumulate_in_f32_and_round_once() {
    let dev = dev_or_skip!();
    for (shape, seed) in [
        (vec![3usize, 5, 7], 8u64),
        (vec![1, 2000], 9),
        (vec![0, 4], 10),
        (vec![5], 11),
    ] {
        let n: usize = shape.iter().product();
        let v = values(H, n, seed, -8.0, 8.0);
        let a = upload(&dev, H, &v, &shape);
        let last = shape.len() - 1;
        let (rows, cols) = (n / shape[last].max(1), shape[last]);
        let line = |r: usize| &v[r * cols..(r + 1) * cols];
        // Along the last axis (each line), and over everything.
        let by_line = |f: &dyn Fn(&[f64]) -> f64| (0..rows).map(|r| f(line(r))).collect::<Vec<_>>();
        let axis = [last as isize];
        let sum = |x: &[f64]| x.iter().sum::<f64>();
        let mean = |x: &[f64]| sum(x) / x.len() as f64;
        let var = |x: &[f64]| {
            let m = mean(x);
            x.iter().map(|y| (y - m) * (y - m)).sum::<f64>() / x.len() as f64
        };
        for (what, got, f, ulps) in [
            (
                "sum",
                a.sum(Some(&axis), false).unwrap(),
                &sum as &dyn Fn(&[f64]) -> f64,
                0.0,
            ),
            (
                "mean",
                a.mean(Some(&axis), false).unwrap(),
                &mean as &dyn Fn(&[f64]) -> f64,
                1.0,
            ),
            (
                "var",
                a.var(Some(&axis), 0.0, false).unwrap(),
                &var as &dyn Fn(&[f64]) -> f64,
                1.0,
            ),
        ] {
            if cols == 0 && what != "sum" {
                continue;
            }
            assert_eq!(got.dtype(), H, "{what}");
            let want: Vec<f64> = by_line(f).into_iter().map(r16).collect();
            check(
                &format!("{what} {shape:?}"),
                &got.to_f64_vec().unwrap(),
                &want,
                ulps,
            );
        }
        let total = a.sum(None, false).unwrap();
        check(
            "sum all",
            &total.to_f64_vec().unwrap(),
            &[r16(sum(&v))],
            0.0,
        );
        if n == 0 {
            continue;
        }
        let mx = a.reduce(Reduce::Max, Some(&axis), false).unwrap();
        let mn = a.reduce(Reduce::Min, None, false).unwrap();
        let am = a.reduce(Reduce::ArgMax, None, false).unwrap();
        assert_eq!(mx.dtype(), H);
        let want_mx = by_line(&|x: &[f64]| x.iter().cloned().fold(f64::MIN, f64::max));
        check("max", &mx.to_f64_vec().unwrap(), &want_mx, 0.0);
        let want_mn = v.iter().cloned().fold(f64::MAX, f64::min);
        check("min", &mn.to_f64_vec().unwrap(), &[want_mn], 0.0);
        let pos = v
            .iter()
            .position(|&x| x == v.iter().cloned().fold(f64::MIN, f64::max));
        assert_eq!(am.to_f64_vec().unwrap(), [pos.unwrap() as f64]);
        // cumulative_sum: each output rounded once from the f32 running sum.
        let cs = a.cumulative_sum(last as isize, false).unwrap();
        assert_eq!(cs.dtype(), H);
        let mut want_cs = Vec::with_capacity(n);
        for r in 0..rows {
            let mut acc = 0.0;
            for &x in line(r) {
                acc += x;
                want_cs.push(r16(acc));
            }
        }
        check("cumulative_sum", &cs.to_f64_vec().unwrap(), &want_cs, 0.0);
    }
    // A sum that float16 accumulation would lose: 4096 ones, and 2048 + many halves.
    let ones = Array::ones(&dev, &[4096], H).unwrap();
    assert_eq!(
        ones.sum(None, false).unwrap().to_f64_vec().unwrap(),
        [4096.0]
    );
    let mut v = vec![0.5; 1000];
    v[0] = 2048.0;
    let x = upload(&dev, H, &v, &[1000]);
    assert_eq!(
        x.sum(None, false).unwrap().to_f64_vec().unwrap(),
        [r16(2048.0 + 499.5)]
    );
}

#[test]
fn sorting_gathers_and_assignment_move_float16_values() {
    let dev = dev_or_skip!();
    let mut v = values(H, 37, 12, -5.0, 5.0);
    v[3] = f64::NAN;
    v[4] = -0.0;
    v[9] = v[10];
    let a = upload(&dev, H, &v, &[37]);
    let sorted = a.sort(0, false).unwrap();
    assert_eq!(sorted.dtype(), H);
    let mut want = v.clone();
    want.sort_by(|x, y| {
        x.partial_cmp(y).unwrap_or(if x.is_nan() {
            std::cmp::Ordering::Greater
        } else {
            std::cmp::Ordering::Less
        })
    });
    check("sort", &sorted.to_f64_vec().unwrap(), &want, 0.0);
    let order = a.argsort(0, true).unwrap().to_f64_vec().unwrap();
    let taken = a
        .take(&upload(&dev, DType::Int32, &order, &[37]), 0)
        .unwrap()
        .to_f64_vec()
        .unwrap();
    for w in taken
        .windows(2)
        .filter(|w| !w[0].is_nan() && !w[1].is_nan())
    {
        assert!(w[0] >= w[1], "argsort descending: {w:?}");
    }
    let s = a.sort(0, false).unwrap();
    let probes = upload(&dev, H, &[-5.0, 0.0, 1.5, 10.0], &[4]);
    let pos = s
        .searchsorted(&probes, false)
        .unwrap()
        .to_f64_vec()
        .unwrap();
    for (k, &p) in [-5.0, 0.0, 1.5, 10.0].iter().enumerate() {
        let count = want.iter().filter(|&&x| x < p).count();
        assert_eq!(pos[k], count as f64, "searchsorted {p}");
    }
    let u = a.unique_values().unwrap().to_f64_vec().unwrap();
    let mut uw: Vec<f64> = want.iter().cloned().filter(|x| !x.is_nan()).collect();
    uw.dedup_by(|x, y| x == y);
    assert_eq!(&u[..uw.len()], &uw[..]);
    // Mask indexing and assignment through a strided view of a poisoned target.
    let m = a.binary_scalar(Binary::Greater, 1.0.into()).unwrap();
    let picked = a
        .getitem(&[Indexer::Array(m)])
        .unwrap()
        .to_f64_vec()
        .unwrap();
    let want_p: Vec<f64> = v.iter().cloned().filter(|&x| x > 1.0).collect();
    assert_eq!(picked, want_p);
    let t = Array::full(&dev, &[3, 4], f64::NAN, H)
        .unwrap()
        .copy()
        .unwrap();
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
    view.assign(&Array::from_f64(&dev, &[0.1, 0.2, 0.3, 0.4], &[2, 2], DType::Float32).unwrap())
        .unwrap();
    let got = t.to_f64_vec().unwrap();
    for (i, g) in got.iter().enumerate() {
        let (r, c) = (i / 4, i % 4);
        let w = match (r, c) {
            (0, 3) => r16(0.1),
            (0, 1) => r16(0.2),
            (2, 3) => r16(0.3),
            (2, 1) => r16(0.4),
            _ => f64::NAN,
        };
        assert!(
            *g == w || (g.is_nan() && w.is_nan()),
            "assign [{r},{c}]: {g}"
        );
    }
}

#[test]
fn matmul_and_creation() {
    let dev = dev_or_skip!();
    let (m, k, n) = (5usize, 9usize, 3usize);
    let av = values(H, m * k, 13, -2.0, 2.0);
    let bv = values(H, k * n, 14, -2.0, 2.0);
    let a = upload(&dev, H, &av, &[m, k]);
    let b = upload(&dev, H, &bv, &[k, n]);
    let c = a.matmul(&b).unwrap();
    assert_eq!(c.dtype(), H);
    let want: Vec<f64> = (0..m * n)
        .map(|i| {
            r16((0..k)
                .map(|j| av[(i / n) * k + j] * bv[j * n + i % n])
                .sum())
        })
        .collect();
    check("matmul", &c.to_f64_vec().unwrap(), &want, 1.0);
    let r = Array::arange(&dev, 0.0, 3000.0, 1.0, H).unwrap();
    let want: Vec<f64> = (0..3000).map(|i| r16(i as f64)).collect();
    check("arange", &r.to_f64_vec().unwrap(), &want, 0.0);
    let l = Array::linspace(&dev, 0.0, 1.0, 7, true, H).unwrap();
    let want: Vec<f64> = (0..7).map(|i| r16(i as f64 / 6.0)).collect();
    check("linspace", &l.to_f64_vec().unwrap(), &want, 1.0);
    let f = Array::full(&dev, &[2], 0.1, H).unwrap();
    check("full", &f.to_f64_vec().unwrap(), &[r16(0.1); 2], 0.0);
}
