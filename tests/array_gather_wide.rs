//! Gathers and scatters of the two-word dtypes (complex64, float64, int64: every dtype whose
//! `words()` is 2) against host references: `take` on every axis with negative positions and
//! on a transposed view, `take_along_axis` with broadcast indices, integer-array indexing with
//! broadcast index arrays, boolean masks, `x[idx] = v` and `x[mask] = v`, empty results,
//! into poisoned outputs. Each element carries its own position in both words (float64:
//! k + 1/3, all 53 mantissa bits; complex64: (k + 1/4, -k - 1/2); int64: k·2^32 + k + 7), so a
//! half moved wrong or
//! a word read from the neighbour shows.

mod common;

use suanli::array::{Array, DType, Index, Indexer};
use suanli::{Device, Error};

const SHAPE: [usize; 3] = [3, 4, 5];

/// The device for `d` (None where float64 is not computed here: common::float64 checks the
/// refusal).
fn device_for(d: DType) -> Option<Device> {
    if d == DType::Float64 {
        common::float64::f64_device()
    } else if d == DType::Int64 {
        common::int64::i64_device()
    } else {
        common::device()
    }
}

/// An array of `shape` whose element at flat position k holds k's pattern (plus `base`).
fn ids(dev: &Device, d: DType, shape: &[usize], base: usize) -> Array {
    let n: usize = shape.iter().product();
    if d == DType::Float64 {
        let v: Vec<f64> = (0..n).map(|k| (k + base) as f64 + 1.0 / 3.0).collect();
        Array::from_f64(dev, &v, shape, d).unwrap()
    } else if d == DType::Int64 {
        // Exact in f64 (under 2^53): the high word k, the low word k + 7.
        let v: Vec<f64> = (0..n)
            .map(|k| ((k + base) as f64) * 4294967296.0 + (k + base + 7) as f64)
            .collect();
        Array::from_f64(dev, &v, shape, d).unwrap()
    } else {
        let v: Vec<(f32, f32)> = (0..n)
            .map(|k| ((k + base) as f32 + 0.25, -((k + base) as f32) - 0.5))
            .collect();
        Array::from_complex(dev, &v, shape).unwrap()
    }
}

/// The positions an array of patterns holds, checking both words of each element.
fn read(a: &Array) -> Vec<usize> {
    if a.dtype() == DType::Float64 {
        a.to_f64_vec()
            .unwrap()
            .into_iter()
            .map(|v| {
                let k = (v - 1.0 / 3.0).round();
                assert_eq!(v, k + 1.0 / 3.0, "float64 {v} is no pattern");
                k as usize
            })
            .collect()
    } else if a.dtype() == DType::Int64 {
        a.to_f64_vec()
            .unwrap()
            .into_iter()
            .map(|v| {
                let (hi, lo) = ((v as u64) >> 32, (v as u64) & 0xffff_ffff);
                assert_eq!(lo, hi + 7, "int64 {v} is no pattern");
                hi as usize
            })
            .collect()
    } else {
        a.to_complex_vec()
            .unwrap()
            .into_iter()
            .map(|(re, im)| {
                let k = re - 0.25;
                assert_eq!(im, -k - 0.5, "complex {re}{im:+}j is no pattern");
                k as usize
            })
            .collect()
    }
}

/// A freed buffer of NaN words, so an output the kernel fails to write shows.
fn poison(dev: &Device, words: usize) {
    drop(
        Array::full(dev, &[words.max(1)], f64::NAN, DType::Float32)
            .unwrap()
            .eval(),
    );
}

fn int_array(dev: &Device, v: &[i64], shape: &[usize]) -> Array {
    let f: Vec<f64> = v.iter().map(|&x| x as f64).collect();
    Array::from_f64(dev, &f, shape, DType::Int32).unwrap()
}

fn flat(i: usize, j: usize, l: usize) -> usize {
    i * 20 + j * 5 + l
}

fn wrap(q: i64, n: usize) -> usize {
    if q < 0 {
        (q + n as i64) as usize
    } else {
        q as usize
    }
}

fn take_and_take_along_axis(d: DType) {
    let Some(dev) = device_for(d) else { return };
    let x = ids(&dev, d, &SHAPE, 0);
    let q = [0i64, -1, 2, 1, 1, -3];
    let idx = int_array(&dev, &q, &[2, 3]);
    for axis in 0..3usize {
        poison(&dev, 400);
        let y = x.take(&idx, axis as isize).unwrap();
        // The result's axes: (q, j, l), (i, q, l) and (i, j, q).
        let mut want = Vec::new();
        match axis {
            0 => {
                for &p in &q {
                    (0..4).for_each(|j| (0..5).for_each(|l| want.push(flat(wrap(p, 3), j, l))));
                }
            }
            1 => {
                for i in 0..3 {
                    for &p in &q {
                        (0..5).for_each(|l| want.push(flat(i, wrap(p, 4), l)));
                    }
                }
            }
            _ => {
                for i in 0..3 {
                    for j in 0..4 {
                        q.iter().for_each(|&p| want.push(flat(i, j, wrap(p, 5))));
                    }
                }
            }
        }
        assert_eq!(read(&y), want, "{d:?} take axis {axis}");
    }
    // On a transposed view (shape (5, 4, 3)): element (l, j, i) is flat(i, j, l).
    let t = x.permute_dims(&[2, 1, 0]).unwrap();
    let got = read(&t.take(&idx, 0).unwrap());
    let mut want = Vec::new();
    for &p in &q {
        for j in 0..4 {
            (0..3).for_each(|i| want.push(flat(i, j, wrap(p, 5))));
        }
    }
    assert_eq!(got, want, "{d:?} take of a transpose");
    // Empty indices, and a position out of range as a typed error.
    let e = x.take(&int_array(&dev, &[], &[0]), 1).unwrap();
    assert_eq!(e.shape(), &[3, 0, 5]);
    assert!(read(&e).is_empty());
    assert!(matches!(
        x.take(&int_array(&dev, &[4], &[1]), 1),
        Err(Error::IndexOutOfBounds { .. })
    ));
    // take_along_axis on axis 1 with (1, 2, 5) indices broadcast over axis 0.
    let qa: Vec<i64> = vec![3, -4, 1, -1, 0, 0, 2, -2, 3, -3];
    let ia = int_array(&dev, &qa, &[1, 2, 5]);
    poison(&dev, 100);
    let y = x.take_along_axis(&ia, 1).unwrap();
    assert_eq!(y.shape(), &[3, 2, 5]);
    let mut want = Vec::new();
    for i in 0..3 {
        for r in 0..2 {
            (0..5).for_each(|l| want.push(flat(i, wrap(qa[r * 5 + l], 4), l)));
        }
    }
    assert_eq!(read(&y), want, "{d:?} take_along_axis");
}

fn integer_and_mask_indexing(d: DType) {
    let Some(dev) = device_for(d) else { return };
    let x = ids(&dev, d, &SHAPE, 0);
    // x[a, :, b] with a (2, 1) and b (3,) broadcast to (2, 3): result (2, 3, 4).
    let (a, b) = ([2i64, -3], [-1i64, 0, 3]);
    let ia = int_array(&dev, &a, &[2, 1]);
    let ib = int_array(&dev, &b, &[3]);
    poison(&dev, 100);
    let y = x
        .getitem(&[
            Indexer::Array(ia.clone()),
            Indexer::Basic(Index::full()),
            Indexer::Array(ib.clone()),
        ])
        .unwrap();
    assert_eq!(y.shape(), &[2, 3, 4]);
    let mut want = Vec::new();
    for &p in &a {
        for &r in &b {
            (0..4).for_each(|j| want.push(flat(wrap(p, 3), j, wrap(r, 5))));
        }
    }
    assert_eq!(read(&y), want, "{d:?} x[a, :, b]");
    // A mask over the first two axes of a reversed view x[::-1].
    let rev = x
        .index(&[Index::Slice {
            start: None,
            stop: None,
            step: Some(-1),
        }])
        .unwrap();
    let m: Vec<f64> = (0..12).map(|k| ((k * 7) % 3 == 0) as u8 as f64).collect();
    let mask = Array::from_f64(&dev, &m, &[3, 4], DType::Bool).unwrap();
    let y = rev.getitem(&[Indexer::Array(mask.clone())]).unwrap();
    let mut want = Vec::new();
    for k in (0..12).filter(|&k| m[k] != 0.0) {
        let (i, j) = (2 - k / 4, k % 4);
        (0..5).for_each(|l| want.push(flat(i, j, l)));
    }
    assert_eq!(y.shape(), &[want.len() / 5, 5]);
    assert_eq!(read(&y), want, "{d:?} x[::-1][mask]");
    // An all-false mask: empty.
    let none = Array::from_f64(&dev, &[0.0; 12], &[3, 4], DType::Bool).unwrap();
    let e = x.getitem(&[Indexer::Array(none)]).unwrap();
    assert_eq!(e.shape(), &[0, 5]);
    assert!(read(&e).is_empty());

    // x[a, :, b] = v with v (3, 4) broadcast over a's rows: positions hold 100 + v's.
    let z = ids(&dev, d, &SHAPE, 0).copy().unwrap();
    let v = ids(&dev, d, &[3, 4], 100);
    z.setitem(
        &[
            Indexer::Array(ia),
            Indexer::Basic(Index::full()),
            Indexer::Array(ib),
        ],
        &v,
    )
    .unwrap();
    let mut want: Vec<usize> = (0..60).collect();
    for &p in &a {
        for (r, &c) in b.iter().enumerate() {
            (0..4).for_each(|j| want[flat(wrap(p, 3), j, wrap(c, 5))] = 100 + r * 4 + j);
        }
    }
    assert_eq!(read(&z), want, "{d:?} x[a, :, b] = v");
    // x[mask] = v with a (5,) row broadcast to every selected row.
    let z = ids(&dev, d, &SHAPE, 0).copy().unwrap();
    z.setitem(&[Indexer::Array(mask)], &ids(&dev, d, &[5], 200))
        .unwrap();
    let mut want: Vec<usize> = (0..60).collect();
    for k in (0..12).filter(|&k| m[k] != 0.0) {
        (0..5).for_each(|l| want[flat(k / 4, k % 4, l)] = 200 + l);
    }
    assert_eq!(read(&z), want, "{d:?} x[mask] = v");
}

#[test]
fn complex64_take_and_take_along_axis() {
    take_and_take_along_axis(DType::Complex64);
}

#[test]
fn float64_take_and_take_along_axis() {
    take_and_take_along_axis(DType::Float64);
}

#[test]
fn complex64_integer_and_mask_indexing() {
    integer_and_mask_indexing(DType::Complex64);
}

#[test]
fn float64_integer_and_mask_indexing() {
    integer_and_mask_indexing(DType::Float64);
}

#[test]
fn int64_take_and_indexing() {
    take_and_take_along_axis(DType::Int64);
    integer_and_mask_indexing(DType::Int64);
}
