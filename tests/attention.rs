//! The MultiHeadAttention layer (self-attention, optionally causal): its passes against
//! finite differences through the layer-level helper, its forward pass against an f64 run
//! of the projections and the unfused attention, the causal mask's meaning (an output never
//! moves when a later position changes), a tiny causal language model (Embedding →
//! attention → residual Add → Dense logits per position) that learns its sequences and
//! saves and loads to the same predictions, and typed errors for shapes that do not fit
//! (tests/attention_general.rs has cross-attention, masks, value_dim and dropout).

mod common;

use common::layercheck::check_layer;
use common::random_vec;
use suanli::data::Dataset;
use suanli::internals::reference::{self, AttnShape};
use suanli::nn::{
    Add, Call, Dense, Embedding, FitOptions, Input, Loss, Model, MultiHeadAttention, Optimizer,
    Sequential,
};
use suanli::{Error, Tensor};

#[test]
fn multi_head_attention_against_finite_differences() {
    let Some(dev) = common::device() else { return };
    check_layer(
        &dev,
        "MultiHeadAttention causal",
        MultiHeadAttention::new(3, 4).causal(true),
        &[7, 10],
        2,
        None,
        1e-2,
        2e-3,
    );
    check_layer(
        &dev,
        "MultiHeadAttention no bias, output 5",
        MultiHeadAttention::new(2, 8).use_bias(false).output_size(5),
        &[5, 6],
        3,
        None,
        1e-2,
        2e-3,
    );
}

/// `x·W + b` for rows of `k` in f64.
fn affine(x: &[f64], w: &[f32], b: Option<&[f32]>, k: usize, n: usize) -> Vec<f64> {
    x.chunks(k)
        .flat_map(|row| {
            (0..n).map(move |j| {
                b.map_or(0.0, |b| f64::from(b[j]))
                    + (0..k)
                        .map(|i| row[i] * f64::from(w[i * n + j]))
                        .sum::<f64>()
            })
        })
        .collect()
}

#[test]
fn the_forward_pass_is_the_projections_around_the_attention() {
    let Some(dev) = common::device() else { return };
    let (t, e, heads, d, batch) = (9, 12, 3, 4, 2);
    let mut m = Sequential::with_seed(&dev, 4).input_shape(&[t, e]);
    m.add(MultiHeadAttention::new(heads, d).causal(true))
        .unwrap();
    // Biases that are not zero, so the test sees them.
    let w: Vec<Vec<f32>> = m
        .weights()
        .iter()
        .enumerate()
        .map(|(i, (_, t))| {
            let v = t.to_vec().unwrap();
            if i % 2 == 1 {
                random_vec(v.len(), 30 + i as u64)
            } else {
                v
            }
        })
        .collect();
    let refs: Vec<&[f32]> = w.iter().map(|v| v.as_slice()).collect();
    m.set_weights(&refs).unwrap();
    let x = random_vec(batch * t * e, 5);
    let xt = Tensor::from_slice(&dev, &x, &[batch, t, e]).unwrap();
    let got = m.predict(&xt).unwrap().to_vec().unwrap();
    let hd = heads * d;
    let x64: Vec<f64> = x.iter().map(|&v| f64::from(v)).collect();
    let qkv = affine(&x64, &w[0], Some(&w[1]), e, 3 * hd);
    let qkv32: Vec<f32> = qkv.iter().map(|&v| v as f32).collect();
    let s = AttnShape {
        batch,
        t,
        heads,
        d,
        causal: true,
        stride: 3 * hd,
        offsets: [0, hd, 2 * hd],
        o_stride: hd,
        scale: 1.0 / (d as f64).sqrt(),
    };
    let (o, _) = reference::attention(&s, &qkv32);
    let want = affine(&o, &w[2], Some(&w[3]), hd, e);
    common::assert_rel_l2("MultiHeadAttention forward", &got, &want, 1e-5);
}

#[test]
fn a_causal_output_never_moves_when_a_later_position_changes() {
    let Some(dev) = common::device() else { return };
    let (t, e) = (70, 8);
    let mut m = Sequential::with_seed(&dev, 6).input_shape(&[t, e]);
    m.add(MultiHeadAttention::new(2, 4).causal(true)).unwrap();
    let x = random_vec(t * e, 7);
    let mut later = x.clone();
    for v in &mut later[40 * e..] {
        *v += 0.5;
    }
    let p = |x: &[f32]| {
        let xt = Tensor::from_slice(&dev, x, &[1, t, e]).unwrap();
        m.predict(&xt).unwrap().to_vec().unwrap()
    };
    let (a, b) = (p(&x), p(&later));
    assert_eq!(
        a[..40 * e],
        b[..40 * e],
        "positions before the change moved"
    );
    assert_ne!(a[40 * e..], b[40 * e..]);
    // Without the mask every position sees the change.
    let mut full = Sequential::with_seed(&dev, 6).input_shape(&[t, e]);
    full.add(MultiHeadAttention::new(2, 4)).unwrap();
    let q = |x: &[f32]| {
        let xt = Tensor::from_slice(&dev, x, &[1, t, e]).unwrap();
        full.predict(&xt).unwrap().to_vec().unwrap()
    };
    assert_ne!(q(&x)[..e], q(&later)[..e]);
}

#[test]
fn a_tiny_causal_language_model_learns_its_sequences() {
    let Some(dev) = common::device() else { return };
    // Sequences counting up modulo V from a random start: each next token follows from the
    // one before, which attention must find (position i sees positions ≤ i only).
    let (v, t, e, n) = (7usize, 8usize, 16usize, 96usize);
    let mut rng = suanli::random::Rng::new(9);
    let (mut ids, mut labels) = (Vec::new(), Vec::new());
    for _ in 0..n {
        let start = (rng.uniform(0.0, v as f64) as usize).min(v - 1);
        for i in 0..t {
            ids.push(((start + i) % v) as u32);
            labels.push(((start + i + 1) % v) as u32);
        }
    }
    let x = Input::new(&[t]);
    let h = Embedding::new(v, e).call(&x).unwrap();
    let a = MultiHeadAttention::new(2, 8).causal(true).call(&h).unwrap();
    let r = Add::new().call_on(&[&h, &a]).unwrap();
    let y = Dense::new(v, "linear").call(&r).unwrap();
    let mut model = Model::with_seed(&dev, 3).build(&[&x], &[&y]).unwrap();
    model
        .compile(
            Optimizer::Adam {
                lr: 0.02,
                beta1: 0.9,
                beta2: 0.999,
                eps: 1e-7,
            },
            Loss::SparseCategoricalCrossentropy,
        )
        .unwrap();
    let data = Dataset::from_ids(&dev, &ids, t, &labels, t).unwrap();
    let opts = FitOptions {
        epochs: 25,
        batch_size: 16,
        ..Default::default()
    };
    let hist = model.fit(&data, opts).unwrap();
    let first = hist.loss[0];
    let last = *hist.loss.last().unwrap();
    assert!(first > 1.5, "first epoch's loss {first}");
    assert!(last < 0.1, "losses {:?}", hist.loss);
    // Saved and loaded, the same predictions.
    let dir = std::env::temp_dir().join(format!("suanli-attn-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("lm.safetensors");
    model.save(&file).unwrap();
    let loaded = Model::load(&dev, &file).unwrap();
    let xs: Vec<f32> = ids[..4 * t].iter().map(|&i| i as f32).collect();
    let xt = Tensor::from_slice(&dev, &xs, &[4, t]).unwrap();
    assert_eq!(
        loaded.predict(&xt).unwrap().to_vec().unwrap(),
        model.predict(&xt).unwrap().to_vec().unwrap()
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn shapes_that_do_not_fit_are_refused_with_typed_errors() {
    let Some(dev) = common::device() else { return };
    let mut m = Sequential::new(&dev).input_shape(&[4, 8]);
    let mut bad = MultiHeadAttention::new(2, 4);
    bad.dropout = 1.5;
    assert!(matches!(
        m.add(bad),
        Err(Error::InvalidArgument {
            name: "dropout",
            ..
        })
    ));
    let mut flat = Sequential::new(&dev).input_shape(&[32]);
    assert!(matches!(
        flat.add(MultiHeadAttention::new(2, 4)),
        Err(Error::ShapeMismatch { .. })
    ));
    assert!(m.is_empty());
    m.add(MultiHeadAttention::new(2, 4)).unwrap();
    assert_eq!(m.param_count(), 8 * 24 + 24 + 8 * 8 + 8);
    // value_dim 6: the packed kernel has 2·8 + 12 columns, the output kernel 12 rows.
    let mut v = Sequential::new(&dev).input_shape(&[4, 8]);
    v.add(MultiHeadAttention::new(2, 4).value_dim(6)).unwrap();
    assert_eq!(v.param_count(), 8 * 28 + 28 + 12 * 8 + 8);
}
