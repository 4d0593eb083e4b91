//! Metrics beyond loss and accuracy (mean absolute and squared error, precision, recall, ROC
//! AUC): the device sums against f64 references on ragged shapes, with the accumulator's other
//! slots poisoned; then through `fit` and `evaluate` against the same formulas applied to
//! `predict`'s output.

mod common;

use common::random_vec;
use suanli::exec::Recorder;
use suanli::internals::kernels::metric::{self, Prediction, Sums};
use suanli::nn::{Dense, FitOptions, Loss, Metric, Optimizer, Sequential};
use suanli::{Device, Tensor};

const SHAPES: &[(usize, usize)] = &[
    (1, 1),
    (7, 3),
    (63, 10),
    (64, 1),
    (65, 10),
    (257, 2),
    (1000, 5),
];

/// Predictions in f64 as the kernel forms them.
fn predictions(x: &[f32], rows: usize, cols: usize, pred: Prediction) -> Vec<f64> {
    let mut p = vec![0.0; rows * cols];
    for r in 0..rows {
        let row = &x[r * cols..(r + 1) * cols];
        let mx = row.iter().fold(f64::NEG_INFINITY, |m, &v| m.max(v as f64));
        let den: f64 = row.iter().map(|&v| (v as f64 - mx).exp()).sum();
        for c in 0..cols {
            let v = row[c] as f64;
            p[r * cols + c] = match pred {
                Prediction::AsIs => v,
                Prediction::Sigmoid => 1.0 / (1.0 + (-v).exp()),
                Prediction::Softmax => (v - mx).exp() / den,
            };
        }
    }
    p
}

/// Runs one metric's dispatch onto an accumulator whose slots before `offset` and after the
/// metric's hold NaN and whose own slots start at `start`; returns the accumulator.
#[allow(clippy::too_many_arguments)]
fn run(
    dev: &Device,
    what: Sums,
    pred: Prediction,
    x: &[f32],
    t: &[f32],
    rows: usize,
    cols: usize,
    start: f32,
) -> (Vec<f32>, usize) {
    let offset = 5;
    let len = offset + what.slots() + 3;
    let mut init = vec![f32::NAN; len];
    init[offset..offset + what.slots()].fill(start);
    let acc = Tensor::from_slice(dev, &init, &[len]).unwrap();
    let xt = Tensor::from_slice(dev, x, &[rows * cols]).unwrap();
    let tt = Tensor::from_slice(dev, t, &[rows * cols]).unwrap();
    let mut rec = Recorder::new(dev);
    metric::sums(
        &mut rec,
        what,
        pred,
        xt.buffer(),
        tt.buffer(),
        acc.buffer(),
        offset,
        rows,
        cols,
    )
    .unwrap();
    rec.submit().unwrap();
    let out = acc.to_vec().unwrap();
    // Nothing outside the metric's slots was written.
    for (i, v) in out.iter().enumerate() {
        if !(offset..offset + what.slots()).contains(&i) {
            assert!(v.is_nan(), "slot {i} outside the metric's was written: {v}");
        }
    }
    (out, offset)
}

fn data(rows: usize, cols: usize, seed: u64) -> (Vec<f32>, Vec<f32>) {
    let x: Vec<f32> = random_vec(rows * cols, seed)
        .iter()
        .map(|v| 3.0 * v)
        .collect();
    let t: Vec<f32> = random_vec(rows * cols, seed + 1)
        .iter()
        .map(|v| if *v > 0.1 { 1.0 } else { 0.0 })
        .collect();
    (x, t)
}

#[test]
fn error_sums_match_the_reference() {
    let dev = dev_or_skip!();
    for &(rows, cols) in SHAPES {
        let (x, t) = data(rows, cols, (rows * 7 + cols) as u64);
        for pred in [Prediction::AsIs, Prediction::Sigmoid, Prediction::Softmax] {
            let p = predictions(&x, rows, cols, pred);
            for (what, f) in [
                (Sums::AbsoluteError, (|d: f64| d.abs()) as fn(f64) -> f64),
                (Sums::SquaredError, |d: f64| d * d),
            ] {
                let want: f64 = (0..rows)
                    .map(|r| {
                        (0..cols)
                            .map(|c| f(p[r * cols + c] - t[r * cols + c] as f64))
                            .sum::<f64>()
                            / cols as f64
                    })
                    .sum();
                let (out, o) = run(&dev, what, pred, &x, &t, rows, cols, 2.0);
                let got = out[o] as f64 - 2.0;
                assert!(
                    (got - want).abs() <= 1e-5 * want.abs().max(1.0),
                    "{what:?} {pred:?} {rows}×{cols}: {got} vs {want}"
                );
            }
        }
    }
}

#[test]
fn confusion_counts_match_the_reference() {
    let dev = dev_or_skip!();
    for &(rows, cols) in SHAPES {
        let (x, t) = data(rows, cols, (rows * 11 + cols) as u64);
        for pred in [Prediction::AsIs, Prediction::Sigmoid, Prediction::Softmax] {
            for threshold in [0.5f32, 0.3] {
                let p = predictions(&x, rows, cols, pred);
                let (mut tp, mut fp, mut fn_) = (0.0, 0.0, 0.0);
                // Elements within rounding of the threshold may fall either side.
                let mut near = 0.0;
                for (q, y) in p.iter().zip(&t) {
                    let (yes, pos) = (*q > threshold as f64, *y > 0.5);
                    near += f64::from((q - threshold as f64).abs() < 1e-5);
                    tp += f64::from(yes && pos);
                    fp += f64::from(yes && !pos);
                    fn_ += f64::from(!yes && pos);
                }
                let (out, o) = run(
                    &dev,
                    Sums::Confusion { threshold },
                    pred,
                    &x,
                    &t,
                    rows,
                    cols,
                    1.0,
                );
                for (k, want) in [tp, fp, fn_].into_iter().enumerate() {
                    let got = out[o + k] as f64 - 1.0;
                    assert!(
                        (got - want).abs() <= near,
                        "{pred:?} {rows}×{cols} θ={threshold} slot {k}: {got} vs {want}"
                    );
                }
            }
        }
    }
}

#[test]
fn auc_histograms_match_the_reference() {
    let dev = dev_or_skip!();
    for &(rows, cols) in SHAPES {
        let (x, t) = data(rows, cols, (rows * 13 + cols) as u64);
        for pred in [Prediction::AsIs, Prediction::Sigmoid, Prediction::Softmax] {
            for buckets in [2usize, 200, 1024] {
                let p = predictions(&x, rows, cols, pred);
                let (mut pos, mut neg) = (vec![0.0; buckets], vec![0.0; buckets]);
                let mut near = 0usize;
                for (q, y) in p.iter().zip(&t) {
                    let s = q.clamp(0.0, 1.0) * (buckets - 1) as f64;
                    near += usize::from((s - s.round()).abs() < 1e-4 && s > 1e-4);
                    let b = ((s.ceil() - 1.0).max(0.0) as usize).min(buckets - 1);
                    if *y > 0.5 {
                        pos[b] += 1.0;
                    } else {
                        neg[b] += 1.0;
                    }
                }
                let what = Sums::Histogram { buckets };
                let (out, o) = run(&dev, what, pred, &x, &t, rows, cols, 0.0);
                let got = &out[o..o + 2 * buckets];
                let (gp, gn): (Vec<f64>, Vec<f64>) = (
                    got[..buckets].iter().map(|&v| v as f64).collect(),
                    got[buckets..].iter().map(|&v| v as f64).collect(),
                );
                // Totals are exact; single buckets only move for values on a threshold.
                assert_eq!(gp.iter().sum::<f64>(), pos.iter().sum::<f64>());
                assert_eq!(gn.iter().sum::<f64>(), neg.iter().sum::<f64>());
                let moved: f64 = gp
                    .iter()
                    .chain(&gn)
                    .zip(pos.iter().chain(&neg))
                    .map(|(a, b)| (a - b).abs())
                    .sum();
                assert!(
                    moved <= 2.0 * near as f64,
                    "{pred:?} {rows}×{cols} B={buckets}: {moved} counts in other buckets"
                );
                let (a, b) = (
                    suanli::nn::metric_auc(&gp, &gn),
                    suanli::nn::metric_auc(&pos, &neg),
                );
                assert!((a - b).abs() < 1e-3, "AUC {a} vs {b}");
            }
        }
    }
}

/// Keras's ROC AUC by its definition, straight from predictions (f64): thresholds
/// `[−ε, 1/(B−1), …, (B−2)/(B−1), 1+ε]`, TP/FP at `p > θ`, trapezoids between them.
fn keras_auc(p: &[f64], t: &[f32], b: usize) -> f64 {
    let eps = 1e-7;
    let th: Vec<f64> = (0..b)
        .map(|i| match i {
            0 => -eps,
            _ if i == b - 1 => 1.0 + eps,
            _ => i as f64 / (b - 1) as f64,
        })
        .collect();
    let pos = t.iter().filter(|&&y| y > 0.5).count() as f64;
    let neg = t.len() as f64 - pos;
    let pts: Vec<(f64, f64)> = th
        .iter()
        .map(|&h| {
            let (mut tp, mut fp) = (0.0, 0.0);
            for (q, y) in p.iter().zip(t) {
                if q.clamp(0.0, 1.0) > h {
                    if *y > 0.5 {
                        tp += 1.0
                    } else {
                        fp += 1.0
                    }
                }
            }
            (fp / neg, tp / pos)
        })
        .collect();
    pts.windows(2)
        .map(|w| (w[0].0 - w[1].0) * (w[0].1 + w[1].1) / 2.0)
        .sum()
}

/// Binary data: 4 features, a 0/1 target that a line separates with noise.
fn binary(n: usize, seed: u64) -> (Vec<f32>, Vec<f32>) {
    let x = random_vec(n * 4, seed);
    let noise = random_vec(n, seed + 9);
    let t = (0..n)
        .map(|r| {
            let s = x[r * 4] + 0.5 * x[r * 4 + 1] - 0.3 * x[r * 4 + 2] + 0.6 * noise[r];
            if s > 0.0 {
                1.0
            } else {
                0.0
            }
        })
        .collect();
    (x, t)
}

#[test]
fn fit_and_evaluate_report_the_metrics_of_predict() {
    let dev = dev_or_skip!();
    let (n, nv) = (300usize, 137usize);
    let (x, t) = binary(n, 3);
    let (xv, tv) = binary(nv, 4);
    let train = suanli::data::Dataset::from_f32_targets(&dev, &x, 4, &t, 1).unwrap();
    let val = suanli::data::Dataset::from_f32_targets(&dev, &xv, 4, &tv, 1).unwrap();
    let mut model = Sequential::with_seed(&dev, 7);
    model.add(Dense::new(8, "relu").input_dim(4)).unwrap();
    model.add(Dense::new(1, "sigmoid")).unwrap();
    model
        .compile(
            Optimizer::Adam {
                lr: 0.02,
                beta1: 0.9,
                beta2: 0.999,
                eps: 1e-7,
            },
            Loss::BinaryCrossentropy,
        )
        .unwrap();
    let metrics = [
        Metric::MeanAbsoluteError,
        Metric::MeanSquaredError,
        Metric::Precision { threshold: 0.5 },
        Metric::Recall { threshold: 0.4 },
        Metric::Auc { thresholds: 200 },
    ];
    model.set_metrics(&metrics).unwrap();
    let h = model
        .fit(
            &train,
            FitOptions {
                epochs: 3,
                batch_size: 32,
                validation_data: Some(&val),
                ..Default::default()
            },
        )
        .unwrap();
    for m in &metrics {
        for key in [m.name().to_string(), format!("val_{}", m.name())] {
            let v = h
                .metrics
                .get(&key)
                .unwrap_or_else(|| panic!("history lacks {key}"));
            assert_eq!(v.len(), 3, "{key}");
            assert!(v.iter().all(|x| x.is_finite()), "{key}: {v:?}");
        }
    }
    // Evaluate in batches that leave a ragged last one; compare with predict's output.
    let e = model.evaluate(&val, 50).unwrap();
    let xt = Tensor::from_slice(&dev, &xv, &[nv, 4]).unwrap();
    let p: Vec<f64> = model
        .predict(&xt)
        .unwrap()
        .to_vec()
        .unwrap()
        .iter()
        .map(|&v| v as f64)
        .collect();
    let mae = p
        .iter()
        .zip(&tv)
        .map(|(q, y)| (q - *y as f64).abs())
        .sum::<f64>()
        / nv as f64;
    let mse = p
        .iter()
        .zip(&tv)
        .map(|(q, y)| (q - *y as f64).powi(2))
        .sum::<f64>()
        / nv as f64;
    let count = |th: f64, yes: bool, pos: bool| {
        p.iter()
            .zip(&tv)
            .filter(|(q, y)| (**q > th) == yes && (**y > 0.5) == pos)
            .count() as f64
    };
    let precision = count(0.5, true, true) / (count(0.5, true, true) + count(0.5, true, false));
    let recall = count(0.4, true, true) / (count(0.4, true, true) + count(0.4, false, true));
    let auc = keras_auc(&p, &tv, 200);
    for (name, want, tol) in [
        ("mean_absolute_error", mae, 1e-5),
        ("mean_squared_error", mse, 1e-5),
        ("precision", precision, 1e-9),
        ("recall", recall, 1e-9),
        ("auc", auc, 1e-6),
    ] {
        let got = e.metric(name).unwrap();
        assert!(
            (got - want).abs() <= tol,
            "{name}: evaluate {got}, from predict {want}"
        );
    }
    // The last epoch's validation metrics are the same evaluation.
    assert!((h.metrics["val_auc"][2] - e.metric("auc").unwrap()).abs() < 1e-6);
    assert!(auc > 0.75, "the model learnt nothing: AUC {auc}");
}

#[test]
fn metrics_are_refused_where_they_mean_nothing() {
    let dev = dev_or_skip!();
    let mut model = Sequential::new(&dev);
    model.add(Dense::new(3, "softmax").input_dim(4)).unwrap();
    model
        .compile(Optimizer::adam(), Loss::SparseCategoricalCrossentropy)
        .unwrap();
    let e = model
        .set_metrics(&[Metric::Precision { threshold: 0.5 }])
        .unwrap_err();
    assert!(e.to_string().contains("sparse"), "{e}");
    model
        .compile(Optimizer::adam(), Loss::CategoricalCrossentropy)
        .unwrap();
    for bad in [
        Metric::Precision { threshold: 1.5 },
        Metric::Auc { thresholds: 1 },
        Metric::Auc { thresholds: 5000 },
    ] {
        assert!(model.set_metrics(&[bad]).is_err(), "{bad:?} accepted");
    }
    let e = model
        .set_metrics(&[Metric::MeanAbsoluteError, Metric::MeanAbsoluteError])
        .unwrap_err();
    assert!(e.to_string().contains("twice"), "{e}");
    assert!(Metric::from_name("f1_score").is_err());
}

#[test]
fn evaluate_refuses_a_model_without_a_loss() {
    // Without a loss the softmax is not folded into one, so a default cross-entropy would
    // read probabilities as logits: a plausible, wrong loss (it was 1.6 for a model at 0.34).
    let dev = dev_or_skip!();
    let mut model = Sequential::new(&dev);
    model.add(Dense::new(3, "softmax").input_dim(4)).unwrap();
    let x = random_vec(8 * 4, 1);
    let data = suanli::data::Dataset::from_f32(&dev, &x, 4, &[0u32, 1, 2, 0, 1, 2, 0, 1]).unwrap();
    let e = model.evaluate(&data, 4).unwrap_err().to_string();
    assert!(e.contains("compiled"), "{e}");
    model
        .compile(Optimizer::adam(), Loss::SparseCategoricalCrossentropy)
        .unwrap();
    assert!(model.evaluate(&data, 4).unwrap().loss.is_finite());
}
