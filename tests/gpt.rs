//! A small GPT as examples/shakespeare_gpt.rs builds it (token and position embeddings,
//! pre-norm blocks of causal attention and a GELU MLP, the output projection tied to the
//! token embedding; AdamW on matrices with global clipping), on windows of Tiny Shakespeare:
//! training is deterministic to the bit, two in-process devices train it as one does (and two
//! MPI ranks, in tests/mpi.rs), the pool does not grow over 500 iterations, and its loss falls.

mod common;

use common::gpt::{gpt, text, windows};
use suanli::data::Dataset;
use suanli::multi::{DeviceGroup, ParallelOptions};
use suanli::nn::{FitOptions, Model};

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
fn the_pool_does_not_grow_over_500_iterations() {
    let Some(dev) = common::own_device(None) else {
        return;
    };
    let text = text();
    let mut m = gpt(&dev, text.tokenizer().vocab_size());
    let data = windows(&dev, &text, 8 * 100, 3);
    let mut seen = Vec::new();
    let mut cb = |_: usize, _: &suanli::nn::History| {
        let s = dev.memory_stats();
        seen.push((s.in_use, s.allocations));
        true
    };
    m.fit(
        &data,
        FitOptions {
            epochs: 5,
            batch_size: 8,
            shuffle: false,
            on_epoch_end: Some(&mut cb),
            ..Default::default()
        },
    )
    .unwrap();
    // 100 iterations per epoch: from the end of the second epoch on (the first made the step
    // programs and optimizer state; pooled buffers settle in the second), 300 more
    // iterations allocate nothing and hold nothing more.
    assert_eq!(seen.len(), 5);
    assert!(
        seen[1..].windows(2).all(|w| w[0] == w[1]),
        "per epoch (in use, allocations): {seen:?}"
    );
}
