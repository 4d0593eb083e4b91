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
//! residual branches, the embeddings and the attention probabilities, as nanoGPT), 5000
//! iterations. Flags: --iters N, --eval-interval N (250), --eval-batches N (200), --batch-size
//! N, --block N, --layers N, --heads N, --width N, --dropout X, --lr X, --seed N (1337),
//! --device SPEC (auto), --sample N (500 characters; 0 for none), --temperature X (0.8),
//! --top-k N (40), --save PATH, --load PATH (a saved model instead of training), --data PATH
//! (data/tinyshakespeare/input.txt), --precision float32|mixed_float16 (float16 operands with
//! loss scaling), --init nanogpt|keras (nanogpt: N(0, 0.02) weights, the
//! residual projections scaled by 1/√(2·layers), LayerNorm ε 1e-5, as benches/torch_gpt.py;
//! keras: Keras's initializers and ε 1e-3), --profile (per-kernel GPU time after training;
//! the pooled memory's peak is printed after every run), --bench-generate (generation's
//! tokens per second with the KV cache and by recomputing the window, alternating, 3 rounds
//! each, medians), --checkpoint PATH (weights, optimizer state and step after every interval,
//! atomically), --resume PATH (continue such a
//! run: the remaining intervals draw the same windows, so the result is the uninterrupted
//! run's), --devices LIST (data-parallel over several devices, `gpu:0,gpu:1`; each computes
//! its share of every batch), --mpi (one model across the processes of an MPI job, cargo
//! feature `mpi`; see below), --bench (instead of training: ms per iteration beside
//! benches/torch_gpt.py's, the same recipe in PyTorch on the CPU with 2 threads, run by
//! `$SUANLI_PEER_PYTHON` or `python3`; 3 alternating rounds of --bench-iters N (50)
//! iterations, medians and their ratio).
//!
//! Every `--eval-interval` iterations it prints the mean training loss of those iterations,
//! the validation loss on `--eval-batches` fixed random windows, and tokens per second. The
//! windows are drawn on the device (`Text::device_windows`): each split is uploaded once,
//! and each step's batch is one dispatch that draws every row's window from the seed, the
//! optimizer step and the row, so a step costs the host nothing. The sample is
//! `Model::generate` after a newline, printed as it streams: one token per step, drawn on
//! the device, with earlier positions' keys and values cached on the device.
//!
//! Several processes (cargo feature `mpi`):
//! ```text
//! cargo build --release --features mpi --example shakespeare_gpt
//! mpirun -n 2 target/release/examples/shakespeare_gpt --mpi --iters 200 --eval-interval 50
//! ```
//! --mpi trains one model across the processes (each on its local GPU, or --device/--devices),
//! as `mnist_mlp --mpi` does: --batch-size is the global batch, each process trains its
//! consecutive rows of it, and the gradients are averaged over all of them. A row's window
//! is drawn from its number in the batch, so the processes draw different windows from the
//! one seed and together train the windows one process would. Rank 0 prints, checkpoints,
//! saves and samples.

#[path = "gpt/args.rs"]
mod args;
#[path = "gpt/bench.rs"]
mod bench;

use std::io::Write;
use std::time::Instant;

use args::Args;
use suanli::data::{Dataset, Split, Text};
use suanli::multi::{DeviceGroup, ParallelOptions};
use suanli::nn::{
    Add, Call, Clip, DecayFilter, Dense, Dropout, Embedding, FitOptions, GenerateOptions, Input,
    LayerNormalization, Loss, Model, MultiHeadAttention, Optimizer, Share, SymbolicTensor,
};
use suanli::Device;

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
        // nanoGPT drops attention probabilities too (attn_dropout), at the same rate.
        let att = MultiHeadAttention::new(a.heads, e / a.heads)
            .causal(true)
            .use_bias(false)
            .dropout(a.dropout)
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

/// `count` windows of `split` drawn on `dev` from `seed` (`Text::device_windows`: the split
/// uploaded once, each step's windows drawn by the device from the seed, the optimizer step
/// and the row), with the position ids the model's second input reads.
fn windows(
    dev: &Device,
    text: &Text,
    split: Split,
    count: usize,
    a: &Args,
    seed: u64,
) -> suanli::Result<Dataset> {
    let positions: Vec<u32> = (0..count).flat_map(|_| 0..a.block as u32).collect();
    text.device_windows(dev, split, count, a.block, seed)?
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

/// This process among the MPI job's (rank 0 of 1 without `--mpi`), and its devices.
struct World {
    root: bool,
    dev: Device,
    group: Option<DeviceGroup>,
    #[cfg(feature = "mpi")]
    mpi: Option<suanli::multi::mpi::Mpi>,
}

/// Joins the MPI job (with `--mpi`) and opens the devices.
fn world(a: &Args) -> suanli::Result<World> {
    #[cfg(feature = "mpi")]
    let mpi = match a.mpi {
        true => Some(suanli::multi::mpi::Mpi::init()?),
        false => None,
    };
    #[cfg_attr(not(feature = "mpi"), allow(unused_mut))] // MPI may choose the device
    let mut group = match &a.devices {
        Some(list) => Some(DeviceGroup::parse(list)?),
        None => None,
    };
    #[cfg(feature = "mpi")]
    let root = {
        use suanli::multi::Exchange;
        if let (Some(m), None) = (&mpi, &group) {
            // A rank drives its local GPU (or --device).
            let spec = (a.device != "auto").then_some(a.device.as_str());
            group = Some(DeviceGroup::from_devices(vec![m.device(spec)?])?);
        }
        mpi.as_ref().is_none_or(|m| m.rank() == 0)
    };
    #[cfg(not(feature = "mpi"))]
    let root = true;
    let dev = match &group {
        Some(g) => g.devices()[0].clone(),
        None => Device::open(&a.device)?,
    };
    Ok(World {
        root,
        dev,
        group,
        #[cfg(feature = "mpi")]
        mpi,
    })
}

/// Prints on rank 0 only.
macro_rules! say {
    ($w:expr, $($t:tt)*) => {
        if $w.root {
            println!($($t)*);
        }
    };
}

/// One interval of `opts.batch_size`-row steps on the training windows of every device
/// (`sets`: one per device of the group, or the one device's); its mean training loss.
fn train(
    w: &mut World,
    model: &mut Model,
    sets: &[Dataset],
    opts: FitOptions<'_>,
) -> suanli::Result<f64> {
    let Some(g) = &w.group else {
        return Ok(model.fit(&sets[0], opts)?.loss[0]);
    };
    // Each device computes its share of each batch (and each process its slice of it).
    let popts = ParallelOptions::default();
    #[cfg(feature = "mpi")]
    if let Some(m) = w.mpi.as_mut() {
        return Ok(model
            .fit_distributed(g, sets, opts, &popts, m)?
            .history
            .loss[0]);
    }
    Ok(model.fit_parallel(g, sets, opts, &popts)?.history.loss[0])
}

fn run(a: Args) -> suanli::Result<()> {
    let mut w = world(&a)?;
    let dev = w.dev.clone();
    let text = Text::open(&a.data)?;
    let vocab = text.tokenizer().vocab_size();
    let mut done = 0;
    let mut model = if let Some(p) = &a.resume {
        // Weights, optimizer state and step count; the remaining steps draw the windows the
        // first run would have (they follow from the seed and the step).
        let (m, ck) = Model::load_checkpoint(&dev, p)?;
        done = ck.step as usize;
        say!(w, "resumed {} at iteration {done}", p.display());
        m
    } else {
        let mut m = match &a.load {
            Some(p) => {
                let m = Model::load(&dev, p)?;
                say!(w, "loaded {}", p.display());
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
    model.set_precision_policy(a.precision);
    say!(
        w,
        "GPT ({} layers, {} heads, width {}, block {}) on {}: vocabulary {vocab}, {} training and {} validation characters, {} parameters",
        a.layers,
        a.heads,
        a.width,
        a.block,
        w.group.as_ref().map_or(dev.info().name.clone(), |g| g
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
        return bench::bench(&mut model, &dev, &text, &a);
    }
    let iters = if a.load.is_some() { 0 } else { a.iters };
    // The training windows of an interval's length on every device, made once (the last
    // interval may be shorter): every step draws new windows from the seed and its number.
    let devices = w
        .group
        .as_ref()
        .map_or(vec![dev.clone()], |g| g.devices().to_vec());
    let mut sets: Vec<(usize, Vec<Dataset>)> = Vec::new();
    while done < iters {
        let steps = a.eval_interval.min(iters - done);
        let t0 = Instant::now();
        if !sets.iter().any(|(n, _)| *n == steps) {
            let s = devices
                .iter()
                .map(|d| windows(d, &text, Split::Train, steps * a.batch, &a, a.seed))
                .collect::<suanli::Result<Vec<_>>>()?;
            sets.push((steps, s));
        }
        let opts = FitOptions {
            epochs: 1,
            batch_size: a.batch,
            shuffle: false,
            seed: a.seed + done as u64,
            step_lr: Some(&schedule),
            ..Default::default()
        };
        let set = &sets
            .iter()
            .find(|(n, _)| *n == steps)
            .expect("made above")
            .1;
        let loss = train(&mut w, &mut model, set, opts)?;
        let secs = t0.elapsed().as_secs_f64();
        done += steps;
        let v = model.evaluate(&val, a.batch)?;
        if let (Some(p), true) = (&a.checkpoint, w.root) {
            model.save_checkpoint(p, done / a.eval_interval, a.seed, &Default::default())?;
        }
        say!(
            w,
            "iter {done:>5}: train loss {loss:.4}, val loss {:.4}, {:.0} tokens/s, {:.1} ms/iter",
            v.loss,
            (steps * a.batch * a.block) as f64 / secs,
            secs * 1e3 / steps as f64
        );
    }
    if !w.root {
        return Ok(());
    }
    if a.profile {
        dev.set_profiling(false);
        println!(
            "Top kernels by GPU time (profiler on: submissions serialised):\n{}",
            dev.profile().table(12)
        );
    }
    // The pooled memory's peak, every run (the nanoGPT preset's figure comes from here).
    let m = dev.memory_stats();
    println!(
        "Memory: peak pool {:.1} MB ({})",
        m.peak_in_use as f64 / 1e6,
        m.breakdown()
    );
    if let Some(p) = &a.save {
        model.save(p)?;
        println!("saved {}", p.display());
    }
    if a.sample > 0 {
        sample(&model, &text, &a)?;
    }
    if a.bench_generate && a.sample > 0 {
        bench::bench_generate(&model, &text, &a)?;
    }
    Ok(())
}

fn main() {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    let a = match args::parse() {
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
