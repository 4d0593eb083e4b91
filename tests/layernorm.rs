//! The LayerNormalization layer: its backward pass against finite differences of its own
//! forward pass (the generic layer check, with γ and β, without β as nanoGPT's, without
//! either), the layer with random γ and β against the f64 reference (a (batch, T, E) input is
//! normalised over E per position), Keras's axis and argument checks, and a model with it
//! that trains and comes back from its file predicting the same bits.

mod common;

use common::layercheck::check_layer;
use common::{assert_rel_l2, noisy_classes, random_vec, rel_l2};
use suanli::internals::reference;
use suanli::internals::LayerProbe;
use suanli::nn::{
    Dense, FitOptions, Flatten, LayerNormalization, Loss, Optimizer, Reshape, Sequential,
};
use suanli::{Error, Tensor};

const H: f32 = 1e-2;
const TOL: f64 = 2e-2;

#[test]
fn gradients_by_finite_differences() {
    let dev = dev_or_skip!();
    check_layer(
        &dev,
        "LayerNormalization on (4, 6)",
        LayerNormalization::new(),
        &[4, 6],
        3,
        None,
        H,
        TOL,
    );
    check_layer(
        &dev,
        "LayerNormalization without β",
        LayerNormalization::new().center(false),
        &[7],
        4,
        None,
        H,
        TOL,
    );
    check_layer(
        &dev,
        "LayerNormalization without γ or β",
        LayerNormalization::new().center(false).scale(false),
        &[2, 3, 5],
        2,
        None,
        H,
        TOL,
    );
}

#[test]
fn random_gamma_and_beta_against_the_reference() {
    let dev = dev_or_skip!();
    let (batch, t, e) = (3, 5, 24);
    let p = LayerProbe::new(&dev, LayerNormalization::new(), &[t, e], 3).unwrap();
    let gamma: Vec<f32> = random_vec(e, 1).iter().map(|v| 1.0 + v).collect();
    let beta = random_vec(e, 2);
    p.set_params(&[gamma.clone(), beta.clone()]).unwrap();
    let x = random_vec(batch * t * e, 3);
    let dy = random_vec(batch * t * e, 4);
    let eps = 1e-3;
    let want = reference::layernorm(&x, e, Some(&gamma), Some(&beta), eps);
    assert_rel_l2("y", &p.forward(&x, batch).unwrap(), &want, 1e-5);
    let got = p.backward(&x, batch, &dy).unwrap();
    let (dx, dg, db) = reference::layernorm_backward(&dy, &x, e, Some(&gamma), eps);
    assert_rel_l2("dx", &got.dx, &dx, 1e-5);
    assert_rel_l2("dgamma", &got.params[0], &dg, 1e-5);
    assert_rel_l2("dbeta", &got.params[1], &db, 1e-5);
}

#[test]
fn only_the_last_axis_and_keras_arguments() {
    let dev = dev_or_skip!();
    let mut m = Sequential::new(&dev).input_shape(&[4, 8]);
    match m.add(LayerNormalization::new().axis(1)).unwrap_err() {
        Error::InvalidArgument {
            name: "axis",
            expected,
            found,
            ..
        } => {
            assert_eq!(found, "1");
            assert!(expected.contains("-1 or 2"), "{expected}");
        }
        other => panic!("expected an axis error, got {other}"),
    }
    // The last axis by its index (the batch is axis 0), as Keras counts.
    m.add(LayerNormalization::new().axis(2)).unwrap();
    assert!(m.add(LayerNormalization::new().epsilon(0.0)).is_err());
    let bad = serde_json::json!({"class_name": "LayerNormalization",
        "config": {"gamma_initializer": "zeros"}});
    let e = m.add(bad).unwrap_err().to_string();
    assert!(e.contains("gamma_initializer"), "{e}");
    // Weights: γ then β, shape (E,), both trainable; none without scale and center.
    let names: Vec<String> = m.weights().into_iter().map(|(n, _)| n).collect();
    assert_eq!(
        names,
        ["layer_normalization/gamma", "layer_normalization/beta"]
    );
    assert_eq!(m.weights()[0].1.shape(), &[8]);
    m.add(LayerNormalization::new().center(false).scale(false))
        .unwrap();
    assert_eq!(m.weights().len(), 2);
    // Keras 3 writes `rms_scaling`: false loads, true (RMS normalisation) is refused.
    let keras3 = |on: bool| {
        let config = serde_json::json!({ "rms_scaling": on });
        serde_json::json!({"class_name": "LayerNormalization", "config": config})
    };
    assert!(m
        .add(keras3(true))
        .unwrap_err()
        .to_string()
        .contains("rms_scaling"));
    m.add(keras3(false)).unwrap();
    assert_eq!(m.weights().len(), 4);
}

#[test]
fn a_model_with_it_trains_and_comes_back_from_its_file() {
    let dev = dev_or_skip!();
    let d = noisy_classes(&dev, 192);
    let mut m = Sequential::with_seed(&dev, 9).input_shape(&[12]);
    m.add(Reshape::new(&[3, 4])).unwrap();
    m.add(Dense::new(8, "tanh")).unwrap();
    m.add(LayerNormalization::new()).unwrap();
    m.add(Dense::new(8, "linear")).unwrap();
    m.add(LayerNormalization::new().epsilon(1e-5).center(false))
        .unwrap();
    m.add(Flatten::new()).unwrap();
    m.add(Dense::new(3, "softmax")).unwrap();
    m.compile(Optimizer::adam(), Loss::SparseCategoricalCrossentropy)
        .unwrap();
    let opts = FitOptions {
        epochs: 6,
        batch_size: 16,
        seed: 3,
        ..Default::default()
    };
    let loss = m.fit(&d, opts).unwrap().loss;
    eprintln!("loss by epoch: {loss:?}");
    assert!(
        loss.iter().all(|l| l.is_finite()) && loss[5] < 0.8 * loss[0],
        "the model learns: {loss:?}"
    );
    let gamma = m
        .weights()
        .into_iter()
        .find(|(n, _)| n == "layer_normalization/gamma")
        .unwrap()
        .1
        .to_vec()
        .unwrap();
    assert!(gamma.iter().any(|&g| g != 1.0), "γ is trained: {gamma:?}");

    let dir = std::env::temp_dir().join(format!("suanli-layernorm-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("model.safetensors");
    m.save(&path).unwrap();
    let back = Sequential::load(&dev, &path).unwrap();
    std::fs::remove_dir_all(&dir).ok();
    assert_eq!(back.layer_specs(), m.layer_specs());
    let x = Tensor::from_slice(&dev, &random_vec(5 * 12, 8), &[5, 12]).unwrap();
    let (a, b) = (
        m.predict(&x).unwrap().to_vec().unwrap(),
        back.predict(&x).unwrap().to_vec().unwrap(),
    );
    let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
    assert_eq!(
        bits(&a),
        bits(&b),
        "the loaded model predicts the same bits"
    );
}

/// One full-batch SGD step through a model `Dense(tanh) → LayerNormalization → Dense`, where
/// the normalisation applies the Dense's tanh derivative inside its input-gradient kernel
/// (the gate): every weight's move, divided by the learning rate, against central
/// differences of the model's own loss.
#[test]
fn a_gated_sgd_step_matches_finite_differences_of_the_loss() {
    let dev = dev_or_skip!();
    let d = noisy_classes(&dev, 24);
    let mut m = Sequential::with_seed(&dev, 4).input_shape(&[12]);
    m.add(Dense::new(6, "tanh")).unwrap();
    m.add(LayerNormalization::new()).unwrap();
    m.add(Dense::new(3, "softmax")).unwrap();
    let lr = 1.0;
    m.compile(Optimizer::sgd(lr), Loss::SparseCategoricalCrossentropy)
        .unwrap();
    // γ and β away from 1 and 0, so the step through them is not a special case.
    let mut w0: Vec<Vec<f32>> = m
        .weights()
        .iter()
        .map(|(_, t)| t.to_vec().unwrap())
        .collect();
    w0[2] = random_vec(6, 31).iter().map(|v| 1.0 + 0.5 * v).collect();
    w0[3] = random_vec(6, 32);
    let set = |w: &[Vec<f32>]| {
        let v: Vec<&[f32]> = w.iter().map(|v| &v[..]).collect();
        m.set_weights(&v).unwrap();
    };
    set(&w0);
    let loss = |w: &[Vec<f32>]| {
        set(w);
        m.evaluate(&d, 24).unwrap().loss
    };
    let h = 1e-2;
    let fd: Vec<Vec<f64>> = (0..w0.len())
        .map(|t| {
            (0..w0[t].len())
                .map(|i| {
                    let mut w = w0.clone();
                    w[t][i] += h;
                    let up = loss(&w);
                    w[t][i] -= 2.0 * h;
                    let down = loss(&w);
                    (up - down) / (2.0 * h as f64)
                })
                .collect()
        })
        .collect();
    set(&w0);
    let opts = FitOptions {
        epochs: 1,
        batch_size: 24,
        shuffle: false,
        ..Default::default()
    };
    m.fit(&d, opts).unwrap();
    for (t, (name, w1)) in m.weights().into_iter().enumerate() {
        let step: Vec<f32> = w1
            .to_vec()
            .unwrap()
            .iter()
            .zip(&w0[t])
            .map(|(a, b)| (b - a) / lr as f32)
            .collect();
        let what = format!("{name}: SGD step vs finite differences");
        eprintln!("{what}: relative L2 error {:.2e}", rel_l2(&step, &fd[t]));
        assert_rel_l2(&what, &step, &fd[t], 2e-3);
    }
}
