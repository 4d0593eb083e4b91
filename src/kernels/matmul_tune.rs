//! The per-device matmul choice: forced by the configuration (`SUANLI_MATMUL`), else the
//! device's cached measurement, else measured now.
//!
//! The first matmul on a device times every eligible candidate
//! ([`crate::kernels::matmul_variant::candidates`]) on a 256×512×512 product with bias and
//! ReLU (a few milliseconds each, plus compilation) and keeps the fastest, in the device's
//! tuning cache (memory and disk, keyed by adapter, driver, crate version and the kernels'
//! sources). Training plans call [`prepare`] before they capture anything: the tuner submits
//! work of its own and must never run inside a capture, so [`record`] refuses to tune there.

use std::time::Instant;

use crate::error::{Error, Result};
use crate::exec::dispatch::Record;
use crate::exec::recorder::Recorder;
use crate::kernels::matmul::{record_batched_with, record_with, Epilogue, MatmulArgs};
use crate::kernels::matmul_batch::Batch;
use crate::kernels::matmul_gen;
use crate::kernels::matmul_variant::{candidates, Variant, SHADER};
use crate::runtime::Device;
use crate::tensor::Tensor;
use crate::vocab::{Activation, Layout};

/// The tuning cache's family name.
const FAMILY: &str = "matmul";
/// The shape class: one choice per device for now.
const CLASS: &str = "default";

/// A version string of the matmul kernels: editing a kernel measures again.
fn version() -> String {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    SHADER.source.hash(&mut h);
    matmul_gen::hash_version(&mut h);
    format!("{:016x}", h.finish())
}

/// The choice already made on this device, if any (never tunes).
pub fn chosen(dev: &Device) -> Option<Variant> {
    dev.tune()
        .get(FAMILY, CLASS)
        .and_then(|s: String| Variant::parse(&s))
}

/// Records one matmul with the device's chosen variant, or the narrow/shallow kernels for
/// such shapes (see [`Variant::for_shape`]). Tunes on first use outside a capture; inside one
/// the choice must have been made ([`prepare`]).
pub fn record(rec: &mut dyn Record, args: &MatmulArgs<'_>) -> Result<()> {
    let v = if rec.is_capture() {
        chosen(rec.device()).ok_or_else(|| Error::Internal {
            op: "matmul",
            message: "matmul_tune::prepare must run before a capture records a matmul".into(),
        })?
    } else {
        prepare(rec.device())?
    };
    let v = v.for_shape_on(args.m, args.n, args.k, rec.device().info());
    record_with(rec, args, v)
}

/// Records a batch of matmuls ([`Batch`]) with the device's chosen variant for the shape, as
/// [`record`] does for one.
pub fn record_batched(rec: &mut dyn Record, args: &MatmulArgs<'_>, batch: &Batch) -> Result<()> {
    let v = if rec.is_capture() {
        chosen(rec.device()).ok_or_else(|| Error::Internal {
            op: "matmul",
            message: "matmul_tune::prepare must run before a capture records a matmul".into(),
        })?
    } else {
        prepare(rec.device())?
    };
    let v = v.for_shape_on(args.m, args.n, args.k, rec.device().info());
    record_batched_with(rec, args, batch, v)
}

/// The device's matmul variant: forced by the configuration (`SUANLI_MATMUL`), else cached,
/// else measured now. Call it before capturing a program that records matmuls.
pub fn prepare(dev: &Device) -> Result<Variant> {
    if let Some(v) = chosen(dev) {
        return Ok(v);
    }
    if let Some(name) = dev.config().matmul.clone() {
        let bad = |reason: String| Error::Config {
            key: "SUANLI_MATMUL".into(),
            value: name.clone(),
            source_name: "configuration".into(),
            reason,
        };
        let v = Variant::parse(&name)
            .ok_or_else(|| bad(format!("expected one of {}", Variant::names().join(", "))))?;
        if !v.eligible(dev.info()) {
            return Err(bad(format!("{} cannot run this variant", dev.name())));
        }
        dev.tune().set(FAMILY, CLASS, &v.name());
        return Ok(v);
    }
    let name = dev.tune().choose(
        FAMILY,
        CLASS,
        &version(),
        |s| Variant::parse(s).is_some_and(|v| v.eligible(dev.info())),
        || tune(dev).map(|v| v.name()),
    )?;
    Variant::parse(&name).ok_or_else(|| Error::Internal {
        op: "matmul",
        message: format!("the tuning cache holds an unknown variant {name:?}"),
    })
}

/// Rounds of the tuner: each times every candidate once.
const TUNE_ROUNDS: usize = 9;

/// Times every candidate on a 256×512×512 NN product with bias and ReLU (after a warm-up, the
/// median of 9 rounds in which the candidates alternate) and returns the
/// fastest.
pub fn tune(dev: &Device) -> Result<Variant> {
    let (m, n, k) = (256u32, 512u32, 512u32);
    let a = Tensor::rand_uniform(dev, &[m as usize, k as usize], -1.0, 1.0, 1)?;
    let b = Tensor::rand_uniform(dev, &[k as usize, n as usize], -1.0, 1.0, 2)?;
    let c = Tensor::empty(dev, &[m as usize, n as usize])?;
    let bias = Tensor::zeros(dev, &[n as usize])?;
    // A dense layer's forward (bias + ReLU): the pipeline the tuner compiles for the winner is
    // then the one training uses, instead of one compiled only to be timed.
    let args = MatmulArgs {
        a: a.buffer(),
        b: b.buffer(),
        epilogue: Epilogue::Bias(bias.buffer()),
        c: c.buffer(),
        m,
        n,
        k,
        layout: Layout::NN,
        act: Activation::Relu,
        accumulate: false,
    };
    // Candidates alternate within each round, so a slow spell of a noisy machine (lavapipe
    // varies by ±30% over seconds) lands on all of them instead of deciding the choice.
    let cands = candidates(dev.info());
    for &v in &cands {
        time_variant(dev, &args, v, 0)?; // compiles it (first dispatch on lavapipe)
    }
    let mut times = vec![Vec::with_capacity(TUNE_ROUNDS); cands.len()];
    for _ in 0..TUNE_ROUNDS {
        for (i, &v) in cands.iter().enumerate() {
            times[i].push(time_once(dev, &args, v)?);
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
            2.0 * (m * n * k) as f64 / secs / 1e9
        ));
        if best.is_none_or(|(t, _)| secs < t) {
            best = Some((secs, v));
        }
    }
    let v = best.map(|(_, v)| v).unwrap_or(Variant::Naive);
    log::info!(
        "matmul tuning on {}: {}; chose {}",
        dev.name(),
        report.join(", "),
        v.name()
    );
    Ok(v)
}

/// Median wall time in seconds of one matmul with `variant` over `runs` runs, after one
/// warm-up run (with `runs` 0, the warm-up's time).
pub fn time_variant(
    dev: &Device,
    args: &MatmulArgs<'_>,
    variant: Variant,
    runs: usize,
) -> Result<f64> {
    let warm = time_once(dev, args, variant)?;
    if runs == 0 {
        return Ok(warm);
    }
    let mut times = (0..runs)
        .map(|_| time_once(dev, args, variant))
        .collect::<Result<Vec<_>>>()?;
    times.sort_by(f64::total_cmp);
    Ok(times[times.len() / 2])
}

/// Wall time in seconds of one recorded, submitted and awaited matmul.
fn time_once(dev: &Device, args: &MatmulArgs<'_>, variant: Variant) -> Result<f64> {
    let t0 = Instant::now();
    let mut rec = Recorder::new(dev);
    record_with(&mut rec, args, variant)?;
    let idx = rec.submit()?;
    dev.core().wait(Some(idx), "matmul timing")?;
    Ok(t0.elapsed().as_secs_f64())
}
