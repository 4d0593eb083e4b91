//! Attention benchmark: the fused kernels against the unfused path (batched matmuls and the
//! row softmax, `attention_unfused`), causal, at T = 64, 256, 1024 (4 sequences, 4 heads of
//! 32; the GPT example's heads): the forward pass and forward + backward of each, and the
//! memory each keeps for backward (the fused path a log-sum-exp per row: linear in T; the
//! unfused path the T×T probabilities of every head, and as much again for dP during
//! backward). The two paths alternate within each round (this machine's speed drifts by
//! ±25%); wall clock per pass, median of rounds. The last column is what the tuner
//! (`attention_tune`) picks for the shape on this device.
//!
//! ```text
//! cargo bench --bench attention            # the table
//! cargo bench --bench attention -- tiny    # one round, T = 64 only (CI's smoke run)
//! ```

use suanli::internals::kernels::attention::Shape;
use suanli::internals::kernels::attention_tune::{self, time_once, Buffers, Path};
use suanli::internals::kernels::attention_unfused::General;
use suanli::internals::kernels::matmul_tune;
use suanli::Device;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() -> suanli::Result<()> {
    let tiny = std::env::args().any(|a| a == "tiny");
    let rounds = if tiny { 1 } else { 5 };
    let dev = Device::open(&std::env::var("SUANLI_DEVICE").unwrap_or_else(|_| "auto".into()))?;
    println!(
        "device: {} ({}, {})",
        dev.name(),
        dev.info().kind,
        dev.info().backend
    );
    matmul_tune::prepare(&dev)?;
    println!(
        "{:>5} {:>11} {:>11} {:>11} {:>11} {:>11} {:>12} {:>9}",
        "T",
        "fused fwd",
        "unfused fwd",
        "fused f+b",
        "unfused f+b",
        "fused mem",
        "unfused mem",
        "tuner"
    );
    let ts: &[usize] = if tiny { &[64] } else { &[64, 256, 1024] };
    for &t in ts {
        let s = Shape::packed(4, t, 4, 32, true);
        let g = General::packed(4, t, 4, 32, true);
        let bufs = Buffers::new(&dev, &s, &g)?;
        // Fused, unfused; forward, forward + backward.
        let mut times: [Vec<f64>; 4] = Default::default();
        for r in 0..rounds + 1 {
            let mut i = 0;
            for backward in [false, true] {
                for path in [Path::Fused, Path::Unfused] {
                    let secs = time_once(&dev, &s, &g, &bufs, path, backward)?;
                    // The first round warms pipelines up.
                    if r > 0 {
                        times[i].push(secs);
                    }
                    i += 1;
                }
            }
        }
        let [ff, uf, fb, ub] = times.map(median);
        let tuned = attention_tune::prepare(&dev, &g)?;
        // Saved for backward: LSE (B·H·T) fused; P (B·H·T²) unfused, plus dP while it runs.
        let fused_mem = (s.lse_len() * 4) as f64;
        let unfused_mem = (g.probs_len() * 4) as f64;
        println!(
            "{t:>5} {:>8.2} ms {:>8.2} ms {:>8.2} ms {:>8.2} ms {:>8.1} KB {:>9.1} MB {:>9}",
            ff * 1e3,
            uf * 1e3,
            fb * 1e3,
            ub * 1e3,
            fused_mem / 1e3,
            unfused_mem / 1e6,
            tuned.name(),
        );
    }
    Ok(())
}
