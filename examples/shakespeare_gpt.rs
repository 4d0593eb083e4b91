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
//! --top-k N (40), --save PATH, --load PATH (a saved model instead of training), --data PATH
//! (data/tinyshakespeare/input.txt), --init nanogpt|keras (nanogpt: N(0, 0.02) weights, the
//! residual projections scaled by 1/√(2·layers), LayerNorm ε 1e-5, as benches/torch_gpt.py;
//! keras: Keras's initializers and ε 1e-3), --profile (per-kernel GPU time and pooled memory after
//! training), --bench-generate (generation's tokens per second with the KV cache and by
//! recomputing the window, alternating, 3 rounds each, medians), --checkpoint PATH (weights,
//! optimizer state and step after every interval, atomically), --resume PATH (continue such a
//! run: the remaining intervals draw the same windows, so the result is the uninterrupted
//! run's), --devices LIST (data-parallel over several devices, `gpu:0,gpu:1`; each computes
//! its share of every batch), --bench (instead of training: ms per iteration beside
//! benches/torch_gpt.py's, the same recipe in PyTorch on the CPU with 2 threads, run by
//! `$SUANLI_PEER_PYTHON` or `python3`; 3 alternating rounds of --bench-iters N (50)
//! iterations, medians and their ratio).
//!
//! Every `--eval-interval` iterations it prints the mean training loss of those iterations,
//! the validation loss on `--eval-batches` fixed random windows, and tokens per second. Each
//! interval's windows are drawn on the host from the seed and uploaded once (bytes). The
//! sample is `Model::generate` after a newline, printed as it streams: one token per step,
//! drawn on the device, with earlier positions' keys and values cached on the device.

use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

use suanli::data::{Split, Text};
use suanli::multi::{DeviceGroup, ParallelOptions};
use suanli::nn::{
    Add, Call, Clip, DecayFilter, Dense, Dropout, Embedding, FitOptions, GenerateOptions, Input,
    LayerNormalization, Loss, Model, MultiHeadAttention, Optimizer, Share, SymbolicTensor,
};
use suanli::Device;

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
    load: Option<PathBuf>,
    checkpoint: Option<PathBuf>,
    resume: Option<PathBuf>,
    devices: Option<String>,
    data: PathBuf,
    profile: bool,
    bench_generate: bool,
    /// Iterations per round of `--bench` (0: no bench).
    bench: usize,
    /// nanoGPT's initialisation and LayerNorm ε (the default) or Keras's.
    keras_init: bool,
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
        load: None,
        checkpoint: None,
        resume: None,
        devices: None,
        data: PathBuf::from(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/data/tinyshakespeare/input.txt"
        )),
        profile: false,
        bench_generate: false,
        bench: 0,
        keras_init: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        if flag == "--profile" {
            a.profile = true;
            continue;
        }
        if flag == "--bench" {
            a.bench = a.bench.max(50);
            continue;
        }
        if flag == "--bench-generate" {
            a.bench_generate = true;
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
            "--load" => a.load = Some(PathBuf::from(v)),
            "--checkpoint" => a.checkpoint = Some(PathBuf::from(v)),
            "--resume" => a.resume = Some(PathBuf::from(v)),
            "--devices" => a.devices = Some(v),
            "--bench-iters" => a.bench = n()?.max(1),
            "--init" => match v.as_str() {
                "nanogpt" => a.keras_init = false,
                "keras" => a.keras_init = true,
                _ => return Err(bad("expected nanogpt or keras".into())),
            },
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
    let eps = if a.keras_init { 1e-3 } else { 1e-5 };
    let norm = || LayerNormalization::new().center(false).epsilon(eps);
    for _ in 0..a.layers {
        let n = norm().call(&h)?;
        let att = MultiHeadAttention::new(a.heads, e / a.heads)
            .causal(true)
            .use_bias(false)
            .call(&n)?;
        h = Add::new().call_on(&[&h, &drop(&att)?])?;
        let n = norm().call(&h)?;
        let m = Dense::new(4 * e, "gelu").use_bias(false).call(&n)?;
        let m = Dense::new(e, "linear").use_bias(false).call(&m)?;
        h = Add::new().call_on(&[&h, &drop(&m)?])?;
    }
    let h = norm().call(&h)?;
    let logits = wte.transposed().call(&h)?;
    let model = Model::with_seed(dev, a.seed).build(&[&ids, &positions], &[&logits])?;
    if !a.keras_init {
        nanogpt_init(&model, a)?;
    }
    Ok(model)
}

/// nanoGPT's initialisation: every matrix N(0, 0.02), the projections back into the residual
/// stream (attention's output, the MLP's second matrix) N(0, 0.02/√(2·layers)), layer norms'
/// scales 1.
fn nanogpt_init(model: &Model, a: &Args) -> suanli::Result<()> {
    let mut rng = suanli::random::Rng::new(a.seed ^ 0x6E47);
    let residual = 0.02 / (2.0 * a.layers as f64).sqrt();
    let values: Vec<Vec<f32>> = model
        .weights()
        .iter()
        .map(|(name, t)| {
            let n = t.numel();
            // Dense layers come in pairs per block: the MLP's first, then its second.
            let second_dense = name
                .strip_prefix("dense")
                .and_then(|r| r.split('/').next())
                .map(|k| k.trim_start_matches('_').parse::<usize>().unwrap_or(0) % 2 == 1);
            let std = if name.ends_with("/gamma") {
                return vec![1.0; n];
            } else if name.ends_with("/output_kernel") || second_dense == Some(true) {
                residual
            } else {
                0.02
            };
            (0..n).map(|_| (std * rng.normal()) as f32).collect()
        })
        .collect();
    let refs: Vec<&[f32]> = values.iter().map(Vec::as_slice).collect();
    model.set_weights(&refs)
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

fn generate_options(a: &Args, kv_cache: bool) -> GenerateOptions {
    GenerateOptions {
        max_new_tokens: a.sample,
        temperature: a.temperature as f32,
        top_k: Some(a.top_k.max(1)),
        seed: a.seed,
        kv_cache,
    }
}

/// Prints `--sample` characters after a newline as they are drawn.
fn sample(model: &Model, text: &Text, a: &Args) -> suanli::Result<()> {
    let tk = text.tokenizer();
    let mut out = std::io::stdout();
    let mut print = |id: u32| {
        if let Ok(s) = tk.decode(&[id]) {
            print!("{s}");
            let _ = out.flush();
        }
        true
    };
    println!("---");
    model.generate_streaming(
        &tk.encode("\n")?,
        &generate_options(a, true),
        Some(&mut print),
    )?;
    println!("\n---");
    Ok(())
}

/// Generation's tokens per second with the cache and by recomputing, alternating.
fn bench_generate(model: &Model, text: &Text, a: &Args) -> suanli::Result<()> {
    let prompt = text.tokenizer().encode("\n")?;
    let (mut cached, mut again) = (Vec::new(), Vec::new());
    for _ in 0..3 {
        for (kv, times) in [(true, &mut cached), (false, &mut again)] {
            let t0 = Instant::now();
            model.generate(&prompt, &generate_options(a, kv))?;
            times.push(a.sample as f64 / t0.elapsed().as_secs_f64());
        }
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (c, r) = (median(&mut cached), median(&mut again));
    println!(
        "generation of {} tokens (block {}): {c:.0} tokens/s with the KV cache, {r:.0} tokens/s recomputing the window ({:.1}x)",
        a.sample,
        a.block,
        c / r
    );
    Ok(())
}

/// `--bench`: ms per iteration, ours beside PyTorch's, alternating rounds, medians.
fn bench(model: &mut Model, dev: &Device, text: &Text, a: &Args) -> suanli::Result<()> {
    let n = a.bench;
    let data = windows(dev, text, Split::Train, n * a.batch, a, a.seed)?;
    let schedule = |step: u64| lr_at(a, step);
    let fit = |model: &mut Model| -> suanli::Result<f64> {
        let t0 = Instant::now();
        model.fit(
            &data,
            FitOptions {
                epochs: 1,
                batch_size: a.batch,
                shuffle: false,
                step_lr: Some(&schedule),
                ..Default::default()
            },
        )?;
        Ok(t0.elapsed().as_secs_f64() * 1e3 / n as f64)
    };
    fit(model)?; // compiles the kernels and tunes the matmuls
    let python = std::env::var("SUANLI_PEER_PYTHON").unwrap_or_else(|_| "python3".into());
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/benches/torch_gpt.py");
    let torch = |python: &str| -> Option<f64> {
        let it = n.to_string();
        let mut cmd = std::process::Command::new(python);
        cmd.arg(script).args([
            "--iters",
            &it,
            "--eval-interval",
            &it,
            "--eval-batches",
            "1",
        ]);
        cmd.args([
            "--batch-size",
            &a.batch.to_string(),
            "--block",
            &a.block.to_string(),
        ]);
        cmd.args([
            "--layers",
            &a.layers.to_string(),
            "--heads",
            &a.heads.to_string(),
        ]);
        cmd.args(["--width", &a.width.to_string(), "--threads", "2"]);
        let out = cmd.output().ok().filter(|o| o.status.success())?;
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        let last = text.lines().rfind(|l| l.contains("ms/iter"))?;
        last.split(", ").last()?.split(' ').next()?.parse().ok()
    };
    let (mut ours, mut theirs) = (Vec::new(), Vec::new());
    for round in 0..3 {
        ours.push(fit(model)?);
        if round == 0 || !theirs.is_empty() {
            match torch(&python) {
                Some(t) => theirs.push(t),
                None if round == 0 => println!(
                    "bench: {python} {script} did not run (is PyTorch installed? SUANLI_PEER_PYTHON names the interpreter): no side-by-side comparison"
                ),
                None => {}
            }
        }
        println!(
            "bench round {}: suanli {:.1} ms/iter{}",
            round + 1,
            ours[round],
            theirs.get(round).map_or(String::new(), |t| format!(
                ", PyTorch CPU (2 threads) {t:.1} ms/iter"
            ))
        );
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let o = median(&mut ours);
    if theirs.is_empty() {
        println!("bench: suanli median {o:.1} ms/iter on {}", dev.info().name);
    } else {
        let t = median(&mut theirs);
        println!(
            "bench: suanli median {o:.1} ms/iter on {} | PyTorch CPU (2 threads) {t:.1} ms/iter | suanli/PyTorch time ratio {:.2}",
            dev.info().name,
            o / t
        );
    }
    Ok(())
}

fn run(a: Args) -> suanli::Result<()> {
    let group = match &a.devices {
        Some(list) => Some(DeviceGroup::parse(list)?),
        None => None,
    };
    let dev = match &group {
        Some(g) => g.devices()[0].clone(),
        None => Device::open(&a.device)?,
    };
    let text = Text::open(&a.data)?;
    let vocab = text.tokenizer().vocab_size();
    let mut done = 0;
    let mut model = if let Some(p) = &a.resume {
        // Weights, optimizer state and step count; the windows of the remaining intervals
        // are drawn from the same seeds as in the first run.
        let (m, ck) = Model::load_checkpoint(&dev, p)?;
        done = ck.step as usize;
        println!("resumed {} at iteration {done}", p.display());
        m
    } else {
        let mut m = match &a.load {
            Some(p) => {
                let m = Model::load(&dev, p)?;
                println!("loaded {}", p.display());
                m
            }
            None => gpt(&dev, &a, vocab)?,
        };
        m.compile(
            Optimizer::AdamW {
                lr: a.lr,
                weight_decay: 0.1,
                beta1: 0.9,
                beta2: 0.99,
                eps: 1e-8,
            },
            Loss::SparseCategoricalCrossentropy,
        )?;
        m.set_weight_decay_filter(DecayFilter::MatricesOnly)?;
        m.set_gradient_clipping(Clip::global_norm(1.0))?;
        m
    };
    println!(
        "GPT ({} layers, {} heads, width {}, block {}) on {}: vocabulary {vocab}, {} training and {} validation characters, {} parameters",
        a.layers,
        a.heads,
        a.width,
        a.block,
        group.as_ref().map_or(dev.info().name.clone(), |g| g
            .devices()
            .iter()
            .map(|d| d.info().name.clone())
            .collect::<Vec<_>>()
            .join(" + ")),
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
    if a.bench > 0 {
        return bench(&mut model, &dev, &text, &a);
    }
    let iters = if a.load.is_some() { 0 } else { a.iters };
    while done < iters {
        let steps = a.eval_interval.min(iters - done);
        let opts = FitOptions {
            epochs: 1,
            batch_size: a.batch,
            shuffle: false,
            seed: a.seed + done as u64,
            step_lr: Some(&schedule),
            ..Default::default()
        };
        let t0 = Instant::now();
        let loss = match &group {
            None => {
                let train = windows(&dev, &text, Split::Train, steps * a.batch, &a, opts.seed)?;
                model.fit(&train, opts)?.loss[0]
            }
            Some(g) => {
                // The same windows on every device; each computes its share of each batch.
                let sets = g
                    .devices()
                    .iter()
                    .map(|d| windows(d, &text, Split::Train, steps * a.batch, &a, opts.seed))
                    .collect::<suanli::Result<Vec<_>>>()?;
                let p = model.fit_parallel(g, &sets, opts, &ParallelOptions::default())?;
                p.history.loss[0]
            }
        };
        let secs = t0.elapsed().as_secs_f64();
        done += steps;
        let v = model.evaluate(&val, a.batch)?;
        if let Some(p) = &a.checkpoint {
            model.save_checkpoint(p, done / a.eval_interval, a.seed, &Default::default())?;
        }
        println!(
            "iter {done:>5}: train loss {loss:.4}, val loss {:.4}, {:.0} tokens/s, {:.1} ms/iter",
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
        sample(&model, &text, &a)?;
    }
    if a.bench_generate && a.sample > 0 {
        bench_generate(&model, &text, &a)?;
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
