//! Gradient accumulation (`Model::set_gradient_accumulation`, Keras's
//! `gradient_accumulation_steps`): k batches of b train as one batch of k·b (SGD and Adam,
//! whose step count is the optimizer's), fewer than k batches step nothing, the setting is
//! kept by checkpoints, and what it does not support yet is refused.

mod common;

use suanli::data::Dataset;
use suanli::nn::{Clip, Dense, FitOptions, Loss, Model, Optimizer, Sequential};
use suanli::{Device, Error};

macro_rules! dev_or_skip {
    () => {
        match common::device() {
            Some(d) => d,
            None => return,
        }
    };
}

fn rows(n: usize) -> (Vec<f32>, Vec<u32>) {
    let mut rng = suanli::random::Rng::new(8);
    let mut x = Vec::new();
    let mut y = Vec::new();
    for i in 0..n {
        for j in 0..6 {
            x.push((rng.normal() + if j % 3 == i % 3 { 0.7 } else { 0.0 }) as f32);
        }
        y.push((i % 3) as u32);
    }
    (x, y)
}

fn model(dev: &Device, opt: Optimizer) -> Sequential {
    let mut m = Sequential::with_seed(dev, 4);
    m.add(Dense::new(8, "tanh").input_dim(6)).unwrap();
    m.add(Dense::new(3, "softmax")).unwrap();
    m.compile(opt, Loss::SparseCategoricalCrossentropy).unwrap();
    m
}

fn weights_of(m: &Model) -> Vec<f32> {
    m.weights()
        .iter()
        .flat_map(|(_, t)| t.to_vec().unwrap())
        .collect()
}

fn opts<'a>(batch: usize, epochs: usize) -> FitOptions<'a> {
    FitOptions {
        epochs,
        batch_size: batch,
        shuffle: false,
        ..Default::default()
    }
}

#[test]
fn k_batches_train_as_one_batch_k_times_larger() {
    let dev = dev_or_skip!();
    let (x, y) = rows(128);
    let data = Dataset::from_f32(&dev, &x, 6, &y).unwrap();
    for opt in [Optimizer::sgd(0.5), Optimizer::adam()] {
        let mut big = model(&dev, opt);
        let start = weights_of(&big);
        let hb = big.fit(&data, opts(32, 3)).unwrap();
        let mut acc = model(&dev, opt);
        acc.set_gradient_accumulation(4).unwrap();
        let ha = acc.fit(&data, opts(8, 3)).unwrap();
        let want: Vec<f64> = weights_of(&big).iter().map(|&v| v as f64).collect();
        let rel = common::rel_l2(&weights_of(&acc), &want);
        assert!(rel < 1e-5, "{opt:?}: 4 × 8 vs 32: relative L2 {rel:e}");
        let moved = common::rel_l2(&start, &want);
        assert!(moved > 1e-2, "{opt:?}: training barely moved ({moved:e})");
        // The epoch losses are means over the same rows with the same weights per cycle.
        for (a, b) in ha.loss.iter().zip(&hb.loss) {
            assert!(
                (a - b).abs() < 0.05 * b,
                "losses {:?} vs {:?}",
                ha.loss,
                hb.loss
            );
        }
        // Without accumulation the small batches train differently: the check has teeth.
        let mut small = model(&dev, opt);
        small.fit(&data, opts(8, 3)).unwrap();
        let rel = common::rel_l2(&weights_of(&small), &want);
        assert!(
            rel > 1e-3,
            "{opt:?}: batch 8 alone is as batch 32 ({rel:e})"
        );
    }
}

#[test]
fn fewer_batches_than_a_cycle_step_nothing_and_checkpoints_keep_it() {
    let dev = dev_or_skip!();
    let (x, y) = rows(24);
    let data = Dataset::from_f32(&dev, &x, 6, &y).unwrap();
    let mut m = model(&dev, Optimizer::adam());
    let start = weights_of(&m);
    m.set_gradient_accumulation(4).unwrap();
    // 3 batches of 8: no cycle completes, so the optimizer never steps.
    m.fit(&data, opts(8, 1)).unwrap();
    assert_eq!(weights_of(&m), start);
    // A fourth batch (the next epoch's first) completes the cycle.
    m.fit(
        &data,
        FitOptions {
            initial_epoch: 1,
            ..opts(8, 2)
        },
    )
    .unwrap();
    assert_ne!(weights_of(&m), start);

    let dir = std::env::temp_dir().join(format!("suanli-accum-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let ck = dir.join("ck.safetensors");
    let mut m = model(&dev, Optimizer::adam());
    m.set_gradient_accumulation(3).unwrap();
    m.fit(
        &data,
        FitOptions {
            checkpoint: Some(&ck),
            ..opts(8, 1)
        },
    )
    .unwrap();
    let (loaded, _) = Model::load_checkpoint(&dev, &ck).unwrap();
    assert_eq!(loaded.gradient_accumulation(), 3);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn what_accumulation_does_not_support_is_refused() {
    let dev = dev_or_skip!();
    let (x, y) = rows(32);
    let data = Dataset::from_f32(&dev, &x, 6, &y).unwrap();
    let mut m = model(&dev, Optimizer::adam());
    assert!(matches!(
        m.set_gradient_accumulation(0),
        Err(Error::InvalidArgument { .. })
    ));
    m.set_gradient_accumulation(2).unwrap();
    m.set_gradient_clipping(Clip::global_norm(1.0)).unwrap();
    match m.fit(&data, opts(8, 1)) {
        Err(Error::InvalidArgument { name, found, .. }) => {
            assert_eq!(name, "gradient accumulation");
            assert!(found.contains("clipping"), "{found}");
        }
        other => panic!("accumulation with clipping: {other:?}"),
    }
    m.set_gradient_clipping(Clip::default()).unwrap();
    m.fit(&data, opts(8, 1)).unwrap();
}
