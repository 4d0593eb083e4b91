//! Labels one per position: a model whose output is (positions, classes) — Dense on the last
//! axis of a (T, F) input, as a language model's per-token logits — trained with sparse
//! categorical cross-entropy averaged over every position of every sample (Keras's and
//! PyTorch's semantics): one SGD step against a hand-written f64 forward and backward pass,
//! the evaluated loss against the f64 mean, and mismatched positions refused.

mod common;

use suanli::data::Dataset;
use suanli::nn::{Dense, FitOptions, Loss, Optimizer, Sequential};
use suanli::{Device, Error};

macro_rules! dev_or_skip {
    () => {
        match common::device() {
            Some(d) => d,
            None => return,
        }
    };
}

const T: usize = 5;
const F: usize = 4;
const H: usize = 6;
const C: usize = 3;

fn model(dev: &Device) -> Sequential {
    let mut m = Sequential::with_seed(dev, 2).input_shape(&[T, F]);
    m.add(Dense::new(H, "tanh")).unwrap();
    m.add(Dense::new(C, "linear")).unwrap();
    let sgd = Optimizer::Sgd {
        lr: 1.0,
        momentum: 0.0,
        nesterov: false,
    };
    m.compile(sgd, Loss::SparseCategoricalCrossentropy).unwrap();
    m
}

/// Loss and gradients (W1, b1, W2, b2) of the mean cross-entropy over all positions, in f64.
fn reference(w: &[Vec<f32>], x: &[f32], y: &[u32], n: usize) -> (f64, Vec<Vec<f64>>) {
    let f = |v: &Vec<f32>| v.iter().map(|&a| a as f64).collect::<Vec<f64>>();
    let (w1, b1, w2, b2) = (f(&w[0]), f(&w[1]), f(&w[2]), f(&w[3]));
    let rows = n * T;
    let mut g: Vec<Vec<f64>> = w.iter().map(|t| vec![0.0; t.len()]).collect();
    let mut loss = 0.0;
    for r in 0..rows {
        let xr = &x[r * F..(r + 1) * F];
        let h: Vec<f64> = (0..H)
            .map(|j| (b1[j] + (0..F).map(|i| xr[i] as f64 * w1[i * H + j]).sum::<f64>()).tanh())
            .collect();
        let z: Vec<f64> = (0..C)
            .map(|k| b2[k] + (0..H).map(|j| h[j] * w2[j * C + k]).sum::<f64>())
            .collect();
        let top = z.iter().cloned().fold(f64::MIN, f64::max);
        let sum: f64 = z.iter().map(|v| (v - top).exp()).sum();
        loss += -(z[y[r] as usize] - top - sum.ln());
        let dz: Vec<f64> = (0..C)
            .map(|k| (((z[k] - top).exp() / sum) - (k == y[r] as usize) as u8 as f64) / rows as f64)
            .collect();
        for j in 0..H {
            let mut dh = 0.0;
            for k in 0..C {
                g[2][j * C + k] += h[j] * dz[k];
                dh += dz[k] * w2[j * C + k];
            }
            let dzh = dh * (1.0 - h[j] * h[j]);
            for i in 0..F {
                g[0][i * H + j] += xr[i] as f64 * dzh;
            }
            g[1][j] += dzh;
        }
        for k in 0..C {
            g[3][k] += dz[k];
        }
    }
    (loss / rows as f64, g)
}

#[test]
fn per_position_cross_entropy_matches_f64() {
    let dev = dev_or_skip!();
    let n = 11;
    let x = common::random_vec(n * T * F, 3);
    let y: Vec<u32> = (0..n * T).map(|i| ((i * 7 + i / 3) % C) as u32).collect();
    let data = Dataset::from_f32_positions(&dev, &x, T * F, &y, T)
        .unwrap()
        .with_sample_shape(&[T, F])
        .unwrap();
    assert_eq!(data.target_len(), T);
    let mut m = model(&dev);
    let w0: Vec<Vec<f32>> = m
        .weights()
        .iter()
        .map(|(_, t)| t.to_vec().unwrap())
        .collect();
    let (want_loss, want) = reference(&w0, &x, &y, n);
    let e = m.evaluate(&data, 4).unwrap();
    assert!(
        (e.loss - want_loss).abs() < 1e-5 * want_loss,
        "evaluated loss {} vs f64 {want_loss}",
        e.loss
    );
    // Accuracy over positions, as predict's argmax per position says.
    let xt = suanli::Tensor::from_slice(&dev, &x, &[n, T, F]).unwrap();
    let p = m.predict(&xt).unwrap().to_vec().unwrap();
    let right = (0..n * T)
        .filter(|&r| {
            let row = &p[r * C..(r + 1) * C];
            let best = (0..C).fold(0, |b, k| if row[k] > row[b] { k } else { b });
            best == y[r] as usize
        })
        .count();
    let acc = e.accuracy.unwrap();
    assert!(
        (acc - right as f64 / (n * T) as f64).abs() < 1e-9,
        "accuracy {acc} vs {right}/{}",
        n * T
    );
    let o = FitOptions {
        epochs: 1,
        batch_size: n,
        shuffle: false,
        ..Default::default()
    };
    let h = m.fit(&data, o).unwrap();
    assert!(
        (h.loss[0] - want_loss).abs() < 1e-5 * want_loss,
        "{} vs {want_loss}",
        h.loss[0]
    );
    let w1: Vec<Vec<f32>> = m
        .weights()
        .iter()
        .map(|(_, t)| t.to_vec().unwrap())
        .collect();
    for (k, name) in ["kernel 1", "bias 1", "kernel 2", "bias 2"]
        .iter()
        .enumerate()
    {
        let got: Vec<f32> = w0[k].iter().zip(&w1[k]).map(|(a, b)| a - b).collect();
        common::assert_rel_l2(&format!("gradient of {name}"), &got, &want[k], 1e-4);
    }
}

#[test]
fn positions_that_do_not_match_the_output_are_refused() {
    let dev = dev_or_skip!();
    let n = 4;
    let x = common::random_vec(n * T * F, 4);
    // Four labels per sample for an output of five positions.
    let y: Vec<u32> = vec![1; n * (T - 1)];
    let data = Dataset::from_f32_positions(&dev, &x, T * F, &y, T - 1)
        .unwrap()
        .with_sample_shape(&[T, F])
        .unwrap();
    let mut m = model(&dev);
    let e = m.fit(&data, FitOptions::default()).unwrap_err();
    assert!(matches!(e, Error::ShapeMismatch { .. }), "{e:?}");
    assert!(e.to_string().contains("5 labels per sample"), "{e}");
    // A class index beyond the last axis' classes.
    let y: Vec<u32> = (0..n * T).map(|i| if i == 7 { 3 } else { 0 }).collect();
    let data = Dataset::from_f32_positions(&dev, &x, T * F, &y, T)
        .unwrap()
        .with_sample_shape(&[T, F])
        .unwrap();
    let e = m.fit(&data, FitOptions::default()).unwrap_err();
    assert!(e.to_string().contains("below the model's 3 classes"), "{e}");
    // Labels that do not split into samples.
    assert!(Dataset::from_f32_positions(&dev, &x, T * F, &[1u32; 7], T).is_err());
    // Still usable.
    let y: Vec<u32> = vec![2; n * T];
    let data = Dataset::from_f32_positions(&dev, &x, T * F, &y, T)
        .unwrap()
        .with_sample_shape(&[T, F])
        .unwrap();
    assert!(m.fit(&data, FitOptions::default()).is_ok());
}
