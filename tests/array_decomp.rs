//! `solve`, `inv`, `det`, `slogdet` and `cholesky` on the device against f64 host
//! references: random matrices of ragged orders (1 … 130), batches that broadcast, vector
//! and matrix right-hand sides, views that are not contiguous, matrices that need row swaps,
//! singular and indefinite matrices, wrong shapes and empty batches. Tolerances follow from
//! the order and the condition number: a backward-stable float32 solve has forward error
//! about n·ε·κ(A); the tests allow 2·n·ε·κ₁(A) (the errors seen are under a quarter of it).

mod common;

use common::arrays::{upload, values};
use suanli::array::{Array, DType, Index};
use suanli::{Device, Error};

const EPS: f64 = f32::EPSILON as f64;

/// Row-major `n × n` matrices P + R/(2√n), rounded to float32: P a random permutation
/// matrix (so the largest entries are off the diagonal and the LU must swap rows), R with
/// entries in [-1, 1] (‖R‖₂ ≲ 1.2√n), so κ₂ ≲ 4 and the determinant stays in float32's
/// range for every order tested.
fn matrices(count: usize, n: usize, seed: u64) -> Vec<f64> {
    let r = values(DType::Float32, count * n * n, seed, -1.0, 1.0);
    let order = values(DType::Float32, count * n, seed + 7, 0.0, 1.0);
    let scale = 0.5 / (n as f64).sqrt();
    let mut a: Vec<f64> = r.iter().map(|v| v * scale).collect();
    for m in 0..count {
        let mut perm: Vec<usize> = (0..n).collect();
        perm.sort_by(|&i, &j| order[m * n + i].total_cmp(&order[m * n + j]));
        for (i, &j) in perm.iter().enumerate() {
            a[m * n * n + i * n + j] += 1.0;
        }
    }
    a.iter().map(|&v| v as f32 as f64).collect()
}

/// LU with partial pivoting in f64: (LU, perm, swaps), or None when a pivot is exactly 0.
fn lu_f64(a: &[f64], n: usize) -> Option<(Vec<f64>, Vec<usize>, usize)> {
    let mut a = a.to_vec();
    let mut perm: Vec<usize> = (0..n).collect();
    let mut swaps = 0;
    for k in 0..n {
        let p = (k..n)
            .max_by(|&i, &j| a[i * n + k].abs().partial_cmp(&a[j * n + k].abs()).unwrap())
            .unwrap();
        if a[p * n + k] == 0.0 {
            return None;
        }
        if p != k {
            swaps += 1;
            perm.swap(p, k);
            for c in 0..n {
                a.swap(k * n + c, p * n + c);
            }
        }
        for i in k + 1..n {
            let l = a[i * n + k] / a[k * n + k];
            a[i * n + k] = l;
            for j in k + 1..n {
                a[i * n + j] -= l * a[k * n + j];
            }
        }
    }
    Some((a, perm, swaps))
}

/// X with A·X = B (B is `n × k`, row-major), in f64.
fn solve_f64(a: &[f64], n: usize, b: &[f64], k: usize) -> Vec<f64> {
    let (lu, perm, _) = lu_f64(a, n).expect("a nonsingular reference matrix");
    let mut x: Vec<f64> = (0..n * k).map(|e| b[perm[e / k] * k + e % k]).collect();
    for c in 0..k {
        for i in 0..n {
            for j in 0..i {
                x[i * k + c] -= lu[i * n + j] * x[j * k + c];
            }
        }
        for i in (0..n).rev() {
            for j in i + 1..n {
                x[i * k + c] -= lu[i * n + j] * x[j * k + c];
            }
            x[i * k + c] /= lu[i * n + i];
        }
    }
    x
}

fn eye(n: usize) -> Vec<f64> {
    (0..n * n)
        .map(|e| if e / n == e % n { 1.0 } else { 0.0 })
        .collect()
}

/// κ₁(A) = ‖A‖₁·‖A⁻¹‖₁.
fn cond(a: &[f64], n: usize) -> f64 {
    let norm1 = |m: &[f64]| {
        (0..n)
            .map(|j| (0..n).map(|i| m[i * n + j].abs()).sum::<f64>())
            .fold(0.0, f64::max)
    };
    norm1(a) * norm1(&solve_f64(a, n, &eye(n), n))
}

/// max |got - want| / max |want| ≤ tol.
fn assert_rel(what: &str, got: &[f64], want: &[f64], tol: f64) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    let scale = want.iter().fold(0.0f64, |m, v| m.max(v.abs())).max(1e-30);
    let err = got
        .iter()
        .zip(want)
        .fold(0.0f64, |m, (g, w)| m.max((g - w).abs()));
    assert!(
        err / scale <= tol,
        "{what}: relative error {:.3e} > {tol:.3e}",
        err / scale
    );
}

/// Leaves a freed buffer of `words` NaNs in the pool, so an output that the kernels fail to
/// write shows as NaN.
fn poison(dev: &Device, words: usize) {
    let p = Array::full(dev, &[words.max(1)], f64::NAN, DType::Float32).unwrap();
    p.eval().unwrap();
    drop(p);
}

fn tol(n: usize, kappa: f64) -> f64 {
    2.0 * n as f64 * EPS * kappa
}

#[test]
fn solve_matches_the_f64_reference() {
    let dev = dev_or_skip!();
    for (i, &n) in [1usize, 2, 3, 17, 64, 130].iter().enumerate() {
        let count = if n > 64 { 2 } else { 3 };
        let a = matrices(count, n, 10 + i as u64);
        for k in [1usize, 5] {
            let b = values(DType::Float32, count * n * k, 100 + i as u64, -1.0, 1.0);
            poison(&dev, count * n * k);
            let x = upload(&dev, DType::Float32, &a, &[count, n, n])
                .solve(&upload(&dev, DType::Float32, &b, &[count, n, k]))
                .unwrap();
            assert_eq!(x.shape(), &[count, n, k]);
            let got = x.to_f64_vec().unwrap();
            for m in 0..count {
                let am = &a[m * n * n..(m + 1) * n * n];
                let want = solve_f64(am, n, &b[m * n * k..(m + 1) * n * k], k);
                let t = tol(n, cond(am, n));
                assert_rel(
                    &format!("solve n={n} k={k} matrix {m}"),
                    &got[m * n * k..(m + 1) * n * k],
                    &want,
                    t,
                );
            }
        }
        // One vector for every matrix of the batch: the result drops its axis.
        let v = values(DType::Float32, n, 200 + i as u64, -1.0, 1.0);
        let x = upload(&dev, DType::Float32, &a, &[count, n, n])
            .solve(&upload(&dev, DType::Float32, &v, &[n]))
            .unwrap();
        assert_eq!(x.shape(), &[count, n]);
        let got = x.to_f64_vec().unwrap();
        for m in 0..count {
            let am = &a[m * n * n..(m + 1) * n * n];
            assert_rel(
                &format!("solve vector n={n} matrix {m}"),
                &got[m * n..(m + 1) * n],
                &solve_f64(am, n, &v, 1),
                tol(n, cond(am, n)),
            );
        }
    }
}

#[test]
fn batches_broadcast_and_views_are_read_in_place() {
    let dev = dev_or_skip!();
    let n = 7;
    // A of batch (2, 1), B of batch (3,): X of batch (2, 3).
    let a = matrices(2, n, 1);
    let b = values(DType::Float32, 3 * n * 2, 2, -1.0, 1.0);
    let x = upload(&dev, DType::Float32, &a, &[2, 1, n, n])
        .solve(&upload(&dev, DType::Float32, &b, &[3, n, 2]))
        .unwrap();
    assert_eq!(x.shape(), &[2, 3, n, 2]);
    let got = x.to_f64_vec().unwrap();
    for i in 0..2 {
        for j in 0..3 {
            let am = &a[i * n * n..(i + 1) * n * n];
            let o = (i * 3 + j) * n * 2;
            assert_rel(
                &format!("broadcast ({i}, {j})"),
                &got[o..o + n * 2],
                &solve_f64(am, n, &b[j * n * 2..(j + 1) * n * 2], 2),
                tol(n, cond(am, n)),
            );
        }
    }
    // One matrix (batch axes of 1, read transposed) for a batch of right-hand sides: factored
    // once, the batch solved as columns of one system.
    let a = matrices(1, n, 5);
    let at: Vec<f64> = (0..n * n).map(|e| a[(e % n) * n + e / n]).collect();
    let b = values(DType::Float32, 2 * 3 * n * 2, 6, -1.0, 1.0);
    let x = upload(&dev, DType::Float32, &a, &[1, 1, n, n])
        .matrix_transpose()
        .unwrap()
        .solve(&upload(&dev, DType::Float32, &b, &[2, 3, n, 2]))
        .unwrap();
    assert_eq!(x.shape(), &[2, 3, n, 2]);
    let got = x.to_f64_vec().unwrap();
    for j in 0..6 {
        let o = j * n * 2;
        assert_rel(
            &format!("one matrix, right-hand side {j}"),
            &got[o..o + n * 2],
            &solve_f64(&at, n, &b[o..o + n * 2], 2),
            tol(n, cond(&at, n)),
        );
    }
    // Aᵀ as a transposed view, B as every other column of a wider array.
    let a = matrices(1, n, 3);
    let at: Vec<f64> = (0..n * n).map(|e| a[(e % n) * n + e / n]).collect();
    let wide = values(DType::Float32, n * 6, 4, -1.0, 1.0);
    let bv = upload(&dev, DType::Float32, &wide, &[n, 6])
        .index(&[
            Index::full(),
            Index::Slice {
                start: None,
                stop: None,
                step: Some(2),
            },
        ])
        .unwrap();
    let bh: Vec<f64> = (0..n * 3)
        .map(|e| wide[(e / 3) * 6 + (e % 3) * 2])
        .collect();
    let x = upload(&dev, DType::Float32, &a, &[n, n])
        .matrix_transpose()
        .unwrap()
        .solve(&bv)
        .unwrap();
    assert_rel(
        "views",
        &x.to_f64_vec().unwrap(),
        &solve_f64(&at, n, &bh, 3),
        tol(n, cond(&at, n)),
    );
    // Integer matrices are solved in float32.
    let ai = [2.0, 1.0, 1.0, 3.0];
    let x = upload(&dev, DType::Int32, &ai, &[2, 2])
        .solve(&upload(&dev, DType::Int32, &[1.0, 2.0], &[2]))
        .unwrap();
    assert_eq!(x.dtype(), DType::Float32);
    assert_rel("int32", &x.to_f64_vec().unwrap(), &[0.2, 0.6], 1e-6);
}

#[test]
fn inverse_and_determinants() {
    let dev = dev_or_skip!();
    for (i, &n) in [1usize, 2, 3, 17, 64, 130].iter().enumerate() {
        let count = 2;
        let a = matrices(count, n, 30 + i as u64);
        let x = upload(&dev, DType::Float32, &a, &[count, n, n]);
        poison(&dev, count * n * n);
        let inv = x.inv().unwrap().to_f64_vec().unwrap();
        let det = x.det().unwrap().to_f64_vec().unwrap();
        let (sign, logabs) = x.slogdet().unwrap();
        let (sign, logabs) = (sign.to_f64_vec().unwrap(), logabs.to_f64_vec().unwrap());
        for m in 0..count {
            let am = &a[m * n * n..(m + 1) * n * n];
            let kappa = cond(am, n);
            assert_rel(
                &format!("inv n={n} matrix {m}"),
                &inv[m * n * n..(m + 1) * n * n],
                &solve_f64(am, n, &eye(n), n),
                tol(n, kappa),
            );
            let (lu, _, swaps) = lu_f64(am, n).unwrap();
            let parity = if swaps % 2 == 0 { 1.0 } else { -1.0 };
            let d: f64 = parity * (0..n).map(|j| lu[j * n + j]).product::<f64>();
            let want_log: f64 = (0..n).map(|j| lu[j * n + j].abs().ln()).sum();
            assert_eq!(sign[m], d.signum(), "slogdet sign n={n} matrix {m}");
            let t = tol(n, kappa);
            assert!(
                (logabs[m] - want_log).abs() <= t,
                "slogdet log n={n}: {} vs {want_log}",
                logabs[m]
            );
            assert_rel(&format!("det n={n} matrix {m}"), &det[m..m + 1], &[d], t);
        }
    }
    // Row swaps decide the sign: a permutation matrix has determinant -1.
    let p = [0.0, 1.0, 0.0, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0];
    let x = upload(&dev, DType::Float32, &p, &[3, 3]);
    assert_eq!(x.det().unwrap().to_f64_vec().unwrap(), vec![1.0]);
    let x = upload(&dev, DType::Float32, &[0.0, 1.0, 1.0, 0.0], &[2, 2]);
    assert_eq!(x.det().unwrap().to_f64_vec().unwrap(), vec![-1.0]);
    assert_eq!(
        x.inv().unwrap().to_f64_vec().unwrap(),
        vec![0.0, 1.0, 1.0, 0.0]
    );
}

#[test]
fn singular_indefinite_and_misshapen_inputs() {
    let dev = dev_or_skip!();
    // Rank one: the second pivot is exactly 0 (4 - 2·2); one singular matrix in a batch.
    let a = [1.0, 2.0, 2.0, 4.0, 2.0, 0.0, 0.0, 2.0];
    let x = upload(&dev, DType::Float32, &a, &[2, 2, 2]);
    let b = upload(&dev, DType::Float32, &[1.0, 1.0], &[2]);
    // The message names the failing matrix by its batch position, or as "the matrix" alone.
    let found = |r: Result<Array, Error>| match r {
        Err(Error::Singular { found, .. }) => found,
        r => panic!("expected Error::Singular, got {r:?}"),
    };
    assert_eq!(
        found(x.solve(&b)),
        "the matrix at [0] of the batch has no nonzero pivot in column 1"
    );
    assert!(matches!(x.inv(), Err(Error::Singular { op: "inv", .. })));
    let one = upload(&dev, DType::Float32, &a[..4], &[2, 2]);
    let many = upload(&dev, DType::Float32, &[1.0; 6], &[3, 2, 1]);
    assert_eq!(
        found(one.solve(&many)),
        "the matrix has no nonzero pivot in column 1"
    );
    assert_eq!(x.det().unwrap().to_f64_vec().unwrap(), vec![0.0, 4.0]);
    let (s, l) = x.slogdet().unwrap();
    assert_eq!(s.to_f64_vec().unwrap(), vec![0.0, 1.0]);
    let l = l.to_f64_vec().unwrap();
    assert!(l[0] == f64::NEG_INFINITY && (l[1] - 4f64.ln()).abs() < 1e-6);
    let zero = upload(&dev, DType::Float32, &[0.0; 9], &[3, 3]);
    assert!(matches!(zero.inv(), Err(Error::Singular { .. })));
    // Not positive definite: a negative pivot, and a zero one.
    let ind = upload(&dev, DType::Float32, &[1.0, 2.0, 2.0, 1.0], &[2, 2]);
    assert!(matches!(ind.cholesky(false), Err(Error::Singular { .. })));
    assert!(matches!(zero.cholesky(true), Err(Error::Singular { .. })));
    // Shapes.
    let rect = upload(&dev, DType::Float32, &[0.0; 6], &[2, 3]);
    let vec3 = upload(&dev, DType::Float32, &[1.0; 3], &[3]);
    for r in [rect.inv(), rect.det(), rect.cholesky(false), vec3.inv()] {
        assert!(matches!(r, Err(Error::ShapeMismatch { .. })), "{r:?}");
    }
    let sq = upload(&dev, DType::Float32, &eye(3), &[3, 3]);
    let b2 = upload(&dev, DType::Float32, &[1.0; 2], &[2]);
    assert!(matches!(sq.solve(&b2), Err(Error::ShapeMismatch { .. })));
    let bools = upload(&dev, DType::Bool, &eye(3), &[3, 3]);
    assert!(matches!(bools.inv(), Err(Error::DType { .. })));
    // Empty: order 0 and a batch of none.
    let e0 = Array::zeros(&dev, &[2, 0, 0], DType::Float32).unwrap();
    assert_eq!(e0.det().unwrap().to_f64_vec().unwrap(), vec![1.0, 1.0]);
    assert_eq!(e0.inv().unwrap().shape(), &[2, 0, 0]);
    assert_eq!(e0.cholesky(false).unwrap().shape(), &[2, 0, 0]);
    let (s, l) = e0.slogdet().unwrap();
    assert_eq!(s.to_f64_vec().unwrap(), vec![1.0, 1.0]);
    assert_eq!(l.to_f64_vec().unwrap(), vec![0.0, 0.0]);
    let none = Array::zeros(&dev, &[0, 4, 4], DType::Float32).unwrap();
    assert_eq!(none.det().unwrap().shape(), &[0]);
    let b4 = upload(&dev, DType::Float32, &[1.0; 4], &[4, 1]);
    assert_eq!(none.solve(&b4).unwrap().shape(), &[0, 4, 1]);
}

/// L with A = L·Lᵀ in f64.
fn cholesky_f64(a: &[f64], n: usize) -> Vec<f64> {
    let mut l = vec![0.0; n * n];
    for j in 0..n {
        let d = a[j * n + j] - (0..j).map(|k| l[j * n + k] * l[j * n + k]).sum::<f64>();
        l[j * n + j] = d.sqrt();
        for i in j + 1..n {
            let s = a[i * n + j] - (0..j).map(|k| l[i * n + k] * l[j * n + k]).sum::<f64>();
            l[i * n + j] = s / l[j * n + j];
        }
    }
    l
}

#[test]
fn cholesky_matches_the_f64_reference() {
    let dev = dev_or_skip!();
    for (i, &n) in [1usize, 2, 3, 17, 64, 130].iter().enumerate() {
        let count = 2;
        // M·Mᵀ + n·I, rounded to float32; the upper triangle is poisoned with NaN, since
        // only the lower one is read.
        let m = matrices(count, n, 50 + i as u64);
        let mut a = vec![0.0; count * n * n];
        for c in 0..count {
            for r in 0..n {
                for s in 0..n {
                    let v: f64 = (0..n)
                        .map(|t| m[c * n * n + r * n + t] * m[c * n * n + s * n + t])
                        .sum::<f64>()
                        + if r == s { n as f64 } else { 0.0 };
                    a[c * n * n + r * n + s] = v as f32 as f64;
                }
            }
        }
        let mut input = a.clone();
        for c in 0..count {
            for r in 0..n {
                for s in r + 1..n {
                    input[c * n * n + r * n + s] = f64::NAN;
                }
            }
        }
        let x = upload(&dev, DType::Float32, &input, &[count, n, n]);
        poison(&dev, count * n * n);
        let l = x.cholesky(false).unwrap().to_f64_vec().unwrap();
        let u = x.cholesky(true).unwrap().to_f64_vec().unwrap();
        for c in 0..count {
            let am = &a[c * n * n..(c + 1) * n * n];
            let want = cholesky_f64(am, n);
            let lc = &l[c * n * n..(c + 1) * n * n];
            // κ(L) = √κ(A); these matrices are well conditioned (κ(A) ≤ 5 or so).
            let t = tol(n, cond(am, n).sqrt());
            assert_rel(&format!("cholesky n={n} matrix {c}"), lc, &want, t);
            let ut: Vec<f64> = (0..n * n)
                .map(|e| u[c * n * n + (e % n) * n + e / n])
                .collect();
            assert_eq!(ut, lc, "upper is the transpose of lower");
        }
    }
}

/// det = sign·exp(Σ log|uᵢᵢ|), as NumPy: partial products that leave float32's range do not
/// make the determinant 0 or inf where it is not; a singular matrix's det and sign are +0
/// (not -0 after an odd number of swaps, not NaN when an ∞ sits above the zero pivot) and
/// its log|det| -inf.
#[test]
fn det_from_logs_and_singular_as_numpy() {
    let dev = dev_or_skip!();
    let diag = |d: [f64; 3]| {
        let mut v = vec![0.0; 9];
        for (i, x) in d.iter().enumerate() {
            v[i * 4] = *x;
        }
        upload(&dev, DType::Float32, &v, &[3, 3])
    };
    for (d, want) in [([1e-20, 1e-20, 1e30], 1e-10), ([1e20, 1e20, 1e-30], 1e10)] {
        let got = diag(d).det().unwrap().to_f64_vec().unwrap()[0];
        assert!((got / want - 1.0).abs() < 1e-5, "det(diag{d:?}) = {got}");
        let (s, l) = diag(d).slogdet().unwrap();
        assert_eq!(s.to_f64_vec().unwrap(), [1.0]);
        let l = l.to_f64_vec().unwrap()[0];
        assert!((l - want.ln()).abs() < 1e-5, "{l}");
    }
    // [[1, 2], [2, 4]]: one swap, a zero pivot; [[0, inf], [0, 1]]: a zero column under ∞.
    for v in [[1.0, 2.0, 2.0, 4.0], [0.0, f64::INFINITY, 0.0, 1.0]] {
        let x = upload(&dev, DType::Float32, &v, &[2, 2]);
        let d = x.det().unwrap().to_f64_vec().unwrap()[0];
        assert!(d == 0.0 && d.is_sign_positive(), "det {v:?} = {d}");
        let (s, l) = x.slogdet().unwrap();
        let s = s.to_f64_vec().unwrap()[0];
        assert!(s == 0.0 && s.is_sign_positive(), "sign {v:?} = {s}");
        assert_eq!(l.to_f64_vec().unwrap(), [f64::NEG_INFINITY], "{v:?}");
    }
}
