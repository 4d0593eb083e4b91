//! Long runs do not grow: pooled device memory and process RSS stay flat between epochs.
//! Alone in its own test binary, because RSS is per process and other tests running in
//! parallel threads would move it.

mod common;

use suanli::data::Dataset;
use suanli::nn::{Dense, FitOptions, Loss, Optimizer, Sequential};
use suanli::random::Rng;

fn data(dev: &suanli::Device, n: usize) -> Dataset {
    let mut rng = Rng::new(5);
    let mut x = Vec::with_capacity(n * 12);
    let mut y = Vec::with_capacity(n);
    for i in 0..n {
        let c = i % 3;
        for j in 0..12 {
            x.push((rng.normal() + if j % 3 == c { 0.7 } else { 0.0 }) as f32);
        }
        y.push(c as u32);
    }
    Dataset::from_f32(dev, &x, 12, &y).unwrap()
}

fn model(dev: &suanli::Device, opt: Optimizer) -> Sequential {
    let mut m = Sequential::with_seed(dev, 11);
    m.add(Dense::new(16, "relu").input_dim(12).dropout(0.25))
        .unwrap();
    m.add(Dense::new(8, "tanh")).unwrap();
    m.add(Dense::new(3, "softmax")).unwrap();
    m.compile(opt, Loss::SparseCategoricalCrossentropy).unwrap();
    m
}

#[test]
fn three_short_epochs_do_not_grow_pool_or_rss() {
    let Some(dev) = common::own_device(None) else {
        return;
    };
    // 1,200 steps an epoch: a leak of even ~1 KB per step would show as > 1 MB per epoch.
    let train = data(&dev, 2400);
    let mut m = model(&dev, Optimizer::adam());
    let mut seen = Vec::new();
    let mut cb = |_: usize, _: &suanli::nn::History| {
        let s = dev.memory_stats();
        seen.push((
            s.in_use,
            s.cached,
            s.allocations,
            suanli::telemetry::process_rss(),
        ));
        true
    };
    m.fit(
        &train,
        FitOptions {
            epochs: 3,
            batch_size: 2,
            verbose: false,
            on_epoch_end: Some(&mut cb),
            ..Default::default()
        },
    )
    .unwrap();
    let (e2, e3) = (seen[1], seen[2]);
    assert_eq!(
        (e2.0, e2.1, e2.2),
        (e3.0, e3.1, e3.2),
        "pool changed: {seen:?}"
    );
    if let (Some(r2), Some(r3)) = (e2.3, e3.3) {
        let growth = r3 as i64 - r2 as i64;
        assert!(
            growth < 1 << 20,
            "RSS grew {growth} bytes between epochs 2 and 3 (1,200 steps): {seen:?}"
        );
        eprintln!("RSS epoch 2 → 3: {growth:+} bytes");
    }
}
