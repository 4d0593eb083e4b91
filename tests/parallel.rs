//! Data-parallel training on two devices (the test adapter opened twice): equal to
//! single-device training on the same global batches, replicas identical, and the balancer
//! moving work away from a slowed device without ever starving it.

mod common;

use suanli::data::Dataset;
use suanli::multi::DeviceGroup;
use suanli::multi::{Balancer, ParallelOptions};
use suanli::nn::{Dense, FitOptions, Loss, Optimizer, Sequential};
use suanli::random::Rng;

fn rows(n: usize) -> (Vec<f32>, Vec<u32>) {
    let mut rng = Rng::new(21);
    let mut x = Vec::with_capacity(n * 10);
    let mut y = Vec::with_capacity(n);
    for i in 0..n {
        let c = i % 4;
        for j in 0..10 {
            x.push((rng.normal() + if j % 4 == c { 0.8 } else { 0.0 }) as f32);
        }
        y.push(c as u32);
    }
    (x, y)
}

fn model(dev: &suanli::Device) -> Sequential {
    let mut m = Sequential::with_seed(dev, 5);
    m.add(Dense::new(24, "relu").input_dim(10)).unwrap();
    m.add(Dense::new(4, "softmax")).unwrap();
    m.compile(Optimizer::adam(), Loss::SparseCategoricalCrossentropy)
        .unwrap();
    m
}

fn weights(m: &Sequential) -> Vec<f32> {
    let p = std::env::temp_dir().join(format!(
        "suanli-par-{}-{:?}.safetensors",
        std::process::id(),
        std::thread::current().id()
    ));
    m.save(&p).unwrap();
    let bytes = std::fs::read(&p).unwrap();
    let st = safetensors::SafeTensors::deserialize(&bytes).unwrap();
    let mut names = st.names();
    names.sort();
    names
        .iter()
        .flat_map(|n| bytemuck::pod_collect_to_vec::<u8, f32>(st.tensor(n).unwrap().data()))
        .collect()
}

fn group() -> Option<DeviceGroup> {
    let a = common::own_device(None)?;
    let b = common::own_device(None)?;
    Some(DeviceGroup::from_devices(vec![a, b]).unwrap())
}

#[test]
fn two_devices_equal_one_device_after_20_steps() {
    let Some(g) = group() else {
        return;
    };
    let (x, y) = rows(640); // 20 steps of 32
    let opts = || FitOptions {
        epochs: 1,
        batch_size: 32,
        seed: 3,
        ..Default::default()
    };
    let one = g.devices()[0].clone();
    let val = Dataset::from_f32(&one, &x[..640], 10, &y[..64]).unwrap();
    let mut single = model(&one);
    let h1 = single
        .fit(
            &Dataset::from_f32(&one, &x, 10, &y).unwrap(),
            FitOptions {
                validation_data: Some(&val),
                ..opts()
            },
        )
        .unwrap();
    let data: Vec<Dataset> = g
        .devices()
        .iter()
        .map(|d| Dataset::from_f32(d, &x, 10, &y).unwrap())
        .collect();
    let mut par = model(&one);
    // Uneven shares from the start, so shards differ in size.
    let p = par
        .fit_parallel(
            &g,
            &data,
            FitOptions {
                validation_data: Some(&val),
                ..opts()
            },
            &ParallelOptions {
                initial_shares: Some(vec![0.7, 0.3]),
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(p.shares.len(), 20);
    let (a, b) = (weights(&single), weights(&par));
    let num: f64 = a
        .iter()
        .zip(&b)
        .map(|(u, v)| ((u - v) as f64).powi(2))
        .sum();
    let den: f64 = a.iter().map(|u| (*u as f64).powi(2)).sum();
    let rel = (num / den).sqrt();
    assert!(rel < 1e-5, "relative L2 difference {rel:e} after 20 steps");
    assert!(
        (h1.loss[0] - p.history.loss[0]).abs() < 1e-5 * h1.loss[0],
        "{} vs {}",
        h1.loss[0],
        p.history.loss[0]
    );
    assert!(p.bytes_per_step > 0);
    let (v1, v2) = (h1.val_loss[0], p.history.val_loss[0]);
    assert!((v1 - v2).abs() < 1e-5 * v1, "validation loss {v1} vs {v2}");
}

#[test]
fn a_cnn_on_two_devices_equals_one_device() {
    let Some(g) = group() else {
        return;
    };
    let (x, y) = common::images(640, (8, 8, 2), 7); // 20 steps of 32
    let opts = || FitOptions {
        epochs: 1,
        batch_size: 32,
        seed: 3,
        ..Default::default()
    };
    let data = |d: &suanli::Device| {
        Dataset::from_f32(d, &x, 128, &y)
            .unwrap()
            .with_sample_shape(&[8, 8, 2])
            .unwrap()
    };
    let one = g.devices()[0].clone();
    let mut single = common::smooth_cnn(&one, 4, false);
    single.fit(&data(&one), opts()).unwrap();
    let mut par = common::smooth_cnn(&one, 4, false);
    let sets: Vec<Dataset> = g.devices().iter().map(data).collect();
    par.fit_parallel(&g, &sets, opts(), &ParallelOptions::default())
        .unwrap();
    let (a, b) = (weights(&single), weights(&par));
    let rel = common::rel_l2(&b, &a.iter().map(|&v| v as f64).collect::<Vec<_>>());
    assert!(rel < 1e-5, "two devices vs one: relative L2 {rel:e}");
    let moved = common::rel_l2(
        &a,
        &weights(&common::smooth_cnn(&one, 4, false))
            .iter()
            .map(|&v| v as f64)
            .collect::<Vec<_>>(),
    );
    assert!(
        moved > 1e-3,
        "training barely moved the weights ({moved:e})"
    );
}

/// Batch normalisation on two devices: each replica normalises with its shard's statistics,
/// and the moving statistics are averaged over the replicas every epoch, so the replicas
/// agree (the engine checks it bitwise) and the model that comes back holds the average.
#[test]
fn batch_norm_moving_statistics_are_averaged_over_replicas() {
    let Some(g) = group() else {
        return;
    };
    let (x, y) = common::images(512, (8, 8, 2), 8);
    let sets: Vec<Dataset> = g
        .devices()
        .iter()
        .map(|d| {
            Dataset::from_f32(d, &x, 128, &y)
                .unwrap()
                .with_sample_shape(&[8, 8, 2])
                .unwrap()
        })
        .collect();
    let mut m = common::smooth_cnn(&g.devices()[0], 4, true);
    let opts = FitOptions {
        epochs: 3,
        batch_size: 32,
        ..Default::default()
    };
    let h = m
        .fit_parallel(&g, &sets, opts, &ParallelOptions::default())
        .unwrap();
    assert!(
        h.history.loss[2] < h.history.loss[0],
        "{:?}",
        h.history.loss
    );
    // The moving statistics moved from their start (0 and 1) and are finite.
    let p = std::env::temp_dir().join(format!("suanli-par-bn-{}.safetensors", std::process::id()));
    m.save(&p).unwrap();
    let bytes = std::fs::read(&p).unwrap();
    let st = safetensors::SafeTensors::deserialize(&bytes).unwrap();
    let mean: Vec<f32> =
        bytemuck::pod_collect_to_vec(st.tensor("batch_normalization.moving_mean").unwrap().data());
    assert!(
        mean.iter().all(|v| v.is_finite()) && mean.iter().any(|v| v.abs() > 1e-3),
        "{mean:?}"
    );
    // Evaluating on one device with them works and agrees with the training loss' trend.
    let e = m.evaluate(&sets[0], 64).unwrap();
    assert!(e.loss.is_finite() && e.accuracy.unwrap() > 0.5, "{e:?}");
}

#[test]
fn balancer_converges_to_the_speed_ratio_without_oscillating() {
    // Device 1 is 2× slower: the shares should settle at 2/3 and 1/3.
    let mut b = Balancer::new(2, None);
    let speed = [2000.0, 1000.0]; // rows per second
    let mut trace = Vec::new();
    for _ in 0..30 {
        let sizes = b.split(96);
        assert!(sizes.iter().all(|&s| s > 0), "{sizes:?}");
        let secs: Vec<f64> = sizes
            .iter()
            .zip(speed)
            .map(|(&s, v)| s as f64 / v)
            .collect();
        b.observe(&sizes, &secs, &[1.0, 1.0]);
        trace.push(b.shares()[1]);
    }
    let settled = trace
        .iter()
        .position(|s| (s - 1.0 / 3.0).abs() < 0.02)
        .unwrap();
    assert!(settled <= 8, "took {settled} steps: {trace:?}");
    // Once settled it stays put (the dead band stops the jitter of integer shard sizes).
    for s in &trace[settled..] {
        assert!((s - 1.0 / 3.0).abs() < 0.02, "{trace:?}");
    }
    // A much slower device keeps its floor.
    let mut b = Balancer::new(2, None);
    for _ in 0..50 {
        let sizes = b.split(64);
        let secs = [sizes[0] as f64 / 1e6, sizes[1] as f64 / 1.0];
        b.observe(&sizes, &secs, &[1.0, 1.0]);
    }
    assert!(
        (b.shares()[1] - b.min_share).abs() < 1e-12,
        "{:?}",
        b.shares()
    );
    assert!(b.split(64)[1] >= 1);
    // A throttled device's target is cut.
    let mut b = Balancer::new(2, None);
    for _ in 0..20 {
        let sizes = b.split(100);
        let secs: Vec<f64> = sizes.iter().map(|&s| s as f64 / 1000.0).collect();
        b.observe(&sizes, &secs, &[1.0, 0.8]);
    }
    assert!((b.shares()[1] - 0.8 / 1.8).abs() < 0.02, "{:?}", b.shares());
}

#[test]
fn a_slowed_device_loses_share() {
    let Some(g) = group() else {
        return;
    };
    let (x, y) = rows(1280);
    let data: Vec<Dataset> = g
        .devices()
        .iter()
        .map(|d| Dataset::from_f32(d, &x, 10, &y).unwrap())
        .collect();
    let mut m = model(&g.devices()[0]);
    let p = m
        .fit_parallel(
            &g,
            &data,
            FitOptions {
                epochs: 1,
                batch_size: 64,
                ..Default::default()
            },
            // An injected clock: device 1 does a third of device 0's samples per second.
            &ParallelOptions {
                simulated_rates: Some(vec![3000.0, 1000.0]),
                ..Default::default()
            },
        )
        .unwrap();
    let last = p.shares.last().unwrap();
    // A third of the speed: a quarter of the batch, within the balancer's dead band.
    assert!(
        (last[1] - 0.25).abs() < 0.03,
        "the slowed device has {:.3} of the batch, expected 0.25",
        last[1]
    );
    assert!(
        p.shares.iter().all(|s| s[1] > 0.1),
        "a share went (nearly) to zero"
    );
    // Where it settled: the last quarter of the steps stays within a band (no oscillation).
    let tail = &p.shares[p.shares.len() * 3 / 4..];
    let (lo, hi) = tail
        .iter()
        .fold((1.0f64, 0.0f64), |(l, h), s| (l.min(s[1]), h.max(s[1])));
    assert!(
        hi - lo < 0.15,
        "share of the slowed device swung {lo:.2}..{hi:.2}"
    );
}

#[test]
fn parallel_fit_rejects_mismatched_data() {
    let Some(g) = group() else {
        return;
    };
    let (x, y) = rows(64);
    let d0 = Dataset::from_f32(&g.devices()[0], &x, 10, &y).unwrap();
    let mut m = model(&g.devices()[0]);
    // One dataset for two devices.
    let e = m
        .fit_parallel(
            &g,
            std::slice::from_ref(&d0),
            FitOptions::default(),
            &ParallelOptions::default(),
        )
        .unwrap_err();
    assert!(
        matches!(e, suanli::Error::InvalidArgument { name: "data", .. }),
        "{e}"
    );
    // Both on device 0.
    let d1 = Dataset::from_f32(&g.devices()[0], &x, 10, &y).unwrap();
    let e = m
        .fit_parallel(
            &g,
            &[d0, d1],
            FitOptions::default(),
            &ParallelOptions::default(),
        )
        .unwrap_err();
    assert!(matches!(e, suanli::Error::DeviceMismatch { .. }), "{e}");
}

/// `fit` applies the optimizer inside each layer's weight-gradient product; `fit_parallel`
/// (here on one device) writes gradients and runs the separate optimizer kernels. Both run
/// the same rule code (optim_rule.wgsl) on the same gradients, so 30 steps of every optimizer
/// (with a bias-less layer among them) must agree.
#[test]
fn fused_optimizer_step_equals_the_separate_one_for_every_optimizer() {
    let Some(dev) = common::own_device(None) else {
        return;
    };
    let group = DeviceGroup::from_devices(vec![dev.clone()]).unwrap();
    let (x, y) = rows(960); // 30 steps of 32
    let data = Dataset::from_f32(&dev, &x, 10, &y).unwrap();
    let opts = || FitOptions {
        epochs: 1,
        batch_size: 32,
        seed: 4,
        ..Default::default()
    };
    for opt in [
        Optimizer::Sgd {
            lr: 0.05,
            momentum: 0.9,
            nesterov: true,
        },
        Optimizer::adam(),
        Optimizer::AdamW {
            lr: 3e-3,
            weight_decay: 0.004,
            beta1: 0.9,
            beta2: 0.999,
            eps: 1e-7,
        },
        Optimizer::RmsProp {
            lr: 1e-3,
            rho: 0.9,
            eps: 1e-7,
        },
    ] {
        let build = || {
            let mut m = Sequential::with_seed(&dev, 8);
            m.add(Dense::new(24, "relu").input_dim(10)).unwrap();
            m.add(Dense::new(16, "tanh").use_bias(false)).unwrap();
            m.add(Dense::new(4, "softmax")).unwrap();
            m.compile(opt, Loss::SparseCategoricalCrossentropy).unwrap();
            m
        };
        let mut fused = build();
        let h = fused.fit(&data, opts()).unwrap();
        let mut separate = build();
        let p = separate
            .fit_parallel(
                &group,
                std::slice::from_ref(&data),
                opts(),
                &ParallelOptions::default(),
            )
            .unwrap();
        let (a, b) = (weights(&fused), weights(&separate));
        let before = weights(&build());
        // The weights moved, and both paths moved them the same way.
        let moved: f64 = a
            .iter()
            .zip(&before)
            .map(|(u, v)| ((u - v) as f64).powi(2))
            .sum();
        assert!(moved > 0.0, "{opt:?}: fit left the weights unchanged");
        let num: f64 = a
            .iter()
            .zip(&b)
            .map(|(u, v)| ((u - v) as f64).powi(2))
            .sum();
        let den: f64 = a.iter().map(|u| (*u as f64).powi(2)).sum();
        let rel = (num / den).sqrt();
        eprintln!("{opt:?}: relative L2 difference fused vs separate {rel:e}");
        assert!(
            rel < 1e-6,
            "{opt:?}: relative L2 difference {rel:e} after 30 steps"
        );
        assert!(
            (h.loss[0] - p.history.loss[0]).abs() < 1e-6 * h.loss[0],
            "{opt:?}: loss {} vs {}",
            h.loss[0],
            p.history.loss[0]
        );
    }
}

#[test]
fn one_delayed_step_does_not_move_the_shares() {
    // Two identical devices; now and then one step of one device is delayed 5× (the operating
    // system preempting it). The median of recent rates ignores that: shares stay at half.
    let mut b = Balancer::new(2, None);
    for step in 0..60 {
        let sizes = b.split(128);
        let mut secs: Vec<f64> = sizes.iter().map(|&s| s as f64 / 1000.0).collect();
        if step % 7 == 3 {
            secs[step % 2] *= 5.0;
        }
        b.observe(&sizes, &secs, &[1.0, 1.0]);
        assert!(
            (b.shares()[0] - 0.5).abs() < 0.02,
            "step {step}: shares {:?}",
            b.shares()
        );
    }
}

#[test]
fn buckets_overlap_and_checkpoints_of_parallel_training_load() {
    let Some(g) = group() else {
        return;
    };
    let (x, y) = rows(1280);
    let data: Vec<Dataset> = g
        .devices()
        .iter()
        .map(|d| Dataset::from_f32(d, &x, 10, &y).unwrap())
        .collect();
    let ck = std::env::temp_dir().join(format!("suanli-par-ck-{}.ckpt", std::process::id()));
    let mut m = model(&g.devices()[0]);
    let p = m
        .fit_parallel(
            &g,
            &data,
            FitOptions {
                epochs: 2,
                batch_size: 64,
                checkpoint: Some(&ck),
                ..Default::default()
            },
            // One byte: a bucket per layer, each leaving the device while the next runs.
            &ParallelOptions {
                bucket_bytes: 1,
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(p.exchange.len(), 2);
    for x in &p.exchange {
        assert_eq!(x.buckets, 2, "{x:?}");
        assert!((0.0..=1.0).contains(&x.hidden), "{x:?}");
        assert!(
            x.seconds_per_step > 0.0 && x.host_bytes_per_step > 0.0,
            "{x:?}"
        );
        assert_eq!(x.bytes_sent_per_step, 0.0, "one process sends nothing");
    }
    // The checkpoint of a parallel run loads and carries its history.
    let (back, c) = Sequential::load_checkpoint(&g.devices()[0], &ck).unwrap();
    assert_eq!(c.epoch, 2);
    assert_eq!(c.history.loss, p.history.loss);
    assert_eq!(back.steps_taken(), m.steps_taken());
    assert_eq!(weights(&back), weights(&m));
    let _ = std::fs::remove_file(&ck);
}

#[test]
fn a_frozen_layer_stays_put_on_one_device_and_on_two() {
    let Some(g) = group() else {
        return;
    };
    let one = g.devices()[0].clone();
    let x = common::random_vec(64 * 6, 17);
    let y: Vec<u32> = (0..64).map(|r| (x[r * 6] > 0.0) as u32).collect();
    let build = || {
        let mut m = Sequential::with_seed(&one, 8).input_shape(&[6]);
        m.add(Dense::new(5, "tanh")).unwrap();
        m.add(Dense::new(2, "softmax")).unwrap();
        m.compile(Optimizer::adam(), Loss::SparseCategoricalCrossentropy)
            .unwrap();
        m.set_trainable(0, false).unwrap();
        m
    };
    let opts = || FitOptions {
        epochs: 2,
        batch_size: 16,
        ..Default::default()
    };
    let read = |m: &Sequential| -> Vec<Vec<f32>> {
        m.weights()
            .iter()
            .map(|(_, t)| t.to_vec().unwrap())
            .collect()
    };
    let mut single = build();
    let before = read(&single);
    single
        .fit(&Dataset::from_f32(&one, &x, 6, &y).unwrap(), opts())
        .unwrap();
    let after = read(&single);
    assert_eq!(
        after[..2],
        before[..2],
        "the frozen layer's kernel and bias"
    );
    assert_ne!(after[2], before[2], "the layer above it trains");
    assert!(single.summary().contains("Non-trainable params: 35"));
    let mut par = build();
    let sets: Vec<Dataset> = g
        .devices()
        .iter()
        .map(|d| Dataset::from_f32(d, &x, 6, &y).unwrap())
        .collect();
    par.fit_parallel(&g, &sets, opts(), &ParallelOptions::default())
        .unwrap();
    let p = read(&par);
    assert_eq!(p[..2], before[..2], "frozen on two devices too");
    assert_ne!(p[2], before[2]);
    // Unfrozen again, it trains.
    single.set_trainable(0, true).unwrap();
    single
        .fit(&Dataset::from_f32(&one, &x, 6, &y).unwrap(), opts())
        .unwrap();
    assert_ne!(read(&single)[0], before[0]);
    assert!(single.set_trainable(5, false).is_err());
}
