//! The command line of `shakespeare_gpt` (its flags are listed in its module docs).

use std::path::PathBuf;

/// The example's settings (see its module docs for each flag).
pub struct Args {
    pub iters: usize,
    pub eval_interval: usize,
    pub eval_batches: usize,
    pub batch: usize,
    pub block: usize,
    pub layers: usize,
    pub heads: usize,
    pub width: usize,
    pub dropout: f32,
    pub lr: f64,
    pub seed: u64,
    pub device: String,
    pub sample: usize,
    pub temperature: f64,
    pub top_k: usize,
    pub save: Option<PathBuf>,
    pub load: Option<PathBuf>,
    pub checkpoint: Option<PathBuf>,
    pub resume: Option<PathBuf>,
    pub devices: Option<String>,
    pub data: PathBuf,
    pub profile: bool,
    pub bench_generate: bool,
    /// Iterations per round of `--bench` (0: no bench).
    pub bench: usize,
    /// nanoGPT's initialisation and LayerNorm ε (the default) or Keras's.
    pub keras_init: bool,
    /// One model across the processes of an MPI job (feature `mpi`).
    pub mpi: bool,
    /// The precision policy (`--precision float32|mixed_float16`).
    pub precision: suanli::Precision,
}

/// The settings from the command line.
pub fn parse() -> Result<Args, String> {
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
        mpi: false,
        precision: suanli::Precision::Float32,
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
        if flag == "--mpi" {
            a.mpi = true;
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
            "--precision" => a.precision = v.parse().map_err(|e| format!("{e}"))?,
            _ => return Err(format!("unknown flag {flag}")),
        }
    }
    if a.mpi && !cfg!(feature = "mpi") {
        return Err(
            "--mpi needs the mpi feature: cargo build --release --features mpi --example shakespeare_gpt"
                .into(),
        );
    }
    if a.heads == 0 || !a.width.is_multiple_of(a.heads) {
        return Err(format!(
            "--heads {} must divide --width {}",
            a.heads, a.width
        ));
    }
    Ok(a)
}
