//! Every elementwise array operation against an f64 reference, on every dtype it takes:
//! random values in each op's domain plus the IEEE special values, contiguous arrays and
//! strided views (transposed, reversed with steps), broadcasting in every position, Python
//! scalars, `where` and casts; then fusion (ten operations are one dispatch, equal to the
//! unfused result) and the kernel cache (a second shape and scalar compile nothing).

mod common;

use common::arrays::{assert_close, binary_ref, fit, unary_ref, upload, values};
use suanli::array::layout::Layout;
use suanli::array::{Array, Binary, DType, Index, Unary};

/// The elements of the view `idx` of a row-major host array of `shape`.
fn host_view(vals: &[f64], shape: &[usize], idx: &[Index]) -> (Vec<f64>, Vec<usize>) {
    let l = Layout::contiguous(shape).index(idx).unwrap();
    let n = l.numel();
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let mut rem = i;
        let mut off = l.offset as isize;
        for d in (0..l.ndim()).rev() {
            off += (rem % l.shape[d]) as isize * l.strides[d];
            rem /= l.shape[d];
        }
        out.push(vals[off as usize]);
    }
    (out, l.shape)
}

fn domain(op: Unary) -> (f64, f64) {
    use Unary::*;
    match op {
        Sqrt | Log | Log2 | Log10 => (0.01, 100.0),
        Log1p => (-0.9, 10.0),
        Acosh => (1.0, 10.0),
        Asin | Acos | Atanh => (-0.99, 0.99),
        Exp | Expm1 | Sinh | Cosh => (-10.0, 10.0),
        Tan => (-1.5, 1.5),
        _ => (-50.0, 50.0),
    }
}

/// Relative (and absolute) tolerance of an op's float results: 2.5 ulp for what WGSL
/// rounds correctly or nearly, 8 ulp for the transcendental functions (the worst seen on
/// lavapipe is 4 ulp, exp's 5.1e-7; WGSL allows more, and absolute error near zero for the
/// trigonometric ones).
fn tolerance(name: &str) -> (f64, f64) {
    match name {
        "sin" | "cos" | "tan" => (1e-6, 2e-7),
        "exp" | "expm1" | "log" | "log1p" | "log2" | "log10" | "sinh" | "cosh" | "tanh"
        | "asin" | "acos" | "atan" | "atan2" | "asinh" | "acosh" | "atanh" | "logaddexp"
        | "hypot" => (1e-6, 1e-30),
        "pow" => (1e-5, 1e-30),
        "remainder" | "floor_divide" => (1e-6, 1e-5),
        "nextafter" => (0.0, 0.0),
        _ => (3e-7, 0.0),
    }
}

const SPECIAL: [f64; 6] = [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 0.0, -0.0, 0.5];

/// Special values where an op's answer is the standard's on lavapipe; the functions whose
/// specials are WGSL's (undefined there) are checked on finite values only. (sin, cos, tan,
/// sinh, asinh, acosh and atanh are the prelude's own, with the standard's special cases.)
fn specials_apply(op: Unary) -> bool {
    use Unary::*;
    !matches!(op, Asin | Acos | Cosh | Tanh)
}

#[test]
fn unary_ops_on_every_dtype_and_view() {
    let dev = dev_or_skip!();
    let shape = [5usize, 7];
    let views: [&[Index]; 3] = [
        &[],
        &[
            Index::Slice {
                start: None,
                stop: None,
                step: Some(-1),
            },
            Index::Slice {
                start: Some(1),
                stop: None,
                step: Some(2),
            },
        ],
        &[Index::NewAxis, Index::At(-2)],
    ];
    // complex64 is tested against complex references in tests/array_complex.rs.
    for op in Unary::ALL {
        for d in DType::ALL
            .into_iter()
            .filter(|d| !d.is_complex() && d.check_device(&dev, "test").is_ok())
        {
            let Ok((t, out)) = op.dtypes(d) else { continue };
            let (lo, hi) = domain(op);
            let (lo, hi) = if d == DType::Bool {
                (0.0, 1.0)
            } else {
                (lo.max(d.range().0), hi.min(d.range().1))
            };
            let mut vals = values(d, 35, 7, lo, hi);
            if d.is_float() && specials_apply(op) {
                vals[..6].copy_from_slice(&SPECIAL);
            }
            let x = upload(&dev, d, &vals, &shape);
            let (rtol, atol) = tolerance(op.name());
            for idx in views {
                let (hv, hs) = host_view(&vals, &shape, idx);
                let v = x.index(idx).unwrap();
                assert_eq!(v.shape(), hs.as_slice());
                let y = v.unary(op).unwrap();
                assert_eq!(y.dtype(), out, "{} on {d}", op.name());
                let got = y.to_f64_vec().unwrap();
                let want: Vec<f64> = hv
                    .iter()
                    .map(|&a| fit(out, unary_ref(op, t, fit(t, a))))
                    .collect();
                assert_close(
                    &format!("{}({d}) view {idx:?}", op.name()),
                    out,
                    &got,
                    &want,
                    rtol,
                    atol,
                );
            }
        }
    }
}

fn binary_domain(op: Binary, d: DType) -> ((f64, f64), (f64, f64)) {
    use Binary::*;
    let r = d.range();
    let clip = |(a, b): (f64, f64)| (a.max(r.0), b.min(r.1));
    match op {
        Pow if d.is_float() => ((0.1, 4.0), (-3.0, 3.0)),
        Pow => (clip((-3.0, 5.0)), clip((0.0, 5.0))),
        BitwiseLeftShift | BitwiseRightShift => {
            (clip((-100.0, 100.0)), clip((0.0, d.bits() as f64 + 2.0)))
        }
        FloorDivide | Remainder => (clip((-40.0, 40.0)), clip((-9.0, 9.0))),
        _ if d == DType::Bool => ((0.0, 1.0), (0.0, 1.0)),
        _ => (clip((-60.0, 60.0)), clip((-60.0, 60.0))),
    }
}

#[test]
fn binary_ops_on_every_dtype_with_broadcasting() {
    let dev = dev_or_skip!();
    // Broadcasting in every position: a stretched axis on either side, a missing leading
    // axis, a 0-d operand, and a strided view.
    let shapes: [(&[usize], &[usize]); 5] = [
        (&[3, 1, 5], &[4, 1]),
        (&[], &[2, 3]),
        (&[2, 3], &[]),
        (&[6, 1], &[1, 6]),
        (&[4, 5], &[4, 5]),
    ];
    for op in Binary::ALL {
        for d in DType::ALL
            .into_iter()
            .filter(|d| !d.is_complex() && d.check_device(&dev, "test").is_ok())
        {
            let Ok((t, out)) = op.dtypes(d, d) else {
                continue;
            };
            let ((alo, ahi), (blo, bhi)) = binary_domain(op, d);
            let (rtol, atol) = tolerance(op.name());
            for (k, (sa, sb)) in shapes.iter().enumerate() {
                let na: usize = sa.iter().product();
                let nb: usize = sb.iter().product();
                let av = values(d, na, 11 + k as u64, alo, ahi);
                let bv = values(d, nb, 23 + k as u64, blo, bhi);
                let a = upload(&dev, d, &av, sa);
                let b = upload(&dev, d, &bv, sb);
                // The last case reads a transposed view of a (5, 4) upload.
                let (a, av) = if k == 4 {
                    let at = upload(&dev, d, &av, &[5, 4]).matrix_transpose().unwrap();
                    let mut tv = vec![0.0; 20];
                    for i in 0..4 {
                        for j in 0..5 {
                            tv[i * 5 + j] = av[j * 4 + i];
                        }
                    }
                    (at, tv)
                } else {
                    (a, av)
                };
                let y = a.binary(op, &b).unwrap();
                assert_eq!(y.dtype(), out);
                let oshape = y.shape().to_vec();
                let got = y.to_f64_vec().unwrap();
                let want: Vec<f64> = (0..got.len())
                    .map(|i| {
                        let pick = |s: &[usize], v: &[f64]| {
                            // The broadcast element of an operand of shape `s` at output index i.
                            let mut rem = i;
                            let mut off = 0;
                            let mut stride = 1;
                            let pad = oshape.len() - s.len();
                            let mut coords = vec![0; oshape.len()];
                            for dd in (0..oshape.len()).rev() {
                                coords[dd] = rem % oshape[dd];
                                rem /= oshape[dd];
                            }
                            for dd in (0..s.len()).rev() {
                                let c = if s[dd] == 1 { 0 } else { coords[pad + dd] };
                                off += c * stride;
                                stride *= s[dd];
                            }
                            v[off]
                        };
                        let x = fit(t, pick(sa, &av));
                        let z = fit(t, pick(sb, &bv));
                        fit(out, binary_ref(op, t, x, z))
                    })
                    .collect();
                assert_close(
                    &format!("{}({d}) shapes {sa:?} {sb:?}", op.name()),
                    out,
                    &got,
                    &want,
                    rtol,
                    atol,
                );
            }
        }
    }
}

#[test]
fn mixed_dtypes_scalars_where_and_casts() {
    let dev = dev_or_skip!();
    let i8s = upload(&dev, DType::Int8, &[-128.0, -1.0, 5.0, 127.0], &[4]);
    let u8s = upload(&dev, DType::UInt8, &[0.0, 255.0, 7.0, 128.0], &[4]);
    // int8 + uint8 → int16, no wrap.
    let s = i8s.add(&u8s).unwrap();
    assert_eq!(s.dtype(), DType::Int16);
    assert_eq!(s.to_f64_vec().unwrap(), vec![-128.0, 254.0, 12.0, 255.0]);
    // Python scalars: an int keeps the dtype (and wraps), a float makes float32.
    assert_eq!(
        i8s.add_scalar(1).unwrap().to_f64_vec().unwrap(),
        vec![-127.0, 0.0, 6.0, -128.0]
    );
    let f = i8s.mul_scalar(0.5).unwrap();
    assert_eq!(f.dtype(), DType::Float32);
    assert_eq!(f.to_f64_vec().unwrap(), vec![-64.0, -0.5, 2.5, 63.5]);
    assert!(i8s.add_scalar(300).is_err(), "300 does not fit int8");
    // Reflected: 10 - x.
    assert_eq!(
        i8s.scalar_binary(10.into(), Binary::Subtract)
            .unwrap()
            .to_f64_vec()
            .unwrap(),
        vec![-118.0, 11.0, 5.0, -117.0]
    );
    // Casts: float → int truncates toward zero, NaN → 0, out of range saturates.
    let fl = upload(
        &dev,
        DType::Float32,
        &[-2.7, 2.7, f64::NAN, 1e10, -1e10, 300.0],
        &[6],
    );
    assert_eq!(
        fl.astype(DType::Int32).unwrap().to_f64_vec().unwrap(),
        vec![-2.0, 2.0, 0.0, 2147483520.0, -2147483648.0, 300.0]
    );
    assert_eq!(
        fl.astype(DType::Bool).unwrap().to_f64_vec().unwrap(),
        vec![1.0, 1.0, 1.0, 1.0, 1.0, 1.0]
    );
    assert_eq!(
        fl.astype(DType::UInt8).unwrap().to_f64_vec().unwrap()[..3],
        [254.0, 2.0, 0.0]
    );
    // where, with a broadcast condition and mixed operands.
    let c = upload(&dev, DType::Bool, &[1.0, 0.0], &[2, 1]);
    let a = upload(&dev, DType::Int32, &[1.0, 2.0, 3.0], &[3]);
    let w = Array::where_(&c, &a, &Array::scalar(&dev, -1.5, DType::Float32)).unwrap();
    assert_eq!(w.dtype(), DType::Float32);
    assert_eq!(
        w.to_f64_vec().unwrap(),
        vec![1.0, 2.0, 3.0, -1.5, -1.5, -1.5]
    );
    // Errors name what was expected and found.
    let e = upload(&dev, DType::Float32, &[1.0], &[1])
        .bitwise_invert()
        .unwrap_err()
        .to_string();
    assert!(e.contains("float32") && e.contains("integer"), "{e}");
    let e = a
        .add(&upload(&dev, DType::Int32, &[1.0, 2.0], &[2]))
        .unwrap_err()
        .to_string();
    assert!(e.contains("[3]") && e.contains("[2]"), "{e}");
    // uint32 + int32 is int64: an error only where the device has no SHADER_INT64.
    let mixed = upload(&dev, DType::UInt32, &[1.0, 2.0, 3.0], &[3]).add(&a);
    if dev.info().features.shader_int64 {
        assert_eq!(mixed.unwrap().dtype(), DType::Int64);
    } else {
        assert!(
            matches!(mixed, Err(suanli::Error::DType { .. })),
            "{mixed:?}"
        );
    }
}

#[test]
fn trigonometric_functions_of_large_arguments_and_signed_zeros() {
    let dev = dev_or_skip!();
    // sin, cos and tan of float32 values of every magnitude up to f32::MAX (drivers reduce
    // large arguments with too few bits of pi: lavapipe's cos(1.28e15) was 1.0), against the
    // f64 functions of the same float32 values.
    let mut vals: Vec<f64> = Vec::new();
    for (i, u) in values(DType::Float32, 3000, 11, -1.0, 1.0)
        .iter()
        .enumerate()
    {
        let e = (i % 138) as i32 - 10;
        vals.push(fit(DType::Float32, u * 2f64.powi(e)));
    }
    for v in [
        8191.5,
        8192.0,
        1.2835247e15,
        3.4028235e38,
        -3.4028235e38,
        1e-30,
    ] {
        vals.push(fit(DType::Float32, v));
    }
    let x = upload(&dev, DType::Float32, &vals, &[vals.len()]);
    for (op, f) in [
        (Unary::Sin, f64::sin as fn(f64) -> f64),
        (Unary::Cos, f64::cos),
        (Unary::Tan, f64::tan),
    ] {
        let got = x.unary(op).unwrap().to_f64_vec().unwrap();
        for (v, g) in vals.iter().zip(&got) {
            let want = f(*v);
            let err = (g - want).abs();
            assert!(
                err <= 2e-7 + 2e-6 * want.abs(),
                "{}({v:e}) = {g:e}, want {want:e} (off by {err:e})",
                op.name()
            );
        }
    }
    // The sign of zero is kept, and the standard's infinities and NaN.
    let specials = [-0.0, 0.0, f64::INFINITY, f64::NEG_INFINITY, f64::NAN];
    let x = upload(&dev, DType::Float32, &specials, &[5]);
    for op in [
        Unary::Sin,
        Unary::Tan,
        Unary::Sinh,
        Unary::Asinh,
        Unary::Atanh,
    ] {
        let got = x.unary(op).unwrap().to_f64_vec().unwrap();
        assert!(
            got[0] == 0.0 && got[0].is_sign_negative(),
            "{}(-0) = {}",
            op.name(),
            got[0]
        );
        assert!(
            got[1] == 0.0 && got[1].is_sign_positive(),
            "{}(+0) = {}",
            op.name(),
            got[1]
        );
        assert!(got[4].is_nan(), "{}(nan) = {}", op.name(), got[4]);
    }
    for op in [Unary::Sin, Unary::Cos, Unary::Tan] {
        let got = x.unary(op).unwrap().to_f64_vec().unwrap();
        assert!(
            got[2].is_nan() && got[3].is_nan(),
            "{}(±inf) = {got:?}",
            op.name()
        );
    }
    // acosh is NaN below 1, however far (the log form gave -inf for -6.9e18).
    let below = upload(
        &dev,
        DType::Float32,
        &[-6.927e18, -1.0, 0.999, f64::NEG_INFINITY],
        &[4],
    );
    let got = below.unary(Unary::Acosh).unwrap().to_f64_vec().unwrap();
    assert!(got.iter().all(|v| v.is_nan()), "acosh below 1: {got:?}");
    let cos = x.unary(Unary::Cos).unwrap().to_f64_vec().unwrap();
    assert_eq!(cos[..2], [1.0, 1.0]);
}

#[test]
fn float_remainder_and_floor_division_of_large_quotients() {
    let dev = dev_or_skip!();
    // Quotients up to 2^30: the remainder is exact (an fmod in integers; a - b * trunc(a / b)
    // in f32 was off from about 2^10 on), the quotient NumPy's divmod's.
    let a = values(DType::Float32, 400, 21, -1e6, 1e6);
    let b: Vec<f64> = values(DType::Float32, 400, 22, -1.0, 1.0)
        .iter()
        .enumerate()
        .map(|(i, v)| fit(DType::Float32, v * 2f64.powi((i % 24) as i32 - 12)))
        .collect();
    let mut a = a;
    a[..4].copy_from_slice(&[129932.0, -129932.0, 7.0, -0.0]);
    let mut b = b;
    b[..4].copy_from_slice(&[
        fit(DType::Float32, 1.2148438),
        1.2148438f32 as f64,
        -2.0,
        3.0,
    ]);
    let xa = upload(&dev, DType::Float32, &a, &[400]);
    let xb = upload(&dev, DType::Float32, &b, &[400]);
    let rem = xa
        .binary(Binary::Remainder, &xb)
        .unwrap()
        .to_f64_vec()
        .unwrap();
    let quo = xa
        .binary(Binary::FloorDivide, &xb)
        .unwrap()
        .to_f64_vec()
        .unwrap();
    for i in 0..400 {
        if b[i] == 0.0 {
            continue;
        }
        let m = a[i] % b[i]; // exact in f64 for f32 operands
        let r = if m != 0.0 && ((m < 0.0) != (b[i] < 0.0)) {
            m + b[i]
        } else if m == 0.0 {
            0.0f64.copysign(b[i])
        } else {
            m
        };
        let want = fit(DType::Float32, r);
        assert!(
            rem[i] == want && rem[i].is_sign_negative() == want.is_sign_negative(),
            "remainder({}, {}) = {}, want {want}",
            a[i],
            b[i],
            rem[i]
        );
        let q = ((a[i] - m) / b[i]).round() - if r != m { 1.0 } else { 0.0 };
        let q = if m == 0.0 { (a[i] / b[i]).round() } else { q };
        assert!(
            (quo[i] - q).abs() <= 1e-6 * q.abs(),
            "floor_divide({}, {}) = {}, want {q}",
            a[i],
            b[i],
            quo[i]
        );
    }
    assert_eq!(rem[0], fit(DType::Float32, 0.81640625));
}

#[test]
fn nextafter_steps_one_float32_on_the_bits() {
    let dev = dev_or_skip!();
    let tiny = f32::from_bits(1) as f64; // the smallest subnormal
    let cases: [(f64, f64, f64); 9] = [
        (1.0, 2.0, 1.0 + f32::EPSILON as f64),
        (1.0, 0.0, 1.0 - f32::EPSILON as f64 / 2.0),
        (0.0, 1.0, tiny),
        (-0.0, -1.0, -tiny),
        (tiny, 0.0, 0.0),
        (-0.0, 0.0, 0.0),
        (0.0, -0.0, -0.0),
        (f32::MAX as f64, f64::INFINITY, f64::INFINITY),
        (f64::NAN, 1.0, f64::NAN),
    ];
    let a: Vec<f64> = cases.iter().map(|c| c.0).collect();
    let b: Vec<f64> = cases.iter().map(|c| c.1).collect();
    let xa = upload(&dev, DType::Float32, &a, &[cases.len()]);
    let xb = upload(&dev, DType::Float32, &b, &[cases.len()]);
    let got = xa
        .binary(Binary::Nextafter, &xb)
        .unwrap()
        .to_f64_vec()
        .unwrap();
    for ((x, y, want), g) in cases.iter().zip(&got) {
        let same = (g.is_nan() && want.is_nan())
            || (g == want && g.is_sign_negative() == want.is_sign_negative());
        assert!(same, "nextafter({x:e}, {y:e}) = {g:e}, want {want:e}");
    }
}

#[test]
fn ten_operations_are_one_dispatch_and_equal_the_unfused_result() {
    let Some(dev) = common::own_device(None) else {
        return;
    };
    let vals = values(DType::Float32, 1000, 3, -2.0, 2.0);
    let x = upload(&dev, DType::Float32, &vals, &[10, 100]);
    let y = upload(
        &dev,
        DType::Float32,
        &values(DType::Float32, 100, 4, -2.0, 2.0),
        &[100],
    );
    let chain = |eval_each: bool| -> Vec<f64> {
        let step = |a: Array| -> Array {
            if eval_each {
                a.eval().unwrap();
            }
            a
        };
        let mut a = step(x.mul(&y).unwrap());
        a = step(a.add_scalar(1.0).unwrap());
        a = step(a.tanh().unwrap());
        a = step(a.mul(&x).unwrap());
        a = step(a.sub(&y).unwrap());
        a = step(a.exp().unwrap());
        a = step(a.sqrt().unwrap());
        a = step(a.maximum_scalar(0.5).unwrap());
        a = step(a.div_scalar(3.0).unwrap());
        a = step(a.log1p().unwrap());
        a.to_f64_vec().unwrap()
    };
    let unfused = chain(true);
    dev.reset_profile();
    dev.set_profiling(true);
    let pipelines = dev.cached_pipelines();
    let fused = chain(false);
    dev.set_profiling(false);
    let p = dev.profile();
    let calls: u64 = p.kernels.iter().map(|k| k.calls).sum::<u64>() + p.untimed;
    assert_eq!(calls, 1, "{}", p.table(usize::MAX));
    assert_eq!(
        dev.cached_pipelines(),
        pipelines + 1,
        "the fused chain compiles one kernel"
    );
    assert_close(
        "fused vs unfused",
        DType::Float32,
        &fused,
        &unfused,
        3e-6,
        1e-7,
    );
    // The same expression over another shape of the same rank, with other scalars, reuses
    // the kernel (extents, strides and scalars travel in its metadata).
    let x2 = upload(
        &dev,
        DType::Float32,
        &values(DType::Float32, 21, 5, -1.0, 1.0),
        &[3, 7],
    );
    let y2 = upload(
        &dev,
        DType::Float32,
        &values(DType::Float32, 7, 6, -1.0, 1.0),
        &[7],
    );
    let before = dev.cached_pipelines();
    let z = x2
        .mul(&y2)
        .unwrap()
        .add_scalar(2.0)
        .unwrap()
        .tanh()
        .unwrap()
        .mul(&x2)
        .unwrap()
        .sub(&y2)
        .unwrap()
        .exp()
        .unwrap()
        .sqrt()
        .unwrap()
        .maximum_scalar(0.25)
        .unwrap()
        .div_scalar(7.0)
        .unwrap()
        .log1p()
        .unwrap();
    z.eval().unwrap();
    assert_eq!(
        dev.cached_pipelines(),
        before,
        "no new kernel for a new shape and new scalars"
    );
}
