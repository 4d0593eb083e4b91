//! Tied weights: a Dense using an earlier layer's matrix transposed (a GPT's output
//! projection reading the token embedding, a tied autoencoder's decoder). It predicts
//! `x·Mᵀ`, trains like an f64 run in which the matrix's gradient is the sum of both uses',
//! counts and saves the matrix once, builds from a config and a chain as from the functional
//! API, and refuses what cannot be tied with typed errors.

mod common;

use suanli::data::Dataset;
use suanli::nn::{Conv2D, Dense, FitOptions, Input, Loss, Model, Optimizer, Sequential, Share};
use suanli::{Device, Error, Tensor};

macro_rules! dev_or_skip {
    () => {
        match common::device() {
            Some(d) => d,
            None => return,
        }
    };
}

const N: usize = 48;
/// Features, and classes: the tied projection maps the hidden size back to D.
const D: usize = 5;
const H: usize = 3;

fn rows() -> (Vec<f32>, Vec<u32>) {
    let mut rng = suanli::random::Rng::new(31);
    let (mut x, mut y) = (vec![], vec![]);
    for i in 0..N {
        let c = i % D;
        for j in 0..D {
            x.push((rng.normal() * 0.5 + if j == c { 1.0 } else { 0.0 }) as f32);
        }
        y.push(c as u32);
    }
    (x, y)
}

/// x (D) → Dense(H, tanh, no bias) → the same matrix transposed (D), softmax.
fn model(dev: &Device, seed: u64) -> Model {
    let x = Input::new(&[D]);
    let enc = Dense::new(H, "tanh").use_bias(false).shared().unwrap();
    let h = enc.call(&x).unwrap();
    let y = enc.transposed().activation("softmax").call(&h).unwrap();
    Model::with_seed(dev, seed).build(&[&x], &[&y]).unwrap()
}

fn weights_of(m: &Model) -> Vec<Vec<f32>> {
    m.weights()
        .iter()
        .map(|(_, t)| t.to_vec().unwrap())
        .collect()
}

fn opts(epochs: usize, batch_size: usize) -> FitOptions<'static> {
    FitOptions {
        epochs,
        batch_size,
        shuffle: false,
        ..Default::default()
    }
}

/// `h = tanh(x·W)`, `z = h·Wᵀ`, W (D, H), in f64.
fn forward(w: &[f64], x: &[f32]) -> (Vec<f64>, Vec<f64>) {
    let h: Vec<f64> = (0..H)
        .map(|u| {
            (0..D)
                .map(|i| f64::from(x[i]) * w[i * H + u])
                .sum::<f64>()
                .tanh()
        })
        .collect();
    let z = (0..D)
        .map(|i| (0..H).map(|u| h[u] * w[i * H + u]).sum())
        .collect();
    (h, z)
}

/// The same SGD run in f64: W after `epochs` of batches of `b` in order, its gradient the
/// sum of the encoder's and the tied projection's.
fn reference(w0: &[f32], lr: f64, b: usize, epochs: usize) -> Vec<f64> {
    let (x, y) = rows();
    let mut w: Vec<f64> = w0.iter().map(|&v| f64::from(v)).collect();
    for _ in 0..epochs {
        for start in (0..N).step_by(b) {
            let batch: Vec<usize> = (start..(start + b).min(N)).collect();
            let nb = batch.len() as f64;
            let mut g = vec![0.0; w.len()];
            for &r in &batch {
                let xr = &x[r * D..(r + 1) * D];
                let (h, z) = forward(&w, xr);
                let m = z.iter().cloned().fold(f64::MIN, f64::max);
                let e: Vec<f64> = z.iter().map(|v| (v - m).exp()).collect();
                let s: f64 = e.iter().sum();
                let dz: Vec<f64> = (0..D)
                    .map(|i| (e[i] / s - f64::from(i == y[r] as usize)) / nb)
                    .collect();
                for u in 0..H {
                    // The projection's use: dW[i][u] += dz[i]·h[u]; and dh through it.
                    let mut dh = 0.0;
                    for i in 0..D {
                        g[i * H + u] += dz[i] * h[u];
                        dh += dz[i] * w[i * H + u];
                    }
                    // The encoder's use.
                    let dp = dh * (1.0 - h[u] * h[u]);
                    for i in 0..D {
                        g[i * H + u] += f64::from(xr[i]) * dp;
                    }
                }
            }
            for (a, d) in w.iter_mut().zip(&g) {
                *a -= lr * d;
            }
        }
    }
    w
}

#[test]
fn a_tied_projection_predicts_x_times_the_matrix_transposed() {
    let dev = dev_or_skip!();
    let m = model(&dev, 3);
    let (x, _) = rows();
    let w: Vec<f64> = weights_of(&m)[0].iter().map(|&v| f64::from(v)).collect();
    let rows_in = 7;
    let t = Tensor::from_slice(&dev, &x[..rows_in * D], &[rows_in, D]).unwrap();
    let got = m.predict(&t).unwrap().to_vec().unwrap();
    let mut want = Vec::new();
    for r in 0..rows_in {
        let (_, z) = forward(&w, &x[r * D..(r + 1) * D]);
        let mx = z.iter().cloned().fold(f64::MIN, f64::max);
        let s: f64 = z.iter().map(|v| (v - mx).exp()).sum();
        want.extend(z.iter().map(|v| (v - mx).exp() / s));
    }
    let rel = common::rel_l2(&got, &want);
    assert!(rel < 1e-5, "relative L2 {rel:e}");
}

#[test]
fn the_matrix_trains_with_the_sum_of_both_uses_gradients() {
    let dev = dev_or_skip!();
    let mut m = model(&dev, 5);
    // One weight: the encoder's matrix, which the projection reads too.
    let names: Vec<String> = m.weights().into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["dense/kernel"]);
    assert_eq!(m.param_count(), D * H);
    assert!(m.has_shared_weights());
    let start = weights_of(&m)[0].clone();
    let lr = 0.3;
    m.compile(Optimizer::sgd(lr), Loss::SparseCategoricalCrossentropy)
        .unwrap();
    let (x, y) = rows();
    m.fit(&Dataset::from_f32(&dev, &x, D, &y).unwrap(), opts(3, 16))
        .unwrap();
    let got = &weights_of(&m)[0];
    let want = reference(&start, lr, 16, 3);
    let rel = common::rel_l2(got, &want);
    assert!(rel < 1e-5, "relative L2 {rel:e}");
    // It moved, and not as the encoder's gradient alone would move it.
    let still: Vec<f64> = start.iter().map(|&v| f64::from(v)).collect();
    assert!(common::rel_l2(got, &still) > 1e-3);
}

#[test]
fn a_chain_a_config_and_a_file_tie_as_the_functional_api_does() {
    let dev = dev_or_skip!();
    // The chain form names the owner: Sequential's Dense(D).tied_to("dense").
    let mut chain = Sequential::with_seed(&dev, 5).input_shape(&[D]);
    chain.add(Dense::new(H, "tanh").use_bias(false)).unwrap();
    chain
        .add(Dense::new(D, "softmax").tied_to("dense"))
        .unwrap();
    let graph = model(&dev, 5);
    assert_eq!(weights_of(&chain), weights_of(&graph));
    assert_eq!(chain.param_count(), D * H);
    let (x, y) = rows();
    let data = Dataset::from_f32(&dev, &x, D, &y).unwrap();
    let t = Tensor::from_slice(&dev, &x[..10 * D], &[10, D]).unwrap();
    let mut trained = Vec::new();
    for mut m in [chain, graph] {
        m.compile(Optimizer::adam(), Loss::SparseCategoricalCrossentropy)
            .unwrap();
        m.fit(&data, opts(2, 16)).unwrap();
        trained.push(m);
    }
    assert_eq!(weights_of(&trained[0]), weights_of(&trained[1]));
    let m = &trained[1];
    // A chain's file lists its layers; the projection's names the owner.
    assert_eq!(m.architecture()[1]["config"]["tied_to"], "dense");
    // A graph's functional config too (two outputs: the code and the projection); rebuilt
    // from it, the model ties the same way.
    let xi = Input::new(&[D]);
    let enc = Dense::new(H, "tanh").use_bias(false).shared().unwrap();
    let code = enc.call(&xi).unwrap();
    let back = enc.transposed().call(&code).unwrap();
    let two = Model::with_seed(&dev, 5)
        .build(&[&xi], &[&back, &code])
        .unwrap();
    let config = two.architecture();
    let layers = config["config"]["layers"]
        .as_array()
        .unwrap_or_else(|| panic!("{config}"));
    assert_eq!(layers[2]["config"]["tied_to"], "dense", "{config}");
    let rebuilt = Model::from_config(&dev, 5, &config).unwrap();
    assert_eq!(rebuilt.architecture(), config);
    assert_eq!(rebuilt.param_count(), D * H);
    assert!(rebuilt.has_shared_weights());
    // Chain-shaped but with two outputs: its file keeps both (a list of layers would not).
    let dir = std::env::temp_dir().join(format!("suanli-tied-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("two.safetensors");
    two.save(&file).unwrap();
    let back_in = Model::load(&dev, &file).unwrap();
    assert_eq!(back_in.output_names(), two.output_names());
    assert_eq!(back_in.output_names().len(), 2);
    // The file stores the matrix once; loaded, the projection holds the loaded matrix.
    let file = dir.join("tied.safetensors");
    m.save(&file).unwrap();
    let bytes = std::fs::read(&file).unwrap();
    let st = safetensors::SafeTensors::deserialize(&bytes).unwrap();
    assert_eq!(st.names(), ["dense.kernel"]);
    let loaded = Model::load(&dev, &file).unwrap();
    assert!(loaded.has_shared_weights());
    assert_eq!(
        loaded.predict(&t).unwrap().to_vec().unwrap(),
        m.predict(&t).unwrap().to_vec().unwrap()
    );
    // A checkpoint resumes to the same weights as training on.
    let ck = dir.join("tied.ckpt");
    m.save_checkpoint(&ck, 2, 0, &Default::default()).unwrap();
    let (mut resumed, _) = Model::load_checkpoint(&dev, &ck).unwrap();
    let mut on = m.to_device(&dev).unwrap();
    assert!(on.has_shared_weights());
    on.fit(&data, opts(1, 16)).unwrap();
    resumed.fit(&data, opts(1, 16)).unwrap();
    assert_eq!(weights_of(&resumed), weights_of(&on));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn what_cannot_be_tied_is_refused_with_typed_errors() {
    let dev = dev_or_skip!();
    // A bias of its own.
    let mut d = Dense::new(D, "linear").tied_to("dense");
    d.use_bias = true;
    let mut m = Sequential::new(&dev).input_shape(&[D]);
    m.add(Dense::new(H, "tanh")).unwrap();
    match m.add(d) {
        Err(Error::InvalidArgument { name, found, .. }) => {
            assert_eq!(name, "use_bias");
            assert!(found.contains("true"), "{found}");
        }
        r => panic!("{r:?}"),
    }
    // No earlier layer of that name.
    match m.add(Dense::new(D, "linear").tied_to("embedding")) {
        Err(Error::InvalidArgument { name, found, .. }) => {
            assert_eq!(name, "tied_to");
            assert!(found.contains("\"embedding\""), "{found}");
        }
        r => panic!("{r:?}"),
    }
    // A matrix of another shape: dense's is (5, 3); a Dense(4) reading size 3 needs (4, 3).
    match m.add(Dense::new(D - 1, "linear").tied_to("dense")) {
        Err(Error::ShapeMismatch {
            expected, found, ..
        }) => {
            assert!(expected.contains("[4, 3]"), "{expected}");
            assert!(found.contains("[5, 3]"), "{found}");
        }
        r => panic!("{r:?}"),
    }
    // The model is unchanged and still ties what fits.
    assert_eq!(m.len(), 1);
    m.add(Dense::new(D, "linear").tied_to("dense")).unwrap();
    assert_eq!(m.param_count(), D * H + H);
    // A transpose before any call of its owner, of a layer without a matrix, on an input
    // whose last size is not the matrix's second.
    let x = Input::new(&[4, 4, 2]);
    let enc = Dense::new(H, "tanh").shared().unwrap();
    assert!(matches!(
        enc.transposed().call(&x),
        Err(Error::InvalidArgument { .. })
    ));
    let conv = Conv2D::new(2, 3).shared().unwrap();
    conv.call(&x).unwrap();
    match conv.transposed().call(&x) {
        Err(Error::InvalidArgument { found, .. }) => {
            assert!(found.contains("[3, 3, 2, 2]"), "{found}");
        }
        r => panic!("{r:?}"),
    }
    let v = Input::new(&[D]);
    let h = enc.call(&v).unwrap();
    match enc.transposed().call(&v) {
        Err(Error::ShapeMismatch {
            expected, found, ..
        }) => {
            assert!(expected.contains("last size is 3"), "{expected}");
            assert!(found.contains("(5,)"), "{found}");
        }
        r => panic!("{r:?}"),
    }
    let y = enc.transposed().call(&h).unwrap();
    assert_eq!(y.shape(), [D]);
    // A transpose whose owner is not on the way to it (the graph meets it first).
    let other = Dense::new(H, "tanh").shared().unwrap();
    let side = Input::new(&[D]);
    other.call(&side).unwrap();
    let lone = other.transposed().call(&h).unwrap();
    assert!(matches!(
        Model::functional(&dev, &[&v], &[&lone]),
        Err(Error::InvalidArgument { .. })
    ));
}
