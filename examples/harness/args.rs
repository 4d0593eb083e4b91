//! The command line: every flag, its default, and the usage text `--help` prints.

use std::path::PathBuf;
use std::str::FromStr;

use super::Example;

/// What the command line asked for.
pub struct Args {
    /// Epochs to train (the total, with `--resume`); 0 only evaluates.
    pub epochs: usize,
    /// Samples per optimizer step (the global batch with `--devices` or `--mpi`).
    pub batch_size: usize,
    /// The optimizer's learning rate.
    pub lr: f64,
    /// The device: `auto`, `gpu`, `cpu`, `gpu:1`, ...
    pub device: String,
    /// Seed of the weights, the shuffle and dropout.
    pub seed: u64,
    /// Where to write the trained weights.
    pub save: Option<PathBuf>,
    /// No summary, no progress bar.
    pub quiet: bool,
    /// Print the bench table (and run the peers unless `no_torch`).
    pub bench: bool,
    /// `--bench` without the peers.
    pub no_torch: bool,
    /// Per-kernel GPU time, utilisation and memory after training.
    pub profile: bool,
    /// Checkpoint after every epoch to this file.
    pub checkpoint: Option<PathBuf>,
    /// Continue from this checkpoint.
    pub resume: Option<PathBuf>,
    /// Start from the weights of this model file.
    pub load: Option<PathBuf>,
    /// Train on the first N training images only.
    pub train_rows: Option<usize>,
    /// Clip gradients to this global norm (the unfused optimizer path).
    pub global_clipnorm: Option<f64>,
    /// The precision policy (`float32`, `mixed_float16`).
    pub precision: suanli::Precision,
    /// Data-parallel over these devices.
    pub devices: Option<String>,
    /// Gradient bucket size for `--devices` and `--mpi`, in KiB.
    pub bucket_kb: usize,
    /// Serve this process's training metrics for Prometheus here (feature `serve`).
    pub metrics_addr: Option<String>,
    /// One model across the processes of an MPI job.
    pub mpi: bool,
    /// Rank, step and kind of an injected fault.
    pub fault: Option<(usize, u64, String)>,
    /// With `save`: each rank's weights to `PATH.rankR`.
    pub save_every_rank: bool,
}

/// The ways `--fault` can fail a rank.
const FAULTS: [&str; 5] = ["error", "exit", "kill", "hang", "panic"];

/// The usage text: the example's description, then every flag with its default.
fn usage(ex: &Example) -> String {
    let d = &ex.defaults;
    let peers = ex.peers.iter().map(|p| p.0).collect::<Vec<_>>();
    format!(
        "{about}

usage: {name} [FLAGS]
  --epochs N           epochs to train; 0 only evaluates (default {epochs})
  --batch-size N       samples per step (default {batch})
  --lr X               learning rate (default {lr})
  --device SPEC        auto, gpu, cpu, gpu:1, ... (default auto)
  --seed N             seed of the weights, the shuffle and dropout (default 0)
  --train-rows N       train on the first N training images only
  --global-clipnorm X  clip gradients to global norm X (the unfused optimizer path)
  --precision P        float32 (default) or mixed_float16 (float16 operands, loss scaling)
  --quiet              no model summary, no progress bar
  --save PATH          write the trained weights (safetensors)
  --load PATH          start from a model file's weights (Rust or Python)
  --checkpoint PATH    checkpoint after every epoch (weights, optimizer, epoch, seed)
  --resume PATH        continue from a checkpoint up to --epochs, checkpointing to it
  --bench              first and median epoch, time per step, memory; then {peers}
  --no-torch           --bench without {peers}
  --profile            per-kernel GPU time, utilisation, memory, trace.json
  --devices LIST       data-parallel: gpu:0,gpu:1 | all | cpu,cpu
  --bucket-kb N        gradient bucket for --devices and --mpi (default 25600)
  --metrics-addr A     serve training metrics on http://A/metrics (built with --features serve)
  --mpi                one model across the processes of an MPI job (feature mpi)
  --fault-rank R --fault-step N --fault error|exit|kill|hang|panic
                       make rank R fail that way around step N (fault tests)
  --save-every-rank    with --save: each rank's weights to PATH.rankR",
        about = ex.about.trim_end(),
        name = ex.name,
        epochs = d.epochs,
        batch = d.batch_size,
        lr = d.lr,
        peers = if peers.is_empty() {
            "nothing".to_string()
        } else {
            peers.join(" and ")
        },
    )
}

/// Parses the flags after the program's name; the error is the message to print.
pub fn parse(ex: &Example, argv: impl Iterator<Item = String>) -> Result<Args, String> {
    let mut a = Args {
        epochs: ex.defaults.epochs,
        batch_size: ex.defaults.batch_size,
        lr: ex.defaults.lr,
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
        global_clipnorm: None,
        precision: suanli::Precision::Float32,
        devices: None,
        bucket_kb: 25 * 1024,
        metrics_addr: None,
        mpi: false,
        fault: None,
        save_every_rank: false,
    };
    let (mut fault_rank, mut fault_step, mut fault_kind) = (None, None, None);
    let mut it = argv;
    while let Some(flag) = it.next() {
        let f = flag.as_str();
        let mut text = || it.next().ok_or(format!("{f} needs a value"));
        match f {
            "--epochs" => a.epochs = number(f, text()?)?,
            "--batch-size" => a.batch_size = number(f, text()?)?,
            "--lr" => a.lr = number(f, text()?)?,
            "--device" => a.device = text()?,
            "--seed" => a.seed = number(f, text()?)?,
            "--save" => a.save = Some(PathBuf::from(text()?)),
            "--quiet" => a.quiet = true,
            "--bench" => a.bench = true,
            "--no-torch" => a.no_torch = true,
            "--profile" => a.profile = true,
            "--checkpoint" => a.checkpoint = Some(PathBuf::from(text()?)),
            "--resume" => a.resume = Some(PathBuf::from(text()?)),
            "--load" => a.load = Some(PathBuf::from(text()?)),
            "--devices" => a.devices = Some(text()?),
            "--train-rows" => a.train_rows = Some(number(f, text()?)?),
            "--global-clipnorm" => a.global_clipnorm = Some(number(f, text()?)?),
            "--precision" => a.precision = text()?.parse().map_err(|e| format!("{e}"))?,
            "--bucket-kb" => a.bucket_kb = number(f, text()?)?,
            "--metrics-addr" => a.metrics_addr = Some(text()?),
            "--mpi" => a.mpi = true,
            "--fault-rank" => fault_rank = Some(number::<usize>(f, text()?)?),
            "--fault-step" => fault_step = Some(number::<u64>(f, text()?)?),
            "--fault" => fault_kind = Some(text()?),
            "--save-every-rank" => a.save_every_rank = true,
            "-h" | "--help" => return Err(usage(ex)),
            other => return Err(format!("unknown flag {other:?} (try --help)")),
        }
    }
    if a.load.is_some() && a.resume.is_some() {
        return Err("--load and --resume exclude each other".into());
    }
    match (fault_rank, fault_step, fault_kind) {
        (None, None, None) => {}
        (Some(r), Some(n), Some(k)) if FAULTS.contains(&k.as_str()) => a.fault = Some((r, n, k)),
        _ => {
            return Err(
                "--fault-rank, --fault-step and --fault (error|exit|kill|hang|panic) go together"
                    .into(),
            )
        }
    }
    if a.mpi && !cfg!(feature = "mpi") {
        return Err(format!(
            "--mpi needs the mpi feature: cargo build --release --features mpi --example {}",
            ex.name
        ));
    }
    Ok(a)
}

/// A flag's value as a number; the error names the flag.
fn number<T: FromStr>(flag: &str, text: String) -> Result<T, String>
where
    T::Err: std::fmt::Display,
{
    text.parse().map_err(|e| format!("{flag}: {e}"))
}
