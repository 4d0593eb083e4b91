//! The layers Keras programs put between the others (Activation, Softmax, ReLU, Rescaling),
//! a model nested in another with its weights shared, and losses called on data.
//!
//! Equivalences are exact where the arithmetic is the same: `Dense(10) → Softmax()` trains
//! through the same kernels as `Dense(10, "softmax")` (the softmax folds into the loss either
//! way), so their histories must be identical to the bit.

mod common;

use common::random_vec;
use suanli::data::Dataset;
use suanli::nn::{
    loss_value, Activation, Dense, FitOptions, Loss, Optimizer, ReLU, Rescaling, Sequential,
    Softmax,
};
use suanli::{Device, Tensor};

fn data(dev: &Device, rows: usize) -> Dataset {
    let x = random_vec(rows * 6, 5);
    let y: Vec<u32> = (0..rows)
        .map(|r| {
            // A learnable rule: the class is where the first three features peak.
            let f = &x[r * 6..r * 6 + 3];
            (0..3).max_by(|&a, &b| f[a].total_cmp(&f[b])).unwrap() as u32
        })
        .collect();
    Dataset::from_f32(dev, &x, 6, &y).unwrap()
}

fn fit(m: &mut Sequential, d: &Dataset) -> Vec<f64> {
    m.compile(Optimizer::adam(), Loss::SparseCategoricalCrossentropy)
        .unwrap();
    let opts = FitOptions {
        epochs: 3,
        batch_size: 16,
        seed: 7,
        ..Default::default()
    };
    m.fit(d, opts).unwrap().loss
}

#[test]
fn a_softmax_layer_trains_as_a_softmax_activation() {
    let dev = dev_or_skip!();
    let d = data(&dev, 96);
    let mut a = Sequential::with_seed(&dev, 3).input_shape(&[6]);
    a.add(Dense::new(8, "tanh")).unwrap();
    a.add(Dense::new(3, "softmax")).unwrap();
    let mut b = Sequential::with_seed(&dev, 3).input_shape(&[6]);
    b.add(Dense::new(8, "tanh")).unwrap();
    b.add(Dense::new(3, "linear")).unwrap();
    b.add(Softmax::new()).unwrap();
    let (la, lb) = (fit(&mut a, &d), fit(&mut b, &d));
    assert!(la[2] < la[0], "the model learns: {la:?}");
    assert_eq!(la, lb, "Dense(softmax) and Dense → Softmax train alike");
    let x = Tensor::from_slice(&dev, &random_vec(12, 9), &[2, 6]).unwrap();
    let (pa, pb) = (
        a.predict(&x).unwrap().to_vec().unwrap(),
        b.predict(&x).unwrap().to_vec().unwrap(),
    );
    assert_eq!(pa, pb, "and predict alike");
    let row: f32 = pb[..3].iter().sum();
    assert!(
        (row - 1.0).abs() < 1e-5,
        "Softmax predicts probabilities: {pb:?}"
    );
}

#[test]
fn relu_and_activation_layers_train_as_fused_activations() {
    let dev = dev_or_skip!();
    let d = data(&dev, 96);
    let mut fused = Sequential::with_seed(&dev, 4).input_shape(&[6]);
    fused.add(Dense::new(8, "relu")).unwrap();
    fused.add(Dense::new(8, "sigmoid")).unwrap();
    fused.add(Dense::new(3, "softmax")).unwrap();
    let mut layered = Sequential::with_seed(&dev, 4).input_shape(&[6]);
    layered.add(Dense::new(8, "linear")).unwrap();
    layered.add(ReLU::new()).unwrap();
    layered.add(Dense::new(8, "linear")).unwrap();
    layered.add(Activation::new("sigmoid")).unwrap();
    layered.add(Dense::new(3, "linear")).unwrap();
    layered.add(Activation::new("softmax")).unwrap();
    let (lf, ll) = (fit(&mut fused, &d), fit(&mut layered, &d));
    for (a, b) in lf.iter().zip(&ll) {
        assert!((a - b).abs() <= 1e-5 * a.abs(), "{lf:?} vs {ll:?}");
    }
}

#[test]
fn rescaling_is_an_affine_map() {
    let dev = dev_or_skip!();
    let mut m = Sequential::new(&dev).input_shape(&[2, 3]);
    m.add(Rescaling::new(1.0 / 255.0, -0.5)).unwrap();
    let x: Vec<f32> = (0..12).map(|i| (i * 20) as f32).collect();
    let t = Tensor::from_slice(&dev, &x, &[2, 2, 3]).unwrap();
    let y = m.predict(&t).unwrap();
    assert_eq!(y.shape(), &[2, 2, 3]);
    for (got, &v) in y.to_vec().unwrap().iter().zip(&x) {
        let want = v as f64 / 255.0 - 0.5;
        assert!((*got as f64 - want).abs() < 1e-6, "{got} vs {want}");
    }
    let bad =
        serde_json::json!({"class_name": "Rescaling", "config": {"scale": 1.0, "offset": "x"}});
    assert!(m.add(bad).is_err(), "a non-numeric offset is refused");
    let bad = serde_json::json!({"class_name": "ReLU", "config": {"max_value": 6.0}});
    let e = m.add(bad).unwrap_err().to_string();
    assert!(e.contains("max_value"), "{e}");
}

#[test]
fn a_nested_model_shares_its_weights() {
    let dev = dev_or_skip!();
    let d = data(&dev, 96);
    let mut inner = Sequential::with_seed(&dev, 5).input_shape(&[6]);
    inner.add(Dense::new(8, "tanh")).unwrap();
    inner.add(Dense::new(3, "linear")).unwrap();
    let mut outer = Sequential::new(&dev);
    outer.add_shared(&inner).unwrap();
    outer.add(Softmax::new()).unwrap();
    assert_eq!(outer.len(), 3);
    assert_eq!(outer.param_count(), inner.param_count());
    let x = Tensor::from_slice(&dev, &random_vec(12, 9), &[2, 6]).unwrap();
    let before = outer.predict(&x).unwrap().to_vec().unwrap();
    // Training the inner model changes what the outer one predicts: the weights are shared.
    fit(&mut inner, &d);
    let logits = inner.predict(&x).unwrap().to_vec().unwrap();
    let after = outer.predict(&x).unwrap().to_vec().unwrap();
    assert_ne!(
        before, after,
        "the outer model sees the inner model's training"
    );
    for r in 0..2 {
        let row = &logits[r * 3..r * 3 + 3];
        let m = row.iter().cloned().fold(f32::MIN, f32::max);
        let s: f32 = row.iter().map(|v| (v - m).exp()).sum();
        for c in 0..3 {
            let want = (row[c] - m).exp() / s;
            assert!((after[r * 3 + c] - want).abs() < 1e-6);
        }
    }
    // A softmax model cannot be followed by more layers, nested or not.
    let mut probs = Sequential::new(&dev);
    probs.add_shared(&outer).unwrap();
    assert!(probs.add(Dense::new(2, "linear")).is_err());
}

#[test]
fn losses_called_on_data_match_their_formulas() {
    let dev = dev_or_skip!();
    let logits = [2.0f32, -1.0, 0.5, 0.1, 0.2, 3.0];
    let y = Tensor::from_slice(&dev, &logits, &[2, 3]).unwrap();
    let lse = |r: &[f32]| r.iter().map(|&v| (v as f64).exp()).sum::<f64>().ln();
    let want = ((lse(&logits[..3]) - 2.0) + (lse(&logits[3..]) - 3.0)) / 2.0;
    let scalar = |t: Tensor| {
        assert_eq!(t.shape(), &[] as &[usize], "a scalar");
        t.to_vec().unwrap()[0] as f64
    };
    let got =
        scalar(loss_value(Loss::SparseCategoricalCrossentropy, true, &[0.0, 2.0], &y).unwrap());
    assert!((got - want).abs() < 1e-5, "{got} vs {want}");
    // The same through probabilities, and as a categorical cross-entropy on one-hot rows.
    let p = y.softmax(1).unwrap();
    let got =
        scalar(loss_value(Loss::SparseCategoricalCrossentropy, false, &[0.0, 2.0], &p).unwrap());
    assert!((got - want).abs() < 1e-5, "{got} vs {want}");
    let onehot = [1.0, 0.0, 0.0, 0.0, 0.0, 1.0];
    for (from_logits, t) in [(true, &y), (false, &p)] {
        let got =
            scalar(loss_value(Loss::CategoricalCrossentropy, from_logits, &onehot, t).unwrap());
        assert!(
            (got - want).abs() < 1e-5,
            "from_logits={from_logits}: {got} vs {want}"
        );
    }
    // Binary cross-entropy and MSE, element by element.
    let t = [1.0f32, 0.0, 1.0, 0.0, 1.0, 1.0];
    let bce: f64 = logits
        .iter()
        .zip(&t)
        .map(|(&x, &t)| {
            let s = 1.0 / (1.0 + (-(x as f64)).exp());
            -(t as f64 * s.ln() + (1.0 - t as f64) * (1.0 - s).ln())
        })
        .sum::<f64>()
        / 6.0;
    let got = scalar(loss_value(Loss::BinaryCrossentropy, true, &t, &y).unwrap());
    assert!((got - bce).abs() < 1e-5, "{got} vs {bce}");
    let s = y.sigmoid().unwrap();
    let got = scalar(loss_value(Loss::BinaryCrossentropy, false, &t, &s).unwrap());
    assert!((got - bce).abs() < 1e-4, "{got} vs {bce}");
    let mse: f64 = logits
        .iter()
        .zip(&t)
        .map(|(&x, &t)| (x as f64 - t as f64).powi(2))
        .sum::<f64>()
        / 6.0;
    let got = scalar(loss_value(Loss::MeanSquaredError, false, &t, &y).unwrap());
    assert!((got - mse).abs() < 1e-5, "{got} vs {mse}");
    // Typed errors: a label out of range, a fractional label, the wrong count of targets.
    assert!(loss_value(Loss::SparseCategoricalCrossentropy, true, &[0.0, 3.0], &y).is_err());
    assert!(loss_value(Loss::SparseCategoricalCrossentropy, true, &[0.0, 1.5], &y).is_err());
    assert!(loss_value(Loss::CategoricalCrossentropy, true, &[1.0, 0.0], &y).is_err());
    // Keras's from_logits against the output layer.
    let lin = suanli::Activation::Linear;
    let sm = suanli::Activation::Softmax;
    assert!(Loss::SparseCategoricalCrossentropy
        .check_from_logits(true, lin)
        .is_ok());
    assert!(Loss::SparseCategoricalCrossentropy
        .check_from_logits(false, sm)
        .is_ok());
    assert!(Loss::SparseCategoricalCrossentropy
        .check_from_logits(true, sm)
        .is_err());
    assert!(Loss::SparseCategoricalCrossentropy
        .check_from_logits(false, lin)
        .is_err());
}

#[test]
fn weights_read_and_write_in_place() {
    let dev = dev_or_skip!();
    let mut inner = Sequential::with_seed(&dev, 5).input_shape(&[6]);
    inner.add(Dense::new(4, "tanh")).unwrap();
    inner.add(Dense::new(3, "linear")).unwrap();
    let mut outer = Sequential::new(&dev);
    outer.add_shared(&inner).unwrap();
    outer.add(Softmax::new()).unwrap();
    let w = inner.weights();
    let names: Vec<&str> = w.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "dense/kernel",
            "dense/bias",
            "dense_1/kernel",
            "dense_1/bias"
        ]
    );
    assert_eq!(w[0].1.shape(), &[6, 4], "Keras's (inputs, units)");
    // New values written into the inner model reach the outer one.
    let values: Vec<Vec<f32>> = w
        .iter()
        .enumerate()
        .map(|(k, (_, t))| random_vec(t.numel(), 20 + k as u64))
        .collect();
    let refs: Vec<&[f32]> = values.iter().map(|v| v.as_slice()).collect();
    inner.set_weights(&refs).unwrap();
    for ((_, t), v) in outer.weights().iter().zip(&values) {
        assert_eq!(&t.to_vec().unwrap(), v);
    }
    let x = Tensor::from_slice(&dev, &random_vec(6, 9), &[1, 6]).unwrap();
    let h: Vec<f64> = (0..4)
        .map(|j| {
            let z: f64 = (0..6)
                .map(|i| values[0][i * 4 + j] as f64 * x.to_vec().unwrap()[i] as f64)
                .sum();
            (z + values[1][j] as f64).tanh()
        })
        .collect();
    let logits = inner.predict(&x).unwrap().to_vec().unwrap();
    for c in 0..3 {
        let z: f64 = (0..4)
            .map(|j| values[2][j * 3 + c] as f64 * h[j])
            .sum::<f64>()
            + values[3][c] as f64;
        assert!((logits[c] as f64 - z).abs() < 1e-5, "{} vs {z}", logits[c]);
    }
    // Checked before anything is written.
    assert!(inner.set_weights(&refs[..3]).is_err());
    let mut short = refs.clone();
    short[2] = &values[2][..5];
    assert!(inner.set_weights(&short).is_err());
    let nan = vec![f32::NAN; 3];
    let mut bad = refs.clone();
    bad[3] = &nan;
    assert!(inner.set_weights(&bad).is_err());
    assert_eq!(inner.weights()[3].1.to_vec().unwrap(), values[3]);
}

#[test]
fn normalization_shifts_and_scales_each_feature() {
    use suanli::internals::reference;
    use suanli::nn::Normalization;
    let dev = dev_or_skip!();
    let (mean, var) = ([0.5f32, -1.0, 2.0], [4.0f32, 0.25, 0.0]);
    let mut m = Sequential::new(&dev).input_shape(&[2, 3]);
    m.add(Normalization::new().with_stats(&[0.5, -1.0, 2.0], &[4.0, 0.25, 0.0]))
        .unwrap();
    let x = random_vec(5 * 6, 31);
    let t = Tensor::from_slice(&dev, &x, &[5, 2, 3]).unwrap();
    let got = m.predict(&t).unwrap().to_vec().unwrap();
    // A variance of 0 divides by Keras's floor of 1e-7, as Keras does.
    let want = reference::normalize(&x, &mean, &var, 3);
    for (g, w) in got.iter().zip(&want) {
        assert!(
            (*g as f64 - w).abs() <= 1e-6 * w.abs().max(1.0),
            "{g} vs {w}"
        );
    }
    // The statistics are state: no trainable parameters, two state tensors.
    assert_eq!((m.param_count(), m.state_count()), (0, 6));
    // One value stands for every feature; a count that fits neither is refused.
    let mut one = Sequential::new(&dev).input_shape(&[3]);
    one.add(Normalization::new().with_stats(&[1.0], &[4.0]))
        .unwrap();
    let y = one
        .predict(&Tensor::from_slice(&dev, &[3.0, 1.0, -1.0], &[1, 3]).unwrap())
        .unwrap()
        .to_vec()
        .unwrap();
    assert_eq!(y, [1.0, 0.0, -1.0]);
    let mut bad = Sequential::new(&dev).input_shape(&[3]);
    assert!(bad
        .add(Normalization::new().with_stats(&[1.0, 2.0], &[1.0, 1.0]))
        .is_err());
    assert!(bad
        .add(Normalization::new().with_stats(&[1.0], &[-1.0]))
        .is_err());
}
