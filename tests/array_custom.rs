//! The user's own WGSL kernels over arrays (CuPy's `ElementwiseKernel` and
//! `ReductionKernel`) against f64 references: broadcasting, views and lazy inputs read in
//! place (fused: one dispatch), several outputs, placeholders, every axis set of a reduction
//! including the chunked path and empty reductions, and typed errors for bad declarations,
//! bad calls and WGSL that does not compile.

mod common;

use common::arrays::{assert_close, upload, values};
use suanli::array::custom::{ElementwiseKernel, ReductionKernel};
use suanli::array::{Array, DType, Index};
use suanli::{Device, Error};

fn device() -> Device {
    Device::open("auto").unwrap()
}

#[test]
fn elementwise_kernel_broadcasts_reads_views_and_fuses_lazy_inputs() {
    let dev = device();
    let k = ElementwiseKernel::new(
        "T x, T y, float32 s",
        "T z, int32 w, bool big",
        "z = (x - y) * (x - y) * s; w = i32(i) - i32(n); big = z > 1.0",
        "squared_diff",
    )
    .unwrap();
    let xv = values(DType::Float32, 5 * 7, 1, -2.0, 2.0);
    let yv = values(DType::Float32, 9 * 7, 2, -2.0, 2.0);
    let x = upload(&dev, DType::Float32, &xv, &[5, 7]);
    let y_full = upload(&dev, DType::Float32, &yv, &[9, 7]);
    // A strided view (every other row, rows 0, 2, …, 8), broadcast against a (1, 7) row.
    let y = y_full
        .index(&[Index::Slice {
            start: None,
            stop: None,
            step: Some(2),
        }])
        .unwrap();
    let row = x.index(&[Index::At(1)]).unwrap().expand_dims(0).unwrap();
    // A lazy input: computed inside the kernel.
    let lazy = row.mul_scalar(-1.0).unwrap();
    let s = Array::scalar(&dev, 0.5, DType::Float32);
    dev.reset_profile();
    dev.set_profiling(true);
    let out = k.call(&[y.clone(), lazy, s]).unwrap();
    dev.set_profiling(false);
    let p = dev.profile();
    let calls: u64 = p.kernels.iter().map(|k| k.calls).sum::<u64>() + p.untimed;
    assert_eq!(calls, 1, "one dispatch: {}", p.table(usize::MAX));
    assert_eq!(out.len(), 3);
    assert_eq!(out[0].shape(), &[5, 7]);
    assert_eq!(out[1].dtype(), DType::Int32);
    assert_eq!(out[2].dtype(), DType::Bool);
    let (mut z, mut w, mut big) = (Vec::new(), Vec::new(), Vec::new());
    for r in 0..5 {
        for c in 0..7 {
            let a = yv[(2 * r) * 7 + c];
            let b = -xv[7 + c];
            let v = (a - b) * (a - b) * 0.5;
            z.push(v);
            w.push((r * 7 + c) as f64 - 35.0);
            big.push((v > 1.0) as u8 as f64);
        }
    }
    let got = out[0].to_f64_vec().unwrap();
    assert_close("z", DType::Float32, &got, &z, 1e-6, 1e-6);
    assert_eq!(out[1].to_f64_vec().unwrap(), w);
    // Compare the flag with the kernel's own z, so a value on the threshold cannot flake.
    let flags: Vec<f64> = got.iter().map(|&v| (v > 1.0) as u8 as f64).collect();
    assert_eq!(out[2].to_f64_vec().unwrap(), flags);
    assert_eq!(flags.iter().sum::<f64>(), big.iter().sum::<f64>());
}

#[test]
fn elementwise_kernel_integer_outputs_wrap_and_bool_inputs_are_booleans() {
    let dev = device();
    let k = ElementwiseKernel::new(
        "int8 x, bool m",
        "int8 y",
        "y = select(x, x * 3i, m);",
        "triple_masked",
    )
    .unwrap();
    let xv = values(DType::Int8, 40, 3, -128.0, 127.0);
    let mv: Vec<f64> = (0..40).map(|i| (i % 3 == 0) as u8 as f64).collect();
    let out = &k
        .call(&[
            upload(&dev, DType::Int8, &xv, &[40]),
            upload(&dev, DType::Bool, &mv, &[40]),
        ])
        .unwrap()[0];
    let want: Vec<f64> = xv
        .iter()
        .zip(&mv)
        .map(|(&x, &m)| {
            let v = if m != 0.0 { x * 3.0 } else { x };
            (v as i64 as i8) as f64
        })
        .collect();
    assert_eq!(out.dtype(), DType::Int8);
    assert_eq!(out.to_f64_vec().unwrap(), want);
    // A uint8 input converts exactly to int16; a float32 one would not.
    let k16 = ElementwiseKernel::new("int16 x", "int16 y", "y = -x", "neg16").unwrap();
    let u = upload(&dev, DType::UInt8, &[0.0, 7.0, 255.0], &[3]);
    let y = &k16.call(&[u]).unwrap()[0];
    assert_eq!(y.to_f64_vec().unwrap(), vec![0.0, -7.0, -255.0]);
    let f = upload(&dev, DType::Float32, &[1.5], &[1]);
    assert!(matches!(k16.call(&[f]), Err(Error::DType { .. })));
}

/// The reference of a sum of squares over `axes` of a row-major (3, 5, 70) array.
fn sumsq_reference(vals: &[f64], shape: &[usize], axes: &[usize]) -> Vec<f64> {
    let kept: Vec<usize> = (0..shape.len()).filter(|a| !axes.contains(a)).collect();
    let n_out: usize = kept.iter().map(|&a| shape[a]).product();
    let mut out = vec![0.0; n_out];
    for (i, &v) in vals.iter().enumerate() {
        let mut rem = i;
        let mut c = vec![0; shape.len()];
        for a in (0..shape.len()).rev() {
            c[a] = rem % shape[a];
            rem /= shape[a];
        }
        let o = kept.iter().fold(0, |o, &a| o * shape[a] + c[a]);
        out[o] += v * v;
    }
    out.iter().map(|s| s.sqrt()).collect()
}

#[test]
fn reduction_kernel_matches_the_reference_over_every_axis_set() {
    let dev = device();
    let k =
        ReductionKernel::new("T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0", "l2norm").unwrap();
    let shape = [3usize, 5, 70];
    let vals = values(DType::Float32, 3 * 5 * 70, 7, -3.0, 3.0);
    let x = upload(&dev, DType::Float32, &vals, &shape);
    let sets: [&[usize]; 7] = [&[0], &[1], &[2], &[0, 1], &[0, 2], &[1, 2], &[0, 1, 2]];
    for axes in sets {
        let ax: Vec<isize> = axes.iter().map(|&a| a as isize).collect();
        for keep in [false, true] {
            let got = k.call(std::slice::from_ref(&x), Some(&ax), keep).unwrap();
            let want_shape: Vec<usize> = (0..3)
                .filter_map(|a| match (axes.contains(&a), keep) {
                    (false, _) => Some(shape[a]),
                    (true, true) => Some(1),
                    _ => None,
                })
                .collect();
            assert_eq!(got.shape(), &want_shape[..], "{axes:?}");
            let want = sumsq_reference(&vals, &shape, axes);
            assert_close(
                &format!("l2norm over {axes:?}"),
                DType::Float32,
                &got.to_f64_vec().unwrap(),
                &want,
                1e-5,
                1e-6,
            );
        }
    }
}

#[test]
fn reduction_kernel_chunks_long_rows_and_finishes_empty_ones_with_the_identity() {
    let dev = device();
    // A max with a post-map over 100,000 elements: the chunked path (two kernels).
    let k = ReductionKernel::new(
        "float32 x, float32 w",
        "float32 y",
        "x * w",
        "max(a, b)",
        "y = a + 1.0",
        "-3.0e38",
        "wmax",
    )
    .unwrap();
    let n = 100_000;
    let xv = values(DType::Float32, n, 11, -5.0, 5.0);
    let x = upload(&dev, DType::Float32, &xv, &[n]);
    let w = Array::scalar(&dev, 2.0, DType::Float32);
    let got = k.call(&[x, w], None, false).unwrap().to_f64_vec().unwrap();
    let want = xv.iter().map(|v| v * 2.0).fold(f64::MIN, f64::max) + 1.0;
    assert_eq!(got, vec![want as f32 as f64]);
    // Over an empty axis each output is the identity, finished.
    let e = Array::zeros(&dev, &[4, 0], DType::Float32).unwrap();
    let w = Array::scalar(&dev, 1.0, DType::Float32);
    let got = k.call(&[e, w], Some(&[1]), false).unwrap();
    assert_eq!(got.shape(), &[4]);
    assert_eq!(
        got.to_f64_vec().unwrap(),
        vec![(-3.0e38f32 + 1.0) as f64; 4]
    );
    // An integer count with a separate reduce type.
    let c = ReductionKernel::new(
        "T x",
        "int32 y",
        "u32(x > 0.0)",
        "a + b",
        "y = i32(a)",
        "0",
        "pos",
    )
    .unwrap()
    .with_reduce_type("uint32")
    .unwrap();
    let x = upload(&dev, DType::Float32, &xv, &[n]);
    let got = c.call(&[x], None, true).unwrap();
    assert_eq!(got.shape(), &[1]);
    let want = xv.iter().filter(|&&v| v > 0.0).count() as f64;
    assert_eq!(got.to_f64_vec().unwrap(), vec![want]);
}

#[test]
fn bad_declarations_calls_and_snippets_are_typed_errors() {
    let dev = device();
    for (ins, outs) in [
        ("float32", "float32 y"),
        ("float32 x, float32 x", "float32 y"),
        ("float32 i", "float32 y"),
        ("float99 x", "float32 y"),
        ("raw T x", "T y"),
        ("float32 x", ""),
        ("float32 x", "float32 x"),
        ("float32 x", "complex64 y"),
    ] {
        assert!(
            matches!(
                ElementwiseKernel::new(ins, outs, "y = x", "k"),
                Err(Error::InvalidArgument { .. })
            ),
            "{ins:?} -> {outs:?}"
        );
    }
    let x = upload(&dev, DType::Float32, &[1.0, 2.0], &[2]);
    let y = upload(&dev, DType::Float32, &[1.0, 2.0, 3.0], &[3]);
    let i = upload(&dev, DType::Int32, &[1.0, 2.0], &[2]);
    let k = ElementwiseKernel::new("T x, T y", "T z", "z = x + y", "add2").unwrap();
    assert!(matches!(
        k.call(std::slice::from_ref(&x)),
        Err(Error::InvalidArgument { .. })
    ));
    assert!(matches!(
        k.call(&[x.clone(), y]),
        Err(Error::ShapeMismatch { .. })
    ));
    // T is bound to float32 by x; an int32 y does not match it.
    assert!(matches!(k.call(&[x.clone(), i]), Err(Error::DType { .. })));
    let unbound = ElementwiseKernel::new("T x", "U z", "z = x", "unbound").unwrap();
    assert!(matches!(
        unbound.call(std::slice::from_ref(&x)),
        Err(Error::InvalidArgument { .. })
    ));
    let broken = ElementwiseKernel::new("T x", "T z", "z = x +* 2.0", "broken").unwrap();
    assert!(matches!(
        broken.call(std::slice::from_ref(&x)),
        Err(Error::Shader { .. })
    ));
    // More outputs than a kernel can bind.
    let outs: Vec<String> = (0..20).map(|k| format!("float32 y{k}")).collect();
    let wide = ElementwiseKernel::new("T x", &outs.join(", "), "y0 = x", "wide").unwrap();
    assert!(matches!(
        wide.call(std::slice::from_ref(&x)),
        Err(Error::InvalidArgument { .. })
    ));
    let r = ReductionKernel::new("T x", "T y", "x", "a + b", "y = a", "0", "s").unwrap();
    assert!(matches!(
        r.call(std::slice::from_ref(&x), Some(&[1]), false),
        Err(Error::IndexOutOfBounds { .. })
    ));
    assert!(matches!(
        ReductionKernel::new("T x", "T y, T z", "x", "a + b", "y = a", "0", "s"),
        Err(Error::InvalidArgument { .. })
    ));
}

#[test]
fn a_reduction_kernel_binds_at_most_what_the_device_allows() {
    let dev = device();
    // Storage bindings a kernel may use, less the reduction's two outputs and its metadata.
    let slots = (dev.info().limits.max_storage_buffers as usize).min(16);
    let most = slots - 3;
    let params = |k: usize| {
        (0..k)
            .map(|j| format!("float32 x{j}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let map = |k: usize| {
        (0..k)
            .map(|j| format!("x{j}"))
            .collect::<Vec<_>>()
            .join(" + ")
    };
    let inputs: Vec<Array> = (0..=most)
        .map(|j| upload(&dev, DType::Float32, &[j as f64, 1.0], &[2]))
        .collect();
    let fits = ReductionKernel::new(
        &params(most),
        "float32 y",
        &map(most),
        "a + b",
        "y = a",
        "0",
        "fits",
    )
    .unwrap();
    let got = fits
        .call(&inputs[..most], None, false)
        .unwrap()
        .to_f64_vec()
        .unwrap();
    let want: f64 = (0..most).map(|j| j as f64 + 1.0).sum();
    assert_eq!(got, vec![want]);
    let over = ReductionKernel::new(
        &params(most + 1),
        "float32 y",
        &map(most + 1),
        "a + b",
        "y = a",
        "0",
        "over",
    )
    .unwrap();
    assert!(matches!(
        over.call(&inputs, None, false),
        Err(Error::InvalidArgument { .. })
    ));
}

/// The float64 prelude (valid WGSL only where the adapter has f64) goes with a kernel that
/// computes in float64, not with one whose text happens to say "f64": a float32 kernel named
/// and commented so compiles on every backend (WGPU_BACKEND=gl has no f64).
#[test]
fn a_float32_kernel_mentioning_f64_needs_no_f64() {
    let dev = device();
    let k = ElementwiseKernel::new(
        "float32 x",
        "float32 z",
        "z = x * 2.0; // no f64 arithmetic here",
        "twice_not_f64",
    )
    .unwrap();
    let x = Array::from_f32(&dev, &[1.5, -2.0, 0.25], &[3]).unwrap();
    // A lazy input fused into the kernel, so the plan's body is generated too.
    let out = k.call(&[x.mul_scalar(1.0).unwrap()]).unwrap();
    assert_eq!(out[0].to_f64_vec().unwrap(), [3.0, -4.0, 0.5]);
}
