//! `Array::matmul` against an f64 reference: ragged shapes, operands that are transposed or
//! sliced views (read in place), broadcast batch axes, 1-D operands, integers, and errors.

mod common;

use common::arrays::{upload, values};
use suanli::array::{Array, DType, Index};

/// Reference product of row-major host arrays, batch axes broadcast (NumPy's rules).
fn reference(a: &[f64], sa: &[usize], b: &[f64], sb: &[usize]) -> (Vec<f64>, Vec<usize>) {
    let (m, k) = (sa[sa.len() - 2], sa[sa.len() - 1]);
    let n = sb[sb.len() - 1];
    let ba = &sa[..sa.len() - 2];
    let bb = &sb[..sb.len() - 2];
    let rank = ba.len().max(bb.len());
    let pad = |s: &[usize]| {
        let mut v = vec![1; rank - s.len()];
        v.extend_from_slice(s);
        v
    };
    let (pa, pb) = (pad(ba), pad(bb));
    let batch: Vec<usize> = pa.iter().zip(&pb).map(|(x, y)| *x.max(y)).collect();
    let count: usize = batch.iter().product();
    let mut out = Vec::new();
    for z in 0..count {
        let mut rem = z;
        let mut coords = vec![0; rank];
        for d in (0..rank).rev() {
            coords[d] = rem % batch[d];
            rem /= batch[d];
        }
        let flat = |p: &[usize]| {
            p.iter()
                .zip(&coords)
                .fold(0, |o, (&e, &c)| o * e + if e == 1 { 0 } else { c })
        };
        let (za, zb) = (flat(&pa), flat(&pb));
        for i in 0..m {
            for j in 0..n {
                let mut s = 0.0;
                for l in 0..k {
                    s += a[za * m * k + i * k + l] * b[zb * k * n + l * n + j];
                }
                out.push(s);
            }
        }
    }
    let mut shape = batch;
    shape.extend([m, n]);
    (out, shape)
}

fn check(what: &str, got: &Array, want: &[f64], shape: &[usize]) {
    assert_eq!(got.shape(), shape, "{what}: shape");
    let g = got.to_f64_vec().unwrap();
    let scale = want.iter().map(|v| v.abs()).fold(1.0, f64::max);
    for (i, (x, y)) in g.iter().zip(want).enumerate() {
        assert!(
            (x - y).abs() <= 1e-5 * scale,
            "{what}: element {i}: {x} vs {y}"
        );
    }
}

#[test]
fn products_of_ragged_shapes_views_and_batches() {
    let dev = dev_or_skip!();
    let f = DType::Float32;
    for (sa, sb) in [
        (vec![1usize, 1], vec![1usize, 1]),
        (vec![7, 13], vec![13, 5]),
        (vec![33, 65], vec![65, 17]),
        (vec![2, 1, 3, 4], vec![5, 4, 2]),
        (vec![3, 6, 9], vec![9, 4]),
    ] {
        let na: usize = sa.iter().product();
        let nb: usize = sb.iter().product();
        let av = values(f, na, 1, -1.0, 1.0);
        let bv = values(f, nb, 2, -1.0, 1.0);
        let (want, shape) = reference(&av, &sa, &bv, &sb);
        let a = upload(&dev, f, &av, &sa);
        let b = upload(&dev, f, &bv, &sb);
        check(
            &format!("{sa:?}@{sb:?}"),
            &a.matmul(&b).unwrap(),
            &want,
            &shape,
        );
        // The same product from transposed storage: Aᵀ and Bᵀ uploaded, viewed back.
        let t = |v: &[f64], s: &[usize]| -> (Array, Vec<usize>) {
            let r = s.len();
            let (rows, cols) = (s[r - 2], s[r - 1]);
            let batch: usize = s[..r - 2].iter().product();
            let mut tv = vec![0.0; v.len()];
            for z in 0..batch {
                for i in 0..rows {
                    for j in 0..cols {
                        tv[z * rows * cols + j * rows + i] = v[z * rows * cols + i * cols + j];
                    }
                }
            }
            let mut ts = s.to_vec();
            ts.swap(r - 1, r - 2);
            (upload(&dev, f, &tv, &ts).matrix_transpose().unwrap(), ts)
        };
        let (at, _) = t(&av, &sa);
        let (bt, _) = t(&bv, &sb);
        check("Aᵀ view @ B", &at.matmul(&b).unwrap(), &want, &shape);
        check("A @ Bᵀ view", &a.matmul(&bt).unwrap(), &want, &shape);
        check("Aᵀ view @ Bᵀ view", &at.matmul(&bt).unwrap(), &want, &shape);
    }
    // A sliced view with a row stride (every other row) and a reversed one (copied).
    let av = values(f, 8 * 6, 3, -1.0, 1.0);
    let bv = values(f, 6 * 3, 4, -1.0, 1.0);
    let a = upload(&dev, f, &av, &[8, 6]);
    let b = upload(&dev, f, &bv, &[6, 3]);
    let step2 = Index::Slice {
        start: Some(1),
        stop: None,
        step: Some(2),
    };
    let rows: Vec<f64> = (0..4)
        .flat_map(|i| av[(2 * i + 1) * 6..(2 * i + 2) * 6].to_vec())
        .collect();
    let (want, shape) = reference(&rows, &[4, 6], &bv, &[6, 3]);
    check(
        "strided rows",
        &a.index(&[step2]).unwrap().matmul(&b).unwrap(),
        &want,
        &shape,
    );
    let rev = Index::Slice {
        start: None,
        stop: None,
        step: Some(-1),
    };
    let rrows: Vec<f64> = (0..8)
        .rev()
        .flat_map(|i| av[i * 6..(i + 1) * 6].to_vec())
        .collect();
    let (want, shape) = reference(&rrows, &[8, 6], &bv, &[6, 3]);
    check(
        "reversed rows",
        &a.index(&[rev]).unwrap().matmul(&b).unwrap(),
        &want,
        &shape,
    );
}

#[test]
fn reversed_batches_of_transposed_views() {
    let dev = dev_or_skip!();
    let f = DType::Float32;
    // B is a transposed view (read in place as NT) whose batch axis runs backwards: the
    // batch copy makes it row-major, and the product must read it so (it was read with the
    // transposed view's layout: wrong values, or a binding past the copy's end).
    let (m, k, n, z) = (2usize, 5usize, 3usize, 4usize);
    let av = values(f, m * k, 5, -1.0, 1.0);
    let bv = values(f, z * n * k, 6, -1.0, 1.0);
    let a = upload(&dev, f, &av, &[m, k]);
    let bt = upload(&dev, f, &bv, &[z, n, k]);
    let rev = Index::Slice {
        start: None,
        stop: None,
        step: Some(-1),
    };
    let b = bt.index(&[rev]).unwrap().matrix_transpose().unwrap();
    // The host's B: batch reversed, each (n, k) block transposed to (k, n).
    let mut host = Vec::new();
    for zz in (0..z).rev() {
        for l in 0..k {
            for j in 0..n {
                host.push(bv[zz * n * k + j * k + l]);
            }
        }
    }
    let (want, shape) = reference(&av, &[m, k], &host, &[z, k, n]);
    check(
        "A @ reversed Bᵀ batches",
        &a.matmul(&b).unwrap(),
        &want,
        &shape,
    );
    // And A the transposed one (TN), B's batches reversed.
    let at = upload(&dev, f, &av, &[k, m]).matrix_transpose().unwrap();
    let mut ah = vec![0.0; m * k];
    for i in 0..m {
        for l in 0..k {
            ah[i * k + l] = av[l * m + i];
        }
    }
    let b2 = upload(&dev, f, &bv, &[z, k, n]).index(&[rev]).unwrap();
    let mut host2 = Vec::new();
    for zz in (0..z).rev() {
        host2.extend_from_slice(&bv[zz * k * n..(zz + 1) * k * n]);
    }
    let (want, shape) = reference(&ah, &[m, k], &host2, &[z, k, n]);
    check(
        "Aᵀ @ reversed B batches",
        &at.matmul(&b2).unwrap(),
        &want,
        &shape,
    );
}

#[test]
fn vectors_integers_and_errors() {
    let dev = dev_or_skip!();
    let f = DType::Float32;
    let v = upload(&dev, f, &[1.0, 2.0, 3.0], &[3]);
    let m = upload(&dev, f, &[1.0, 0.0, 2.0, 1.0, 0.0, 3.0], &[3, 2]);
    let dot = v.matmul(&v).unwrap();
    assert_eq!(dot.shape(), &[] as &[usize]);
    assert_eq!(dot.to_f64_vec().unwrap(), vec![14.0]);
    assert_eq!(v.matmul(&m).unwrap().to_f64_vec().unwrap(), vec![5.0, 11.0]);
    let mt = m.matrix_transpose().unwrap();
    assert_eq!(
        mt.matmul(&v).unwrap().to_f64_vec().unwrap(),
        vec![5.0, 11.0]
    );
    let i = upload(&dev, DType::Int16, &[1.0, -2.0, 3.0, 4.0], &[2, 2]);
    let p = i.matmul(&i).unwrap();
    assert_eq!(p.dtype(), DType::Int16);
    assert_eq!(p.to_f64_vec().unwrap(), vec![-5.0, -10.0, 15.0, 10.0]);
    let e = v
        .matmul(&upload(&dev, f, &[1.0, 2.0], &[2]))
        .unwrap_err()
        .to_string();
    assert!(e.contains("(3)") && e.contains("[2]"), "{e}");
    assert!(Array::scalar(&dev, 1.0, f).matmul(&v).is_err());
    assert!(upload(&dev, DType::Bool, &[1.0], &[1, 1])
        .matmul(&upload(&dev, DType::Bool, &[1.0], &[1, 1]))
        .is_err());
    let z = Array::zeros(&dev, &[2, 0], f)
        .unwrap()
        .matmul(&Array::zeros(&dev, &[0, 3], f).unwrap())
        .unwrap();
    assert_eq!(z.to_f64_vec().unwrap(), vec![0.0; 6]);
}
