//! The per-device choice of convolution kernels, one per pass (the shape class): forced by
//! the configuration (`SUANLI_MATMUL` names the matmul variant, whose twins the
//! convolutions then use too), else the device's cached measurement, else measured now.
//!
//! The candidates are the matmul's ([`crate::kernels::matmul_variant::candidates`]); each
//! pass is timed on a convolution of a middle-sized network ([`tuning_geometry`]) and the
//! fastest kept in the device's tuning cache
//! (memory and disk), alternating candidates within rounds as the matmul tuner does. Narrow
//! and shallow shapes then go to their kernels by [`Variant::for_shape`]. Training plans call
//! [`prepare`] before they capture: tuning submits work of its own.

use std::time::Instant;

use crate::error::{Error, Result};
use crate::exec::recorder::Recorder;
use crate::kernels::conv2d::{self, Geometry, Op, WeightsOut};
use crate::kernels::conv2d_direct;
use crate::kernels::matmul_gen;
use crate::kernels::matmul_tune;
use crate::kernels::matmul_variant::{candidates, Variant, SHADER};
use crate::runtime::Device;
use crate::tensor::Tensor;
use crate::vocab::Activation;

/// The tuning cache's family name.
const FAMILY: &str = "conv2d";

/// A version string of the kernels and the timed shape: editing either measures again.
fn version() -> String {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    SHADER.source.hash(&mut h);
    matmul_gen::hash_version(&mut h);
    conv2d::SHADER.source.hash(&mut h);
    // A different timed shape may choose differently.
    format!("{:?}", tuning_geometry()).hash(&mut h);
    format!("{:016x}", h.finish())
}

/// The convolution the tuner times: a middle layer of a small image network (batch 32,
/// 16×16×32 → 64, 3×3, same padding: a forward GEMM of 8192 × 64 × 288). Smaller shapes
/// favoured short kernels that lose on real layers.
pub fn tuning_geometry() -> Geometry {
    Geometry {
        batch: 32,
        h: 16,
        w: 16,
        c: 32,
        oh: 16,
        ow: 16,
        oc: 64,
        kh: 3,
        kw: 3,
        sh: 1,
        sw: 1,
        ph: 1,
        pw: 1,
        dh: 1,
        dw: 1,
        half: false,
    }
}

/// The choice already made for `op` on this device, if any (never tunes).
pub fn chosen(dev: &Device, op: Op) -> Option<Variant> {
    dev.tune()
        .get(FAMILY, op.name())
        .and_then(|s: String| Variant::parse(&s))
}

/// The kernel for `op` on `dev`: inside a capture the choice must have been made
/// ([`prepare`]); outside it is made now.
pub fn variant(dev: &Device, op: Op, in_capture: bool) -> Result<Variant> {
    if in_capture {
        return chosen(dev, op).ok_or_else(|| Error::Internal {
            op: "conv2d",
            message: "conv2d_tune::prepare must run before a capture records a convolution".into(),
        });
    }
    prepare_op(dev, op)
}

/// The kernel a pass of `g` runs with on `dev`: the device's choice for the pass, routed by
/// shape to the narrow and shallow kernels as for a matmul ([`Variant::for_shape`]). Inside a
/// capture the choice must have been made ([`prepare`]).
pub fn pick(dev: &Device, g: &Geometry, op: Op, in_capture: bool) -> Result<Variant> {
    let (m, n, k) = g.gemm(op);
    Ok(variant(dev, op, in_capture)?.for_shape_on(m, n, k, dev.info()))
}

/// Makes every pass's choice (and the matmul's), the direct kernel's included. Call it (or
/// [`prepare_for`]) before capturing a program that records convolutions.
pub fn prepare(dev: &Device) -> Result<()> {
    prepare_gemm(dev)?;
    prepare_direct(dev)?;
    Ok(())
}

/// [`prepare`] for a program whose convolution is `g`: the direct kernel is timed only when
/// `g` could run on it ([`direct_candidate`]), so a network without a first layer of the
/// kind pays no timing.
pub fn prepare_for(dev: &Device, g: &Geometry) -> Result<()> {
    prepare_gemm(dev)?;
    if direct_candidate(g) {
        prepare_direct(dev)?;
    }
    Ok(())
}

/// Every GEMM pass's choice (and the matmul's).
fn prepare_gemm(dev: &Device) -> Result<()> {
    matmul_tune::prepare(dev)?;
    for op in Op::ALL {
        prepare_op(dev, op)?;
    }
    Ok(())
}

/// The tuning cache's class of the direct kernel's choice.
const DIRECT: &str = "forward_direct";

/// The largest K the direct kernel is chosen for: the timed layer's class (K = 9). On
/// lavapipe it lost to the GEMM at K = 27 (an RGB 3×3 layer: 1.8 against 2.1 GFLOP/s,
/// `benches/conv.rs`, 2026-12-07), where the GEMM's K step is no longer mostly padding.
const DIRECT_MAX_K: usize = 16;

/// The most input channels the direct kernel is chosen for: a first layer's (grey, RGB,
/// RGBA). One timing on a C = 1 layer decides for every candidate, so the class stays
/// close to it: a 1×1 convolution over 5 to 16 channels also has K ≤ 16, but it is an inner
/// layer whose GEMM (K = C) was never timed against the kernel.
const DIRECT_MAX_C: usize = 4;

/// Whether the timed choice decides `g`: it can run on the direct kernel
/// ([`conv2d_direct::eligible`]), and is a first layer like the timed one (K ≤ 16, C ≤ 4).
pub fn direct_candidate(g: &Geometry) -> bool {
    conv2d_direct::eligible(g) && g.kh * g.kw * g.c <= DIRECT_MAX_K && g.c <= DIRECT_MAX_C
}

/// Whether `g`'s forward pass runs on the direct kernel on `dev`: `g` is a
/// [`direct_candidate`] (eligible, K ≤ 16, C ≤ 4) and the kernel beat the implicit GEMM
/// here. Inside a capture the choice must have been made ([`prepare`], [`prepare_for`]).
pub fn direct(dev: &Device, g: &Geometry, in_capture: bool) -> Result<bool> {
    if !direct_candidate(g) {
        return Ok(false);
    }
    if in_capture {
        return dev
            .tune()
            .get(FAMILY, DIRECT)
            .map(|s: String| s == "direct")
            .ok_or_else(|| Error::Internal {
                op: "conv2d",
                message: "conv2d_tune::prepare must run before a capture records a convolution"
                    .into(),
            });
    }
    prepare_direct(dev)
}

/// Forces the direct kernel's choice on `dev` for this process (memory only, like a
/// configured choice): on for every [`direct_candidate`], or off. For tests and benches
/// that must cover one path whatever the timing picks.
pub fn force_direct(dev: &Device, on: bool) {
    dev.tune()
        .set(FAMILY, DIRECT, if on { "direct" } else { "gemm" });
}

/// The direct kernel's choice: forced off by a forced matmul variant (`SUANLI_MATMUL` names
/// what every convolution runs), cached, or measured now.
fn prepare_direct(dev: &Device) -> Result<bool> {
    if let Some(s) = dev.tune().get(FAMILY, DIRECT) {
        return Ok(s == "direct");
    }
    if dev.config().matmul.is_some() {
        dev.tune().set(FAMILY, DIRECT, "gemm");
        return Ok(false);
    }
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    version().hash(&mut h);
    conv2d_direct::SHADER.source.hash(&mut h);
    format!("{:?}", direct_geometry()).hash(&mut h);
    let name = dev.tune().choose(
        FAMILY,
        DIRECT,
        &format!("{:016x}", h.finish()),
        |s| s == "direct" || s == "gemm",
        || tune_direct(dev),
    )?;
    Ok(name == "direct")
}

/// The tiny-K convolution the direct kernel is timed on: the MNIST convnet's first layer at
/// batch 32 (28×28×1 → 32, 3×3, valid: a GEMM of 21632 × 32 × 9).
pub fn direct_geometry() -> Geometry {
    Geometry {
        batch: 32,
        h: 28,
        w: 28,
        c: 1,
        oh: 26,
        ow: 26,
        oc: 32,
        kh: 3,
        kw: 3,
        sh: 1,
        sw: 1,
        ph: 0,
        pw: 0,
        dh: 1,
        dw: 1,
        half: false,
    }
}

/// Times the direct kernel against the device's GEMM choice on [`direct_geometry`]
/// (alternating, medians of [`TUNE_ROUNDS`]): "direct" or "gemm".
fn tune_direct(dev: &Device) -> Result<String> {
    let g = direct_geometry();
    let gemm = pick(dev, &g, Op::Forward, false)?;
    let (xn, yn, wn) = g.sizes();
    let x = Tensor::rand_uniform(dev, &[xn], -1.0, 1.0, 1)?;
    let w = Tensor::rand_uniform(dev, &[wn], -0.1, 0.1, 3)?;
    let b = Tensor::zeros(dev, &[g.oc])?;
    let y = Tensor::empty(dev, &[yn])?;
    let time = |direct: bool| -> Result<f64> {
        let t0 = Instant::now();
        let mut rec = Recorder::new(dev);
        let (xb, wb, bb, yb) = (x.buffer(), w.buffer(), Some(b.buffer()), y.buffer());
        if direct {
            conv2d_direct::forward(&mut rec, &g, xb, wb, bb, yb, Activation::Relu)?;
        } else {
            conv2d::forward(&mut rec, &g, xb, wb, bb, yb, Activation::Relu, gemm)?;
        }
        let idx = rec.submit()?;
        dev.core().wait(Some(idx), "conv2d timing")?;
        Ok(t0.elapsed().as_secs_f64())
    };
    time(true)?; // compiles them
    time(false)?;
    let (mut td, mut tg) = (Vec::new(), Vec::new());
    for _ in 0..TUNE_ROUNDS {
        td.push(time(true)?);
        tg.push(time(false)?);
    }
    let median = |mut t: Vec<f64>| {
        t.sort_by(f64::total_cmp);
        t[t.len() / 2]
    };
    let (td, tg) = (median(td), median(tg));
    let choice = if td < tg { "direct" } else { "gemm" };
    log::info!(
        "conv2d tiny-K forward on {}: direct {:.1} GFLOP/s, {} {:.1} GFLOP/s; chose {choice}",
        dev.name(),
        g.flops() / td / 1e9,
        gemm.name(),
        g.flops() / tg / 1e9,
    );
    Ok(choice.to_string())
}

/// The choice for `op`: forced, cached, or measured now.
fn prepare_op(dev: &Device, op: Op) -> Result<Variant> {
    if let Some(v) = chosen(dev, op) {
        return Ok(v);
    }
    if dev.config().matmul.is_some() {
        // A forced matmul variant forces its convolution twins too.
        let v = matmul_tune::prepare(dev)?;
        dev.tune().set(FAMILY, op.name(), &v.name());
        return Ok(v);
    }
    let name = dev.tune().choose(
        FAMILY,
        op.name(),
        &version(),
        |s| Variant::parse(s).is_some_and(|v| v.eligible(dev.info())),
        || tune(dev, op).map(|v| v.name()),
    )?;
    Variant::parse(&name).ok_or_else(|| Error::Internal {
        op: "conv2d",
        message: format!("the tuning cache holds an unknown variant {name:?}"),
    })
}

/// Rounds of the tuner: each times every candidate once.
const TUNE_ROUNDS: usize = 7;

/// Times every candidate on `op` of [`tuning_geometry`] (after a compile warm-up, the median
/// of alternating rounds) and returns the fastest.
pub fn tune(dev: &Device, op: Op) -> Result<Variant> {
    let cands = candidates(dev.info());
    if cands.len() == 1 {
        return Ok(cands[0]);
    }
    let g = tuning_geometry();
    let (xn, yn, wn) = g.sizes();
    let x = Tensor::rand_uniform(dev, &[xn], -1.0, 1.0, 1)?;
    let y = Tensor::rand_uniform(dev, &[yn], -1.0, 1.0, 2)?;
    let w = Tensor::rand_uniform(dev, &[wn], -0.1, 0.1, 3)?;
    let out = Tensor::empty(dev, &[xn.max(yn).max(wn) * 8])?;
    let b = Tensor::zeros(dev, &[g.oc])?;
    let time = |v: Variant| -> Result<f64> {
        let (m, n, k) = g.gemm(op);
        let v = v.for_shape_on(m, n, k, dev.info());
        let t0 = Instant::now();
        let mut rec = Recorder::new(dev);
        match op {
            Op::Forward => conv2d::forward(
                &mut rec,
                &g,
                x.buffer(),
                w.buffer(),
                Some(b.buffer()),
                out.buffer(),
                Activation::Relu,
                v,
            )?,
            Op::BackwardData => {
                conv2d::backward_data(&mut rec, &g, y.buffer(), w.buffer(), None, out.buffer(), v)?
            }
            Op::BackwardWeights => {
                let plan = conv2d::plan_weights(&g, v, dev.info().limits.max_loop_iterations);
                if plan.splits > 1 {
                    conv2d::weights_partial(
                        &mut rec,
                        &g,
                        x.buffer(),
                        y.buffer(),
                        out.buffer(),
                        None,
                        plan,
                        v,
                    )?;
                    conv2d::reduce(
                        &mut rec,
                        &g,
                        out.buffer(),
                        None,
                        plan,
                        WeightsOut::Grad {
                            dw: w.buffer(),
                            db: None,
                        },
                    )?;
                } else {
                    let out = WeightsOut::Grad {
                        dw: out.buffer(),
                        db: None,
                    };
                    conv2d::weights_direct(&mut rec, &g, x.buffer(), y.buffer(), out, v)?;
                }
            }
        }
        let idx = rec.submit()?;
        dev.core().wait(Some(idx), "conv2d timing")?;
        Ok(t0.elapsed().as_secs_f64())
    };
    for &v in &cands {
        time(v)?; // compiles it
    }
    let mut times = vec![Vec::with_capacity(TUNE_ROUNDS); cands.len()];
    for _ in 0..TUNE_ROUNDS {
        for (i, &v) in cands.iter().enumerate() {
            times[i].push(time(v)?);
        }
    }
    let mut best: Option<(f64, Variant)> = None;
    let mut report = Vec::new();
    for (&v, mut t) in cands.iter().zip(times) {
        t.sort_by(f64::total_cmp);
        let secs = t[t.len() / 2];
        report.push(format!(
            "{} {:.1} GFLOP/s",
            v.name(),
            g.flops() / secs / 1e9
        ));
        if best.is_none_or(|(t, _)| secs < t) {
            best = Some((secs, v));
        }
    }
    let v = best.map(|(_, v)| v).unwrap_or(Variant::Naive);
    log::info!(
        "conv2d {} tuning on {}: {}; chose {}",
        op.name(),
        dev.name(),
        report.join(", "),
        v.name()
    );
    Ok(v)
}
