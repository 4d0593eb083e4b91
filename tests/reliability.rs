//! Reliability: checkpoint and resume (bit-identical to an uninterrupted run), a NaN loss
//! stops `fit` and keeps the last good checkpoint, a training process killed with SIGKILL
//! mid-epoch leaves a checkpoint that loads and resumes, and bad checkpoint use is a typed
//! error.

mod common;

use std::path::{Path, PathBuf};

use suanli::data::Dataset;
use suanli::nn::{Dense, FitOptions, Loss, Optimizer, Sequential};
use suanli::Error;

/// A temporary directory unique to this test.
fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("suanli-rel-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The model's tensors by name, as raw little-endian bytes (bit-exact comparison).
fn weights(m: &Sequential, dir: &Path, name: &str) -> Vec<(String, Vec<u8>)> {
    let p = dir.join(name);
    m.save(&p).unwrap();
    let bytes = std::fs::read(&p).unwrap();
    let st = safetensors::SafeTensors::deserialize(&bytes).unwrap();
    let mut v: Vec<(String, Vec<u8>)> = st
        .tensors()
        .into_iter()
        .map(|(n, t)| (n, t.data().to_vec()))
        .collect();
    v.sort();
    assert!(!v.is_empty());
    v
}

#[test]
fn resume_after_epoch_3_is_bit_identical_to_an_uninterrupted_run() {
    let dev = dev_or_skip!();
    let dir = tmp("resume");
    let train = common::noisy_classes(&dev, 300);
    for opt in [
        Optimizer::adam(),
        Optimizer::Sgd {
            lr: 0.05,
            momentum: 0.9,
            nesterov: true,
        },
    ] {
        let opts = |epochs| FitOptions {
            epochs,
            batch_size: 32, // 300 rows: a ragged last batch every epoch
            seed: 42,
            ..Default::default()
        };
        // Uninterrupted: 5 epochs.
        let mut a = common::small_model(&dev, opt);
        let ha = a.fit(&train, opts(5)).unwrap();
        // Interrupted after 3 epochs (checkpointing), then resumed from the file.
        let ck = dir.join("run.ckpt");
        let mut b = common::small_model(&dev, opt);
        b.fit(
            &train,
            FitOptions {
                checkpoint: Some(&ck),
                ..opts(3)
            },
        )
        .unwrap();
        drop(b);
        let (mut c, state) = Sequential::load_checkpoint(&dev, &ck).unwrap();
        assert_eq!((state.epoch, state.seed), (3, 42));
        assert_eq!(state.history.loss.len(), 3);
        let hc = c
            .fit(
                &train,
                FitOptions {
                    resume: Some(&state),
                    checkpoint: Some(&ck),
                    ..opts(5)
                },
            )
            .unwrap();
        assert!(
            weights(&a, &dir, "a.safetensors") == weights(&c, &dir, "c.safetensors"),
            "{opt:?}: resumed weights differ from the uninterrupted run's"
        );
        assert_eq!(ha.loss, hc.loss, "{opt:?}");
        assert_eq!(ha.accuracy, hc.accuracy, "{opt:?}");
        // The checkpoint now stands at epoch 5, and a plain `load` reads its weights.
        let (_, end) = Sequential::load_checkpoint(&dev, &ck).unwrap();
        assert_eq!(end.epoch, 5);
        let plain = Sequential::load(&dev, &ck).unwrap();
        assert!(weights(&plain, &dir, "p.safetensors") == weights(&a, &dir, "a2.safetensors"));
    }
}

#[test]
fn non_finite_loss_stops_fit_and_keeps_the_last_checkpoint() {
    let dev = dev_or_skip!();
    let dir = tmp("nan");
    let train = common::noisy_classes(&dev, 200);
    let ck = dir.join("run.ckpt");
    let mut m = common::small_model(&dev, Optimizer::adam());
    // Epoch 2 (index 1) steps by ~1e38 per step: the weights overflow to ±inf and the loss
    // becomes NaN.
    let schedule = |e: usize| if e == 0 { 1e-3 } else { 1e38 };
    let err = m
        .fit(
            &train,
            FitOptions {
                epochs: 4,
                lr_schedule: Some(&schedule),
                checkpoint: Some(&ck),
                ..Default::default()
            },
        )
        .unwrap_err();
    match err {
        Error::NonFinite { epoch, step, value } => {
            assert_eq!(epoch, 2, "{err}");
            assert!(step >= 1 && !value.is_finite());
        }
        other => panic!("expected NonFinite, got {other:?}"),
    }
    let (good, state) = Sequential::load_checkpoint(&dev, &ck).unwrap();
    assert_eq!(state.epoch, 1, "the checkpoint must be epoch 1's");
    assert!(state.history.loss[0].is_finite());
    let x = suanli::Tensor::from_slice(&dev, &[0.5; 24], &[2, 12]).unwrap();
    let p = good.predict(&x).unwrap().to_vec().unwrap();
    assert!(p.iter().all(|v| v.is_finite()), "{p:?}");
}

#[test]
fn checkpoint_misuse_is_a_typed_error() {
    let dev = dev_or_skip!();
    let dir = tmp("misuse");
    let train = common::noisy_classes(&dev, 64);
    let mut m = common::small_model(&dev, Optimizer::adam());
    let plain = dir.join("plain.safetensors");
    m.save(&plain).unwrap();
    // Plain weights are not a checkpoint.
    assert!(matches!(
        Sequential::load_checkpoint(&dev, &plain),
        Err(Error::Malformed { .. })
    ));
    let ck = dir.join("run.ckpt");
    let h = m
        .fit(
            &train,
            FitOptions {
                epochs: 2,
                ..Default::default()
            },
        )
        .unwrap();
    m.save_checkpoint(&ck, 2, 0, &h).unwrap();
    let (mut r, state) = Sequential::load_checkpoint(&dev, &ck).unwrap();
    // `epochs` is the total: 2 more than nothing is an error, not a silent no-op.
    let e = r
        .fit(
            &train,
            FitOptions {
                epochs: 2,
                resume: Some(&state),
                ..Default::default()
            },
        )
        .unwrap_err();
    assert!(
        matches!(e, Error::InvalidArgument { name: "epochs", .. }),
        "{e}"
    );
    // A fresh model cannot resume someone else's optimizer state.
    let mut fresh = common::small_model(&dev, Optimizer::adam());
    let e = fresh
        .fit(
            &train,
            FitOptions {
                epochs: 3,
                resume: Some(&state),
                ..Default::default()
            },
        )
        .unwrap_err();
    assert!(
        matches!(e, Error::InvalidArgument { name: "resume", .. }),
        "{e}"
    );
    // A truncated checkpoint is malformed, not a panic.
    let bytes = std::fs::read(&ck).unwrap();
    let cut = dir.join("cut.ckpt");
    std::fs::write(&cut, &bytes[..bytes.len() - 10]).unwrap();
    assert!(matches!(
        Sequential::load_checkpoint(&dev, &cut),
        Err(Error::Malformed { .. })
    ));
}

/// The built example next to this test binary (`cargo test` builds the examples).
fn example(name: &str) -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let dir = exe.parent().unwrap().parent().unwrap().join("examples");
    dir.join(format!("{name}{}", std::env::consts::EXE_SUFFIX))
}

#[cfg(unix)]
#[test]
fn sigkill_mid_epoch_leaves_a_checkpoint_that_resumes() {
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};
    if common::device().is_none() {
        return;
    }
    let bin = example("mnist_mlp");
    assert!(
        bin.exists(),
        "{} missing: run through `cargo test`",
        bin.display()
    );
    let dir = tmp("sigkill");
    let ck = dir.join("mnist.ckpt");
    let run = |extra: &[&str]| {
        let mut c = Command::new(&bin);
        c.args(["--quiet", "--train-rows", "3000", "--batch-size", "64"])
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        c
    };
    let ck_s = ck.to_str().unwrap();
    let mut child = run(&["--epochs", "50", "--checkpoint", ck_s])
        .spawn()
        .unwrap();
    // Wait for the first checkpoint (polling for the file), then kill the process at once:
    // it is then in a later epoch of 50, whatever the machine's speed (a fixed delay here
    // would let a fast machine finish all 50 first).
    let t0 = Instant::now();
    while !ck.exists() {
        assert!(
            t0.elapsed() < Duration::from_secs(300),
            "no checkpoint after 300 s"
        );
        if let Some(status) = child.try_wait().unwrap() {
            panic!("training exited early: {status}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap(); // SIGKILL on Unix
    let status = child.wait().unwrap();
    assert!(!status.success(), "the process was killed");
    // Whatever moment the kill hit, the file is a complete checkpoint (atomic rename).
    let dev = common::device().unwrap();
    let (_, state) = Sequential::load_checkpoint(&dev, &ck).unwrap();
    assert!(state.epoch >= 1 && state.epoch < 50, "{}", state.epoch);
    assert_eq!(state.history.loss.len(), state.epoch);
    // No temporary file is left that a later run could mistake for the checkpoint.
    let names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .filter(|n| !n.starts_with('.'))
        .collect();
    assert_eq!(names, vec!["mnist.ckpt".to_string()]);
    // Resume for one more epoch.
    let target = (state.epoch + 1).to_string();
    let out = run(&["--epochs", &target, "--resume", ck_s])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains(&format!(
            "Resuming from {} after epoch {}",
            ck.display(),
            state.epoch
        )),
        "{text}"
    );
    let (_, after) = Sequential::load_checkpoint(&dev, &ck).unwrap();
    assert_eq!(after.epoch, state.epoch + 1);
    assert_eq!(after.history.loss[..state.epoch], state.history.loss[..]);
}

// Devices, tensors, datasets and models cross threads: checked when this file compiles.
const _: () = {
    const fn send_sync<T: Send + Sync>() {}
    send_sync::<suanli::Device>();
    send_sync::<suanli::Tensor>();
    send_sync::<Dataset>();
    send_sync::<Sequential>();
};

#[test]
fn two_threads_training_on_one_device_match_sequential_runs() {
    let dev = dev_or_skip!();
    let dir = tmp("threads");
    let run = |seed: u64| {
        let train = common::noisy_classes(&dev, 240);
        let mut m = Sequential::with_seed(&dev, seed);
        m.add(Dense::new(20, "relu").input_dim(12)).unwrap();
        m.add(Dense::new(3, "softmax")).unwrap();
        m.compile(Optimizer::adam(), Loss::SparseCategoricalCrossentropy)
            .unwrap();
        let h = m
            .fit(
                &train,
                FitOptions {
                    epochs: 3,
                    batch_size: 16,
                    seed,
                    ..Default::default()
                },
            )
            .unwrap();
        (m, h.loss)
    };
    // One after the other…
    let (a, la) = run(1);
    let (b, lb) = run(2);
    let wa = weights(&a, &dir, "a.safetensors");
    let wb = weights(&b, &dir, "b.safetensors");
    // …and at the same time, on the same device.
    let (ra, rb) = std::thread::scope(|s| {
        let ta = s.spawn(|| run(1));
        let tb = s.spawn(|| run(2));
        (ta.join().unwrap(), tb.join().unwrap())
    });
    assert_eq!(ra.1, la);
    assert_eq!(rb.1, lb);
    assert!(weights(&ra.0, &dir, "ra.safetensors") == wa);
    assert!(weights(&rb.0, &dir, "rb.safetensors") == wb);
    assert!(wa != wb, "different seeds must give different models");
}

/// One invocation running a chain of dependent steps, continuing from what the previous
/// launch left in `out`: launches on the same buffer cannot overlap, and each step needs the
/// previous one's result, so `k` launches take at least `k · n · 3` clock cycles on any
/// adapter, however parallel. They go in one submission (lavapipe blocks a submission until
/// the previous one is done, so only the last one is ever in flight). `n` stays below 65,535 because lavapipe stops any loop there
/// (gallivm's loop limiter), and comes from a uniform so the compiler cannot fold it.
const SPIN: &str = r#"
struct P { n: u32, a: u32, b: u32, c: u32 }
@group(0) @binding(0) var<storage, read_write> out: array<u32>;
@group(0) @binding(1) var<uniform> p: P;
@compute @workgroup_size(1)
fn spin() {
    var x = out[0] ^ 0x9e3779b9u;
    for (var i = 0u; i < p.n; i = i + 1u) {
        x = x ^ (x << 13u);
        x = x ^ (x >> 17u);
        x = x ^ (x << 5u);
    }
    out[0] = x;
}
"#;

#[test]
fn a_wedged_wait_times_out_instead_of_hanging() {
    use suanli::{CustomKernel, Grid, KernelArg};
    let Some(dev) = common::own_device(None) else {
        return;
    };
    let k = CustomKernel::new(&dev, "spin", SPIN, "spin").unwrap();
    let out = suanli::Tensor::zeros(&dev, &[1]).unwrap();
    let n: [u32; 4] = [60_000, 0, 0, 0];
    let args = [
        KernelArg::from(&out),
        KernelArg::Uniform(bytemuck::bytes_of(&n)),
    ];
    k.launch(&args, Grid::Workgroups(1, 1, 1)).unwrap();
    dev.synchronize().unwrap(); // compiled, and one chain's result
    let after_one = out.to_vec().unwrap()[0].to_bits();
    // 200 chained launches: at least 200 · 180,000 cycles, 6 ms even at 6 GHz, against a
    // 1 ms timeout.
    let mut rec = suanli::exec::Recorder::new(&dev);
    for _ in 0..200 {
        k.record(&mut rec, &args, Grid::Workgroups(1, 1, 1))
            .unwrap();
    }
    rec.submit().unwrap();
    dev.set_timeout(std::time::Duration::from_millis(1));
    match dev.synchronize() {
        Err(Error::Timeout { op, seconds }) => {
            assert_eq!(op, "synchronize");
            assert!(seconds <= 0.002);
        }
        other => panic!("expected a timeout, got {other:?}"),
    }
    // The work was not lost: with a sane timeout it finishes and reads back, having moved on.
    dev.set_timeout(std::time::Duration::from_secs(120));
    dev.synchronize().unwrap();
    let v = out.to_vec().unwrap()[0].to_bits();
    assert_ne!(v, after_one, "the chained launches ran");
}

#[test]
fn a_lost_device_gives_typed_errors() {
    let Some(dev) = common::own_device(None) else {
        return;
    };
    let a = suanli::Tensor::rand_uniform(&dev, &[64, 64], -1.0, 1.0, 10).unwrap();
    let _ = a.matmul(&a).unwrap().to_vec().unwrap();
    dev.wgpu_device().destroy(); // what a driver reset looks like from here
    let _ = dev.synchronize(); // lets wgpu deliver the lost callback
    assert!(dev.is_lost());
    let e = a.matmul(&a).and_then(|c| c.to_vec()).unwrap_err();
    assert!(matches!(e, Error::DeviceLost { .. }), "{e}");
    assert!(e.to_string().contains("lost"), "{e}");
    assert!(matches!(dev.synchronize(), Err(Error::DeviceLost { .. })));
}

#[test]
fn tensors_from_another_device_are_rejected_by_every_entry_point() {
    use suanli::{Activation, CustomKernel, Grid, KernelArg, Labels, Tensor};
    let (Some(d1), Some(d2)) = (common::own_device(None), common::own_device(None)) else {
        return;
    };
    let a = Tensor::rand_uniform(&d1, &[4, 4], -1.0, 1.0, 1).unwrap();
    let b = Tensor::rand_uniform(&d2, &[4, 4], -1.0, 1.0, 2).unwrap();
    let bias = Tensor::zeros(&d2, &[4]).unwrap();
    let labels = Labels::new(&d2, &[0, 1, 2, 3]).unwrap();
    let check = |what: &str, r: suanli::Result<Tensor>| match r {
        Err(e @ Error::DeviceMismatch { .. }) => {
            let s = e.to_string();
            assert!(s.contains("device"), "{what}: {s}");
        }
        other => panic!("{what}: expected DeviceMismatch, got {other:?}"),
    };
    check("matmul", a.matmul(&b));
    check("matmul_tn", a.matmul_tn(&b));
    check("linear weight", a.linear(&b, None, Activation::Relu));
    let w = Tensor::rand_uniform(&d1, &[4, 4], -1.0, 1.0, 3).unwrap();
    check("linear bias", a.linear(&w, Some(&bias), Activation::Relu));
    check("add", a.add(&b));
    check("mul", a.mul(&b));
    check("add_bias", a.add_bias(&bias));
    check(
        "activation_backward",
        a.activation_backward(Activation::Tanh, &b),
    );
    check("softmax_cross_entropy", a.softmax_cross_entropy(&labels));
    // Models and datasets.
    let m = common::small_model(&d1, Optimizer::adam());
    let x = Tensor::rand_uniform(&d2, &[2, 12], -1.0, 1.0, 4).unwrap();
    check("predict", m.predict(&x));
    let mut m = common::small_model(&d1, Optimizer::adam());
    let other = common::noisy_classes(&d2, 30);
    assert!(matches!(
        m.fit(
            &other,
            FitOptions {
                ..Default::default()
            }
        ),
        Err(Error::DeviceMismatch { .. })
    ));
    assert!(matches!(
        m.evaluate(&other, 8),
        Err(Error::DeviceMismatch { .. })
    ));
    // A custom kernel compiled for d1, given a tensor of d2.
    let k = CustomKernel::new(
        &d1,
        "copy",
        "@group(0) @binding(0) var<storage, read> x: array<f32>;\n\
         @group(0) @binding(1) var<storage, read_write> y: array<f32>;\n\
         @compute @workgroup_size(64) fn main(@builtin(global_invocation_id) g: vec3<u32>) {\n\
           if (g.x < arrayLength(&y)) { y[g.x] = x[g.x]; } }",
        "main",
    )
    .unwrap();
    let e = k
        .launch(
            &[KernelArg::ReadOnly(&b), KernelArg::Tensor(&a)],
            Grid::Elements(16),
        )
        .unwrap_err();
    assert!(matches!(e, Error::DeviceMismatch { .. }), "{e}");
}
