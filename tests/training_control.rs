//! Keras's training controls in the engine: a learning rate per optimizer step
//! (`FitOptions::step_lr`, as Keras's schedules apply one: written into each step's entry of
//! the parameter table, so it must equal training with that rate set any other way, bit for
//! bit), and `initial_epoch` (a run continued from its last epoch's state equals the run
//! that was never stopped).

mod common;

use common::random_vec;
use suanli::data::Dataset;
use suanli::nn::{Dense, FitOptions, Loss, Optimizer, Sequential};
use suanli::Device;

fn data(dev: &Device) -> Dataset {
    let x = random_vec(64 * 5, 3);
    let y: Vec<u32> = (0..64).map(|r| (x[r * 5] > 0.0) as u32).collect();
    Dataset::from_f32(dev, &x, 5, &y).unwrap()
}

fn model(dev: &Device, opt: Optimizer) -> Sequential {
    let mut m = Sequential::with_seed(dev, 2).input_shape(&[5]);
    m.add(Dense::new(6, "tanh")).unwrap();
    m.add(Dense::new(2, "softmax")).unwrap();
    m.compile(opt, Loss::SparseCategoricalCrossentropy).unwrap();
    m
}

fn weights(m: &Sequential, dev: &Device) -> Vec<f32> {
    let x = suanli::Tensor::from_slice(dev, &random_vec(10, 4), &[2, 5]).unwrap();
    m.predict(&x).unwrap().to_vec().unwrap()
}

#[test]
fn a_per_step_rate_equals_the_same_rate_set_per_epoch() {
    let dev = dev_or_skip!();
    let d = data(&dev);
    // One step per epoch (batch = all 64 rows): a per-epoch schedule sets the same rates.
    let rate = |step: u64| 0.2 * 0.7f64.powi(step as i32);
    let by_epoch = |e: usize| rate(e as u64);
    for opt in [Optimizer::sgd(0.01), Optimizer::adam()] {
        let mut a = model(&dev, opt);
        let ha = a
            .fit(
                &d,
                FitOptions {
                    epochs: 4,
                    batch_size: 64,
                    step_lr: Some(&rate),
                    ..Default::default()
                },
            )
            .unwrap();
        let mut b = model(&dev, opt);
        let hb = b
            .fit(
                &d,
                FitOptions {
                    epochs: 4,
                    batch_size: 64,
                    lr_schedule: Some(&by_epoch),
                    ..Default::default()
                },
            )
            .unwrap();
        assert_eq!(ha.loss, hb.loss, "{opt:?}");
        assert_eq!(weights(&a, &dev), weights(&b, &dev), "{opt:?}");
        // And differs from the optimizer's own constant rate.
        let mut c = model(&dev, opt);
        let hc = c
            .fit(
                &d,
                FitOptions {
                    epochs: 4,
                    batch_size: 64,
                    ..Default::default()
                },
            )
            .unwrap();
        assert_ne!(ha.loss[1..], hc.loss[1..], "{opt:?}");
    }
}

#[test]
fn the_rate_follows_the_step_count_across_fits_and_bad_rates_stop_training() {
    let dev = dev_or_skip!();
    let d = data(&dev);
    let seen = std::sync::Mutex::new(Vec::new());
    let rate = |step: u64| {
        seen.lock().unwrap().push(step);
        0.05
    };
    let mut m = model(&dev, Optimizer::sgd(0.05));
    let opts = || FitOptions {
        epochs: 1,
        batch_size: 16,
        step_lr: Some(&rate),
        ..Default::default()
    };
    m.fit(&d, opts()).unwrap();
    m.fit(&d, opts()).unwrap();
    // Two fits of four steps: the schedule sees Keras's iteration counts 0..8.
    assert_eq!(*seen.lock().unwrap(), (0..8).collect::<Vec<u64>>());
    let bad = |step: u64| if step >= 10 { f64::NAN } else { 0.05 };
    let e = m
        .fit(
            &d,
            FitOptions {
                epochs: 1,
                batch_size: 16,
                step_lr: Some(&bad),
                ..Default::default()
            },
        )
        .unwrap_err()
        .to_string();
    assert!(e.contains("step_lr") && e.contains("step 10"), "{e}");
}

#[test]
fn initial_epoch_continues_a_run_exactly() {
    let dev = dev_or_skip!();
    let d = data(&dev);
    let opts = |epochs, initial_epoch| FitOptions {
        epochs,
        initial_epoch,
        batch_size: 16,
        seed: 9,
        ..Default::default()
    };
    let mut whole = model(&dev, Optimizer::adam());
    let hw = whole.fit(&d, opts(4, 0)).unwrap();
    let mut parts = model(&dev, Optimizer::adam());
    let h1 = parts.fit(&d, opts(2, 0)).unwrap();
    let h2 = parts.fit(&d, opts(4, 2)).unwrap();
    assert_eq!(h2.loss.len(), 2, "epochs 2 and 3 only");
    assert_eq!([h1.loss, h2.loss].concat(), hw.loss);
    assert_eq!(weights(&parts, &dev), weights(&whole, &dev));
    assert_eq!(parts.steps_taken(), whole.steps_taken());
    // Without the shuffles replayed the third epoch would differ: continuing as a fresh
    // run (initial_epoch 0) does not give the same weights.
    let mut fresh = model(&dev, Optimizer::adam());
    fresh.fit(&d, opts(2, 0)).unwrap();
    fresh.fit(&d, opts(2, 0)).unwrap();
    assert_ne!(weights(&fresh, &dev), weights(&whole, &dev));
    let e = parts.fit(&d, opts(3, 3)).unwrap_err().to_string();
    assert!(e.contains("initial_epoch"), "{e}");
}

#[test]
fn tensorboard_writes_framed_checksummed_events() {
    use suanli::nn::TensorBoard;
    let dev = dev_or_skip!();
    let d = data(&dev);
    let dir = std::env::temp_dir().join(format!("suanli-tb-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let mut tb = TensorBoard::new(&dir).unwrap();
    let mut m = model(&dev, Optimizer::adam());
    let h = m
        .fit(
            &d,
            FitOptions {
                epochs: 2,
                batch_size: 16,
                validation_split: 0.25,
                callbacks: vec![&mut tb],
                ..Default::default()
            },
        )
        .unwrap();
    assert!(tb.error().is_none());
    for (sub, loss) in [("train", &h.loss), ("validation", &h.val_loss)] {
        let files: Vec<_> = std::fs::read_dir(dir.join(sub)).unwrap().collect();
        assert_eq!(files.len(), 1, "{sub}");
        let path = files[0].as_ref().unwrap().path();
        assert!(path
            .file_name()
            .unwrap()
            .to_str()
            .unwrap()
            .contains("tfevents"));
        let bytes = std::fs::read(&path).unwrap();
        // Walk the records: length, its checksum, the data, its checksum, back to back.
        let mut at = 0;
        let mut records = Vec::new();
        while at < bytes.len() {
            let len = u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap()) as usize;
            let data = &bytes[at + 12..at + 12 + len];
            let crc = u32::from_le_bytes(bytes[at + 12 + len..at + 16 + len].try_into().unwrap());
            let c = crc32c::crc32c(data);
            assert_eq!(crc, c.rotate_right(15).wrapping_add(0xa282_ead8));
            records.push(data.to_vec());
            at += 16 + len;
        }
        assert_eq!(at, bytes.len());
        // The version, then loss and accuracy per epoch; each epoch's loss as an f32.
        assert_eq!(records.len(), 1 + 2 * 2, "{sub}");
        assert!(records[0].windows(13).any(|w| w == b"brain.Event:2"));
        for (e, l) in loss.iter().enumerate() {
            let r = &records[1 + 2 * e];
            assert!(r.windows(10).any(|w| w == b"epoch_loss"));
            let v = (*l as f32).to_le_bytes();
            assert!(r.windows(4).any(|w| w == v), "{sub} epoch {e}");
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn validation_freq_validates_the_epochs_asked_for() {
    use suanli::nn::{EarlyStopping, ValidationFreq};
    let dev = dev_or_skip!();
    let d = data(&dev);
    let run = |freq: ValidationFreq| {
        let mut m = model(&dev, Optimizer::adam());
        m.fit(
            &d,
            FitOptions {
                epochs: 4,
                batch_size: 16,
                validation_split: 0.25,
                validation_freq: freq,
                ..Default::default()
            },
        )
    };
    let every = run(ValidationFreq::Every(1)).unwrap();
    assert_eq!(every.val_loss.len(), 4);
    // Validation does not change training: the other runs see the same numbers.
    let second = run(ValidationFreq::Every(2)).unwrap();
    assert_eq!(second.loss, every.loss);
    assert_eq!(second.val_loss, [every.val_loss[1], every.val_loss[3]]);
    let listed = run(ValidationFreq::Epochs(vec![1, 4])).unwrap();
    assert_eq!(listed.val_loss, [every.val_loss[0], every.val_loss[3]]);
    assert!(run(ValidationFreq::Every(0)).is_err());
    let mut m = model(&dev, Optimizer::adam());
    let e = m
        .fit(
            &d,
            FitOptions {
                epochs: 2,
                validation_split: 0.25,
                validation_freq: ValidationFreq::Every(2),
                early_stopping: Some(EarlyStopping {
                    patience: 1,
                    min_delta: 0.0,
                }),
                ..Default::default()
            },
        )
        .unwrap_err()
        .to_string();
    assert!(e.contains("validation_freq"), "{e}");
}
