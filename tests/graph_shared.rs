//! Weight sharing (Keras's shared layer): one Dense called on two inputs holds one set of
//! weights, trains like an f64 run of the same SGD steps in which its gradient is the sum of
//! both calls', counts once (parameters, summary, file), saves and loads as one layer with two
//! calls, takes the unfused optimizer path, and refuses a call whose input does not fit.

mod common;

use suanli::data::Dataset;
use suanli::nn::{
    Add, Call, Clip, Dense, FitOptions, Input, Loss, Model, Optimizer, Share, Src, SymbolicTensor,
};
use suanli::{Device, Error, Tensor};

macro_rules! dev_or_skip {
    () => {
        match common::device() {
            Some(d) => d,
            None => return,
        }
    };
}

const N: usize = 64;
const D: usize = 4;
const H: usize = 5;
const C: usize = 3;

/// Two columns of 4 features and a class of 3 per row.
fn rows() -> (Vec<f32>, Vec<f32>, Vec<u32>) {
    let mut rng = suanli::random::Rng::new(23);
    let (mut a, mut b, mut y) = (vec![], vec![], vec![]);
    for i in 0..N {
        let c = i % C;
        for j in 0..D {
            a.push((rng.normal() + if j % C == c { 0.7 } else { 0.0 }) as f32);
            b.push((rng.normal() - if (j + 1) % C == c { 0.5 } else { 0.0 }) as f32);
        }
        y.push(c as u32);
    }
    (a, b, y)
}

fn data(dev: &Device) -> Dataset {
    let (a, b, y) = rows();
    Dataset::from_f32(dev, &a, D, &y)
        .unwrap()
        .with_input(&b, &[D])
        .unwrap()
}

/// a, b → one Dense(5, tanh) called on each → Add → Dense(3, softmax); with `shared` false,
/// two Dense layers instead.
fn model(dev: &Device, seed: u64, shared: bool) -> Model {
    let a = Input::named(&[D], "a");
    let b = Input::named(&[D], "b");
    let (ha, hb): (SymbolicTensor, SymbolicTensor) = if shared {
        let s = Dense::new(H, "tanh").shared().unwrap();
        (s.call(&a).unwrap(), s.call(&b).unwrap())
    } else {
        (
            Dense::new(H, "tanh").call(&a).unwrap(),
            Dense::new(H, "tanh").call(&b).unwrap(),
        )
    };
    let s = Add::new().call_on(&[&ha, &hb]).unwrap();
    let y = Dense::new(C, "softmax").call(&s).unwrap();
    Model::with_seed(dev, seed).build(&[&a, &b], &[&y]).unwrap()
}

fn weights_of(m: &Model) -> Vec<Vec<f32>> {
    m.weights()
        .iter()
        .map(|(_, t)| t.to_vec().unwrap())
        .collect()
}

fn sgd(m: &mut Model, lr: f64) {
    m.compile(Optimizer::sgd(lr), Loss::SparseCategoricalCrossentropy)
        .unwrap();
}

fn opts(epochs: usize, batch_size: usize) -> FitOptions<'static> {
    FitOptions {
        epochs,
        batch_size,
        shuffle: false,
        ..Default::default()
    }
}

/// The same SGD run in f64: weights (W, bw, V, bv) after `epochs` of batches of `b` in order.
/// The shared layer's gradient is the sum of its two calls'.
fn reference(w: &[Vec<f32>], lr: f64, b: usize, epochs: usize) -> Vec<Vec<f64>> {
    let (xa, xb, y) = rows();
    let mut p: Vec<Vec<f64>> = w
        .iter()
        .map(|v| v.iter().map(|&a| a as f64).collect())
        .collect();
    for _ in 0..epochs {
        for start in (0..N).step_by(b) {
            let rows: Vec<usize> = (start..(start + b).min(N)).collect();
            let nb = rows.len() as f64;
            let mut g: Vec<Vec<f64>> = p.iter().map(|v| vec![0.0; v.len()]).collect();
            for &r in &rows {
                let hidden = |x: &[f32]| -> Vec<f64> {
                    (0..H)
                        .map(|u| {
                            let z = p[1][u]
                                + (0..D).map(|i| x[i] as f64 * p[0][i * H + u]).sum::<f64>();
                            z.tanh()
                        })
                        .collect()
                };
                let (a, bx) = (&xa[r * D..(r + 1) * D], &xb[r * D..(r + 1) * D]);
                let (ha, hb) = (hidden(a), hidden(bx));
                let s: Vec<f64> = (0..H).map(|u| ha[u] + hb[u]).collect();
                let z: Vec<f64> = (0..C)
                    .map(|c| p[3][c] + (0..H).map(|u| s[u] * p[2][u * C + c]).sum::<f64>())
                    .collect();
                let m = z.iter().cloned().fold(f64::MIN, f64::max);
                let e: Vec<f64> = z.iter().map(|v| (v - m).exp()).collect();
                let sum: f64 = e.iter().sum();
                let dz: Vec<f64> = (0..C)
                    .map(|c| (e[c] / sum - f64::from(c == y[r] as usize)) / nb)
                    .collect();
                let mut ds = [0.0; H];
                for u in 0..H {
                    for c in 0..C {
                        g[2][u * C + c] += s[u] * dz[c];
                        ds[u] += p[2][u * C + c] * dz[c];
                    }
                }
                for c in 0..C {
                    g[3][c] += dz[c];
                }
                // Both calls' gradients into the one kernel and bias.
                for (x, h) in [(a, &ha), (bx, &hb)] {
                    for u in 0..H {
                        let dp = ds[u] * (1.0 - h[u] * h[u]);
                        g[1][u] += dp;
                        for i in 0..D {
                            g[0][i * H + u] += x[i] as f64 * dp;
                        }
                    }
                }
            }
            for (pv, gv) in p.iter_mut().zip(&g) {
                for (a, d) in pv.iter_mut().zip(gv) {
                    *a -= lr * d;
                }
            }
        }
    }
    p
}

#[test]
fn a_layer_called_twice_trains_like_an_f64_run_of_the_same_steps() {
    let dev = dev_or_skip!();
    let mut m = model(&dev, 3, true);
    // One set of weights: the shared Dense's kernel and bias, then the head's.
    let names: Vec<String> = m.weights().into_iter().map(|(n, _)| n).collect();
    assert_eq!(
        names,
        [
            "dense/kernel",
            "dense/bias",
            "dense_1/kernel",
            "dense_1/bias"
        ]
    );
    assert_eq!(m.param_count(), D * H + H + H * C + C);
    assert!(m.has_shared_weights());
    let start = weights_of(&m);
    let lr = 0.2;
    sgd(&mut m, lr);
    m.fit(&data(&dev), opts(3, 16)).unwrap();
    let want = reference(&start, lr, 16, 3);
    for (k, (got, want)) in weights_of(&m).iter().zip(&want).enumerate() {
        let rel = common::rel_l2(got, want);
        assert!(rel < 1e-5, "weight {k}: relative L2 {rel:e}");
    }
    // And it moved: the comparison is not of two untrained models.
    assert!(common::rel_l2(&weights_of(&m)[0], &reference(&start, lr, 16, 0)[0]) > 1e-3);
}

#[test]
fn tied_weights_get_the_sum_of_both_gradients() {
    let dev = dev_or_skip!();
    // One SGD step: the shared kernel moves by the sum of what two untied copies, starting
    // from the same values, each move by.
    let mut shared = model(&dev, 5, true);
    let mut apart = model(&dev, 5, false);
    let w = weights_of(&shared);
    let w_apart = [&w[0], &w[1], &w[0], &w[1], &w[2], &w[3]];
    let refs: Vec<&[f32]> = w_apart.iter().map(|v| v.as_slice()).collect();
    apart.set_weights(&refs).unwrap();
    assert_eq!(apart.param_count(), shared.param_count() + D * H + H);
    assert!(!apart.has_shared_weights());
    sgd(&mut shared, 0.5);
    sgd(&mut apart, 0.5);
    shared.fit(&data(&dev), opts(1, N)).unwrap();
    apart.fit(&data(&dev), opts(1, N)).unwrap();
    let (s, a) = (weights_of(&shared), weights_of(&apart));
    for (k, (ak, bk)) in [(0, (0, 2)), (1, (1, 3))] {
        let moved: Vec<f64> = (0..w[k].len())
            .map(|i| f64::from((a[ak][i] - w[k][i]) + (a[bk][i] - w[k][i])))
            .collect();
        let got: Vec<f32> = (0..w[k].len()).map(|i| s[k][i] - w[k][i]).collect();
        let rel = common::rel_l2(&got, &moved);
        assert!(rel < 1e-4, "weight {k}: relative L2 {rel:e}");
    }
}

#[test]
fn the_summary_and_the_config_show_one_layer_with_two_calls() {
    let dev = dev_or_skip!();
    let m = model(&dev, 3, true);
    let s = m.summary();
    assert_eq!(s.matches("dense (Dense)").count(), 1, "{s}");
    assert!(s.contains("a[0][0], b[0][0]"), "{s}");
    assert!(s.contains("dense[0][0], dense[1][0]"), "{s}");
    assert!(
        s.contains(&format!("Total params: {}", m.param_count())),
        "{s}"
    );
    let config = m.architecture();
    let layers = config["config"]["layers"].as_array().unwrap();
    let dense: Vec<_> = layers.iter().filter(|l| l["name"] == "dense").collect();
    assert_eq!(dense.len(), 1, "{config}");
    assert_eq!(dense[0]["inbound_nodes"].as_array().unwrap().len(), 2);
    let rebuilt = Model::from_config(&dev, 3, &config).unwrap();
    assert_eq!(rebuilt.architecture(), config);
    assert_eq!(rebuilt.param_count(), m.param_count());
    assert!(rebuilt.has_shared_weights());
}

#[test]
fn save_load_and_checkpoints_keep_one_set_of_weights() {
    let dev = dev_or_skip!();
    let (a, b, _) = rows();
    let mut m = model(&dev, 7, true);
    m.compile(Optimizer::adam(), Loss::SparseCategoricalCrossentropy)
        .unwrap();
    m.fit(&data(&dev), opts(2, 16)).unwrap();
    let dir = std::env::temp_dir().join(format!("suanli-shared-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("shared.safetensors");
    m.save(&file).unwrap();
    let loaded = Model::load(&dev, &file).unwrap();
    assert_eq!(loaded.summary(), m.summary());
    assert_eq!(loaded.weights().len(), 4);
    assert!(loaded.has_shared_weights());
    let ta = Tensor::from_slice(&dev, &a[..20 * D], &[20, D]).unwrap();
    let tb = Tensor::from_slice(&dev, &b[..20 * D], &[20, D]).unwrap();
    let p = |m: &Model| m.predict_inputs(&[&ta, &tb]).unwrap().to_vec().unwrap();
    assert_eq!(p(&loaded), p(&m));
    // A checkpoint holds one optimizer state per shared tensor, and training on from it
    // equals training on without it.
    let ck = dir.join("shared.ckpt");
    m.save_checkpoint(&ck, 2, 0, &Default::default()).unwrap();
    let (mut resumed, _) = Model::load_checkpoint(&dev, &ck).unwrap();
    m.fit(&data(&dev), opts(1, 16)).unwrap();
    resumed.fit(&data(&dev), opts(1, 16)).unwrap();
    assert_eq!(weights_of(&resumed), weights_of(&m));
    // The copy on a device shares as the original does.
    let copy = m.to_device(&dev).unwrap();
    assert!(copy.has_shared_weights());
    assert_eq!(copy.param_count(), m.param_count());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_model_with_sharing_takes_the_unfused_path() {
    let dev = dev_or_skip!();
    // Adam fused into each call's weight-gradient GEMM would step the shared kernel (and its
    // moments) twice a step. Unfused with and without clipping (a limit that never binds)
    // are the same path, so the same weights.
    let run = |clip: Clip| {
        let mut m = model(&dev, 9, true);
        m.compile(Optimizer::adam(), Loss::SparseCategoricalCrossentropy)
            .unwrap();
        m.set_gradient_clipping(clip).unwrap();
        m.fit(&data(&dev), opts(2, 16)).unwrap();
        weights_of(&m)
    };
    let plain = run(Clip::default());
    let clipped = run(Clip::global_norm(1e30));
    for (k, (a, b)) in plain.iter().zip(&clipped).enumerate() {
        let b: Vec<f64> = b.iter().map(|&v| f64::from(v)).collect();
        let rel = common::rel_l2(a, &b);
        assert!(rel < 1e-6, "weight {k}: relative L2 {rel:e}");
    }
}

#[test]
fn a_shared_layer_refuses_an_input_its_weights_do_not_fit() {
    let a = Input::new(&[D]);
    let b = Input::new(&[D + 2]);
    let s = Dense::new(H, "relu").shared().unwrap();
    s.call(&a).unwrap();
    match s.call(&b) {
        Err(Error::ShapeMismatch {
            op,
            expected,
            found,
        }) => {
            assert_eq!(op, "Dense");
            assert!(expected.contains("(4,)"), "{expected}");
            assert!(found.contains("(6,)"), "{found}");
        }
        other => panic!("{other:?}"),
    }
    // A builder of two layers (a Dense with its dropout) is not one shared layer.
    assert!(matches!(
        Dense::new(H, "relu").dropout(0.5).shared(),
        Err(Error::InvalidArgument { .. })
    ));
}

#[test]
fn a_model_built_node_by_node_shares_a_layer_with_add_call_of() {
    // The bindings' form (Python's functional API): the first call by add_node_from, later
    // ones by add_call_of; the model equals the one the Shared handle builds.
    let dev = dev_or_skip!();
    let mut m = Model::with_seed(&dev, 3).input_shape(&[D]);
    m.set_input_name("a").unwrap();
    assert_eq!(m.add_input(&[D], "b").unwrap(), 1);
    m.add_node_from(Dense::new(H, "tanh"), &[Src::Input(0)])
        .unwrap();
    m.add_call_of(0, &[Src::Input(1)]).unwrap();
    m.add_node_from(Add::new(), &[Src::Layer(0), Src::Layer(1)])
        .unwrap();
    m.add_node_from(Dense::new(C, "softmax"), &[Src::Layer(2)])
        .unwrap();
    let built = model(&dev, 3, true);
    assert_eq!(m.architecture(), built.architecture());
    assert_eq!(m.param_count(), built.param_count());
    assert!(m.has_shared_weights());
    assert_eq!(m.call_index(1), 1);
    // Not a layer of the model; an input the weights do not fit (both shapes named).
    assert!(matches!(
        m.add_call_of(9, &[Src::Input(0)]),
        Err(Error::InvalidArgument { .. })
    ));
    let mut other = Model::with_seed(&dev, 3).input_shape(&[D]);
    other.add_input(&[D + 2], "wide").unwrap();
    other
        .add_node_from(Dense::new(H, "tanh"), &[Src::Input(0)])
        .unwrap();
    match other.add_call_of(0, &[Src::Input(1)]) {
        Err(Error::ShapeMismatch {
            expected, found, ..
        }) => {
            assert!(expected.contains("(4,)"), "{expected}");
            assert!(found.contains("(6,)"), "{found}");
        }
        r => panic!("{r:?}"),
    }
    assert_eq!(other.len(), 1);
}
