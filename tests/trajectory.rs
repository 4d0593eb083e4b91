//! The loss trajectory of a short seeded training run, pinned against an independent f64
//! implementation of the same run: a 4-8-3 MLP (tanh, softmax), Adam, three batches an epoch,
//! six epochs, the epoch order shuffled with the run's seed. The expected losses are computed
//! here from the calculus (forward, backward, Adam in f64), not copied from an output, so a
//! change anywhere in the engine (gather, kernels, the fused update, the step table, the
//! shuffle, the loss accumulation) that alters the numbers fails this test.

// The reference is written as the calculus reads, index by index.
#![allow(clippy::needless_range_loop)]

mod common;

use suanli::data::Dataset;
use suanli::internals::reference;
use suanli::internals::weights_file::parse_model_file;
use suanli::nn::{Dense, FitOptions, Loss, Optimizer, Sequential};
use suanli::random::Rng;

const ROWS: usize = 24;
const BATCH: usize = 8;
const EPOCHS: usize = 6;
const SEED: u64 = 7;

/// Noisy points around three centres in 4 dimensions.
fn data() -> (Vec<f32>, Vec<u32>) {
    let mut rng = Rng::new(99);
    let mut x = Vec::new();
    let mut y = Vec::new();
    for i in 0..ROWS {
        let c = (i % 3) as u32;
        for j in 0..4 {
            let centre = if j as u32 == c { 1.5 } else { 0.0 };
            x.push((centre + 0.8 * rng.normal()) as f32);
        }
        y.push(c);
    }
    (x, y)
}

/// One layer's (kernel (in, out), bias) as f64.
type Params = Vec<(Vec<f64>, Vec<f64>)>;

/// Adam's two moments for each layer's kernel and bias.
type AdamState = Vec<(Vec<Vec<f64>>, Vec<Vec<f64>>)>;

/// Mean loss of the batch `rows` and the gradients, in f64.
fn loss_and_grads(p: &Params, x: &[f32], y: &[u32], rows: &[u32]) -> (f64, Params) {
    let dims = [4, 8, 3];
    let b = rows.len() as f64;
    let mut loss = 0.0;
    let mut g: Params = p
        .iter()
        .map(|(w, bb)| (vec![0.0; w.len()], vec![0.0; bb.len()]))
        .collect();
    for &r in rows {
        let r = r as usize;
        let x0: Vec<f64> = x[r * 4..r * 4 + 4].iter().map(|&v| v as f64).collect();
        let dense = |l: usize, inp: &[f64]| -> Vec<f64> {
            (0..dims[l + 1])
                .map(|j| {
                    p[l].1[j]
                        + (0..dims[l])
                            .map(|k| inp[k] * p[l].0[k * dims[l + 1] + j])
                            .sum::<f64>()
                })
                .collect()
        };
        let a1: Vec<f64> = dense(0, &x0).iter().map(|v| v.tanh()).collect();
        let z2 = dense(1, &a1);
        let m = z2.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let e: Vec<f64> = z2.iter().map(|v| (v - m).exp()).collect();
        let s: f64 = e.iter().sum();
        let label = y[r] as usize;
        loss += -(e[label] / s).ln();
        // dz2 = (softmax − onehot) / B.
        let dz2: Vec<f64> = (0..3)
            .map(|j| (e[j] / s - (j == label) as u8 as f64) / b)
            .collect();
        for k in 0..8 {
            for j in 0..3 {
                g[1].0[k * 3 + j] += a1[k] * dz2[j];
            }
        }
        for j in 0..3 {
            g[1].1[j] += dz2[j];
        }
        // da1 = dz2·W2ᵀ; dz1 = da1 ⊙ (1 − a1²).
        let dz1: Vec<f64> = (0..8)
            .map(|k| {
                (0..3).map(|j| dz2[j] * p[1].0[k * 3 + j]).sum::<f64>() * (1.0 - a1[k] * a1[k])
            })
            .collect();
        for i in 0..4 {
            for k in 0..8 {
                g[0].0[i * 8 + k] += x0[i] * dz1[k];
            }
        }
        for k in 0..8 {
            g[0].1[k] += dz1[k];
        }
    }
    (loss / b, g)
}

#[test]
fn loss_trajectory_matches_an_f64_reference() {
    let dev = dev_or_skip!();
    let (x, y) = data();
    let train = Dataset::from_f32(&dev, &x, 4, &y).unwrap();
    let mut m = Sequential::with_seed(&dev, 3);
    m.add(Dense::new(8, "tanh").input_dim(4)).unwrap();
    m.add(Dense::new(3, "softmax")).unwrap();
    let opt = Optimizer::Adam {
        lr: 0.02,
        beta1: 0.9,
        beta2: 0.999,
        eps: 1e-7,
    };
    m.compile(opt, Loss::SparseCategoricalCrossentropy).unwrap();
    // The starting weights, as the model holds them.
    let dir = std::env::temp_dir().join(format!("suanli-trajectory-{}", std::process::id()));
    let file = dir.join("w0.safetensors");
    m.save(&file).unwrap();
    let w0 = parse_model_file(&file, &std::fs::read(&file).unwrap()).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    let mut p: Params = w0
        .layers
        .iter()
        .map(|l| {
            (
                l.weight("kernel")
                    .unwrap()
                    .iter()
                    .map(|&v| v as f64)
                    .collect(),
                l.weight("bias")
                    .unwrap()
                    .iter()
                    .map(|&v| v as f64)
                    .collect(),
            )
        })
        .collect();
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

    // The same run in f64: the epoch's order is the previous one shuffled by (seed, epoch).
    let rule = opt.rule(0.02);
    let mut state: AdamState = p
        .iter()
        .map(|(w, b)| (vec![vec![0.0; w.len()]; 2], vec![vec![0.0; b.len()]; 2]))
        .collect();
    let mut perm: Vec<u32> = (0..ROWS as u32).collect();
    let mut t = 0;
    let mut want = Vec::new();
    for epoch in 0..EPOCHS {
        Rng::new(SEED ^ (epoch as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)).shuffle(&mut perm);
        let mut total = 0.0;
        for batch in perm.chunks(BATCH) {
            t += 1;
            let (l, g) = loss_and_grads(&p, &x, &y, batch);
            total += l * batch.len() as f64;
            for (layer, ((w, b), (gw, gb))) in p.iter_mut().zip(&g).enumerate() {
                reference::optim_step(&rule, gw, w, &mut state[layer].0, t);
                reference::optim_step(&rule, gb, b, &mut state[layer].1, t);
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
            (got - w).abs() <= 1e-4 * w.abs(),
            "epoch {}: loss {got} vs the f64 reference {w} (all: {:?} vs {want:?})",
            e + 1,
            h.loss
        );
    }
    assert_eq!(h.loss.len(), EPOCHS);
}
