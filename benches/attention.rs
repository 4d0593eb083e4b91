//! Fused attention benchmark: the causal forward pass and forward + backward of the fused
//! kernels at T = 64, 256, 1024 (4 sequences, 4 heads of 32; the GPT example's heads), with
//! the memory each keeps for backward (the log-sum-exp: linear in T) beside what an unfused
//! path would keep (the T×T probabilities of every head). For scale, each row also times a
//! plain GEMM of the first product's size (Q·Kᵀ for every head as one (B·H·T, T, D) product)
//! on the same adapter, alternating within each round (this machine's speed drifts by
//! ±25%); an unfused device path is not built yet. Wall clock per pass, median of rounds.
//!
//! ```text
//! cargo bench --bench attention            # the table
//! cargo bench --bench attention -- tiny    # one round, T = 64 only (CI's smoke run)
//! ```

use std::time::Instant;

use suanli::exec::Recorder;
use suanli::internals::kernels::attention::{self, Shape};
use suanli::internals::kernels::matmul::{Epilogue, MatmulArgs};
use suanli::internals::kernels::matmul_tune;
use suanli::{Activation, Device, Layout, Tensor};

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn time(dev: &Device, f: &mut dyn FnMut(&mut Recorder<'_>)) -> f64 {
    let t = Instant::now();
    let mut rec = Recorder::new(dev);
    f(&mut rec);
    rec.submit().unwrap();
    dev.synchronize().unwrap();
    t.elapsed().as_secs_f64()
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
        "{:>5} {:>12} {:>14} {:>10} {:>14} {:>12} {:>14}",
        "T", "forward ms", "fwd+bwd ms", "GFLOP/s", "QK^T GEMM ms", "saved (LSE)", "unfused P"
    );
    let ts: &[usize] = if tiny { &[64] } else { &[64, 256, 1024] };
    for &t in ts {
        let s = Shape::packed(4, t, 4, 32, true);
        let qkv = Tensor::rand_uniform(&dev, &[s.qkv_len()], -1.0, 1.0, 1)?;
        let d_o = Tensor::rand_uniform(&dev, &[s.o_len()], -1.0, 1.0, 2)?;
        let o = Tensor::zeros(&dev, &[s.o_len()])?;
        let lse = Tensor::zeros(&dev, &[s.lse_len()])?;
        let delta = Tensor::zeros(&dev, &[s.lse_len()])?;
        let dqkv = Tensor::zeros(&dev, &[s.qkv_len()])?;
        let (bh, d) = (s.batch * s.heads, s.d);
        let a = Tensor::rand_uniform(&dev, &[bh * t, d], -1.0, 1.0, 3)?;
        let b = Tensor::rand_uniform(&dev, &[t, d], -1.0, 1.0, 4)?;
        let c = Tensor::zeros(&dev, &[bh * t, t])?;
        let (mut fwd, mut both, mut gemm) = (Vec::new(), Vec::new(), Vec::new());
        for r in 0..rounds + 1 {
            let f = time(&dev, &mut |rec| {
                attention::forward(rec, &s, qkv.buffer(), o.buffer(), lse.buffer()).unwrap()
            });
            let fb = time(&dev, &mut |rec| {
                attention::forward(rec, &s, qkv.buffer(), o.buffer(), lse.buffer()).unwrap();
                attention::backward(
                    rec,
                    &s,
                    qkv.buffer(),
                    o.buffer(),
                    d_o.buffer(),
                    lse.buffer(),
                    delta.buffer(),
                    dqkv.buffer(),
                )
                .unwrap()
            });
            let g = time(&dev, &mut |rec| {
                let args = MatmulArgs {
                    a: a.buffer(),
                    b: b.buffer(),
                    epilogue: Epilogue::None,
                    c: c.buffer(),
                    m: (bh * t) as u32,
                    n: t as u32,
                    k: d as u32,
                    layout: Layout::NT,
                    act: Activation::Linear,
                    accumulate: false,
                };
                matmul_tune::record(rec, &args).unwrap()
            });
            // The first round warms pipelines up.
            if r > 0 {
                fwd.push(f);
                both.push(fb);
                gemm.push(g);
            }
        }
        let (f, fb, g) = (median(fwd), median(both), median(gemm));
        // Causal: half of the t×t pairs, two products of d each way forward.
        let flops = 4.0 * (t * t) as f64 * 0.5 * (d * bh) as f64;
        println!(
            "{t:>5} {:>12.2} {:>14.2} {:>10.2} {:>14.2} {:>9.1} KB {:>11.1} MB",
            f * 1e3,
            fb * 1e3,
            flops / f / 1e9,
            g * 1e3,
            (s.lse_len() * 4) as f64 / 1e3,
            (bh * t * t * 4) as f64 / 1e6,
        );
    }
    Ok(())
}
