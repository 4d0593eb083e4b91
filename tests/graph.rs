//! Graph models (the functional API): the merge kernels against their f64 references; a
//! graph with a tensor read by four layers and every merge, its gradients against a
//! hand-written f64 backward pass; a chain built as a graph training bit-identically to
//! `Sequential`; a residual CNN that trains, saves, loads and resumes; and every bad graph a
//! typed error that leaves nothing half-built.

mod common;

use common::{assert_rel_l2, random_vec};
use suanli::data::Dataset;
use suanli::exec::Recorder;
use suanli::internals::kernels::merge::{self, ConcatPart};
use suanli::internals::reference;
use suanli::nn::graph_config;
use suanli::nn::{
    Add, Average, BatchNormalization, Call, Concatenate, Conv2D, Dense, FitOptions,
    GlobalAveragePooling2D, Input, Loss, Maximum, Model, Multiply, Optimizer, Sequential, Subtract,
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

/// A tensor of `n` NaNs, so a value the kernel should have written and did not shows.
fn poisoned(dev: &Device, n: usize) -> Tensor {
    Tensor::full(dev, &[n], f32::NAN).unwrap()
}

#[test]
fn merge_kernels_match_their_references() {
    let dev = dev_or_skip!();
    for &n in &[1usize, 7, 255, 256, 257, 1000, 65_537] {
        // Three inputs with ties: every third element of b copies a, every fifth of c copies
        // the larger of the two, so the earliest-input rule is exercised.
        let a = random_vec(n, 1);
        let mut b = random_vec(n, 2);
        let mut c = random_vec(n, 3);
        for i in 0..n {
            if i % 3 == 0 {
                b[i] = a[i];
            }
            if i % 5 == 0 {
                c[i] = a[i].max(b[i]);
            }
        }
        let dy = random_vec(n, 4);
        let t = |v: &[f32]| Tensor::from_slice(&dev, v, &[n]).unwrap();
        let (at, bt, ct, dyt) = (t(&a), t(&b), t(&c), t(&dy));
        let ab = poisoned(&dev, n);
        let y = poisoned(&dev, n);
        let mut rec = Recorder::new(&dev);
        merge::maximum(&mut rec, at.buffer(), bt.buffer(), ab.buffer(), n).unwrap();
        merge::maximum(&mut rec, ab.buffer(), ct.buffer(), y.buffer(), n).unwrap();
        let taken = poisoned(&dev, n);
        let dxs: Vec<Tensor> = (0..3).map(|_| poisoned(&dev, n)).collect();
        for (k, x) in [&at, &bt, &ct].iter().enumerate() {
            merge::maximum_backward(
                &mut rec,
                x.buffer(),
                y.buffer(),
                dyt.buffer(),
                dxs[k].buffer(),
                taken.buffer(),
                n,
                k == 0,
            )
            .unwrap();
        }
        rec.submit().unwrap();
        let want_ab = reference::maximum(&a, &b);
        let ab32: Vec<f32> = want_ab.iter().map(|&v| v as f32).collect();
        assert_rel_l2(
            &format!("maximum n={n}"),
            &y.to_vec().unwrap(),
            &reference::maximum(&ab32, &c),
            1e-12,
        );
        let want = reference::maximum_backward(&[&a, &b, &c], &dy);
        for k in 0..3 {
            assert_rel_l2(
                &format!("maximum backward input {k} n={n}"),
                &dxs[k].to_vec().unwrap(),
                &want[k],
                1e-12,
            );
        }
    }
    // Concatenation along every axis of ragged (batch, h, w, c) shapes.
    let shapes = [
        (vec![3, 5, 4, 2], vec![3, 5, 4, 7], 3),
        (vec![2, 5, 1, 3], vec![2, 5, 6, 3], 2),
        (vec![4, 1, 3, 3], vec![4, 9, 3, 3], 1),
        (vec![1, 257], vec![1, 1], 1),
    ];
    for (sa, sb, axis) in shapes {
        let (na, nb) = (sa.iter().product::<usize>(), sb.iter().product::<usize>());
        let (a, b) = (random_vec(na, 5), random_vec(nb, 6));
        let at = Tensor::from_slice(&dev, &a, &[na]).unwrap();
        let bt = Tensor::from_slice(&dev, &b, &[nb]).unwrap();
        let out = poisoned(&dev, na + nb);
        let blocks: usize = sa[..axis].iter().product();
        let (ia, ib) = (na / blocks, nb / blocks);
        let part = |inner, offset| ConcatPart {
            blocks,
            inner,
            outer: ia + ib,
            offset,
        };
        let dy = random_vec(na + nb, 7);
        let dyt = Tensor::from_slice(&dev, &dy, &[na + nb]).unwrap();
        let (da, db) = (poisoned(&dev, na), poisoned(&dev, nb));
        let mut rec = Recorder::new(&dev);
        merge::concat(&mut rec, at.buffer(), out.buffer(), part(ia, 0)).unwrap();
        merge::concat(&mut rec, bt.buffer(), out.buffer(), part(ib, ia)).unwrap();
        merge::concat_backward(&mut rec, dyt.buffer(), da.buffer(), part(ia, 0)).unwrap();
        merge::concat_backward(&mut rec, dyt.buffer(), db.buffer(), part(ib, ia)).unwrap();
        rec.submit().unwrap();
        let shapes = [sa.clone(), sb.clone()];
        let what = format!("concatenate {sa:?} {sb:?} axis {axis}");
        assert_rel_l2(
            &what,
            &out.to_vec().unwrap(),
            &reference::concatenate(&[&a, &b], &shapes, axis),
            1e-12,
        );
        let want = reference::concatenate_backward(&dy, &shapes, axis);
        assert_rel_l2(&what, &da.to_vec().unwrap(), &want[0], 1e-12);
        assert_rel_l2(&what, &db.to_vec().unwrap(), &want[1], 1e-12);
    }
}

// ---- a graph against a hand-written f64 backward pass ---------------------------------------

type M = Vec<Vec<f64>>;

fn mat(v: &[f32], rows: usize, cols: usize) -> M {
    (0..rows)
        .map(|r| (0..cols).map(|c| v[r * cols + c] as f64).collect())
        .collect()
}
fn mm(a: &M, b: &M) -> M {
    let (n, k, m) = (a.len(), b.len(), b[0].len());
    (0..n)
        .map(|i| {
            (0..m)
                .map(|j| (0..k).map(|t| a[i][t] * b[t][j]).sum())
                .collect()
        })
        .collect()
}
fn t(a: &M) -> M {
    (0..a[0].len())
        .map(|j| a.iter().map(|r| r[j]).collect())
        .collect()
}
fn zip(a: &M, b: &M, f: impl Fn(f64, f64) -> f64) -> M {
    a.iter()
        .zip(b)
        .map(|(x, y)| x.iter().zip(y).map(|(&p, &q)| f(p, q)).collect())
        .collect()
}
fn map(a: &M, f: impl Fn(f64) -> f64) -> M {
    a.iter()
        .map(|r| r.iter().map(|&v| f(v)).collect())
        .collect()
}
fn dense(x: &M, w: &M, b: &[f64]) -> M {
    mm(x, w)
        .into_iter()
        .map(|r| r.iter().zip(b).map(|(v, c)| v + c).collect())
        .collect()
}
fn col_sums(a: &M) -> Vec<f64> {
    (0..a[0].len())
        .map(|j| a.iter().map(|r| r[j]).sum())
        .collect()
}
fn flat(a: &M) -> Vec<f64> {
    a.iter().flatten().copied().collect()
}

/// h = tanh(x W1) read by four layers; a = relu(h W2), b = sigmoid(h W3); m = a ⊙ h;
/// s = m + b; d = s − a; v = mean(d, h, b); mx = max(v, a, b); c = [mx, h]; logits c W4.
fn merge_graph(dev: &Device) -> Model {
    let x = Input::new(&[5]);
    let h = Dense::new(6, "tanh").call(&x).unwrap();
    let a = Dense::new(6, "relu").call(&h).unwrap();
    let b = Dense::new(6, "sigmoid").call(&h).unwrap();
    let m = Multiply::new().call_on(&[&a, &h]).unwrap();
    let s = Add::new().call_on(&[&m, &b]).unwrap();
    let d = Subtract::new().call_on(&[&s, &a]).unwrap();
    let v = Average::new().call_on(&[&d, &h, &b]).unwrap();
    let mx = Maximum::new().call_on(&[&v, &a, &b]).unwrap();
    let c = Concatenate::new(-1).call_on(&[&mx, &h]).unwrap();
    let y = Dense::new(3, "linear").call(&c).unwrap();
    Model::new(dev).build(&[&x], &[&y]).unwrap()
}

#[test]
fn fan_out_and_merges_match_f64_gradients() {
    let dev = dev_or_skip!();
    let rows = 13;
    let xs = random_vec(rows * 5, 21);
    let ys: Vec<u32> = (0..rows as u32).map(|i| (i * 7) % 3).collect();
    let data = Dataset::from_f32(&dev, &xs, 5, &ys).unwrap();
    let mut model = merge_graph(&dev);
    assert!(!model.is_chain());
    let opt = Optimizer::Sgd {
        lr: 1.0,
        momentum: 0.0,
        nesterov: false,
    };
    let loss = Loss::SparseCategoricalCrossentropy;
    model.compile(opt, loss).unwrap();
    let before: Vec<Vec<f32>> = model
        .weights()
        .iter()
        .map(|(_, t)| t.to_vec().unwrap())
        .collect();
    // One step of SGD with rate 1 over the whole batch: the weights move by the gradient.
    let fit = FitOptions {
        epochs: 1,
        batch_size: rows,
        shuffle: false,
        ..Default::default()
    };
    model.fit(&data, fit).unwrap();
    let after: Vec<Vec<f32>> = model
        .weights()
        .iter()
        .map(|(_, t)| t.to_vec().unwrap())
        .collect();
    let grads: Vec<Vec<f32>> = before
        .iter()
        .zip(&after)
        .map(|(b, a)| b.iter().zip(a).map(|(p, q)| p - q).collect())
        .collect();

    // The same in f64 by hand.
    let w = |i: usize, r, c| mat(&before[i], r, c);
    let bias = |i: usize| before[i].iter().map(|&v| v as f64).collect::<Vec<f64>>();
    let (w1, b1, w2, b2, w3, b3, w4, b4) = (
        w(0, 5, 6),
        bias(1),
        w(2, 6, 6),
        bias(3),
        w(4, 6, 6),
        bias(5),
        w(6, 12, 3),
        bias(7),
    );
    let x = mat(&xs, rows, 5);
    let h = map(&dense(&x, &w1, &b1), f64::tanh);
    let za = dense(&h, &w2, &b2);
    let a = map(&za, |v| v.max(0.0));
    let bb = map(&dense(&h, &w3, &b3), |v| 1.0 / (1.0 + (-v).exp()));
    let m = zip(&a, &h, |p, q| p * q);
    let s = zip(&m, &bb, |p, q| p + q);
    let d = zip(&s, &a, |p, q| p - q);
    let v = zip(&zip(&d, &h, |p, q| p + q), &bb, |p, q| (p + q) / 3.0);
    let mx = zip(&zip(&v, &a, f64::max), &bb, f64::max);
    let c: M = mx
        .iter()
        .zip(&h)
        .map(|(p, q)| [p.clone(), q.clone()].concat())
        .collect();
    let z = dense(&c, &w4, &b4);
    // Softmax cross-entropy, mean over rows.
    let dz: M = z
        .iter()
        .zip(&ys)
        .map(|(r, &y)| {
            let top = r.iter().cloned().fold(f64::MIN, f64::max);
            let e: Vec<f64> = r.iter().map(|v| (v - top).exp()).collect();
            let sum: f64 = e.iter().sum();
            e.iter()
                .enumerate()
                .map(|(j, v)| (v / sum - (j as u32 == y) as u8 as f64) / rows as f64)
                .collect()
        })
        .collect();
    let dw4 = mm(&t(&c), &dz);
    let dc = mm(&dz, &t(&w4));
    let dmx: M = dc.iter().map(|r| r[..6].to_vec()).collect();
    let mut dh: M = dc.iter().map(|r| r[6..].to_vec()).collect();
    // Maximum: the earliest of (v, a, b) holding the maximum takes the gradient.
    let pick = |k: usize| -> M {
        (0..rows)
            .map(|i| {
                (0..6)
                    .map(|j| {
                        let vals = [v[i][j], a[i][j], bb[i][j]];
                        let best = (0..3).fold(0, |b, q| if vals[q] > vals[b] { q } else { b });
                        if best == k {
                            dmx[i][j]
                        } else {
                            0.0
                        }
                    })
                    .collect()
            })
            .collect()
    };
    let (dv, mut da, mut dbb) = (pick(0), pick(1), pick(2));
    let third = map(&dv, |g| g / 3.0);
    let dd = third.clone();
    dh = zip(&dh, &third, |p, q| p + q);
    dbb = zip(&dbb, &third, |p, q| p + q);
    let ds = dd.clone();
    da = zip(&da, &dd, |p, q| p - q);
    let dm = ds.clone();
    dbb = zip(&dbb, &ds, |p, q| p + q);
    da = zip(&da, &zip(&dm, &h, |p, q| p * q), |p, q| p + q);
    dh = zip(&dh, &zip(&dm, &a, |p, q| p * q), |p, q| p + q);
    let dzb = zip(&dbb, &bb, |g, y| g * y * (1.0 - y));
    let dza = zip(&da, &za, |g, z| if z > 0.0 { g } else { 0.0 });
    dh = zip(&dh, &mm(&dzb, &t(&w3)), |p, q| p + q);
    dh = zip(&dh, &mm(&dza, &t(&w2)), |p, q| p + q);
    let dzh = zip(&dh, &h, |g, y| g * (1.0 - y * y));
    let want: Vec<Vec<f64>> = vec![
        flat(&mm(&t(&x), &dzh)),
        col_sums(&dzh),
        flat(&mm(&t(&h), &dza)),
        col_sums(&dza),
        flat(&mm(&t(&h), &dzb)),
        col_sums(&dzb),
        flat(&dw4),
        col_sums(&dz),
    ];
    let names: Vec<String> = model.weights().into_iter().map(|(n, _)| n).collect();
    for ((name, got), want) in names.iter().zip(&grads).zip(&want) {
        assert_rel_l2(&format!("gradient of {name}"), got, want, 2e-4);
    }
}

// ---- a chain built as a graph is the same model -----------------------------------------------

fn weights_of(m: &Model) -> Vec<Vec<f32>> {
    m.weights()
        .iter()
        .map(|(_, t)| t.to_vec().unwrap())
        .collect()
}

#[test]
fn a_chain_built_as_a_graph_trains_bit_identically() {
    let dev = dev_or_skip!();
    let data = common::noisy_classes(&dev, 300);
    let mut seq = Sequential::with_seed(&dev, 11);
    seq.add(Dense::new(16, "relu").input_dim(12).dropout(0.25))
        .unwrap();
    seq.add(Dense::new(8, "tanh")).unwrap();
    seq.add(Dense::new(3, "softmax")).unwrap();
    let x = Input::new(&[12]);
    let h = Dense::new(16, "relu").dropout(0.25).call(&x).unwrap();
    let h = Dense::new(8, "tanh").call(&h).unwrap();
    let y = Dense::new(3, "softmax").call(&h).unwrap();
    let mut fun = Model::with_seed(&dev, 11).build(&[&x], &[&y]).unwrap();
    // Built through the functional API, a chain is a chain: the same file, the same summary.
    assert!(fun.is_chain());
    assert_eq!(fun.architecture(), seq.architecture());
    assert_eq!(weights_of(&fun), weights_of(&seq));
    for m in [&mut seq, &mut fun] {
        m.compile(Optimizer::adam(), Loss::SparseCategoricalCrossentropy)
            .unwrap();
        let o = FitOptions {
            epochs: 2,
            batch_size: 32,
            seed: 5,
            ..Default::default()
        };
        m.fit(&data, o).unwrap();
    }
    assert_eq!(weights_of(&fun), weights_of(&seq), "MLP weights differ");

    // The CNN: convolution, batch normalisation, pooling.
    let (xs, ys) = common::images(96, (8, 8, 2), 3);
    let data = Dataset::from_f32(&dev, &xs, 128, &ys)
        .unwrap()
        .with_sample_shape(&[8, 8, 2])
        .unwrap();
    let mut seq = common::smooth_cnn(&dev, 4, true);
    let x = Input::new(&[8, 8, 2]);
    let mut h = Conv2D::new(6, 3).activation("tanh").call(&x).unwrap();
    h = BatchNormalization::new().call(&h).unwrap();
    h = suanli::nn::AveragePooling2D::new(2).call(&h).unwrap();
    h = Conv2D::new(8, 3)
        .padding("same")
        .activation("tanh")
        .call(&h)
        .unwrap();
    h = GlobalAveragePooling2D::new().call(&h).unwrap();
    let y = Dense::new(4, "softmax").call(&h).unwrap();
    let mut fun = Model::with_seed(&dev, 4).build(&[&x], &[&y]).unwrap();
    fun.compile(Optimizer::adam(), Loss::SparseCategoricalCrossentropy)
        .unwrap();
    assert!(fun.is_chain());
    for m in [&mut seq, &mut fun] {
        let o = FitOptions {
            epochs: 1,
            batch_size: 16,
            seed: 2,
            ..Default::default()
        };
        m.fit(&data, o).unwrap();
    }
    assert_eq!(weights_of(&fun), weights_of(&seq), "CNN weights differ");
}

// ---- a residual network --------------------------------------------------------------------

fn residual_cnn(dev: &Device, seed: u64) -> Model {
    let x = Input::named(&[8, 8, 2], "image");
    let h = Conv2D::new(8, 3)
        .padding("same")
        .activation("relu")
        .call(&x)
        .unwrap();
    let r = Conv2D::new(8, 3).padding("same").call(&h).unwrap();
    let r = BatchNormalization::new().call(&r).unwrap();
    let s = Add::new().call_on(&[&h, &r]).unwrap();
    let s = suanli::nn::ReLU::new().call(&s).unwrap();
    let p = GlobalAveragePooling2D::new().call(&s).unwrap();
    let y = Dense::new(4, "softmax").call(&p).unwrap();
    let mut m = Model::with_seed(dev, seed)
        .build(&[&x], &[&y])
        .unwrap()
        .named("tiny_resnet");
    let adam = Optimizer::Adam {
        lr: 0.01,
        beta1: 0.9,
        beta2: 0.999,
        eps: 1e-7,
    };
    m.compile(adam, Loss::SparseCategoricalCrossentropy)
        .unwrap();
    m
}

#[test]
fn a_residual_cnn_trains_saves_loads_and_resumes() {
    let dev = dev_or_skip!();
    let (xs, ys) = common::images(128, (8, 8, 2), 9);
    let data = Dataset::from_f32(&dev, &xs, 128, &ys)
        .unwrap()
        .with_sample_shape(&[8, 8, 2])
        .unwrap();
    let mut m = residual_cnn(&dev, 1);
    let summary = m.summary();
    assert!(summary.contains("Connected to"), "{summary}");
    assert!(summary.contains("image (InputLayer)"), "{summary}");
    assert!(
        summary.contains("conv2d[0][0], batch_normalization[0][0]"),
        "{summary}"
    );
    let opts = |epochs| FitOptions {
        epochs,
        batch_size: 16,
        seed: 3,
        ..Default::default()
    };
    let hist = m.fit(&data, opts(4)).unwrap();
    assert!(
        hist.loss[3] < 0.8 * hist.loss[0],
        "the residual CNN does not learn: {:?}",
        hist.loss
    );
    let dir = std::env::temp_dir().join(format!("suanli-graph-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("resnet.safetensors");
    m.save(&file).unwrap();
    let loaded = Model::load(&dev, &file).unwrap();
    assert!(!loaded.is_chain());
    assert_eq!(loaded.summary(), m.summary());
    let probe = Tensor::from_slice(&dev, &xs[..16 * 128], &[16, 8, 8, 2]).unwrap();
    assert_eq!(
        loaded.predict(&probe).unwrap().to_vec().unwrap(),
        m.predict(&probe).unwrap().to_vec().unwrap()
    );

    // Resume: 2 epochs, a checkpoint, 2 more from it equal 4 uninterrupted.
    let mut whole = residual_cnn(&dev, 2);
    whole.fit(&data, opts(4)).unwrap();
    let mut first = residual_cnn(&dev, 2);
    let ck = dir.join("ck.safetensors");
    first
        .fit(
            &data,
            FitOptions {
                checkpoint: Some(&ck),
                ..opts(2)
            },
        )
        .unwrap();
    let (mut resumed, state) = Model::load_checkpoint(&dev, &ck).unwrap();
    resumed
        .fit(
            &data,
            FitOptions {
                resume: Some(&state),
                ..opts(4)
            },
        )
        .unwrap();
    assert_eq!(weights_of(&resumed), weights_of(&whole));
    let _ = std::fs::remove_dir_all(&dir);
}

// ---- bad graphs ----------------------------------------------------------------------------

fn expect_err<T>(what: &str, r: suanli::Result<T>, says: &str) {
    match r {
        Ok(_) => panic!("{what}: accepted"),
        Err(e) => {
            let text = e.to_string();
            assert!(
                text.contains(says),
                "{what}: {text:?} does not say {says:?}"
            );
            assert!(
                matches!(
                    e,
                    Error::InvalidArgument { .. } | Error::ShapeMismatch { .. }
                ),
                "{what}: {e:?}"
            );
        }
    }
}

#[test]
fn bad_graphs_are_typed_errors() {
    let dev = dev_or_skip!();
    let x = Input::new(&[4]);
    let other = Input::named(&[4], "other");
    let a = Dense::new(3, "relu").call(&x).unwrap();
    let b = Dense::new(5, "relu").call(&x).unwrap();
    expect_err(
        "add of (3,) and (5,)",
        Add::new().call_on(&[&a, &b]),
        "(3,), (5,)",
    );
    expect_err(
        "subtract of three",
        Subtract::new().call_on(&[&a, &a, &a]),
        "exactly 2 inputs",
    );
    expect_err("add of one", Add::new().call_on(&[&a]), "at least 2 inputs");
    expect_err(
        "dense of two",
        Dense::new(2, "relu").call_on(&[&a, &a]),
        "one input",
    );
    expect_err(
        "concatenate on the batch",
        Concatenate::new(0).call_on(&[&a, &b]),
        "axis",
    );
    expect_err(
        "concatenate past the end",
        Concatenate::new(2).call_on(&[&a, &b]),
        "axis",
    );
    let o = Dense::new(2, "softmax").call(&other).unwrap();
    expect_err(
        "an output computed from another input",
        Model::functional(&dev, &[&x], &[&o]),
        "another Input (other",
    );
    let mixed = Add::new()
        .call_on(&[&a, &Dense::new(3, "relu").call(&other).unwrap()])
        .unwrap();
    expect_err(
        "a layer reading an input not in the model",
        Model::functional(&dev, &[&x], &[&mixed]),
        "another Input (other",
    );
    expect_err(
        "no layers",
        Model::functional(&dev, &[&x], &[&x]),
        "made by a layer",
    );
    expect_err(
        "an output as input",
        Model::functional(&dev, &[&a], &[&b]),
        "made by Input",
    );
    // After all that, the same tensors still build a model that works.
    let y = Add::new()
        .call_on(&[&a, &Dense::new(3, "relu").call(&x).unwrap()])
        .unwrap();
    let m = Model::functional(&dev, &[&x], &[&y]).unwrap();
    let p = m
        .predict(&Tensor::from_slice(&dev, &[1.0; 8], &[2, 4]).unwrap())
        .unwrap();
    assert_eq!(p.shape(), &[2, 3]);
}

#[test]
fn bad_graph_configs_are_refused_with_what_they_name() {
    let dev = dev_or_skip!();
    let model = merge_graph(&dev);
    let good = model.architecture();
    let parsed = graph_config::parse(&good).unwrap();
    assert_eq!(parsed.layers.len(), 10);
    let edit = |f: &dyn Fn(&mut serde_json::Value)| {
        let mut v = good.clone();
        f(&mut v);
        graph_config::parse(&v)
    };
    let refused = |what: &str,
                   r: Result<graph_config::GraphConfig, graph_config::ConfigError>,
                   says: &str| {
        let (expected, found) = r.expect_err(what);
        let text = format!("{expected} / {found}");
        assert!(
            text.contains(says),
            "{what}: {text:?} does not say {says:?}"
        );
    };
    // A layer reading one that is not in the graph.
    refused(
        "missing layer",
        edit(&|v| v["config"]["layers"][2]["inbound_nodes"][0][0][0] = "nowhere".into()),
        "\"nowhere\", which is not",
    );
    // A cycle: the first dense layer reads the last merge.
    refused(
        "cycle",
        edit(&|v| v["config"]["layers"][1]["inbound_nodes"][0][0][0] = "concatenate".into()),
        "without cycles",
    );
    // A layer that leads nowhere.
    refused(
        "dead layer",
        edit(&|v| v["config"]["output_layers"][0][0] = "maximum".into()),
        "path to the output",
    );
    // Input layers that the list names but the graph does not hold, or holds unread.
    refused(
        "inputs not in the graph",
        edit(&|v| v["config"]["input_layers"] = serde_json::json!([["a", 0, 0], ["b", 0, 0]])),
        "one InputLayer for each of input_layers",
    );
    refused(
        "an output that is no layer",
        edit(&|v| v["config"]["output_layers"][0][0] = "nowhere".into()),
        "output_layers naming layers of the graph",
    );
    refused(
        "no class",
        edit(&|v| v["class_name"] = "Sequential".into()),
        "Functional",
    );
    // The listed order does not matter: reversed, the same graph comes back.
    let mut rev = good.clone();
    rev["config"]["layers"].as_array_mut().unwrap().reverse();
    assert_eq!(graph_config::parse(&rev).unwrap(), parsed);
}

// ---- several devices -------------------------------------------------------------------------

/// A residual CNN with smooth activations and no maximum (so two ways of summing the same
/// gradients differ by rounding only).
fn smooth_residual(dev: &Device) -> Model {
    let x = Input::new(&[8, 8, 2]);
    let h = Conv2D::new(6, 3)
        .padding("same")
        .activation("tanh")
        .call(&x)
        .unwrap();
    let r = Conv2D::new(6, 3)
        .padding("same")
        .activation("tanh")
        .call(&h)
        .unwrap();
    let s = Add::new().call_on(&[&h, &r]).unwrap();
    let a = Average::new().call_on(&[&s, &h]).unwrap();
    let p = GlobalAveragePooling2D::new().call(&a).unwrap();
    let y = Dense::new(4, "softmax").call(&p).unwrap();
    let mut m = Model::with_seed(dev, 6).build(&[&x], &[&y]).unwrap();
    m.compile(Optimizer::adam(), Loss::SparseCategoricalCrossentropy)
        .unwrap();
    m
}

#[test]
fn a_residual_cnn_on_two_devices_equals_one_device() {
    let (Some(a), Some(b)) = (common::own_device(None), common::own_device(None)) else {
        return;
    };
    let g = suanli::multi::DeviceGroup::from_devices(vec![a, b]).unwrap();
    let (x, y) = common::images(320, (8, 8, 2), 7); // 10 steps of 32
    let opts = || FitOptions {
        epochs: 1,
        batch_size: 32,
        seed: 3,
        ..Default::default()
    };
    let data = |d: &Device| {
        Dataset::from_f32(d, &x, 128, &y)
            .unwrap()
            .with_sample_shape(&[8, 8, 2])
            .unwrap()
    };
    let one = g.devices()[0].clone();
    let mut single = smooth_residual(&one);
    single.fit(&data(&one), opts()).unwrap();
    let mut par = smooth_residual(&one);
    let sets: Vec<Dataset> = g.devices().iter().map(data).collect();
    par.fit_parallel(
        &g,
        &sets,
        opts(),
        &suanli::multi::ParallelOptions::default(),
    )
    .unwrap();
    let flat = |m: &Model| weights_of(m).concat();
    let (w1, w2, w0) = (flat(&single), flat(&par), flat(&smooth_residual(&one)));
    let as64 = |v: &[f32]| v.iter().map(|&x| x as f64).collect::<Vec<f64>>();
    let rel = common::rel_l2(&w2, &as64(&w1));
    assert!(rel < 1e-5, "two devices vs one: relative L2 {rel:e}");
    let moved = common::rel_l2(&w1, &as64(&w0));
    assert!(
        moved > 1e-3,
        "training barely moved the weights ({moved:e})"
    );
}
