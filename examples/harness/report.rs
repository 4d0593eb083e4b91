//! What a run reports besides its accuracy: `--profile` (per-kernel GPU time, utilisation,
//! memory, a Chrome trace), the `--bench` table, and the same model in other frameworks
//! (the example's peers) side by side.

use std::path::Path;
use std::process::Command;

use suanli::nn::History;
use suanli::Device;

use super::{Args, Example, Peer};

/// The profiler's findings after training (profiling was on during it): top kernels,
/// utilisation of the last epoch, memory, and `trace.json`.
pub fn profile(dev: &Device, history: &History, total: f64, root: bool) -> suanli::Result<()> {
    dev.set_profiling(false);
    let p = dev.profile();
    say!(
        root,
        "Top kernels by GPU time (profiler on: submissions serialised):\n{}",
        p.table(12)
    );
    if let (Some(busy), Some(secs)) = (history.utilisation.last(), history.epoch_seconds.last()) {
        say!(
            root,
            "Utilisation: last epoch's queue busy {:.0}% of {:.2}s; kernels ran {:.2}s of {:.2}s training wall ({:.0}%)",
            100.0 * busy,
            secs,
            p.total_ns() / 1e9,
            total,
            100.0 * p.total_ns() / 1e9 / total,
        );
    }
    let tuned: Vec<String> = dev
        .tuned_choices()
        .into_iter()
        .map(|(family, class, choice)| format!("{family} {class} → {choice}"))
        .collect();
    say!(
        root,
        "Tuner's choices (kernel family, shape class → variant): {}",
        if tuned.is_empty() {
            "none made".to_string()
        } else {
            tuned.join(", ")
        }
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
    dev.write_chrome_trace(Path::new("trace.json"))?;
    say!(
        root,
        "Chrome trace written to trace.json (chrome://tracing or ui.perfetto.dev)"
    );
    Ok(())
}

/// The `--bench` table: first and median epoch (epochs 2..N), time per step, throughput and
/// memory; then each peer side by side unless `--no-torch`. `rows` is the rows trained on
/// each epoch, `accuracy` ours on the test set.
pub fn bench(
    ex: &Example,
    args: &Args,
    dev: &Device,
    history: &History,
    rows: usize,
    accuracy: Option<f64>,
) {
    let Some(&first) = history.epoch_seconds.first() else {
        println!("bench: no epoch trained (--epochs 0): nothing to time");
        return;
    };
    let mut e: Vec<f64> = history.epoch_seconds.iter().skip(1).copied().collect();
    if e.is_empty() {
        e = history.epoch_seconds.clone();
    }
    e.sort_by(f64::total_cmp);
    let median = e[e.len() / 2];
    let m = dev.memory_stats();
    let steps = rows.div_ceil(args.batch_size);
    let median_label = format!("median epoch (2..{})", args.epochs);
    println!("bench:");
    println!("  {:<28} {:>12}", "batch size", args.batch_size);
    println!("  {:<28} {:>11.2}s", "first epoch", first);
    println!("  {:<28} {:>11.2}s", median_label, median);
    println!(
        "  {:<28} {:>10.1}µs",
        "per step",
        median / steps as f64 * 1e6
    );
    let per_second = rows as f64 / median / 1e3;
    println!("  {:<28} {:>10.1}k/s", "samples per second", per_second);
    println!(
        "  {:<28} {:>10.1}MB",
        "pool peak",
        m.peak_in_use as f64 / 1e6
    );
    println!("  {:<28} {:>12}", "pool allocations", m.allocations);
    if !args.no_torch {
        for peer in ex.peers {
            compare(peer, args, median, accuracy);
        }
    }
}

/// Runs `peer`'s script on the CPU (2 threads) with our epochs and batch size, when its
/// module imports, and prints its median epoch and test accuracy beside ours with the time
/// ratio; otherwise one line saying why not. The interpreter is `$SUANLI_PEER_PYTHON`, or
/// `python3`.
fn compare(&(name, module, script): &Peer, args: &Args, ours: f64, accuracy: Option<f64>) {
    let python = std::env::var("SUANLI_PEER_PYTHON").unwrap_or_else(|_| "python3".into());
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(script);
    let imports = Command::new(&python)
        .args(["-c", &format!("import {module}")])
        .output()
        .is_ok_and(|o| o.status.success());
    if !imports {
        println!(
            "bench: {name} not importable here ({python} -c 'import {module}' failed): no side-by-side comparison"
        );
        return;
    }
    let Ok(source) = std::fs::read_to_string(&path) else {
        println!(
            "bench: {name}: cannot read {}: no side-by-side comparison",
            path.display()
        );
        return;
    };
    let mut cmd = Command::new(&python);
    cmd.arg(&path).args(["--epochs", &args.epochs.to_string()]);
    cmd.args([
        "--batch-size",
        &args.batch_size.to_string(),
        "--threads",
        "2",
    ]);
    if let Some(rows) = args.train_rows {
        if !source.contains("--train-rows") {
            println!(
                "bench: {name}: {script} takes no --train-rows (it would train on all the rows): no side-by-side comparison"
            );
            return;
        }
        cmd.args(["--train-rows", &rows.to_string()]);
    }
    let text = match cmd.output() {
        Ok(o) if o.status.success() => String::from_utf8_lossy(&o.stdout).to_string(),
        Ok(o) => {
            let err = String::from_utf8_lossy(&o.stderr);
            let why = err.lines().rfind(|l| !l.trim().is_empty()).unwrap_or("");
            println!("bench: the {name} run ({script}) failed: {why}");
            return;
        }
        Err(e) => {
            println!("bench: could not run {python}: {e}");
            return;
        }
    };
    let last = text.lines().last().unwrap_or("");
    let mut it = last.split_whitespace();
    match (it.next(), it.next().and_then(|v| v.parse::<f64>().ok()), it.nth(1)) {
        (Some("median_epoch_s"), Some(theirs), acc) => println!(
            "bench: {name} (same model, batch, epochs) CPU (2 threads) median epoch {:.2}s (test accuracy {}) | suanli {:.2}s (test accuracy {:.4}) | suanli/{name} time ratio {:.2}",
            theirs,
            acc.unwrap_or("?"),
            ours,
            accuracy.unwrap_or(f64::NAN),
            ours / theirs
        ),
        _ => println!("bench: unexpected {name} output: {last}"),
    }
}
