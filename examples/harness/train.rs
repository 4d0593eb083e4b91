//! Training: the callbacks (progress bar, telemetry, fault trigger), the options, and `fit`
//! on one device or data-parallel over several devices and processes.

use suanli::multi::{ParallelHistory, ParallelOptions};
use suanli::nn::{Callback, Checkpoint, FitOptions, History, ProgressBar, Sequential};
use suanli::telemetry::DeviceWatch;

use super::fault::Fault;
use super::run::{Data, World};
use super::{Args, Example, Validation};

/// `--metrics-addr`: a `MetricsServer` (feature `serve`).
#[cfg(feature = "serve")]
fn metrics_server(args: &Args, world: &World) -> suanli::Result<Option<suanli::nn::MetricsServer>> {
    let Some(addr) = &args.metrics_addr else {
        return Ok(None);
    };
    let m = suanli::nn::MetricsServer::start(addr, &world.dev)?;
    println!("Training metrics on http://{}/metrics", m.address());
    Ok(Some(m))
}

/// `--metrics-addr` without the feature: a clear error.
#[cfg(not(feature = "serve"))]
fn metrics_server(args: &Args, _world: &World) -> suanli::Result<Option<NoServer>> {
    match &args.metrics_addr {
        None => Ok(None),
        Some(a) => Err(suanli::Error::InvalidArgument {
            op: "--metrics-addr",
            name: "build",
            expected: "an example built with --features serve".into(),
            found: format!("--metrics-addr {a} in a build without it"),
        }),
    }
}

/// Stands in for the server in a build without `serve` (never made).
#[cfg(not(feature = "serve"))]
struct NoServer;

#[cfg(not(feature = "serve"))]
impl Callback for NoServer {}

/// Trains `model` for `args.epochs` (the total, with `resume`) and returns its history; an
/// empty history for `--epochs 0`.
pub fn fit(
    ex: &Example,
    args: &Args,
    world: &mut World,
    model: &mut Sequential,
    resume: Option<&Checkpoint>,
    data: &Data,
) -> suanli::Result<History> {
    if args.epochs == 0 {
        return Ok(History::default());
    }
    let root = world.root;
    // Telemetry each epoch (RUST_LOG=info shows it; throttling, heat and idle epochs warn).
    let mut watch = DeviceWatch::new(&world.dev);
    let mut on_epoch = |epoch: usize, h: &History| {
        watch.epoch_end(epoch, h.utilisation.last().copied());
        true
    };
    // Keras-style progress: a live bar on the terminal and a line per epoch.
    let mut bar = ProgressBar::stdout();
    let mut fault = Fault::new(world.rank, args.fault.clone());
    let mut callbacks: Vec<&mut dyn Callback> = Vec::new();
    if !args.quiet && root {
        callbacks.push(&mut bar);
    }
    if args.fault.is_some() {
        callbacks.push(&mut fault);
    }
    let mut metrics = metrics_server(args, world)?;
    if let Some(m) = metrics.as_mut() {
        callbacks.push(m);
    }
    let (validation_data, validation_split) = match ex.validation {
        Validation::TestSet => (Some(&data.test), 0.0),
        Validation::Split(f) => (None, f),
    };
    // Resuming keeps checkpointing to the same file unless told otherwise.
    let checkpoint = args.checkpoint.as_ref().or(args.resume.as_ref());
    let options = FitOptions {
        epochs: args.epochs,
        batch_size: args.batch_size,
        seed: args.seed,
        validation_data,
        validation_split,
        on_epoch_end: Some(&mut on_epoch),
        callbacks,
        checkpoint: checkpoint.map(|p| p.as_path()),
        resume,
        ..Default::default()
    };
    if world.group.is_none() {
        return model.fit(&data.train, options);
    }
    let p = fit_parallel(args, world, model, data, options)?;
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
        if world.ranks > 1 {
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
    Ok(p.history)
}

/// Data-parallel training: the training set on every device of the group, the model
/// replicated, gradients combined across devices and (with `--mpi`) processes.
fn fit_parallel(
    args: &Args,
    world: &mut World,
    model: &mut Sequential,
    data: &Data,
    options: FitOptions<'_>,
) -> suanli::Result<ParallelHistory> {
    let g = world.group.as_ref().expect("a device group");
    say!(
        world.root,
        "Data-parallel over {} process(es) × {} device(s): {}",
        world.ranks,
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
        .map(|d| data.upload_train(d))
        .collect::<suanli::Result<Vec<_>>>()?;
    let popts = ParallelOptions {
        bucket_bytes: args.bucket_kb * 1024,
        fail_at_step: match &args.fault {
            Some((r, n, k)) if *r == world.rank && k == "error" => Some(*n),
            _ => None,
        },
        ..Default::default()
    };
    #[cfg(feature = "mpi")]
    if let Some(m) = world.mpi.as_mut() {
        return model.fit_distributed(g, &sets, options, &popts, m);
    }
    model.fit_parallel(g, &sets, options, &popts)
}
