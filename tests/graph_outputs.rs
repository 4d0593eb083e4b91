//! Models of several outputs: a classifier head and a regression head on one trunk, trained
//! with a loss per output and Keras's `loss_weights`, against an f64 run of the same SGD
//! steps written here (weights and every epoch's losses); each output's loss and accuracy
//! reported by name; predictions, save, load and resume keep every output; two devices equal
//! one; and every mismatch a typed error.

mod common;

use suanli::data::Dataset;
use suanli::nn::{Call, Dense, FitOptions, Input, Loss, Metric, Model, Optimizer};
use suanli::{Device, Error, Tensor};

macro_rules! dev_or_skip {
    () => {
        match common::device() {
            Some(d) => d,
            None => return,
        }
    };
}

const N: usize = 96;
const D: usize = 6;
const H: usize = 8;

/// Rows of 6 features, a class of 3 and two regression targets per row.
fn rows() -> (Vec<f32>, Vec<u32>, Vec<f32>) {
    let mut rng = suanli::random::Rng::new(17);
    let (mut x, mut y, mut t) = (vec![], vec![], vec![]);
    for i in 0..N {
        let c = i % 3;
        for j in 0..D {
            x.push((rng.normal() + if j % 3 == c { 0.8 } else { 0.0 }) as f32);
        }
        y.push(c as u32);
        t.push(x[i * D] - 0.5 * x[i * D + 1]);
        t.push((0.3 * rng.normal()) as f32);
    }
    (x, y, t)
}

/// x(6) → Dense(8, relu) → [Dense(3, softmax) (named dense_1), Dense(2, linear) (dense_2)].
fn two_heads(dev: &Device, seed: u64) -> Model {
    let x = Input::new(&[D]);
    let h = Dense::new(H, "relu").call(&x).unwrap();
    let cls = Dense::new(3, "softmax").call(&h).unwrap();
    let reg = Dense::new(2, "linear").call(&h).unwrap();
    Model::with_seed(dev, seed)
        .build(&[&x], &[&cls, &reg])
        .unwrap()
}

fn data(dev: &Device) -> Dataset {
    let (x, y, t) = rows();
    Dataset::from_f32(dev, &x, D, &y)
        .unwrap()
        .with_target_values(&t, 2)
        .unwrap()
}

fn weights_of(m: &Model) -> Vec<Vec<f32>> {
    m.weights()
        .iter()
        .map(|(_, t)| t.to_vec().unwrap())
        .collect()
}

/// The same SGD run in f64: weights (w1, b1, w2, b2, w3, b3) after `epochs` of batches of
/// `b` in order, and each epoch's mean total loss and per-output losses.
#[allow(clippy::type_complexity)]
fn reference(
    w: &[Vec<f32>],
    lr: f64,
    lw: (f64, f64),
    b: usize,
    epochs: usize,
) -> (Vec<Vec<f64>>, Vec<(f64, f64, f64)>) {
    let (x, y, t) = rows();
    let mut p: Vec<Vec<f64>> = w
        .iter()
        .map(|v| v.iter().map(|&a| a as f64).collect())
        .collect();
    let mut hist = Vec::new();
    for _ in 0..epochs {
        let (mut sum1, mut sum2) = (0.0, 0.0);
        for start in (0..N).step_by(b) {
            let rows: Vec<usize> = (start..(start + b).min(N)).collect();
            let nb = rows.len() as f64;
            let mut g: Vec<Vec<f64>> = p.iter().map(|v| vec![0.0; v.len()]).collect();
            for &r in &rows {
                let xr: Vec<f64> = x[r * D..(r + 1) * D].iter().map(|&a| a as f64).collect();
                let pre: Vec<f64> = (0..H)
                    .map(|u| p[1][u] + (0..D).map(|i| xr[i] * p[0][i * H + u]).sum::<f64>())
                    .collect();
                let h: Vec<f64> = pre.iter().map(|&v| v.max(0.0)).collect();
                let z1: Vec<f64> = (0..3)
                    .map(|c| p[3][c] + (0..H).map(|u| h[u] * p[2][u * 3 + c]).sum::<f64>())
                    .collect();
                let m = z1.iter().cloned().fold(f64::MIN, f64::max);
                let e: Vec<f64> = z1.iter().map(|v| (v - m).exp()).collect();
                let s: f64 = e.iter().sum();
                let prob: Vec<f64> = e.iter().map(|v| v / s).collect();
                sum1 += -prob[y[r] as usize].ln();
                let z2: Vec<f64> = (0..2)
                    .map(|c| p[5][c] + (0..H).map(|u| h[u] * p[4][u * 2 + c]).sum::<f64>())
                    .collect();
                let d2: Vec<f64> = (0..2).map(|c| z2[c] - t[r * 2 + c] as f64).collect();
                sum2 += d2.iter().map(|d| d * d).sum::<f64>() / 2.0;
                // Gradients of lw.0 · mean CE + lw.1 · mean MSE over the batch.
                let dz1: Vec<f64> = (0..3)
                    .map(|c| lw.0 * (prob[c] - f64::from(c == y[r] as usize)) / nb)
                    .collect();
                let dz2: Vec<f64> = (0..2).map(|c| lw.1 * 2.0 * d2[c] / (2.0 * nb)).collect();
                let mut dh = [0.0; H];
                for u in 0..H {
                    for c in 0..3 {
                        g[2][u * 3 + c] += h[u] * dz1[c];
                        dh[u] += p[2][u * 3 + c] * dz1[c];
                    }
                    for c in 0..2 {
                        g[4][u * 2 + c] += h[u] * dz2[c];
                        dh[u] += p[4][u * 2 + c] * dz2[c];
                    }
                }
                for c in 0..3 {
                    g[3][c] += dz1[c];
                }
                for c in 0..2 {
                    g[5][c] += dz2[c];
                }
                for u in 0..H {
                    let dp = if pre[u] > 0.0 { dh[u] } else { 0.0 };
                    g[1][u] += dp;
                    for i in 0..D {
                        g[0][i * H + u] += xr[i] * dp;
                    }
                }
            }
            for (pv, gv) in p.iter_mut().zip(&g) {
                for (a, d) in pv.iter_mut().zip(gv) {
                    *a -= lr * d;
                }
            }
        }
        let (l1, l2) = (sum1 / N as f64, sum2 / N as f64);
        hist.push((lw.0 * l1 + lw.1 * l2, l1, l2));
    }
    (p, hist)
}

#[test]
fn two_heads_train_like_an_f64_run_of_the_same_steps() {
    let dev = dev_or_skip!();
    let mut m = two_heads(&dev, 3);
    assert_eq!(m.output_names(), ["dense_1", "dense_2"]);
    let start = weights_of(&m);
    let (lr, lw) = (0.1, (1.0, 0.5));
    m.compile_outputs(
        Optimizer::sgd(lr),
        &[Loss::SparseCategoricalCrossentropy, Loss::MeanSquaredError],
        &[lw.0 as f32, lw.1 as f32],
    )
    .unwrap();
    let o = FitOptions {
        epochs: 3,
        batch_size: 32,
        shuffle: false,
        ..Default::default()
    };
    let hist = m.fit(&data(&dev), o).unwrap();
    let (want, want_hist) = reference(&start, lr, lw, 32, 3);
    for (k, (got, want)) in weights_of(&m).iter().zip(&want).enumerate() {
        let rel = common::rel_l2(got, want);
        assert!(rel < 1e-5, "weight {k}: relative L2 {rel:e}");
    }
    for (e, &(total, l1, l2)) in want_hist.iter().enumerate() {
        let close = |a: f64, b: f64| (a - b).abs() <= 1e-5 * b.abs().max(1.0);
        assert!(
            close(hist.loss[e], total),
            "epoch {e}: loss {} vs {total}",
            hist.loss[e]
        );
        let cls = hist.metrics["dense_1_loss"][e];
        let reg = hist.metrics["dense_2_loss"][e];
        assert!(
            close(cls, l1) && close(reg, l2),
            "epoch {e}: {cls}, {reg} vs {l1}, {l2}"
        );
    }
    assert!(hist.metrics.contains_key("dense_1_accuracy"));
    assert!(!hist.metrics.contains_key("dense_2_accuracy"));
    assert!(hist.loss[2] < hist.loss[0], "{:?}", hist.loss);
    // Evaluation reports the same names.
    let e = m.evaluate(&data(&dev), 32).unwrap();
    assert!(e.accuracy.is_none());
    let (l1, l2) = (
        e.metric("dense_1_loss").unwrap(),
        e.metric("dense_2_loss").unwrap(),
    );
    assert!((e.loss - (lw.0 * l1 + lw.1 * l2)).abs() < 1e-9);
}

#[test]
fn predictions_files_and_resume_keep_every_output() {
    let dev = dev_or_skip!();
    let (x, _, _) = rows();
    let compile = |m: &mut Model| {
        m.compile_outputs(
            Optimizer::adam(),
            &[Loss::SparseCategoricalCrossentropy, Loss::MeanSquaredError],
            &[1.0, 0.25],
        )
        .unwrap()
    };
    let opts = |epochs| FitOptions {
        epochs,
        batch_size: 16,
        seed: 4,
        ..Default::default()
    };
    let mut m = two_heads(&dev, 5);
    compile(&mut m);
    m.fit(&data(&dev), opts(2)).unwrap();
    let probe = Tensor::from_slice(&dev, &x[..10 * D], &[10, D]).unwrap();
    let outs = m.predict_outputs(&[&probe]).unwrap();
    assert_eq!(outs.len(), 2);
    assert_eq!(
        (outs[0].shape(), outs[1].shape()),
        (&[10, 3][..], &[10, 2][..])
    );
    let p = outs[0].to_vec().unwrap();
    for r in 0..10 {
        let s: f32 = p[r * 3..r * 3 + 3].iter().sum();
        assert!((s - 1.0).abs() < 1e-5, "softmax row {r} sums to {s}");
    }
    assert!(matches!(
        m.predict(&probe),
        Err(Error::InvalidArgument { .. })
    ));

    let dir = std::env::temp_dir().join(format!("suanli-outputs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("heads.safetensors");
    m.save(&file).unwrap();
    let loaded = Model::load(&dev, &file).unwrap();
    assert_eq!(loaded.output_names(), ["dense_1", "dense_2"]);
    let again = loaded.predict_outputs(&[&probe]).unwrap();
    for (a, b) in again.iter().zip(&outs) {
        assert_eq!(a.to_vec().unwrap(), b.to_vec().unwrap());
    }
    let rebuilt = Model::from_config(&dev, 1, &m.architecture()).unwrap();
    assert_eq!(rebuilt.output_names(), ["dense_1", "dense_2"]);

    // Resume: 2 epochs, a checkpoint, 2 more equal 4 at once (losses and weights kept).
    let mut whole = two_heads(&dev, 6);
    compile(&mut whole);
    let h_whole = whole.fit(&data(&dev), opts(4)).unwrap();
    let mut first = two_heads(&dev, 6);
    compile(&mut first);
    let ck = dir.join("ck.safetensors");
    first
        .fit(
            &data(&dev),
            FitOptions {
                checkpoint: Some(&ck),
                ..opts(2)
            },
        )
        .unwrap();
    let (mut resumed, state) = Model::load_checkpoint(&dev, &ck).unwrap();
    assert_eq!(resumed.loss_weights(), [1.0, 0.25]);
    let h = resumed
        .fit(
            &data(&dev),
            FitOptions {
                resume: Some(&state),
                ..opts(4)
            },
        )
        .unwrap();
    assert_eq!(weights_of(&resumed), weights_of(&whole));
    assert_eq!(h.loss, h_whole.loss);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn several_outputs_on_two_devices_equal_one_device() {
    let (Some(d0), Some(d1)) = (common::own_device(None), common::own_device(None)) else {
        return;
    };
    let g = suanli::multi::DeviceGroup::from_devices(vec![d0, d1]).unwrap();
    let one = g.devices()[0].clone();
    let build = || {
        let mut m = two_heads(&one, 8);
        m.compile_outputs(
            Optimizer::adam(),
            &[Loss::SparseCategoricalCrossentropy, Loss::MeanSquaredError],
            &[1.0, 2.0],
        )
        .unwrap();
        m
    };
    let opts = || FitOptions {
        epochs: 2,
        batch_size: 32,
        seed: 2,
        ..Default::default()
    };
    let mut single = build();
    single.fit(&data(&one), opts()).unwrap();
    let mut par = build();
    let sets: Vec<Dataset> = g.devices().iter().map(data).collect();
    par.fit_parallel(
        &g,
        &sets,
        opts(),
        &suanli::multi::ParallelOptions::default(),
    )
    .unwrap();
    let (w1, w2) = (weights_of(&single).concat(), weights_of(&par).concat());
    let as64 = |v: &[f32]| v.iter().map(|&x| x as f64).collect::<Vec<f64>>();
    let rel = common::rel_l2(&w2, &as64(&w1));
    assert!(rel < 1e-5, "two devices vs one: relative L2 {rel:e}");
    let w0 = weights_of(&build()).concat();
    assert!(
        common::rel_l2(&w1, &as64(&w0)) > 1e-3,
        "training barely moved"
    );
}

#[test]
fn mismatched_outputs_are_typed_errors() {
    let dev = dev_or_skip!();
    let (x, y, t) = rows();
    let mut m = two_heads(&dev, 1);
    // Compile: a loss count or weight that does not fit.
    assert!(matches!(
        m.compile_outputs(Optimizer::adam(), &[Loss::MeanSquaredError; 3], &[]),
        Err(Error::InvalidArgument { .. })
    ));
    assert!(matches!(
        m.compile_outputs(Optimizer::adam(), &[Loss::MeanSquaredError], &[1.0, -1.0]),
        Err(Error::InvalidArgument { .. })
    ));
    m.compile_outputs(
        Optimizer::adam(),
        &[Loss::SparseCategoricalCrossentropy, Loss::MeanSquaredError],
        &[],
    )
    .unwrap();
    let o = || FitOptions {
        epochs: 1,
        batch_size: 32,
        ..Default::default()
    };
    // One target column for two outputs.
    let one = Dataset::from_f32(&dev, &x, D, &y).unwrap();
    match m.fit(&one, o()) {
        Err(Error::ShapeMismatch { expected, .. }) => {
            assert!(
                expected.contains("2 target columns") && expected.contains("dense_1, dense_2"),
                "{expected}"
            )
        }
        other => panic!("one target column: {other:?}"),
    }
    // The second output's targets of the wrong width.
    let wide = Dataset::from_f32(&dev, &x, D, &y)
        .unwrap()
        .with_target_values(&[t.clone(), t.clone()].concat(), 4)
        .unwrap();
    assert!(matches!(
        m.fit(&wide, o()),
        Err(Error::ShapeMismatch { .. })
    ));
    // Labels for the regression output.
    let labels = Dataset::from_f32(&dev, &x, D, &y)
        .unwrap()
        .with_target_classes(&y, 1)
        .unwrap();
    assert!(matches!(
        m.fit(&labels, o()),
        Err(Error::ShapeMismatch { .. })
    ));
    // A column of the wrong length.
    assert!(matches!(
        Dataset::from_f32(&dev, &x, D, &y)
            .unwrap()
            .with_target_values(&t[1..], 2),
        Err(Error::ShapeMismatch { .. })
    ));
    // Metrics beyond loss and accuracy: refused, naming the output, where its loss takes
    // class indices; a list per output must have one per output.
    m.compile_outputs(
        Optimizer::adam(),
        &[Loss::SparseCategoricalCrossentropy, Loss::MeanSquaredError],
        &[],
    )
    .unwrap();
    match m.set_metrics(&[Metric::MeanAbsoluteError]) {
        Err(Error::InvalidArgument { name, expected, .. }) => {
            assert_eq!(name, "metric");
            assert!(expected.contains("\"dense_1\""), "{expected}");
        }
        other => panic!("mae on a sparse output: {other:?}"),
    }
    assert!(matches!(
        m.set_output_metrics(&[vec![Metric::MeanAbsoluteError]]),
        Err(Error::InvalidArgument { .. })
    ));
    m.set_output_metrics(&[vec![], vec![Metric::MeanAbsoluteError]])
        .unwrap();
    m.fit(&data(&dev), o()).unwrap();
    m.set_metrics(&[]).unwrap();
    // An output read by another layer too cannot take its loss on the logits.
    let xi = Input::new(&[D]);
    let a = Dense::new(3, "sigmoid").call(&xi).unwrap();
    let b = Dense::new(2, "linear").call(&a).unwrap();
    let mut chained = Model::functional(&dev, &[&xi], &[&a, &b]).unwrap();
    chained
        .compile_outputs(
            Optimizer::adam(),
            &[Loss::BinaryCrossentropy, Loss::MeanSquaredError],
            &[],
        )
        .unwrap();
    let onehot: Vec<f32> = y
        .iter()
        .flat_map(|&c| (0..3).map(move |k| f32::from(k == c as usize)))
        .collect();
    let d = Dataset::from_f32_targets(&dev, &x, D, &onehot, 3)
        .unwrap()
        .with_target_values(&t, 2)
        .unwrap();
    match chained.fit(&d, o()) {
        Err(Error::InvalidArgument { expected, .. }) => {
            assert!(expected.contains("other layers read too"), "{expected}")
        }
        other => panic!("a folded output read by a layer: {other:?}"),
    }
    // With a loss on its values it trains: two outputs, one the other's input.
    chained
        .compile_outputs(
            Optimizer::adam(),
            &[Loss::MeanSquaredError, Loss::MeanSquaredError],
            &[],
        )
        .unwrap();
    let h = chained.fit(&d, o()).unwrap();
    assert!(h.loss[0].is_finite());
    // The same output twice is refused.
    assert!(matches!(
        Model::functional(&dev, &[&xi], &[&a, &a]),
        Err(Error::InvalidArgument { .. })
    ));
    // And the first model still trains.
    m.fit(&data(&dev), o()).unwrap();
}
