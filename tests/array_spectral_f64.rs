//! float64 `svd`, `svdvals`, `eigh`, `eigvalsh` (the f64 twin of the Jacobi kernel) and
//! `qr` (the f64 twin of the Householder kernels) against f64 host references: matrices
//! built as Q₁·diag(s)·Q₂ᵀ from host-orthogonalised seeded noise, so the singular values
//! and eigenvalues are known exactly; ragged orders (1, 2, 3, 17, 64), a batch of three,
//! tall and wide, singular values spread over 1e-12..1, repeated eigenvalues (checked by
//! A·V = V·Λ and VᵀV = I, not by the vectors, which are not unique), int64 input, empty
//! shapes, the pool poisoned with NaN first.
//!
//! Tolerances: 1e-12 relative to ‖A‖ (absolute for the values; residuals and orthogonality
//! likewise). The host's A itself carries rounding of about n·ε₆₄·‖A‖ ≈ 1.4e-14 at n = 64,
//! and one-sided Jacobi is backward stable, so a float64 computation lands well inside;
//! any float32 step (ε₃₂ ≈ 1.2e-7) misses by five orders of magnitude.

mod common;

use common::float64::{f64_device, noise, read, up};
use suanli::array::{Array, DType};
use suanli::Device;

const TOL: f64 = 1e-12;

/// NaN-filled float64 buffers of about these element counts, made and dropped, so the pool
/// hands them to the next results: an element a kernel leaves unwritten stays NaN.
fn poison(dev: &Device, sizes: &[usize]) {
    for &n in sizes {
        let p = Array::full(dev, &[n.max(1)], f64::NAN, DType::Float64)
            .unwrap()
            .copy()
            .unwrap();
        assert!(read(&p)[0].is_nan());
    }
}

/// `cols` orthonormal columns of `rows` rows (row-major), by modified Gram–Schmidt run
/// twice over seeded noise: orthogonal to about ε₆₄.
fn orthonormal(rows: usize, cols: usize, seed: u64) -> Vec<f64> {
    let mut q = noise(rows * cols, seed, 1.0);
    for j in 0..cols {
        for _ in 0..2 {
            for k in 0..j {
                let d: f64 = (0..rows).map(|r| q[r * cols + k] * q[r * cols + j]).sum();
                for r in 0..rows {
                    q[r * cols + j] -= d * q[r * cols + k];
                }
            }
        }
        let nrm = (0..rows)
            .map(|r| q[r * cols + j].powi(2))
            .sum::<f64>()
            .sqrt();
        for r in 0..rows {
            q[r * cols + j] /= nrm;
        }
    }
    q
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

fn t(a: &[f64], rows: usize, cols: usize) -> Vec<f64> {
    (0..rows * cols)
        .map(|e| a[(e % rows) * cols + e / rows])
        .collect()
}

/// U·diag(s)·Vᵀ (m × n) with U (m × k), V (n × k) orthonormal, k = s.len().
fn build(m: usize, n: usize, s: &[f64], seed: u64) -> Vec<f64> {
    let k = s.len();
    let u = orthonormal(m, k, seed);
    let v = orthonormal(n, k, seed + 1000);
    let us: Vec<f64> = (0..m * k).map(|e| u[e] * s[e % k]).collect();
    mm(&us, &t(&v, n, k), m, k, n)
}

fn max_diff(a: &[f64], b: &[f64]) -> f64 {
    assert_eq!(a.len(), b.len());
    a.iter().zip(b).fold(0.0, |m, (x, y)| m.max((x - y).abs()))
}

fn assert_small(what: &str, err: f64, scale: f64) {
    assert!(
        err <= TOL * scale.max(f64::MIN_POSITIVE),
        "{what}: error {err:e} above {TOL:e}·{scale:e}"
    );
}

/// ‖QᵀQ - I‖max for Q (rows × cols).
fn gram_error(q: &[f64], rows: usize, cols: usize) -> f64 {
    let g = mm(&t(q, rows, cols), q, cols, rows, cols);
    let eye: Vec<f64> = (0..cols * cols)
        .map(|e| f64::from(u8::from(e / cols == e % cols)))
        .collect();
    max_diff(&g, &eye)
}

/// Singular values spread geometrically over [lo, 1], descending.
fn spread(k: usize, lo: f64) -> Vec<f64> {
    (0..k)
        .map(|i| {
            if k == 1 {
                1.0
            } else {
                lo.powf(i as f64 / (k - 1) as f64)
            }
        })
        .collect()
}

#[test]
fn svd_in_f64_matches_known_singular_values_and_reconstructs() {
    let Some(dev) = f64_device() else { return };
    // (batch, m, n, smallest singular value relative to the largest).
    let cases: &[(usize, usize, usize, f64)] = &[
        (1, 1, 1, 1.0),
        (1, 2, 2, 0.5),
        (1, 3, 3, 1e-3),
        (1, 17, 17, 1e-12),
        (1, 64, 64, 1e-6),
        (3, 5, 4, 1e-12),
        (1, 20, 7, 1e-9),
        (1, 6, 19, 1e-12),
    ];
    for (ci, &(batch, m, n, lo)) in cases.iter().enumerate() {
        let k = m.min(n);
        let mut av = vec![];
        let mut sv = vec![];
        for b in 0..batch {
            // Scaled by π + b: no value of a 1×1 case is a float32.
            let s: Vec<f64> = spread(k, lo)
                .iter()
                .map(|x| x * (std::f64::consts::PI + b as f64))
                .collect();
            av.extend(build(m, n, &s, 100 * ci as u64 + b as u64));
            sv.extend(s);
        }
        let shape: Vec<usize> = if batch == 1 {
            vec![m, n]
        } else {
            vec![batch, m, n]
        };
        let what = format!("svd {shape:?} lo {lo:e}");
        poison(
            &dev,
            &[m * k * batch, k * batch, k * n * batch, n * n * batch],
        );
        let a = up(&dev, &av, &shape);
        let (u, s, vh) = a.svd().unwrap();
        for x in [&u, &s, &vh] {
            assert_eq!(x.dtype(), DType::Float64, "{what}");
        }
        let (uv, s_got, vhv) = (read(&u), read(&s), read(&vh));
        assert!(
            uv.iter().chain(&s_got).chain(&vhv).all(|x| x.is_finite()),
            "{what}"
        );
        let vals = read(&a.svdvals().unwrap());
        for b in 0..batch {
            let smax = sv[b * k];
            let sb = &s_got[b * k..(b + 1) * k];
            assert_small(
                &format!("{what} [{b}] values"),
                max_diff(sb, &sv[b * k..(b + 1) * k]),
                smax,
            );
            assert_small(
                &format!("{what} [{b}] svdvals"),
                max_diff(&vals[b * k..(b + 1) * k], sb),
                smax,
            );
            let ub = &uv[b * m * k..(b + 1) * m * k];
            let vb = &vhv[b * k * n..(b + 1) * k * n];
            assert_small(&format!("{what} [{b}] UᵀU"), gram_error(ub, m, k), 1.0);
            assert_small(
                &format!("{what} [{b}] V"),
                gram_error(&t(vb, k, n), n, k),
                1.0,
            );
            let us: Vec<f64> = (0..m * k).map(|e| ub[e] * sb[e % k]).collect();
            let re = mm(&us, vb, m, k, n);
            assert_small(
                &format!("{what} [{b}] U·S·Vh"),
                max_diff(&re, &av[b * m * n..(b + 1) * m * n]),
                smax,
            );
        }
    }
}

#[test]
fn eigh_in_f64_matches_known_eigenvalues_with_repeats() {
    let Some(dev) = f64_device() else { return };
    // (batch, n, eigenvalues of the first matrix: distinct, repeated or spread to 1e-12).
    type Spectrum = fn(usize) -> Vec<f64>;
    let cases: &[(usize, usize, Spectrum)] = &[
        (1, 1, |_| vec![-std::f64::consts::PI]), // not a float32
        (1, 2, |_| vec![1.0, 1.0]),
        (1, 3, |_| vec![-2.0, 0.25, 3.0]),
        (1, 17, |n| {
            (0..n).map(|i| [-1.0, 2.0, 2.0, 5.0][i % 4]).collect()
        }),
        (1, 64, |n| (0..n).map(|i| (i as f64 - 20.0) / 7.0).collect()),
        (3, 6, |n| {
            spread(n, 1e-12)
                .iter()
                .enumerate()
                .map(|(i, x)| if i % 2 == 0 { *x } else { -x })
                .collect()
        }),
    ];
    for (ci, &(batch, n, spec)) in cases.iter().enumerate() {
        let mut av = vec![];
        let mut wants = vec![];
        for b in 0..batch {
            let lam: Vec<f64> = spec(n).iter().map(|x| x * (1.0 + b as f64)).collect();
            let q = orthonormal(n, n, 500 + 10 * ci as u64 + b as u64);
            let ql: Vec<f64> = (0..n * n).map(|e| q[e] * lam[e % n]).collect();
            let mut a = mm(&ql, &t(&q, n, n), n, n, n);
            // Exactly symmetric, then the upper triangle poisoned: only the lower is read.
            for i in 0..n {
                for j in i + 1..n {
                    a[i * n + j] = f64::NAN;
                }
            }
            av.extend(a);
            let mut w = lam;
            w.sort_by(f64::total_cmp);
            wants.extend(w);
        }
        let shape: Vec<usize> = if batch == 1 {
            vec![n, n]
        } else {
            vec![batch, n, n]
        };
        let what = format!("eigh {shape:?} case {ci}");
        poison(&dev, &[n * batch, n * n * batch]);
        let a = up(&dev, &av, &shape);
        let (w, v) = a.eigh().unwrap();
        assert_eq!(
            (w.dtype(), v.dtype()),
            (DType::Float64, DType::Float64),
            "{what}"
        );
        let (wv, vv) = (read(&w), read(&v));
        let vals = read(&a.eigvalsh().unwrap());
        for b in 0..batch {
            let want = &wants[b * n..(b + 1) * n];
            let scale = want.iter().fold(0.0f64, |m, x| m.max(x.abs()));
            let wb = &wv[b * n..(b + 1) * n];
            assert_small(&format!("{what} [{b}] values"), max_diff(wb, want), scale);
            assert_small(
                &format!("{what} [{b}] eigvalsh"),
                max_diff(&vals[b * n..(b + 1) * n], wb),
                scale,
            );
            let vb = &vv[b * n * n..(b + 1) * n * n];
            assert_small(&format!("{what} [{b}] VᵀV"), gram_error(vb, n, n), 1.0);
            // A·V = V·Λ with A symmetrised from the lower triangle.
            let mut sym = av[b * n * n..(b + 1) * n * n].to_vec();
            for i in 0..n {
                for j in i + 1..n {
                    sym[i * n + j] = sym[j * n + i];
                }
            }
            let avm = mm(&sym, vb, n, n, n);
            let vl: Vec<f64> = (0..n * n).map(|e| vb[e] * wb[e % n]).collect();
            assert_small(
                &format!("{what} [{b}] A·V - V·Λ"),
                max_diff(&avm, &vl),
                scale,
            );
        }
    }
}

#[test]
fn qr_in_f64_is_orthonormal_triangular_and_reconstructs() {
    let Some(dev) = f64_device() else { return };
    // (batch, m, n); tall, wide, square, ragged, ill-conditioned columns.
    let cases: &[(usize, usize, usize)] = &[
        (1, 1, 1),
        (1, 3, 3),
        (1, 17, 5),
        (3, 4, 9),
        (1, 64, 64),
        (2, 2, 7),
    ];
    for (ci, &(batch, m, n)) in cases.iter().enumerate() {
        let k = m.min(n);
        let mut av = vec![];
        for b in 0..batch {
            // A third: the 1×1 case is no float32 (±1 would be).
            let s: Vec<f64> = spread(k, 1e-10).iter().map(|x| x / 3.0).collect();
            av.extend(build(m, n, &s, 900 + 10 * ci as u64 + b as u64));
        }
        let shape: Vec<usize> = if batch == 1 {
            vec![m, n]
        } else {
            vec![batch, m, n]
        };
        let a = up(&dev, &av, &shape);
        for complete in [false, true] {
            let what = format!("qr {shape:?} complete {complete}");
            let qc = if complete { m } else { k };
            poison(&dev, &[m * qc * batch, qc * n * batch]);
            let (q, r) = a.qr(complete).unwrap();
            assert_eq!(
                (q.dtype(), r.dtype()),
                (DType::Float64, DType::Float64),
                "{what}"
            );
            let (qv, rv) = (read(&q), read(&r));
            for b in 0..batch {
                let qb = &qv[b * m * qc..(b + 1) * m * qc];
                let rb = &rv[b * qc * n..(b + 1) * qc * n];
                assert_small(&format!("{what} [{b}] QᵀQ"), gram_error(qb, m, qc), 1.0);
                for i in 0..qc {
                    for j in 0..i.min(n) {
                        assert_eq!(rb[i * n + j], 0.0, "{what} [{b}] R[{i}][{j}]");
                    }
                }
                let re = mm(qb, rb, m, qc, n);
                assert_small(
                    &format!("{what} [{b}] Q·R"),
                    max_diff(&re, &av[b * m * n..(b + 1) * m * n]),
                    1.0,
                );
            }
        }
    }
}

#[test]
fn wide_integers_and_empty_shapes_in_f64() {
    let Some(dev) = f64_device() else { return };
    // int64 above 2^24 (not exact in float32): factored in float64 as NumPy does. In
    // float32 both diagonal entries would be 2^30 and the eigenvalues 2^30 ± 3, off by ≥ 1,
    // and the gap 6 instead of 2√9.25; float64 errs by about ε·2^31 ≈ 5e-7.
    let big = (1i64 << 30) as f64;
    let iv = [big + 1.0, 3.0, 3.0, big + 2.0];
    let a = Array::from_f64(&dev, &iv, &[2, 2], DType::Int64).unwrap();
    let w = a.eigvalsh().unwrap();
    assert_eq!(w.dtype(), DType::Float64);
    // Eigenvalues of [[b+1, 3], [3, b+2]]: b + 3/2 ± √(1/4 + 9), both positive.
    let r = (0.25f64 + 9.0).sqrt();
    let want = [big + 1.5 - r, big + 1.5 + r];
    let wv = read(&w);
    let err = max_diff(&wv, &want);
    assert!(err <= 1e-3, "int64 eigvalsh {wv:?}: error {err:e}");
    let gap = wv[1] - wv[0];
    assert!((gap - 2.0 * r).abs() <= 1e-5, "int64 eigvalsh gap {gap}");
    // The singular values of a positive definite matrix are its eigenvalues.
    let s = a.svdvals().unwrap();
    assert_eq!(s.dtype(), DType::Float64);
    let sv = read(&s);
    let err = max_diff(&sv, &[want[1], want[0]]);
    assert!(err <= 1e-3, "int64 svdvals {sv:?}: error {err:e}");
    let (q, r2) = a.qr(false).unwrap();
    assert_eq!((q.dtype(), r2.dtype()), (DType::Float64, DType::Float64));
    let (qv, rv) = (read(&q), read(&r2));
    assert_small("int64 QᵀQ", gram_error(&qv, 2, 2), 1.0);
    assert_eq!(rv[2], 0.0, "int64 R[1][0]");
    let err = max_diff(&mm(&qv, &rv, 2, 2, 2), &iv);
    assert!(err <= 1e-3, "int64 Q·R: error {err:e}");
    // |R[0][0]| is the first column's norm, √((b+1)² + 9).
    let r00 = ((big + 1.0).powi(2) + 9.0).sqrt();
    assert!((rv[0].abs() - r00).abs() <= 1e-3, "int64 R[0][0] {}", rv[0]);
    // Entries 2^1000 apart (the array API suite drew such a matrix): after balancing, the
    // small columns' squares underflow where their dot products with the large one do not,
    // and the rotations did not converge in 30 sweeps. The small singular values (√2, 0)
    // are below ε·‖A‖, so within the accuracy claimed any small finite values will do.
    let mixed = [1e308, 5e-324, 1.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0];
    let s = read(&up(&dev, &mixed, &[3, 3]).svdvals().unwrap());
    assert_small("mixed svdvals", (s[0] - 1e308).abs(), 1e308);
    assert!(s.iter().all(|v| v.is_finite()), "{s:?}");
    assert_small("mixed small svdvals", s[1], 1e308);
    // A graded matrix and its transpose: the small singular value 1e-35 to about ε relative
    // (σ₁σ₂ = |det| = 1e-35, σ₁ = 1 to within 1e-70). A column below a floor tied to ‖A‖
    // (tol²) rather than to underflow was never rotated, giving its norm √2·1e-35.
    for (m, vals) in [
        (2, vec![1.0, 1e-35, 0.0, 1e-35]),
        (2, vec![1.0, 0.0, 1e-35, 1e-35]),
    ] {
        let s = read(&up(&dev, &vals, &[m, 2]).svdvals().unwrap());
        assert!((s[0] - 1.0).abs() <= 1e-15, "graded {vals:?}: {s:?}");
        assert!(
            (s[1] - 1e-35).abs() <= 1e-12 * 1e-35,
            "graded {vals:?}: {s:?}"
        );
    }
    // Empty: order 0 and an empty batch keep their shapes and float64.
    for shape in [vec![0, 3], vec![3, 0], vec![0, 2, 2]] {
        let e = Array::zeros(&dev, &shape, DType::Float64).unwrap();
        let (u, s, vh) = e.svd().unwrap();
        for x in [&u, &s, &vh] {
            assert_eq!(x.dtype(), DType::Float64, "svd {shape:?}");
        }
        let (q, r) = e.qr(true).unwrap();
        assert_eq!((q.dtype(), r.dtype()), (DType::Float64, DType::Float64));
    }
    let e = Array::zeros(&dev, &[0, 2, 2], DType::Float64).unwrap();
    let (w, v) = e.eigh().unwrap();
    assert_eq!((w.shape(), v.shape()), (&[0, 2][..], &[0, 2, 2][..]));
    assert_eq!(w.dtype(), DType::Float64);
}
