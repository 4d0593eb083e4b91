//! Layer normalisation's kernels against the f64 reference: the forward pass (output and the
//! saved row statistics), the input gradient (with and without the previous layer's gate) and
//! the parameter gradients, on 1, 7, 65 and 257 rows (257 crosses a chunk of the parameter
//! gradients' reduction) of widths 1, 3, 24, 64, 128 and 385 (below, at and past the 64
//! invocations a row gets on a GPU), with γ and β each on and off, each row given 64, 4 or 1
//! invocations; then rows far from zero (mean 50),
//! where a one-pass variance would lose its digits. Outputs are poisoned with NaN first. The
//! reference's gradients are checked by finite differences of its forward pass in f64; a
//! shape one work-group past the grid's 65,535 checks the spill onto y; and two runs of the
//! backward pass must agree to the bit (no reduction depends on thread timing).

mod common;

use common::{assert_rel_l2, random_vec, rel_l2};
use suanli::exec::Recorder;
use suanli::internals::kernels::layernorm::{self, LnShape};
use suanli::internals::reference;
use suanli::{Activation, Device, Tensor};

const EPS: f64 = 1e-3;
/// Relative L2 error allowed of rows around zero: f32 rounding over a reduction of a few
/// hundred terms, with room.
const TOL: f64 = 1e-5;

fn t(dev: &Device, v: &[f32]) -> Tensor {
    Tensor::from_slice(dev, v, &[v.len().max(1)]).unwrap()
}

fn nan(dev: &Device, n: usize) -> Tensor {
    t(dev, &vec![f32::NAN; n])
}

/// Random rows in [-1, 1), every other one moved by `offset`.
fn rows_of(rows: usize, cols: usize, seed: u64, offset: f32) -> Vec<f32> {
    random_vec(rows * cols, seed)
        .iter()
        .enumerate()
        .map(|(i, v)| if (i / cols) % 2 == 1 { offset + v } else { *v })
        .collect()
}

/// What one run of the three kernels gave.
struct Run {
    y: Vec<f32>,
    stats: Vec<f32>,
    dx: Vec<f32>,
    dx_gated: Vec<f32>,
    dgamma: Vec<f32>,
    dbeta: Vec<f32>,
}

fn run(dev: &Device, s: &LnShape, x: &[f32], ps: (&[f32], &[f32]), dy: &[f32], gy: &[f32]) -> Run {
    let (rows, c) = (s.rows, s.cols);
    let (xt, gt, bt, dyt, gyt) = (
        t(dev, x),
        t(dev, ps.0),
        t(dev, ps.1),
        t(dev, dy),
        t(dev, gy),
    );
    let (y, stats, part) = (
        nan(dev, rows * c),
        nan(dev, s.stats()),
        nan(dev, s.partials()),
    );
    let (dx, dxg, dg, db) = (
        nan(dev, rows * c),
        nan(dev, rows * c),
        nan(dev, c),
        nan(dev, c),
    );
    let g = s.scale.then(|| gt.buffer());
    let b = s.center.then(|| bt.buffer());
    let mut rec = Recorder::new(dev);
    layernorm::forward(&mut rec, s, xt.buffer(), g, b, y.buffer(), stats.buffer()).unwrap();
    let (d, xb, st) = (dyt.buffer(), xt.buffer(), stats.buffer());
    layernorm::backward(&mut rec, s, d, xb, g, st, None, dx.buffer()).unwrap();
    let gate = Some((Activation::Relu, gyt.buffer()));
    layernorm::backward(&mut rec, s, d, xb, g, st, gate, dxg.buffer()).unwrap();
    let (pb, dgb, dbb) = (part.buffer(), dg.buffer(), db.buffer());
    layernorm::params_backward(&mut rec, s, d, xb, st, pb, dgb, dbb).unwrap();
    rec.submit().unwrap();
    Run {
        y: y.to_vec().unwrap(),
        stats: stats.to_vec().unwrap(),
        dx: dx.to_vec().unwrap(),
        dx_gated: dxg.to_vec().unwrap(),
        dgamma: dg.to_vec().unwrap(),
        dbeta: db.to_vec().unwrap(),
    }
}

/// Checks one shape against the reference, every other row moved by `offset`, to relative
/// L2 error `tol` (grown with the square root of the rows for the sums over rows); returns
/// the largest error seen.
fn check(dev: &Device, s: &LnShape, seed: u64, offset: f32, tol: f64) -> f64 {
    let (rows, c) = (s.rows, s.cols);
    let x = rows_of(rows, c, seed, offset);
    let gamma: Vec<f32> = random_vec(c, seed + 1).iter().map(|v| 1.0 + v).collect();
    let beta = random_vec(c, seed + 2);
    let dy = random_vec(rows * c, seed + 3);
    let gy = random_vec(rows * c, seed + 4);
    let got = run(dev, s, &x, (&gamma, &beta), &dy, &gy);
    let what = format!(
        "layernorm rows {rows} cols {c} scale {} center {} offset {offset}",
        s.scale, s.center
    );
    let (gr, br) = (s.scale.then_some(&gamma[..]), s.center.then_some(&beta[..]));
    let (mean, rstd) = reference::layernorm_stats(&x, c, EPS);
    let want_y = reference::layernorm(&x, c, gr, br, EPS);
    let (want_dx, want_dg, want_db) = reference::layernorm_backward(&dy, &x, c, gr, EPS);
    let gated: Vec<f64> = want_dx
        .iter()
        .zip(&gy)
        .map(|(d, &y)| if y > 0.0 { *d } else { 0.0 })
        .collect();
    let tol_rows = tol * (rows as f64 / 64.0).sqrt().max(1.0);
    let checks: [(&str, &[f32], &[f64], f64); 7] = [
        ("y", &got.y, &want_y, tol),
        ("mean", &got.stats[..rows], &mean, tol),
        ("1/sqrt(var+eps)", &got.stats[rows..], &rstd, tol),
        ("dx", &got.dx, &want_dx, tol),
        ("dx gated", &got.dx_gated, &gated, tol),
        ("dgamma", &got.dgamma, &want_dg, tol_rows),
        ("dbeta", &got.dbeta, &want_db, tol_rows),
    ];
    let mut worst: f64 = 0.0;
    for (name, out, want, tol) in checks {
        assert_rel_l2(&format!("{what}: {name}"), out, want, tol);
        worst = worst.max(rel_l2(out, want));
    }
    worst
}

#[test]
fn forward_and_backward_against_the_reference() {
    let dev = dev_or_skip!();
    let mut seed = 1;
    let mut worst: f64 = 0.0;
    for rows in [1usize, 7, 65, 257] {
        for cols in [1usize, 3, 24, 64, 128, 385] {
            for (scale, center) in [(true, true), (false, false), (true, false), (false, true)] {
                // Each row spread over a work-group, a few invocations, or one.
                for lanes in [Some(64), Some(4), Some(1)] {
                    seed += 10;
                    let s = LnShape {
                        rows,
                        cols,
                        eps: EPS as f32,
                        scale,
                        center,
                        lanes,
                    };
                    worst = worst.max(check(&dev, &s, seed, 0.0, TOL));
                }
            }
        }
    }
    eprintln!("layernorm kernels: largest relative L2 error {worst:.2e}");
}

/// Rows far from zero (every other one at mean 50, spread 1): the input's own rounding there
/// (half an ulp of 50 is 1.9e-6) limits any f32 kernel to about 1e-5 of a deviation, so the
/// tolerance is 5e-5; a one-pass variance, E[x²] − E[x]² with E[x²] ≈ 2500, would be off by
/// about 1e-3 and fail.
#[test]
fn rows_far_from_zero() {
    let dev = dev_or_skip!();
    let mut worst: f64 = 0.0;
    for (rows, cols) in [(7usize, 24usize), (65, 64), (257, 385)] {
        for lanes in [Some(64), Some(1)] {
            let s = LnShape {
                rows,
                cols,
                eps: EPS as f32,
                scale: true,
                center: true,
                lanes,
            };
            worst = worst.max(check(&dev, &s, 40 + rows as u64, 50.0, 5e-5));
        }
    }
    eprintln!("layernorm kernels, rows at mean 50: largest relative L2 error {worst:.2e}");
}

#[test]
fn rows_past_one_grid_dimension() {
    let dev = dev_or_skip!();
    let rows = 65_536 + 1;
    // A work-group per row, so the grid passes 65,535 work-groups.
    let s = LnShape {
        rows,
        cols: 2,
        eps: EPS as f32,
        scale: true,
        center: true,
        lanes: Some(64),
    };
    let worst = check(&dev, &s, 7, 0.0, TOL);
    eprintln!("layernorm, {rows} rows: largest relative L2 error {worst:.2e}");
}

#[test]
fn backward_is_bitwise_repeatable() {
    let dev = dev_or_skip!();
    let s = LnShape {
        rows: 600,
        cols: 385,
        eps: EPS as f32,
        scale: true,
        center: true,
        lanes: None,
    };
    let x = rows_of(s.rows, s.cols, 3, 50.0);
    let (gamma, beta) = (random_vec(s.cols, 4), random_vec(s.cols, 5));
    let dy = random_vec(s.rows * s.cols, 6);
    let a = run(&dev, &s, &x, (&gamma, &beta), &dy, &dy);
    let b = run(&dev, &s, &x, (&gamma, &beta), &dy, &dy);
    let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
    for (name, p, q) in [
        ("y", &a.y, &b.y),
        ("dx", &a.dx, &b.dx),
        ("dgamma", &a.dgamma, &b.dgamma),
        ("dbeta", &a.dbeta, &b.dbeta),
    ] {
        assert_eq!(bits(p), bits(q), "{name} differs between two runs");
    }
}

/// `Σ dy ⊙ layernorm(x)` in f64 on f64 inputs.
fn objective(x: &[f64], cols: usize, gamma: &[f64], beta: &[f64], dy: &[f32]) -> f64 {
    x.chunks(cols)
        .enumerate()
        .map(|(r, row)| {
            let n = cols as f64;
            let mean = row.iter().sum::<f64>() / n;
            let var = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / n;
            let s = 1.0 / (var + EPS).sqrt();
            (0..cols)
                .map(|c| (gamma[c] * (row[c] - mean) * s + beta[c]) * dy[r * cols + c] as f64)
                .sum::<f64>()
        })
        .sum()
}

#[test]
fn reference_gradients_match_finite_differences() {
    for (rows, cols) in [(1usize, 1usize), (3, 5), (4, 24)] {
        let x = rows_of(rows, cols, 21, 50.0);
        let gamma: Vec<f32> = random_vec(cols, 22).iter().map(|v| 1.0 + v).collect();
        let beta = random_vec(cols, 23);
        let dy = random_vec(rows * cols, 24);
        let (dx, dg, db) = reference::layernorm_backward(&dy, &x, cols, Some(&gamma), EPS);
        let f64s = |v: &[f32]| v.iter().map(|&a| a as f64).collect::<Vec<f64>>();
        let (xd, gd, bd) = (f64s(&x), f64s(&gamma), f64s(&beta));
        let h = 1e-5;
        // Central differences of each input of `objective`, perturbed in place.
        let fd = |which: usize, i: usize| {
            let mut v = [xd.clone(), gd.clone(), bd.clone()];
            v[which][i] += h;
            let up = objective(&v[0], cols, &v[1], &v[2], &dy);
            v[which][i] -= 2.0 * h;
            let down = objective(&v[0], cols, &v[1], &v[2], &dy);
            (up - down) / (2.0 * h)
        };
        for (which, name, analytic) in [(0, "dx", &dx), (1, "dgamma", &dg), (2, "dbeta", &db)] {
            let numeric: Vec<f64> = (0..analytic.len()).map(|i| fd(which, i)).collect();
            let as_f32: Vec<f32> = analytic.iter().map(|&a| a as f32).collect();
            assert_rel_l2(
                &format!("reference {name}, rows {rows} cols {cols}"),
                &as_f32,
                &numeric,
                1e-5,
            );
        }
    }
}
