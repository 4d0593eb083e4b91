//! Batch normalisation against the f64 reference (two-pass moments): the training pass
//! (normalised output, batch statistics, moving statistics updated with the momentum), the
//! inference pass (moving statistics), and the backward pass (dx with and without the
//! previous layer's gate, dγ, dβ), with γ and β on and off, on rows that fill one chunk, cross
//! chunk boundaries, or are one, and 1, 3 and 17 channels. Values far from zero (mean 50)
//! check that the variance does not cancel. Outputs are poisoned with NaN first.

mod common;

use common::{assert_rel_l2, random_vec};
use suanli::exec::Recorder;
use suanli::internals::kernels::batchnorm::{self, BnShape};
use suanli::internals::reference;
use suanli::{Activation, Device, Tensor};

fn t(dev: &Device, v: &[f32]) -> Tensor {
    Tensor::from_slice(dev, v, &[v.len().max(1)]).unwrap()
}

fn nan(dev: &Device, n: usize) -> Tensor {
    t(dev, &vec![f32::NAN; n])
}

const EPS: f64 = 1e-3;
const MOMENTUM: f32 = 0.99;

#[test]
fn training_inference_and_backward_against_the_reference() {
    let dev = dev_or_skip!();
    let mut seed = 1;
    for &(rows, c, affine) in &[
        (1usize, 3usize, true),
        (7, 1, true),
        (512, 3, false),
        (1200, 17, true),
        (2050, 5, true),
    ] {
        seed += 10;
        let s = BnShape {
            rows,
            channels: c,
            eps: EPS as f32,
            momentum: MOMENTUM,
            scale: affine,
            center: affine,
        };
        // Far from zero, spread 1: E[x²] − E[x]² would lose digits here.
        let x: Vec<f32> = random_vec(rows * c, seed)
            .iter()
            .map(|v| 50.0 + v)
            .collect();
        let gamma = random_vec(c, seed + 1);
        let beta = random_vec(c, seed + 2);
        let (mm0, mv0) = (random_vec(c, seed + 3), vec![0.8f32; c]);
        let dy = random_vec(rows * c, seed + 4);
        let gy: Vec<f32> = random_vec(rows * c, seed + 5)
            .iter()
            .map(|v| v.abs() + 0.01)
            .collect();
        let (xt, gt, bt, mm, mv) = (
            t(&dev, &x),
            t(&dev, &gamma),
            t(&dev, &beta),
            t(&dev, &mm0),
            t(&dev, &mv0),
        );
        let (part, stats, y, yi) = (
            nan(&dev, s.partials()),
            nan(&dev, 2 * c),
            nan(&dev, rows * c),
            nan(&dev, rows * c),
        );
        let (dyt, gyt, dg, db, dx) = (
            t(&dev, &dy),
            t(&dev, &gy),
            nan(&dev, c),
            nan(&dev, c),
            nan(&dev, rows * c),
        );
        let dxg = nan(&dev, rows * c);
        let (g, b) = if affine {
            (Some(gt.buffer()), Some(bt.buffer()))
        } else {
            (None, None)
        };
        let mut rec = Recorder::new(&dev);
        batchnorm::train_forward(
            &mut rec,
            &s,
            xt.buffer(),
            g,
            b,
            (mm.buffer(), mv.buffer()),
            part.buffer(),
            stats.buffer(),
            y.buffer(),
        )
        .unwrap();
        batchnorm::backward(
            &mut rec,
            &s,
            dyt.buffer(),
            xt.buffer(),
            g,
            stats.buffer(),
            part.buffer(),
            (dg.buffer(), db.buffer()),
            None,
            dx.buffer(),
        )
        .unwrap();
        let gate = Some((Activation::Relu, gyt.buffer()));
        batchnorm::backward(
            &mut rec,
            &s,
            dyt.buffer(),
            xt.buffer(),
            g,
            stats.buffer(),
            part.buffer(),
            (dg.buffer(), db.buffer()),
            gate,
            dxg.buffer(),
        )
        .unwrap();
        rec.submit().unwrap();
        // Inference with the moving statistics as the training pass left them.
        let mut rec = Recorder::new(&dev);
        batchnorm::inference(
            &mut rec,
            &s,
            xt.buffer(),
            g,
            b,
            (mm.buffer(), mv.buffer()),
            yi.buffer(),
        )
        .unwrap();
        rec.submit().unwrap();

        let what = format!("batchnorm rows {rows} channels {c} affine {affine}");
        let (gr, br) = if affine {
            (Some(&gamma[..]), Some(&beta[..]))
        } else {
            (None, None)
        };
        let (mean, var) = reference::moments(&x, rows, c);
        let want_y = reference::batchnorm(&x, c, gr, br, &mean, &var, EPS);
        assert_rel_l2(&format!("{what}: y"), &y.to_vec().unwrap(), &want_y, 1e-4);
        let st = stats.to_vec().unwrap();
        assert_rel_l2(&format!("{what}: mean"), &st[..c], &mean, 1e-6);
        let inv: Vec<f64> = var.iter().map(|v| 1.0 / (v + EPS).sqrt()).collect();
        assert_rel_l2(&format!("{what}: 1/sqrt(var+eps)"), &st[c..], &inv, 1e-4);
        let m = MOMENTUM as f64;
        let want_mm: Vec<f64> = mm0
            .iter()
            .zip(&mean)
            .map(|(&a, b)| a as f64 * m + b * (1.0 - m))
            .collect();
        let want_mv: Vec<f64> = mv0
            .iter()
            .zip(&var)
            .map(|(&a, b)| a as f64 * m + b * (1.0 - m))
            .collect();
        assert_rel_l2(
            &format!("{what}: moving mean"),
            &mm.to_vec().unwrap(),
            &want_mm,
            1e-6,
        );
        assert_rel_l2(
            &format!("{what}: moving variance"),
            &mv.to_vec().unwrap(),
            &want_mv,
            1e-4,
        );
        let want_yi = reference::batchnorm(&x, c, gr, br, &want_mm, &want_mv, EPS);
        assert_rel_l2(
            &format!("{what}: inference"),
            &yi.to_vec().unwrap(),
            &want_yi,
            1e-4,
        );
        let (want_dx, want_dg, want_db) = reference::batchnorm_backward(&dy, &x, rows, c, gr, EPS);
        let tol = 1e-4 * (rows as f64 / 128.0).sqrt().max(1.0);
        assert_rel_l2(&format!("{what}: dγ"), &dg.to_vec().unwrap(), &want_dg, tol);
        assert_rel_l2(&format!("{what}: dβ"), &db.to_vec().unwrap(), &want_db, tol);
        if rows > 1 {
            assert_rel_l2(&format!("{what}: dx"), &dx.to_vec().unwrap(), &want_dx, tol);
            let gated: Vec<f64> = want_dx
                .iter()
                .zip(&gy)
                .map(|(d, &y)| if y > 0.0 { *d } else { 0.0 })
                .collect();
            assert_rel_l2(
                &format!("{what}: dx gated"),
                &dxg.to_vec().unwrap(),
                &gated,
                tol,
            );
        } else {
            // One row per channel: x̂ is 0 and the gradient through the mean cancels dy.
            assert!(
                dx.to_vec().unwrap().iter().all(|v| v.abs() < 1e-5),
                "{what}: dx"
            );
        }
    }
}
