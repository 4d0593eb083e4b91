//! A character-level GPT on Tiny Shakespeare (nanoGPT's `shakespeare_char`), trained and
//! sampled with suanli's functional API: token and position embeddings, pre-norm blocks of
//! causal multi-head attention and a GELU MLP with residual adds, a final layer norm, and
//! the output projection tied to the token embedding.
//!
//! ```text
//! cargo run --release --example shakespeare_gpt                      # nanoGPT's CPU recipe
//! cargo run --release --example shakespeare_gpt -- --iters 200 --eval-interval 50
//! cargo run --release --example shakespeare_gpt -- --preset nanogpt  # the GPU model
//! ```
//! The default is nanoGPT's CPU recipe: 4 layers, 4 heads, width 128, block 64, batch 12,
//! 2000 iterations, no dropout, no biases, AdamW (lr 1e-3, β₂ 0.99, weight decay 0.1 on
//! matrices) with 100 warm-up steps and cosine decay to 1e-4, global gradient clipping 1.0.
//! `--preset nanogpt`: 6 layers, 6 heads, width 384, block 256, batch 64, dropout 0.2 (on the
//! residual branches and the embeddings; not yet on the attention probabilities), 5000
//! iterations. Flags: --iters N, --eval-interval N (250), --eval-batches N (200), --batch-size
//! N, --block N, --layers N, --heads N, --width N, --dropout X, --lr X, --seed N (1337),
//! --device SPEC (auto), --sample N (500 characters; 0 for none), --temperature X (0.8),
//! --top-k N (40), --save PATH, --data PATH (data/tinyshakespeare/input.txt), --profile
//! (per-kernel GPU time and pooled memory after training).
//!
//! Every `--eval-interval` iterations it prints the mean training loss of those iterations,
//! the validation loss on `--eval-batches` fixed random windows, and tokens per second. Each
//! interval's windows are drawn on the host from the seed and uploaded once (bytes). The
//! sample is generated one character at a time by predicting the whole window again (no KV
//! cache yet).

use std::path::PathBuf;
use std::time::Instant;

use suanli::data::{Split, Text};
use suanli::nn::{
    Add, Call, Clip, DecayFilter, Dense, Dropout, Embedding, FitOptions, Input, LayerNormalization,
    Loss, Model, MultiHeadAttention, Optimizer, Share, SymbolicTensor,
};
use suanli::{Device, Tensor};

struct Args {
    iters: usize,
    eval_interval: usize,
    eval_batches: usize,
    batch: usize,
    block: usize,
    layers: usize,
    heads: usize,
    width: usize,
    dropout: f32,
    lr: f64,
    seed: u64,
    device: String,
    sample: usize,
    temperature: f64,
    top_k: usize,
    save: Option<PathBuf>,
    data: PathBuf,
    profile: bool,
}

fn parse() -> Result<Args, String> {
    let mut a = Args {
        iters: 2000,
        eval_interval: 250,
        eval_batches: 200,
        batch: 12,
        block: 64,
        layers: 4,
        heads: 4,
        width: 128,
        dropout: 0.0,
        lr: 1e-3,
        seed: 1337,
        device: "auto".into(),
        sample: 500,
        temperature: 0.8,
        top_k: 40,
        save: None,
        data: PathBuf::from(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/data/tinyshakespeare/input.txt"
        )),
        profile: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        if flag == "--profile" {
            a.profile = true;
            continue;
        }
        if flag == "--preset" {
            match it.next().as_deref() {
                Some("nanogpt") => {
                    (a.layers, a.heads, a.width, a.block, a.batch) = (6, 6, 384, 256, 64);
                    (a.dropout, a.iters, a.eval_interval) = (0.2, 5000, 500);
                }
                other => return Err(format!("--preset: expected nanogpt, found {other:?}")),
            }
            continue;
        }
        let v = it.next().ok_or(format!("{flag} needs a value"))?;
        let bad = |e: String| format!("{flag} {v}: {e}");
        let n = || v.parse::<usize>().map_err(|e| bad(e.to_string()));
        match flag.as_str() {
            "--iters" => a.iters = n()?,
            "--eval-interval" => a.eval_interval = n()?.max(1),
            "--eval-batches" => a.eval_batches = n()?.max(1),
            "--batch-size" => a.batch = n()?,
            "--block" => a.block = n()?,
            "--layers" => a.layers = n()?,
            "--heads" => a.heads = n()?,
            "--width" => a.width = n()?,
            "--sample" => a.sample = n()?,
            "--top-k" => a.top_k = n()?,
            "--seed" => a.seed = n()? as u64,
            "--dropout" => {
                a.dropout = v
                    .parse()
                    .map_err(|e: std::num::ParseFloatError| bad(e.to_string()))?
            }
            "--lr" => {
                a.lr = v
                    .parse()
                    .map_err(|e: std::num::ParseFloatError| bad(e.to_string()))?
            }
            "--temperature" => {
                a.temperature = v
                    .parse()
                    .map_err(|e: std::num::ParseFloatError| bad(e.to_string()))?
            }
            "--device" => a.device = v,
            "--save" => a.save = Some(PathBuf::from(v)),
            "--data" => a.data = PathBuf::from(v),
            _ => return Err(format!("unknown flag {flag}")),
        }
    }
    if a.heads == 0 || !a.width.is_multiple_of(a.heads) {
        return Err(format!(
            "--heads {} must divide --width {}",
            a.heads, a.width
        ));
    }
    Ok(a)
}

/// The GPT: token ids and position ids in, next-token logits per position out.
fn gpt(dev: &Device, a: &Args, vocab: usize) -> suanli::Result<Model> {
    let (t, e) = (a.block, a.width);
    let ids = Input::named(&[t], "tokens");
    let positions = Input::named(&[t], "positions");
    let wte = Embedding::new(vocab, e).shared()?;
    let tok = wte.call(&ids)?;
    let pos = Embedding::new(t, e).call(&positions)?;
    let mut h = Add::new().call_on(&[&tok, &pos])?;
    let drop = |x: &SymbolicTensor| -> suanli::Result<SymbolicTensor> {
        if a.dropout > 0.0 {
            Dropout::new(a.dropout).call(x)
        } else {
            Ok(x.clone())
        }
    };
    h = drop(&h)?;
    for _ in 0..a.layers {
        let n = LayerNormalization::new().center(false).call(&h)?;
        let att = MultiHeadAttention::new(a.heads, e / a.heads)
            .causal(true)
            .use_bias(false)
            .call(&n)?;
        h = Add::new().call_on(&[&h, &drop(&att)?])?;
        let n = LayerNormalization::new().center(false).call(&h)?;
        let m = Dense::new(4 * e, "gelu").use_bias(false).call(&n)?;
        let m = Dense::new(e, "linear").use_bias(false).call(&m)?;
        h = Add::new().call_on(&[&h, &drop(&m)?])?;
    }
    let h = LayerNormalization::new().center(false).call(&h)?;
    let logits = wte.transposed().call(&h)?;
    Model::with_seed(dev, a.seed).build(&[&ids, &positions], &[&logits])
}

/// nanoGPT's schedule: linear warm-up over 100 steps, cosine decay to lr/10 at `iters`.
fn lr_at(a: &Args, step: u64) -> f64 {
    let (warmup, decay, min) = (100.0, a.iters.max(101) as f64, a.lr / 10.0);
    let it = step as f64;
    if it < warmup {
        return a.lr * (it + 1.0) / (warmup + 1.0);
    }
    if it > decay {
        return min;
    }
    let ratio = (it - warmup) / (decay - warmup);
    min + 0.5 * (1.0 + (std::f64::consts::PI * ratio).cos()) * (a.lr - min)
}

fn windows(
    dev: &Device,
    text: &Text,
    split: Split,
    count: usize,
    a: &Args,
    seed: u64,
) -> suanli::Result<suanli::data::Dataset> {
    let positions: Vec<u32> = (0..count).flat_map(|_| 0..a.block as u32).collect();
    text.windows_dataset(dev, split, count, a.block, seed)?
        .with_input_ids(&positions, &[a.block])
}

/// Samples `n` characters after a newline: each step predicts the window again and draws
/// the next character from the last position's logits (temperature, top-k).
fn sample(model: &Model, dev: &Device, text: &Text, a: &Args) -> suanli::Result<String> {
    let tk = text.tokenizer();
    let mut ids = tk.encode("\n")?;
    let mut rng = suanli::random::Rng::new(a.seed);
    let pos: Vec<f32> = (0..a.block).map(|p| p as f32).collect();
    let pos = Tensor::from_slice(dev, &pos, &[1, a.block])?;
    for _ in 0..a.sample {
        let start = ids.len().saturating_sub(a.block);
        let window = &ids[start..];
        let mut x: Vec<f32> = window.iter().map(|&i| i as f32).collect();
        x.resize(a.block, 0.0);
        let x = Tensor::from_slice(dev, &x, &[1, a.block])?;
        let logits = model.predict_inputs(&[&x, &pos])?.to_vec()?;
        let v = tk.vocab_size();
        let last = &logits[(window.len() - 1) * v..window.len() * v];
        let mut order: Vec<usize> = (0..v).collect();
        order.sort_by(|&i, &j| last[j].total_cmp(&last[i]));
        order.truncate(a.top_k.clamp(1, v));
        let m = last[order[0]] as f64;
        let w: Vec<f64> = order
            .iter()
            .map(|&i| ((last[i] as f64 - m) / a.temperature.max(1e-6)).exp())
            .collect();
        let mut r = rng.uniform(0.0, w.iter().sum());
        let mut pick = order[order.len() - 1];
        for (k, &wk) in w.iter().enumerate() {
            if r < wk {
                pick = order[k];
                break;
            }
            r -= wk;
        }
        ids.push(pick as u32);
    }
    tk.decode(&ids)
}

fn run(a: Args) -> suanli::Result<()> {
    let dev = Device::open(&a.device)?;
    let text = Text::open(&a.data)?;
    let vocab = text.tokenizer().vocab_size();
    let mut model = gpt(&dev, &a, vocab)?;
    model.compile(
        Optimizer::AdamW {
            lr: a.lr,
            weight_decay: 0.1,
            beta1: 0.9,
            beta2: 0.99,
            eps: 1e-8,
        },
        Loss::SparseCategoricalCrossentropy,
    )?;
    model.set_weight_decay_filter(DecayFilter::MatricesOnly)?;
    model.set_gradient_clipping(Clip::global_norm(1.0))?;
    println!(
        "GPT ({} layers, {} heads, width {}, block {}) on {}: vocabulary {vocab}, {} training and {} validation characters, {} parameters",
        a.layers,
        a.heads,
        a.width,
        a.block,
        dev.info().name,
        text.tokens(Split::Train).len(),
        text.tokens(Split::Validation).len(),
        model.param_count()
    );
    let val = windows(
        &dev,
        &text,
        Split::Validation,
        a.eval_batches * a.batch,
        &a,
        a.seed ^ 0x5EED,
    )?;
    let schedule = |step: u64| lr_at(&a, step);
    dev.set_profiling(a.profile);
    let mut done = 0;
    while done < a.iters {
        let steps = a.eval_interval.min(a.iters - done);
        let train = windows(
            &dev,
            &text,
            Split::Train,
            steps * a.batch,
            &a,
            a.seed + done as u64,
        )?;
        let t0 = Instant::now();
        let hist = model.fit(
            &train,
            FitOptions {
                epochs: 1,
                batch_size: a.batch,
                shuffle: false,
                seed: a.seed + done as u64,
                step_lr: Some(&schedule),
                ..Default::default()
            },
        )?;
        let secs = t0.elapsed().as_secs_f64();
        done += steps;
        let v = model.evaluate(&val, a.batch)?;
        println!(
            "iter {done:>5}: train loss {:.4}, val loss {:.4}, {:.0} tokens/s, {:.1} ms/iter",
            hist.loss[0],
            v.loss,
            (steps * a.batch * a.block) as f64 / secs,
            secs * 1e3 / steps as f64
        );
    }
    if a.profile {
        dev.set_profiling(false);
        println!(
            "Top kernels by GPU time (profiler on: submissions serialised):\n{}",
            dev.profile().table(12)
        );
        let m = dev.memory_stats();
        println!(
            "Memory: peak pool {:.1} MB ({})",
            m.peak_in_use as f64 / 1e6,
            m.breakdown()
        );
    }
    if let Some(p) = &a.save {
        model.save(p)?;
        println!("saved {}", p.display());
    }
    if a.sample > 0 {
        println!("---\n{}\n---", sample(&model, &dev, &text, &a)?);
    }
    Ok(())
}

fn main() {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    let a = match parse() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("shakespeare_gpt: {e}");
            std::process::exit(2);
        }
    };
    if let Err(e) = run(a) {
        eprintln!("shakespeare_gpt: {e}");
        std::process::exit(1);
    }
}
