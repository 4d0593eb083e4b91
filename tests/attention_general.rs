//! MultiHeadAttention beyond causal self-attention: cross-attention (a query input and a
//! value input, with or without a separate key), `value_dim` other than `key_dim`, Keras's
//! `attention_mask` input, head sizes past the fused kernel's 128, and dropout on the
//! attention probabilities. The forward pass against an f64 evaluation of the layer; the
//! gradients of every weight (and through the inputs, behind Dense layers) against central
//! finite differences of the loss; dropout's meaning (inference untouched, training masks
//! that follow the seed); typed errors for inputs that do not fit.

mod common;

use common::random_vec;
use suanli::data::Dataset;
use suanli::nn::{Call, Dense, Input, Loss, Model, MultiHeadAttention, Optimizer, SymbolicTensor};
use suanli::{Error, Tensor};

const SGD: Optimizer = Optimizer::Sgd {
    lr: 0.1,
    momentum: 0.0,
    nesterov: false,
};

/// The sizes of one case.
#[derive(Clone, Copy, Debug)]
struct Case {
    batch: usize,
    tq: usize,
    tk: usize,
    heads: usize,
    dk: usize,
    dv: usize,
    /// Input features of query, value and key.
    eq: usize,
    ev: usize,
    ek: usize,
    out: usize,
    causal: bool,
    /// 1: self-attention; 2: (query, value); 3: (query, value, key).
    inputs: usize,
    mask: bool,
}

/// `x·W + b` for rows of `k` in f64.
fn affine(x: &[f64], w: &[f32], b: &[f32], k: usize, n: usize) -> Vec<f64> {
    x.chunks(k)
        .flat_map(|row| {
            (0..n).map(move |j| {
                f64::from(b[j])
                    + (0..k)
                        .map(|i| row[i] * f64::from(w[i * n + j]))
                        .sum::<f64>()
            })
        })
        .collect()
}

/// Columns `from..from + n` of rows of `width`.
fn columns(x: &[f64], width: usize, from: usize, n: usize) -> Vec<f64> {
    x.chunks(width)
        .flat_map(|r| r[from..from + n].to_vec())
        .collect()
}

/// The layer in f64: `xs` as the model's inputs (query, value, key, mask as the case has
/// them), `w` its weights in order (kernel, bias per projection, then the output's).
fn reference(c: &Case, xs: &[Vec<f32>], w: &[Vec<f32>]) -> Vec<f64> {
    let f = |v: &[f32]| v.iter().map(|&a| f64::from(a)).collect::<Vec<f64>>();
    let (hk, hv) = (c.heads * c.dk, c.heads * c.dv);
    let (q, k, v) = match c.inputs {
        1 => {
            let p = affine(&f(&xs[0]), &w[0], &w[1], c.eq, 2 * hk + hv);
            let width = 2 * hk + hv;
            (
                columns(&p, width, 0, hk),
                columns(&p, width, hk, hk),
                columns(&p, width, 2 * hk, hv),
            )
        }
        2 => {
            let q = affine(&f(&xs[0]), &w[0], &w[1], c.eq, hk);
            let kv = affine(&f(&xs[1]), &w[2], &w[3], c.ev, hk + hv);
            (
                q,
                columns(&kv, hk + hv, 0, hk),
                columns(&kv, hk + hv, hk, hv),
            )
        }
        _ => (
            affine(&f(&xs[0]), &w[0], &w[1], c.eq, hk),
            affine(&f(&xs[2]), &w[2], &w[3], c.ek, hk),
            affine(&f(&xs[1]), &w[4], &w[5], c.ev, hv),
        ),
    };
    let mask = c.mask.then(|| &xs[xs.len() - 1]);
    let scale = 1.0 / (c.dk as f64).sqrt();
    let mut o = vec![0.0; c.batch * c.tq * hv];
    for b in 0..c.batch {
        for h in 0..c.heads {
            for i in 0..c.tq {
                let seen = |j: usize| {
                    (!c.causal || j <= i)
                        && mask.is_none_or(|m| m[(b * c.tq + i) * c.tk + j] != 0.0)
                };
                let s: Vec<f64> = (0..c.tk)
                    .map(|j| {
                        (0..c.dk)
                            .map(|d| {
                                q[(b * c.tq + i) * hk + h * c.dk + d]
                                    * k[(b * c.tk + j) * hk + h * c.dk + d]
                            })
                            .sum::<f64>()
                            * scale
                    })
                    .collect();
                let m = (0..c.tk)
                    .filter(|&j| seen(j))
                    .map(|j| s[j])
                    .fold(f64::NEG_INFINITY, f64::max);
                let e: Vec<f64> = (0..c.tk)
                    .map(|j| if seen(j) { (s[j] - m).exp() } else { 0.0 })
                    .collect();
                let z: f64 = e.iter().sum();
                for d in 0..c.dv {
                    o[(b * c.tq + i) * hv + h * c.dv + d] = (0..c.tk)
                        .map(|j| e[j] / z * v[(b * c.tk + j) * hv + h * c.dv + d])
                        .sum();
                }
            }
        }
    }
    let wo = &w[w.len() - 2];
    affine(&o, wo, &w[w.len() - 1], hv, c.out)
}

/// The case's model: its inputs straight into the attention (or each through a Dense of its
/// own width first, `dense_first`, so that gradients flow back through the inputs).
fn model(dev: &suanli::Device, c: &Case, dropout: f32, dense_first: bool) -> Model {
    let q = Input::new(&[c.tq, c.eq]);
    let v = Input::new(&[c.tk, c.ev]);
    let k = Input::new(&[c.tk, c.ek]);
    let m = Input::new(&[c.tq, c.tk]);
    let pre = |x: &SymbolicTensor, e: usize| -> SymbolicTensor {
        if dense_first {
            Dense::new(e, "tanh").call(x).unwrap()
        } else {
            x.clone()
        }
    };
    let mut ins: Vec<&SymbolicTensor> = vec![&q];
    let mut calls = vec![pre(&q, c.eq)];
    if c.inputs >= 2 {
        ins.push(&v);
        calls.push(pre(&v, c.ev));
    }
    if c.inputs == 3 {
        ins.push(&k);
        calls.push(pre(&k, c.ek));
    }
    if c.mask {
        ins.push(&m);
        calls.push(m.clone());
    }
    let layer = MultiHeadAttention::new(c.heads, c.dk)
        .value_dim(c.dv)
        .causal(c.causal)
        .output_size(c.out)
        .dropout(dropout)
        .with_attention_mask(c.mask);
    let refs: Vec<&SymbolicTensor> = calls.iter().collect();
    let y = layer.call_on(&refs).unwrap();
    Model::with_seed(dev, 21).build(&ins, &[&y]).unwrap()
}

/// Random inputs for a case: query, value, key as it has them, then a 0/1 mask that always
/// keeps key 0 (so no query sees nothing).
fn inputs(c: &Case, seed: u64) -> Vec<(Vec<f32>, Vec<usize>)> {
    let mut out = vec![(
        random_vec(c.batch * c.tq * c.eq, seed),
        vec![c.batch, c.tq, c.eq],
    )];
    if c.inputs >= 2 {
        out.push((
            random_vec(c.batch * c.tk * c.ev, seed + 1),
            vec![c.batch, c.tk, c.ev],
        ));
    }
    if c.inputs == 3 {
        out.push((
            random_vec(c.batch * c.tk * c.ek, seed + 2),
            vec![c.batch, c.tk, c.ek],
        ));
    }
    if c.mask {
        let r = random_vec(c.batch * c.tq * c.tk, seed + 3);
        let m: Vec<f32> = r
            .iter()
            .enumerate()
            .map(|(i, &u)| f32::from(i % c.tk == 0 || u > -0.3))
            .collect();
        out.push((m, vec![c.batch, c.tq, c.tk]));
    }
    out
}

/// Random weights (biases too, so the test sees them) set into the model; returns them.
fn randomize(m: &Model, seed: u64) -> Vec<Vec<f32>> {
    let w: Vec<Vec<f32>> = m
        .weights()
        .iter()
        .enumerate()
        .map(|(i, (_, t))| {
            let v = random_vec(t.numel(), seed + i as u64);
            v.iter().map(|a| a * 0.6).collect()
        })
        .collect();
    let refs: Vec<&[f32]> = w.iter().map(|v| v.as_slice()).collect();
    m.set_weights(&refs).unwrap();
    w
}

fn predict(dev: &suanli::Device, m: &Model, xs: &[(Vec<f32>, Vec<usize>)]) -> Vec<f32> {
    let ts: Vec<Tensor> = xs
        .iter()
        .map(|(v, s)| Tensor::from_slice(dev, v, s).unwrap())
        .collect();
    let refs: Vec<&Tensor> = ts.iter().collect();
    m.predict_inputs(&refs).unwrap().to_vec().unwrap()
}

const BASE: Case = Case {
    batch: 2,
    tq: 7,
    tk: 7,
    heads: 3,
    dk: 4,
    dv: 4,
    eq: 10,
    ev: 10,
    ek: 10,
    out: 6,
    causal: false,
    inputs: 1,
    mask: false,
};

fn cases() -> Vec<(&'static str, Case)> {
    vec![
        (
            "self, value_dim 6",
            Case {
                dv: 6,
                causal: true,
                ..BASE
            },
        ),
        ("self, masked", Case { mask: true, ..BASE }),
        (
            "cross (query, value)",
            Case {
                tk: 5,
                ev: 8,
                ek: 8,
                inputs: 2,
                ..BASE
            },
        ),
        (
            "cross (query, value, key), value_dim 3, causal, masked",
            Case {
                batch: 3,
                tq: 6,
                tk: 9,
                heads: 2,
                dk: 5,
                dv: 3,
                ev: 7,
                ek: 4,
                inputs: 3,
                causal: true,
                mask: true,
                ..BASE
            },
        ),
        (
            "self, head size 160 (past the fused kernel)",
            Case {
                heads: 1,
                dk: 160,
                dv: 160,
                tq: 5,
                tk: 5,
                causal: true,
                ..BASE
            },
        ),
    ]
}

#[test]
fn the_forward_pass_matches_f64_for_every_kind_of_attention() {
    let Some(dev) = common::device() else { return };
    for (what, c) in cases() {
        let m = model(&dev, &c, 0.0, false);
        let w = randomize(&m, 40);
        let xs = inputs(&c, 50);
        let got = predict(&dev, &m, &xs);
        let plain: Vec<Vec<f32>> = xs.iter().map(|(v, _)| v.clone()).collect();
        let want = reference(&c, &plain, &w);
        common::assert_rel_l2(what, &got, &want, 1e-5);
    }
}

#[test]
fn a_mask_hides_exactly_the_keys_it_zeroes() {
    let Some(dev) = common::device() else { return };
    let c = Case {
        mask: true,
        batch: 1,
        ..BASE
    };
    let m = model(&dev, &c, 0.0, false);
    randomize(&m, 3);
    let mut xs = inputs(&c, 4);
    // Query 2 sees keys 0 and 1 only: changing the input at position 5 cannot move it,
    // and moves the others.
    let mask = &mut xs[1].0;
    for j in 0..c.tk {
        mask[2 * c.tk + j] = f32::from(j < 2);
        for i in [0, 4] {
            mask[i * c.tk + j] = 1.0;
        }
    }
    let a = predict(&dev, &m, &xs);
    for v in &mut xs[0].0[5 * c.eq..6 * c.eq] {
        *v += 0.7;
    }
    let b = predict(&dev, &m, &xs);
    let row = |y: &[f32], i: usize| y[i * c.out..(i + 1) * c.out].to_vec();
    assert_eq!(row(&a, 2), row(&b, 2), "a hidden key moved query 2");
    assert_ne!(row(&a, 0), row(&b, 0));
    assert_ne!(row(&a, 4), row(&b, 4));
}

/// The loss of the model on `data` in f64 terms (the mean of evaluate's sums).
fn loss(m: &Model, data: &Dataset) -> f64 {
    m.evaluate(data, 64).unwrap().loss
}

#[test]
fn gradients_match_finite_differences() {
    let Some(dev) = common::device() else { return };
    for (what, c) in cases() {
        let c = Case {
            dk: c.dk.min(12),
            dv: c.dv.min(12),
            ..c
        };
        let mut m = model(&dev, &c, 0.0, true);
        m.compile(SGD, Loss::MeanSquaredError).unwrap();
        let w = randomize(&m, 60);
        let xs = inputs(&c, 70);
        let y = random_vec(c.batch * c.tq * c.out, 80);
        let mut data = Dataset::from_f32_targets(&dev, &xs[0].0, c.tq * c.eq, &y, c.tq * c.out)
            .unwrap()
            .with_sample_shape(&[c.tq, c.eq])
            .unwrap();
        for (v, s) in &xs[1..] {
            data = data.with_input(v, &s[1..]).unwrap();
        }
        let grads = m.gradients(&data).unwrap();
        assert_eq!(grads.len(), w.len(), "{what}: one gradient per weight");
        let h = 1e-2f32;
        let (mut num, mut err) = (0.0f64, 0.0f64);
        for (p, (name, g)) in grads.iter().enumerate() {
            let g = g.to_vec().unwrap();
            let n = g.len();
            for s in 0..4 {
                let i = (s * 7919 + p * 31) % n;
                let mut ws = w.clone();
                ws[p][i] = w[p][i] + h;
                let set = |ws: &[Vec<f32>]| {
                    let r: Vec<&[f32]> = ws.iter().map(|v| v.as_slice()).collect();
                    m.set_weights(&r).unwrap();
                };
                set(&ws);
                let up = loss(&m, &data);
                ws[p][i] = w[p][i] - h;
                set(&ws);
                let down = loss(&m, &data);
                set(&w);
                let fd = (up - down) / (2.0 * f64::from(h));
                let an = f64::from(g[i]);
                num += fd * fd;
                err += (fd - an) * (fd - an);
                assert!(an.is_finite(), "{what}: {name}[{i}] is {an}");
            }
        }
        let rel = (err / num.max(1e-30)).sqrt();
        // Measured 3e-5 to 5e-5 (f32 losses, step 1e-2); a weight gradient computed from the
        // wrong input fails at 0.2.
        assert!(
            rel < 1e-3,
            "{what}: relative L2 error {rel:.3e} of the gradients"
        );
    }
}

#[test]
fn dropout_drops_probabilities_while_training_only() {
    let Some(dev) = common::device() else { return };
    let c = Case {
        causal: true,
        ..BASE
    };
    let xs = inputs(&c, 90);
    let y = random_vec(c.batch * c.tq * c.out, 91);
    let data = Dataset::from_f32_targets(&dev, &xs[0].0, c.tq * c.eq, &y, c.tq * c.out)
        .unwrap()
        .with_sample_shape(&[c.tq, c.eq])
        .unwrap();
    let make = |rate: f32| {
        let mut m = model(&dev, &c, rate, false);
        m.compile(SGD, Loss::MeanSquaredError).unwrap();
        randomize(&m, 92);
        m
    };
    let (plain, dropped) = (make(0.0), make(0.4));
    // Inference: dropout does nothing.
    assert_eq!(predict(&dev, &plain, &xs), predict(&dev, &dropped, &xs));
    // Training: the gradients move, the same way each time (the masks follow the seed).
    let g = |m: &Model| -> Vec<f32> {
        m.gradients(&data)
            .unwrap()
            .iter()
            .flat_map(|(_, t)| t.to_vec().unwrap())
            .collect()
    };
    let (a, b, again) = (g(&plain), g(&dropped), g(&dropped));
    assert_ne!(a, b, "dropout 0.4 left the gradients as they were");
    assert_eq!(
        b, again,
        "dropout's masks are not a function of the seed and step"
    );
    assert!(b.iter().all(|v| v.is_finite()));
}

#[test]
fn inputs_that_do_not_fit_are_typed_errors() {
    let Some(_dev) = common::device() else { return };
    let q = Input::new(&[5, 8]);
    let v = Input::new(&[6, 8]);
    let k7 = Input::new(&[7, 8]);
    let bad_mask = Input::new(&[5, 5]);
    let mha = || MultiHeadAttention::new(2, 4);
    // A key of another length than the value.
    assert!(matches!(
        mha().call_on(&[&q, &v, &k7]),
        Err(Error::ShapeMismatch { .. })
    ));
    // A mask that is not (queries, keys).
    assert!(matches!(
        mha()
            .with_attention_mask(true)
            .call_on(&[&q, &v, &bad_mask]),
        Err(Error::ShapeMismatch { .. })
    ));
    // The mask flag with no mask input, and too many inputs.
    assert!(matches!(
        mha().with_attention_mask(true).call(&q),
        Err(Error::InvalidArgument { name: "inputs", .. })
    ));
    assert!(matches!(
        mha().call_on(&[&q, &v, &v, &v]),
        Err(Error::InvalidArgument { name: "inputs", .. })
    ));
    // Dropout of 1 or more, and a value_dim of 0.
    assert!(matches!(
        mha().dropout(1.0).call(&q),
        Err(Error::InvalidArgument {
            name: "dropout",
            ..
        })
    ));
    assert!(matches!(
        mha().value_dim(0).call(&q),
        Err(Error::InvalidArgument {
            name: "value_dim",
            ..
        })
    ));
}
