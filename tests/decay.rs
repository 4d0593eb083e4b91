//! Which weights weight decay applies to (`Model::set_weight_decay_filter`: Keras's
//! `exclude_from_weight_decay(var_names=)`, nanoGPT's "decay matrices only"): AdamW with each
//! filter against an f64 run of the same steps written here, the filter kept by checkpoints,
//! and a name that matches no weight refused.

mod common;

use suanli::data::Dataset;
use suanli::nn::{DecayFilter, Dense, FitOptions, Loss, Model, Optimizer, Sequential};
use suanli::{Device, Error};

macro_rules! dev_or_skip {
    () => {
        match common::device() {
            Some(d) => d,
            None => return,
        }
    };
}

const N: usize = 64;
const D: usize = 5;
const C: usize = 3;
const LR: f64 = 0.05;
const WD: f64 = 0.3;

fn rows() -> (Vec<f32>, Vec<u32>) {
    let mut rng = suanli::random::Rng::new(3);
    let mut x = Vec::new();
    let mut y = Vec::new();
    for i in 0..N {
        for j in 0..D {
            x.push((rng.normal() + if j % C == i % C { 0.6 } else { 0.0 }) as f32);
        }
        y.push((i % C) as u32);
    }
    (x, y)
}

fn model(dev: &Device) -> Sequential {
    let mut m = Sequential::with_seed(dev, 5);
    m.add(Dense::new(C, "softmax").input_dim(D)).unwrap();
    m.compile(
        Optimizer::AdamW {
            lr: LR,
            weight_decay: WD,
            beta1: 0.9,
            beta2: 0.999,
            eps: 1e-7,
        },
        Loss::SparseCategoricalCrossentropy,
    )
    .unwrap();
    m
}

/// `steps` full-batch AdamW steps in f64 from `w` (kernel, bias), decaying the kernel and,
/// if `bias_decays`, the bias (suanli's AdamW: θ ← θ(1 − lr·wd), then Adam's step).
fn reference(w: &[Vec<f32>], steps: usize, bias_decays: bool) -> Vec<Vec<f64>> {
    let (x, y) = rows();
    let mut p: Vec<Vec<f64>> = w
        .iter()
        .map(|v| v.iter().map(|&a| a as f64).collect())
        .collect();
    let mut m: Vec<Vec<f64>> = p.iter().map(|v| vec![0.0; v.len()]).collect();
    let mut v = m.clone();
    let (b1, b2, eps) = (0.9f64, 0.999f64, 1e-7f64);
    for t in 1..=steps {
        let mut g: Vec<Vec<f64>> = p.iter().map(|v| vec![0.0; v.len()]).collect();
        for r in 0..N {
            let z: Vec<f64> = (0..C)
                .map(|c| {
                    p[1][c]
                        + (0..D)
                            .map(|i| x[r * D + i] as f64 * p[0][i * C + c])
                            .sum::<f64>()
                })
                .collect();
            let mx = z.iter().cloned().fold(f64::MIN, f64::max);
            let e: Vec<f64> = z.iter().map(|a| (a - mx).exp()).collect();
            let s: f64 = e.iter().sum();
            for c in 0..C {
                let dz = (e[c] / s - f64::from(c == y[r] as usize)) / N as f64;
                g[1][c] += dz;
                for i in 0..D {
                    g[0][i * C + c] += x[r * D + i] as f64 * dz;
                }
            }
        }
        let step = LR / (1.0 - b1.powi(t as i32));
        let bc2 = (1.0 - b2.powi(t as i32)).sqrt();
        for k in 0..2 {
            let decays = k == 0 || bias_decays;
            for i in 0..p[k].len() {
                if decays {
                    p[k][i] *= 1.0 - LR * WD;
                }
                m[k][i] = b1 * m[k][i] + (1.0 - b1) * g[k][i];
                v[k][i] = b2 * v[k][i] + (1.0 - b2) * g[k][i] * g[k][i];
                p[k][i] -= step * m[k][i] / (v[k][i].sqrt() / bc2 + eps);
            }
        }
    }
    p
}

fn weights_of(m: &Model) -> Vec<Vec<f32>> {
    m.weights()
        .iter()
        .map(|(_, t)| t.to_vec().unwrap())
        .collect()
}

#[test]
fn each_filter_decays_what_it_says_as_an_f64_run_does() {
    let dev = dev_or_skip!();
    let (x, y) = rows();
    let data = Dataset::from_f32(&dev, &x, D, &y).unwrap();
    let o = || FitOptions {
        epochs: 4,
        batch_size: N,
        shuffle: false,
        ..Default::default()
    };
    for (filter, bias_decays) in [
        (DecayFilter::All, true),
        (DecayFilter::MatricesOnly, false),
        (DecayFilter::ExcludeNames(vec!["bias".into()]), false),
        // Names that match nothing beside one that does, as Keras programs list them.
        (
            DecayFilter::ExcludeNames(vec!["layer_norm".into(), "dense/b".into()]),
            false,
        ),
    ] {
        let mut m = model(&dev);
        // A list of which no name is part of a weight's is a typo: refused, the filter
        // unchanged.
        assert!(matches!(
            m.set_weight_decay_filter(DecayFilter::ExcludeNames(vec!["bais".into()])),
            Err(Error::InvalidArgument { .. })
        ));
        assert_eq!(m.weight_decay_filter(), &DecayFilter::All);
        m.set_weight_decay_filter(filter.clone()).unwrap();
        let start = weights_of(&m);
        m.fit(&data, o()).unwrap();
        let want = reference(&start, 4, bias_decays);
        for (k, (got, want)) in weights_of(&m).iter().zip(&want).enumerate() {
            let rel = common::rel_l2(got, want);
            assert!(rel < 1e-5, "{filter:?}, weight {k}: relative L2 {rel:e}");
        }
        // The other reading of the bias is far off: the test tells the two apart.
        let other = reference(&start, 4, !bias_decays);
        let rel = common::rel_l2(&weights_of(&m)[1], &other[1]);
        assert!(
            rel > 1e-3,
            "{filter:?}: the bias's decay makes no difference ({rel:e})"
        );
    }
}

#[test]
fn checkpoints_keep_the_filter() {
    let dev = dev_or_skip!();
    let (x, y) = rows();
    let data = Dataset::from_f32(&dev, &x, D, &y).unwrap();
    let dir = std::env::temp_dir().join(format!("suanli-decay-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let ck = dir.join("ck.safetensors");
    let opts = |epochs| FitOptions {
        epochs,
        batch_size: 16,
        seed: 2,
        ..Default::default()
    };
    let mut whole = model(&dev);
    whole
        .set_weight_decay_filter(DecayFilter::MatricesOnly)
        .unwrap();
    whole.fit(&data, opts(4)).unwrap();
    let mut first = model(&dev);
    first
        .set_weight_decay_filter(DecayFilter::MatricesOnly)
        .unwrap();
    first
        .fit(
            &data,
            FitOptions {
                checkpoint: Some(&ck),
                ..opts(2)
            },
        )
        .unwrap();
    let (mut resumed, state) = Model::load_checkpoint(&dev, &ck).unwrap();
    assert_eq!(resumed.weight_decay_filter(), &DecayFilter::MatricesOnly);
    resumed
        .fit(
            &data,
            FitOptions {
                resume: Some(&state),
                ..opts(4)
            },
        )
        .unwrap();
    assert_eq!(weights_of(&resumed), weights_of(&whole));
    let _ = std::fs::remove_dir_all(&dir);
}
