//! Reductions against f64 references: every reduction over every subset of axes of a
//! ragged 3-D array (kept or dropped), on strided views and on fused expressions, the
//! chunked path (few outputs, many elements each), empty reductions, determinism, and the
//! statistics (`mean`, `var`, `std` with a correction).

mod common;

use common::arrays::{assert_close, fit, upload, values};
use suanli::array::{Array, DType, Reduce};

const SHAPE: [usize; 3] = [3, 5, 7];

/// The reference of `op` over `axes` of a row-major host array of `shape`.
fn reference(op: Reduce, d: DType, vals: &[f64], shape: &[usize], axes: &[usize]) -> Vec<f64> {
    let kept: Vec<usize> = (0..shape.len()).filter(|a| !axes.contains(a)).collect();
    let n_out: usize = kept.iter().map(|&a| shape[a]).product();
    let mut groups: Vec<Vec<f64>> = vec![Vec::new(); n_out];
    for (i, &v) in vals.iter().enumerate() {
        let mut rem = i;
        let mut coords = vec![0; shape.len()];
        for a in (0..shape.len()).rev() {
            coords[a] = rem % shape[a];
            rem /= shape[a];
        }
        let mut o = 0;
        for &a in &kept {
            o = o * shape[a] + coords[a];
        }
        groups[o].push(v);
    }
    let acc = match (op, d) {
        (Reduce::Sum | Reduce::Prod, DType::Float32) => DType::Float32,
        (Reduce::Sum | Reduce::Prod, DType::UInt8 | DType::UInt16 | DType::UInt32) => DType::UInt32,
        (Reduce::Sum | Reduce::Prod, _) => DType::Int32,
        (Reduce::Any | Reduce::All, _) => DType::Bool,
        (Reduce::ArgMin | Reduce::ArgMax, _) => DType::Int32,
        _ => d,
    };
    groups
        .iter()
        .map(|g| {
            let v = match op {
                Reduce::Sum => g.iter().sum(),
                Reduce::Prod => g.iter().fold(1.0, |a, &b| fit(acc, a * b)),
                Reduce::Min => g.iter().cloned().fold(f64::INFINITY, f64::min),
                Reduce::Max => g.iter().cloned().fold(f64::NEG_INFINITY, f64::max),
                Reduce::Any => g.iter().any(|&v| v != 0.0) as u8 as f64,
                Reduce::All => g.iter().all(|&v| v != 0.0) as u8 as f64,
                Reduce::ArgMin | Reduce::ArgMax => {
                    let mut best = 0;
                    for (i, &v) in g.iter().enumerate() {
                        let better = if op == Reduce::ArgMax {
                            v > g[best]
                        } else {
                            v < g[best]
                        };
                        if better {
                            best = i;
                        }
                    }
                    best as f64
                }
            };
            fit(acc, v)
        })
        .collect()
}

fn subsets(n: usize) -> Vec<Vec<usize>> {
    (0..1usize << n)
        .map(|m| (0..n).filter(|i| m >> i & 1 == 1).collect())
        .collect()
}

#[test]
fn every_reduction_over_every_subset_of_axes() {
    let dev = dev_or_skip!();
    let ops = [
        Reduce::Sum,
        Reduce::Prod,
        Reduce::Min,
        Reduce::Max,
        Reduce::Any,
        Reduce::All,
        Reduce::ArgMin,
        Reduce::ArgMax,
    ];
    for d in [
        DType::Float32,
        DType::Int32,
        DType::Int8,
        DType::UInt16,
        DType::Bool,
    ] {
        let n: usize = SHAPE.iter().product();
        let (lo, hi) = if d == DType::Bool {
            (0.0, 1.0)
        } else {
            (-3.0_f64.max(d.range().0), 3.0)
        };
        let vals = values(d, n, 5, lo, hi);
        let x = upload(&dev, d, &vals, &SHAPE);
        for op in ops {
            if op == Reduce::Prod && d == DType::Float32 {
                // Products of 105 values of up to 3 overflow; checked on a narrower range below.
                continue;
            }
            for axes in subsets(3) {
                let arg = matches!(op, Reduce::ArgMin | Reduce::ArgMax);
                if arg && axes.len() > 1 && axes.len() < 3 {
                    assert!(x
                        .reduce(
                            op,
                            Some(&axes.iter().map(|&a| a as isize).collect::<Vec<_>>()),
                            false
                        )
                        .is_err());
                    continue;
                }
                let ax: Vec<isize> = axes.iter().map(|&a| a as isize).collect();
                let axes_arg = if axes.len() == 3 && arg {
                    None
                } else {
                    Some(ax.as_slice())
                };
                for keep in [false, true] {
                    let y = x.reduce(op, axes_arg, keep).unwrap();
                    let want_shape: Vec<usize> = (0..3)
                        .filter_map(|a| {
                            if axes.contains(&a) {
                                keep.then_some(1)
                            } else {
                                Some(SHAPE[a])
                            }
                        })
                        .collect();
                    assert_eq!(
                        y.shape(),
                        want_shape.as_slice(),
                        "{op:?} {axes:?} keepdims {keep}"
                    );
                    let want = reference(op, d, &vals, &SHAPE, &axes);
                    assert_close(
                        &format!("{op:?}({d}) over {axes:?}"),
                        y.dtype(),
                        &y.to_f64_vec().unwrap(),
                        &want,
                        2e-7,
                        1e-6,
                    );
                }
            }
        }
    }
    let p = values(DType::Float32, 105, 9, 0.8, 1.2);
    let x = upload(&dev, DType::Float32, &p, &SHAPE);
    let y = x.reduce(Reduce::Prod, Some(&[0, 2]), false).unwrap();
    assert_close(
        "prod",
        DType::Float32,
        &y.to_f64_vec().unwrap(),
        &reference(Reduce::Prod, DType::Float32, &p, &SHAPE, &[0, 2]),
        2e-6,
        0.0,
    );
}

#[test]
fn views_expressions_and_the_chunked_path() {
    let dev = dev_or_skip!();
    // A fused operand read through a transposed view: Σ over axis 0 of (xᵀ · 2 + 1).
    let vals = values(DType::Float32, 35, 2, -1.0, 1.0);
    let x = upload(&dev, DType::Float32, &vals, &[5, 7]);
    let e = x
        .matrix_transpose()
        .unwrap()
        .mul_scalar(2.0)
        .unwrap()
        .add_scalar(1.0)
        .unwrap();
    assert!(!e.is_evaluated());
    let s = e.sum(Some(&[0]), false).unwrap().to_f64_vec().unwrap();
    let want: Vec<f64> = (0..5)
        .map(|i| (0..7).map(|j| vals[i * 7 + j] * 2.0 + 1.0).sum())
        .collect();
    assert_close("sum of a fused view", DType::Float32, &s, &want, 1e-6, 1e-6);
    // Few outputs, many elements: split into chunks, combined in order. Max/argmax with the
    // largest value late, and a NaN that must win.
    let n = 300_001;
    let mut big = values(DType::Float32, n, 3, -1.0, 1.0);
    big[250_000] = 5.0;
    let b = upload(&dev, DType::Float32, &big, &[n]);
    assert_eq!(
        b.reduce(Reduce::Max, None, false)
            .unwrap()
            .to_f64_vec()
            .unwrap(),
        vec![5.0]
    );
    assert_eq!(
        b.reduce(Reduce::ArgMax, None, false)
            .unwrap()
            .to_f64_vec()
            .unwrap(),
        vec![250_000.0]
    );
    let total = b.sum(None, false).unwrap();
    let exact: f64 = big.iter().sum();
    let got = total.to_f64_vec().unwrap()[0];
    assert!(
        (got - exact).abs()
            <= 2.0 * f32::EPSILON as f64 * big.iter().map(|v| v.abs()).sum::<f64>()
                / (n as f64).sqrt()
                + 1e-6,
        "sum {got} vs {exact}: compensated summation keeps it near the rounding of the result"
    );
    // Determinism: the same bits every run.
    let again = b.sum(None, false).unwrap().to_f64_vec().unwrap()[0];
    assert_eq!(got.to_bits(), again.to_bits());
    big[100] = f64::NAN;
    let bn = upload(&dev, DType::Float32, &big, &[n]);
    assert!(bn
        .reduce(Reduce::Max, None, false)
        .unwrap()
        .to_f64_vec()
        .unwrap()[0]
        .is_nan());
    assert_eq!(
        bn.reduce(Reduce::ArgMin, None, false)
            .unwrap()
            .to_f64_vec()
            .unwrap(),
        vec![100.0]
    );
    // Ties go to the first position, also across chunks: chunk c holds c, c + C, … (C = 293
    // for this length), so position 293 is in chunk 0 and 292 in the last chunk.
    let mut tie = vec![0.0; n];
    tie[292] = 1.0;
    tie[293] = 1.0;
    tie[299_000] = 1.0;
    let t = upload(&dev, DType::Float32, &tie, &[n]);
    assert_eq!(
        t.reduce(Reduce::ArgMax, None, false)
            .unwrap()
            .to_f64_vec()
            .unwrap(),
        vec![292.0]
    );
    assert_eq!(
        t.reduce(Reduce::ArgMin, None, false)
            .unwrap()
            .to_f64_vec()
            .unwrap(),
        vec![0.0]
    );
    let ti = upload(&dev, DType::Int32, &tie, &[n]);
    assert_eq!(
        ti.reduce(Reduce::ArgMax, None, false)
            .unwrap()
            .to_f64_vec()
            .unwrap(),
        vec![292.0]
    );
    // Empty reductions: identities, or an error where there is none.
    let z = Array::zeros(&dev, &[0, 3], DType::Float32).unwrap();
    assert_eq!(
        z.sum(Some(&[0]), false).unwrap().to_f64_vec().unwrap(),
        vec![0.0; 3]
    );
    assert_eq!(
        z.reduce(Reduce::Prod, Some(&[0]), false)
            .unwrap()
            .to_f64_vec()
            .unwrap(),
        vec![1.0; 3]
    );
    assert_eq!(z.sum(Some(&[1]), false).unwrap().shape(), &[0]);
    let e = z
        .reduce(Reduce::Max, Some(&[0]), false)
        .unwrap_err()
        .to_string();
    assert!(e.contains("identity"), "{e}");
    assert!(x.sum(Some(&[2]), false).is_err(), "axis out of range");
    assert!(x.sum(Some(&[0, -2]), false).is_err(), "repeated axis");
}

#[test]
fn mean_var_std_match_the_two_pass_reference() {
    let dev = dev_or_skip!();
    let vals = values(DType::Float32, 105, 8, 100.0, 101.0);
    let x = upload(&dev, DType::Float32, &vals, &SHAPE);
    for axes in [vec![0isize], vec![1, 2], vec![0, 1, 2]] {
        let ax: Vec<usize> = axes.iter().map(|&a| a as usize).collect();
        let count: usize = ax.iter().map(|&a| SHAPE[a]).product();
        let sums = reference(Reduce::Sum, DType::Float32, &vals, &SHAPE, &ax);
        let mean: Vec<f64> = sums.iter().map(|s| s / count as f64).collect();
        let got = x.mean(Some(&axes), false).unwrap().to_f64_vec().unwrap();
        assert_close("mean", DType::Float32, &got, &mean, 2e-7, 0.0);
        for corr in [0.0, 1.0] {
            // f64 two-pass variance per group.
            let kept: Vec<usize> = (0..3).filter(|a| !ax.contains(a)).collect();
            let mut var = vec![0.0; mean.len()];
            for (i, &v) in vals.iter().enumerate() {
                let c = [i / 35, i / 7 % 5, i % 7];
                let o = kept.iter().fold(0, |o, &a| o * SHAPE[a] + c[a]);
                var[o] += (v - mean[o]).powi(2);
            }
            let var: Vec<f64> = var.iter().map(|s| s / (count as f64 - corr)).collect();
            let got = x.var(Some(&axes), corr, true).unwrap();
            assert_eq!(got.ndim(), 3);
            assert_close(
                "var",
                DType::Float32,
                &got.to_f64_vec().unwrap(),
                &var,
                1e-4,
                1e-9,
            );
            let sd: Vec<f64> = var.iter().map(|v| v.sqrt()).collect();
            assert_close(
                "std",
                DType::Float32,
                &x.std(Some(&axes), corr, false)
                    .unwrap()
                    .to_f64_vec()
                    .unwrap(),
                &sd,
                5e-5,
                1e-9,
            );
        }
    }
    // Equal values deviate by nothing, whatever the float32 mean's rounding (the mean of
    // three 682.6986 is an ulp off; the deviations' sum takes it out).
    for v in [682.6986f32 as f64, 1e4 + 0.1f32 as f64, -3.3e-3f32 as f64] {
        let c = upload(&dev, DType::Float32, &[v; 3], &[1, 3]);
        for corr in [0.0, 1.0] {
            let sd = c
                .std(Some(&[1]), corr, false)
                .unwrap()
                .to_f64_vec()
                .unwrap();
            assert!(sd[0] <= 1e-9 * v.abs(), "std of three {v}: {}", sd[0]);
        }
    }
    // Integers average as float32.
    let i = upload(&dev, DType::Int8, &[1.0, 2.0, 4.0], &[3]);
    let m = i.mean(None, false).unwrap();
    assert_eq!(m.dtype(), DType::Float32);
    assert!((m.to_f64_vec().unwrap()[0] - 7.0 / 3.0).abs() < 1e-6);
}
