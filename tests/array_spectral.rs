//! `svd`, `svdvals`, `eigh`, `eigvalsh` (one-sided Jacobi on the device) and `qr`
//! (Householder) against f64 checks: tall, wide and square matrices of ragged sizes and batches, reconstruction
//! A = U·diag(S)·Vh and A·V = V·diag(w), orthonormal factors, singular values against the
//! square roots of the eigenvalues of AᵀA computed in f64 by Jacobi on the host, rank
//! deficiency, Q·R = A with Q orthonormal and R triangular, and bad shapes.

mod common;

use common::arrays::{upload, values};
use suanli::array::{Array, DType};
use suanli::Error;

const EPS: f64 = f32::EPSILON as f64;

/// Eigenvalues (ascending) of a symmetric f64 matrix by cyclic Jacobi on the host.
fn eig_f64(a: &[f64], n: usize) -> Vec<f64> {
    let mut a = a.to_vec();
    for _ in 0..100 {
        let off: f64 = (0..n * n)
            .filter(|e| e / n != e % n)
            .map(|e| a[e] * a[e])
            .sum();
        if off < 1e-28 {
            break;
        }
        for p in 0..n {
            for q in p + 1..n {
                let apq = a[p * n + q];
                if apq == 0.0 {
                    continue;
                }
                let theta = (a[q * n + q] - a[p * n + p]) / (2.0 * apq);
                let t = theta.signum() / (theta.abs() + (theta * theta + 1.0).sqrt());
                let t = if theta == 0.0 { 1.0 } else { t };
                let c = 1.0 / (t * t + 1.0).sqrt();
                let s = t * c;
                for k in 0..n {
                    let (akp, akq) = (a[k * n + p], a[k * n + q]);
                    a[k * n + p] = c * akp - s * akq;
                    a[k * n + q] = s * akp + c * akq;
                }
                for k in 0..n {
                    let (apk, aqk) = (a[p * n + k], a[q * n + k]);
                    a[p * n + k] = c * apk - s * aqk;
                    a[q * n + k] = s * apk + c * aqk;
                }
            }
        }
    }
    let mut w: Vec<f64> = (0..n).map(|i| a[i * n + i]).collect();
    w.sort_by(f64::total_cmp);
    w
}

/// (rows × inner) · (inner × cols), row-major.
fn mm(a: &[f64], b: &[f64], rows: usize, inner: usize, cols: usize) -> Vec<f64> {
    let mut c = vec![0.0; rows * cols];
    for i in 0..rows {
        for k in 0..inner {
            for j in 0..cols {
                c[i * cols + j] += a[i * inner + k] * b[k * cols + j];
            }
        }
    }
    c
}

fn transpose(a: &[f64], rows: usize, cols: usize) -> Vec<f64> {
    (0..rows * cols)
        .map(|e| a[(e % rows) * cols + e / rows])
        .collect()
}

fn max_abs_diff(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).fold(0.0, |m, (x, y)| m.max((x - y).abs()))
}

fn check_orthonormal_columns(what: &str, q: &[f64], rows: usize, cols: usize, tol: f64) {
    let g = mm(&transpose(q, rows, cols), q, cols, rows, cols);
    let eye: Vec<f64> = (0..cols * cols)
        .map(|e| if e / cols == e % cols { 1.0 } else { 0.0 })
        .collect();
    let d = max_abs_diff(&g, &eye);
    assert!(d <= tol, "{what}: ‖QᵀQ - I‖max = {d:.3e} > {tol:.3e}");
}

#[test]
fn svd_reconstructs_and_matches_the_f64_singular_values() {
    let dev = dev_or_skip!();
    for (i, &(m, n)) in [
        (1, 1),
        (2, 2),
        (3, 2),
        (2, 3),
        (17, 5),
        (5, 17),
        (64, 64),
        (130, 17),
    ]
    .iter()
    .enumerate()
    {
        let count = 2;
        let a = values(DType::Float32, count * m * n, 60 + i as u64, -1.0, 1.0);
        let x = upload(&dev, DType::Float32, &a, &[count, m, n]);
        let (u, s, vh) = x.svd().unwrap();
        let k = m.min(n);
        assert_eq!(u.shape(), &[count, m, k]);
        assert_eq!(s.shape(), &[count, k]);
        assert_eq!(vh.shape(), &[count, k, n]);
        let (u, s, vh) = (
            u.to_f64_vec().unwrap(),
            s.to_f64_vec().unwrap(),
            vh.to_f64_vec().unwrap(),
        );
        let tol = 30.0 * (m.max(n) as f64) * EPS;
        for c in 0..count {
            let am = &a[c * m * n..(c + 1) * m * n];
            let uc = &u[c * m * k..(c + 1) * m * k];
            let sc = &s[c * k..(c + 1) * k];
            let vc = &vh[c * k * n..(c + 1) * k * n];
            // Singular values: √eig(AᵀA) or √eig(AAᵀ), descending.
            let gram = if m >= n {
                mm(&transpose(am, m, n), am, n, m, n)
            } else {
                mm(am, &transpose(am, m, n), m, n, m)
            };
            let mut want: Vec<f64> = eig_f64(&gram, k)
                .iter()
                .map(|v| v.max(0.0).sqrt())
                .collect();
            want.reverse();
            let smax = want[0].max(1e-30);
            let d = max_abs_diff(sc, &want);
            assert!(d <= tol * smax, "svdvals {m}x{n} matrix {c}: {d:.3e}");
            // A = U·diag(S)·Vh.
            let us: Vec<f64> = (0..m * k).map(|e| uc[e] * sc[e % k]).collect();
            let d = max_abs_diff(&mm(&us, vc, m, k, n), am);
            assert!(d <= tol * smax, "U·S·Vh {m}x{n} matrix {c}: {d:.3e}");
            check_orthonormal_columns(&format!("U {m}x{n}"), uc, m, k, tol);
            check_orthonormal_columns(&format!("Vhᵀ {m}x{n}"), &transpose(vc, k, n), n, k, tol);
        }
    }
    // Rank one: one nonzero singular value, the rest 0 (to rounding).
    let a = [1.0, 2.0, 3.0, 2.0, 4.0, 6.0];
    let s = upload(&dev, DType::Float32, &a, &[2, 3])
        .svdvals()
        .unwrap()
        .to_f64_vec()
        .unwrap();
    assert!(
        (s[0] - 70f64.sqrt()).abs() < 1e-5 && s[1].abs() < 1e-5,
        "{s:?}"
    );
    // Rank-deficient matrices (rank 1 and 2 of 4×3, tall and wide, and zero): U and Vh
    // still orthonormal, as LAPACK's, and the product still A.
    let u4 = values(DType::Float32, 4 * 2, 70, -1.0, 1.0);
    let v3 = values(DType::Float32, 2 * 3, 71, -1.0, 1.0);
    for (rank, (m, n)) in [(1, (4, 3)), (2, (4, 3)), (2, (3, 4)), (0, (4, 3))] {
        let a: Vec<f64> = (0..m * n)
            .map(|e| {
                let (i, j) = (e / n, e % n);
                // Aᵢⱼ = Σ_r u[i][r]·v[r][j] over the first `rank` terms (wide: transposed).
                let (p, q) = if m >= n { (i, j) } else { (j, i) };
                (0..rank)
                    .map(|t| u4[p * 2 + t] * v3[t * 3 + q])
                    .sum::<f64>() as f32 as f64
            })
            .collect();
        let (u, s, vh) = upload(&dev, DType::Float32, &a, &[m, n]).svd().unwrap();
        let k = m.min(n);
        let (u, s, vh) = (
            u.to_f64_vec().unwrap(),
            s.to_f64_vec().unwrap(),
            vh.to_f64_vec().unwrap(),
        );
        let tol = 30.0 * 4.0 * EPS;
        check_orthonormal_columns(&format!("U of rank {rank} {m}x{n}"), &u, m, k, tol);
        check_orthonormal_columns(
            &format!("Vhᵀ of rank {rank}"),
            &transpose(&vh, k, n),
            n,
            k,
            tol,
        );
        let us: Vec<f64> = (0..m * k).map(|e| u[e] * s[e % k]).collect();
        let d = max_abs_diff(&mm(&us, &vh, m, k, n), &a);
        assert!(d <= tol * s[0].max(1.0), "U·S·Vh of rank {rank}: {d:.3e}");
        assert!(
            s[rank..].iter().all(|v| v.abs() < 1e-5),
            "rank {rank}: {s:?}"
        );
    }
    let bad = upload(&dev, DType::Float32, &[1.0, 2.0], &[2]);
    assert!(matches!(bad.svd(), Err(Error::ShapeMismatch { .. })));
    let e = Array::zeros(&dev, &[3, 0], DType::Float32).unwrap();
    assert_eq!(e.svdvals().unwrap().shape(), &[0]);
}

#[test]
fn eigh_matches_the_f64_eigenvalues_and_reconstructs() {
    let dev = dev_or_skip!();
    for (i, &n) in [1usize, 2, 3, 17, 64].iter().enumerate() {
        let count = 2;
        let r = values(DType::Float32, count * n * n, 80 + i as u64, -1.0, 1.0);
        // Symmetric (R + Rᵀ)/2, with the upper triangle poisoned: only the lower one is read.
        let mut a = vec![0.0; count * n * n];
        let mut input = vec![0.0; count * n * n];
        for c in 0..count {
            for p in 0..n {
                for q in 0..n {
                    let v = ((r[c * n * n + p * n + q] + r[c * n * n + q * n + p]) / 2.0) as f32;
                    a[c * n * n + p * n + q] = v as f64;
                    input[c * n * n + p * n + q] = if q > p { f64::NAN } else { v as f64 };
                }
            }
        }
        let x = upload(&dev, DType::Float32, &input, &[count, n, n]);
        let (w, v) = x.eigh().unwrap();
        assert_eq!(w.shape(), &[count, n]);
        assert_eq!(v.shape(), &[count, n, n]);
        let (w, v) = (w.to_f64_vec().unwrap(), v.to_f64_vec().unwrap());
        let wv = x.eigvalsh().unwrap().to_f64_vec().unwrap();
        assert_eq!(wv, w);
        for c in 0..count {
            let am = &a[c * n * n..(c + 1) * n * n];
            let norm = (0..n)
                .map(|p| (0..n).map(|q| am[p * n + q].abs()).sum::<f64>())
                .fold(0.0, f64::max)
                .max(1e-30);
            let tol = 30.0 * n as f64 * EPS;
            let want = eig_f64(am, n);
            let wc = &w[c * n..(c + 1) * n];
            let d = max_abs_diff(wc, &want);
            assert!(d <= tol * norm, "eigvalsh n={n} matrix {c}: {d:.3e}");
            let vc = &v[c * n * n..(c + 1) * n * n];
            let av = mm(am, vc, n, n, n);
            let vw: Vec<f64> = (0..n * n).map(|e| vc[e] * wc[e % n]).collect();
            let d = max_abs_diff(&av, &vw);
            assert!(d <= tol * norm, "A·V = V·diag(w) n={n} matrix {c}: {d:.3e}");
            check_orthonormal_columns(&format!("eigenvectors n={n}"), vc, n, n, tol);
        }
    }
    let rect = Array::zeros(&dev, &[2, 3], DType::Float32).unwrap();
    assert!(matches!(rect.eigh(), Err(Error::ShapeMismatch { .. })));
}

#[test]
fn qr_is_orthonormal_triangular_and_reconstructs() {
    let dev = dev_or_skip!();
    for (i, &(m, n)) in [
        (1, 1),
        (3, 2),
        (2, 3),
        (17, 5),
        (5, 17),
        (64, 64),
        (130, 17),
    ]
    .iter()
    .enumerate()
    {
        let count = 2;
        let a = values(DType::Float32, count * m * n, 90 + i as u64, -1.0, 1.0);
        let x = upload(&dev, DType::Float32, &a, &[count, m, n]);
        let tol = 30.0 * (m.max(n) as f64) * EPS;
        for complete in [false, true] {
            let k = m.min(n);
            let (qc, rr) = if complete { (m, m) } else { (k, k) };
            let (q, r) = x.qr(complete).unwrap();
            assert_eq!(q.shape(), &[count, m, qc]);
            assert_eq!(r.shape(), &[count, rr, n]);
            let (q, r) = (q.to_f64_vec().unwrap(), r.to_f64_vec().unwrap());
            for c in 0..count {
                let am = &a[c * m * n..(c + 1) * m * n];
                let qm = &q[c * m * qc..(c + 1) * m * qc];
                let rm = &r[c * rr * n..(c + 1) * rr * n];
                for row in 0..rr {
                    for col in 0..row.min(n) {
                        assert_eq!(rm[row * n + col], 0.0, "R is upper triangular");
                    }
                }
                let d = max_abs_diff(&mm(qm, rm, m, qc, n), am);
                assert!(d <= tol, "Q·R {m}x{n} complete={complete}: {d:.3e}");
                check_orthonormal_columns(&format!("Q {m}x{n} {complete}"), qm, m, qc, tol);
            }
        }
    }
    let v = Array::zeros(&dev, &[3], DType::Float32).unwrap();
    assert!(matches!(v.qr(false), Err(Error::ShapeMismatch { .. })));
}

#[test]
fn tiny_and_huge_matrices_are_scaled_not_underflowed_or_overflowed() {
    // Squares of 1e-25 underflow float32 and squares of 1e25 overflow it: the solvers must
    // scale each matrix first. References are the unscaled matrix's, times the scale.
    let dev = dev_or_skip!();
    let (m, n) = (6, 4);
    let b = values(DType::Float32, m * n, 123, -1.0, 1.0);
    let gram = mm(&transpose(&b, m, n), &b, n, m, n);
    let mut sv: Vec<f64> = eig_f64(&gram, n)
        .iter()
        .map(|v| v.max(0.0).sqrt())
        .collect();
    sv.reverse();
    let sym: Vec<f64> = (0..n * n).map(|e| gram[e] / sv[0] / sv[0]).collect();
    let eig = eig_f64(&sym, n);
    let tol = 30.0 * m as f64 * EPS;
    for scale in [1e-25, 2f64.powi(-100), 1e25, 2f64.powi(100)] {
        let a: Vec<f64> = b.iter().map(|v| (v * scale) as f32 as f64).collect();
        let x = upload(&dev, DType::Float32, &a, &[m, n]);
        let s = x.svdvals().unwrap().to_f64_vec().unwrap();
        for (got, want) in s.iter().zip(&sv) {
            assert!(
                (got - want * scale).abs() <= tol * sv[0] * scale,
                "svdvals at scale {scale:e}: {s:?} vs {sv:?}"
            );
        }
        let (q, r) = x.qr(false).unwrap();
        let (q, r) = (q.to_f64_vec().unwrap(), r.to_f64_vec().unwrap());
        let d = max_abs_diff(&mm(&q, &r, m, n, n), &a);
        assert!(d <= tol * sv[0] * scale, "Q·R at scale {scale:e}: {d:.3e}");
        check_orthonormal_columns(&format!("Q at scale {scale:e}"), &q, m, n, tol);
        let ys: Vec<f64> = sym.iter().map(|v| (v * scale) as f32 as f64).collect();
        let w = upload(&dev, DType::Float32, &ys, &[n, n])
            .eigvalsh()
            .unwrap()
            .to_f64_vec()
            .unwrap();
        for (got, want) in w.iter().zip(&eig) {
            assert!(
                (got - want * scale).abs() <= tol * scale,
                "eigvalsh at scale {scale:e}: {w:?} vs {eig:?}"
            );
        }
    }
    // Entries in the top binade (past 2^127): a scale of 2^-127 would be subnormal and
    // flushed, zeroing the matrix. Diagonal, so the answers are the entries.
    let d = [3e38, -2e38, 1e37];
    let mut a = vec![0.0; 4 * 3];
    for (i, v) in d.iter().enumerate() {
        a[i * 3 + i] = *v;
    }
    let x = upload(&dev, DType::Float32, &a, &[4, 3]);
    let s = x.svdvals().unwrap().to_f64_vec().unwrap();
    let r = x.qr(false).unwrap().1.to_f64_vec().unwrap();
    let w = upload(&dev, DType::Float32, &a[..9], &[3, 3])
        .eigvalsh()
        .unwrap()
        .to_f64_vec()
        .unwrap();
    let near = |g: f64, want: f64| (g - want).abs() <= 1e-6 * want.abs();
    assert!(
        near(s[0], 3e38) && near(s[1], 2e38) && near(s[2], 1e37),
        "svdvals {s:?}"
    );
    assert!(
        (0..3).all(|i| near(r[i * 3 + i].abs(), d[i].abs())),
        "qr R {r:?}"
    );
    assert!(
        near(w[0], -2e38) && near(w[1], 1e37) && near(w[2], 3e38),
        "eigvalsh {w:?}"
    );
}
