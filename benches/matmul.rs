//! Matmul benchmark: prints a table of GFLOP/s per kernel variant and shape, the variant the
//! tuner picks, and the `gemm` crate (pure-Rust CPU SGEMM, 2 threads) on the same shapes, with
//! ratios measured side by side in one run. Medians of several runs; wall clock including
//! submit and wait (what a caller sees).
//!
//! ```text
//! cargo bench --bench matmul            # full table
//! cargo bench --bench matmul -- quick   # fewer runs, no 2048
//! ```

use std::time::Instant;

use suanli::internals::kernels::matmul::{self, MatmulArgs};
use suanli::internals::kernels::matmul_tune::{self, time_variant};
use suanli::internals::kernels::matmul_variant::Variant;
use suanli::{Activation, Device, Layout, Tensor};

fn cpu_gemm(m: usize, n: usize, k: usize, a: &[f32], b: &[f32], c: &mut [f32], layout: Layout) {
    // Row-major strides: (column stride, row stride) per operand.
    let (a_cs, a_rs) = if layout == Layout::TN {
        (m as isize, 1)
    } else {
        (1, k as isize)
    };
    let (b_cs, b_rs) = if layout == Layout::NT {
        (k as isize, 1)
    } else {
        (1, n as isize)
    };
    // SAFETY: the slices hold m·k, k·n and m·n elements and the strides stay inside them.
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            c.as_mut_ptr(),
            1,
            n as isize,
            false,
            a.as_ptr(),
            a_cs,
            a_rs,
            b.as_ptr(),
            b_cs,
            b_rs,
            0.0,
            1.0,
            false,
            false,
            false,
            gemm::Parallelism::Rayon(2),
        );
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() -> suanli::Result<()> {
    let quick = std::env::args().any(|a| a == "quick");
    let runs = if quick { 3 } else { 7 };
    let dev = Device::open(&std::env::var("SUANLI_DEVICE").unwrap_or_else(|_| "auto".into()))?;
    println!(
        "device: {} ({}, {}, subgroup {:?})",
        dev.name(),
        dev.info().kind,
        dev.info().backend,
        dev.info().limits.subgroup_size
    );
    let t0 = Instant::now();
    let chosen = matmul_tune::prepare(&dev)?;
    println!(
        "tuner picked {} in {:.2} s (cached afterwards)\n",
        chosen.name(),
        t0.elapsed().as_secs_f64()
    );

    let mut shapes: Vec<(&str, usize, usize, usize, Layout)> = vec![
        ("256³", 256, 256, 256, Layout::NN),
        ("512³", 512, 512, 512, Layout::NN),
        ("1024³", 1024, 1024, 1024, Layout::NN),
    ];
    if !quick {
        shapes.push(("2048³", 2048, 2048, 2048, Layout::NN));
    }
    shapes.extend([
        ("fwd 32x784x128", 32, 128, 784, Layout::NN),
        ("fwd 128x784x128", 128, 128, 784, Layout::NN),
        ("dW TN 784x128 K32", 784, 128, 32, Layout::TN),
        ("dW TN 784x128 K128", 784, 128, 128, Layout::TN),
        ("dX NT 32x784 K128", 32, 784, 128, Layout::NT),
        ("dX NT 128x784 K128", 128, 784, 128, Layout::NT),
        ("1024³ TN", 1024, 1024, 1024, Layout::TN),
        ("1024³ NT", 1024, 1024, 1024, Layout::NT),
    ]);
    let mut variants = vec![Variant::Naive, Variant::Tiled];
    variants.extend(
        [
            Variant::Subgroup8 { rows: 16 },
            Variant::Subgroup8 { rows: 32 },
        ]
        .into_iter()
        .filter(|v| v.eligible(dev.info())),
    );

    print!("{:<20}", "shape (M×N×K)");
    for v in &variants {
        print!("{:>10}", v.name());
    }
    println!(
        "{:>10}{:>10}{:>12}{:>10}",
        "picked", "cpu gemm", "pick/naive", "pick/cpu"
    );
    for (name, m, n, k, layout) in shapes {
        let a = Tensor::rand_uniform(&dev, &[m * k], -1.0, 1.0, 1)?;
        let b = Tensor::rand_uniform(&dev, &[k * n], -1.0, 1.0, 2)?;
        let c = Tensor::empty(&dev, &[m * n])?;
        let args = MatmulArgs {
            a: a.buffer(),
            b: b.buffer(),
            epilogue: matmul::Epilogue::None,
            c: c.buffer(),
            m: m as u32,
            n: n as u32,
            k: k as u32,
            layout,
            act: Activation::Linear,
            accumulate: false,
        };
        let flops = 2.0 * (m * n * k) as f64;
        print!("{name:<20}");
        let mut gf = Vec::new();
        for v in &variants {
            // The naive and tiled kernels at 2048³ would take minutes on a software adapter.
            if matches!(v, Variant::Naive | Variant::Tiled) && flops > 2.5e9 && !dev.is_gpu() {
                print!("{:>10}", "-");
                gf.push((*v, f64::NAN));
                continue;
            }
            let r = if *v == Variant::Naive {
                runs.min(3)
            } else {
                runs
            };
            let t = time_variant(&dev, &args, *v, r)?;
            gf.push((*v, flops / t / 1e9));
            print!("{:>10.2}", flops / t / 1e9);
        }
        let picked = gf
            .iter()
            .find(|(v, _)| *v == chosen)
            .map(|x| x.1)
            .unwrap_or(f64::NAN);
        let naive = gf[0].1; // NaN where skipped: the ratio then prints NaN
        let ah = a.to_vec()?;
        let bh = b.to_vec()?;
        let mut ch = vec![0.0f32; m * n];
        cpu_gemm(m, n, k, &ah, &bh, &mut ch, layout);
        let cpu = median(
            (0..runs)
                .map(|_| {
                    let t = Instant::now();
                    cpu_gemm(m, n, k, &ah, &bh, &mut ch, layout);
                    t.elapsed().as_secs_f64()
                })
                .collect(),
        );
        let cpu_gf = flops / cpu / 1e9;
        println!(
            "{:>10.2}{:>10.2}{:>11.1}×{:>9.2}×",
            picked,
            cpu_gf,
            picked / naive,
            picked / cpu_gf
        );
    }
    Ok(())
}
