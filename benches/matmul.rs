//! Matmul benchmark: prints a table of GFLOP/s per kernel variant and shape, the variant the
//! tuner picks for each shape (its shape class's choice), and the `gemm` crate (pure-Rust CPU SGEMM, 2 threads) on the same shapes, with
//! ratios measured side by side in one run. Medians of several runs; wall clock including
//! submit and wait (what a caller sees).
//!
//! ```text
//! cargo bench --bench matmul                                   # full table
//! cargo bench --bench matmul -- quick                          # fewer runs, no 2048
//! cargo bench --bench matmul -- --sizes 512,1024,4096 --peak-tflops 67 --no-cpu
//! cargo bench --bench matmul -- --half 128x512x784,1024x1024x1024   # float16 operands' cost
//! ```
//! `--half M×N×K,…` times only the picked kernel on those shapes with and without float16
//! operands (`MatmulArgs::half`, the `mixed_float16` policy), alternating, medians.
//! `--sizes` replaces the square sizes; `--peak-tflops` adds the picked kernel's share of the
//! adapter's FP32 peak; `--no-cpu` skips the CPU comparison (slow at large sizes). The naive
//! kernel is skipped beyond 2048³, and on a software adapter the shared-memory tiles too.

use std::time::Instant;

use suanli::internals::kernels::matmul::{self, MatmulArgs};
use suanli::internals::kernels::matmul_tune::{self, time_variant};
use suanli::internals::kernels::matmul_variant::{Block, Tile, Variant, COOP, SUBGROUP_SIZES};
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
    let args: Vec<String> = std::env::args().collect();
    let quick = args.iter().any(|a| a == "quick");
    let no_cpu = args.iter().any(|a| a == "--no-cpu");
    let value = |flag: &str| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1).cloned())
    };
    let peak = value("--peak-tflops").and_then(|v| v.parse::<f64>().ok());
    let sizes: Option<Vec<usize>> =
        value("--sizes").map(|v| v.split(',').filter_map(|x| x.trim().parse().ok()).collect());
    let runs = if quick { 3 } else { 7 };
    let dev = Device::open(&std::env::var("SUANLI_DEVICE").unwrap_or_else(|_| "auto".into()))?;
    println!(
        "device: {} ({}, {}, subgroup {:?})",
        dev.name(),
        dev.info().kind,
        dev.info().backend,
        dev.info().limits.subgroup_size
    );
    if let Some(list) = value("--half") {
        return half_cost(&dev, &list, runs);
    }
    let t0 = Instant::now();
    let chosen = matmul_tune::prepare(&dev)?;
    println!(
        "tuner picked {} for the default shape class in {:.2} s (cached afterwards; the large \
         class, M, N ≥ 2048 and K ≥ 1024, is tuned at its first shape)\n",
        chosen.name(),
        t0.elapsed().as_secs_f64()
    );

    let squares = sizes.unwrap_or_else(|| {
        if quick {
            vec![256, 512, 1024]
        } else {
            vec![256, 512, 1024, 2048]
        }
    });
    let mut shapes: Vec<(String, usize, usize, usize, Layout)> = squares
        .iter()
        .map(|&s| (format!("{s}³"), s, s, s, Layout::NN))
        .collect();
    let mlp: [(&str, usize, usize, usize, Layout); 8] = [
        ("fwd 32x784x128", 32, 128, 784, Layout::NN),
        ("fwd 128x784x128", 128, 128, 784, Layout::NN),
        ("dW TN 784x128 K32", 784, 128, 32, Layout::TN),
        ("dW TN 784x128 K128", 784, 128, 128, Layout::TN),
        ("dX NT 32x784 K128", 32, 784, 128, Layout::NT),
        ("dX NT 128x784 K128", 128, 784, 128, Layout::NT),
        ("1024³ TN", 1024, 1024, 1024, Layout::TN),
        ("1024³ NT", 1024, 1024, 1024, Layout::NT),
    ];
    shapes.extend(
        mlp.iter()
            .map(|(n, m, nn, k, l)| (n.to_string(), *m, *nn, *k, *l)),
    );
    // Every wide kernel the adapter can run.
    let mut variants = vec![Variant::Naive];
    variants.extend(Tile::ALL.iter().map(|t| Variant::Tiled(*t)));
    variants.extend(Block::ALL.iter().map(|b| Variant::Blocked(*b)));
    for size in SUBGROUP_SIZES {
        variants.extend([16, 32, 64].map(|rows| Variant::Subgroup { size, rows }));
    }
    // The tensor-core kernels the adapter reports configurations for (f16 operands only
    // where SUANLI_MATMUL_PRECISION allows them).
    variants.extend(
        COOP.iter()
            .filter(|v| v.allowed_under(dev.config().matmul_precision)),
    );
    variants.retain(|v| v.eligible(dev.info()));

    print!("{:<20}", "shape (M×N×K)");
    for v in &variants {
        print!("{:>13}", v.name());
    }
    println!(
        "{:>10}{:>14}{:>10}{:>10}{:>12}",
        "picked", "pick", "of peak", "cpu gemm", "pick/cpu"
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
            half: false,
        };
        let flops = 2.0 * (m * n * k) as f64;
        print!("{name:<20}");
        let mut gf = Vec::new();
        for v in &variants {
            // The naive and tiled kernels at 2048³ would take minutes on a software adapter;
            // the naive one beyond that anywhere.
            let slow_here = matches!(v, Variant::Naive | Variant::Tiled(_)) && !dev.is_gpu();
            if (slow_here && flops > 2.5e9) || (*v == Variant::Naive && flops > 2.0e10) {
                print!("{:>13}", "-");
                gf.push((*v, f64::NAN));
                continue;
            }
            let runs = if flops > 1e11 { runs.min(3) } else { runs };
            let r = if *v == Variant::Naive {
                runs.min(3)
            } else {
                runs
            };
            let t = time_variant(&dev, &args, *v, r)?;
            gf.push((*v, flops / t / 1e9));
            print!("{:>13.2}", flops / t / 1e9);
        }
        // What `matmul_tune::record` runs for this shape: its class's choice (the large class
        // is tuned here on its first shape), narrowed for narrow/shallow products.
        let pick = matmul_tune::pick_for(&dev, m as u32, n as u32, k as u32)?;
        let picked = gf
            .iter()
            .find(|(v, _)| *v == pick)
            .map(|x| x.1)
            .unwrap_or(f64::NAN);
        let share = peak.map_or("-".to_string(), |p| {
            format!("{:.1}%", 100.0 * picked / (p * 1e3))
        });
        if no_cpu {
            println!(
                "{picked:>10.2}{:>14}{share:>10}{:>10}{:>12}",
                pick.name(),
                "-",
                "-"
            );
            continue;
        }
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
            "{picked:>10.2}{:>14}{share:>10}{cpu_gf:>10.2}{:>11.2}×",
            pick.name(),
            picked / cpu_gf
        );
    }
    for (family, class, choice) in dev.tuned_choices() {
        println!("tuner: {family} {class} class → {choice}");
    }
    Ok(())
}

/// `--half`: the picked kernel on each M×N×K with and without float16 operands, one run of
/// each in turn (alternating, so load drifts hit both), medians of `runs` pairs.
fn half_cost(dev: &Device, list: &str, runs: usize) -> suanli::Result<()> {
    println!(
        "{:<20}{:>14}{:>12}{:>12}{:>9}",
        "M×N×K", "kernel", "f32 ms", "half ms", "ratio"
    );
    for shape in list.split(',') {
        let d: Vec<usize> = shape
            .split('x')
            .filter_map(|x| x.trim().parse().ok())
            .collect();
        let [m, n, k] = d[..] else {
            println!("{shape}: expected MxNxK");
            continue;
        };
        let a = Tensor::rand_uniform(dev, &[m * k], -1.0, 1.0, 1)?;
        let b = Tensor::rand_uniform(dev, &[k * n], -1.0, 1.0, 2)?;
        let c = Tensor::empty(dev, &[m * n])?;
        let args = |half: bool| MatmulArgs {
            a: a.buffer(),
            b: b.buffer(),
            epilogue: matmul::Epilogue::None,
            c: c.buffer(),
            m: m as u32,
            n: n as u32,
            k: k as u32,
            layout: Layout::NN,
            act: Activation::Linear,
            accumulate: false,
            half,
        };
        let v = matmul_tune::pick_for(dev, m as u32, n as u32, k as u32)?;
        let (mut off, mut on) = (Vec::new(), Vec::new());
        for _ in 0..runs.max(5) {
            off.push(time_variant(dev, &args(false), v, 0)?);
            on.push(time_variant(dev, &args(true), v, 0)?);
        }
        // The first pair compiled the pipelines.
        let (f, h) = (median(off[1..].to_vec()), median(on[1..].to_vec()));
        println!(
            "{:<20}{:>14}{:>12.2}{:>12.2}{:>9.2}",
            format!("{m}×{n}×{k}"),
            v.name(),
            f * 1e3,
            h * 1e3,
            h / f
        );
    }
    Ok(())
}
