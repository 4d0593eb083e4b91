//! The per-device matmul choice, one per shape class ([`Class`]): forced by the configuration
//! (`SUANLI_MATMUL`, every class), else the device's cached measurement, else measured now.
//!
//! The first matmul of a class on a device times every eligible candidate
//! ([`crate::kernels::matmul_variant::candidates`]) on the class's representative product
//! with bias and ReLU and keeps the fastest, in the device's tuning cache (memory and disk,
//! keyed by adapter, driver, crate version and the kernels' sources). Classes exist because
//! one choice does not fit all sizes: on the H200 the default class's pick ran 9.9 TFLOP/s at
//! 4096³ where `rb16x8` ran 25.0.
//!
//! Training plans call [`prepare`] before they capture anything: the tuner submits work of
//! its own and must never run inside a capture, so [`record`] never tunes there. A class not
//! yet tuned inside a capture uses the default class's choice (correct, possibly slower).

use std::time::Instant;

use crate::error::{Error, Result};
use crate::exec::dispatch::Record;
use crate::exec::recorder::Recorder;
use crate::kernels::matmul::{record_batched_with, record_with, Epilogue, MatmulArgs};
use crate::kernels::matmul_batch::Batch;
use crate::kernels::matmul_gen;
use crate::kernels::matmul_variant::{candidates_with, Variant, SHADER};
use crate::runtime::Device;
use crate::tensor::Tensor;
use crate::vocab::{Activation, Layout};

/// The tuning cache's family name.
const FAMILY: &str = "matmul";
/// A bucket of shapes with one tuned choice per device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    /// Layers' products and everything not large: tuned on 256×512×512.
    Default,
    /// Large products (M, N ≥ 2048 and K ≥ 1024), where a GPU's best tiles differ: tuned on
    /// 4096³ on a hardware GPU; on a software adapter on 1024³ (2 GFLOP), so that tuning
    /// takes seconds there rather than minutes.
    Large,
}

impl Class {
    /// Every class, in the order [`chosen_all`] reports them.
    pub const ALL: [Class; 2] = [Class::Default, Class::Large];

    /// The class of an M×N×K product.
    pub fn of(m: u32, n: u32, k: u32) -> Class {
        if m >= 2048 && n >= 2048 && k >= 1024 {
            Class::Large
        } else {
            Class::Default
        }
    }

    /// The tuning cache's key.
    pub fn name(self) -> &'static str {
        match self {
            Class::Default => "default",
            Class::Large => "large",
        }
    }

    /// The product the tuner times for this class on a GPU or a software adapter.
    fn tuning_shape(self, gpu: bool) -> (u32, u32, u32) {
        match (self, gpu) {
            (Class::Default, _) => (256, 512, 512),
            (Class::Large, true) => (4096, 4096, 4096),
            (Class::Large, false) => (1024, 1024, 1024),
        }
    }
}

/// The tuning cache's key of a class: a choice made with f16 products allowed
/// (`SUANLI_MATMUL_PRECISION=medium`) is not the choice without, so each setting keeps its own.
fn key(dev: &Device, class: Class) -> String {
    if dev.config().matmul_precision.allows_f16() {
        format!("{}-f16-allowed", class.name())
    } else {
        class.name().to_string()
    }
}

/// Whether the precision setting allows `v` (one source of truth for the tuner, the cache
/// and `SUANLI_MATMUL`).
fn allowed(dev: &Device, v: Variant) -> bool {
    v.allowed_under(dev.config().matmul_precision)
}

/// A version string of the matmul kernels: editing a kernel measures again.
fn version() -> String {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    SHADER.source.hash(&mut h);
    matmul_gen::hash_version(&mut h);
    format!("{:016x}", h.finish())
}

/// The default class's choice already made on this device, if any (never tunes).
pub fn chosen(dev: &Device) -> Option<Variant> {
    chosen_class(dev, Class::Default)
}

/// A class's choice already made on this device, if any (never tunes).
pub fn chosen_class(dev: &Device, class: Class) -> Option<Variant> {
    dev.tune()
        .get(FAMILY, &key(dev, class))
        .and_then(|s: String| Variant::parse(&s))
}

/// Every class with its choice on this device so far (`None`: not tuned yet), for reports
/// such as `--profile`.
pub fn chosen_all(dev: &Device) -> Vec<(Class, Option<Variant>)> {
    Class::ALL
        .iter()
        .map(|&c| (c, chosen_class(dev, c)))
        .collect()
}

/// The variant an M×N×K product runs with: its class's choice (tuned now outside a capture;
/// inside one the default class's, if the class was not tuned yet), then narrowed to the
/// narrow/shallow kernels for such shapes ([`Variant::for_shape_on`]).
fn pick(rec: &dyn Record, m: u32, n: u32, k: u32) -> Result<Variant> {
    let dev = rec.device();
    let class = Class::of(m, n, k);
    let v = if rec.is_capture() {
        chosen_class(dev, class)
            .or_else(|| chosen(dev))
            .ok_or_else(|| Error::Internal {
                op: "matmul",
                message: "matmul_tune::prepare must run before a capture records a matmul".into(),
            })?
    } else {
        prepare_class(dev, class)?
    };
    Ok(v.for_shape_on(m, n, k, dev.info()))
}

/// The variant [`record`] would run an M×N×K product with on this device (tunes the
/// product's class if it was not yet): what the matmul benchmark prints per shape.
pub fn pick_for(dev: &Device, m: u32, n: u32, k: u32) -> Result<Variant> {
    Ok(prepare_class(dev, Class::of(m, n, k))?.for_shape_on(m, n, k, dev.info()))
}

/// Records one matmul with the device's chosen variant for its shape class, or the
/// narrow/shallow kernels for such shapes (see [`Variant::for_shape`]). Tunes on first use
/// outside a capture; inside one the default choice must have been made ([`prepare`]).
pub fn record(rec: &mut dyn Record, args: &MatmulArgs<'_>) -> Result<()> {
    let v = pick(rec, args.m, args.n, args.k)?;
    record_with(rec, args, v)
}

/// Records a batch of matmuls ([`Batch`]) with the device's chosen variant for the shape, as
/// [`record`] does for one.
pub fn record_batched(rec: &mut dyn Record, args: &MatmulArgs<'_>, batch: &Batch) -> Result<()> {
    let v = pick(rec, args.m, args.n, args.k)?;
    record_batched_with(rec, args, batch, v)
}

/// [`record_batched`] for a product whose accuracy an algorithm depends on (the LU
/// factorisation's trailing update, the triangular solves): never a reduced-precision
/// kernel, even where `SUANLI_MATMUL_PRECISION=medium` lets the tuner pick one for the
/// device's products; such a choice runs its f32 shared-memory counterpart instead.
pub fn record_batched_f32(
    rec: &mut dyn Record,
    args: &MatmulArgs<'_>,
    batch: &Batch,
) -> Result<()> {
    let v = pick(rec, args.m, args.n, args.k)?;
    let v = if v.is_reduced_precision() {
        v.conv_fallback()
    } else {
        v
    };
    record_batched_with(rec, args, batch, v)
}

/// The device's matmul variant for the default class: forced by the configuration
/// (`SUANLI_MATMUL`), else cached, else measured now. Call it before capturing a program that
/// records matmuls.
pub fn prepare(dev: &Device) -> Result<Variant> {
    prepare_class(dev, Class::Default)
}

/// The device's matmul variant for a shape class, as [`prepare`] for the default one.
pub fn prepare_class(dev: &Device, class: Class) -> Result<Variant> {
    if let Some(v) = chosen_class(dev, class) {
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
        if !allowed(dev, v) {
            return Err(bad(format!(
                "{} multiplies in f16: allow it with SUANLI_MATMUL_PRECISION=medium (now {})",
                v.name(),
                dev.config().matmul_precision.name()
            )));
        }
        dev.tune().set(FAMILY, &key(dev, class), &v.name());
        return Ok(v);
    }
    let name = dev.tune().choose(
        FAMILY,
        &key(dev, class),
        &version(),
        |s| Variant::parse(s).is_some_and(|v| v.eligible(dev.info()) && allowed(dev, v)),
        || tune_class(dev, class).map(|v| v.name()),
    )?;
    Variant::parse(&name).ok_or_else(|| Error::Internal {
        op: "matmul",
        message: format!("the tuning cache holds an unknown variant {name:?}"),
    })
}

/// Rounds of the tuner: each times every candidate once.
const TUNE_ROUNDS: usize = 9;

/// Rounds for the large class: its products take 100× longer, and their timings vary less.
const TUNE_ROUNDS_LARGE: usize = 5;

/// Times every candidate on the default class's product, as [`tune_class`].
pub fn tune(dev: &Device) -> Result<Variant> {
    tune_class(dev, Class::Default)
}

/// Times every candidate on the class's NN product with bias and ReLU (after a warm-up, the
/// median of the rounds in which the candidates alternate) and returns the fastest. The
/// naive kernel is no candidate for the large class: it is the fallback of last resort and
/// would take seconds per product there.
pub fn tune_class(dev: &Device, class: Class) -> Result<Variant> {
    let (m, n, k) = class.tuning_shape(dev.is_gpu());
    let rounds = match class {
        Class::Default => TUNE_ROUNDS,
        Class::Large => TUNE_ROUNDS_LARGE,
    };
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
        half: false,
    };
    // Candidates alternate within each round, so a slow spell of a noisy machine (lavapipe
    // varies by ±30% over seconds) lands on all of them instead of deciding the choice.
    let mut cands = candidates_with(dev.info(), dev.config().matmul_precision);
    if class == Class::Large && cands.len() > 1 {
        cands.retain(|&v| v != Variant::Naive);
    }
    // Warm-up (compiles each; the first dispatch on lavapipe). The tensor-core kernels are
    // experimental in wgpu and have not yet run on a GPU: one that fails to compile or run,
    // or whose result is not the f32 kernels' within f16's error, is dropped with a warning
    // instead of failing every matmul on the device or being picked for its speed.
    cands.sort_by_key(|v| matches!(v, Variant::Coop { .. }));
    let mut reference: Option<Vec<f32>> = None;
    let mut kept = Vec::with_capacity(cands.len());
    for &v in &cands {
        let coop = matches!(v, Variant::Coop { .. });
        match time_variant(dev, &args, v, 0) {
            Ok(_) if !coop => {
                if reference.is_none() {
                    reference = Some(c.to_vec()?);
                }
                kept.push(v);
            }
            Ok(_) => match &reference {
                Some(r) if close(r, &c.to_vec()?) => kept.push(v),
                _ => log::warn!(
                    "matmul tuning on {}: {} differs from the f32 kernels; not used",
                    dev.name(),
                    v.name()
                ),
            },
            Err(e) if coop => log::warn!(
                "matmul tuning on {}: {} failed ({e}); not used",
                dev.name(),
                v.name()
            ),
            Err(e) => return Err(e),
        }
    }
    let cands = kept;
    let mut times = vec![Vec::with_capacity(rounds); cands.len()];
    for _ in 0..rounds {
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
            2.0 * f64::from(m) * f64::from(n) * f64::from(k) / secs / 1e9
        ));
        if best.is_none_or(|(t, _)| secs < t) {
            best = Some((secs, v));
        }
    }
    let v = best.map(|(_, v)| v).unwrap_or(Variant::Naive);
    log::info!(
        "matmul tuning ({} class, {m}×{n}×{k}) on {}: {}; chose {}",
        class.name(),
        dev.name(),
        report.join(", "),
        v.name()
    );
    Ok(v)
}

/// Whether a tensor-core kernel's result agrees with the f32 kernels' on the tuning product:
/// relative L2 error within 1% (f16 operands give about 3·10⁻⁴; a wrong kernel gives order 1).
fn close(reference: &[f32], got: &[f32]) -> bool {
    let (mut num, mut den) = (0.0f64, 0.0f64);
    for (&r, &g) in reference.iter().zip(got) {
        num += (f64::from(g) - f64::from(r)).powi(2);
        den += f64::from(r).powi(2);
    }
    reference.len() == got.len() && num.is_finite() && num <= 1e-4 * den.max(f64::MIN_POSITIVE)
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

#[cfg(test)]
mod tests {
    use super::close;

    #[test]
    fn the_tensor_core_check_takes_f16_error_and_rejects_wrong_results() {
        let r: Vec<f32> = (0..1000)
            .map(|i| ((i * 37 % 101) as f32 - 50.0) / 7.0)
            .collect();
        assert!(close(&r, &r));
        // f16 operands: about 3·10⁻⁴ relative, well inside.
        let f16ish: Vec<f32> = r
            .iter()
            .enumerate()
            .map(|(i, &x)| x * (1.0 + if i % 2 == 0 { 6e-4 } else { -6e-4 }))
            .collect();
        assert!(close(&r, &f16ish));
        // A wrong kernel: zeros, a transposed-looking permutation, NaN, a short result.
        assert!(!close(&r, &vec![0.0; r.len()]));
        let mut shuffled = r.clone();
        shuffled.reverse();
        assert!(!close(&r, &shuffled));
        let mut nan = r.clone();
        nan[3] = f32::NAN;
        assert!(!close(&r, &nan));
        assert!(!close(&r, &r[..999]));
    }
}
