//! float64 `sort` and `argsort` (two-word keys: two stable 32-bit passes, low word then high)
//! against Rust's stable sort in NumPy's order (NaN last, -0.0 equal to 0.0): ragged row
//! lengths, values differing only in the low word or only in the high word, many ties
//! (stability, also descending), specials, a transposed view sorted along each axis, empty
//! shapes.

mod common;

use std::cmp::Ordering;

use common::arrays::{numpy_order, stable_argsort_rows};
use suanli::array::{Array, DType};

/// Seeded values: full-mantissa magnitudes of both signs, neighbours one ulp apart (only
/// the low word differs), powers of two far apart (only the high word differs), ties, specials.
fn values(n: usize, seed: u64) -> Vec<f64> {
    let mut s = seed.wrapping_mul(0x9E3779B97F4A7C15) | 1;
    let mut u = move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        (s >> 11) as f64 / (1u64 << 53) as f64
    };
    let specials = [
        f64::NAN,
        0.0,
        -0.0,
        f64::INFINITY,
        f64::NEG_INFINITY,
        -f64::NAN,
    ];
    (0..n)
        .map(|k| match k % 7 {
            0 => (u() - 0.5) * 10f64.powf(u() * 40.0 - 20.0),
            1 => f64::from_bits(1.0f64.to_bits() + (u() * 8.0) as u64),
            2 => -f64::from_bits(3.0f64.to_bits() + (u() * 8.0) as u64),
            3 => 2f64.powi((u() * 200.0) as i32 - 100),
            4 => ((u() * 4.0).floor() - 2.0) / 3.0,
            5 => specials[(u() * 6.0) as usize % 6],
            _ => (u() - 0.5) * 1e300,
        })
        .collect()
}

fn check(x: &Array, vals: &[f64], len: usize, descending: bool, what: &str) {
    let want = stable_argsort_rows(vals, len, descending);
    let got: Vec<usize> = x
        .argsort(-1, descending)
        .unwrap()
        .to_f64_vec()
        .unwrap()
        .iter()
        .map(|&v| v as usize)
        .collect();
    assert_eq!(got, want, "argsort {what} descending {descending}");
    let sorted = x.sort(-1, descending).unwrap();
    assert_eq!(sorted.dtype(), DType::Float64);
    let sorted = sorted.to_f64_vec().unwrap();
    for (i, (&s, &p)) in sorted.iter().zip(&want).enumerate() {
        let w = vals[(i / len) * len + p];
        assert!(
            s.to_bits() == w.to_bits() || (s.is_nan() && w.is_nan()),
            "sort {what}: element {i}: {s:e} vs {w:e}"
        );
    }
}

#[test]
fn rows_of_every_length_with_ties_and_specials() {
    let Some(dev) = common::float64::f64_device() else {
        return;
    };
    for len in [1usize, 2, 5, 17, 64, 1000, 3001] {
        let rows = if len > 1000 { 2 } else { 3 };
        let v = values(rows * len, len as u64);
        let x = Array::from_f64(&dev, &v, &[rows, len], DType::Float64).unwrap();
        for descending in [false, true] {
            check(&x, &v, len, descending, &format!("{rows}x{len}"));
        }
    }
    // A transposed view: rows of the (9, 6) transpose of a (6, 9) array.
    let v = values(54, 5);
    let a = Array::from_f64(&dev, &v, &[6, 9], DType::Float64).unwrap();
    let t = a.matrix_transpose().unwrap();
    let tv: Vec<f64> = (0..54).map(|k| v[(k % 6) * 9 + k / 6]).collect();
    for descending in [false, true] {
        check(&t, &tv, 6, descending, "transposed");
    }
    // Along axis 0 of the original (the same as the transpose's last axis, transposed back).
    let p = a.argsort(0, false).unwrap();
    assert_eq!(p.shape(), &[6, 9]);
    let want = stable_argsort_rows(&tv, 6, false);
    let got = p.to_f64_vec().unwrap();
    for c in 0..9 {
        for r in 0..6 {
            assert_eq!(
                got[r * 9 + c] as usize,
                want[c * 6 + r],
                "axis 0 ({r}, {c})"
            );
        }
    }
    // Empty shapes.
    for shape in [[0usize, 5], [5, 0]] {
        let e = Array::from_f64(&dev, &[], &shape, DType::Float64).unwrap();
        assert_eq!(e.sort(1, false).unwrap().shape(), &shape);
        assert_eq!(e.argsort(1, true).unwrap().shape(), &shape);
    }
}

/// searchsorted on float64 (both words compared, high first) against a host binary search
/// in the same order, left and right, with NaN, ±0, ties and neighbours one ulp apart.
#[test]
fn searchsorted_left_and_right() {
    let Some(dev) = common::float64::f64_device() else {
        return;
    };
    let mut a = values(300, 9);
    a.sort_by(|&p, &q| numpy_order(p, q));
    let mut v = values(200, 10);
    v.extend_from_slice(&a[..50]);
    let xa = Array::from_f64(&dev, &a, &[a.len()], DType::Float64).unwrap();
    let xv = Array::from_f64(&dev, &v, &[v.len()], DType::Float64).unwrap();
    for right in [false, true] {
        let got = xa.searchsorted(&xv, right).unwrap().to_f64_vec().unwrap();
        let want: Vec<f64> = v
            .iter()
            .map(|&q| {
                a.partition_point(|&p| match numpy_order(p, q) {
                    Ordering::Less => true,
                    Ordering::Equal => right,
                    Ordering::Greater => false,
                }) as f64
            })
            .collect();
        assert_eq!(got, want, "searchsorted right={right}");
    }
}
