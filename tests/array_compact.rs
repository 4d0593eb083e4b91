//! Compaction and what is built on it, against host references: `nonzero` (every dtype,
//! ragged, empty and strided inputs, lines longer than the scan's chunk), boolean-mask and
//! integer-array indexing read and written (negative positions, several arrays broadcast,
//! adjacent or not, out of range and bad index types as typed errors), `unique_*` (NaNs
//! distinct) and the generator's `permutation`, `shuffle` and `choice`.

mod common;

use common::arrays::{upload, values};
use suanli::array::random::Generator;
use suanli::array::{Array, Binary, DType, Index, Indexer};
use suanli::Error;

fn host_nonzero(vals: &[f64], shape: &[usize]) -> Vec<Vec<f64>> {
    let mut out = vec![Vec::new(); shape.len()];
    for (i, &v) in vals.iter().enumerate() {
        if v != 0.0 {
            let mut r = i;
            for a in (0..shape.len()).rev() {
                out[a].push((r % shape[a]) as f64);
                r /= shape[a];
            }
        }
    }
    out
}

#[test]
fn nan_is_unequal_to_everything_and_true_in_logical_functions() {
    // Compaction's flags and unique's heads rest on these (lavapipe lowered `!=` to an
    // ordered comparison, so `NaN != 0` was false before the bits were tested).
    let dev = dev_or_skip!();
    let a = [f64::NAN, f64::NAN, 0.0, -0.0, 1.0, f64::NAN];
    let b = [0.0, f64::NAN, -0.0, 0.0, 1.0, 1.0];
    let x = upload(&dev, DType::Float32, &a, &[6]);
    let y = upload(&dev, DType::Float32, &b, &[6]);
    let f = |op: Binary| x.binary(op, &y).unwrap().to_f64_vec().unwrap();
    for (op, r) in [
        (
            Binary::NotEqual,
            (|p: f64, q: f64| p != q) as fn(f64, f64) -> bool,
        ),
        (Binary::Equal, |p, q| p == q),
        (Binary::LogicalAnd, |p, q| p != 0.0 && q != 0.0),
        (Binary::LogicalOr, |p, q| p != 0.0 || q != 0.0),
        (Binary::LogicalXor, |p, q| (p != 0.0) != (q != 0.0)),
    ] {
        let want: Vec<f64> = a
            .iter()
            .zip(&b)
            .map(|(&p, &q)| r(p, q) as u8 as f64)
            .collect();
        assert_eq!(f(op), want, "{}", op.name());
    }
}

fn all(s: Index) -> Indexer {
    Indexer::Basic(s)
}

fn full() -> Indexer {
    Indexer::Basic(Index::full())
}

#[test]
fn nonzero_matches_the_host_for_every_dtype_and_shape() {
    let dev = dev_or_skip!();
    let shapes: [&[usize]; 6] = [&[7], &[3, 5], &[2, 3, 4], &[0, 4], &[2500], &[3, 1100]];
    for d in [
        DType::Float32,
        DType::Int32,
        DType::UInt8,
        DType::Bool,
        DType::Int16,
    ] {
        for (k, shape) in shapes.iter().enumerate() {
            let n: usize = shape.iter().product();
            // Mostly zeros: values in [-1, 1] rounded for integers.
            let mut vals = values(d, n, 11 + k as u64, -1.2, 1.2);
            if d.is_float() {
                for (i, v) in vals.iter_mut().enumerate() {
                    match i % 7 {
                        0 => *v = 0.0,
                        1 => *v = -0.0,
                        2 => *v = f64::NAN,
                        _ => {}
                    }
                }
            }
            let x = upload(&dev, d, &vals, shape);
            let got = x.nonzero().unwrap();
            let want = host_nonzero(&vals, shape);
            assert_eq!(got.len(), shape.len());
            for (a, g) in got.iter().enumerate() {
                assert_eq!(g.dtype(), DType::Int32);
                assert_eq!(g.to_f64_vec().unwrap(), want[a], "{d} {shape:?} axis {a}");
            }
        }
    }
    // A strided, reversed view of an expression's result.
    let vals = values(DType::Int32, 60, 5, -2.0, 2.0);
    let x = upload(&dev, DType::Int32, &vals, &[6, 10]);
    let v = x
        .index(&[
            Index::Slice {
                start: None,
                stop: None,
                step: Some(-2),
            },
            Index::Slice {
                start: Some(1),
                stop: None,
                step: Some(3),
            },
        ])
        .unwrap()
        .permute_dims(&[1, 0])
        .unwrap();
    let host: Vec<f64> = v.to_f64_vec().unwrap();
    let got = v.nonzero().unwrap();
    let want = host_nonzero(&host, v.shape());
    for a in 0..2 {
        assert_eq!(got[a].to_f64_vec().unwrap(), want[a]);
    }
    assert!(matches!(
        Array::scalar(&dev, 1.0, DType::Int32).nonzero(),
        Err(Error::InvalidArgument { .. })
    ));
}

#[test]
fn boolean_masks_read_and_write_the_selected_elements() {
    let dev = dev_or_skip!();
    let shape = [4usize, 3, 5];
    let vals: Vec<f64> = (0..60).map(|v| 100.0 + v as f64).collect();
    let mvals = values(DType::Bool, 12, 3, 0.0, 1.0);
    let x = upload(&dev, DType::Float32, &vals, &shape);
    let m = upload(&dev, DType::Bool, &mvals, &[4, 3]);
    // x[mask] over the two leading axes: (count, 5).
    let got = x.getitem(&[Indexer::Array(m.clone())]).unwrap();
    let rows: Vec<usize> = (0..12).filter(|&i| mvals[i] != 0.0).collect();
    assert_eq!(got.shape(), &[rows.len(), 5]);
    let want: Vec<f64> = rows
        .iter()
        .flat_map(|&r| vals[r * 5..r * 5 + 5].to_vec())
        .collect();
    assert_eq!(got.to_f64_vec().unwrap(), want);
    // x[:, mask1d] on the middle axis, then x[mask] = scalar and = a broadcast row.
    let m1 = upload(&dev, DType::Bool, &[1.0, 0.0, 1.0], &[3]);
    let got = x.getitem(&[full(), Indexer::Array(m1)]).unwrap();
    assert_eq!(got.shape(), &[4, 2, 5]);
    let want: Vec<f64> = (0..4)
        .flat_map(|i| [0usize, 2].map(|j| (i, j)))
        .flat_map(|(i, j)| vals[(i * 3 + j) * 5..(i * 3 + j) * 5 + 5].to_vec())
        .collect();
    assert_eq!(got.to_f64_vec().unwrap(), want);
    let y = x.copy().unwrap();
    y.setitem(
        &[Indexer::Array(m.clone())],
        &Array::scalar(&dev, -1.0, DType::Float32),
    )
    .unwrap();
    let row = upload(&dev, DType::Int32, &[1.0, 2.0, 3.0, 4.0, 5.0], &[5]);
    let z = x.copy().unwrap();
    z.setitem(&[Indexer::Array(m.clone())], &row).unwrap();
    let (yg, zg) = (y.to_f64_vec().unwrap(), z.to_f64_vec().unwrap());
    for i in 0..60 {
        let hit = mvals[i / 5] != 0.0;
        assert_eq!(yg[i], if hit { -1.0 } else { vals[i] }, "element {i}");
        assert_eq!(zg[i], if hit { (i % 5 + 1) as f64 } else { vals[i] });
    }
    // A full-shape mask of a condition; an all-false mask; the wrong shape.
    let c = x.greater_scalar(130.0).unwrap();
    let got = x
        .getitem(&[Indexer::Array(c)])
        .unwrap()
        .to_f64_vec()
        .unwrap();
    assert_eq!(
        got,
        vals.iter()
            .copied()
            .filter(|&v| v > 130.0)
            .collect::<Vec<_>>()
    );
    let none = upload(&dev, DType::Bool, &[0.0; 12], &[4, 3]);
    assert_eq!(x.getitem(&[Indexer::Array(none)]).unwrap().shape(), &[0, 5]);
    // A 0-d mask: a new axis of extent 1 (true) or 0 (false).
    let t = Array::scalar(&dev, 1.0, DType::Bool);
    let got = x.getitem(&[Indexer::Array(t)]).unwrap();
    assert_eq!(got.shape(), &[1, 4, 3, 5]);
    assert_eq!(got.to_f64_vec().unwrap(), vals);
    let f = Array::scalar(&dev, 0.0, DType::Bool);
    assert_eq!(
        x.getitem(&[Indexer::Array(f)]).unwrap().shape(),
        &[0, 4, 3, 5]
    );
    let wrong = upload(&dev, DType::Bool, &[1.0; 3], &[3]);
    assert!(matches!(
        x.getitem(&[Indexer::Array(wrong)]),
        Err(Error::IndexOutOfBounds { .. })
    ));
}

#[test]
fn integer_arrays_gather_and_scatter_as_numpy_does() {
    let dev = dev_or_skip!();
    let shape = [4usize, 5, 6];
    let vals: Vec<f64> = (0..120).map(|v| 1000.0 + v as f64).collect();
    let x = upload(&dev, DType::Int32, &vals, &shape);
    let at = |i: usize, j: usize, k: usize| vals[(i * 5 + j) * 6 + k];
    // One array on the last axis with a negative position, beside a slice and an integer.
    let idx = upload(&dev, DType::Int8, &[-1.0, 0.0, 2.0], &[3]);
    let got = x
        .getitem(&[all(Index::At(1)), full(), Indexer::Array(idx.clone())])
        .unwrap();
    // The integer and the array are not adjacent: the index axis goes first, (3, 5).
    assert_eq!(got.shape(), &[3, 5]);
    let ks = [5usize, 0, 2];
    let want: Vec<f64> = ks
        .iter()
        .flat_map(|&k| (0..5).map(move |j| (j, k)))
        .map(|(j, k)| at(1, j, k))
        .collect();
    assert_eq!(got.to_f64_vec().unwrap(), want);
    // Two arrays broadcast on adjacent axes: (2, 3) over axes 1 and 2, in place: (4, 2, 3).
    let a = upload(&dev, DType::Int32, &[1.0, -2.0], &[2, 1]);
    let b = upload(&dev, DType::UInt16, &[0.0, 3.0, 5.0], &[3]);
    let got = x
        .getitem(&[full(), Indexer::Array(a.clone()), Indexer::Array(b.clone())])
        .unwrap();
    assert_eq!(got.shape(), &[4, 2, 3]);
    let mut want = Vec::new();
    for i in 0..4 {
        for j in [1usize, 3] {
            for k in [0usize, 3, 5] {
                want.push(at(i, j, k));
            }
        }
    }
    assert_eq!(got.to_f64_vec().unwrap(), want);
    // The same through a non-contiguous view (x transposed and reversed).
    let v = x
        .permute_dims(&[2, 1, 0])
        .unwrap()
        .index(&[Index::Slice {
            start: None,
            stop: None,
            step: Some(-1),
        }])
        .unwrap();
    let p = upload(&dev, DType::Int32, &[0.0, 2.0, 0.0], &[3]);
    let got = v.getitem(&[Indexer::Array(p), all(Index::At(4))]).unwrap();
    assert_eq!(got.shape(), &[3, 4]);
    let want: Vec<f64> = [5usize, 3, 5]
        .iter()
        .flat_map(|&k| (0..4).map(move |i| at(i, 4, k)))
        .collect();
    assert_eq!(got.to_f64_vec().unwrap(), want);
    // Scatter: x[:, a, b] = value broadcast over (4, 2, 3); the others untouched.
    let y = x.copy().unwrap();
    let value = upload(&dev, DType::Int32, &[-1.0, -2.0, -3.0], &[3]);
    y.setitem(&[full(), Indexer::Array(a), Indexer::Array(b)], &value)
        .unwrap();
    let yg = y.to_f64_vec().unwrap();
    for i in 0..4 {
        for j in 0..5 {
            for k in 0..6 {
                let w = match (j, k) {
                    (1 | 3, 0) => -1.0,
                    (1 | 3, 3) => -2.0,
                    (1 | 3, 5) => -3.0,
                    _ => at(i, j, k),
                };
                assert_eq!(yg[(i * 5 + j) * 6 + k], w, "({i}, {j}, {k})");
            }
        }
    }
    // x[idx] = x[other]: the value is read before anything is written.
    let z = upload(&dev, DType::Int32, &[0.0, 1.0, 2.0, 3.0, 4.0], &[5]);
    let to = upload(&dev, DType::Int32, &[1.0, 2.0, 3.0, 4.0], &[4]);
    z.setitem(
        &[Indexer::Array(to)],
        &z.index(&[Index::Slice {
            start: None,
            stop: Some(-1),
            step: None,
        }])
        .unwrap(),
    )
    .unwrap();
    assert_eq!(z.to_f64_vec().unwrap(), vec![0.0, 0.0, 1.0, 2.0, 3.0]);
}

#[test]
fn bad_indices_are_typed_errors_and_nothing_is_written() {
    let dev = dev_or_skip!();
    let x = upload(
        &dev,
        DType::Float32,
        &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
        &[2, 3],
    );
    let oob = upload(&dev, DType::Int32, &[0.0, 3.0], &[2]);
    let neg = upload(&dev, DType::Int32, &[-4.0], &[1]);
    for i in [oob, neg] {
        assert!(matches!(
            x.getitem(&[full(), Indexer::Array(i.clone())]),
            Err(Error::IndexOutOfBounds { .. })
        ));
        let before = x.to_f64_vec().unwrap();
        assert!(matches!(
            x.setitem(
                &[full(), Indexer::Array(i)],
                &Array::scalar(&dev, 9.0, DType::Float32)
            ),
            Err(Error::IndexOutOfBounds { .. })
        ));
        assert_eq!(x.to_f64_vec().unwrap(), before);
    }
    let f = upload(&dev, DType::Float32, &[0.0], &[1]);
    assert!(matches!(
        x.getitem(&[Indexer::Array(f)]),
        Err(Error::DType { .. })
    ));
    let i = upload(&dev, DType::Int32, &[0.0], &[1]);
    assert!(matches!(
        x.getitem(&[full(), full(), Indexer::Array(i.clone())]),
        Err(Error::IndexOutOfBounds { .. })
    ));
    let j = upload(&dev, DType::Int32, &[0.0, 1.0, 1.0], &[3]);
    assert!(matches!(
        x.getitem(&[Indexer::Array(i.clone()), Indexer::Array(j.clone())])
            .map(|a| a.shape().to_vec()),
        Ok(s) if s == vec![3]
    ));
    let k = upload(&dev, DType::Int32, &[0.0, 1.0], &[2]);
    assert!(matches!(
        x.getitem(&[Indexer::Array(k), Indexer::Array(j)]),
        Err(Error::IndexOutOfBounds { .. })
    ));
    // A value that does not broadcast to the selection.
    let v = upload(&dev, DType::Float32, &[1.0, 2.0], &[2]);
    assert!(matches!(
        x.setitem(&[Indexer::Array(i)], &v),
        Err(Error::ShapeMismatch { .. })
    ));
}

fn host_unique(vals: &[f64]) -> (Vec<f64>, Vec<f64>, Vec<f64>, Vec<f64>) {
    let mut order: Vec<usize> = (0..vals.len()).collect();
    let key = |v: f64| if v.is_nan() { f64::INFINITY } else { v };
    order.sort_by(|&a, &b| {
        key(vals[a])
            .partial_cmp(&key(vals[b]))
            .unwrap()
            .then((vals[a].is_nan() as u8).cmp(&(vals[b].is_nan() as u8)))
    });
    let (mut values, mut first, mut counts) = (Vec::new(), Vec::new(), Vec::new());
    let mut inverse = vec![0.0; vals.len()];
    for (p, &i) in order.iter().enumerate() {
        let new = p == 0 || vals[i] != vals[order[p - 1]];
        if new {
            values.push(vals[i]);
            first.push(i as f64);
            counts.push(0.0);
        }
        *counts.last_mut().unwrap() += 1.0;
        inverse[i] = (values.len() - 1) as f64;
    }
    (values, first, inverse, counts)
}

fn same(a: &[f64], b: &[f64]) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(x, y)| x == y || (x.is_nan() && y.is_nan()))
}

#[test]
fn unique_matches_the_host_with_nans_distinct() {
    let dev = dev_or_skip!();
    for (d, shape) in [
        (DType::Float32, vec![3usize, 7]),
        (DType::Int16, vec![50]),
        (DType::UInt8, vec![2, 0]),
        (DType::Float32, vec![1300]),
        (DType::Bool, vec![9]),
    ] {
        let n: usize = shape.iter().product();
        let mut vals = values(d, n, 7, -5.0, 5.0);
        if d.is_float() {
            for (i, v) in vals.iter_mut().enumerate() {
                if i % 5 == 0 {
                    *v = v.round();
                }
                if i % 9 == 1 {
                    *v = f64::NAN;
                }
            }
        }
        let x = upload(&dev, d, &vals, &shape);
        let u = x.unique(true, true, true).unwrap();
        let (values, first, inverse, counts) = host_unique(&vals);
        assert!(
            same(&u.values.to_f64_vec().unwrap(), &values),
            "{d} {shape:?}"
        );
        assert_eq!(u.values.dtype(), d);
        assert_eq!(u.indices.unwrap().to_f64_vec().unwrap(), first);
        let inv = u.inverse.unwrap();
        assert_eq!(inv.shape(), shape.as_slice());
        assert_eq!(inv.to_f64_vec().unwrap(), inverse);
        assert_eq!(u.counts.unwrap().to_f64_vec().unwrap(), counts);
        assert!(same(
            &x.unique_values().unwrap().to_f64_vec().unwrap(),
            &values
        ));
    }
}

#[test]
fn permutations_and_choices_are_reproducible_and_well_formed() {
    let dev = dev_or_skip!();
    let mut g = Generator::new(&dev, 42);
    let p = g.permutation(3000).unwrap().to_f64_vec().unwrap();
    let mut s = p.clone();
    s.sort_by(f64::total_cmp);
    assert_eq!(s, (0..3000).map(|v| v as f64).collect::<Vec<_>>());
    assert_eq!(
        Generator::new(&dev, 42)
            .permutation(3000)
            .unwrap()
            .to_f64_vec()
            .unwrap(),
        p
    );
    assert_ne!(g.permutation(3000).unwrap().to_f64_vec().unwrap(), p);
    assert_eq!(g.permutation(0).unwrap().shape(), &[0]);
    // Shuffle in place along axis 1 keeps each row's columns together.
    let x = upload(
        &dev,
        DType::Int32,
        &(0..12).map(|v| v as f64).collect::<Vec<_>>(),
        &[3, 4],
    );
    g.shuffle(&x, 1).unwrap();
    let v = x.to_f64_vec().unwrap();
    for r in 1..3 {
        for c in 0..4 {
            assert_eq!(v[r * 4 + c], v[c] + 4.0 * r as f64);
        }
    }
    // Without replacement: distinct; with: in range; probabilities: zeros never drawn and
    // the frequencies near p (10,000 draws, 5 standard deviations).
    let c = g.choice(50, &[5, 4], false, None).unwrap();
    assert_eq!(c.shape(), &[5, 4]);
    let mut v = c.to_f64_vec().unwrap();
    v.sort_by(f64::total_cmp);
    v.dedup();
    assert_eq!(v.len(), 20);
    assert!(v.iter().all(|&q| (0.0..50.0).contains(&q)));
    let probs = [0.1, 0.0, 0.6, 0.3];
    let pa = upload(&dev, DType::Float32, &probs, &[4]);
    let k = 10_000;
    let draws = g
        .choice(4, &[k], true, Some(&pa))
        .unwrap()
        .to_f64_vec()
        .unwrap();
    for (i, &pi) in probs.iter().enumerate() {
        let f = draws.iter().filter(|&&d| d == i as f64).count() as f64;
        let sd = (k as f64 * pi * (1.0 - pi)).sqrt();
        assert!(
            (f - k as f64 * pi).abs() <= 5.0 * sd + 1e-9,
            "item {i}: {f}"
        );
    }
    let w = g
        .choice(4, &[3], false, Some(&pa))
        .unwrap()
        .to_f64_vec()
        .unwrap();
    let mut w2 = w.clone();
    w2.sort_by(f64::total_cmp);
    assert_eq!(w2, vec![0.0, 2.0, 3.0]);
    // Bad arguments are typed errors.
    assert!(g.choice(4, &[4], false, Some(&pa)).is_err());
    assert!(g.choice(3, &[4], false, None).is_err());
    let bad = upload(&dev, DType::Float32, &[0.5, 0.6], &[2]);
    assert!(matches!(
        g.choice(2, &[1], true, Some(&bad)),
        Err(Error::InvalidArgument { .. })
    ));
    let mut h = Generator::new(&dev, 9);
    let mut h2 = Generator::new(&dev, 9);
    assert_eq!(
        h.choice(
            10,
            &[6],
            true,
            Some(&upload(&dev, DType::Float32, &[0.1; 10], &[10]))
        )
        .unwrap()
        .to_f64_vec()
        .unwrap(),
        h2.choice(
            10,
            &[6],
            true,
            Some(&upload(&dev, DType::Float32, &[0.1; 10], &[10]))
        )
        .unwrap()
        .to_f64_vec()
        .unwrap()
    );
}
