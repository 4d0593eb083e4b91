//! Metrics beyond loss and accuracy on a model of two outputs: one list for every output
//! (Keras's `metrics=[...]`) and a list per output (`metrics={output: [...]}`), reported as
//! `{output}_{metric}` in the history (with `val_`) and in `evaluate`, each against an f64
//! computation on `predict_outputs`' predictions of the same rows. A metric read from the
//! other output's block would miss by far more than the tolerances.

mod common;

use suanli::data::Dataset;
use suanli::nn::{Call, Dense, FitOptions, Input, Loss, Metric, Model, Optimizer};
use suanli::{Device, Tensor};

macro_rules! dev_or_skip {
    () => {
        match common::device() {
            Some(d) => d,
            None => return,
        }
    };
}

const D: usize = 5;
/// Output a: three labels (sigmoid, binary cross-entropy); output b: two values (MSE).
const A: usize = 3;
const B: usize = 2;

/// `n` rows: features, multi-label targets for a, regression targets for b.
fn rows(n: usize, seed: u64) -> (Vec<f32>, Vec<f32>, Vec<f32>) {
    let mut rng = suanli::random::Rng::new(seed);
    let (mut x, mut ta, mut tb) = (vec![], vec![], vec![]);
    for i in 0..n {
        let r: Vec<f32> = (0..D).map(|_| rng.normal() as f32).collect();
        for &v in &r[..A] {
            let noisy = v + 0.7 * rng.normal() as f32;
            ta.push(if noisy > 0.0 { 1.0 } else { 0.0 });
        }
        tb.push(r[3] - 0.5 * r[4]);
        tb.push(0.2 * r[0] + 0.1 * (i % 3) as f32);
        x.extend(r);
    }
    (x, ta, tb)
}

fn dataset(dev: &Device, n: usize, seed: u64) -> Dataset {
    let (x, ta, tb) = rows(n, seed);
    Dataset::from_f32_targets(dev, &x, D, &ta, A)
        .unwrap()
        .with_target_values(&tb, B)
        .unwrap()
}

/// x(5) → Dense(8, tanh) → [Dense(3, sigmoid) (dense_1), Dense(2, linear) (dense_2)].
fn model(dev: &Device) -> Model {
    let x = Input::new(&[D]);
    let h = Dense::new(8, "tanh").call(&x).unwrap();
    let a = Dense::new(A, "sigmoid").call(&h).unwrap();
    let b = Dense::new(B, "linear").call(&h).unwrap();
    let mut m = Model::with_seed(dev, 5).build(&[&x], &[&a, &b]).unwrap();
    let adam = Optimizer::Adam {
        lr: 0.02,
        beta1: 0.9,
        beta2: 0.999,
        eps: 1e-7,
    };
    m.compile_outputs(
        adam,
        &[Loss::BinaryCrossentropy, Loss::MeanSquaredError],
        &[1.0, 0.5],
    )
    .unwrap();
    m
}

/// A metric in f64 from predictions `p` and targets `t` of `cols` columns, as Keras defines
/// it.
fn reference(m: Metric, p: &[f64], t: &[f32], cols: usize) -> f64 {
    let rows = (p.len() / cols) as f64;
    let pairs = || p.iter().zip(t).map(|(&q, &y)| (q, f64::from(y)));
    let count = |th: f64, yes: bool, pos: bool| {
        pairs()
            .filter(|(q, y)| (*q > th) == yes && (*y > 0.5) == pos)
            .count() as f64
    };
    match m {
        Metric::MeanAbsoluteError => {
            pairs().map(|(q, y)| (q - y).abs()).sum::<f64>() / cols as f64 / rows
        }
        Metric::MeanSquaredError => {
            pairs().map(|(q, y)| (q - y).powi(2)).sum::<f64>() / cols as f64 / rows
        }
        Metric::Precision { threshold } => {
            let th = f64::from(threshold);
            count(th, true, true) / (count(th, true, true) + count(th, true, false))
        }
        Metric::Recall { threshold } => {
            let th = f64::from(threshold);
            count(th, true, true) / (count(th, true, true) + count(th, false, true))
        }
        Metric::Auc { thresholds: n } => {
            // Keras's thresholds (−ε, k/(n−1), 1 + ε) and its trapezoids between
            // consecutive (FPR, TPR) points, predictions clamped to [0, 1].
            let eps = 1e-7;
            let (pos, neg) = (count(-1.0, true, true), count(-1.0, true, false));
            let pts: Vec<(f64, f64)> = (0..n)
                .map(|i| match i {
                    0 => -eps,
                    _ if i == n - 1 => 1.0 + eps,
                    _ => i as f64 / (n - 1) as f64,
                })
                .map(|h| {
                    let above = |want: bool| {
                        pairs()
                            .filter(|(q, y)| q.clamp(0.0, 1.0) > h && (*y > 0.5) == want)
                            .count() as f64
                    };
                    (above(false) / neg, above(true) / pos)
                })
                .collect();
            pts.windows(2)
                .map(|w| (w[0].0 - w[1].0) * (w[0].1 + w[1].1) / 2.0)
                .sum()
        }
    }
}

/// Checks every output's metrics in `got` (an evaluation's) against the f64 references on
/// `model`'s predictions of `n` rows drawn with `seed`.
fn check_against_predict(dev: &Device, model: &Model, per: &[Vec<Metric>], n: usize, seed: u64) {
    let (x, ta, tb) = rows(n, seed);
    let xt = Tensor::from_slice(dev, &x, &[n, D]).unwrap();
    let outs = model.predict_outputs(&[&xt]).unwrap();
    let e = model.evaluate(&dataset(dev, n, seed), 40).unwrap();
    let names = model.output_names();
    for (k, ((out, t), cols)) in outs.iter().zip([&ta, &tb]).zip([A, B]).enumerate() {
        let p: Vec<f64> = out
            .to_vec()
            .unwrap()
            .iter()
            .map(|&v| f64::from(v))
            .collect();
        for &m in &per[k] {
            let key = format!("{}_{}", names[k], m.name());
            let got = e
                .metric(&key)
                .unwrap_or_else(|| panic!("evaluate lacks {key}: {e:?}"));
            let want = reference(m, &p, t, cols);
            let tol = match m {
                Metric::MeanAbsoluteError | Metric::MeanSquaredError => 1e-5 * want.max(1.0),
                _ => 1e-6,
            };
            assert!(
                (got - want).abs() <= tol,
                "{key}: evaluate {got}, from predict {want}"
            );
        }
    }
    // The same numbers from the accumulator's sums, as several processes combine them.
    let sums = model.evaluate_sums(&dataset(dev, n, seed), 40).unwrap();
    assert_eq!(model.evaluation_of(&sums).unwrap(), e);
}

fn fit(m: &mut Model, dev: &Device) -> suanli::nn::History {
    let val = dataset(dev, 71, 4);
    m.fit(
        &dataset(dev, 150, 3),
        FitOptions {
            epochs: 3,
            batch_size: 32,
            validation_data: Some(&val),
            ..Default::default()
        },
    )
    .unwrap()
}

#[test]
fn one_list_applies_to_every_output_under_its_name() {
    let dev = dev_or_skip!();
    let mut m = model(&dev);
    let list = vec![Metric::MeanAbsoluteError, Metric::MeanSquaredError];
    m.set_metrics(&list).unwrap();
    assert_eq!(m.output_metrics(), vec![list.clone(), list.clone()]);
    let h = fit(&mut m, &dev);
    for out in ["dense_1", "dense_2"] {
        for metric in ["mean_absolute_error", "mean_squared_error"] {
            for key in [format!("{out}_{metric}"), format!("val_{out}_{metric}")] {
                let v = h
                    .metrics
                    .get(&key)
                    .unwrap_or_else(|| panic!("history lacks {key}"));
                assert_eq!(v.len(), 3, "{key}");
                assert!(v.iter().all(|x| x.is_finite() && *x > 0.0), "{key}: {v:?}");
            }
        }
    }
    // Nothing under the unprefixed names a model of one output uses.
    assert!(!h.metrics.contains_key("mean_absolute_error"));
    check_against_predict(&dev, &m, &[list.clone(), list], 71, 4);
}

#[test]
fn a_list_per_output_reports_each_outputs_own() {
    let dev = dev_or_skip!();
    let mut m = model(&dev);
    let per = vec![
        vec![
            Metric::Precision { threshold: 0.5 },
            Metric::Recall { threshold: 0.4 },
            Metric::Auc { thresholds: 50 },
            Metric::MeanAbsoluteError,
        ],
        vec![Metric::MeanSquaredError],
    ];
    m.set_output_metrics(&per).unwrap();
    assert!(m.metrics().is_empty());
    let h = fit(&mut m, &dev);
    let mut keys: Vec<&String> = h.metrics.keys().collect();
    keys.sort();
    let want = [
        "dense_1_accuracy",
        "dense_1_auc",
        "dense_1_loss",
        "dense_1_mean_absolute_error",
        "dense_1_precision",
        "dense_1_recall",
        "dense_2_loss",
        "dense_2_mean_squared_error",
    ];
    let mut all: Vec<String> = want.iter().map(|k| k.to_string()).collect();
    all.extend(want.iter().map(|k| format!("val_{k}")));
    all.sort();
    assert_eq!(keys, all.iter().collect::<Vec<_>>());
    // The last epoch's validation metrics are the evaluation of the same rows.
    let e = m.evaluate(&dataset(&dev, 71, 4), 40).unwrap();
    let last = h.metrics["val_dense_1_auc"][2];
    assert!((last - e.metric("dense_1_auc").unwrap()).abs() < 1e-9);
    assert!(last > 0.7, "output a learnt nothing: AUC {last}");
    check_against_predict(&dev, &m, &per, 71, 4);
    // A second model trained alike without metrics trains the same weights: the metrics
    // only read.
    let mut bare = model(&dev);
    fit(&mut bare, &dev);
    for ((_, a), (_, b)) in m.weights().iter().zip(bare.weights().iter()) {
        assert_eq!(a.to_vec().unwrap(), b.to_vec().unwrap());
    }
}

#[test]
fn metrics_on_two_devices_equal_one_device() {
    let Some(d0) = common::device() else { return };
    let d1 = common::own_device(None).unwrap();
    let g = suanli::multi::DeviceGroup::from_devices(vec![d0.clone(), d1]).unwrap();
    let per = vec![
        vec![Metric::Auc { thresholds: 20 }],
        vec![Metric::MeanAbsoluteError],
    ];
    let opts = || FitOptions {
        epochs: 2,
        batch_size: 32,
        seed: 2,
        ..Default::default()
    };
    let mut one = model(&d0);
    one.set_output_metrics(&per).unwrap();
    let h1 = one.fit(&dataset(&d0, 128, 3), opts()).unwrap();
    let mut two = model(&d0);
    two.set_output_metrics(&per).unwrap();
    let sets: Vec<Dataset> = g.devices().iter().map(|d| dataset(d, 128, 3)).collect();
    let h2 = two
        .fit_parallel(
            &g,
            &sets,
            opts(),
            &suanli::multi::ParallelOptions::default(),
        )
        .unwrap();
    for key in ["dense_1_auc", "dense_2_mean_absolute_error"] {
        for (a, b) in h1.metrics[key].iter().zip(&h2.history.metrics[key]) {
            assert!(
                (a - b).abs() <= 1e-5 * a.abs().max(1.0),
                "{key}: {a} vs {b}"
            );
        }
    }
}
