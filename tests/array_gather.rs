//! `take`, `take_along_axis` and `searchsorted` against host references: every axis, index
//! arrays of any shape with negative positions, strided views, out-of-range positions as
//! typed errors, and `take_along_axis(argsort)` equal to `sort`.

mod common;

use common::arrays::{upload, values};
use suanli::array::{Array, DType, Index};
use suanli::Error;

#[test]
fn take_along_every_axis_with_negative_positions() {
    let dev = dev_or_skip!();
    let shape = [3usize, 4, 5];
    let vals: Vec<f64> = (0..60).map(|v| v as f64).collect();
    let x = upload(&dev, DType::Int32, &vals, &shape);
    let idx = upload(
        &dev,
        DType::Int16,
        &[0.0, -1.0, 2.0, 1.0, 1.0, -3.0],
        &[2, 3],
    );
    let host_idx = [0i64, -1, 2, 1, 1, -3];
    for axis in 0..3 {
        let y = x.take(&idx, axis as isize).unwrap();
        let mut want_shape: Vec<usize> = shape[..axis].to_vec();
        want_shape.extend([2, 3]);
        want_shape.extend_from_slice(&shape[axis + 1..]);
        assert_eq!(y.shape(), want_shape.as_slice());
        let got = y.to_f64_vec().unwrap();
        let mut k = 0;
        let pre: usize = shape[..axis].iter().product();
        let post: usize = shape[axis + 1..].iter().product();
        for p in 0..pre {
            for &q in &host_idx {
                let q = if q < 0 { q + shape[axis] as i64 } else { q } as usize;
                for t in 0..post {
                    let want = vals[(p * shape[axis] + q) * post + t];
                    assert_eq!(got[k], want, "axis {axis} element {k}");
                    k += 1;
                }
            }
        }
    }
    // A strided view and a uint8 index: x[1, ::-2] is rows 3 and 1 of x[1] (35.., 25..).
    let v = x
        .index(&[
            Index::At(1),
            Index::Slice {
                start: None,
                stop: None,
                step: Some(-2),
            },
        ])
        .unwrap();
    let u = upload(&dev, DType::UInt8, &[1.0, 0.0], &[2]);
    assert_eq!(
        v.take(&u, 0).unwrap().to_f64_vec().unwrap(),
        vec![25.0, 26.0, 27.0, 28.0, 29.0, 35.0, 36.0, 37.0, 38.0, 39.0]
    );
    // Out of range: a typed error, also for the negative side.
    for bad in [4.0, -5.0] {
        let i = upload(&dev, DType::Int32, &[0.0, bad], &[2]);
        assert!(
            matches!(x.take(&i, 1), Err(Error::IndexOutOfBounds { .. })),
            "{bad}"
        );
    }
    assert!(x
        .take(&upload(&dev, DType::Float32, &[0.0], &[1]), 0)
        .is_err());
}

#[test]
fn take_along_axis_undoes_argsort_and_broadcasts() {
    let dev = dev_or_skip!();
    let vals = values(DType::Float32, 4 * 9, 3, -5.0, 5.0);
    let x = upload(&dev, DType::Float32, &vals, &[4, 9]);
    for axis in [0isize, 1, -1] {
        let p = x.argsort(axis, false).unwrap();
        let s = x.take_along_axis(&p, axis).unwrap().to_f64_vec().unwrap();
        assert_eq!(
            s,
            x.sort(axis, false).unwrap().to_f64_vec().unwrap(),
            "axis {axis}"
        );
    }
    // One position per row, broadcast along the other axis: the row maxima.
    let best = x
        .argsort(1, true)
        .unwrap()
        .index(&[
            Index::full(),
            Index::Slice {
                start: Some(0),
                stop: Some(1),
                step: None,
            },
        ])
        .unwrap();
    let m = x.take_along_axis(&best, 1).unwrap().to_f64_vec().unwrap();
    let want: Vec<f64> = vals
        .chunks(9)
        .map(|r| r.iter().cloned().fold(f64::MIN, f64::max))
        .collect();
    assert_eq!(m, want);
    assert!(x
        .take_along_axis(&upload(&dev, DType::Int32, &[0.0], &[1]), 1)
        .is_err());
    let far = upload(&dev, DType::Int32, &[9.0; 4], &[4, 1]);
    assert!(matches!(
        x.take_along_axis(&far, 1),
        Err(Error::IndexOutOfBounds { .. })
    ));
}

#[test]
fn searchsorted_left_and_right() {
    let dev = dev_or_skip!();
    let sorted = [-3.0, -1.0, -1.0, 0.0, 2.5, 2.5, 2.5, 7.0, f64::NAN];
    let a = upload(&dev, DType::Float32, &sorted, &[9]);
    let q = [-5.0, -1.0, 0.0, 2.5, 3.0, 100.0, f64::NAN];
    let v = upload(&dev, DType::Float32, &q, &[7]);
    let left = a.searchsorted(&v, false).unwrap().to_f64_vec().unwrap();
    let right = a.searchsorted(&v, true).unwrap().to_f64_vec().unwrap();
    // NumPy: np.searchsorted(a, q, 'left'/'right') with NaN sorted last.
    assert_eq!(left, vec![0.0, 1.0, 3.0, 4.0, 7.0, 8.0, 8.0]);
    assert_eq!(right, vec![0.0, 3.0, 4.0, 7.0, 7.0, 8.0, 9.0]);
    let ints = upload(&dev, DType::Int16, &[-7.0, 0.0, 0.0, 5.0], &[4]);
    let qi = upload(&dev, DType::Int16, &[0.0, 6.0, -8.0], &[3, 1]);
    let r = ints.searchsorted(&qi, false).unwrap();
    assert_eq!(r.shape(), &[3, 1]);
    assert_eq!(r.to_f64_vec().unwrap(), vec![1.0, 4.0, 0.0]);
    assert!(Array::zeros(&dev, &[2, 2], DType::Float32)
        .unwrap()
        .searchsorted(&v, false)
        .is_err());
}
