//! Convolution benchmark: GFLOP/s of the forward, backward-data and backward-weights passes of
//! the MNIST convnet's layers and larger ones, each beside the plain matmul of the same GEMM
//! shape (M, N, K) with the same kernel family on the same adapter, alternating the two
//! within each round (this machine's speed drifts by ±25%). The ratio is what implicit
//! im2col costs: the A operand read through the convolution's index arithmetic instead of a
//! stored matrix. Wall clock per pass (submit and wait), median of the rounds. A tiny-K
//! layer's forward pass also runs on the direct kernel (`conv2d_direct`), in the same rounds:
//! its row says `direct`, and the device's choice between the two is printed.
//!
//! ```text
//! cargo bench --bench conv                # the table
//! cargo bench --bench conv -- quick       # fewer rounds
//! cargo bench --bench conv -- tiny        # one round at 1/16 of the batches (CI's smoke run)
//! ```

use std::time::Instant;

use suanli::exec::Recorder;
use suanli::internals::kernels::conv2d::{self, Geometry, Op, WeightsOut};
use suanli::internals::kernels::matmul::{record_with, Epilogue, MatmulArgs};
use suanli::internals::kernels::matmul_tune;
use suanli::internals::kernels::{conv2d_direct, conv2d_tune};
use suanli::{Activation, Device, Layout, Padding, Tensor};

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Seconds of one recorded, submitted and awaited piece of work.
fn time(dev: &Device, f: &mut dyn FnMut(&mut Recorder<'_>)) -> f64 {
    let t = Instant::now();
    let mut rec = Recorder::new(dev);
    f(&mut rec);
    rec.submit().unwrap();
    dev.synchronize().unwrap();
    t.elapsed().as_secs_f64()
}

fn main() -> suanli::Result<()> {
    let quick = std::env::args().any(|a| a == "quick");
    let tiny = std::env::args().any(|a| a == "tiny");
    let rounds = if tiny {
        1
    } else if quick {
        3
    } else {
        7
    };
    // The batch of a layer: as named, or a sixteenth of it in the smoke run.
    let bt = |b: usize| if tiny { (b / 16).max(2) } else { b };
    let dev = Device::open(&std::env::var("SUANLI_DEVICE").unwrap_or_else(|_| "auto".into()))?;
    println!(
        "device: {} ({}, {}, subgroup {:?})",
        dev.name(),
        dev.info().kind,
        dev.info().backend,
        dev.info().limits.subgroup_size
    );
    let t0 = Instant::now();
    matmul_tune::prepare(&dev)?;
    conv2d_tune::prepare(&dev)?;
    println!(
        "choices: matmul {}, conv forward {}, backward data {}, backward weights {} ({:.1} s, cached afterwards)\n",
        matmul_tune::chosen(&dev).map_or("?".into(), |v| v.name()),
        conv2d_tune::chosen(&dev, Op::Forward).map_or("?".into(), |v| v.name()),
        conv2d_tune::chosen(&dev, Op::BackwardData).map_or("?".into(), |v| v.name()),
        conv2d_tune::chosen(&dev, Op::BackwardWeights).map_or("?".into(), |v| v.name()),
        t0.elapsed().as_secs_f64()
    );
    let layers: Vec<(String, Geometry)> = vec![
        (
            format!("MNIST conv1 28x28x1->32 3x3 b{}", bt(128)),
            Geometry::new(
                bt(128),
                (28, 28, 1),
                32,
                (3, 3),
                (1, 1),
                (1, 1),
                Padding::Valid,
            )?,
        ),
        (
            format!("MNIST conv2 13x13x32->64 3x3 b{}", bt(128)),
            Geometry::new(
                bt(128),
                (13, 13, 32),
                64,
                (3, 3),
                (1, 1),
                (1, 1),
                Padding::Valid,
            )?,
        ),
        (
            // Issue 35's BatchNorm CNN's second layer: its backward data is the strided gather.
            format!("BN CNN conv2 14x14x32->64 3x3 s2 same b{}", bt(64)),
            Geometry::new(
                bt(64),
                (14, 14, 32),
                64,
                (3, 3),
                (2, 2),
                (1, 1),
                Padding::Same,
            )?,
        ),
        (
            format!("CIFAR conv1 32x32x3->32 3x3 same b{}", bt(64)),
            Geometry::new(
                bt(64),
                (32, 32, 3),
                32,
                (3, 3),
                (1, 1),
                (1, 1),
                Padding::Same,
            )?,
        ),
        (
            format!("32x32x64->64 3x3 same b{}", bt(64)),
            Geometry::new(
                bt(64),
                (32, 32, 64),
                64,
                (3, 3),
                (1, 1),
                (1, 1),
                Padding::Same,
            )?,
        ),
        (
            format!("16x16x128->128 3x3 same b{}", bt(32)),
            Geometry::new(
                bt(32),
                (16, 16, 128),
                128,
                (3, 3),
                (1, 1),
                (1, 1),
                Padding::Same,
            )?,
        ),
    ];
    println!(
        "{:<36} {:<17} {:>22} {:>9} {:>9} {:>10} {:>7}",
        "layer", "pass", "GEMM M x N x K", "kernel", "conv", "matmul", "ratio"
    );
    for (name, g) in &layers {
        let (xn, yn, wn) = g.sizes();
        let x = Tensor::rand_uniform(&dev, &[xn], -1.0, 1.0, 1)?;
        let dy = Tensor::rand_uniform(&dev, &[yn], -1.0, 1.0, 2)?;
        let w = Tensor::rand_uniform(&dev, &[wn], -0.1, 0.1, 3)?;
        let b = Tensor::zeros(&dev, &[g.oc])?;
        let out = Tensor::empty(&dev, &[xn.max(yn)])?;
        let wt = Tensor::empty(&dev, &[wn])?;
        for op in Op::ALL {
            let v = conv2d_tune::pick(&dev, g, op, false)?;
            let (m, n, k) = g.gemm(op);
            let plan = conv2d::plan_weights(g, v, dev.info().limits.max_loop_iterations);
            let part = Tensor::empty(&dev, &[plan.splits as usize * wn])?;
            let mut conv = |rec: &mut Recorder<'_>| match op {
                Op::Forward => conv2d::forward(
                    rec,
                    g,
                    x.buffer(),
                    w.buffer(),
                    Some(b.buffer()),
                    out.buffer(),
                    Activation::Relu,
                    v,
                )
                .unwrap(),
                Op::BackwardData => {
                    conv2d::transpose(rec, g, w.buffer(), wt.buffer()).unwrap();
                    conv2d::backward_data(rec, g, dy.buffer(), wt.buffer(), None, out.buffer(), v)
                        .unwrap()
                }
                Op::BackwardWeights => {
                    let o = WeightsOut::Grad {
                        dw: wt.buffer(),
                        db: None,
                    };
                    if plan.splits > 1 {
                        conv2d::weights_partial(
                            rec,
                            g,
                            x.buffer(),
                            dy.buffer(),
                            part.buffer(),
                            None,
                            plan,
                            v,
                        )
                        .unwrap();
                        conv2d::reduce(rec, g, part.buffer(), None, plan, o).unwrap();
                    } else {
                        conv2d::weights_direct(rec, g, x.buffer(), dy.buffer(), o, v).unwrap();
                    }
                }
            };
            // The matmul of the same shape and layout, same kernel family.
            let layout = if op == Op::BackwardWeights {
                Layout::TN
            } else {
                Layout::NN
            };
            // A stored im2col matrix larger than one storage binding (128 MiB on lavapipe)
            // cannot be multiplied at all: the conv pass is timed alone, which is the case
            // implicit im2col exists for.
            let fits = (m as u64 * k as u64).max(k as u64 * n as u64) * 4
                <= dev.info().limits.max_storage_binding;
            let (mut tc, mut tm, mut td) = (Vec::new(), Vec::new(), Vec::new());
            // The direct kernel, where it can run this pass.
            let with_direct = op == Op::Forward && conv2d_direct::eligible(g);
            let mut direct = |rec: &mut Recorder<'_>| {
                conv2d_direct::forward(
                    rec,
                    g,
                    x.buffer(),
                    w.buffer(),
                    Some(b.buffer()),
                    out.buffer(),
                    Activation::Relu,
                )
                .unwrap()
            };
            if with_direct {
                time(&dev, &mut direct); // compiles
            }
            time(&dev, &mut conv); // compiles
            if fits {
                let a = Tensor::rand_uniform(&dev, &[(m as usize * k as usize)], -1.0, 1.0, 4)?;
                let bm = Tensor::rand_uniform(&dev, &[(k as usize * n as usize)], -1.0, 1.0, 5)?;
                let c = Tensor::empty(&dev, &[(m as usize * n as usize)])?;
                let args = MatmulArgs {
                    a: a.buffer(),
                    b: bm.buffer(),
                    epilogue: Epilogue::None,
                    c: c.buffer(),
                    m,
                    n,
                    k,
                    layout,
                    act: Activation::Linear,
                    accumulate: false,
                    half: false,
                };
                let mut mm = |rec: &mut Recorder<'_>| record_with(rec, &args, v).unwrap();
                time(&dev, &mut mm); // compiles
                for _ in 0..rounds {
                    tc.push(time(&dev, &mut conv));
                    if with_direct {
                        td.push(time(&dev, &mut direct));
                    }
                    tm.push(time(&dev, &mut mm));
                }
            } else {
                for _ in 0..rounds {
                    tc.push(time(&dev, &mut conv));
                    if with_direct {
                        td.push(time(&dev, &mut direct));
                    }
                }
            }
            let flops = 2.0 * m as f64 * n as f64 * k as f64;
            let gc = flops / median(tc) / 1e9;
            let gm = fits.then(|| flops / median(tm.clone()) / 1e9);
            let cols = |gc: f64| match gm {
                Some(gm) => (format!("{gm:.1}"), format!("{:.0}%", 100.0 * gc / gm)),
                None => ("no fit".to_string(), "-".to_string()),
            };
            let (gm_s, ratio) = cols(gc);
            let pass = match op {
                Op::Forward => "forward".to_string(),
                Op::BackwardData => "backward data".to_string(),
                Op::BackwardWeights if plan.splits > 1 => format!("bw weights /{}", plan.splits),
                Op::BackwardWeights => "backward weights".to_string(),
            };
            println!(
                "{:<36} {:<17} {:>22} {:>9} {:>9.1} {:>10} {:>7}",
                name,
                pass,
                format!("{m} x {n} x {k}"),
                v.name(),
                gc,
                gm_s,
                ratio
            );
            if with_direct {
                let gd = flops / median(td) / 1e9;
                let (gm_s, ratio) = cols(gd);
                let chosen = conv2d_tune::direct(&dev, g, false)?;
                println!(
                    "{:<36} {:<17} {:>22} {:>9} {:>9.1} {:>10} {:>7}",
                    name,
                    if chosen {
                        "forward (chosen)"
                    } else {
                        "forward"
                    },
                    format!("{m} x {n} x {k}"),
                    "direct",
                    gd,
                    gm_s,
                    ratio
                );
            }
        }
    }
    println!("\nGFLOP/s of the GEMM's multiply-adds (the backward data pass of a strided convolution, and the padding taps of every backward data pass, count as done). \"no fit\": the stored im2col matrix of that GEMM exceeds one storage binding, so the plain matmul cannot run.");
    Ok(())
}
