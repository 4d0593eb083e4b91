//! Float16 operands at the layer level (`Precision::MixedFloat16`): a Conv2D → Flatten → Dense
//! model's prediction, and the gradients (`Model::gradients`) of two Dense layers and of two
//! Conv2D layers under MSE, against host references computed from the operands each product
//! of the device loads, rounded to binary16 on the host (the `half` crate): forward the input
//! and the weights, backward the incoming gradient with the weights (dx) or with the input
//! (dW, and db from the same loads of dy). tests/kernels_half.rs checks the kernels one by one.
//!
//! Where a reference needs an intermediate the device computed in f32 (a layer's output, the
//! loss's gradient), it reads that back from the device (a prediction of the first layers
//! alone, with the same weights under the policy) and rounds it, rather than rounding its own
//! f64 value: an element next to an f16 midpoint would otherwise round the other way. The
//! loss's gradient 2(y − t)/(B·cols) is computed from the device's y as the loss kernel does:
//! with B and cols powers of two, only y − t rounds. One intermediate has no read-back, the
//! gradient flowing into the first layer (dh): its f16 rounding on the host may differ from
//! the device's by an ulp at a few elements, so those checks allow a few f16 ulps' worth
//! (`TOL_FLIP`), far below the gap between f16 and f32 operands that each check asserts too.
//! Gradients do not scale the loss (`Model::gradients` runs without loss scaling).

mod common;

use common::matmul::tol;
use common::{assert_rel_l2, random_vec, rel_l2};
use suanli::data::Dataset;
use suanli::internals::reference::{self, ConvShape};
use suanli::nn::{Conv2D, Dense, Flatten, Loss, Optimizer, Sequential};
use suanli::{Activation, Layout, Precision, Tensor};

/// A few f16 ulps' worth of relative L2 error: one element of dh rounded an f16 ulp (2⁻¹⁰
/// relative) the other way moves a gradient from n such elements by about 2⁻¹⁰/√n, 2.3e-5
/// and 2.9e-5 here (n = 1856 and 1152); the f16-against-f32 gap the checks must tell apart
/// is 1.5e-4 to 5e-4 (measured on lavapipe).
const TOL_FLIP: f64 = 5e-5;

const SGD: Optimizer = Optimizer::Sgd {
    lr: 0.1,
    momentum: 0.0,
    nesterov: false,
};

fn r16(x: f32) -> f32 {
    half::f16::from_f32(x).to_f32()
}

fn r16s(v: &[f32]) -> Vec<f32> {
    v.iter().map(|&x| r16(x)).collect()
}

fn f32s(v: &[f64]) -> Vec<f32> {
    v.iter().map(|&x| x as f32).collect()
}

/// The model's weights, as host vectors.
fn weights(m: &Sequential) -> Vec<Vec<f32>> {
    m.weights()
        .iter()
        .map(|(_, t)| t.to_vec().unwrap())
        .collect()
}

/// The device's prediction of `m` under the policy.
fn predict16(m: &mut Sequential, x: &[f32], shape: &[usize]) -> Vec<f32> {
    m.set_precision_policy(Precision::MixedFloat16);
    let xt = Tensor::from_slice(m.device(), x, shape).unwrap();
    m.predict(&xt).unwrap().to_vec().unwrap()
}

/// MSE's gradient as the loss kernel computes it, `2·(y − t)·(1/B)·(1/cols)` in f32.
fn mse_grad(y: &[f32], t: &[f32], batch: usize) -> Vec<f32> {
    let cols = y.len() / batch;
    let (scale, inv_cols) = (1.0 / batch as f32, 1.0 / cols as f32);
    y.iter()
        .zip(t)
        .map(|(&y, &t)| 2.0 * (y - t) * scale * inv_cols)
        .collect()
}

/// The compiled model's gradients under the policy, in `weights` order.
fn gradients16(m: &mut Sequential, data: &Dataset) -> Vec<Vec<f32>> {
    m.compile(SGD, Loss::MeanSquaredError).unwrap();
    m.set_precision_policy(Precision::MixedFloat16);
    m.gradients(data)
        .unwrap()
        .iter()
        .map(|(_, g)| g.to_vec().unwrap())
        .collect()
}

/// `got` matches the f16 reference within `tol` and, with `far`, misses the f32 one by more
/// than 2·`tol`. (A bias gradient sums a column of dy's rounding errors, which partly
/// cancel: the first layers' are left out of the gap check, which their weight gradients,
/// from the same loads of dy, make.)
fn check(what: &str, got: &[f32], want16: &[f64], want32: &[f64], tol: f64, far: bool) {
    let (e, gap) = (rel_l2(got, want16), rel_l2(got, want32));
    println!("{what}: {e:.3e} from the f16 reference, {gap:.3e} from the f32 one (tol {tol:.1e})");
    assert_rel_l2(what, got, want16, tol);
    if far {
        assert!(
            gap > 2.0 * tol,
            "{what}: matches the f32 reference ({gap:.3e})"
        );
    }
}

/// aᵀ·b for a (k, m) and b (k, n) row-major: (m, n) in f64.
fn at_b(a: &[f32], b: &[f32], k: usize, m: usize, n: usize) -> Vec<f64> {
    let mut c = vec![0.0f64; m * n];
    for r in 0..k {
        for i in 0..m {
            for j in 0..n {
                c[i * n + j] += a[r * m + i] as f64 * b[r * n + j] as f64;
            }
        }
    }
    c
}

/// a·bᵀ for a (m, k) and b (n, k) row-major (a Dense kernel (inputs, units) is b for
/// dx = dy·Wᵀ): (m, n) in f64.
fn a_bt(a: &[f32], b: &[f32], m: usize, k: usize, n: usize) -> Vec<f64> {
    let mut c = vec![0.0f64; m * n];
    for i in 0..m {
        for j in 0..n {
            c[i * n + j] = (0..k)
                .map(|r| a[i * k + r] as f64 * b[j * k + r] as f64)
                .sum();
        }
    }
    c
}

/// Column sums of a (rows, n) matrix.
fn col_sums(a: &[f32], n: usize) -> Vec<f64> {
    let mut s = vec![0.0f64; n];
    for (i, &v) in a.iter().enumerate() {
        s[i % n] += v as f64;
    }
    s
}

/// A Conv2D → Flatten → Dense model under `MixedFloat16` predicts what the reference
/// computes from f16-rounded operands at each layer (the convolution's output as the device
/// wrote it, rounded again as the dense layer's input), and differs from its Float32
/// prediction within f16's precision only.
#[test]
fn a_mixed_float16_model_computes_with_f16_operands() {
    let Some(dev) = common::device() else { return };
    let (batch, h, w, c, oc, units) = (5, 6, 7, 2, 4, 9);
    let mut model = Sequential::with_seed(&dev, 3).input_shape(&[h, w, c]);
    model.add(Conv2D::new(oc, 3).activation("relu")).unwrap();
    model.add(Flatten::new()).unwrap();
    model.add(Dense::new(units, "linear")).unwrap();
    let weights = weights(&model);
    let x = random_vec(batch * h * w * c, 17);
    let xt = Tensor::from_slice(&dev, &x, &[batch, h, w, c]).unwrap();
    let f32_out = model.predict(&xt).unwrap().to_vec().unwrap();
    let out = predict16(&mut model, &x, &[batch, h, w, c]);
    // The convolution alone, its output read back.
    let mut conv = Sequential::with_seed(&dev, 3).input_shape(&[h, w, c]);
    conv.add(Conv2D::new(oc, 3).activation("relu")).unwrap();
    conv.set_weights(&[&weights[0], &weights[1]]).unwrap();
    let y1 = predict16(&mut conv, &x, &[batch, h, w, c]);
    let sh = ConvShape {
        batch,
        h,
        w,
        c,
        oc,
        kh: 3,
        kw: 3,
        sh: 1,
        sw: 1,
        dh: 1,
        dw: 1,
        same: false,
    };
    let y1_want = reference::conv2d(
        &r16s(&x),
        &r16s(&weights[0]),
        Some(&weights[1]),
        Activation::Relu,
        &sh,
    );
    assert_rel_l2("mixed_float16 conv", &y1, &y1_want, tol(9 * c));
    let flat = y1.len() / batch;
    let want = reference::matmul(
        &r16s(&y1),
        &r16s(&weights[2]),
        Some(&weights[3]),
        None,
        batch,
        units,
        flat,
        Layout::NN,
        Activation::Linear,
    );
    assert_rel_l2("mixed_float16 model", &out, &want, tol(flat));
    let e = rel_l2(&out, &f32_out.iter().map(|&v| v as f64).collect::<Vec<_>>());
    assert!(e > 1e-5 && e < 3e-3, "mixed against float32: {e:.3e}");
}

/// Dense → Dense (linear) under MSE: both layers' dW and db, and through the second layer's
/// dx the first's, from f16-rounded operands.
#[test]
fn dense_gradients_use_f16_operands() {
    let Some(dev) = common::device() else { return };
    // B and the output width powers of two: the loss's gradient rounds only at y − t.
    let (batch, d0, d1, d2) = (64, 37, 29, 8);
    let build = |second: bool| {
        let mut m = Sequential::with_seed(&dev, 11).input_shape(&[d0]);
        m.add(Dense::new(d1, "linear")).unwrap();
        if second {
            m.add(Dense::new(d2, "linear")).unwrap();
        }
        m
    };
    let mut model = build(true);
    let w = weights(&model);
    let x = random_vec(batch * d0, 21);
    let t = random_vec(batch * d2, 22);
    let mut first = build(false);
    first.set_weights(&[&w[0], &w[1]]).unwrap();
    let h = predict16(&mut first, &x, &[batch, d0]);
    let y = predict16(&mut model, &x, &[batch, d0]);
    let dy = mse_grad(&y, &t, batch);
    let data = Dataset::from_f32_targets(&dev, &x, d0, &t, d2).unwrap();
    let g = gradients16(&mut model, &data);
    // The second layer: dW = hᵀ·dy, db = Σ dy, dh = dy·Wᵀ.
    let (h16, dy16, w2_16) = (r16s(&h), r16s(&dy), r16s(&w[2]));
    let dw2 = (
        at_b(&h16, &dy16, batch, d1, d2),
        at_b(&h, &dy, batch, d1, d2),
    );
    check("dense 2 dW", &g[2], &dw2.0, &dw2.1, tol(batch), true);
    let db2 = (col_sums(&dy16, d2), col_sums(&dy, d2));
    check("dense 2 db", &g[3], &db2.0, &db2.1, tol(batch), true);
    let dh16 = r16s(&f32s(&a_bt(&dy16, &w2_16, batch, d2, d1)));
    let dh32 = f32s(&a_bt(&dy, &w[2], batch, d2, d1));
    // The first layer, from its dy: dh.
    let x16 = r16s(&x);
    let dw1 = (
        at_b(&x16, &dh16, batch, d0, d1),
        at_b(&x, &dh32, batch, d0, d1),
    );
    check("dense 1 dW", &g[0], &dw1.0, &dw1.1, TOL_FLIP, true);
    let db1 = (col_sums(&dh16, d1), col_sums(&dh32, d1));
    check("dense 1 db", &g[1], &db1.0, &db1.1, TOL_FLIP, false);
}

/// Conv2D (same) → Conv2D (valid), linear, under MSE: both layers' dW and db, and through
/// the second layer's backward data the first's, from f16-rounded operands.
#[test]
fn conv2d_gradients_use_f16_operands() {
    let Some(dev) = common::device() else { return };
    // The output 4×4×4 = 64 columns and B = 4: powers of two.
    let (batch, hw, c, c1, c2) = (4, 6, 2, 8, 4);
    let build = |second: bool| {
        let mut m = Sequential::with_seed(&dev, 13).input_shape(&[hw, hw, c]);
        m.add(Conv2D::new(c1, 3).padding("same")).unwrap();
        if second {
            m.add(Conv2D::new(c2, 3)).unwrap();
        }
        m
    };
    let shape = |c: usize, oc: usize, same: bool| ConvShape {
        batch,
        h: hw,
        w: hw,
        c,
        oc,
        kh: 3,
        kw: 3,
        sh: 1,
        sw: 1,
        dh: 1,
        dw: 1,
        same,
    };
    let (s1, s2) = (shape(c, c1, true), shape(c1, c2, false));
    let mut model = build(true);
    let w = weights(&model);
    let x = random_vec(batch * hw * hw * c, 31);
    let cols = (hw - 2) * (hw - 2) * c2;
    let t = random_vec(batch * cols, 32);
    let mut first = build(false);
    first.set_weights(&[&w[0], &w[1]]).unwrap();
    let h = predict16(&mut first, &x, &[batch, hw, hw, c]);
    let y = predict16(&mut model, &x, &[batch, hw, hw, c]);
    let dy = mse_grad(&y, &t, batch);
    let data = Dataset::from_f32_targets(&dev, &x, hw * hw * c, &t, cols)
        .unwrap()
        .with_sample_shape(&[hw, hw, c])
        .unwrap();
    let g = gradients16(&mut model, &data);
    let (h16, dy16) = (r16s(&h), r16s(&dy));
    let (dw2_16, db2_16) = reference::conv2d_backward_weights(&h16, &dy16, &s2);
    let (dw2_32, db2_32) = reference::conv2d_backward_weights(&h, &dy, &s2);
    let k2 = batch * cols / c2;
    check("conv 2 dW", &g[2], &dw2_16, &dw2_32, tol(k2), true);
    check("conv 2 db", &g[3], &db2_16, &db2_32, tol(k2), true);
    let dh16 = r16s(&f32s(&reference::conv2d_backward_data(
        &dy16,
        &r16s(&w[2]),
        &s2,
    )));
    let dh32 = f32s(&reference::conv2d_backward_data(&dy, &w[2], &s2));
    let (dw1_16, db1_16) = reference::conv2d_backward_weights(&r16s(&x), &dh16, &s1);
    let (dw1_32, db1_32) = reference::conv2d_backward_weights(&x, &dh32, &s1);
    check("conv 1 dW", &g[0], &dw1_16, &dw1_32, TOL_FLIP, true);
    check("conv 1 db", &g[1], &db1_16, &db1_32, TOL_FLIP, false);
}
