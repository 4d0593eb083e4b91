//! complex64 `prod`, `cumulative_sum`, `cumulative_prod` and `matmul`
//! (`src/array/complex_fold.rs`) against f64 references: seeded values, ragged and empty
//! shapes, odd lengths for the pairwise passes and a line past a scan chunk, transposed
//! operands, `keepdims` and `include_initial`, a real operand beside a complex one.

mod common;

use suanli::array::Array;

type C = (f64, f64);

fn mul(a: C, b: C) -> C {
    (a.0 * b.0 - a.1 * b.1, a.0 * b.1 + a.1 * b.0)
}

/// Seeded values in [-1.5, 1.5)², rounded to float32.
fn inputs(n: usize, seed: u64) -> Vec<C> {
    let mut s = seed.wrapping_mul(0x9E3779B97F4A7C15) | 1;
    let mut u = move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        ((s >> 11) as f64 / (1u64 << 53) as f64 - 0.5) * 3.0
    };
    (0..n)
        .map(|_| (u() as f32 as f64, u() as f32 as f64))
        .collect()
}

fn host(v: &[C]) -> Vec<(f32, f32)> {
    v.iter().map(|&(a, b)| (a as f32, b as f32)).collect()
}

/// Unit-modulus-ish values, so long products neither overflow nor vanish.
fn units(n: usize, seed: u64) -> Vec<C> {
    inputs(n, seed)
        .into_iter()
        .map(|(a, b)| {
            let t = a * 3.0 + b;
            let r = 1.0 + 0.1 * (b - a).sin();
            ((r * t.cos()) as f32 as f64, (r * t.sin()) as f32 as f64)
        })
        .collect()
}

fn close_all(what: &str, got: &[C], want: &[C], rtol: f64) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        let e = (g.0 - w.0).hypot(g.1 - w.1);
        assert!(
            e <= rtol * w.0.hypot(w.1).max(1.0),
            "{what}[{i}]: got {g:?}, want {w:?}"
        );
    }
}

#[test]
fn prod_and_scans_against_f64() {
    let dev = dev_or_skip!();
    // Ragged extents, among them one past a scan chunk (1024) and odd lengths for the
    // pairwise passes; read through a transpose.
    for (k, &(rows, cols)) in [(3usize, 1usize), (5, 7), (2, 1500), (4, 0), (0, 3)]
        .iter()
        .enumerate()
    {
        let v = units(rows * cols, 90 + k as u64);
        let a = Array::from_complex(&dev, &host(&v), &[rows, cols]).unwrap();
        let t = a.matrix_transpose().unwrap(); // (cols, rows): t[c][r] = v[r * cols + c]
        let at = |c: usize, r: usize| v[r * cols + c];
        // prod over axis 1 of t (the rows of a), over both axes, and keepdims.
        let got = t
            .reduce(suanli::array::Reduce::Prod, Some(&[1]), false)
            .unwrap();
        assert_eq!(got.shape(), &[cols]);
        let want: Vec<C> = (0..cols)
            .map(|c| (0..rows).fold((1.0, 0.0), |p, r| mul(p, at(c, r))))
            .collect();
        close_all("prod", &got.to_complex_vec().unwrap(), &want, 1e-5);
        let all = t.reduce(suanli::array::Reduce::Prod, None, true).unwrap();
        assert_eq!(all.shape(), &[1, 1]);
        let want_all = v.iter().fold((1.0, 0.0), |p, &z| mul(p, z));
        close_all(
            "prod all",
            &all.to_complex_vec().unwrap(),
            &[want_all],
            1e-4,
        );
        // Running sums and products along axis 1 of t, with and without the initial value.
        for product in [false, true] {
            for initial in [false, true] {
                let got = if product {
                    t.cumulative_prod(1, initial)
                } else {
                    t.cumulative_sum(1, initial)
                }
                .unwrap();
                assert_eq!(got.shape(), &[cols, rows + initial as usize]);
                let mut want = Vec::new();
                for c in 0..cols {
                    let mut acc = if product { (1.0, 0.0) } else { (0.0, 0.0) };
                    if initial {
                        want.push(acc);
                    }
                    for r in 0..rows {
                        let z = at(c, r);
                        acc = if product {
                            mul(acc, z)
                        } else {
                            (acc.0 + z.0, acc.1 + z.1)
                        };
                        want.push(acc);
                    }
                }
                let what = format!(
                    "{} {rows}x{cols} initial={initial}",
                    if product { "cumprod" } else { "cumsum" }
                );
                close_all(&what, &got.to_complex_vec().unwrap(), &want, 1e-5);
            }
        }
    }
}

#[test]
fn matmul_against_f64() {
    let dev = dev_or_skip!();
    for &(m, k, n) in &[(1usize, 1usize, 1usize), (3, 5, 2), (17, 33, 9), (4, 0, 3)] {
        let a = inputs(m * k, 3 + m as u64);
        let b = inputs(k * n, 4 + n as u64);
        let x = Array::from_complex(&dev, &host(&a), &[m, k]).unwrap();
        // The second operand read transposed: a (n, k) array's transpose.
        let bt: Vec<C> = (0..n * k).map(|j| b[(j % k) * n + j / k]).collect();
        let y = Array::from_complex(&dev, &host(&bt), &[n, k])
            .unwrap()
            .matrix_transpose()
            .unwrap();
        let got = x.matmul(&y).unwrap();
        assert_eq!(got.shape(), &[m, n]);
        let mut want = vec![(0.0, 0.0); m * n];
        let mut scale = vec![0.0f64; m * n];
        for i in 0..m {
            for j in 0..n {
                for l in 0..k {
                    let p = mul(a[i * k + l], b[l * n + j]);
                    want[i * n + j].0 += p.0;
                    want[i * n + j].1 += p.1;
                    scale[i * n + j] += p.0.hypot(p.1);
                }
            }
        }
        let got = got.to_complex_vec().unwrap();
        for (idx, (g, w)) in got.iter().zip(&want).enumerate() {
            let e = (g.0 - w.0).hypot(g.1 - w.1);
            assert!(
                e <= 1e-5 * scale[idx].max(1e-30),
                "matmul {m}x{k}x{n}[{idx}]: got {g:?}, want {w:?}"
            );
        }
        // A real operand with a complex one gives complex64.
        let r = Array::from_f64(
            &dev,
            &vec![1.5; k * n],
            &[k, n],
            suanli::array::DType::Float32,
        )
        .unwrap();
        let mixed = x.matmul(&r).unwrap();
        assert_eq!(mixed.dtype(), suanli::array::DType::Complex64);
        let row: Vec<C> = (0..m * n)
            .map(|idx| {
                let i = idx / n;
                (0..k).fold((0.0, 0.0), |s, l| {
                    (s.0 + 1.5 * a[i * k + l].0, s.1 + 1.5 * a[i * k + l].1)
                })
            })
            .collect();
        close_all(
            "real @ complex",
            &mixed.to_complex_vec().unwrap(),
            &row,
            1e-5,
        );
    }
}

#[test]
fn sums_keep_each_part_when_the_other_is_infinite() {
    // Σ re and Σ im are joined part by part: re + im·1j would make inf·0 = NaN the real part.
    let dev = dev_or_skip!();
    let x = Array::from_complex(&dev, &[(1.0, f32::INFINITY), (2.0, -1.0)], &[2]).unwrap();
    let s = x.sum(None, false).unwrap().to_complex_vec().unwrap();
    assert_eq!(s, [(3.0, f64::INFINITY)]);
    let c = x
        .cumulative_sum(0, false)
        .unwrap()
        .to_complex_vec()
        .unwrap();
    assert_eq!(c, [(1.0, f64::INFINITY), (3.0, f64::INFINITY)]);
    let y = Array::from_complex(&dev, &[(f32::NEG_INFINITY, 1.0), (0.5, 2.0)], &[2]).unwrap();
    let c = y.cumulative_sum(0, true).unwrap().to_complex_vec().unwrap();
    assert_eq!(
        c,
        [
            (0.0, 0.0),
            (f64::NEG_INFINITY, 1.0),
            (f64::NEG_INFINITY, 3.0)
        ]
    );
}
