//! Per-row loss weights (Keras's `sample_weight` and `class_weight`) and the other per-row
//! checks of a dataset (non-finite features refused): the weighted loss that
//! `evaluate` reports against the same formula on `predict`'s output, and training with
//! whole-number weights against training on rows repeated that many times.

mod common;

use common::random_vec;
use suanli::data::Dataset;
use suanli::nn::{Dense, FitOptions, Loss, Optimizer, Sequential};
use suanli::Tensor;

fn features(n: usize, seed: u64) -> Vec<f32> {
    random_vec(n * 5, seed)
}

fn labels(x: &[f32]) -> Vec<u32> {
    x.chunks(5)
        .map(|r| {
            if r[0] + r[1] > 0.3 {
                2
            } else if r[2] > 0.0 {
                1
            } else {
                0
            }
        })
        .collect()
}

fn model(dev: &suanli::Device, opt: Optimizer) -> Sequential {
    let mut m = Sequential::with_seed(dev, 11);
    m.add(Dense::new(6, "tanh").input_dim(5)).unwrap();
    m.add(Dense::new(3, "softmax")).unwrap();
    m.compile(opt, Loss::SparseCategoricalCrossentropy).unwrap();
    m
}

#[test]
fn evaluate_reports_the_weighted_mean_loss() {
    let dev = dev_or_skip!();
    let n = 157;
    let x = features(n, 1);
    let y = labels(&x);
    let w: Vec<f32> = random_vec(n, 2).iter().map(|v| 1.5 * (v + 1.0)).collect();
    let m = model(&dev, Optimizer::adam());
    let plain = Dataset::from_f32(&dev, &x, 5, &y).unwrap();
    let weighted = Dataset::from_f32(&dev, &x, 5, &y)
        .unwrap()
        .with_weights(&w)
        .unwrap();
    assert!(weighted.has_weights() && !plain.has_weights());
    let p = m
        .predict(&Tensor::from_slice(&dev, &x, &[n, 5]).unwrap())
        .unwrap()
        .to_vec()
        .unwrap();
    let row_loss: Vec<f64> = (0..n)
        .map(|r| -(p[r * 3 + y[r] as usize] as f64).ln())
        .collect();
    let want = row_loss
        .iter()
        .zip(&w)
        .map(|(l, w)| l * *w as f64)
        .sum::<f64>()
        / n as f64;
    let unweighted = row_loss.iter().sum::<f64>() / n as f64;
    // Batches of 40 leave a ragged last one.
    let e = m.evaluate(&weighted, 40).unwrap();
    assert!((e.loss - want).abs() < 1e-5 * want, "{} vs {want}", e.loss);
    let e0 = m.evaluate(&plain, 40).unwrap();
    assert!((e0.loss - unweighted).abs() < 1e-5 * unweighted);
    // Accuracy is not weighted (Keras's `metrics`, not `weighted_metrics`).
    assert_eq!(e.accuracy, e0.accuracy);
}

#[test]
fn whole_number_weights_train_as_repeated_rows() {
    let dev = dev_or_skip!();
    let n = 60;
    let x = features(n, 3);
    let y = labels(&x);
    let w: Vec<f32> = (0..n).map(|r| (r % 3) as f32).collect();
    // Rows repeated w times: the same gradient sum over Σw rows instead of n.
    let (mut xr, mut yr) = (Vec::new(), Vec::new());
    for r in 0..n {
        for _ in 0..w[r] as usize {
            xr.extend_from_slice(&x[r * 5..(r + 1) * 5]);
            yr.push(y[r]);
        }
    }
    let total = yr.len();
    let lr = 0.3;
    let train = |data: &Dataset, rows: usize, lr: f64| {
        let mut m = model(&dev, Optimizer::sgd(lr));
        // One full batch per epoch: the step is the mean gradient over the batch.
        m.fit(
            data,
            FitOptions {
                epochs: 3,
                batch_size: rows,
                shuffle: false,
                ..Default::default()
            },
        )
        .unwrap();
        m.weights()
    };
    let weighted = Dataset::from_f32(&dev, &x, 5, &y)
        .unwrap()
        .with_weights(&w)
        .unwrap();
    let repeated = Dataset::from_f32(&dev, &xr, 5, &yr).unwrap();
    let a = train(&weighted, n, lr);
    // Σ_r w_r g_r / n = (Σ over repeated rows g) / total · (total / n).
    let b = train(&repeated, total, lr * total as f64 / n as f64);
    let unweighted = train(&Dataset::from_f32(&dev, &x, 5, &y).unwrap(), n, lr);
    for ((wa, wb), wu) in a.iter().zip(&b).zip(&unweighted) {
        let (va, vb, vu) = (
            wa.1.to_vec().unwrap(),
            wb.1.to_vec().unwrap(),
            wu.1.to_vec().unwrap(),
        );
        let diff = va
            .iter()
            .zip(&vb)
            .map(|(p, q)| (p - q).abs())
            .fold(0.0f32, f32::max);
        let moved = va
            .iter()
            .zip(&vu)
            .map(|(p, q)| (p - q).abs())
            .fold(0.0f32, f32::max);
        assert!(
            diff < 1e-5,
            "{}: weighted and repeated differ by {diff}",
            wa.0
        );
        assert!(
            moved > 1e-3,
            "{}: the weights changed nothing ({moved})",
            wa.0
        );
    }
}

#[test]
fn bad_weights_are_refused() {
    let dev = dev_or_skip!();
    let x = features(4, 5);
    let y = labels(&x);
    let d = || Dataset::from_f32(&dev, &x, 5, &y).unwrap();
    for bad in [
        vec![1.0; 3],
        vec![1.0, -1.0, 1.0, 1.0],
        vec![1.0, f32::NAN, 1.0, 1.0],
    ] {
        let e = d().with_weights(&bad).unwrap_err();
        assert!(e.to_string().contains("weight"), "{e}");
    }
}

#[test]
fn non_finite_features_are_refused_by_row_and_column() {
    // relu maps NaN to 0 on some adapters, so NaN inputs could train without a NaN loss:
    // the dataset refuses them when it is made, naming the first.
    let dev = dev_or_skip!();
    let mut x = features(6, 9);
    let y = labels(&x);
    x[3 * 5 + 2] = f32::NAN;
    x[4 * 5] = f32::INFINITY;
    let e = Dataset::from_f32(&dev, &x, 5, &y).unwrap_err().to_string();
    assert!(e.contains("NaN at row 3, column 2"), "{e}");
    let e = Dataset::from_f32_targets(&dev, &x, 5, &[0.0; 6], 1)
        .unwrap_err()
        .to_string();
    assert!(e.contains("row 3, column 2"), "{e}");
    let e = Dataset::from_f32_plain(&dev, &[f32::NAN; 30], 5, &y)
        .unwrap_err()
        .to_string();
    assert!(e.contains("row 0, column 0"), "{e}");
}
