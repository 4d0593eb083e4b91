//! float64 `solve`, `inv`, `det`, `slogdet` and `cholesky` (src/array/decomp_f64.rs)
//! against an f64 host reference: Gaussian elimination with partial pivoting and the
//! Cholesky recurrences, on seeded matrices, batched and broadcast, a transposed (strided)
//! operand, empty batches and order 0, singular and indefinite matrices as typed errors.

mod common;

use common::float64::{close, f64_device, noise, read, up};
use suanli::array::{Array, DType};
use suanli::Error;

/// Host LU with partial pivoting (first largest pivot): (det, solution of A·X = B).
fn host_solve(a: &[f64], b: &[f64], n: usize, rhs: usize) -> (f64, Vec<f64>) {
    let (mut a, mut b) = (a.to_vec(), b.to_vec());
    let mut det = 1.0;
    for k in 0..n {
        let mut p = k;
        for r in k..n {
            if a[r * n + k].abs() > a[p * n + k].abs() {
                p = r;
            }
        }
        if p != k {
            det = -det;
            for c in 0..n {
                a.swap(k * n + c, p * n + c);
            }
            for c in 0..rhs {
                b.swap(k * rhs + c, p * rhs + c);
            }
        }
        let piv = a[k * n + k];
        det *= piv;
        if piv == 0.0 {
            continue;
        }
        for r in k + 1..n {
            let l = a[r * n + k] / piv;
            for c in k..n {
                a[r * n + c] -= l * a[k * n + c];
            }
            for c in 0..rhs {
                b[r * rhs + c] -= l * b[k * rhs + c];
            }
        }
    }
    for k in (0..n).rev() {
        for c in 0..rhs {
            let mut s = b[k * rhs + c];
            for j in k + 1..n {
                s -= a[k * n + j] * b[j * rhs + c];
            }
            b[k * rhs + c] = s / a[k * n + k];
        }
    }
    (det, b)
}

fn tol(want: &[f64], scale: f64) -> Vec<f64> {
    want.iter().map(|w| scale * (1.0 + w.abs())).collect()
}

#[test]
fn solve_det_slogdet_inv_in_f64() {
    let Some(dev) = f64_device() else { return };
    // (batch, n, rhs): one, a batch, a ragged order, order 0, an empty batch.
    let cases: &[(&[usize], usize, usize)] = &[
        (&[], 5, 3),
        (&[2, 3], 4, 2),
        (&[3], 9, 1),
        (&[2], 0, 2),
        (&[0], 3, 2),
    ];
    for (ci, &(batch, n, rhs)) in cases.iter().enumerate() {
        let count: usize = batch.iter().product();
        let av = noise(count * n * n, 10 + ci as u64, 2.0);
        let bv = noise(count * n * rhs, 20 + ci as u64, 2.0);
        let mut ashape = batch.to_vec();
        ashape.extend([n, n]);
        let mut bshape = batch.to_vec();
        bshape.extend([n, rhs]);
        let a = up(&dev, &av, &ashape);
        let b = up(&dev, &bv, &bshape);
        let (mut dets, mut xs) = (vec![], vec![]);
        for i in 0..count {
            let (d, x) = host_solve(
                &av[i * n * n..(i + 1) * n * n],
                &bv[i * n * rhs..(i + 1) * n * rhs],
                n,
                rhs,
            );
            dets.push(d);
            xs.extend(x);
        }
        let what = format!("batch {batch:?} n {n}");
        let x = a.solve(&b).unwrap();
        assert_eq!(
            (x.dtype(), x.shape()),
            (DType::Float64, &bshape[..]),
            "{what}"
        );
        close(&what, &read(&x), &xs, &tol(&xs, 1e-11));
        let d = a.det().unwrap();
        assert_eq!(d.shape(), batch, "{what}");
        close(&what, &read(&d), &dets, &tol(&dets, 1e-12));
        let (s, l) = a.slogdet().unwrap();
        let ws: Vec<f64> = dets.iter().map(|d| d.signum()).collect();
        let wl: Vec<f64> = dets.iter().map(|d| d.abs().ln()).collect();
        assert_eq!(read(&s), ws, "{what}");
        close(&what, &read(&l), &wl, &tol(&wl, 1e-12));
        // inv: A·inv(A) = I.
        let ai = a.inv().unwrap();
        assert_eq!(ai.dtype(), DType::Float64);
        let r = read(&a.matmul(&ai).unwrap());
        let eye: Vec<f64> = (0..count * n * n)
            .map(|k| ((k % (n * n)) % (n + 1) == 0) as u8 as f64)
            .collect();
        close(&what, &r, &eye, &vec![1e-11; eye.len()]);
    }
    // A transposed view, a 1-D right-hand side, a batch broadcast against one matrix.
    let n = 6;
    let av = noise(n * n, 31, 1.0);
    let bv = noise(n, 32, 1.0);
    let at: Vec<f64> = (0..n * n).map(|k| av[(k % n) * n + k / n]).collect();
    let a = up(&dev, &at, &[n, n]).matrix_transpose().unwrap();
    let (_, want) = host_solve(&av, &bv, n, 1);
    let x = a.solve(&up(&dev, &bv, &[n])).unwrap();
    assert_eq!(x.shape(), &[n]);
    close("1-D, transposed A", &read(&x), &want, &tol(&want, 1e-11));
    let b3 = up(&dev, &[bv.clone(), bv.clone(), bv].concat(), &[3, n, 1]);
    let x = a.solve(&b3).unwrap();
    assert_eq!(x.shape(), &[3, n, 1]);
    let want3 = [want.clone(), want.clone(), want].concat();
    close("broadcast A", &read(&x), &want3, &tol(&want3, 1e-11));
}

#[test]
fn singular_and_indefinite_are_typed_errors() {
    let Some(dev) = f64_device() else { return };
    // The second matrix of the batch is singular (rank 1): solve and inv refuse, det is 0.
    let v = [2.0, 1.0, 1.0, 3.0, 1.0, 2.0, 2.0, 4.0];
    let a = up(&dev, &v, &[2, 2, 2]);
    let r = a.solve(&up(&dev, &[1.0, 1.0], &[2]));
    assert!(
        matches!(&r, Err(Error::Singular { found, .. }) if found.contains("[1]")),
        "{r:?}"
    );
    assert!(matches!(a.inv(), Err(Error::Singular { op: "inv", .. })));
    // det = sign·exp(log|det|) as NumPy's: 5.000000000000001 there too.
    close("det", &read(&a.det().unwrap()), &[5.0, 0.0], &[5e-15, 0.0]);
    let (s, l) = a.slogdet().unwrap();
    assert_eq!(read(&s), [1.0, 0.0]);
    assert_eq!(read(&l)[1], f64::NEG_INFINITY);
    // Pivoting: a zero leading entry, and a tiny one that without the largest pivot loses
    // the solution ([1e-20, 1; 1, 1]·x = [1, 2] is x ≈ [1, 1]; unpivoted it gives [0, 1]).
    let p = up(&dev, &[0.0, 1.0, 1.0, 0.0], &[2, 2]);
    assert_eq!(read(&p.det().unwrap()), [-1.0]);
    assert_eq!(
        read(&p.solve(&up(&dev, &[3.0, 4.0], &[2])).unwrap()),
        [4.0, 3.0]
    );
    let t = up(&dev, &[1e-20, 1.0, 1.0, 1.0], &[2, 2]);
    let x = read(&t.solve(&up(&dev, &[1.0, 2.0], &[2])).unwrap());
    close("pivoted", &x, &[1.0, 1.0], &[1e-15, 1e-15]);
    let ind = up(&dev, &[1.0, 2.0, 2.0, 1.0], &[2, 2]);
    assert!(matches!(ind.cholesky(false), Err(Error::Singular { .. })));
    let b = Array::from_f64(&dev, &[1.0, 0.0, 0.0, 1.0], &[2, 2], DType::Bool).unwrap();
    assert!(matches!(
        b.astype(DType::Float64).unwrap().solve(&b),
        Err(Error::DType { .. })
    ));
}

#[test]
fn cholesky_in_f64() {
    let Some(dev) = f64_device() else { return };
    for (ci, &(batch, n)) in [
        (&[][..], 7usize),
        (&[3][..], 4),
        (&[2][..], 0),
        (&[0][..], 3),
    ]
    .iter()
    .enumerate()
    {
        let count: usize = batch.iter().product();
        // A = M·Mᵀ + n·I, symmetric positive definite; the upper triangle is poisoned with
        // NaN (cholesky reads the lower one).
        let m = noise(count * n * n, 40 + ci as u64, 1.0);
        let mut a = vec![0.0; count * n * n];
        let mut want = vec![0.0; count * n * n];
        for b in 0..count {
            let o = b * n * n;
            for i in 0..n {
                for j in 0..n {
                    let s: f64 = (0..n).map(|k| m[o + i * n + k] * m[o + j * n + k]).sum();
                    a[o + i * n + j] = s + if i == j { n as f64 } else { 0.0 };
                }
            }
            for j in 0..n {
                let mut d = a[o + j * n + j];
                for k in 0..j {
                    d -= want[o + j * n + k] * want[o + j * n + k];
                }
                let d = d.sqrt();
                want[o + j * n + j] = d;
                for i in j + 1..n {
                    let mut s = a[o + i * n + j];
                    for k in 0..j {
                        s -= want[o + i * n + k] * want[o + j * n + k];
                    }
                    want[o + i * n + j] = s / d;
                }
            }
            for i in 0..n {
                for j in i + 1..n {
                    a[o + i * n + j] = f64::NAN;
                }
            }
        }
        let mut shape = batch.to_vec();
        shape.extend([n, n]);
        let x = up(&dev, &a, &shape);
        let l = x.cholesky(false).unwrap();
        assert_eq!((l.dtype(), l.shape()), (DType::Float64, &shape[..]));
        close("L", &read(&l), &want, &tol(&want, 1e-12));
        let u = read(&x.cholesky(true).unwrap());
        let ut: Vec<f64> = (0..count * n * n)
            .map(|k| {
                let (b, r) = (k / (n * n), k % (n * n));
                want[b * n * n + (r % n) * n + r / n]
            })
            .collect();
        close("U", &u, &ut, &tol(&ut, 1e-12));
    }
}

/// det = sign·exp(Σ log|uᵢᵢ|), as NumPy's: no under- or overflow of the partial products; a
/// singular matrix gives +0, (+0, -inf) even after an odd number of swaps or with an ∞ above
/// its zero pivot.
#[test]
fn det_from_logs_and_singular_as_numpy() {
    let Some(dev) = f64_device() else { return };
    let diag = |d: [f64; 3]| {
        let mut v = vec![0.0; 9];
        for (i, x) in d.iter().enumerate() {
            v[i * 4] = *x;
        }
        up(&dev, &v, &[3, 3])
    };
    for (d, want) in [
        ([1e-200, 1e-200, 1e300], 1e-100),
        ([1e200, 1e200, 1e-300], 1e100),
    ] {
        let got = read(&diag(d).det().unwrap())[0];
        assert!((got / want - 1.0).abs() < 1e-13, "det(diag{d:?}) = {got}");
        let (s, l) = diag(d).slogdet().unwrap();
        assert_eq!(read(&s), [1.0]);
        close("logabs", &read(&l), &[want.ln()], &[1e-12]);
    }
    for v in [[1.0, 2.0, 2.0, 4.0], [0.0, f64::INFINITY, 0.0, 1.0]] {
        let x = up(&dev, &v, &[2, 2]);
        let d = read(&x.det().unwrap())[0];
        assert!(d == 0.0 && d.is_sign_positive(), "det {v:?} = {d}");
        let (s, l) = x.slogdet().unwrap();
        let s = read(&s)[0];
        assert!(s == 0.0 && s.is_sign_positive(), "sign {v:?} = {s}");
        assert_eq!(read(&l), [f64::NEG_INFINITY], "{v:?}");
    }
}

/// int64 and uint64 matrices, and a float32 matrix with a float64 right-hand side, are
/// solved in float64 (NumPy's result type), checked against the host LU.
#[test]
fn wide_integers_and_mixed_float_solve_in_f64() {
    let Some(dev) = f64_device() else { return };
    let n = 4;
    // Diagonally dominant integers: well conditioned, and 2^40 on the diagonal needs more
    // than float32's 24 bits.
    let mut av = vec![0.0; n * n];
    for (k, x) in av.iter_mut().enumerate() {
        *x = if k % (n + 1) == 0 {
            (1u64 << 40) as f64 + k as f64
        } else {
            ((k * 7) % 5) as f64
        };
    }
    let bv: Vec<f64> = (0..n).map(|i| (i * 3 + 1) as f64).collect();
    let (want_det, want_x) = host_solve(&av, &bv, n, 1);
    let b = up(&dev, &bv, &[n]);
    if dev.info().features.shader_int64 {
        for d in [DType::Int64, DType::UInt64] {
            let a = up(&dev, &av, &[n, n]).astype(d).unwrap();
            let x = a.solve(&b.astype(d).unwrap()).unwrap();
            assert_eq!(x.dtype(), DType::Float64, "{d}");
            close(
                &format!("{d} solve"),
                &read(&x),
                &want_x,
                &tol(&want_x, 1e-12),
            );
            let det = a.det().unwrap();
            assert_eq!(det.dtype(), DType::Float64, "{d}");
            close(
                &format!("{d} det"),
                &read(&det),
                &[want_det],
                &[want_det.abs() * 1e-12],
            );
        }
    }
    // float32 A (small integers, exact in float32) with float64 b: float64 throughout.
    let small: Vec<f64> = av
        .iter()
        .enumerate()
        .map(|(k, &x)| if k % (n + 1) == 0 { 20.0 + k as f64 } else { x })
        .collect();
    let fine: Vec<f64> = bv.iter().map(|x| x + 1e-12).collect();
    let (_, want) = host_solve(&small, &fine, n, 1);
    let a32 = up(&dev, &small, &[n, n]).astype(DType::Float32).unwrap();
    let x = a32.solve(&up(&dev, &fine, &[n])).unwrap();
    assert_eq!(x.dtype(), DType::Float64);
    close(
        "float32 @ float64 solve",
        &read(&x),
        &want,
        &tol(&want, 1e-14),
    );
}
