//! Convolutional networks end to end: a loss trajectory pinned against an independent f64
//! run (written out here, loops over pixels and taps), MNIST learning on a subset, save →
//! load → identical predictions, resume bit-exact with batch-normalisation state, and bad
//! input as typed errors naming both shapes.

mod common;

use suanli::data::{Dataset, Mnist};
use suanli::internals::reference;
use suanli::internals::weights_file::parse_model_file;
use suanli::nn::{
    AveragePooling2D, BatchNormalization, Conv2D, Dense, Dropout, FitOptions, Flatten, Loss,
    MaxPooling2D, Optimizer, Sequential,
};
use suanli::random::Rng;
use suanli::{Error, Tensor};

const ROWS: usize = 24;
const BATCH: usize = 8;
const EPOCHS: usize = 6;
const SEED: u64 = 5;

/// 6×6 one-channel images of 3 classes (a bright row, column or diagonal) with noise.
fn data() -> (Vec<f32>, Vec<u32>) {
    let mut rng = Rng::new(17);
    let mut x = Vec::new();
    let mut y = Vec::new();
    for i in 0..ROWS {
        let c = i % 3;
        for h in 0..6 {
            for w in 0..6 {
                let lit = match c {
                    0 => h == 2,
                    1 => w == 3,
                    _ => h == w,
                };
                x.push((0.3 * rng.normal() + if lit { 1.0 } else { 0.0 }) as f32);
            }
        }
        y.push(c as u32);
    }
    (x, y)
}

/// (conv kernel (3, 3, 1, 3), conv bias (3), dense kernel (27, 3), dense bias (3)) in f64.
type P = [Vec<f64>; 4];

/// Mean loss of the batch `rows` and the gradients of the trajectory's model in f64:
/// Conv2D(3, 3×3, same, tanh) → AveragePooling2D(2) → Flatten → Dense(3, softmax).
fn loss_and_grads(p: &P, x: &[f32], y: &[u32], rows: &[u32]) -> (f64, P) {
    let b = rows.len() as f64;
    let mut g: P = p.clone().map(|v| vec![0.0; v.len()]);
    let mut loss = 0.0;
    for &r in rows {
        let img = |h: isize, w: isize| -> f64 {
            if (0..6).contains(&h) && (0..6).contains(&w) {
                x[r as usize * 36 + h as usize * 6 + w as usize] as f64
            } else {
                0.0
            }
        };
        // Convolution (padding 1 on each side), tanh.
        let mut a1 = vec![0.0; 6 * 6 * 3];
        for h in 0..6 {
            for w in 0..6 {
                for co in 0..3 {
                    let mut z = p[1][co];
                    for kh in 0..3 {
                        for kw in 0..3 {
                            z += img(h as isize + kh as isize - 1, w as isize + kw as isize - 1)
                                * p[0][(kh * 3 + kw) * 3 + co];
                        }
                    }
                    a1[(h * 6 + w) * 3 + co] = z.tanh();
                }
            }
        }
        // Average pooling 2×2 → (3, 3, 3), flattened channels last.
        let mut f = vec![0.0; 27];
        for i in 0..3 {
            for j in 0..3 {
                for c in 0..3 {
                    let mut s = 0.0;
                    for (dh, dw) in [(0, 0), (0, 1), (1, 0), (1, 1)] {
                        s += a1[((2 * i + dh) * 6 + 2 * j + dw) * 3 + c];
                    }
                    f[(i * 3 + j) * 3 + c] = s / 4.0;
                }
            }
        }
        let z2: Vec<f64> = (0..3)
            .map(|o| p[3][o] + (0..27).map(|k| f[k] * p[2][k * 3 + o]).sum::<f64>())
            .collect();
        let m = z2.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let e: Vec<f64> = z2.iter().map(|v| (v - m).exp()).collect();
        let s: f64 = e.iter().sum();
        let label = y[r as usize] as usize;
        loss -= (e[label] / s).ln();
        let dz2: Vec<f64> = (0..3)
            .map(|o| (e[o] / s - (o == label) as u8 as f64) / b)
            .collect();
        for k in 0..27 {
            for o in 0..3 {
                g[2][k * 3 + o] += f[k] * dz2[o];
            }
        }
        for o in 0..3 {
            g[3][o] += dz2[o];
        }
        // Back through the dense layer and the pooling (a quarter to each of the four), then
        // tanh, then the convolution's weights.
        let df: Vec<f64> = (0..27)
            .map(|k| (0..3).map(|o| dz2[o] * p[2][k * 3 + o]).sum())
            .collect();
        for h in 0..6 {
            for w in 0..6 {
                for co in 0..3 {
                    let a = a1[(h * 6 + w) * 3 + co];
                    let dz1 = df[((h / 2) * 3 + w / 2) * 3 + co] / 4.0 * (1.0 - a * a);
                    g[1][co] += dz1;
                    for kh in 0..3 {
                        for kw in 0..3 {
                            g[0][(kh * 3 + kw) * 3 + co] +=
                                img(h as isize + kh as isize - 1, w as isize + kw as isize - 1)
                                    * dz1;
                        }
                    }
                }
            }
        }
    }
    (loss / b, g)
}

#[test]
fn cnn_loss_trajectory_matches_an_f64_reference() {
    let dev = dev_or_skip!();
    let (x, y) = data();
    let train = Dataset::from_f32(&dev, &x, 36, &y)
        .unwrap()
        .with_sample_shape(&[6, 6, 1])
        .unwrap();
    let mut m = Sequential::with_seed(&dev, 3).input_shape(&[6, 6, 1]);
    m.add(Conv2D::new(3, 3).padding("same").activation("tanh"))
        .unwrap();
    m.add(AveragePooling2D::new(2)).unwrap();
    m.add(Flatten::new()).unwrap();
    m.add(Dense::new(3, "softmax")).unwrap();
    let opt = Optimizer::Adam {
        lr: 0.02,
        beta1: 0.9,
        beta2: 0.999,
        eps: 1e-7,
    };
    m.compile(opt, Loss::SparseCategoricalCrossentropy).unwrap();
    let dir = std::env::temp_dir().join(format!("suanli-cnn-trajectory-{}", std::process::id()));
    let file = dir.join("w0.safetensors");
    m.save(&file).unwrap();
    let w0 = parse_model_file(&file, &std::fs::read(&file).unwrap()).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    let f = |v: &[f32]| v.iter().map(|&x| x as f64).collect::<Vec<f64>>();
    let mut p: P = [
        f(w0.layers[0].weight("kernel").unwrap()),
        f(w0.layers[0].weight("bias").unwrap()),
        f(w0.layers[3].weight("kernel").unwrap()),
        f(w0.layers[3].weight("bias").unwrap()),
    ];
    let h = m
        .fit(
            &train,
            FitOptions {
                epochs: EPOCHS,
                batch_size: BATCH,
                seed: SEED,
                ..Default::default()
            },
        )
        .unwrap();
    let rule = opt.rule(0.02);
    let mut state: Vec<Vec<Vec<f64>>> = p.iter().map(|v| vec![vec![0.0; v.len()]; 2]).collect();
    let mut perm: Vec<u32> = (0..ROWS as u32).collect();
    let (mut t, mut want) = (0, Vec::new());
    for epoch in 0..EPOCHS {
        Rng::new(SEED ^ (epoch as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)).shuffle(&mut perm);
        let mut total = 0.0;
        for batch in perm.chunks(BATCH) {
            t += 1;
            let (l, g) = loss_and_grads(&p, &x, &y, batch);
            total += l * batch.len() as f64;
            for (i, gi) in g.iter().enumerate() {
                reference::optim_step(&rule, gi, &mut p[i], &mut state[i], t);
            }
        }
        want.push(total / ROWS as f64);
    }
    assert!(
        want[EPOCHS - 1] < want[0] * 0.8,
        "the reference run should learn: {want:?}"
    );
    for (e, (&got, &w)) in h.loss.iter().zip(&want).enumerate() {
        assert!(
            ((got - w) / w).abs() < 1e-5,
            "epoch {}: device loss {got} vs f64 reference {w} (all: {:?} vs {want:?})",
            e + 1,
            h.loss
        );
    }
}

/// The keras.io convnet on a subset of MNIST: one epoch learns (a subset: CI runs on a CPU).
fn mnist(dev: &suanli::Device, rows: usize) -> (Dataset, Dataset) {
    let m = Mnist::load().unwrap();
    let train = Dataset::from_u8(
        dev,
        &m.train_images[..rows * 784],
        784,
        1.0 / 255.0,
        &m.train_labels[..rows],
    )
    .unwrap()
    .with_sample_shape(&[28, 28, 1])
    .unwrap();
    let test = Dataset::from_u8(
        dev,
        &m.test_images[..1000 * 784],
        784,
        1.0 / 255.0,
        &m.test_labels[..1000],
    )
    .unwrap()
    .with_sample_shape(&[28, 28, 1])
    .unwrap();
    (train, test)
}

fn convnet(dev: &suanli::Device, seed: u64, batch_norm: bool) -> Sequential {
    let mut m = Sequential::with_seed(dev, seed).input_shape(&[28, 28, 1]);
    m.add(Conv2D::new(16, 3).activation("relu")).unwrap();
    if batch_norm {
        m.add(BatchNormalization::new()).unwrap();
    }
    m.add(MaxPooling2D::new(2)).unwrap();
    m.add(Conv2D::new(16, 3).activation("relu")).unwrap();
    m.add(MaxPooling2D::new(2)).unwrap();
    m.add(Flatten::new()).unwrap();
    m.add(Dropout::new(0.5)).unwrap();
    m.add(Dense::new(10, "softmax")).unwrap();
    m.compile(Optimizer::adam(), Loss::SparseCategoricalCrossentropy)
        .unwrap();
    m
}

#[test]
fn a_convnet_learns_mnist_digits() {
    let dev = dev_or_skip!();
    let (train, test) = mnist(&dev, 2048);
    let mut m = convnet(&dev, 1, false);
    let h = m
        .fit(
            &train,
            FitOptions {
                epochs: 2,
                batch_size: 32,
                validation_split: 0.1,
                ..Default::default()
            },
        )
        .unwrap();
    assert!(h.loss[1] < h.loss[0], "{:?}", h.loss);
    let e = m.evaluate(&test, 500).unwrap();
    // Chance is 0.1; this run measured 0.78 on lavapipe.
    assert!(
        e.accuracy.unwrap() > 0.6,
        "test accuracy {e:?} after 2 epochs of 1,843 images"
    );
    assert_eq!(h.val_loss.len(), 2);
}

fn tmp(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("suanli-cnn-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn saved_and_loaded_cnns_predict_alike_and_resume_bit_exactly() {
    let dev = dev_or_skip!();
    let (train, _) = mnist(&dev, 512);
    let opts = |epochs| FitOptions {
        epochs,
        batch_size: 64,
        seed: 2,
        ..Default::default()
    };
    // Uninterrupted: 3 epochs.
    let mut full = convnet(&dev, 4, true);
    full.fit(&train, opts(3)).unwrap();
    // Interrupted after 2 (checkpoint), resumed to 3.
    let dir = tmp("resume");
    let ck = dir.join("run.ckpt");
    let mut part = convnet(&dev, 4, true);
    part.fit(
        &train,
        FitOptions {
            checkpoint: Some(&ck),
            ..opts(2)
        },
    )
    .unwrap();
    let (mut resumed, c) = Sequential::load_checkpoint(&dev, &ck).unwrap();
    resumed
        .fit(
            &train,
            FitOptions {
                resume: Some(&c),
                ..opts(3)
            },
        )
        .unwrap();
    let a = dir.join("full.safetensors");
    let b = dir.join("resumed.safetensors");
    full.save(&a).unwrap();
    resumed.save(&b).unwrap();
    let (fa, fb) = (
        parse_model_file(&a, &std::fs::read(&a).unwrap()).unwrap(),
        parse_model_file(&b, &std::fs::read(&b).unwrap()).unwrap(),
    );
    for (la, lb) in fa.layers.iter().zip(&fb.layers) {
        for ((wa, va), (_, vb)) in la.weights.iter().zip(&lb.weights) {
            assert!(
                va.iter()
                    .map(|v| v.to_bits())
                    .eq(vb.iter().map(|v| v.to_bits())),
                "{}.{} differs after resuming",
                la.spec.name.as_deref().unwrap_or("?"),
                wa.name
            );
        }
    }
    // The moving statistics moved (so the comparison covered them).
    let mv = fa.layers[1].weight("moving_variance").unwrap();
    assert!(mv.iter().any(|&v| (v - 1.0).abs() > 1e-3), "{mv:?}");
    // Loaded from the file: the same predictions, bit for bit, and the same summary.
    let loaded = Sequential::load(&dev, &a).unwrap();
    assert_eq!(loaded.summary(), full.summary());
    let m = Mnist::load().unwrap();
    let x: Vec<f32> = m.test_images[..784 * 16]
        .iter()
        .map(|&p| p as f32 / 255.0)
        .collect();
    let x = Tensor::from_slice(&dev, &x, &[16, 28, 28, 1]).unwrap();
    assert_eq!(
        full.predict(&x).unwrap().to_vec().unwrap(),
        loaded.predict(&x).unwrap().to_vec().unwrap()
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_input_is_a_typed_error_naming_both_shapes() {
    let dev = dev_or_skip!();
    let mnist = Mnist::load().unwrap();
    let mut m = convnet(&dev, 1, false);
    // 784 features into a model that expects (28, 28, 1).
    let flat = Dataset::from_u8(
        &dev,
        &mnist.train_images[..784 * 32],
        784,
        1.0 / 255.0,
        &mnist.train_labels[..32],
    )
    .unwrap();
    let e = m
        .fit(
            &flat,
            FitOptions {
                epochs: 1,
                ..Default::default()
            },
        )
        .unwrap_err();
    let msg = e.to_string();
    assert!(matches!(e, Error::ShapeMismatch { .. }), "{msg}");
    assert!(
        msg.contains("(28, 28, 1)") && msg.contains("(784,)"),
        "{msg}"
    );
    // Images without their channel axis are the same samples.
    let hw = Dataset::from_u8(
        &dev,
        &mnist.train_images[..784 * 32],
        784,
        1.0 / 255.0,
        &mnist.train_labels[..32],
    )
    .unwrap()
    .with_sample_shape(&[28, 28])
    .unwrap();
    m.evaluate(&hw, 32).unwrap();
    // Labels that do not fit the 10 outputs.
    let mut labels = mnist.train_labels[..32].to_vec();
    labels[3] = 12;
    let bad = Dataset::from_u8(
        &dev,
        &mnist.train_images[..784 * 32],
        784,
        1.0 / 255.0,
        &labels,
    )
    .unwrap()
    .with_sample_shape(&[28, 28, 1])
    .unwrap();
    let e = m.evaluate(&bad, 32).unwrap_err();
    assert!(
        matches!(e, Error::InvalidArgument { name: "labels", .. }),
        "{e}"
    );
    // predict with the wrong sample shape.
    let x = Tensor::zeros(&dev, &[2, 27, 28, 1]).unwrap();
    let e = m.predict(&x).unwrap_err();
    assert!(
        e.to_string().contains("(28, 28, 1)") && e.to_string().contains("27"),
        "{e}"
    );
    // A kernel larger than its (unpadded) input; a stride of 0; a bad padding name; an
    // unknown argument in a spec: refused when added, naming what is wrong.
    let mut small = Sequential::new(&dev).input_shape(&[4, 4, 1]);
    let e = small.add(Conv2D::new(2, 5)).unwrap_err();
    assert!(
        e.to_string().contains("(4, 4, 1)") && e.to_string().contains("(5, 5)"),
        "{e}"
    );
    let e = small.add(Conv2D::new(2, 3).strides(0)).unwrap_err();
    assert!(
        matches!(
            e,
            Error::InvalidArgument {
                name: "strides",
                ..
            }
        ),
        "{e}"
    );
    let e = small.add(Conv2D::new(2, 3).padding("full")).unwrap_err();
    assert!(
        matches!(
            e,
            Error::InvalidArgument {
                name: "padding",
                ..
            }
        ),
        "{e}"
    );
    let e = small
        .add(serde_json::json!({"class_name": "Conv2D", "config": {"filters": 2, "kernel_size": 3, "fliters": 3}}))
        .unwrap_err();
    assert!(e.to_string().contains("fliters"), "{e}");
    let e = small.add(MaxPooling2D::new(5)).unwrap_err();
    assert!(e.to_string().contains("(4, 4, 1)"), "{e}");
    assert!(small.is_empty(), "refused layers change nothing");
    // A Dense layer straight on images works on the last axis, as Keras's.
    let mut dense_on_images = Sequential::new(&dev).input_shape(&[4, 4, 3]);
    dense_on_images.add(Dense::new(5, "relu")).unwrap();
    assert_eq!(dense_on_images.output_shape(), Some(&[4, 4, 5][..]));
}
