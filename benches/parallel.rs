//! Data-parallel training benchmark: the MNIST MLP at global batch 128 on one device, on
//! several devices in this process, and (built with the `mpi` feature, under `mpirun`) on
//! several processes: step time, samples/s, bytes exchanged per step, the exchange's time
//! per step and the share of it hidden behind the backward pass; the balancer's trace under
//! an artificial 2× slowdown; and, under mpirun, the all-reduce's cost by message size fitted
//! as latency + bytes / bandwidth, with the scaling projection of docs/SCALING.md.
//!
//! ```text
//! cargo bench --bench parallel                    # devices: the test adapter twice
//! cargo bench --bench parallel -- gpu:0,gpu:1     # real GPUs
//! cargo bench --features mpi --bench parallel --no-run
//! bash scripts/mpi_bench.sh                       # 2 ranks, shared memory and TCP loopback
//! ```
//! On lavapipe every device and rank shares the same two CPU cores, so no speed-up is
//! expected: this measures what the exchange costs. Configurations alternate over three
//! rounds and medians are printed, because the machine's speed drifts.

use suanli::data::{Dataset, Mnist};
use suanli::multi::{ExchangeReport, ParallelOptions};
use suanli::nn::{Dense, FitOptions, Loss, Optimizer, Sequential};
use suanli::DeviceGroup;

const ROWS: usize = 12_800;
const BATCH: usize = 128;
const ROUNDS: usize = 3;

fn model(dev: &suanli::Device) -> suanli::Result<Sequential> {
    let mut m = Sequential::with_seed(dev, 0);
    m.add(Dense::new(128, "relu").input_dim(784))?;
    m.add(Dense::new(64, "relu"))?;
    m.add(Dense::new(10, "softmax"))?;
    m.compile(Optimizer::adam(), Loss::SparseCategoricalCrossentropy)?;
    Ok(m)
}

fn opts(epochs: usize) -> FitOptions<'static> {
    FitOptions {
        epochs,
        batch_size: BATCH,
        ..Default::default()
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

/// One measured configuration: epoch-2 seconds per round, and the last exchange report.
#[derive(Default)]
struct Row {
    seconds: Vec<f64>,
    exchange: Option<ExchangeReport>,
}

fn header() {
    println!(
        "{:<40} {:>9} {:>11} {:>12} {:>12} {:>8}",
        "configuration", "step ms", "samples/s", "bytes/step", "exchange ms", "hidden"
    );
}

fn print_row(name: &str, r: &Row) {
    let steps = (ROWS / BATCH) as f64;
    let s = median(r.seconds.clone());
    let (bytes, ms, hidden) = r
        .exchange
        .map_or(("-".into(), "-".into(), "-".into()), |x| {
            (
                format!("{:.0}", x.bytes_sent_per_step.max(x.host_bytes_per_step)),
                format!("{:.3}", 1e3 * x.seconds_per_step),
                format!("{:.0}%", 100.0 * x.hidden),
            )
        });
    println!(
        "{:<40} {:>9.2} {:>11.0} {:>12} {:>12} {:>8}",
        name,
        1e3 * s / steps,
        ROWS as f64 / s,
        bytes,
        ms,
        hidden
    );
}

fn upload(mnist: &Mnist, d: &suanli::Device) -> suanli::Result<Dataset> {
    Dataset::from_u8(
        d,
        &mnist.train_images[..ROWS * 784],
        784,
        1.0 / 255.0,
        &mnist.train_labels[..ROWS],
    )
}

fn main() -> suanli::Result<()> {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "--mpi") {
        return mpi_main(&args);
    }
    let list = args
        .iter()
        .find(|a| !a.starts_with('-'))
        .cloned()
        .unwrap_or_else(|| "auto,auto".into());
    let group = DeviceGroup::parse(&list)?;
    let mnist = Mnist::load()?;
    let sets: Vec<Dataset> = group
        .devices()
        .iter()
        .map(|d| upload(&mnist, d))
        .collect::<suanli::Result<_>>()?;
    println!(
        "MNIST MLP, {ROWS} rows, global batch {BATCH}, {} steps per epoch, epoch 2 of 2, median of {ROUNDS} alternating rounds; devices: {}",
        ROWS / BATCH,
        group
            .devices()
            .iter()
            .map(|d| d.name().to_string())
            .collect::<Vec<_>>()
            .join(" + ")
    );
    header();
    let d0 = group.devices()[0].clone();
    let single = DeviceGroup::from_devices(vec![d0.clone()])?;
    let small = ParallelOptions {
        bucket_bytes: 32 << 10,
        ..Default::default()
    };
    let (mut fit, mut one, mut all, mut all_small) = Default::default();
    let mut shares = Vec::new();
    for _ in 0..ROUNDS {
        let mut m = model(&d0)?;
        let h = m.fit(&sets[0], opts(2))?;
        Row::push(&mut fit, h.epoch_seconds[1], None);
        let mut m = model(&d0)?;
        let p = m.fit_parallel(&single, &sets[..1], opts(2), &ParallelOptions::default())?;
        Row::push(
            &mut one,
            p.history.epoch_seconds[1],
            p.exchange.last().copied(),
        );
        let mut m = model(&d0)?;
        let p = m.fit_parallel(&group, &sets, opts(2), &ParallelOptions::default())?;
        Row::push(
            &mut all,
            p.history.epoch_seconds[1],
            p.exchange.last().copied(),
        );
        shares = p.shares.last().cloned().unwrap_or_default();
        let mut m = model(&d0)?;
        let p = m.fit_parallel(&group, &sets, opts(2), &small)?;
        Row::push(
            &mut all_small,
            p.history.epoch_seconds[1],
            p.exchange.last().copied(),
        );
    }
    print_row("1 device (fit: optimizer fused)", &fit);
    print_row("1 device (fit_parallel)", &one);
    print_row(&format!("{} devices (25 MB buckets)", group.len()), &all);
    print_row(
        &format!("{} devices (32 KB buckets)", group.len()),
        &all_small,
    );
    println!(
        "  {} devices / 1 device: {:.2}×; final shares {:?} (replicas checked bit-identical every epoch)",
        group.len(),
        median(all.seconds.clone()) / median(fit.seconds.clone()),
        shares
            .iter()
            .map(|s| format!("{s:.2}"))
            .collect::<Vec<_>>()
    );
    // Device 1 slowed 2×: the balancer's trace.
    if group.len() >= 2 {
        let mut slow = vec![1.0; group.len()];
        slow[1] = 2.0;
        let mut m = model(&d0)?;
        let p = m.fit_parallel(
            &group,
            &sets,
            opts(1),
            &ParallelOptions {
                slowdown: slow,
                ..Default::default()
            },
        )?;
        println!("balancer trace with device 1 slowed 2× (share of device 1 by step):");
        let line: Vec<String> = p
            .shares
            .iter()
            .enumerate()
            .filter(|(i, _)| i % 10 == 0 || *i + 1 == p.shares.len())
            .map(|(i, s)| format!("{}:{:.2}", i + 1, s[1]))
            .collect();
        println!("  {}", line.join("  "));
    }
    Ok(())
}

impl Row {
    fn push(r: &mut Row, seconds: f64, x: Option<ExchangeReport>) {
        r.seconds.push(seconds);
        r.exchange = x.or(r.exchange);
    }
}

#[cfg(not(feature = "mpi"))]
fn mpi_main(_: &[String]) -> suanli::Result<()> {
    eprintln!("--mpi needs the mpi feature: cargo bench --features mpi --bench parallel --no-run, then run it under mpirun (scripts/mpi_bench.sh)");
    std::process::exit(2);
}

/// Under mpirun: rank 0 alone on one device, then every rank together; the all-reduce by
/// size; the projection.
#[cfg(feature = "mpi")]
fn mpi_main(args: &[String]) -> suanli::Result<()> {
    use suanli::multi::mpi::Mpi;
    use suanli::multi::Exchange;
    let label = args
        .iter()
        .position(|a| a == "--label")
        .and_then(|i| args.get(i + 1))
        .cloned()
        .unwrap_or_else(|| "default transport".into());
    let mut mpi = Mpi::init()?;
    let (rank, ranks) = (mpi.rank(), mpi.ranks());
    let root = rank == 0;
    let dev = mpi.device(None)?;
    let mnist = Mnist::load()?;
    let set = upload(&mnist, &dev)?;
    let group = DeviceGroup::from_devices(vec![dev.clone()])?;
    if root {
        println!(
            "MNIST MLP, {ROWS} rows, global batch {BATCH}, epoch 2 of 2, median of {ROUNDS} alternating rounds; {ranks} ranks ({label}), each on {}",
            dev.name()
        );
        header();
    }
    let (mut fit, mut big, mut small) = (Row::default(), Row::default(), Row::default());
    for _ in 0..ROUNDS {
        // Rank 0 alone (the others wait at the next exchange).
        if root {
            let mut m = model(&dev)?;
            let h = m.fit(&set, opts(2))?;
            Row::push(&mut fit, h.epoch_seconds[1], None);
        }
        for (row, bucket) in [(&mut big, 25usize << 20), (&mut small, 32 << 10)] {
            let mut m = model(&dev)?;
            let p = m.fit_distributed(
                &group,
                std::slice::from_ref(&set),
                opts(2),
                &ParallelOptions {
                    bucket_bytes: bucket,
                    ..Default::default()
                },
                &mut mpi,
            )?;
            Row::push(row, p.history.epoch_seconds[1], p.exchange.last().copied());
        }
    }
    if root {
        print_row("1 process, 1 device (fit)", &fit);
        print_row(&format!("{ranks} ranks (25 MB buckets)"), &big);
        print_row(&format!("{ranks} ranks (32 KB buckets)"), &small);
        println!(
            "  {ranks} ranks / 1 device: {:.2}× (the ranks share this machine's cores)",
            median(big.seconds.clone()) / median(fit.seconds.clone())
        );
    }
    // The all-reduce by message size, through the exchange the training uses.
    let sizes: Vec<usize> = (0..9).map(|i| 1024usize << (2 * i)).collect(); // 4 KB .. 256 MB
    let mut points = Vec::new();
    if root {
        println!("all-reduce of one bucket ({label}, {ranks} ranks), median of 15:");
        println!("{:>12} {:>12} {:>12}", "bytes", "µs", "GB/s (bus)");
    }
    for &bytes in sizes.iter().filter(|&&b| b <= 64 << 20) {
        let n = bytes / 4;
        let mut t = Vec::new();
        for rep in 0..17 {
            let data = vec![rank as f32 + 1.0; n];
            let t0 = std::time::Instant::now();
            mpi.start(0, vec![data])?;
            let c = mpi.finish(0)?;
            if rep >= 2 {
                t.push(t0.elapsed().as_secs_f64());
            }
            assert_eq!(c.data[n / 2], (ranks * (ranks + 1) / 2) as f32);
        }
        let s = median(t);
        points.push((bytes as f64, s));
        if root {
            let bus = 2.0 * (ranks as f64 - 1.0) / ranks as f64 * bytes as f64 / s / 1e9;
            println!("{:>12} {:>12.1} {:>12.2}", bytes, s * 1e6, bus);
        }
    }
    if root {
        // T(n) = 2(p−1)·α + 2(p−1)/p · n / B, fitted by least squares on (x = 2(p−1)/p·n, T)
        // in relative terms (weights 1/T²), so the small messages pin α and the large ones B.
        let p = ranks as f64;
        let xs: Vec<f64> = points
            .iter()
            .map(|(n, _)| 2.0 * (p - 1.0) / p * n)
            .collect();
        let ts: Vec<f64> = points.iter().map(|(_, t)| *t).collect();
        let (slope, icept) = least_squares(&xs, &ts);
        let alpha = icept / (2.0 * (p - 1.0)).max(1.0);
        let bw = 1.0 / slope.max(1e-18);
        println!(
            "fit: α = {:.1} µs per hop, B = {:.2} GB/s ({label})",
            alpha * 1e6,
            bw / 1e9
        );
        let step = median(fit.seconds.clone()) / (ROWS / BATCH) as f64;
        projection(alpha, step);
    }
    Ok(())
}

/// Slope and intercept of the line through (x, y) with the least squared relative error
/// (weights 1/y²).
#[cfg(feature = "mpi")]
fn least_squares(x: &[f64], y: &[f64]) -> (f64, f64) {
    let w: Vec<f64> = y.iter().map(|t| 1.0 / (t * t).max(1e-300)).collect();
    let sw: f64 = w.iter().sum();
    let mx = x.iter().zip(&w).map(|(a, w)| a * w).sum::<f64>() / sw;
    let my = y.iter().zip(&w).map(|(b, w)| b * w).sum::<f64>() / sw;
    let sxy: f64 = (0..x.len()).map(|i| w[i] * (x[i] - mx) * (y[i] - my)).sum();
    let sxx: f64 = (0..x.len()).map(|i| w[i] * (x[i] - mx).powi(2)).sum();
    let slope = sxy / sxx.max(1e-300);
    (slope, my - slope * mx)
}

/// The scaling projection of docs/SCALING.md: ring all-reduce over p ranks on a link of
/// bandwidth B, per-hop latency α (this machine's measured software latency plus 5 µs of
/// network), per-rank compute time per step T_c; efficiency without overlap
/// T_c / (T_c + T_ar) and with the backward pass (2/3 of T_c) hiding the exchange
/// T_c / (T_c + max(0, T_ar − ⅔·T_c)).
#[cfg(feature = "mpi")]
fn projection(alpha_measured: f64, mlp_step: f64) {
    let alpha = alpha_measured + 5e-6;
    // The 100M-parameter model: 6·P FLOPs per token, 16,384 tokens per rank and step, on a
    // GPU sustaining 35% of an H200's 67 TFLOP/s (unmeasured: no GPU here).
    let big_params = 100e6;
    let big_step = 6.0 * big_params * 16_384.0 / (0.35 * 67e12);
    let models = [
        (
            "MNIST MLP (109,386 params), T_c measured here",
            109_386.0,
            mlp_step,
        ),
        (
            "100M params, T_c = 6·P·16k tokens at 23 TFLOP/s",
            big_params,
            big_step,
        ),
    ];
    println!(
        "scaling projection (ring all-reduce, f32 gradients, α = {:.1} µs per hop):",
        alpha * 1e6
    );
    println!(
        "{:<50} {:>6} {:>9} {:>10} {:>10} {:>12} {:>12}",
        "model", "ranks", "link", "T_c ms", "T_ar ms", "eff. serial", "eff. overlap"
    );
    for (name, params, tc) in models {
        let bytes = params * 4.0;
        for p in [8.0f64, 64.0, 512.0] {
            for gbps in [10.0f64, 100.0] {
                let bw = gbps * 1e9 / 8.0;
                let tar = 2.0 * (p - 1.0) * alpha + 2.0 * (p - 1.0) / p * bytes / bw;
                let serial = tc / (tc + tar);
                let overlap = tc / (tc + (tar - 2.0 / 3.0 * tc).max(0.0));
                println!(
                    "{:<50} {:>6} {:>6} Gb/s {:>10.3} {:>10.3} {:>11.0}% {:>11.0}%",
                    name,
                    p,
                    gbps,
                    tc * 1e3,
                    tar * 1e3,
                    100.0 * serial,
                    100.0 * overlap
                );
            }
        }
    }
}
