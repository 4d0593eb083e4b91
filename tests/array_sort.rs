//! `sort` and `argsort` against Rust's stable sort: ragged row lengths (padding), every axis
//! of a 3-D array, float specials (NaN last, -0.0 equal to 0.0), many ties (stability, also
//! descending), every key kind, and errors.

mod common;

use common::arrays::{numpy_order, stable_argsort_rows, upload, values};
use suanli::array::{Array, DType};

fn check(dev: &suanli::Device, d: DType, vals: &[f64], rows: usize, len: usize, descending: bool) {
    let x = upload(dev, d, vals, &[rows, len]);
    let want = stable_argsort_rows(vals, len, descending);
    let pos = x.argsort(1, descending).unwrap();
    assert_eq!(pos.dtype(), DType::Int32);
    let got: Vec<usize> = pos
        .to_f64_vec()
        .unwrap()
        .iter()
        .map(|&v| v as usize)
        .collect();
    assert_eq!(
        got, want,
        "argsort {d} {rows}x{len} descending {descending}"
    );
    let sorted = x.sort(1, descending).unwrap().to_f64_vec().unwrap();
    for (i, (&s, &p)) in sorted.iter().zip(&want).enumerate() {
        let w = vals[(i / len) * len + p];
        // Floats by their bits: -0.0 and 0.0 are equal keys, so each must land where its
        // original position puts it.
        let same = if d.is_float() {
            s.to_bits() == w.to_bits() || (s.is_nan() && w.is_nan())
        } else {
            s == w
        };
        assert!(same, "sort {d}: element {i}: {s} vs {w}");
    }
}

#[test]
fn rows_of_every_length_and_key_kind() {
    let dev = dev_or_skip!();
    for len in [1usize, 2, 5, 17, 64, 1000, 4097] {
        let rows = if len > 1000 { 2 } else { 3 };
        let mut f = values(DType::Float32, rows * len, len as u64, -100.0, 100.0);
        // Specials and ties: NaN, both zeros, infinities, repeated values.
        for (i, v) in [
            f64::NAN,
            0.0,
            -0.0,
            f64::INFINITY,
            f64::NEG_INFINITY,
            3.5,
            3.5,
            f64::NAN,
        ]
        .iter()
        .enumerate()
        {
            if i < f.len() {
                let n = f.len();
                f[i * 7 % n] = *v;
            }
        }
        for descending in [false, true] {
            check(&dev, DType::Float32, &f, rows, len, descending);
            // Many ties: values in 0..5.
            check(
                &dev,
                DType::Int8,
                &values(DType::Int8, rows * len, 3, -2.0, 2.0),
                rows,
                len,
                descending,
            );
        }
    }
    check(
        &dev,
        DType::UInt16,
        &values(DType::UInt16, 300, 9, 0.0, 65535.0),
        3,
        100,
        false,
    );
    check(
        &dev,
        DType::Int32,
        &values(DType::Int32, 300, 9, -2e9, 2e9),
        3,
        100,
        true,
    );
    check(
        &dev,
        DType::Bool,
        &values(DType::Bool, 40, 9, 0.0, 1.0),
        2,
        20,
        false,
    );
}

#[test]
fn every_axis_of_a_view() {
    let dev = dev_or_skip!();
    let shape = [4usize, 5, 6];
    let vals = values(DType::Float32, 120, 5, -1.0, 1.0);
    // A transposed view: sorting must read through its strides.
    let x = upload(&dev, DType::Float32, &vals, &shape)
        .permute_dims(&[2, 0, 1])
        .unwrap();
    let vshape = [6usize, 4, 5];
    let at = |c: [usize; 3]| vals[c[1] * 30 + c[2] * 6 + c[0]];
    for axis in 0..3 {
        let s = x.sort(axis as isize, false).unwrap();
        assert_eq!(s.shape(), &vshape);
        let got = s.to_f64_vec().unwrap();
        let p = x
            .argsort(axis as isize - 3, false)
            .unwrap()
            .to_f64_vec()
            .unwrap();
        for i in 0..6 {
            for j in 0..4 {
                for k in 0..5 {
                    // The line through (i, j, k) along `axis`.
                    let mut line: Vec<f64> = (0..vshape[axis])
                        .map(|t| {
                            let mut c = [i, j, k];
                            c[axis] = t;
                            at(c)
                        })
                        .collect();
                    line.sort_by(|a, b| numpy_order(*a, *b));
                    let c = [i, j, k];
                    let flat = i * 20 + j * 5 + k;
                    assert_eq!(got[flat], line[c[axis]], "axis {axis} at {c:?}");
                    let mut src = c;
                    src[axis] = p[flat] as usize;
                    assert_eq!(at(src), line[c[axis]], "argsort axis {axis} at {c:?}");
                }
            }
        }
    }
    assert!(Array::scalar(&dev, 1.0, DType::Float32)
        .sort(0, false)
        .is_err());
    assert!(x.sort(3, false).is_err());
    let empty = Array::zeros(&dev, &[3, 0], DType::Float32).unwrap();
    assert_eq!(empty.sort(1, false).unwrap().shape(), &[3, 0]);
}
