//! The Embedding layer in a model: integer ids (a dataset's id column) → Embedding → Flatten
//! → Dense(softmax) trains like an f64 run of the same SGD steps (the table's gradient a
//! scatter-add over repeated ids, rows no id selects left as they were), saves and loads to
//! the same predictions, ties to a Dense as a GPT's output projection does (one table,
//! the sum of both gradients), reads as Keras writes it, refuses what it does not implement with
//! the argument named, and a dataset whose ids run past the table is refused naming the
//! first such id.

mod common;

use suanli::data::Dataset;
use suanli::nn::{
    Call, Dense, Embedding, FitOptions, Flatten, Input, LayerSpec, Loss, Model, Optimizer,
    Rescaling, Sequential, Share,
};
use suanli::{Device, Error, Tensor};

/// Rows, ids per row, table rows (ids 0..V; the last two never used), columns, classes.
const N: usize = 24;
const T: usize = 5;
const V: usize = 11;
const E: usize = 4;
const C: usize = 3;

/// Ids from rows 0..V−2, with repeats inside a sample; the class is the first id's mod 3.
fn rows() -> (Vec<u32>, Vec<u32>) {
    let mut rng = suanli::random::Rng::new(31);
    let mut ids = Vec::with_capacity(N * T);
    let mut y = Vec::with_capacity(N);
    for r in 0..N {
        let first = rng.below(V as u64 - 2) as u32;
        ids.push(first);
        for t in 1..T {
            // Every other sample repeats its first id once more.
            let v = if r % 2 == 0 && t == 3 {
                first
            } else {
                rng.below(V as u64 - 2) as u32
            };
            ids.push(v);
        }
        y.push(first % C as u32);
    }
    (ids, y)
}

fn model(dev: &Device, seed: u64) -> Model {
    model_after(dev, seed, false)
}

/// [`model`], with `rescale` an identity Rescaling between the ids and the Embedding (which
/// then hands a gradient back: zeros).
fn model_after(dev: &Device, seed: u64, rescale: bool) -> Model {
    let x = Input::named(&[T], "tokens");
    let ids = if rescale {
        Rescaling::new(1.0, 0.0).call(&x).unwrap()
    } else {
        x.clone()
    };
    let h = Embedding::new(V, E).call(&ids).unwrap();
    assert_eq!(h.shape(), [T, E]);
    let h = Flatten::new().call(&h).unwrap();
    let y = Dense::new(C, "softmax").call(&h).unwrap();
    Model::with_seed(dev, seed).build(&[&x], &[&y]).unwrap()
}

fn weights_of(m: &Model) -> Vec<Vec<f32>> {
    m.weights()
        .iter()
        .map(|(_, t)| t.to_vec().unwrap())
        .collect()
}

/// The same SGD run in f64 from weights (table, W, b): batches of `b` rows in order.
fn reference(w: &[Vec<f32>], lr: f64, b: usize, epochs: usize) -> Vec<Vec<f64>> {
    let (ids, y) = rows();
    let mut p: Vec<Vec<f64>> = w
        .iter()
        .map(|v| v.iter().map(|&a| f64::from(a)).collect())
        .collect();
    let k = T * E;
    for _ in 0..epochs {
        for start in (0..N).step_by(b) {
            let batch: Vec<usize> = (start..(start + b).min(N)).collect();
            let nb = batch.len() as f64;
            let mut g: Vec<Vec<f64>> = p.iter().map(|v| vec![0.0; v.len()]).collect();
            for &r in &batch {
                let sample = &ids[r * T..(r + 1) * T];
                let h: Vec<f64> = sample
                    .iter()
                    .flat_map(|&v| p[0][v as usize * E..(v as usize + 1) * E].to_vec())
                    .collect();
                let z: Vec<f64> = (0..C)
                    .map(|c| p[2][c] + (0..k).map(|i| h[i] * p[1][i * C + c]).sum::<f64>())
                    .collect();
                let m = z.iter().cloned().fold(f64::MIN, f64::max);
                let e: Vec<f64> = z.iter().map(|v| (v - m).exp()).collect();
                let sum: f64 = e.iter().sum();
                let dz: Vec<f64> = (0..C)
                    .map(|c| (e[c] / sum - f64::from(c == y[r] as usize)) / nb)
                    .collect();
                for i in 0..k {
                    let mut dh = 0.0;
                    for c in 0..C {
                        g[1][i * C + c] += h[i] * dz[c];
                        dh += p[1][i * C + c] * dz[c];
                    }
                    // Position i / E's id gets this column's gradient (repeats add up).
                    let v = sample[i / E] as usize;
                    g[0][v * E + i % E] += dh;
                }
                for c in 0..C {
                    g[2][c] += dz[c];
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

fn data(dev: &Device) -> Dataset {
    let (ids, y) = rows();
    Dataset::from_ids(dev, &ids, T, &y, 1)
        .unwrap()
        .with_sample_shape(&[T])
        .unwrap()
}

#[test]
fn the_table_trains_like_an_f64_run_of_the_same_sgd_steps() {
    let dev = dev_or_skip!();
    let mut m = model(&dev, 3);
    let names: Vec<String> = m.weights().into_iter().map(|(n, _)| n).collect();
    assert_eq!(
        names,
        ["embedding/embeddings", "dense/kernel", "dense/bias"]
    );
    assert_eq!(m.param_count(), V * E + T * E * C + C);
    let start = weights_of(&m);
    // Keras's default initializer: uniform in ±0.05.
    assert!(start[0].iter().all(|v| v.abs() <= 0.05), "{:?}", start[0]);
    let lr = 0.5;
    m.compile(Optimizer::sgd(lr), Loss::SparseCategoricalCrossentropy)
        .unwrap();
    let opts = FitOptions {
        epochs: 3,
        batch_size: 8,
        shuffle: false,
        ..Default::default()
    };
    m.fit(&data(&dev), opts).unwrap();
    let want = reference(&start, lr, 8, 3);
    let got = weights_of(&m);
    for (k, (g, w)) in got.iter().zip(&want).enumerate() {
        let rel = common::rel_l2(g, w);
        eprintln!("weight {k}: relative L2 error {rel:.3e}");
        assert!(rel < 1e-5, "weight {k}: relative L2 {rel:e}");
    }
    // The table moved, and its two rows no id selects did not.
    assert!(common::rel_l2(&got[0], &reference(&start, lr, 8, 0)[0]) > 1e-2);
    assert_eq!(
        got[0][(V - 2) * E..],
        start[0][(V - 2) * E..],
        "unused rows"
    );
}

#[test]
fn behind_another_layer_it_trains_the_same() {
    let dev = dev_or_skip!();
    // Rescaling(1) changes nothing and has no weights: the same steps, the same weights,
    // with the Embedding's (zero) input gradient flowing into it.
    let run = |rescale: bool| {
        let mut m = model_after(&dev, 4, rescale);
        m.compile(Optimizer::adam(), Loss::SparseCategoricalCrossentropy)
            .unwrap();
        let opts = FitOptions {
            epochs: 2,
            batch_size: 8,
            shuffle: false,
            ..Default::default()
        };
        let h = m.fit(&data(&dev), opts).unwrap();
        (h.loss, weights_of(&m))
    };
    assert_eq!(run(true), run(false));
}

#[test]
fn save_and_load_give_the_same_predictions() {
    let dev = dev_or_skip!();
    let mut m = model(&dev, 5);
    m.compile(Optimizer::adam(), Loss::SparseCategoricalCrossentropy)
        .unwrap();
    m.fit(
        &data(&dev),
        FitOptions {
            epochs: 2,
            batch_size: 8,
            ..Default::default()
        },
    )
    .unwrap();
    let dir = std::env::temp_dir().join(format!("suanli-embedding-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("embedding.safetensors");
    m.save(&file).unwrap();
    let loaded = Model::load(&dev, &file).unwrap();
    assert_eq!(loaded.summary(), m.summary());
    let (ids, _) = rows();
    let x: Vec<f32> = ids.iter().map(|&v| v as f32).collect();
    let xt = Tensor::from_slice(&dev, &x, &[N, T]).unwrap();
    let p = |m: &Model| m.predict(&xt).unwrap().to_vec().unwrap();
    assert_eq!(p(&loaded), p(&m));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn prediction_reads_the_table_rows() {
    let dev = dev_or_skip!();
    // A Sequential of the one layer: (2, 3) ids → (2, 3, E) rows, ids outside the table zeros.
    let mut m = Sequential::with_seed(&dev, 1);
    m.add(Embedding::new(V, E).input_shape(&[2, 3])).unwrap();
    let table = weights_of(&m).remove(0);
    let ids = [
        0.0, 10.0, 3.0, 3.0, 11.0, -1.0, 7.0, 7.0, 0.0, 1.0, 2.0, 9.0,
    ];
    let xt = Tensor::from_slice(&dev, &ids, &[2, 2, 3]).unwrap();
    let got = m.predict(&xt).unwrap();
    assert_eq!(got.shape(), [2, 2, 3, E]);
    let want = suanli::internals::reference::embedding(&ids, &table, V, E);
    let got = got.to_vec().unwrap();
    assert!(got.iter().zip(&want).all(|(&g, &w)| f64::from(g) == w));
}

#[test]
fn keras_configs_read_and_unsupported_arguments_are_named() {
    let dev = dev_or_skip!();
    // Keras writes these arguments at their defaults.
    let spec = serde_json::json!({"class_name": "Embedding", "config": {
        "name": "tokens", "input_dim": 50, "output_dim": 8,
        "embeddings_initializer": "uniform", "embeddings_regularizer": null,
        "activity_regularizer": null, "embeddings_constraint": null, "mask_zero": false,
        "batch_input_shape": [null, 6]}});
    let s = LayerSpec::from_json(&spec).unwrap();
    let mut m = Sequential::new(&dev);
    m.add(s.clone()).unwrap();
    assert_eq!(m.param_count(), 50 * 8);
    assert_eq!(LayerSpec::from_json(&s.to_json()).unwrap(), s);
    for (arg, value) in [
        ("mask_zero", serde_json::json!(true)),
        ("sparse", serde_json::json!(true)),
        ("embeddings_regularizer", serde_json::json!("l2")),
        ("embeddings_constraint", serde_json::json!("non_neg")),
        ("embeddings_initializer", serde_json::json!("orthogonal")),
        ("input_dim", serde_json::json!(0)),
    ] {
        let mut bad = spec.clone();
        bad["config"][arg] = value.clone();
        let r = LayerSpec::from_json(&bad).and_then(|s| s.config.check());
        match r {
            Err(Error::InvalidArgument {
                op, name, found, ..
            }) => {
                assert_eq!((op, name), ("Embedding", arg), "{found}");
                assert!(
                    found.contains(&value.to_string().replace('"', "")),
                    "{found}"
                );
            }
            other => panic!("{arg}={value}: {other:?}"),
        }
    }
    // Keras 2's input_length must agree with the input.
    let mut m = Sequential::new(&dev);
    let mut e = Embedding::new(5, 2).input_shape(&[4]);
    e.input_length = Some(3);
    assert!(matches!(m.add(e), Err(Error::ShapeMismatch { .. })));
}

#[test]
fn ids_past_the_table_are_refused_naming_the_first() {
    let dev = dev_or_skip!();
    let (mut ids, y) = rows();
    ids[2 * T + 4] = V as u32; // row 2, column 4: one past the table
    ids[5 * T] = 3 * V as u32;
    let bad = Dataset::from_ids(&dev, &ids, T, &y, 1).unwrap();
    let mut m = model(&dev, 3);
    m.compile(Optimizer::sgd(0.1), Loss::SparseCategoricalCrossentropy)
        .unwrap();
    match m.fit(&bad, FitOptions::default()) {
        Err(Error::InvalidArgument {
            name: "ids",
            expected,
            found,
            ..
        }) => {
            assert_eq!(found, format!("{V} at row 2, column 4"));
            assert!(expected.contains(&format!("below {V}")), "{expected}");
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        m.evaluate(&bad, 8),
        Err(Error::InvalidArgument { name: "ids", .. })
    ));
}

/// A GPT's ends: ids → Embedding (shared) → the same table transposed, softmax over the
/// vocabulary at each position, trained on next-id labels; in f64, the table's gradient is
/// the projection's `dzᵀ·h` plus the lookup's scatter-add of `dz·W`.
#[test]
fn tied_to_the_output_projection_it_trains_like_an_f64_run() {
    let dev = dev_or_skip!();
    let (b, epochs, lr) = (4usize, 2usize, 0.5f64);
    let (ids, _) = rows();
    let ids: Vec<u32> = ids.iter().map(|&v| v % V as u32).collect();
    let next: Vec<u32> = (0..N * T)
        .map(|i| ids[i - i % T + (i % T + 1) % T])
        .collect();
    let x = Input::new(&[T]);
    let emb = Embedding::new(V, E).shared().unwrap();
    let h = emb.call(&x).unwrap();
    let y = emb.transposed().activation("softmax").call(&h).unwrap();
    let mut m = Model::with_seed(&dev, 8).build(&[&x], &[&y]).unwrap();
    assert_eq!(m.param_count(), V * E);
    let w0: Vec<f64> = weights_of(&m)[0].iter().map(|&v| f64::from(v)).collect();
    m.compile(Optimizer::sgd(lr), Loss::SparseCategoricalCrossentropy)
        .unwrap();
    let data = Dataset::from_ids(&dev, &ids, T, &next, T).unwrap();
    let opts = FitOptions {
        epochs,
        batch_size: b,
        shuffle: false,
        ..Default::default()
    };
    m.fit(&data, opts).unwrap();
    let mut w = w0.clone();
    for _ in 0..epochs {
        for start in (0..N).step_by(b) {
            let mut g = vec![0.0; V * E];
            for r in start..(start + b).min(N) {
                for t in 0..T {
                    let id = ids[r * T + t] as usize;
                    let h: Vec<f64> = w[id * E..(id + 1) * E].to_vec();
                    let z: Vec<f64> = (0..V)
                        .map(|v| (0..E).map(|e| h[e] * w[v * E + e]).sum())
                        .collect();
                    let mx = z.iter().cloned().fold(f64::MIN, f64::max);
                    let ez: Vec<f64> = z.iter().map(|v| (v - mx).exp()).collect();
                    let sum: f64 = ez.iter().sum();
                    let label = next[r * T + t] as usize;
                    for v in 0..V {
                        let dz = (ez[v] / sum - f64::from(v == label)) / (b * T) as f64;
                        for e in 0..E {
                            g[v * E + e] += dz * h[e];
                            g[id * E + e] += dz * w[v * E + e];
                        }
                    }
                }
            }
            for (a, d) in w.iter_mut().zip(&g) {
                *a -= lr * d;
            }
        }
    }
    let got = &weights_of(&m)[0];
    let rel = common::rel_l2(got, &w);
    eprintln!("tied table: relative L2 error {rel:.3e}");
    assert!(rel < 1e-5, "relative L2 {rel:e}");
    assert!(common::rel_l2(got, &w0) > 1e-2, "the table did not move");
}
