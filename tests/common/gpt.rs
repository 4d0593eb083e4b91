//! The small GPT of the GPT tests (tests/gpt.rs, tests/mpi.rs): examples/shakespeare_gpt.rs's
//! model at a tiny size, and its windows of Tiny Shakespeare.

use suanli::data::{Dataset, Split, Text};
use suanli::nn::{
    Add, Call, Clip, DecayFilter, Dense, Embedding, Input, LayerNormalization, Loss, Model,
    MultiHeadAttention, Optimizer, Share,
};
use suanli::Device;

pub const T: usize = 16;
pub const E: usize = 32;

pub fn text() -> Text {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/data/tinyshakespeare/input.txt"
    );
    Text::open(std::path::Path::new(path)).unwrap()
}

pub fn gpt(dev: &Device, vocab: usize) -> Model {
    gpt_with(dev, vocab, 7, 3e-3)
}

/// The GPT with its initial weights drawn from `seed`, AdamW at learning rate `lr`.
pub fn gpt_with(dev: &Device, vocab: usize, seed: u64, lr: f64) -> Model {
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
    let mut m = Model::with_seed(dev, seed)
        .build(&[&ids, &positions], &[&logits])
        .unwrap();
    m.compile(
        Optimizer::AdamW {
            lr,
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

pub fn windows(dev: &Device, text: &Text, count: usize, seed: u64) -> Dataset {
    let positions: Vec<u32> = (0..count).flat_map(|_| 0..T as u32).collect();
    text.windows_dataset(dev, Split::Train, count, T, seed)
        .unwrap()
        .with_input_ids(&positions, &[T])
        .unwrap()
}
