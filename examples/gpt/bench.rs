//! `shakespeare_gpt --bench` (ms per iteration, beside PyTorch's when it runs) and
//! `--bench-generate` (generation's tokens per second with and without the KV cache).

use std::time::Instant;

use suanli::data::{Split, Text};
use suanli::nn::{FitOptions, Model};
use suanli::Device;

use super::args::Args;

/// Generation's tokens per second with the cache and by recomputing, alternating.
pub fn bench_generate(model: &Model, text: &Text, a: &Args) -> suanli::Result<()> {
    let prompt = text.tokenizer().encode("\n")?;
    let (mut cached, mut again) = (Vec::new(), Vec::new());
    for _ in 0..3 {
        for (kv, times) in [(true, &mut cached), (false, &mut again)] {
            let t0 = Instant::now();
            model.generate(&prompt, &super::generate_options(a, kv))?;
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
pub fn bench(model: &mut Model, dev: &Device, text: &Text, a: &Args) -> suanli::Result<()> {
    let n = a.bench;
    // Windows drawn on the device, new ones every round (the step count goes on).
    let data = super::windows(dev, text, Split::Train, n * a.batch, a, a.seed)?;
    let schedule = |step: u64| super::lr_at(a, step);
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
