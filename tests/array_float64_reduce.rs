//! float64 reductions (accumulated in f64, within a few ulp, on ragged shapes and through the
//! chunked combine pass), promotion, assignment through a poisoned target, and the typed
//! refusal of every operation that does not take float64 yet.

mod common;

use common::float64::{close, exact, f64_device, noise, read, up};
use suanli::array::fft::Norm;
use suanli::array::{Array, Binary, DType, Index, Reduce, Scalar};
use suanli::Error;

#[test]
fn promotion_gives_float64() {
    let Some(dev) = f64_device() else { return };
    let v = noise(6, 10, 10.0);
    let a = up(&dev, &v, &[6]);
    let f: Vec<f64> = noise(6, 11, 10.0)
        .iter()
        .map(|&x| x as f32 as f64)
        .collect();
    let b = common::arrays::upload(&dev, DType::Float32, &f, &[6]);
    let i = common::arrays::upload(&dev, DType::Int32, &[1.0, -2.0, 3.0, 4.0, 5.0, 6.0], &[6]);
    let got = read(&a.binary(Binary::Add, &b).unwrap());
    let want: Vec<f64> = v.iter().zip(&f).map(|(x, y)| x + y).collect();
    exact("float64 + float32", &got, &want);
    let got = read(&i.binary(Binary::Multiply, &a).unwrap());
    let want: Vec<f64> = v
        .iter()
        .zip([1.0, -2.0, 3.0, 4.0, 5.0, 6.0])
        .map(|(x, y)| y * x)
        .collect();
    exact("int32 * float64", &got, &want);
    let z = Array::complex_scalar(&dev, 1.0, 1.0);
    assert!(matches!(
        a.binary(Binary::Add, &z),
        Err(Error::DType { op: "promote", .. })
    ));
    // An integer array with a float scalar stays float32 (the default float).
    assert_eq!(
        i.binary_scalar(Binary::Add, Scalar::Float(0.5))
            .unwrap()
            .dtype(),
        DType::Float32
    );
}

#[test]
fn reductions_accumulate_in_float64() {
    let Some(dev) = f64_device() else { return };
    // (3, 2500): 2500 per row takes the chunked path and its combine pass.
    for (rows, cols) in [(3usize, 2500usize), (5, 7), (1, 1)] {
        let v = noise(rows * cols, 12 + cols as u64, 1e4);
        let a = up(&dev, &v, &[rows, cols]);
        let row = |r: usize| &v[r * cols..(r + 1) * cols];
        let eps = f64::EPSILON;
        let sums: Vec<f64> = (0..rows).map(|r| row(r).iter().sum()).collect();
        let tol: Vec<f64> = (0..rows)
            .map(|r| 4.0 * eps * row(r).iter().map(|x| x.abs()).sum::<f64>())
            .collect();
        close(
            "sum",
            &read(&a.sum(Some(&[1]), false).unwrap()),
            &sums,
            &tol,
        );
        let means: Vec<f64> = sums.iter().map(|s| s / cols as f64).collect();
        let mtol: Vec<f64> = tol.iter().map(|t| t / cols as f64 + eps).collect();
        close(
            "mean",
            &read(&a.mean(Some(&[1]), false).unwrap()),
            &means,
            &mtol,
        );
        let mins: Vec<f64> = (0..rows)
            .map(|r| row(r).iter().cloned().fold(f64::INFINITY, f64::min))
            .collect();
        let maxs: Vec<f64> = (0..rows)
            .map(|r| row(r).iter().cloned().fold(f64::NEG_INFINITY, f64::max))
            .collect();
        exact(
            "min",
            &read(&a.reduce(Reduce::Min, Some(&[1]), false).unwrap()),
            &mins,
        );
        exact(
            "max",
            &read(&a.reduce(Reduce::Max, Some(&[1]), false).unwrap()),
            &maxs,
        );
        let am = a
            .reduce(Reduce::ArgMin, Some(&[1]), false)
            .unwrap()
            .to_f64_vec()
            .unwrap();
        let ax = a
            .reduce(Reduce::ArgMax, Some(&[1]), false)
            .unwrap()
            .to_f64_vec()
            .unwrap();
        for r in 0..rows {
            assert_eq!(row(r)[am[r] as usize], mins[r], "argmin row {r}");
            assert_eq!(row(r)[ax[r] as usize], maxs[r], "argmax row {r}");
        }
        let vars: Vec<f64> = (0..rows)
            .map(|r| {
                let m = means[r];
                row(r).iter().map(|x| (x - m) * (x - m)).sum::<f64>() / cols as f64
            })
            .collect();
        let vtol: Vec<f64> = vars.iter().map(|x| 1e-13 * x.abs() + 1e-300).collect();
        close(
            "var",
            &read(&a.var(Some(&[1]), 0.0, false).unwrap()),
            &vars,
            &vtol,
        );
        let stds: Vec<f64> = vars.iter().map(|x| x.sqrt()).collect();
        let stol: Vec<f64> = stds.iter().map(|x| 1e-13 * x.abs() + 1e-300).collect();
        close(
            "std",
            &read(&a.std(Some(&[1]), 0.0, false).unwrap()),
            &stds,
            &stol,
        );
        // Over the columns of the transposed view, and all axes.
        let t = a.matrix_transpose().unwrap();
        close(
            "sum(T, 0)",
            &read(&t.sum(Some(&[0]), false).unwrap()),
            &sums,
            &tol,
        );
        let all: f64 = v.iter().sum();
        let atol = 4.0 * eps * v.iter().map(|x| x.abs()).sum::<f64>();
        close(
            "sum(all)",
            &read(&a.sum(None, false).unwrap()),
            &[all],
            &[atol],
        );
    }
    // Products of values near 1 (a float32 product would be off by ~1e-7).
    let v: Vec<f64> = noise(40, 13, 0.5).iter().map(|x| 1.0 + x).collect();
    let a = up(&dev, &v, &[4, 10]);
    let want: Vec<f64> = (0..4)
        .map(|r| v[r * 10..(r + 1) * 10].iter().product())
        .collect();
    let tol: Vec<f64> = want.iter().map(|p| 16.0 * f64::EPSILON * p.abs()).collect();
    close(
        "prod",
        &read(&a.reduce(Reduce::Prod, Some(&[1]), false).unwrap()),
        &want,
        &tol,
    );
    // A sum that float32 cannot hold: 1 + 2^-40 · k.
    let tiny = 2f64.powi(-40);
    let v: Vec<f64> = (0..100).map(|k| if k == 0 { 1.0 } else { tiny }).collect();
    exact(
        "fine sum",
        &read(&up(&dev, &v, &[100]).sum(None, false).unwrap()),
        &[1.0 + 99.0 * tiny],
    );
    // Empty reductions.
    let e = up(&dev, &[], &[0, 3]);
    exact(
        "empty sum",
        &read(&e.sum(Some(&[0]), false).unwrap()),
        &[0.0; 3],
    );
    assert!(e.reduce(Reduce::Max, Some(&[0]), false).is_err());
}

#[test]
fn assignment_writes_only_the_view_of_a_poisoned_target() {
    let Some(dev) = f64_device() else { return };
    let poison = f64::from_bits(0x7ff4dead_beef0001);
    let t = up(&dev, &[poison; 24], &[4, 6]);
    let v = noise(6, 14, 5.0);
    let view = t
        .index(&[
            Index::Slice {
                start: Some(1),
                stop: None,
                step: Some(2),
            },
            Index::Slice {
                start: None,
                stop: None,
                step: Some(2),
            },
        ])
        .unwrap();
    view.assign(&up(&dev, &v, &[2, 3])).unwrap();
    let got = read(&t);
    for (k, g) in got.iter().enumerate() {
        let (r, c) = (k / 6, k % 6);
        if r % 2 == 1 && c % 2 == 0 {
            assert_eq!(*g, v[(r / 2) * 3 + c / 2], "[{r}, {c}]");
        } else {
            assert_eq!(g.to_bits(), poison.to_bits(), "[{r}, {c}] overwritten");
        }
    }
}

#[test]
fn what_float64_does_not_take_is_a_typed_refusal() {
    let Some(dev) = f64_device() else { return };
    let a = up(&dev, &noise(16, 15, 2.0), &[4, 4]);
    // The transcendental functions, pow, atan2, hypot, logaddexp and nextafter are
    // computed in f64: tests/array_float64_math.rs.
    // Sorting and the gathers: tests/array_sort_float64.rs, tests/array_gather_wide.rs;
    // matmul: tests/array_matmul_exact.rs; solve, inv, det, slogdet, cholesky:
    // tests/array_decomp_f64.rs; qr, svd, svdvals, eigh, eigvalsh: tests/array_spectral_f64.rs.
    let refusals: Vec<(&str, suanli::Result<Array>)> = vec![
        ("fft", a.fft(None, -1, Norm::Backward)),
        ("rfft", a.rfft(None, -1, Norm::Backward)),
    ];
    for (name, r) in refusals {
        assert!(matches!(r, Err(Error::DType { .. })), "{name}: {r:?}");
    }
}

#[test]
fn scans_accumulate_in_f64_over_long_lines() {
    let Some(dev) = f64_device() else { return };
    // Against a compensated f64 running sum (the device's chunks and starts change the order,
    // so within a few ulp of the magnitudes summed) and an f64 running product.
    for (rows, cols) in [(4, 6), (2, 3000), (0, 3)] {
        let v = noise(rows * cols, 41, 1.0);
        let a = up(&dev, &v, &[rows, cols]);
        for init in [false, true] {
            let got = read(&a.cumulative_sum(1, init).unwrap());
            let pg = read(&a.cumulative_prod(1, init).unwrap());
            let olen = cols + init as usize;
            for r in 0..rows {
                let (mut s, mut c, mut p, mut mag) = (0.0f64, 0.0f64, 1.0f64, 0.0f64);
                for q in 0..olen {
                    if q >= init as usize {
                        let x = v[r * cols + q - init as usize];
                        let y = x - c;
                        let t = s + y;
                        c = (t - s) - y;
                        s = t;
                        p *= x;
                        mag += x.abs();
                    }
                    let g = got[r * olen + q];
                    assert!(
                        (g - s).abs() <= 4.0 * f64::EPSILON * mag,
                        "sum [{r}, {q}]: {g} vs {s} (magnitudes {mag})"
                    );
                    let gp = pg[r * olen + q];
                    assert!(
                        (gp - p).abs() <= 1e-12 * p.abs() || (gp == p),
                        "prod [{r}, {q}]: {gp} vs {p}"
                    );
                }
            }
        }
    }
    // A float32 scan would lose these: 2^53 + 2 (exact in f64) built from 2^53, 1, 1.
    let big = up(&dev, &[9007199254740992.0, 1.0, 1.0], &[3]);
    assert_eq!(
        read(&big.cumulative_sum(0, false).unwrap())[2],
        9007199254740994.0
    );
}
