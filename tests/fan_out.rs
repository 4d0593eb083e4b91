//! Fan-out without a sum of its own: where a tensor is read by two Dense (or Conv2D) layers,
//! the second's input-gradient GEMM adds into the first's (one dispatch a step fewer than a separate add),
//! and the gradients stay those of the f64 check in tests/graph.rs (which plants nothing here:
//! its graph has a tensor read by two Dense layers and three merges).

mod common;

use suanli::data::Dataset;
use suanli::exec::ProfileClock;
use suanli::nn::{
    Add, Call, Conv2D, Dense, FitOptions, GlobalAveragePooling2D, Input, Loss, Model, Optimizer,
};

#[test]
fn two_dense_readers_of_a_tensor_sum_their_gradients_in_the_gemm() {
    let Some(dev) = common::own_device(None) else {
        return;
    };
    if dev.set_profiling_clock(ProfileClock::Timestamps).is_err() {
        return;
    }
    let x = Input::new(&[12]);
    let h = Dense::new(8, "tanh").call(&x).unwrap();
    let a = Dense::new(8, "tanh").call(&h).unwrap();
    let b = Dense::new(8, "tanh").call(&h).unwrap();
    let s = Add::new().call_on(&[&a, &b]).unwrap();
    let y = Dense::new(3, "softmax").call(&s).unwrap();
    let mut m = Model::functional(&dev, &[&x], &[&y]).unwrap();
    m.compile(Optimizer::sgd(0.1), Loss::SparseCategoricalCrossentropy)
        .unwrap();
    let data = common::noisy_classes(&dev, 320); // 10 steps of 32
    dev.reset_profile();
    dev.set_profiling(true);
    m.fit(
        &data,
        FitOptions {
            epochs: 1,
            batch_size: 32,
            ..Default::default()
        },
    )
    .unwrap();
    dev.set_profiling(false);
    let p = dev.profile();
    let calls: u64 = p.kernels.iter().map(|k| k.calls).sum::<u64>() + p.untimed;
    // The gather (features, labels: 2); forward: 4 matmuls and the add (5); the loss end (1);
    // backward: the output layer's input and weight gradients (2), the Add handing its
    // gradient to both inputs (0), tanh's derivative for a and b (a merge takes no gate: 2),
    // b's input gradient and weight gradient (2), a's input gradient added into b's in its
    // GEMM and its weight gradient (2), tanh's derivative for h (it fans out: 1), h's weight
    // gradient (1, its input is the model's): 18. A separate sum would make it 19.
    assert_eq!(calls as f64 / 10.0, 18.0, "{}", p.table(usize::MAX));
}

#[test]
fn two_conv_readers_of_a_tensor_sum_their_gradients_in_the_gemm() {
    let Some(dev) = common::own_device(None) else {
        return;
    };
    if dev.set_profiling_clock(ProfileClock::Timestamps).is_err() {
        return;
    }
    let x = Input::new(&[8, 8, 2]);
    let h = Conv2D::new(4, 3)
        .padding("same")
        .activation("tanh")
        .call(&x)
        .unwrap();
    let a = Conv2D::new(4, 3).padding("same").call(&h).unwrap();
    let b = Conv2D::new(4, 3).padding("same").call(&h).unwrap();
    let s = Add::new().call_on(&[&a, &b]).unwrap();
    let p = GlobalAveragePooling2D::new().call(&s).unwrap();
    let y = Dense::new(4, "softmax").call(&p).unwrap();
    let mut m = Model::functional(&dev, &[&x], &[&y]).unwrap();
    m.compile(Optimizer::sgd(0.1), Loss::SparseCategoricalCrossentropy)
        .unwrap();
    let (xs, ys) = common::images(64, (8, 8, 2), 4);
    let data = Dataset::from_f32(&dev, &xs, 128, &ys)
        .unwrap()
        .with_sample_shape(&[8, 8, 2])
        .unwrap();
    dev.reset_profile();
    dev.set_profiling(true);
    m.fit(
        &data,
        FitOptions {
            epochs: 1,
            batch_size: 16,
            ..Default::default()
        },
    )
    .unwrap();
    dev.set_profiling(false);
    let prof = dev.profile();
    // No elementwise add in the backward pass: the forward Add is the only binary op (one a
    // step), b's backward-data GEMM adds into a's (or a's into b's).
    let adds: u64 = prof
        .kernels
        .iter()
        .filter(|k| k.name.contains("binary_forward"))
        .map(|k| k.calls)
        .sum();
    assert_eq!(adds, 4, "{}", prof.table(usize::MAX));
}

/// Two linear convolutions of one tensor, added, are the convolution by the sum of their
/// kernels: after one SGD step, the layer before them (whose gradient is the fan-out's sum,
/// added in the second convolution's backward-data GEMM) moves exactly as it does under the
/// single convolution.
#[test]
fn a_conv_fan_out_sums_like_one_convolution_of_the_summed_kernels() {
    let Some(dev) = common::device() else {
        return;
    };
    let trunk = || {
        let x = Input::new(&[8, 8, 2]);
        let h = Conv2D::new(4, 3)
            .padding("same")
            .activation("tanh")
            .call(&x)
            .unwrap();
        (x, h)
    };
    let (x, h) = trunk();
    let a = Conv2D::new(4, 3).padding("same").call(&h).unwrap();
    let b = Conv2D::new(4, 3).padding("same").call(&h).unwrap();
    let s = Add::new().call_on(&[&a, &b]).unwrap();
    let y = Dense::new(4, "softmax")
        .call(&GlobalAveragePooling2D::new().call(&s).unwrap())
        .unwrap();
    let mut two = Model::with_seed(&dev, 3).build(&[&x], &[&y]).unwrap();
    let (x1, h1) = trunk();
    let c = Conv2D::new(4, 3).padding("same").call(&h1).unwrap();
    let y1 = Dense::new(4, "softmax")
        .call(&GlobalAveragePooling2D::new().call(&c).unwrap())
        .unwrap();
    let mut one = Model::with_seed(&dev, 3).build(&[&x1], &[&y1]).unwrap();
    // Weights: trunk (kernel, bias), a, b, dense | trunk, c (= a + b), dense.
    let w: Vec<Vec<f32>> = two
        .weights()
        .iter()
        .map(|(_, t)| t.to_vec().unwrap())
        .collect();
    let sum =
        |i: usize, j: usize| -> Vec<f32> { w[i].iter().zip(&w[j]).map(|(p, q)| p + q).collect() };
    let (ck, cb) = (sum(2, 4), sum(3, 5));
    let refs: Vec<&[f32]> = vec![&w[0], &w[1], &ck, &cb, &w[6], &w[7]];
    one.set_weights(&refs).unwrap();
    let (xs, ys) = common::images(32, (8, 8, 2), 5);
    let data = Dataset::from_f32(&dev, &xs, 128, &ys)
        .unwrap()
        .with_sample_shape(&[8, 8, 2])
        .unwrap();
    for m in [&mut two, &mut one] {
        m.compile(Optimizer::sgd(0.5), Loss::SparseCategoricalCrossentropy)
            .unwrap();
        m.fit(
            &data,
            FitOptions {
                epochs: 1,
                batch_size: 32,
                shuffle: false,
                ..Default::default()
            },
        )
        .unwrap();
    }
    let after = |m: &Model, i: usize| m.weights()[i].1.to_vec().unwrap();
    for (i, start) in w.iter().enumerate().take(2) {
        let want: Vec<f64> = after(&one, i).iter().map(|&v| v as f64).collect();
        let rel = common::rel_l2(&after(&two, i), &want);
        assert!(rel < 1e-5, "trunk weight {i}: relative L2 {rel:e}");
        let start: Vec<f64> = start.iter().map(|&v| v as f64).collect();
        let moved = common::rel_l2(&after(&two, i), &start);
        assert!(moved > 1e-4, "trunk weight {i} barely moved ({moved:e})");
    }
}
