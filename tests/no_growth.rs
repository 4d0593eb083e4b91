//! Long runs do not grow: pooled device memory and process RSS stay flat between epochs.
//! Alone in its own test binary, because RSS is per process and other tests running in
//! parallel threads would move it.

mod common;

use suanli::nn::{FitOptions, Optimizer};

#[test]
fn three_short_epochs_do_not_grow_pool_or_rss() {
    let Some(dev) = common::own_device(None) else {
        return;
    };
    // 1,200 steps an epoch: a leak of even ~1 KB per step would show as > 1 MB per epoch.
    let train = common::noisy_classes(&dev, 2400);
    let mut m = common::small_model(&dev, Optimizer::adam());
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
