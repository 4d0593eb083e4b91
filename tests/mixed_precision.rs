//! Mixed precision's loss scaling (Keras's `LossScaleOptimizer`), all on the device: an
//! overflowing step halves the scale and is skipped (weights and the state of SGD with
//! momentum, RMSprop, Adam and AdamW bit-identical),
//! clean steps double it, scaled training equals unscaled training (a power of two in and
//! out is exact in f32), clipping sees unscaled gradients, checkpoints keep the scale's
//! state, a model saved under `mixed_float16` loads and predicts in float32, combinations
//! not supported are refused, and an MNIST subset trains as well mixed as in float32.

mod common;

use std::collections::HashMap;
use std::path::Path;

use suanli::data::{Dataset, Mnist};
use suanli::exec::Recorder;
use suanli::internals::kernels::loss_scale as lsk;
use suanli::nn::{
    Clip, Dense, FitOptions, Loss, LossScale, LossScaleState, LossScaling, Model, Optimizer,
    Sequential,
};
use suanli::{Device, Error, Precision, Tensor};

macro_rules! dev_or_skip {
    () => {
        match common::device() {
            Some(d) => d,
            None => return,
        }
    };
}

/// A linear regression (12 → 2) trained with Adam and mean squared error.
fn linear(dev: &Device, scaling: LossScaling) -> Sequential {
    linear_with(dev, Optimizer::adam().with_lr(0.01), scaling)
}

/// A linear regression (12 → 2) trained with `opt` and mean squared error.
fn linear_with(dev: &Device, opt: Optimizer, scaling: LossScaling) -> Sequential {
    let mut m = Sequential::with_seed(dev, 3);
    m.add(Dense::new(2, "linear").input_dim(12)).unwrap();
    m.compile(opt, Loss::MeanSquaredError).unwrap();
    m.set_loss_scaling(scaling).unwrap();
    m
}

/// `rows` rows of 12 features (all `value` when given) with 2 targets.
fn regression(dev: &Device, rows: usize, value: Option<f32>, seed: u64) -> Dataset {
    let mut rng = suanli::random::Rng::new(seed);
    let x: Vec<f32> = (0..rows * 12)
        .map(|_| value.unwrap_or(rng.normal() as f32))
        .collect();
    let y: Vec<f32> = (0..rows * 2).map(|_| rng.normal() as f32).collect();
    Dataset::from_f32_targets(dev, &x, 12, &y, 2).unwrap()
}

fn one_epoch(m: &mut Sequential, data: &Dataset, batch: usize) {
    let o = FitOptions {
        epochs: 1,
        batch_size: batch,
        shuffle: false,
        ..Default::default()
    };
    m.fit(data, o).unwrap();
}

/// Every tensor of a checkpoint (weights and optimizer state), by name.
fn tensors(m: &Sequential, path: &Path) -> HashMap<String, Vec<u8>> {
    m.save_checkpoint(path, 1, 0, &Default::default()).unwrap();
    let bytes = std::fs::read(path).unwrap();
    let st = safetensors::SafeTensors::deserialize(&bytes).unwrap();
    st.tensors()
        .into_iter()
        .map(|(n, v)| (n, v.data().to_vec()))
        .collect()
}

fn scratch(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("suanli-mixed-{}-{name}", std::process::id()))
}

/// Every optimizer with state: SGD with momentum, RMSprop, Adam, AdamW (each guarded entry
/// point of shaders/optim.wgsl).
fn stateful_optimizers() -> [Optimizer; 4] {
    [
        Optimizer::Sgd {
            lr: 0.01,
            momentum: 0.9,
            nesterov: false,
        },
        Optimizer::rmsprop().with_lr(0.01),
        Optimizer::adam().with_lr(0.01),
        Optimizer::adamw().with_lr(0.01),
    ]
}

#[test]
fn an_overflowing_step_halves_the_scale_and_changes_nothing() {
    let dev = dev_or_skip!();
    for opt in stateful_optimizers() {
        overflowing_step_with(&dev, opt);
    }
}

fn overflowing_step_with(dev: &Device, opt: Optimizer) {
    let dev = dev.clone();
    let mut m = linear_with(&dev, opt, LossScaling::On(LossScale::dynamic()));
    let clean = regression(&dev, 4, None, 1);
    // Inputs of 1e18: the loss (~1e35) is finite, its gradient times 2^15 is not.
    let huge = regression(&dev, 4, Some(1e18), 2);
    let path = scratch("skip.safetensors");
    let t0 = tensors(&m, &path);
    one_epoch(&mut m, &clean, 4);
    let t1 = tensors(&m, &path);
    let changed = |a: &HashMap<String, Vec<u8>>, b: &HashMap<String, Vec<u8>>| {
        let mut names: Vec<&String> = b.keys().filter(|k| a.get(*k) != b.get(*k)).collect();
        names.sort();
        names.into_iter().cloned().collect::<Vec<String>>()
    };
    assert!(
        !changed(&t0, &t1).is_empty(),
        "{opt:?}: a clean step updates"
    );
    let s1 = m.loss_scale_state().unwrap().unwrap();
    assert_eq!(
        s1,
        LossScaleState {
            scale: 32768.0,
            clean_steps: 1,
            skipped_steps: 0
        }
    );
    one_epoch(&mut m, &huge, 4);
    let t2 = tensors(&m, &path);
    assert_eq!(
        changed(&t1, &t2),
        Vec::<String>::new(),
        "{opt:?}: the overflowing step changed weights or optimizer state"
    );
    assert!(
        t2.keys().any(|k| k.contains(".opt")),
        "{opt:?}: its state checked"
    );
    let s2 = m.loss_scale_state().unwrap().unwrap();
    assert_eq!(
        s2,
        LossScaleState {
            scale: 16384.0,
            clean_steps: 0,
            skipped_steps: 1
        }
    );
    one_epoch(&mut m, &clean, 4);
    let t3 = tensors(&m, &path);
    let after = changed(&t2, &t3);
    assert_eq!(
        after.len(),
        t3.len(),
        "{opt:?}: the step after updates everything: {after:?}"
    );
    assert_eq!(m.loss_scale_state().unwrap().unwrap().skipped_steps, 1);
    let _ = std::fs::remove_file(&path);
}

#[test]
fn clean_steps_double_the_scale_and_history_reports_it() {
    let dev = dev_or_skip!();
    let ls = LossScale {
        initial: 4.0,
        dynamic: true,
        growth_steps: 3,
    };
    let mut m = linear(&dev, LossScaling::On(ls));
    let data = regression(&dev, 28, None, 4);
    let o = FitOptions {
        epochs: 2,
        batch_size: 4,
        shuffle: false,
        ..Default::default()
    };
    // 7 steps an epoch: 4·2·2 after 6, then 1 clean; 14 steps: 4·2^4, 2 clean.
    let h = m.fit(&data, o).unwrap();
    assert_eq!(h.metrics.get("loss_scale"), Some(&vec![16.0, 64.0]));
    let s = m.loss_scale_state().unwrap().unwrap();
    assert_eq!((s.scale, s.clean_steps, s.skipped_steps), (64.0, 2, 0));
    // A fixed scale never changes.
    let mut f = linear(&dev, LossScaling::On(LossScale::fixed(8.0)));
    one_epoch(&mut f, &data, 4);
    assert_eq!(f.loss_scale_state().unwrap().unwrap().scale, 8.0);
}

fn weights(m: &Sequential) -> Vec<f32> {
    m.weights()
        .iter()
        .flat_map(|(_, t)| t.to_vec().unwrap())
        .collect()
}

/// A 12-16-8-3 MLP on `noisy_classes`, Adam, 6 steps of 8 rows.
fn mlp_after(dev: &Device, scaling: LossScaling, clip: Clip) -> Vec<f32> {
    mlp_after_with(dev, Optimizer::adam(), scaling, clip)
}

/// A 12-16-8-3 MLP on `noisy_classes`, `opt`, 6 steps of 8 rows.
fn mlp_after_with(dev: &Device, opt: Optimizer, scaling: LossScaling, clip: Clip) -> Vec<f32> {
    let mut m = Sequential::with_seed(dev, 9);
    m.add(Dense::new(16, "relu").input_dim(12)).unwrap();
    m.add(Dense::new(8, "tanh")).unwrap();
    m.add(Dense::new(3, "softmax")).unwrap();
    m.compile(opt, Loss::SparseCategoricalCrossentropy).unwrap();
    m.set_loss_scaling(scaling).unwrap();
    m.set_gradient_clipping(clip).unwrap();
    let data = common::noisy_classes(dev, 48);
    one_epoch(&mut m, &data, 8);
    weights(&m)
}

fn max_ulps(a: &[f32], b: &[f32]) -> u32 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .map(|(x, y)| (x.to_bits() as i64 - y.to_bits() as i64).unsigned_abs() as u32)
        .max()
        .unwrap_or(0)
}

#[test]
fn scaled_training_equals_unscaled_training() {
    let dev = dev_or_skip!();
    let on = LossScaling::On(LossScale::dynamic());
    // Unscaled on the same (unfused) path: clipping that never binds.
    let never = Clip {
        norm: Some(1e30),
        ..Clip::none()
    };
    // Momentum-free SGD steps by the gradient itself, so a missing or wrong unscale shows
    // at once (a step 2^15 too large); Adam's normalised step would hide most of it.
    for opt in [Optimizer::sgd(0.1), Optimizer::adam()] {
        let scaled = mlp_after_with(&dev, opt, on, Clip::none());
        let unscaled = mlp_after_with(&dev, opt, LossScaling::Off, never);
        let ulps = max_ulps(&scaled, &unscaled);
        assert!(
            ulps <= 4,
            "{opt:?}: scaled and unscaled weights {ulps} ulps apart"
        );
        // And the fused default path, to its own rounding.
        let fused = mlp_after_with(&dev, opt, LossScaling::Off, Clip::none());
        let want: Vec<f64> = fused.iter().map(|&v| v as f64).collect();
        common::assert_rel_l2(
            &format!("{opt:?}: scaled against fused"),
            &scaled,
            &want,
            1e-5,
        );
    }
}

#[test]
fn clipping_sees_unscaled_gradients() {
    let dev = dev_or_skip!();
    for clip in [
        Clip {
            norm: Some(1e-3),
            ..Clip::none()
        },
        Clip {
            value: Some(1e-4),
            ..Clip::none()
        },
        Clip::global_norm(1e-3),
    ] {
        let scaled = mlp_after(&dev, LossScaling::On(LossScale::dynamic()), clip);
        let unscaled = mlp_after(&dev, LossScaling::Off, clip);
        let ulps = max_ulps(&scaled, &unscaled);
        assert!(ulps <= 4, "{clip:?}: {ulps} ulps apart");
    }
}

#[test]
fn checkpoints_keep_the_policy_and_the_scale() {
    let dev = dev_or_skip!();
    // 2^10: float16 operands hold a seed of order 1 scaled by it (2^20 would pass 65504 and
    // skip the clean steps too).
    let ls = LossScale {
        initial: 1024.0,
        dynamic: true,
        growth_steps: 2,
    };
    let mut m = linear(&dev, LossScaling::On(ls));
    // The overflowing batch in float32 (1e18 would already be inf as a float16 operand in
    // the forward pass, and a non-finite loss stops fit); then the policy, which keeps an
    // explicit scaling's state.
    one_epoch(&mut m, &regression(&dev, 4, Some(1e18), 2), 4);
    m.set_precision_policy(Precision::MixedFloat16);
    let ck = scratch("ck.safetensors");
    let o = FitOptions {
        epochs: 1,
        batch_size: 4,
        shuffle: false,
        checkpoint: Some(&ck),
        ..Default::default()
    };
    m.fit(&regression(&dev, 12, None, 5), o).unwrap();
    let want = m.loss_scale_state().unwrap().unwrap();
    // 2^10 halved, then 3 clean steps: doubled once, one clean.
    assert_eq!(
        (want.scale, want.clean_steps, want.skipped_steps),
        (1024.0, 1, 1)
    );
    let (loaded, _) = Model::load_checkpoint(&dev, &ck).unwrap();
    assert_eq!(loaded.precision_policy(), Precision::MixedFloat16);
    assert_eq!(loaded.loss_scaling(), LossScaling::On(ls));
    assert_eq!(loaded.loss_scale_state().unwrap(), Some(want));
    let _ = std::fs::remove_file(&ck);
}

#[test]
fn a_mixed_model_loads_and_predicts_in_float32() {
    let dev = dev_or_skip!();
    let mut m = Sequential::with_seed(&dev, 9);
    m.add(Dense::new(16, "relu").input_dim(12)).unwrap();
    m.add(Dense::new(3, "softmax")).unwrap();
    m.compile(Optimizer::adam(), Loss::SparseCategoricalCrossentropy)
        .unwrap();
    m.set_precision_policy(Precision::MixedFloat16);
    assert_eq!(m.loss_scale(), Some(LossScale::dynamic()));
    let data = common::noisy_classes(&dev, 48);
    one_epoch(&mut m, &data, 8);
    let path = scratch("model.safetensors");
    m.save(&path).unwrap();
    let loaded = Sequential::load(&dev, &path).unwrap();
    assert_eq!(loaded.precision_policy(), Precision::Float32);
    let mut rng = suanli::random::Rng::new(7);
    let x: Vec<f32> = (0..10 * 12).map(|_| rng.normal() as f32).collect();
    let x = Tensor::from_slice(&dev, &x, &[10, 12]).unwrap();
    let mixed = m.predict(&x).unwrap().to_vec().unwrap();
    let f32s: Vec<f64> = loaded
        .predict(&x)
        .unwrap()
        .to_vec()
        .unwrap()
        .into_iter()
        .map(f64::from)
        .collect();
    // float16 operands: about 2^-11 relative per product.
    common::assert_rel_l2("mixed against float32 predictions", &mixed, &f32s, 1e-2);
    let _ = std::fs::remove_file(&path);
}

#[test]
fn unsupported_combinations_and_bad_scales_are_refused() {
    let dev = dev_or_skip!();
    for bad in [
        LossScale {
            initial: 0.0,
            ..LossScale::dynamic()
        },
        LossScale {
            initial: f64::INFINITY,
            ..LossScale::dynamic()
        },
        LossScale {
            initial: 1e39,
            ..LossScale::dynamic()
        },
        // 1 / 1e-39 is inf in float32: the first clean step would write NaN weights.
        LossScale {
            initial: 1e-39,
            ..LossScale::dynamic()
        },
        LossScale::fixed(0.5),
        LossScale {
            initial: 2.0f64.powi(65),
            ..LossScale::dynamic()
        },
        LossScale {
            growth_steps: 0,
            ..LossScale::dynamic()
        },
    ] {
        let mut m = linear(&dev, LossScaling::Off);
        let e = m.set_loss_scaling(LossScaling::On(bad)).unwrap_err();
        assert!(matches!(e, Error::InvalidArgument { .. }), "{bad:?}: {e}");
    }
    let mut m = linear(&dev, LossScaling::Auto);
    m.set_precision_policy(Precision::MixedFloat16);
    m.set_gradient_accumulation(2).unwrap();
    let before = weights(&m);
    let o = FitOptions {
        epochs: 1,
        batch_size: 4,
        ..Default::default()
    };
    let e = m.fit(&regression(&dev, 8, None, 1), o).unwrap_err();
    assert!(
        matches!(
            &e,
            Error::InvalidArgument {
                name: "loss scaling",
                ..
            }
        ),
        "{e}"
    );
    assert_eq!(weights(&m), before, "nothing changed");
    // Turned off, accumulation trains under the mixed policy.
    m.set_loss_scaling(LossScaling::Off).unwrap();
    one_epoch(&mut m, &regression(&dev, 8, None, 1), 4);
    assert_eq!(m.loss_scale_state().unwrap(), None);
}

/// Test accuracy of a 784-64-10 MLP after 2 epochs on 6000 MNIST rows.
fn mnist_accuracy(dev: &Device, mnist: &Mnist, policy: Precision, seed: u64) -> f64 {
    let rows = 6000;
    let train = Dataset::from_u8(
        dev,
        &mnist.train_images[..rows * 784],
        784,
        1.0 / 255.0,
        &mnist.train_labels[..rows],
    )
    .unwrap();
    let test = Dataset::from_u8(
        dev,
        &mnist.test_images[..2000 * 784],
        784,
        1.0 / 255.0,
        &mnist.test_labels[..2000],
    )
    .unwrap();
    let mut m = Sequential::with_seed(dev, seed);
    m.add(Dense::new(64, "relu").input_dim(784)).unwrap();
    m.add(Dense::new(10, "softmax")).unwrap();
    m.compile(Optimizer::adam(), Loss::SparseCategoricalCrossentropy)
        .unwrap();
    m.set_precision_policy(policy);
    let o = FitOptions {
        epochs: 2,
        batch_size: 64,
        seed,
        ..Default::default()
    };
    m.fit(&train, o).unwrap();
    if policy.is_mixed() {
        assert_eq!(m.loss_scale_state().unwrap().unwrap().skipped_steps, 0);
    }
    m.evaluate(&test, 500).unwrap().accuracy.unwrap()
}

#[test]
fn mnist_subset_trains_as_well_mixed_as_in_float32() {
    let dev = dev_or_skip!();
    let Ok(mnist) = Mnist::load() else {
        eprintln!("skipped: no MNIST files");
        return;
    };
    let (mut f, mut h) = (0.0, 0.0);
    for seed in [1, 2, 3] {
        f += mnist_accuracy(&dev, &mnist, Precision::Float32, seed) / 3.0;
        h += mnist_accuracy(&dev, &mnist, Precision::MixedFloat16, seed) / 3.0;
    }
    eprintln!(
        "MNIST subset, mean test accuracy over 3 seeds: float32 {f:.4}, mixed_float16 {h:.4}"
    );
    assert!(f > 0.85, "float32 learns: {f}");
    assert!((f - h).abs() <= 0.003, "float32 {f} against mixed {h}");
}

#[test]
fn dispatches_per_scaled_step() {
    let Some(dev) = common::own_device(None) else {
        return;
    };
    if dev
        .set_profiling_clock(suanli::exec::ProfileClock::Timestamps)
        .is_err()
    {
        return;
    }
    let data = common::noisy_classes(&dev, 320); // 10 steps of 32
    let per_step = |scaling: LossScaling| {
        let mut m = Sequential::with_seed(&dev, 9);
        m.add(Dense::new(16, "relu").input_dim(12)).unwrap();
        m.add(Dense::new(8, "tanh")).unwrap();
        m.add(Dense::new(3, "softmax")).unwrap();
        m.compile(Optimizer::sgd(0.1), Loss::SparseCategoricalCrossentropy)
            .unwrap();
        m.set_loss_scaling(scaling).unwrap();
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
    let (fused, table) = per_step(LossScaling::Off);
    assert_eq!(fused, 11.0, "{table}");
    // The same 11 with the gradients written out, the seed scaled (1), a check per
    // parameter (6), the update (1), an unscale per parameter (6), a guarded optimizer step
    // per parameter (6): 31.
    let (scaled, table) = per_step(LossScaling::On(LossScale::dynamic()));
    assert_eq!(scaled, 31.0, "{table}");
}

#[test]
fn several_devices_refuse_loss_scaling() {
    let Some(a) = common::own_device(None) else {
        return;
    };
    let b = common::own_device(None).unwrap();
    let g = suanli::DeviceGroup::from_devices(vec![a, b]).unwrap();
    let sets: Vec<Dataset> = g
        .devices()
        .iter()
        .map(|d| regression(d, 8, None, 1))
        .collect();
    let mut m = linear(&g.devices()[0], LossScaling::Auto);
    m.set_precision_policy(Precision::MixedFloat16);
    let o = FitOptions {
        epochs: 1,
        batch_size: 4,
        ..Default::default()
    };
    let e = m
        .fit_parallel(&g, &sets, o, &suanli::multi::ParallelOptions::default())
        .unwrap_err();
    assert!(
        matches!(
            &e,
            Error::InvalidArgument {
                name: "loss scaling",
                ..
            }
        ),
        "{e}"
    );
}

/// Doubling the dynamic scale after every clean step stops at 2^64 (unbounded, it reached inf
/// and skipped every step after); the weights stay finite. Halving's floor at 1:
/// `the_check_and_the_update_at_the_edges`.
#[test]
fn the_dynamic_scale_stays_between_one_and_two_to_the_64() {
    let dev = dev_or_skip!();
    let up = LossScale {
        initial: 2.0f64.powi(60),
        dynamic: true,
        growth_steps: 1,
    };
    let mut m = linear(&dev, LossScaling::On(up));
    one_epoch(&mut m, &regression(&dev, 40, None, 21), 4);
    let st = m.loss_scale_state().unwrap().unwrap();
    assert_eq!((st.scale, st.skipped_steps), (2.0f64.powi(64), 0), "{st:?}");
    assert!(weights(&m).iter().all(|w| w.is_finite()));
}

/// Runs the check over `values` and then the update on a state of (scale, clean steps,
/// growth interval), dynamic: the state words after.
fn check_then_update(
    dev: &Device,
    values: &[f32],
    scale: f32,
    clean: u32,
    growth: u32,
) -> Vec<u32> {
    let mut w = [0u32; lsk::STATE_WORDS];
    w[lsk::SCALE_WORD] = scale.to_bits();
    w[lsk::CLEAN_WORD] = clean;
    w[lsk::GROWTH_WORD] = growth;
    w[lsk::DYNAMIC_WORD] = 1;
    let f: Vec<f32> = w.iter().map(|&b| f32::from_bits(b)).collect();
    let state = Tensor::from_slice(dev, &f, &[lsk::STATE_WORDS]).unwrap();
    let x = Tensor::from_slice(dev, values, &[values.len()]).unwrap();
    let mut rec = Recorder::new(dev);
    lsk::check(&mut rec, x.buffer(), values.len(), state.buffer()).unwrap();
    lsk::update(&mut rec, state.buffer()).unwrap();
    rec.submit().unwrap();
    state
        .to_vec()
        .unwrap()
        .into_iter()
        .map(f32::to_bits)
        .collect()
}

/// The check and the update on the edges: the largest finite value, subnormals and zeros are
/// finite, ±inf and NaN are not; a scale of 1 is not halved, 2^64 is not doubled, 2^63 is.
#[test]
fn the_check_and_the_update_at_the_edges() {
    let dev = dev_or_skip!();
    let scale = |w: &[u32]| f32::from_bits(w[lsk::SCALE_WORD]);
    let finite = [f32::MAX, -f32::MAX, 1e-45, -1e-45, 0.0, -0.0, 1.0];
    let w = check_then_update(&dev, &finite, 8.0, 0, 100);
    assert_eq!(
        (w[lsk::SKIP_WORD], w[lsk::CLEAN_WORD], scale(&w)),
        (0, 1, 8.0)
    );
    for bad in [f32::INFINITY, f32::NEG_INFINITY, f32::NAN] {
        let mut v = finite.to_vec();
        v.insert(3, bad);
        let w = check_then_update(&dev, &v, 8.0, 5, 100);
        assert_eq!(
            (
                w[lsk::SKIP_WORD],
                w[lsk::SKIPPED_WORD],
                w[lsk::CLEAN_WORD],
                scale(&w)
            ),
            (1, 1, 0, 4.0),
            "{bad}"
        );
        assert_eq!(
            w[lsk::OVERFLOW_WORD],
            0,
            "the flag is cleared for the next step"
        );
        let w = check_then_update(&dev, &v, 1.0, 0, 100);
        assert_eq!(
            (w[lsk::SKIP_WORD], scale(&w)),
            (1, 1.0),
            "halving stops at 1"
        );
    }
    let top = 2.0f32.powi(63);
    let w = check_then_update(&dev, &finite, top, 99, 100);
    assert_eq!(scale(&w), 2.0 * top);
    let w = check_then_update(&dev, &finite, 2.0 * top, 99, 100);
    assert_eq!(
        (scale(&w), w[lsk::CLEAN_WORD]),
        (2.0 * top, 0),
        "doubling stops at 2^64"
    );
}
