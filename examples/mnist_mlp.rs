//! The headline: a 784-128-64-10 MLP (ReLU, softmax) trained with Adam and sparse categorical
//! cross-entropy on real MNIST, entirely on the GPU (or lavapipe).
//!
//! ```text
//! cargo run --release --example mnist_mlp
//! cargo run --release --example mnist_mlp -- --epochs 3 --batch-size 128 --device cpu --save model.safetensors
//! cargo run --release --example mnist_mlp -- --bench --epochs 4     # median epoch time over epochs 2..N
//! cargo run --release --example mnist_mlp -- --checkpoint run.ckpt    # checkpoint every epoch
//! cargo run --release --example mnist_mlp -- --resume run.ckpt        # continue to --epochs
//! ```
//! Flags: --epochs N (10), --batch-size N (32), --lr X (0.001), --device SPEC (auto),
//! --seed N (0), --save PATH, --quiet, --bench (--no-torch: without the PyTorch comparison), --profile (per-kernel GPU time after training;
//! it waits for every submission, so epochs run slower while it is on), --checkpoint PATH
//! (weights, optimizer state, epoch and seed after every epoch, atomically), --resume PATH
//! (continue from a checkpoint, and keep checkpointing to it), --train-rows N (train on the
//! first N images only; for quick tries), --devices LIST (data-parallel over several devices:
//! `gpu:0,gpu:1`, `all`, or `cpu,cpu` to try it on the software adapter; prints each device's
//! share and throughput per epoch).

use std::path::PathBuf;
use std::time::Instant;

use suanli::data::{Dataset, Mnist};
use suanli::multi::ParallelOptions;
use suanli::nn::{Dense, FitOptions, Loss, Optimizer, ProgressBar, Sequential};
use suanli::{Activation, Device, Tensor};

// ---- command line -----------------------------------------------------------------------
struct Args {
    epochs: usize,
    batch_size: usize,
    lr: f64,
    device: String,
    seed: u64,
    save: Option<PathBuf>,
    quiet: bool,
    bench: bool,
    no_torch: bool,
    profile: bool,
    checkpoint: Option<PathBuf>,
    resume: Option<PathBuf>,
    train_rows: Option<usize>,
    devices: Option<String>,
}

fn parse_args() -> Result<Args, String> {
    let mut a = Args {
        epochs: 10,
        batch_size: 32,
        lr: 1e-3,
        device: "auto".into(),
        seed: 0,
        save: None,
        quiet: false,
        bench: false,
        no_torch: false,
        profile: false,
        checkpoint: None,
        resume: None,
        train_rows: None,
        devices: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = |name: &str| it.next().ok_or(format!("{name} needs a value"));
        match flag.as_str() {
            "--epochs" => a.epochs = value("--epochs")?.parse().map_err(|e| format!("--epochs: {e}"))?,
            "--batch-size" => a.batch_size = value("--batch-size")?.parse().map_err(|e| format!("--batch-size: {e}"))?,
            "--lr" => a.lr = value("--lr")?.parse().map_err(|e| format!("--lr: {e}"))?,
            "--device" => a.device = value("--device")?,
            "--seed" => a.seed = value("--seed")?.parse().map_err(|e| format!("--seed: {e}"))?,
            "--save" => a.save = Some(PathBuf::from(value("--save")?)),
            "--quiet" => a.quiet = true,
            "--bench" => a.bench = true,
            "--no-torch" => a.no_torch = true,
            "--profile" => a.profile = true,
            "--checkpoint" => a.checkpoint = Some(PathBuf::from(value("--checkpoint")?)),
            "--resume" => a.resume = Some(PathBuf::from(value("--resume")?)),
            "--devices" => a.devices = Some(value("--devices")?),
            "--train-rows" => a.train_rows = Some(value("--train-rows")?.parse().map_err(|e| format!("--train-rows: {e}"))?),
            "-h" | "--help" => {
                return Err("usage: mnist_mlp [--epochs N] [--batch-size N] [--lr X] [--device SPEC] [--seed N] [--save PATH] [--quiet] [--bench] [--no-torch] [--profile] [--checkpoint PATH] [--resume PATH] [--train-rows N] [--devices LIST]".into())
            }
            other => return Err(format!("unknown flag {other:?} (try --help)")),
        }
    }
    Ok(a)
}

fn main() {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    if let Err(e) = run(&args) {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

/// Runs the same model in PyTorch on the CPU (2 threads) when `import torch` works, and prints
/// the ratio of median epoch times, measured back to back.
fn compare_with_pytorch(args: &Args, ours: f64) {
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/torch_mnist.py");
    let has_torch = std::process::Command::new("python3")
        .args(["-c", "import torch"])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if !has_torch {
        println!("bench: PyTorch not importable here (python3 -c 'import torch' failed): no side-by-side comparison");
        return;
    }
    let out = std::process::Command::new("python3")
        .arg(&script)
        .args([
            "--epochs",
            &args.epochs.to_string(),
            "--batch-size",
            &args.batch_size.to_string(),
            "--threads",
            "2",
        ])
        .output();
    let text = match out {
        Ok(o) if o.status.success() => String::from_utf8_lossy(&o.stdout).to_string(),
        Ok(o) => {
            println!(
                "bench: the PyTorch run failed: {}",
                String::from_utf8_lossy(&o.stderr)
                    .lines()
                    .last()
                    .unwrap_or("")
            );
            return;
        }
        Err(e) => {
            println!("bench: could not run python3: {e}");
            return;
        }
    };
    let last = text.lines().last().unwrap_or("");
    let mut it = last.split_whitespace();
    match (it.next(), it.next().and_then(|v| v.parse::<f64>().ok()), it.nth(1)) {
        (Some("median_epoch_s"), Some(torch), acc) => println!(
            "bench: PyTorch (same model, batch, epochs) CPU (2 threads) median epoch {:.2}s (test accuracy {}) | suanli {:.2}s | suanli/PyTorch time ratio {:.2}",
            torch,
            acc.unwrap_or("?"),
            ours,
            ours / torch
        ),
        _ => println!("bench: unexpected PyTorch output: {last}"),
    }
}

fn run(args: &Args) -> suanli::Result<()> {
    // ---- device ---------------------------------------------------------------------------
    let group = match &args.devices {
        Some(list) => Some(suanli::DeviceGroup::parse(list)?),
        None => None,
    };
    let dev = match &group {
        Some(g) => g.devices()[0].clone(),
        None => Device::open(&args.device)?,
    };
    let info = dev.info();
    println!(
        "Device: {} ({}, {}, {})",
        dev.name(),
        info.kind,
        info.backend,
        info.driver_info
    );
    if !dev.is_gpu() {
        println!("Note: this is a software adapter running on the CPU; a GPU driver makes this much faster.");
    }

    // ---- data: uploaded once, u8 pixels scaled on the device --------------------------------
    let t = Instant::now();
    let mnist = Mnist::load()?;
    let rows = args
        .train_rows
        .unwrap_or(mnist.train_labels.len())
        .min(mnist.train_labels.len());
    let upload_train = |d: &Device| {
        Dataset::from_u8(
            d,
            &mnist.train_images[..rows * 784],
            784,
            1.0 / 255.0,
            &mnist.train_labels[..rows],
        )
    };
    let train = upload_train(&dev)?;
    let test = Dataset::from_u8(
        &dev,
        &mnist.test_images,
        784,
        1.0 / 255.0,
        &mnist.test_labels,
    )?;
    println!(
        "MNIST: {} train / {} test images, loaded in {:.2}s",
        train.len(),
        test.len(),
        t.elapsed().as_secs_f64()
    );

    // ---- model (or a checkpoint to continue) -------------------------------------------------
    let (mut model, resume) = match &args.resume {
        Some(path) => {
            let (m, ck) = Sequential::load_checkpoint(&dev, path)?;
            println!(
                "Resuming from {} after epoch {} (seed {}, optimizer step {})",
                path.display(),
                ck.epoch,
                ck.seed,
                ck.step
            );
            (m, Some(ck))
        }
        None => {
            let mut m = Sequential::with_seed(&dev, args.seed);
            m.add(Dense::new(128, Activation::Relu).input_dim(784))?;
            m.add(Dense::new(64, Activation::Relu))?;
            m.add(Dense::new(10, Activation::Softmax))?;
            m.compile(
                Optimizer::Adam {
                    lr: args.lr,
                    beta1: 0.9,
                    beta2: 0.999,
                    eps: 1e-7,
                },
                Loss::SparseCategoricalCrossentropy,
            )?;
            (m, None)
        }
    };
    if !args.quiet {
        print!("{}", model.summary());
    }

    // ---- training ---------------------------------------------------------------------------
    if args.profile {
        dev.set_profiling(true);
    }
    // Telemetry each epoch (RUST_LOG=info shows it; throttling, heat and idle epochs warn).
    let mut watch = suanli::telemetry::DeviceWatch::new(&dev);
    let mut on_epoch = |epoch: usize, h: &suanli::nn::History| {
        watch.epoch_end(epoch, h.utilisation.last().copied());
        true
    };
    // Keras-style progress: a live bar on the terminal and a line per epoch.
    let mut bar = ProgressBar::stdout();
    let mut callbacks: Vec<&mut dyn suanli::nn::Callback> = Vec::new();
    if !args.quiet {
        callbacks.push(&mut bar);
    }
    // Resuming keeps checkpointing to the same file unless told otherwise.
    let checkpoint = args.checkpoint.clone().or(args.resume.clone());
    let options = FitOptions {
        epochs: args.epochs,
        batch_size: args.batch_size,
        seed: args.seed,
        validation_data: Some(&test),
        on_epoch_end: Some(&mut on_epoch),
        callbacks,
        checkpoint: checkpoint.as_deref(),
        resume: resume.as_ref(),
        ..Default::default()
    };
    let t = Instant::now();
    let history = if let Some(g) = &group {
        // Data-parallel: the training set on every device, the model replicated.
        println!(
            "Data-parallel over {} devices: {}",
            g.len(),
            g.devices()
                .iter()
                .map(|d| format!("{} (id {})", d.name(), d.id()))
                .collect::<Vec<_>>()
                .join(", ")
        );
        let sets = g
            .devices()
            .iter()
            .map(upload_train)
            .collect::<suanli::Result<Vec<_>>>()?;
        let p = model.fit_parallel(g, &sets, options, &ParallelOptions::default())?;
        println!(
            "Gradients moved through the host: {:.1} KB per step per device; replicas bit-identical at every epoch end",
            p.bytes_per_step as f64 / 1e3,
        );
        p.history
    } else {
        model.fit(&train, options)?
    };
    let total = t.elapsed().as_secs_f64();
    if args.profile {
        dev.set_profiling(false);
        let p = dev.profile();
        println!(
            "Top kernels by GPU time (profiler on: submissions serialised):\n{}",
            p.table(12)
        );
        let last = history.epoch_seconds.len() - 1;
        println!(
            "Utilisation: last epoch's queue busy {:.0}% of {:.2}s; kernels ran {:.2}s of {:.2}s training wall ({:.0}%)",
            100.0 * history.utilisation[last],
            history.epoch_seconds[last],
            p.total_ns() / 1e9,
            total,
            100.0 * p.total_ns() / 1e9 / total,
        );
        let m = dev.memory_stats();
        println!(
            "Memory: peak pool {:.1} MB; in use {:.1} MB ({}){}",
            m.peak_in_use as f64 / 1e6,
            m.in_use as f64 / 1e6,
            m.breakdown(),
            dev.driver_memory().map_or(String::new(), |d| format!(
                "; driver allocator {:.1} MB in {} allocations, {:.1} MB reserved in {} blocks",
                d.allocated as f64 / 1e6,
                d.allocations,
                d.reserved as f64 / 1e6,
                d.blocks
            ))
        );
        dev.write_chrome_trace(std::path::Path::new("trace.json"))?;
        println!("Chrome trace written to trace.json (chrome://tracing or ui.perfetto.dev)");
    }

    // ---- results ----------------------------------------------------------------------------
    let eval = model.evaluate(&test, 1000)?;
    println!(
        "Test accuracy: {:.4} (loss {:.4}) after {} epochs in {:.1}s",
        eval.accuracy.unwrap_or(f64::NAN),
        eval.loss,
        args.epochs,
        total
    );
    if args.bench {
        let mut e: Vec<f64> = history.epoch_seconds.iter().skip(1).copied().collect();
        if e.is_empty() {
            e = history.epoch_seconds.clone();
        }
        e.sort_by(f64::total_cmp);
        let median = e[e.len() / 2];
        let m = dev.memory_stats();
        let steps = train.len().div_ceil(args.batch_size);
        println!("bench:");
        println!("  {:<28} {:>12}", "batch size", args.batch_size);
        println!(
            "  {:<28} {:>11.2}s",
            "first epoch", history.epoch_seconds[0]
        );
        println!(
            "  {:<28} {:>11.2}s",
            format!("median epoch (2..{})", args.epochs),
            median
        );
        println!(
            "  {:<28} {:>10.1}µs",
            "per step",
            median / steps as f64 * 1e6
        );
        println!(
            "  {:<28} {:>10.1}k/s",
            "samples per second",
            train.len() as f64 / median / 1e3
        );
        println!(
            "  {:<28} {:>10.1}MB",
            "pool peak",
            m.peak_in_use as f64 / 1e6
        );
        println!("  {:<28} {:>12}", "pool allocations", m.allocations);
        if !args.no_torch {
            compare_with_pytorch(args, median);
        }
    }
    // A sanity check through the plain predict path on a few test images.
    let x: Vec<f32> = mnist.test_images[..784 * 8]
        .iter()
        .map(|&p| p as f32 / 255.0)
        .collect();
    let classes = model.predict_classes(&Tensor::from_slice(&dev, &x, &[8, 784])?)?;
    println!(
        "First test digits: predicted {:?}, labels {:?}",
        classes,
        &mnist.test_labels[..8]
    );
    if let Some(path) = &args.save {
        model.save(path)?;
        println!("Weights written to {}", path.display());
    }
    Ok(())
}
