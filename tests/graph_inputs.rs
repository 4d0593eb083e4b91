//! Models of several inputs: a dataset's columns reach the inputs in `Model(inputs=[...])`
//! order (two inputs concatenated train bit for bit as one input of both columns, and fail
//! to when the columns are swapped); predictions against an f64 forward pass written here;
//! integer id columns gathered exactly (bytes below 256, u32 above, the same training as the
//! same values as floats); save, load and the functional config keep every input; two
//! devices equal one; and every mismatch a typed error.

mod common;

use suanli::data::Dataset;
use suanli::nn::{
    Add, Call, Concatenate, Dense, FitOptions, Input, Loss, Model, Optimizer, Sequential,
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

const N: usize = 240;

/// Noisy 3-class rows of 12 features, split into columns 0..7 and 7..12.
fn rows() -> (Vec<f32>, Vec<f32>, Vec<f32>, Vec<u32>) {
    let mut rng = suanli::random::Rng::new(21);
    let (mut x, mut a, mut b, mut y) = (vec![], vec![], vec![], vec![]);
    for i in 0..N {
        let c = i % 3;
        for j in 0..12 {
            let v = (rng.normal() + if j % 3 == c { 0.7 } else { 0.0 }) as f32;
            x.push(v);
            if j < 7 { &mut a } else { &mut b }.push(v);
        }
        y.push(c as u32);
    }
    (x, a, b, y)
}

fn weights_of(m: &Model) -> Vec<Vec<f32>> {
    m.weights()
        .iter()
        .map(|(_, t)| t.to_vec().unwrap())
        .collect()
}

/// Inputs of 7 and 5 values, concatenated (in `order`), then 16 relu and 3 softmax units;
/// weights copied from `like`.
fn concat_model(dev: &Device, like: &Model, swap: bool) -> Model {
    let a = Input::named(&[7], "a");
    let b = Input::named(&[5], "b");
    let parts: [&suanli::nn::SymbolicTensor; 2] = if swap { [&b, &a] } else { [&a, &b] };
    let h = Concatenate::new(-1).call_on(&parts).unwrap();
    let h = Dense::new(16, "relu").call(&h).unwrap();
    let y = Dense::new(3, "softmax").call(&h).unwrap();
    let m = Model::with_seed(dev, 3).build(&[&a, &b], &[&y]).unwrap();
    let w = weights_of(like);
    let refs: Vec<&[f32]> = w.iter().map(Vec::as_slice).collect();
    m.set_weights(&refs).unwrap();
    m
}

fn opts() -> FitOptions<'static> {
    FitOptions {
        epochs: 2,
        batch_size: 32,
        seed: 5,
        ..Default::default()
    }
}

#[test]
fn two_inputs_concatenated_train_as_one_input_of_both_columns() {
    let dev = dev_or_skip!();
    let (x, a, b, y) = rows();
    let mut one = Sequential::with_seed(&dev, 11);
    one.add(Dense::new(16, "relu").input_dim(12)).unwrap();
    one.add(Dense::new(3, "softmax")).unwrap();
    let mut two = concat_model(&dev, &one, false);
    assert_eq!(two.input_names(), ["a", "b"]);
    let start = weights_of(&one);
    let whole = Dataset::from_f32(&dev, &x, 12, &y).unwrap();
    let split = Dataset::from_f32(&dev, &a, 7, &y)
        .unwrap()
        .with_input(&b, &[5])
        .unwrap();
    assert_eq!(split.inputs(), 2);
    for m in [&mut one, &mut two] {
        m.compile(Optimizer::adam(), Loss::SparseCategoricalCrossentropy)
            .unwrap();
    }
    let h1 = one.fit(&whole, opts()).unwrap();
    let h2 = two.fit(&split, opts()).unwrap();
    assert_eq!(h1.loss, h2.loss);
    assert_eq!(weights_of(&two), weights_of(&one));
    assert_ne!(weights_of(&one), start, "training moved nothing");
    let e1 = one.evaluate(&whole, 64).unwrap();
    let e2 = two.evaluate(&split, 64).unwrap();
    assert_eq!((e1.loss, e1.accuracy), (e2.loss, e2.accuracy));

    // Columns that reach the wrong inputs would not: the same model concatenating b first,
    // given the columns in the same order, fails to match (its shapes differ, so build a
    // dataset in that order and show it trains differently from the one above).
    let fresh = Sequential::with_seed(&dev, 11);
    let mut fresh = fresh;
    fresh.add(Dense::new(16, "relu").input_dim(12)).unwrap();
    fresh.add(Dense::new(3, "softmax")).unwrap();
    let mut swapped = concat_model(&dev, &fresh, true);
    swapped
        .compile(Optimizer::adam(), Loss::SparseCategoricalCrossentropy)
        .unwrap();
    let h3 = swapped.fit(&split, opts()).unwrap();
    assert_ne!(
        h3.loss, h1.loss,
        "swapping the concatenation changed nothing"
    );
}

#[test]
fn predictions_of_two_branches_match_an_f64_forward_pass() {
    let dev = dev_or_skip!();
    let (_, a, b, _) = rows();
    let xa = Input::new(&[7]);
    let xb = Input::new(&[5]);
    let ha = Dense::new(4, "linear").call(&xa).unwrap();
    let hb = Dense::new(4, "linear").call(&xb).unwrap();
    let y = Add::new().call_on(&[&ha, &hb]).unwrap();
    let m = Model::functional(&dev, &[&xa, &xb], &[&y]).unwrap();
    assert_eq!(m.input_names(), ["input_layer", "input_layer_1"]);
    let s = m.summary();
    assert!(s.contains("input_layer (InputLayer)"), "{s}");
    assert!(s.contains("input_layer_1 (InputLayer)"), "{s}");
    // Random biases too, so a swapped weight shows.
    let w: Vec<Vec<f32>> = weights_of(&m)
        .iter()
        .enumerate()
        .map(|(i, v)| common::random_vec(v.len(), 40 + i as u64))
        .collect();
    let refs: Vec<&[f32]> = w.iter().map(Vec::as_slice).collect();
    m.set_weights(&refs).unwrap();
    let rows = 37;
    let ta = Tensor::from_slice(&dev, &a[..rows * 7], &[rows, 7]).unwrap();
    let tb = Tensor::from_slice(&dev, &b[..rows * 5], &[rows, 5]).unwrap();
    let got = m.predict_inputs(&[&ta, &tb]).unwrap().to_vec().unwrap();
    // Weights in layer order: dense (kernel 7×4, bias), dense_1 (kernel 5×4, bias).
    let mut want = Vec::with_capacity(rows * 4);
    for r in 0..rows {
        for u in 0..4 {
            let mut v = w[1][u] as f64 + w[3][u] as f64;
            v += (0..7)
                .map(|i| a[r * 7 + i] as f64 * w[0][i * 4 + u] as f64)
                .sum::<f64>();
            v += (0..5)
                .map(|i| b[r * 5 + i] as f64 * w[2][i * 4 + u] as f64)
                .sum::<f64>();
            want.push(v);
        }
    }
    let rel = common::rel_l2(&got, &want);
    assert!(
        rel < 1e-6,
        "two-input prediction vs f64: relative L2 {rel:e}"
    );
    // In the wrong order the arrays do not fit: a typed error naming both inputs.
    match m.predict_inputs(&[&tb, &ta]) {
        Err(Error::ShapeMismatch { .. }) => {}
        other => panic!("swapped inputs: {other:?}"),
    }
    match m.predict(&ta) {
        Err(Error::InvalidArgument { expected, .. }) => {
            assert!(expected.contains("2 arrays"), "{expected}")
        }
        other => panic!("one array for two inputs: {other:?}"),
    }
}

#[test]
fn id_columns_are_gathered_exactly_as_integers() {
    let dev = dev_or_skip!();
    let (_, a, _, y) = rows();
    // Two ids per sample: below 256 (kept as bytes) and up to 70,000 (kept as u32).
    for (limit, big) in [(200u32, false), (70_000u32, true)] {
        let ids: Vec<u32> = (0..N * 2).map(|i| (i as u32 * 7919) % limit).collect();
        // Scaled so the Dense layer's inputs stay moderate: ids / limit in a Rescaling would
        // be a layer; here the floats are the ids themselves, as the layer sees them.
        let floats: Vec<f32> = ids.iter().map(|&v| v as f32).collect();
        let build = || {
            let xa = Input::new(&[7]);
            let xi = Input::new(&[2]);
            let h = Concatenate::new(-1).call_on(&[&xa, &xi]).unwrap();
            let y = Dense::new(3, "softmax").call(&h).unwrap();
            let mut m = Model::with_seed(&dev, 8).build(&[&xa, &xi], &[&y]).unwrap();
            m.compile(Optimizer::sgd(1e-7), Loss::SparseCategoricalCrossentropy)
                .unwrap();
            m
        };
        let as_ids = Dataset::from_f32(&dev, &a, 7, &y)
            .unwrap()
            .with_input_ids(&ids, &[2])
            .unwrap();
        let as_floats = Dataset::from_f32_plain(&dev, &a, 7, &y)
            .unwrap()
            .with_input(&floats, &[2])
            .unwrap();
        let (mut m1, mut m2) = (build(), build());
        let h1 = m1.fit(&as_ids, opts()).unwrap();
        let h2 = m2.fit(&as_floats, opts()).unwrap();
        assert_eq!(h1.loss, h2.loss, "ids below {limit} (u32: {big})");
        assert_eq!(weights_of(&m1), weights_of(&m2));
    }
    // Ids as the first column: the same as their floats.
    let ids: Vec<u32> = (0..N * 3).map(|i| (i as u32 * 31) % 300).collect();
    let floats: Vec<f32> = ids.iter().map(|&v| v as f32).collect();
    let first = Dataset::from_ids(&dev, &ids, 3, &y, 1).unwrap();
    assert_eq!(first.feature_storage(), "u32 ids");
    let plain = Dataset::from_f32_plain(&dev, &floats, 3, &y).unwrap();
    let build = || {
        let mut m = Sequential::with_seed(&dev, 2);
        m.add(Dense::new(3, "softmax").input_dim(3)).unwrap();
        m.compile(Optimizer::sgd(1e-6), Loss::SparseCategoricalCrossentropy)
            .unwrap();
        m
    };
    let (mut m1, mut m2) = (build(), build());
    m1.fit(&first, opts()).unwrap();
    m2.fit(&plain, opts()).unwrap();
    assert_eq!(weights_of(&m1), weights_of(&m2));
    // Ids past 2^24 are not exact as floats: refused, naming the first.
    let mut bad = ids.clone();
    bad[5] = 1 << 24;
    match Dataset::from_ids(&dev, &bad, 3, &y, 1) {
        Err(Error::InvalidArgument { found, .. }) => {
            assert!(found.contains("16777216 at row 1, column 2"), "{found}")
        }
        other => panic!("an id of 2^24: {other:?}"),
    }
    let d = Dataset::from_f32(&dev, &a, 7, &y).unwrap();
    assert!(matches!(
        d.with_input_ids(&bad[..N * 2], &[2]),
        Err(Error::InvalidArgument { .. })
    ));
}

#[test]
fn two_input_models_save_load_and_rebuild_from_their_config() {
    let dev = dev_or_skip!();
    let (_, a, b, y) = rows();
    let mut one = Sequential::with_seed(&dev, 11);
    one.add(Dense::new(16, "relu").input_dim(12)).unwrap();
    one.add(Dense::new(3, "softmax")).unwrap();
    let mut m = concat_model(&dev, &one, false);
    m.compile(Optimizer::adam(), Loss::SparseCategoricalCrossentropy)
        .unwrap();
    let data = Dataset::from_f32(&dev, &a, 7, &y)
        .unwrap()
        .with_input(&b, &[5])
        .unwrap();
    m.fit(&data, opts()).unwrap();
    let dir = std::env::temp_dir().join(format!("suanli-inputs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("two.safetensors");
    m.save(&file).unwrap();
    let loaded = Model::load(&dev, &file).unwrap();
    assert_eq!(loaded.input_names(), ["a", "b"]);
    assert_eq!(loaded.summary(), m.summary());
    let ta = Tensor::from_slice(&dev, &a[..20 * 7], &[20, 7]).unwrap();
    let tb = Tensor::from_slice(&dev, &b[..20 * 5], &[20, 5]).unwrap();
    assert_eq!(
        loaded
            .predict_inputs(&[&ta, &tb])
            .unwrap()
            .to_vec()
            .unwrap(),
        m.predict_inputs(&[&ta, &tb]).unwrap().to_vec().unwrap()
    );
    let config = m.architecture();
    assert_eq!(
        config["config"]["input_layers"].as_array().unwrap().len(),
        2
    );
    let rebuilt = Model::from_config(&dev, 3, &config).unwrap();
    assert_eq!(rebuilt.architecture(), config);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn several_inputs_on_two_devices_equal_one_device() {
    let (Some(d0), Some(d1)) = (common::own_device(None), common::own_device(None)) else {
        return;
    };
    let g = suanli::multi::DeviceGroup::from_devices(vec![d0, d1]).unwrap();
    let (_, a, b, y) = rows();
    let one = g.devices()[0].clone();
    let mut like = Sequential::with_seed(&one, 11);
    like.add(Dense::new(16, "relu").input_dim(12)).unwrap();
    like.add(Dense::new(3, "softmax")).unwrap();
    let data = |d: &Device| {
        Dataset::from_f32(d, &a, 7, &y)
            .unwrap()
            .with_input(&b, &[5])
            .unwrap()
    };
    let build = || {
        let mut m = concat_model(&one, &like, false);
        m.compile(Optimizer::adam(), Loss::SparseCategoricalCrossentropy)
            .unwrap();
        m
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
    let w0 = weights_of(&build()).concat();
    let as64 = |v: &[f32]| v.iter().map(|&x| x as f64).collect::<Vec<f64>>();
    let rel = common::rel_l2(&w2, &as64(&w1));
    assert!(rel < 1e-5, "two devices vs one: relative L2 {rel:e}");
    assert!(
        common::rel_l2(&w1, &as64(&w0)) > 1e-3,
        "training barely moved"
    );
    // A device given one column fewer is refused.
    let mut short = sets;
    short[1] = Dataset::from_f32(&g.devices()[1], &a, 7, &y).unwrap();
    let mut par = build();
    assert!(matches!(
        par.fit_parallel(
            &g,
            &short,
            opts(),
            &suanli::multi::ParallelOptions::default()
        ),
        Err(Error::ShapeMismatch { .. })
    ));
}

#[test]
fn mismatched_inputs_are_typed_errors() {
    let dev = dev_or_skip!();
    let (_, a, b, y) = rows();
    let xa = Input::named(&[7], "a");
    let xb = Input::named(&[5], "b");
    let h = Concatenate::new(-1).call_on(&[&xa, &xb]).unwrap();
    let out = Dense::new(3, "softmax").call(&h).unwrap();
    let mut m = Model::functional(&dev, &[&xa, &xb], &[&out]).unwrap();
    m.compile(Optimizer::adam(), Loss::SparseCategoricalCrossentropy)
        .unwrap();
    // One column for two inputs.
    let one_col = Dataset::from_f32(&dev, &a, 7, &y).unwrap();
    match m.fit(&one_col, opts()) {
        Err(Error::ShapeMismatch {
            expected, found, ..
        }) => {
            assert!(
                expected.contains("2 input columns") && expected.contains("a, b"),
                "{expected}"
            );
            assert!(found.contains("1 columns"), "{found}");
        }
        other => panic!("one column: {other:?}"),
    }
    // The second column of the wrong shape.
    let wrong = Dataset::from_f32(&dev, &a, 7, &y)
        .unwrap()
        .with_input(&b[..N * 4], &[4])
        .unwrap();
    match m.evaluate(&wrong, 32) {
        Err(Error::ShapeMismatch { expected, .. }) => {
            assert!(expected.contains("\"b\""), "{expected}")
        }
        other => panic!("a column of 4 for an input of 5: {other:?}"),
    }
    // A column whose length is not the dataset's rows.
    assert!(matches!(
        Dataset::from_f32(&dev, &a, 7, &y)
            .unwrap()
            .with_input(&b[..b.len() - 1], &[5]),
        Err(Error::ShapeMismatch { .. })
    ));
    // An input the output does not depend on; the same input twice.
    let unused = Input::new(&[3]);
    match Model::functional(&dev, &[&xa, &xb, &unused], &[&out]) {
        Err(Error::InvalidArgument { found, .. }) => {
            assert!(found.contains("input 2"), "{found}")
        }
        other => panic!("an unused input: {:?}", other.map(|m| m.summary())),
    }
    assert!(matches!(
        Model::functional(&dev, &[&xa, &xa, &xb], &[&out]),
        Err(Error::InvalidArgument { .. })
    ));
    // The model still trains after all of that.
    let good = Dataset::from_f32(&dev, &a, 7, &y)
        .unwrap()
        .with_input(&b, &[5])
        .unwrap();
    m.fit(&good, opts()).unwrap();
}
