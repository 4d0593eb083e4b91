//! `fft`, `ifft`, `rfft`, `irfft` against f64 host transforms: a naive O(n²) DFT for
//! small and odd lengths (Bluestein's path), a host radix-2 FFT in f64 for powers of two up
//! to 2^16; batches over other axes, every axis of a 3-D array, non-contiguous input, `n`
//! truncating and padding, every `norm`, round trips, and errors.

mod common;

use std::f64::consts::PI;

use suanli::array::fft::Norm;
use suanli::array::{Array, DType, Index};
use suanli::{Device, Error};

type C = (f64, f64);

/// Seeded values in [-1, 1).
fn noise(n: usize, seed: u64) -> Vec<f64> {
    let mut s = seed.wrapping_mul(0x9E3779B97F4A7C15) | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            ((s >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
        })
        .map(|v| v as f32 as f64)
        .collect()
}

fn cnoise(n: usize, seed: u64) -> Vec<C> {
    let v = noise(2 * n, seed);
    v.chunks(2).map(|c| (c[0], c[1])).collect()
}

fn upload(dev: &Device, v: &[C], shape: &[usize]) -> Array {
    let f: Vec<(f32, f32)> = v.iter().map(|&(a, b)| (a as f32, b as f32)).collect();
    Array::from_complex(dev, &f, shape).unwrap()
}

/// The DFT by definition, with exact angles (k·j mod n): sign -1 forward, +1 inverse
/// (unnormalized).
fn dft(x: &[C], sign: f64) -> Vec<C> {
    let n = x.len();
    (0..n)
        .map(|k| {
            let mut acc = (0.0, 0.0);
            for (j, &(a, b)) in x.iter().enumerate() {
                let t = sign * 2.0 * PI * (((k * j) % n) as f64 / n as f64);
                let (c, s) = (t.cos(), t.sin());
                acc.0 += a * c - b * s;
                acc.1 += a * s + b * c;
            }
            acc
        })
        .collect()
}

/// A recursive radix-2 FFT in f64 (n a power of two).
fn fft_pow2(x: &[C], sign: f64) -> Vec<C> {
    let n = x.len();
    if n == 1 {
        return x.to_vec();
    }
    let even: Vec<C> = x.iter().step_by(2).copied().collect();
    let odd: Vec<C> = x.iter().skip(1).step_by(2).copied().collect();
    let (e, o) = (fft_pow2(&even, sign), fft_pow2(&odd, sign));
    let mut out = vec![(0.0, 0.0); n];
    for k in 0..n / 2 {
        let t = sign * 2.0 * PI * k as f64 / n as f64;
        let (c, s) = (t.cos(), t.sin());
        let w = (o[k].0 * c - o[k].1 * s, o[k].0 * s + o[k].1 * c);
        out[k] = (e[k].0 + w.0, e[k].1 + w.1);
        out[k + n / 2] = (e[k].0 - w.0, e[k].1 - w.1);
    }
    out
}

fn reference(x: &[C], sign: f64) -> Vec<C> {
    if x.len().is_power_of_two() && x.len() > 64 {
        fft_pow2(x, sign)
    } else {
        dft(x, sign)
    }
}

/// Max error relative to the reference's largest magnitude (the error of an f32 FFT scales
/// with the signal's norm, not each bin's).
fn check(what: &str, got: &[C], want: &[C], tol: f64) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    let scale = want
        .iter()
        .map(|&(a, b)| a.hypot(b))
        .fold(0.0f64, f64::max)
        .max(1e-30);
    let err = got
        .iter()
        .zip(want)
        .map(|(&(a, b), &(c, d))| (a - c).hypot(b - d))
        .fold(
            0.0f64,
            |m, e| if e.is_nan() { f64::INFINITY } else { m.max(e) },
        );
    if std::env::var_os("FFT_ERRORS").is_some() {
        eprintln!("{what}: {:.3}", err / (tol * scale));
    }
    assert!(
        err <= tol * scale,
        "{what}: max error {err:e} > {tol:e} × {scale:e}"
    );
}

/// Tolerance for length `n`: a few f32 ulps per level of the transform.
fn tol(n: usize) -> f64 {
    let levels = (n.max(2) as f64).log2().ceil();
    1.5e-7 * (levels + 2.0) * if n.is_power_of_two() { 1.0 } else { 2.0 }
}

const LENGTHS: [usize; 13] = [1, 2, 3, 5, 7, 8, 12, 64, 100, 1000, 1024, 4096, 1 << 16];

#[test]
fn fft_and_ifft_match_the_dft_for_every_length() {
    let dev = dev_or_skip!();
    for (i, &n) in LENGTHS.iter().enumerate() {
        let rows = if n > 4096 { 1 } else { 3 };
        let x = cnoise(rows * n, i as u64 + 1);
        let a = upload(&dev, &x, &[rows, n]);
        for (inverse, sign) in [(false, -1.0), (true, 1.0)] {
            let y = if inverse {
                a.ifft(None, -1, Norm::Forward)
            } else {
                a.fft(None, 1, Norm::Backward)
            }
            .unwrap();
            assert_eq!(y.dtype(), DType::Complex64);
            assert_eq!(y.shape(), &[rows, n]);
            let got = y.to_complex_vec().unwrap();
            for r in 0..rows {
                check(
                    &format!("n={n} row {r} inverse={inverse}"),
                    &got[r * n..(r + 1) * n],
                    &reference(&x[r * n..(r + 1) * n], sign),
                    tol(n),
                );
            }
        }
    }
}

#[test]
fn every_axis_views_and_norms() {
    let dev = dev_or_skip!();
    let shape = [4usize, 6, 5];
    let x = cnoise(120, 9);
    let a = upload(&dev, &x, &shape);
    let at = |i: usize, j: usize, k: usize| x[(i * 6 + j) * 5 + k];
    for axis in 0..3 {
        let n = shape[axis];
        for (norm, f) in [
            (Norm::Backward, 1.0),
            (Norm::Ortho, 1.0 / (n as f64).sqrt()),
            (Norm::Forward, 1.0 / n as f64),
        ] {
            let got = a
                .fft(None, axis as isize - 3, norm)
                .unwrap()
                .to_complex_vec()
                .unwrap();
            for i in 0..shape[0] {
                for j in 0..shape[1] {
                    for k in 0..shape[2] {
                        let mut idx = [i, j, k];
                        if idx[axis] != 0 {
                            continue;
                        }
                        let line: Vec<C> = (0..n)
                            .map(|t| {
                                idx[axis] = t;
                                at(idx[0], idx[1], idx[2])
                            })
                            .collect();
                        let want: Vec<C> = dft(&line, -1.0)
                            .into_iter()
                            .map(|(a, b)| (a * f, b * f))
                            .collect();
                        let g: Vec<C> = (0..n)
                            .map(|t| {
                                idx[axis] = t;
                                got[(idx[0] * 6 + idx[1]) * 5 + idx[2]]
                            })
                            .collect();
                        check(&format!("axis {axis} {norm:?}"), &g, &want, tol(n));
                    }
                }
            }
        }
    }
    // A transposed, strided view is read in place of a copy made by the caller.
    let v = a
        .index(&[
            Index::Slice {
                start: None,
                stop: None,
                step: Some(-2),
            },
            Index::At(1),
        ])
        .unwrap()
        .matrix_transpose()
        .unwrap(); // (5, 2): v[k, r] = x[(3 - 2r), 1, k]
    let got = v
        .fft(None, 0, Norm::Backward)
        .unwrap()
        .to_complex_vec()
        .unwrap();
    for r in 0..2 {
        let line: Vec<C> = (0..5).map(|k| at(3 - 2 * r, 1, k)).collect();
        let g: Vec<C> = (0..5).map(|k| got[k * 2 + r]).collect();
        check("strided view", &g, &dft(&line, -1.0), tol(5));
    }
}

#[test]
fn n_truncates_and_pads_and_round_trips() {
    let dev = dev_or_skip!();
    let x = cnoise(2 * 10, 3);
    let a = upload(&dev, &x, &[2, 10]);
    for n in [1usize, 4, 7, 10, 16, 25] {
        let got = a.fft(Some(n), -1, Norm::Backward).unwrap();
        assert_eq!(got.shape(), &[2, n]);
        let got = got.to_complex_vec().unwrap();
        for r in 0..2 {
            let mut line: Vec<C> = x[r * 10..(r + 1) * 10].to_vec();
            line.resize(n, (0.0, 0.0));
            check(
                &format!("n={n}"),
                &got[r * n..(r + 1) * n],
                &dft(&line, -1.0),
                tol(n),
            );
        }
    }
    for n in [6usize, 8, 1000, 4096] {
        let x = cnoise(n, n as u64);
        let a = upload(&dev, &x, &[n]);
        let back = a
            .fft(None, 0, Norm::Ortho)
            .unwrap()
            .ifft(None, 0, Norm::Ortho)
            .unwrap()
            .to_complex_vec()
            .unwrap();
        check(&format!("round trip {n}"), &back, &x, tol(n));
    }
}

#[test]
fn real_input_rfft_and_irfft() {
    let dev = dev_or_skip!();
    for n in [1usize, 2, 5, 8, 12, 100, 1024] {
        let x = noise(3 * n, n as u64 + 5);
        let a = Array::from_f64(&dev, &x, &[3, n], DType::Float32).unwrap();
        let full = a.fft(None, -1, Norm::Backward).unwrap();
        let half = a.rfft(None, -1, Norm::Backward).unwrap();
        assert_eq!(half.shape(), &[3, n / 2 + 1]);
        let (full, half) = (
            full.to_complex_vec().unwrap(),
            half.to_complex_vec().unwrap(),
        );
        for r in 0..3 {
            let line: Vec<C> = x[r * n..(r + 1) * n].iter().map(|&v| (v, 0.0)).collect();
            let want = reference(&line, -1.0);
            check(
                &format!("fft of real n={n}"),
                &full[r * n..(r + 1) * n],
                &want,
                tol(n),
            );
            let h = n / 2 + 1;
            check(
                &format!("rfft n={n}"),
                &half[r * h..(r + 1) * h],
                &want[..h],
                tol(n),
            );
        }
        // irfft inverts rfft for even and odd n (n given: odd lengths are not the default).
        let back = a
            .rfft(None, 1, Norm::Backward)
            .unwrap()
            .irfft(Some(n), 1, Norm::Backward)
            .unwrap();
        assert_eq!(back.dtype(), DType::Float32);
        assert_eq!(back.shape(), &[3, n]);
        let back: Vec<C> = back
            .to_f64_vec()
            .unwrap()
            .into_iter()
            .map(|v| (v, 0.0))
            .collect();
        let want: Vec<C> = x.iter().map(|&v| (v, 0.0)).collect();
        check(&format!("irfft(rfft) n={n}"), &back, &want, tol(n));
    }
    // irfft of a spectrum that is not Hermitian: the imaginary parts of the zero and Nyquist
    // bins are ignored, the rest mirrored, as NumPy does.
    let spec = cnoise(5, 77);
    let a = upload(&dev, &spec, &[5]);
    for n in [8usize, 9, 4, 12] {
        let got: Vec<C> = a
            .irfft(Some(n), 0, Norm::Backward)
            .unwrap()
            .to_f64_vec()
            .unwrap()
            .into_iter()
            .map(|v| (v, 0.0))
            .collect();
        let h = n / 2 + 1;
        let mut full = vec![(0.0, 0.0); n];
        full[..h.min(5)].copy_from_slice(&spec[..h.min(5)]);
        full[0].1 = 0.0;
        if n % 2 == 0 {
            full[n / 2].1 = 0.0;
        }
        for k in 1..n.div_ceil(2) {
            full[n - k] = (full[k].0, -full[k].1);
        }
        let want: Vec<C> = dft(&full, 1.0)
            .into_iter()
            .map(|(re, _)| (re / n as f64, 0.0))
            .collect();
        check(&format!("irfft n={n}"), &got, &want, tol(n));
    }
}

#[test]
fn empty_batches_and_errors() {
    let dev = dev_or_skip!();
    let e = Array::zeros(&dev, &[0, 8], DType::Complex64).unwrap();
    assert_eq!(e.fft(None, 1, Norm::Backward).unwrap().shape(), &[0, 8]);
    let e = Array::zeros(&dev, &[0, 6], DType::Float32).unwrap();
    assert_eq!(e.rfft(None, 1, Norm::Backward).unwrap().shape(), &[0, 4]);
    let x = upload(&dev, &cnoise(4, 1), &[4]);
    assert!(matches!(
        x.fft(Some(0), 0, Norm::Backward),
        Err(Error::InvalidArgument { .. })
    ));
    assert!(matches!(
        x.fft(None, 1, Norm::Backward),
        Err(Error::IndexOutOfBounds { .. })
    ));
    assert!(matches!(
        x.rfft(None, 0, Norm::Backward),
        Err(Error::DType { .. })
    ));
    let s = Array::complex_scalar(&dev, 1.0, 2.0);
    assert!(s.fft(None, 0, Norm::Backward).is_err());
    assert!(Norm::from_name("sideways").is_err());
    let x1 = upload(&dev, &[(1.0, 0.0)], &[1]);
    assert!(matches!(
        x1.irfft(None, 0, Norm::Backward),
        Err(Error::InvalidArgument { .. })
    ));
}
