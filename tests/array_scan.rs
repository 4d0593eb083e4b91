//! `cumulative_sum` and `cumulative_prod` against host running sums: every axis of a 3-D
//! array, a fused expression over a transposed view, `include_initial`, integer dtypes
//! accumulating in int32, and a long float line (compensated).

mod common;

use common::arrays::{assert_close, fit, upload, values};
use suanli::array::{Array, DType};

fn host_scan(
    vals: &[f64],
    shape: &[usize],
    axis: usize,
    initial: bool,
    product: bool,
    acc: DType,
) -> Vec<f64> {
    let mut out_shape = shape.to_vec();
    out_shape[axis] += initial as usize;
    let n: usize = out_shape.iter().product();
    let mut out = vec![0.0; n];
    let strides = |s: &[usize]| {
        let mut st = vec![1usize; s.len()];
        for d in (0..s.len().saturating_sub(1)).rev() {
            st[d] = st[d + 1] * s[d + 1];
        }
        st
    };
    let (si, so) = (strides(shape), strides(&out_shape));
    let lines: usize = shape
        .iter()
        .enumerate()
        .filter(|(d, _)| *d != axis)
        .map(|(_, &e)| e)
        .product();
    for line in 0..lines {
        let mut rem = line;
        let mut base_i = 0;
        let mut base_o = 0;
        for d in (0..shape.len()).rev() {
            if d == axis {
                continue;
            }
            let c = rem % shape[d];
            rem /= shape[d];
            base_i += c * si[d];
            base_o += c * so[d];
        }
        let mut a = if product { 1.0 } else { 0.0 };
        if initial {
            out[base_o] = a;
        }
        for q in 0..shape[axis] {
            let v = vals[base_i + q * si[axis]];
            a = fit(acc, if product { a * v } else { a + v });
            out[base_o + (q + initial as usize) * so[axis]] = a;
        }
    }
    out
}

#[test]
fn every_axis_dtype_and_initial() {
    let dev = dev_or_skip!();
    let shape = [3usize, 4, 5];
    for d in [DType::Float32, DType::Int8, DType::UInt16, DType::Bool] {
        let (lo, hi) = if d == DType::Bool {
            (0.0, 1.0)
        } else {
            (-3.0f64.max(d.range().0), 3.0)
        };
        let vals = values(d, 60, 4, lo, hi);
        let x = upload(&dev, d, &vals, &shape);
        let acc = match d {
            DType::Float32 => DType::Float32,
            DType::UInt16 => DType::UInt32,
            _ => DType::Int32,
        };
        for axis in 0..3 {
            for initial in [false, true] {
                for product in [false, true] {
                    let y = if product {
                        x.cumulative_prod(axis as isize, initial)
                    } else {
                        x.cumulative_sum(axis as isize - 3, initial)
                    }
                    .unwrap();
                    assert_eq!(y.dtype(), acc);
                    let want = host_scan(&vals, &shape, axis, initial, product, acc);
                    assert_close(
                        &format!("{d} axis {axis} initial {initial} product {product}"),
                        acc,
                        &y.to_f64_vec().unwrap(),
                        &want,
                        1e-6,
                        1e-6,
                    );
                }
            }
        }
    }
}

#[test]
fn fused_views_long_lines_and_errors() {
    let dev = dev_or_skip!();
    let vals = values(DType::Float32, 35, 2, -1.0, 1.0);
    let x = upload(&dev, DType::Float32, &vals, &[5, 7]);
    // cumsum over axis 0 of (xᵀ · 2), the expression evaluated in the scan's loop.
    let e = x.matrix_transpose().unwrap().mul_scalar(2.0).unwrap();
    let got = e.cumulative_sum(1, false).unwrap().to_f64_vec().unwrap();
    let t: Vec<f64> = (0..35).map(|i| vals[(i % 5) * 7 + i / 5] * 2.0).collect();
    let want = host_scan(&t, &[7, 5], 1, false, false, DType::Float32);
    assert_close("fused transposed", DType::Float32, &got, &want, 1e-6, 1e-6);
    // One long line: the running sum of 1e5 values stays near the exact one.
    let n = 100_000;
    let ones = Array::ones(&dev, &[n], DType::Float32)
        .unwrap()
        .mul_scalar(0.1)
        .unwrap();
    let c = ones.cumulative_sum(0, false).unwrap().to_f64_vec().unwrap();
    let exact = 0.1f32 as f64 * n as f64;
    assert!((c[n - 1] - exact).abs() < 1e-3, "{} vs {exact}", c[n - 1]);
    assert!(Array::scalar(&dev, 1.0, DType::Float32)
        .cumulative_sum(0, false)
        .is_err());
    let empty = Array::zeros(&dev, &[2, 0], DType::Int32).unwrap();
    assert_eq!(
        empty.cumulative_sum(1, true).unwrap().to_f64_vec().unwrap(),
        vec![0.0, 0.0]
    );
}
