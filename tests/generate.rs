//! Generation: the cached attention kernel against the f64 attention of the whole sequence
//! (fed in chunks, outputs poisoned), the on-device draw against its f64 reference, and
//! `Model::generate` with the KV cache against recomputing the window (the same tokens for
//! a fixed seed), streaming, and the typed errors of bad requests.

mod common;

use common::random_vec;
use suanli::exec::Recorder;
use suanli::internals::kernels::attention_cache::{self, CacheShape};
use suanli::internals::kernels::sample::{self, Draw};
use suanli::internals::reference::{self, AttnShape};
use suanli::nn::{
    Add, Call, Dense, Embedding, Flatten, GenerateOptions, Input, LayerNormalization, Model,
    MultiHeadAttention, Share,
};
use suanli::{Device, Error, Precision, Tensor};

fn nan(dev: &Device, n: usize) -> Tensor {
    Tensor::full(dev, &[n], f32::NAN).unwrap()
}

/// Feeds one sequence set's rows to the cache in chunks of `chunks`, checking each chunk's
/// output against the reference's rows.
fn check_cached(dev: &Device, batch: usize, t: usize, heads: usize, d: usize, chunks: &[usize]) {
    let e = heads * d;
    let qkv: Vec<f32> = random_vec(batch * t * 3 * e, (t * 31 + d) as u64)
        .iter()
        .map(|v| v * 2.0)
        .collect();
    let r = AttnShape {
        batch,
        t,
        heads,
        d,
        causal: true,
        stride: 3 * e,
        offsets: [0, e, 2 * e],
        o_stride: e,
        scale: 1.0 / (d as f64).sqrt(),
    };
    let (want, _) = reference::attention(&r, &qkv);
    let cap = t + 3;
    let kc = nan(dev, batch * cap * e);
    let vc = nan(dev, batch * cap * e);
    let mut past = 0;
    for &n in chunks.iter().cycle() {
        if past == t {
            break;
        }
        let n = n.min(t - past);
        // The chunk's rows of every sequence, packed.
        let mut rows = Vec::with_capacity(batch * n * 3 * e);
        for b in 0..batch {
            let at = (b * t + past) * 3 * e;
            rows.extend_from_slice(&qkv[at..at + n * 3 * e]);
        }
        let s = CacheShape {
            batch,
            n,
            past,
            heads,
            d,
            cap,
        };
        let x = Tensor::from_slice(dev, &rows, &[rows.len()]).unwrap();
        let (scores, o) = (nan(dev, s.scores_len()), nan(dev, s.o_len()));
        let mut rec = Recorder::new(dev);
        attention_cache::append(&mut rec, &s, x.buffer(), kc.buffer(), vc.buffer()).unwrap();
        attention_cache::attend(
            &mut rec,
            &s,
            x.buffer(),
            (kc.buffer(), vc.buffer()),
            scores.buffer(),
            o.buffer(),
        )
        .unwrap();
        rec.submit().unwrap();
        let got = o.to_vec().unwrap();
        for b in 0..batch {
            for i in 0..n {
                for c in 0..e {
                    let g = got[(b * n + i) * e + c] as f64;
                    let w = want[(b * t + past + i) * e + c];
                    assert!(
                        (g - w).abs() <= 2e-5 * (1.0 + w.abs()),
                        "batch {batch} t {t} heads {heads} d {d}: row {} ch {c}: {g} vs {w}",
                        past + i
                    );
                }
            }
        }
        past += n;
    }
}

#[test]
fn cached_attention_matches_the_whole_sequence() {
    let Some(dev) = common::device() else { return };
    for &(batch, t, heads, d) in &[
        (1, 1, 1, 16),
        (1, 7, 3, 24),
        (5, 65, 4, 16),
        (2, 257, 1, 64),
        (1, 70, 2, 128),
    ] {
        check_cached(&dev, batch, t, heads, d, &[1]);
        check_cached(&dev, batch, t, heads, d, &[5, 1, 1, 3]);
    }
}

#[test]
fn cached_attention_refuses_a_full_cache() {
    let Some(dev) = common::device() else { return };
    let s = CacheShape {
        batch: 1,
        n: 2,
        past: 7,
        heads: 1,
        d: 4,
        cap: 8,
    };
    let b = nan(&dev, 64);
    let mut rec = Recorder::new(&dev);
    let e = attention_cache::append(&mut rec, &s, b.buffer(), b.buffer(), b.buffer());
    assert!(
        matches!(e, Err(Error::InvalidArgument { name: "past", .. })),
        "{e:?}"
    );
}

/// Draws token `step` from `logits` on the device (the tokens list poisoned).
fn draw(dev: &Device, logits: &[f32], d: &Draw, step: usize) -> (u32, f32) {
    let x = Tensor::from_slice(dev, logits, &[logits.len()]).unwrap();
    let tokens = Tensor::full(dev, &[step + 1], f32::from_bits(0xdead_beef)).unwrap();
    let next = nan(dev, 1);
    let mut rec = Recorder::new(dev);
    sample::sample(
        &mut rec,
        (x.buffer(), logits.len()),
        (0, logits.len()),
        d,
        step,
        (tokens.buffer(), step + 1),
        next.buffer(),
    )
    .unwrap();
    rec.submit().unwrap();
    (
        tokens.to_vec().unwrap()[step].to_bits(),
        next.to_vec().unwrap()[0],
    )
}

#[test]
fn the_device_draw_follows_the_reference() {
    let Some(dev) = common::device() else { return };
    let mut checked = 0;
    for &v in &[1usize, 2, 7, 65, 300, 1000, 5000] {
        let logits: Vec<f32> = random_vec(v, v as u64).iter().map(|x| x * 4.0).collect();
        for &(temperature, top_k) in &[
            (1.0, None),
            (0.8, Some(40)),
            (0.0, None),
            (1.5, Some(1)),
            (1.0, Some(3)),
            (0.3, Some(v)),
        ] {
            for step in [0usize, 1, 17] {
                let d = Draw {
                    temperature,
                    top_k,
                    seed: 1234 + v as u64,
                };
                let (tok, next) = draw(&dev, &logits, &d, step);
                assert_eq!(next, tok as f32, "next input holds the token");
                let u = reference::sample_uniform(d.seed, step as u32);
                let (want, lo, hi) = reference::sample_token(&logits, temperature, top_k, u);
                if tok as usize != want {
                    // Only where u sits on an interval's edge may rounding pick a neighbour.
                    let edge = (u - lo).abs().min((u - hi).abs());
                    assert!(
                        edge < 1e-5,
                        "V {v} T {temperature} k {top_k:?} step {step}: drew {tok}, the reference {want} (u {u}, [{lo}, {hi}))"
                    );
                }
                if let Some(k) = top_k {
                    let mut sorted = logits.clone();
                    sorted.sort_by(|a, b| b.total_cmp(a));
                    assert!(
                        logits[tok as usize] >= sorted[k.min(v) - 1],
                        "outside the top {k}"
                    );
                }
                checked += 1;
            }
        }
    }
    assert_eq!(checked, 7 * 6 * 3);
}

#[test]
fn greedy_draw_takes_the_first_of_tied_maxima() {
    let Some(dev) = common::device() else { return };
    let mut logits = vec![0.0f32; 600];
    logits[411] = 3.0;
    logits[97] = 3.0;
    logits[598] = 3.0;
    let d = Draw {
        temperature: 0.0,
        top_k: None,
        seed: 0,
    };
    assert_eq!(draw(&dev, &logits, &d, 0).0, 97);
}

#[test]
fn the_draws_are_distributed_as_the_softmax() {
    // 4000 draws from 5 logits: each token's share within 4 standard deviations.
    let Some(dev) = common::device() else { return };
    let logits = [1.0f32, 0.0, 2.0, -1.0, 0.5];
    let d = Draw {
        temperature: 1.0,
        top_k: None,
        seed: 99,
    };
    let n = 4000;
    let x = Tensor::from_slice(&dev, &logits, &[5]).unwrap();
    let tokens = Tensor::zeros(&dev, &[n]).unwrap();
    let next = nan(&dev, 1);
    let mut rec = Recorder::new(&dev);
    for step in 0..n {
        sample::sample(
            &mut rec,
            (x.buffer(), 5),
            (0, 5),
            &d,
            step,
            (tokens.buffer(), n),
            next.buffer(),
        )
        .unwrap();
    }
    rec.submit().unwrap();
    let mut counts = [0usize; 5];
    for t in tokens.to_vec().unwrap() {
        counts[t.to_bits() as usize] += 1;
    }
    let z: f64 = logits.iter().map(|&l| (l as f64).exp()).sum();
    for (i, &c) in counts.iter().enumerate() {
        let p = (logits[i] as f64).exp() / z;
        let sd = (n as f64 * p * (1.0 - p)).sqrt();
        assert!(
            (c as f64 - n as f64 * p).abs() < 4.0 * sd,
            "token {i}: {c} draws, expected {:.0} ± {sd:.0}",
            n as f64 * p
        );
    }
}

const T: usize = 24;
const E: usize = 32;
const V: usize = 13;

/// A small GPT (untrained: its logits are what they are, the same for both paths).
fn gpt(dev: &Device, causal: bool) -> Model {
    let ids = Input::named(&[T], "tokens");
    let positions = Input::named(&[T], "positions");
    let wte = Embedding::new(V, E).shared().unwrap();
    let tok = wte.call(&ids).unwrap();
    let pos = Embedding::new(T, E).call(&positions).unwrap();
    let mut h = Add::new().call_on(&[&tok, &pos]).unwrap();
    for _ in 0..2 {
        let n = LayerNormalization::new().call(&h).unwrap();
        let a = MultiHeadAttention::new(2, E / 2)
            .causal(causal)
            .call(&n)
            .unwrap();
        h = Add::new().call_on(&[&h, &a]).unwrap();
        let n = LayerNormalization::new().call(&h).unwrap();
        let m = Dense::new(2 * E, "gelu").call(&n).unwrap();
        let m = Dense::new(E, "linear").call(&m).unwrap();
        h = Add::new().call_on(&[&h, &m]).unwrap();
    }
    let h = LayerNormalization::new().call(&h).unwrap();
    let logits = wte.transposed().call(&h).unwrap();
    Model::with_seed(dev, 5)
        .build(&[&ids, &positions], &[&logits])
        .unwrap()
}

fn opts(n: usize, temperature: f32, top_k: Option<usize>, kv_cache: bool) -> GenerateOptions {
    GenerateOptions {
        max_new_tokens: n,
        temperature,
        top_k,
        seed: 77,
        kv_cache,
    }
}

#[test]
fn the_kv_cache_generates_what_recomputing_does() {
    let Some(dev) = common::device() else { return };
    let m = gpt(&dev, true);
    for (prompt, temperature, top_k) in [
        (vec![3u32], 1.0, None),
        (vec![1, 2, 3, 4, 5, 6, 7], 0.8, Some(4)),
        (vec![9, 9, 0], 0.0, None),
    ] {
        let n = T - prompt.len();
        let cached = m
            .generate(&prompt, &opts(n, temperature, top_k, true))
            .unwrap();
        let again = m
            .generate(&prompt, &opts(n, temperature, top_k, false))
            .unwrap();
        assert_eq!(cached.len(), prompt.len() + n);
        assert_eq!(&cached[..prompt.len()], &prompt[..]);
        assert_eq!(cached, again, "T {temperature} k {top_k:?}");
        assert!(cached.iter().all(|&t| (t as usize) < V));
        // Not a constant sequence: the draws depend on the model.
        if temperature > 0.0 {
            assert!(cached[prompt.len()..].windows(2).any(|w| w[0] != w[1]));
        }
    }
}

#[test]
fn generation_past_the_context_keeps_going_deterministically() {
    let Some(dev) = common::device() else { return };
    let m = gpt(&dev, true);
    let o = opts(3 * T, 1.0, None, true);
    let a = m.generate(&[1, 2], &o).unwrap();
    let b = m.generate(&[1, 2], &o).unwrap();
    assert_eq!(a, b);
    assert_eq!(a.len(), 2 + 3 * T);
    // A prompt longer than the context is cropped to its last T tokens, as nanoGPT does:
    // the first token agrees (later ones see a refilled, shorter context with the cache).
    let long: Vec<u32> = (0..40).map(|i| (i * 7 % V) as u32).collect();
    let c = m.generate(&long, &opts(1, 0.0, None, true)).unwrap();
    let d = m.generate(&long, &opts(1, 0.0, None, false)).unwrap();
    assert_eq!(c, d);
    let cropped = m
        .generate(&long[40 - T..], &opts(1, 0.0, None, true))
        .unwrap();
    assert_eq!(c[40], cropped[T]);
    assert_eq!(
        m.generate(&long, &opts(30, 1.0, Some(5), true))
            .unwrap()
            .len(),
        70
    );
}

#[test]
fn streaming_sees_every_token_and_can_stop() {
    let Some(dev) = common::device() else { return };
    let m = gpt(&dev, true);
    let o = opts(10, 1.0, None, true);
    let all = m.generate(&[4], &o).unwrap();
    let mut seen = Vec::new();
    let mut f = |t: u32| {
        seen.push(t);
        true
    };
    let streamed = m.generate_streaming(&[4], &o, Some(&mut f)).unwrap();
    assert_eq!(streamed, all);
    assert_eq!(seen, all[1..]);
    let mut count = 0;
    let mut stop = |_t: u32| {
        count += 1;
        count < 3
    };
    let short = m.generate_streaming(&[4], &o, Some(&mut stop)).unwrap();
    assert_eq!(short, all[..4]);
}

#[test]
fn bad_requests_are_typed_errors_and_the_model_stays_usable() {
    let Some(dev) = common::device() else { return };
    let m = gpt(&dev, true);
    let name = |r: suanli::Result<Vec<u32>>| match r {
        Err(Error::InvalidArgument { name, found, .. }) => (name, found),
        other => panic!("expected a typed error, got {other:?}"),
    };
    let o = opts(5, 1.0, None, true);
    assert_eq!(name(m.generate(&[], &o)).0, "prompt");
    let (n, found) = name(m.generate(&[1, 2, V as u32], &o));
    assert_eq!(n, "prompt");
    assert!(found.contains("position 2"), "{found}");
    assert_eq!(
        name(m.generate(&[1], &opts(5, 1.0, Some(0), true))).0,
        "top_k"
    );
    assert_eq!(
        name(m.generate(&[1], &opts(5, -1.0, None, true))).0,
        "temperature"
    );
    // Attention without the causal mask cannot use a cache.
    let open = gpt(&dev, false);
    let (n, found) = name(open.generate(&[1], &o));
    assert_eq!(n, "MultiHeadAttention", "{found}");
    assert!(open.generate(&[1], &opts(3, 1.0, None, false)).is_ok());
    // A layer that mixes positions cannot use a cache either.
    let x = Input::new(&[4]);
    let h = Embedding::new(5, 3).call(&x).unwrap();
    let h = Flatten::new().call(&h).unwrap();
    let h = Dense::new(4 * 5, "linear").call(&h).unwrap();
    let flat = Model::new(&dev).build(&[&x], &[&h]).unwrap();
    let (n, found) = name(flat.generate(&[1], &o));
    assert_eq!(n, "model");
    assert!(
        found.contains("Flatten") || found.contains("shape"),
        "{found}"
    );
    assert_eq!(m.generate(&[1], &o).unwrap().len(), 6);
}

#[test]
fn ids_past_an_embedding_table_are_named_before_a_prediction() {
    let Some(dev) = common::device() else { return };
    let m = gpt(&dev, true);
    let err = |k: usize, v: &[f32]| match m.check_input_ids(k, v, 4) {
        Err(Error::InvalidArgument { found, .. }) => found,
        other => panic!("expected a typed error, got {other:?}"),
    };
    assert!(m.check_input_ids(0, &[0.0, 12.0, 3.0, 4.0], 4).is_ok());
    assert_eq!(
        err(0, &[0.0, 1.0, 2.0, 3.0, 4.0, 13.0]),
        "13 at sample 1, position 1"
    );
    assert_eq!(err(0, &[1.5]), "1.5 at sample 0, position 0");
    assert_eq!(err(0, &[-1.0]), "-1 at sample 0, position 0");
    // Positions: a sequence longer than the position table.
    assert!(m.check_input_ids(1, &[23.0], 4).is_ok());
    assert_eq!(err(1, &[0.0, 1.0, 24.0]), "24 at sample 0, position 2");
}

/// The KV cache computes under the model's precision policy as recomputing does: a model
/// whose greedy choice is decided by a bit below f16's precision (every embedding is
/// 1 + 2⁻¹², which f16 operands round to 1, tying token 1's logit with token 0's bias of 1)
/// draws token 1 under float32 and token 0 (the first of tied maxima) under mixed_float16,
/// with the cache and without.
#[test]
fn the_kv_cache_follows_the_precision_policy() {
    let Some(dev) = common::device() else { return };
    const V: usize = 4;
    let ids = Input::named(&[6], "tokens");
    let e = Embedding::new(V, 2).call(&ids).unwrap();
    let logits = Dense::new(V, "linear").call(&e).unwrap();
    let mut m = Model::with_seed(&dev, 1)
        .build(&[&ids], &[&logits])
        .unwrap();
    let table: Vec<f32> = (0..V).flat_map(|_| [1.0 + 2f32.powi(-12), 0.0]).collect();
    let mut kernel = vec![0.0f32; 2 * V];
    kernel[1] = 1.0;
    let mut bias = vec![0.0f32; V];
    bias[0] = 1.0;
    m.set_weights(&[&table, &kernel, &bias]).unwrap();
    for (policy, token) in [(Precision::Float32, 1u32), (Precision::MixedFloat16, 0)] {
        m.set_precision_policy(policy);
        for kv_cache in [true, false] {
            let out = m.generate(&[2], &opts(5, 0.0, None, kv_cache)).unwrap();
            assert_eq!(
                out,
                [2, token, token, token, token, token],
                "{policy:?} kv_cache {kv_cache}"
            );
        }
    }
}
