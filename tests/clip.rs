//! Gradient clipping (Keras's `global_clipnorm`, `clipnorm`, `clipvalue`): the unfused
//! optimizer path against NumPy-style f64 clipping of the same gradients, frozen layers left
//! out of the norm, the fused path untouched when clipping is off (dispatches per step
//! counted by the profiler), bad limits refused, and the setting kept by checkpoints.

mod common;

use suanli::data::Dataset;
use suanli::exec::ProfileClock;
use suanli::nn::{Clip, Dense, FitOptions, Loss, Optimizer, Sequential};
use suanli::{Device, Error};

macro_rules! dev_or_skip {
    () => {
        match common::device() {
            Some(d) => d,
            None => return,
        }
    };
}

fn mlp(dev: &Device) -> Sequential {
    let mut m = Sequential::with_seed(dev, 9);
    m.add(Dense::new(16, "relu").input_dim(12)).unwrap();
    m.add(Dense::new(8, "tanh")).unwrap();
    m.add(Dense::new(3, "softmax")).unwrap();
    let sgd = Optimizer::Sgd {
        lr: 1.0,
        momentum: 0.0,
        nesterov: false,
    };
    m.compile(sgd, Loss::SparseCategoricalCrossentropy).unwrap();
    m
}

fn weights(m: &Sequential) -> Vec<Vec<f32>> {
    m.weights()
        .iter()
        .map(|(_, t)| t.to_vec().unwrap())
        .collect()
}

/// The gradients of one full-batch step of SGD with rate 1 (the weights' change), with
/// `clip` set and `frozen` layers frozen.
fn step(dev: &Device, data: &Dataset, clip: Clip, frozen: &[usize]) -> Vec<Vec<f64>> {
    let mut m = mlp(dev);
    m.set_gradient_clipping(clip).unwrap();
    for &l in frozen {
        m.set_trainable(l, false).unwrap();
    }
    let before = weights(&m);
    let o = FitOptions {
        epochs: 1,
        batch_size: data.len(),
        shuffle: false,
        ..Default::default()
    };
    m.fit(data, o).unwrap();
    before
        .iter()
        .zip(weights(&m))
        .map(|(b, a)| b.iter().zip(a).map(|(&p, q)| p as f64 - q as f64).collect())
        .collect()
}

fn norm(g: &[Vec<f64>]) -> f64 {
    g.iter().flatten().map(|v| v * v).sum::<f64>().sqrt()
}

fn assert_close(what: &str, got: &[Vec<f64>], want: &[Vec<f64>]) {
    let got: Vec<f32> = got.iter().flatten().map(|&v| v as f32).collect();
    let want: Vec<f64> = want.iter().flatten().copied().collect();
    common::assert_rel_l2(what, &got, &want, 2e-5);
}

#[test]
fn clipping_matches_f64_clipping_of_the_same_gradients() {
    let dev = dev_or_skip!();
    let data = common::noisy_classes(&dev, 64);
    let g = step(&dev, &data, Clip::none(), &[]);
    let total = norm(&g);
    assert!(
        total > 0.01,
        "gradients too small to test clipping: {total}"
    );

    // global_clipnorm at a quarter of the norm: everything scaled alike.
    let c = 0.25 * total;
    let want: Vec<Vec<f64>> = g
        .iter()
        .map(|t| t.iter().map(|v| v * c / total).collect())
        .collect();
    assert_close(
        "global_clipnorm",
        &step(&dev, &data, Clip::global_norm(c), &[]),
        &want,
    );

    // clipnorm: each tensor to its own limit, set between the tensors' norms so some are
    // clipped and some are not.
    let mut norms: Vec<f64> = g.iter().map(|t| norm(std::slice::from_ref(t))).collect();
    norms.sort_by(f64::total_cmp);
    let limit = 0.5 * (norms[2] + norms[3]);
    let want: Vec<Vec<f64>> = g
        .iter()
        .map(|t| {
            let n = norm(std::slice::from_ref(t));
            t.iter()
                .map(|v| if n > limit { v * limit / n } else { *v })
                .collect()
        })
        .collect();
    assert!(g.iter().any(|t| norm(std::slice::from_ref(t)) > limit));
    assert!(g.iter().any(|t| norm(std::slice::from_ref(t)) < limit));
    let clip = Clip {
        norm: Some(limit),
        ..Clip::default()
    };
    assert_close("clipnorm", &step(&dev, &data, clip, &[]), &want);

    // clipvalue, with global_clipnorm first (Keras's order: norm, then value).
    let v = 0.004;
    let clip = Clip {
        value: Some(v),
        global_norm: Some(c),
        ..Clip::default()
    };
    let want: Vec<Vec<f64>> = g
        .iter()
        .map(|t| t.iter().map(|x| (x * c / total).clamp(-v, v)).collect())
        .collect();
    assert_close(
        "clipvalue after global_clipnorm",
        &step(&dev, &data, clip, &[]),
        &want,
    );

    // A limit far above the norm: the unfused path changes nothing.
    assert_close(
        "unfused, not clipping",
        &step(&dev, &data, Clip::global_norm(1e30), &[]),
        &g,
    );

    // A frozen layer: not moved, and not counted in the global norm.
    let fz = step(&dev, &data, Clip::global_norm(c), &[1]);
    assert!(
        fz[2].iter().chain(&fz[3]).all(|&d| d == 0.0),
        "the frozen layer moved"
    );
    let g_live: Vec<Vec<f64>> = [0, 1, 4, 5].iter().map(|&i| g[i].clone()).collect();
    let live = norm(&g_live);
    let want: Vec<Vec<f64>> = g_live
        .iter()
        .map(|t| t.iter().map(|v| v * (c / live).min(1.0)).collect())
        .collect();
    let got: Vec<Vec<f64>> = [0, 1, 4, 5].iter().map(|&i| fz[i].clone()).collect();
    assert_close("global_clipnorm with a frozen layer", &got, &want);
}

#[test]
fn dispatches_per_step_fused_and_clipped() {
    let Some(dev) = common::own_device(None) else {
        return;
    };
    if dev.set_profiling_clock(ProfileClock::Timestamps).is_err() {
        return;
    }
    let data = common::noisy_classes(&dev, 320); // 10 steps of 32
    let per_step = |clip: Clip| {
        let mut m = mlp(&dev);
        m.set_gradient_clipping(clip).unwrap();
        dev.reset_profile();
        dev.set_profiling(true);
        let o = FitOptions {
            epochs: 1,
            batch_size: 32,
            ..Default::default()
        };
        m.fit(&data, o).unwrap();
        dev.set_profiling(false);
        let p = dev.profile();
        let calls: u64 = p.kernels.iter().map(|k| k.calls).sum::<u64>() + p.untimed;
        (calls as f64 / 10.0, p.table(usize::MAX))
    };
    // Fused: the gather (features, then labels: 2), 3 forward matmuls, the loss end, 2 input
    // gradients, 3 weight gradients applying SGD: 11 (the MNIST MLP's 10 gathers bytes and
    // labels in one).
    let (fused, table) = per_step(Clip::none());
    assert_eq!(fused, 11.0, "{table}");
    // Clipped by the global norm: the same 11 (the weight gradients now written out), then a
    // fill of the norms, a sum of squares and a scale per parameter (6), and an optimizer
    // step per parameter: 11 + 1 + 18 = 30.
    let (clipped, table) = per_step(Clip::global_norm(1.0));
    assert_eq!(clipped, 30.0, "{table}");
}

#[test]
fn bad_limits_are_refused_and_checkpoints_keep_the_setting() {
    let dev = dev_or_skip!();
    let mut m = mlp(&dev);
    for (clip, says) in [
        (Clip::global_norm(-1.0), "global_clipnorm"),
        (Clip::global_norm(f64::NAN), "global_clipnorm"),
        (
            Clip {
                value: Some(0.0),
                ..Clip::default()
            },
            "clipvalue",
        ),
        (
            Clip {
                norm: Some(1.0),
                global_norm: Some(1.0),
                ..Clip::default()
            },
            "not both",
        ),
    ] {
        let e = m.set_gradient_clipping(clip).unwrap_err();
        assert!(matches!(e, Error::InvalidArgument { .. }), "{e:?}");
        assert!(e.to_string().contains(says), "{e}");
        assert_eq!(
            m.gradient_clipping(),
            Clip::none(),
            "a refused setting left a trace"
        );
    }
    let clip = Clip {
        value: Some(0.5),
        global_norm: Some(1.0),
        ..Clip::default()
    };
    m.set_gradient_clipping(clip).unwrap();
    let dir = std::env::temp_dir().join(format!("suanli-clip-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join("ck.safetensors");
    m.save_checkpoint(&p, 0, 1, &Default::default()).unwrap();
    let (back, _) = Sequential::load_checkpoint(&dev, &p).unwrap();
    assert_eq!(back.gradient_clipping(), clip);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn clipped_training_on_two_devices_equals_one_device() {
    let (Some(a), Some(b)) = (common::own_device(None), common::own_device(None)) else {
        return;
    };
    let g = suanli::multi::DeviceGroup::from_devices(vec![a, b]).unwrap();
    let one = g.devices()[0].clone();
    let opts = || FitOptions {
        epochs: 2,
        batch_size: 32,
        seed: 4,
        ..Default::default()
    };
    let clip = Clip {
        value: Some(0.02),
        global_norm: Some(0.05),
        ..Clip::default()
    };
    let mut single = mlp(&one);
    single.set_gradient_clipping(clip).unwrap();
    single
        .fit(&common::noisy_classes(&one, 320), opts())
        .unwrap();
    let mut par = mlp(&one);
    par.set_gradient_clipping(clip).unwrap();
    let sets: Vec<Dataset> = g
        .devices()
        .iter()
        .map(|d| common::noisy_classes(d, 320))
        .collect();
    par.fit_parallel(
        &g,
        &sets,
        opts(),
        &suanli::multi::ParallelOptions::default(),
    )
    .unwrap();
    let flat = |m: &Sequential| weights(m).concat();
    let (w1, w2) = (flat(&single), flat(&par));
    let rel = common::rel_l2(&w2, &w1.iter().map(|&v| v as f64).collect::<Vec<_>>());
    assert!(
        rel < 1e-5,
        "clipped, two devices vs one: relative L2 {rel:e}"
    );
    // And clipping changed the run (the limits are below the gradients' norms).
    let mut free = mlp(&one);
    free.fit(&common::noisy_classes(&one, 320), opts()).unwrap();
    let diff = common::rel_l2(
        &flat(&free),
        &w1.iter().map(|&v| v as f64).collect::<Vec<_>>(),
    );
    assert!(diff > 1e-3, "clipping changed nothing ({diff:e})");
}
