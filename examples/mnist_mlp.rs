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
//! (continue from a checkpoint, and keep checkpointing to it), --load PATH (start from the weights
//! of a model file saved by Rust or Python; with --epochs 0 only evaluate them), --train-rows N (train on the
//! first N images only; for quick tries), --devices LIST (data-parallel over several devices:
//! `gpu:0,gpu:1`, `all`, or `cpu,cpu` to try it on the software adapter; prints each device's
//! share and throughput per epoch), --bucket-kb N (gradient bucket size for --devices and --mpi;
//! default 25600, PyTorch DDP's 25 MB).
//!
//! Several processes (cargo feature `mpi`):
//! ```text
//! cargo build --release --features mpi --example mnist_mlp
//! mpirun -n 2 target/release/examples/mnist_mlp --mpi --epochs 2 --batch-size 128
//! ```
//! --mpi trains one model across the processes of the MPI job (each on its local GPU, or
//! --device/--devices); rank 0 prints. Fault tests: --fault-rank R --fault-step N --fault
//! error|exit|kill|hang|panic makes rank R fail that way around step N; --save-every-rank
//! writes each rank's weights to PATH.rankR (with --save).

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
    load: Option<PathBuf>,
    train_rows: Option<usize>,
    devices: Option<String>,
    bucket_kb: usize,
    mpi: bool,
    fault: Option<(usize, u64, String)>,
    save_every_rank: bool,
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
        load: None,
        train_rows: None,
        devices: None,
        bucket_kb: 25 * 1024,
        mpi: false,
        fault: None,
        save_every_rank: false,
    };
    let (mut fault_rank, mut fault_step, mut fault_kind) = (None, None, None);
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
            "--load" => a.load = Some(PathBuf::from(value("--load")?)),
            "--devices" => a.devices = Some(value("--devices")?),
            "--train-rows" => a.train_rows = Some(value("--train-rows")?.parse().map_err(|e| format!("--train-rows: {e}"))?),
            "--bucket-kb" => a.bucket_kb = value("--bucket-kb")?.parse().map_err(|e| format!("--bucket-kb: {e}"))?,
            "--mpi" => a.mpi = true,
            "--fault-rank" => fault_rank = Some(value("--fault-rank")?.parse::<usize>().map_err(|e| format!("--fault-rank: {e}"))?),
            "--fault-step" => fault_step = Some(value("--fault-step")?.parse::<u64>().map_err(|e| format!("--fault-step: {e}"))?),
            "--fault" => fault_kind = Some(value("--fault")?),
            "--save-every-rank" => a.save_every_rank = true,
            "-h" | "--help" => {
                return Err("usage: mnist_mlp [--epochs N] [--batch-size N] [--lr X] [--device SPEC] [--seed N] [--save PATH] [--quiet] [--bench] [--no-torch] [--profile] [--checkpoint PATH] [--resume PATH] [--load PATH] [--train-rows N] [--devices LIST] [--bucket-kb N] [--mpi [--fault-rank R --fault-step N --fault error|exit|kill|hang|panic] [--save-every-rank]]".into())
            }
            other => return Err(format!("unknown flag {other:?} (try --help)")),
        }
    }
    if a.load.is_some() && a.resume.is_some() {
        return Err("--load and --resume exclude each other".into());
    }
    match (fault_rank, fault_step, fault_kind) {
        (None, None, None) => {}
        (Some(r), Some(n), Some(k))
            if ["error", "exit", "kill", "hang", "panic"].contains(&k.as_str()) =>
        {
            a.fault = Some((r, n, k))
        }
        _ => {
            return Err(
                "--fault-rank, --fault-step and --fault (error|exit|kill|hang|panic) go together"
                    .into(),
            )
        }
    }
    if a.mpi && !cfg!(feature = "mpi") {
        return Err(
            "--mpi needs the mpi feature: cargo build --release --features mpi --example mnist_mlp"
                .into(),
        );
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

/// Prints on rank 0 only (every rank when there is one).
macro_rules! say {
    ($root:expr, $($t:tt)*) => {
        if $root {
            println!($($t)*);
        }
    };
}

fn run(args: &Args) -> suanli::Result<()> {
    // ---- processes (MPI) ------------------------------------------------------------------
    #[cfg(feature = "mpi")]
    let mut mpi = if args.mpi {
        Some(suanli::multi::mpi::Mpi::init()?)
    } else {
        None
    };
    #[cfg(feature = "mpi")]
    let (rank, ranks) = {
        use suanli::multi::Exchange;
        mpi.as_ref().map_or((0, 1), |m| (m.rank(), m.ranks()))
    };
    #[cfg(not(feature = "mpi"))]
    let (rank, ranks) = (0usize, 1usize);
    let root = rank == 0;

    // ---- device ---------------------------------------------------------------------------
    #[cfg_attr(not(feature = "mpi"), allow(unused_mut))] // MPI may choose the device
    let mut group = match &args.devices {
        Some(list) => Some(suanli::DeviceGroup::parse(list)?),
        None => None,
    };
    #[cfg(feature = "mpi")]
    if let (Some(m), None) = (&mpi, &group) {
        // A rank drives its local GPU (or --device).
        let spec = (args.device != "auto").then_some(args.device.as_str());
        group = Some(suanli::DeviceGroup::from_devices(vec![m.device(spec)?])?);
    }
    let dev = match &group {
        Some(g) => g.devices()[0].clone(),
        None => Device::open(&args.device)?,
    };
    let info = dev.info();
    say!(
        root,
        "Device: {} ({}, {}, {})",
        dev.name(),
        info.kind,
        info.backend,
        info.driver_info
    );
    if !dev.is_gpu() {
        say!(root, "Note: this is a software adapter running on the CPU; a GPU driver makes this much faster.");
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
    say!(
        root,
        "MNIST: {} train / {} test images, loaded in {:.2}s",
        train.len(),
        test.len(),
        t.elapsed().as_secs_f64()
    );

    // ---- model (or a checkpoint to continue) -------------------------------------------------
    let (mut model, resume) = match (&args.resume, &args.load) {
        // Weights from a model file (or a checkpoint's weights), saved by Rust or Python;
        // `--epochs 0` evaluates them as they are.
        (None, Some(path)) => {
            let mut m = Sequential::load(&dev, path)?;
            m.compile(
                Optimizer::adam().with_lr(args.lr),
                Loss::SparseCategoricalCrossentropy,
            )?;
            say!(root, "Loaded {}", path.display());
            (m, None)
        }
        (Some(_), Some(_)) => unreachable!("parse_args refuses --load with --resume"),
        (None, None) => build(&dev, args)?,
        (Some(path), None) => {
            let (m, ck) = Sequential::load_checkpoint(&dev, path)?;
            say!(
                root,
                "Resuming from {} after epoch {} (seed {}, optimizer step {})",
                path.display(),
                ck.epoch,
                ck.seed,
                ck.step
            );
            (m, Some(ck))
        }
    };
    if !args.quiet && root {
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
    if !args.quiet && root {
        callbacks.push(&mut bar);
    }
    let mut fault = Fault {
        rank,
        fault: args.fault.clone(),
        steps: 0,
    };
    if args.fault.is_some() {
        callbacks.push(&mut fault);
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
    let history = if args.epochs == 0 {
        suanli::nn::History::default()
    } else if let Some(g) = &group {
        // Data-parallel: the training set on every device, the model replicated.
        say!(
            root,
            "Data-parallel over {} process(es) × {} device(s): {}",
            ranks,
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
        let popts = ParallelOptions {
            bucket_bytes: args.bucket_kb * 1024,
            fail_at_step: match &args.fault {
                Some((r, n, k)) if *r == rank && k == "error" => Some(*n),
                _ => None,
            },
            ..Default::default()
        };
        #[cfg(feature = "mpi")]
        let p = match mpi.as_mut() {
            Some(m) => model.fit_distributed(g, &sets, options, &popts, m)?,
            None => model.fit_parallel(g, &sets, options, &popts)?,
        };
        #[cfg(not(feature = "mpi"))]
        let p = model.fit_parallel(g, &sets, options, &popts)?;
        if let (Some(x), Some(tp)) = (p.exchange.last(), p.rank_throughput.last()) {
            say!(
                root,
                "Exchange (last epoch): {} bucket(s) a step; {:.1} KB sent per step by each rank; {:.1} KB per step between host and devices; {:.2} ms per step combining, {:.0}% of it hidden behind the backward pass",
                x.buckets,
                x.bytes_sent_per_step / 1e3,
                x.host_bytes_per_step / 1e3,
                x.seconds_per_step * 1e3,
                100.0 * x.hidden
            );
            if ranks > 1 {
                say!(
                    root,
                    "Per-rank throughput (last epoch): {}; replicas identical on every rank at every epoch end (weight hashes)",
                    tp.iter()
                        .enumerate()
                        .map(|(r, v)| format!("rank {r} {:.1}k samples/s", v / 1e3))
                        .collect::<Vec<_>>()
                        .join(", ")
                );
            } else {
                say!(
                    root,
                    "Replicas bit-identical on every device at every epoch end"
                );
            }
        }
        p.history
    } else {
        model.fit(&train, options)?
    };
    let total = t.elapsed().as_secs_f64();
    if args.profile {
        dev.set_profiling(false);
        let p = dev.profile();
        say!(
            root,
            "Top kernels by GPU time (profiler on: submissions serialised):\n{}",
            p.table(12)
        );
        let last = history.epoch_seconds.len() - 1;
        say!(
            root,
            "Utilisation: last epoch's queue busy {:.0}% of {:.2}s; kernels ran {:.2}s of {:.2}s training wall ({:.0}%)",
            100.0 * history.utilisation[last],
            history.epoch_seconds[last],
            p.total_ns() / 1e9,
            total,
            100.0 * p.total_ns() / 1e9 / total,
        );
        let m = dev.memory_stats();
        say!(
            root,
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
        say!(
            root,
            "Chrome trace written to trace.json (chrome://tracing or ui.perfetto.dev)"
        );
    }

    // ---- results ----------------------------------------------------------------------------
    if let (true, Some(path)) = (args.save_every_rank, &args.save) {
        let mine = format!("{}.rank{rank}", path.display());
        model.save(std::path::Path::new(&mine))?;
    }
    if !root {
        return Ok(());
    }
    let eval = model.evaluate(&test, 1000)?;
    say!(
        root,
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
        say!(root, "bench:");
        say!(root, "  {:<28} {:>12}", "batch size", args.batch_size);
        say!(
            root,
            "  {:<28} {:>11.2}s",
            "first epoch",
            history.epoch_seconds[0]
        );
        say!(
            root,
            "  {:<28} {:>11.2}s",
            format!("median epoch (2..{})", args.epochs),
            median
        );
        say!(
            root,
            "  {:<28} {:>10.1}µs",
            "per step",
            median / steps as f64 * 1e6
        );
        say!(
            root,
            "  {:<28} {:>10.1}k/s",
            "samples per second",
            train.len() as f64 / median / 1e3
        );
        say!(
            root,
            "  {:<28} {:>10.1}MB",
            "pool peak",
            m.peak_in_use as f64 / 1e6
        );
        say!(root, "  {:<28} {:>12}", "pool allocations", m.allocations);
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
    say!(
        root,
        "First test digits: predicted {:?}, labels {:?}",
        classes,
        &mnist.test_labels[..8]
    );
    if let Some(path) = &args.save {
        model.save(path)?;
        say!(root, "Weights written to {}", path.display());
    }
    Ok(())
}

/// The fault tests' trigger: on rank `fault.0`, once optimizer step `fault.1` has passed, the
/// process fails the way `fault.2` says (`error` is injected inside training instead, through
/// `ParallelOptions::fail_at_step`).
struct Fault {
    rank: usize,
    fault: Option<(usize, u64, String)>,
    steps: u64,
}

impl suanli::nn::Callback for Fault {
    fn on_epoch_begin(&mut self, e: &suanli::nn::EpochBegin) {
        self.steps = (e.epoch * e.steps) as u64;
    }

    fn on_progress(&mut self, p: &suanli::nn::Progress) -> bool {
        let Some((r, n, kind)) = &self.fault else {
            return true;
        };
        if *r != self.rank || self.steps + (p.step as u64) < *n {
            return true;
        }
        eprintln!(
            "rank {r}: injected fault '{kind}' at step {}",
            self.steps + p.step as u64
        );
        match kind.as_str() {
            "exit" => std::process::exit(3),
            "kill" => {
                let pid = std::process::id().to_string();
                let _ = std::process::Command::new("kill")
                    .args(["-9", &pid])
                    .status();
                std::thread::sleep(std::time::Duration::from_secs(60));
            }
            "hang" => loop {
                std::thread::sleep(std::time::Duration::from_secs(3600));
            },
            "panic" => panic!("injected panic on rank {r}"),
            _ => {}
        }
        true
    }
}

/// The model of the example: 784-128-64-10, ReLU, softmax, Adam.
fn build(
    dev: &Device,
    args: &Args,
) -> suanli::Result<(Sequential, Option<suanli::nn::Checkpoint>)> {
    let mut m = Sequential::with_seed(dev, args.seed);
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
    Ok((m, None))
}
