//! A small GPT as examples/shakespeare_gpt.rs builds it (token and position embeddings,
//! pre-norm blocks of causal attention and a GELU MLP, the output projection tied to the
//! token embedding; AdamW on matrices with global clipping), on windows of Tiny Shakespeare:
//! training is deterministic to the bit, two in-process devices train it as one does, the
//! pool does not grow from one epoch to the next, and its loss falls.

mod common;

use suanli::data::{Dataset, Split, Text};
use suanli::multi::{DeviceGroup, ParallelOptions};
use suanli::nn::{
    Add, Call, Clip, DecayFilter, Dense, Embedding, FitOptions, Input, LayerNormalization, Loss,
    Model, MultiHeadAttention, Optimizer, Share,
};
use suanli::Device;

const T: usize = 16;
const E: usize = 32;

fn text() -> Text {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/data/tinyshakespeare/input.txt"
    );
    Text::open(std::path::Path::new(path)).unwrap()
}

fn gpt(dev: &Device, vocab: usize) -> Model {
    let ids = Input::named(&[T], "tokens");
    let positions = Input::named(&[T], "positions");
    let wte = Embedding::new(vocab, E).shared().unwrap();
    let tok = wte.call(&ids).unwrap();
    let pos = Embedding::new(T, E).call(&positions).unwrap();
    let mut h = Add::new().call_on(&[&tok, &pos]).unwrap();
    for _ in 0..2 {
        let n = LayerNormalization::new().center(false).call(&h).unwrap();
        let a = MultiHeadAttention::new(2, E / 2)
            .causal(true)
            .use_bias(false)
            .call(&n)
            .unwrap();
        h = Add::new().call_on(&[&h, &a]).unwrap();
        let n = LayerNormalization::new().center(false).call(&h).unwrap();
        let m = Dense::new(4 * E, "gelu").use_bias(false).call(&n).unwrap();
        let m = Dense::new(E, "linear").use_bias(false).call(&m).unwrap();
        h = Add::new().call_on(&[&h, &m]).unwrap();
    }
    let h = LayerNormalization::new().center(false).call(&h).unwrap();
    let logits = wte.transposed().call(&h).unwrap();
    let mut m = Model::with_seed(dev, 7)
        .build(&[&ids, &positions], &[&logits])
        .unwrap();
    m.compile(
        Optimizer::AdamW {
            lr: 3e-3,
            weight_decay: 0.1,
            beta1: 0.9,
            beta2: 0.99,
            eps: 1e-8,
        },
        Loss::SparseCategoricalCrossentropy,
    )
    .unwrap();
    m.set_weight_decay_filter(DecayFilter::MatricesOnly)
        .unwrap();
    m.set_gradient_clipping(Clip::global_norm(1.0)).unwrap();
    m
}

fn windows(dev: &Device, text: &Text, count: usize, seed: u64) -> Dataset {
    let positions: Vec<u32> = (0..count).flat_map(|_| 0..T as u32).collect();
    text.windows_dataset(dev, Split::Train, count, T, seed)
        .unwrap()
        .with_input_ids(&positions, &[T])
        .unwrap()
}

fn opts(epochs: usize) -> FitOptions<'static> {
    FitOptions {
        epochs,
        batch_size: 8,
        shuffle: false,
        ..Default::default()
    }
}

fn weights_of(m: &Model) -> Vec<f32> {
    m.weights()
        .iter()
        .flat_map(|(_, t)| t.to_vec().unwrap())
        .collect()
}

#[test]
fn a_small_gpt_trains_deterministically_and_its_loss_falls() {
    let Some(dev) = common::device() else { return };
    let text = text();
    let vocab = text.tokenizer().vocab_size();
    let data = windows(&dev, &text, 8 * 40, 1);
    let run = || {
        let mut m = gpt(&dev, vocab);
        let h = m.fit(&data, opts(3)).unwrap();
        (weights_of(&m), h.loss)
    };
    let (w1, loss) = run();
    let (w2, _) = run();
    assert!(w1 == w2, "two runs of one seed differ");
    assert!(loss[0] > 3.0 && loss[2] < loss[0] - 0.5, "losses {loss:?}");
}

#[test]
fn two_devices_train_the_gpt_as_one_does() {
    let (Some(d0), Some(d1)) = (common::own_device(None), common::own_device(None)) else {
        return;
    };
    let g = DeviceGroup::from_devices(vec![d0, d1]).unwrap();
    let one = g.devices()[0].clone();
    let text = text();
    let vocab = text.tokenizer().vocab_size();
    let mut single = gpt(&one, vocab);
    single.fit(&windows(&one, &text, 64, 2), opts(1)).unwrap();
    let mut par = gpt(&one, vocab);
    let sets: Vec<Dataset> = g
        .devices()
        .iter()
        .map(|d| windows(d, &text, 64, 2))
        .collect();
    par.fit_parallel(&g, &sets, opts(1), &ParallelOptions::default())
        .unwrap();
    let (a, b) = (weights_of(&single), weights_of(&par));
    let b64: Vec<f64> = b.iter().map(|&v| f64::from(v)).collect();
    let rel = common::rel_l2(&a, &b64);
    assert!(rel < 1e-5, "two devices vs one: relative L2 {rel:e}");
}

#[test]
fn the_pool_does_not_grow_between_epochs() {
    let Some(dev) = common::own_device(None) else {
        return;
    };
    let text = text();
    let mut m = gpt(&dev, text.tokenizer().vocab_size());
    let data = windows(&dev, &text, 8 * 25, 3);
    let mut seen = Vec::new();
    let mut cb = |_: usize, _: &suanli::nn::History| {
        let s = dev.memory_stats();
        seen.push((s.in_use, s.allocations));
        true
    };
    m.fit(
        &data,
        FitOptions {
            epochs: 3,
            batch_size: 8,
            shuffle: false,
            on_epoch_end: Some(&mut cb),
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(seen[1], seen[2], "epochs 2 and 3: {seen:?}");
}
