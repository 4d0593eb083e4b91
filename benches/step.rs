//! What one MNIST training step costs, dispatch by dispatch: each of the step's kernels is
//! captured once and replayed `REPS` times in one submission (as training replays them), and
//! the median over 5 submissions of the wall time per replay is printed. On lavapipe this
//! shows the fixed cost of a dispatch (the thread pool's wake-up, 40-60 µs on a 2-core VM)
//! next to the kernels' own work, and what fusing the optimizer into the weight-gradient
//! products saves.
//!
//! ```text
//! cargo bench --bench step            # batch 32
//! cargo bench --bench step -- 128     # another batch size
//! FIRST=1 cargo bench --bench step     # also the first submission of each (cold compile)
//! ```

use std::time::Instant;

use suanli::exec::{Capture, Record, Recorder};
use suanli::internals::kernels::matmul::{Epilogue, MatmulArgs, Update};
use suanli::internals::kernels::{matmul_tune, optim};
use suanli::{Activation, Device, Layout, Result, Rule, Tensor};

const REPS: usize = 200;

/// Median µs per replay of what `f` records; with `FIRST` set, also prints how long the first
/// submission took (pipeline compilation on a cold shader cache, then `REPS` replays).
fn time(dev: &Device, mut f: impl FnMut(&mut dyn Record) -> Result<()>) -> Result<f64> {
    matmul_tune::prepare(dev)?;
    let mut cap = Capture::new(dev);
    f(&mut cap)?;
    let prog = cap.finish();
    let mut ts = Vec::new();
    for i in 0..6 {
        let t0 = Instant::now();
        let mut rec = Recorder::new(dev);
        for _ in 0..REPS {
            rec.replay(&prog);
        }
        rec.submit()?;
        dev.synchronize()?;
        if i > 0 {
            ts.push(t0.elapsed().as_secs_f64() / REPS as f64 * 1e6);
        } else if std::env::var_os("FIRST").is_some() {
            print!(
                "[first submission {:7.1} ms] ",
                t0.elapsed().as_secs_f64() * 1e3
            );
        }
    }
    ts.sort_by(f64::total_cmp);
    Ok(ts[ts.len() / 2])
}

struct Mm<'a> {
    a: &'a Tensor,
    b: &'a Tensor,
    c: &'a Tensor,
    mnk: (usize, usize, usize),
    layout: Layout,
}

impl Mm<'_> {
    fn record(&self, rec: &mut dyn Record, epilogue: Epilogue<'_>, act: Activation) -> Result<()> {
        matmul_tune::record(
            rec,
            &MatmulArgs {
                a: self.a.buffer(),
                b: self.b.buffer(),
                epilogue,
                c: self.c.buffer(),
                m: self.mnk.0 as u32,
                n: self.mnk.1 as u32,
                k: self.mnk.2 as u32,
                layout: self.layout,
                act,
                accumulate: false,
                half: false,
            },
        )
    }

    fn flops(&self) -> f64 {
        2.0 * (self.mnk.0 * self.mnk.1 * self.mnk.2) as f64
    }
}

fn main() -> Result<()> {
    let b: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(32);
    let dev = Device::open("auto")?;
    let t = |s: &[usize], seed| Tensor::rand_uniform(&dev, s, -1.0, 1.0, seed);
    let x = t(&[b, 784], 1)?;
    let (w1, b1, h1) = (t(&[784, 128], 2)?, t(&[128], 3)?, t(&[b, 128], 4)?);
    let (w2, b2, h2) = (t(&[128, 64], 5)?, t(&[64], 6)?, t(&[b, 64], 7)?);
    let (w3, b3, h3) = (t(&[64, 10], 8)?, t(&[10], 9)?, t(&[b, 10], 10)?);
    let (g1, g2, g3) = (t(&[784, 128], 11)?, t(&[128, 64], 12)?, t(&[64, 10], 13)?);
    let (gb1, gb2, gb3) = (t(&[128], 14)?, t(&[64], 15)?, t(&[10], 16)?);
    let (d1, d2) = (t(&[b, 128], 17)?, t(&[b, 64], 18)?);
    let rule = Rule::Adam {
        lr: 1e-3,
        beta1: 0.9,
        beta2: 0.999,
        eps: 1e-7,
        weight_decay: 0.0,
        decoupled: false,
    };
    println!(
        "{} | batch {b} | {REPS} replays per submission, median of 5 | µs per dispatch",
        dev.name()
    );
    println!("{:34} {:>9} {:>9}", "dispatch", "µs", "GFLOP/s");
    let row = |name: &str, us: f64, flops: f64| {
        let rate = if flops > 0.0 {
            format!("{:9.2}", flops / us / 1e3)
        } else {
            format!("{:>9}", "-")
        };
        println!("{name:34} {us:9.1} {rate}");
        us
    };
    let fwd = [
        (
            "forward 784→128 (+bias, relu)",
            Mm {
                a: &x,
                b: &w1,
                c: &h1,
                mnk: (b, 128, 784),
                layout: Layout::NN,
            },
            &b1,
            Activation::Relu,
        ),
        (
            "forward 128→64 (+bias, relu)",
            Mm {
                a: &h1,
                b: &w2,
                c: &h2,
                mnk: (b, 64, 128),
                layout: Layout::NN,
            },
            &b2,
            Activation::Relu,
        ),
        (
            "forward 64→10 (+bias)",
            Mm {
                a: &h2,
                b: &w3,
                c: &h3,
                mnk: (b, 10, 64),
                layout: Layout::NN,
            },
            &b3,
            Activation::Linear,
        ),
    ];
    let mut common = 0.0;
    for (name, mm, bias, act) in &fwd {
        common += row(
            name,
            time(&dev, |r| mm.record(r, Epilogue::Bias(bias.buffer()), *act))?,
            mm.flops(),
        );
    }
    let dx = [
        (
            "input grad 10→64 (⊙ relu')",
            Mm {
                a: &h3,
                b: &w3,
                c: &d2,
                mnk: (b, 64, 10),
                layout: Layout::NT,
            },
            &h2,
        ),
        (
            "input grad 64→128 (⊙ relu')",
            Mm {
                a: &d2,
                b: &w2,
                c: &d1,
                mnk: (b, 128, 64),
                layout: Layout::NT,
            },
            &h1,
        ),
    ];
    for (name, mm, gate) in &dx {
        common += row(
            name,
            time(&dev, |r| {
                mm.record(
                    r,
                    Epilogue::Gate(gate.buffer(), Activation::Relu),
                    Activation::Linear,
                )
            })?,
            mm.flops(),
        );
    }
    let dw = [
        (
            "64×10",
            Mm {
                a: &h2,
                b: &h3,
                c: &g3,
                mnk: (64, 10, b),
                layout: Layout::TN,
            },
            &w3,
            &gb3,
            &b3,
        ),
        (
            "128×64",
            Mm {
                a: &h1,
                b: &d2,
                c: &g2,
                mnk: (128, 64, b),
                layout: Layout::TN,
            },
            &w2,
            &gb2,
            &b2,
        ),
        (
            "784×128",
            Mm {
                a: &x,
                b: &d1,
                c: &g1,
                mnk: (784, 128, b),
                layout: Layout::TN,
            },
            &w1,
            &gb1,
            &b1,
        ),
    ];
    // Separate: gradients into buffers, then one Adam dispatch per parameter tensor.
    let mut separate = 0.0;
    for (name, mm, _, gb, _) in &dw {
        separate += row(
            &format!("weight grad {name} (+bias grad)"),
            time(&dev, |r| {
                mm.record(r, Epilogue::ColSum(gb.buffer()), Activation::Linear)
            })?,
            mm.flops(),
        );
    }
    for (p, g) in [
        (&w1, &g1),
        (&b1, &gb1),
        (&w2, &g2),
        (&b2, &gb2),
        (&w3, &g3),
        (&b3, &gb3),
    ] {
        let n = p.numel();
        let s: Vec<Tensor> = (0..2)
            .map(|_| Tensor::zeros(&dev, &[n]))
            .collect::<Result<_>>()?;
        let us = time(&dev, |r| {
            optim::step(
                r,
                &rule,
                g.buffer(),
                p.buffer(),
                &[s[0].buffer(), s[1].buffer()],
                n,
                1,
            )
        })?;
        separate += row(&format!("adam, {n} parameters"), us, 0.0);
    }
    // Fused: each weight-gradient product applies Adam to the weight and bias in place.
    let mut fused = 0.0;
    for (name, mm, w, _, bias) in &dw {
        let n = w.numel();
        let st: Vec<Tensor> = (0..2)
            .map(|_| Tensor::zeros(&dev, &[n]))
            .collect::<Result<_>>()?;
        let bst: Vec<Tensor> = (0..2)
            .map(|_| Tensor::zeros(&dev, &[bias.numel()]))
            .collect::<Result<_>>()?;
        let sb: Vec<&wgpu::Buffer> = st.iter().map(|t| t.buffer()).collect();
        let bsb: Vec<&wgpu::Buffer> = bst.iter().map(|t| t.buffer()).collect();
        let upd = Mm {
            a: mm.a,
            b: mm.b,
            c: w,
            mnk: mm.mnk,
            layout: Layout::TN,
        };
        let epi = Epilogue::Update(Update {
            rule,
            step: 1,
            state: &sb,
            bias: Some((bias.buffer(), &bsb)),
        });
        fused += row(
            &format!("weight grad {name} + adam (fused)"),
            time(&dev, |r| upd.record(r, epi, Activation::Linear))?,
            mm.flops(),
        );
    }
    println!();
    println!("forward and input gradients  {common:9.1} µs (5 dispatches)");
    println!("weight gradients, separate   {separate:9.1} µs (9 dispatches)");
    println!(
        "weight gradients, fused      {fused:9.1} µs (3 dispatches)   fused/separate {:.2}",
        fused / separate
    );
    Ok(())
}
