//! The choice between the fused attention kernels ([`crate::kernels::attention`]) and the
//! unfused path ([`crate::kernels::attention_unfused`]), per device and shape class.
//!
//! Shapes the fused kernels cannot take always go unfused: a padding mask, tq ≠ tk, dk ≠ dv,
//! a head size past [`MAX_HEAD_SIZE`], or queries, keys and values not in rows of one stride
//! (the fused kernels read one packed tensor). For the others, the configuration decides
//! (`SUANLI_ATTENTION=fused|unfused`), else the device's tuning cache, else both are timed
//! once (forward and backward, alternating, medians) on the class's representative shape and
//! the faster kept. A class is the head-size tier of the fused kernels (32, 64, 128), T
//! rounded up to a power of two, and causality; the representative has that T and head
//! size, with batch·heads 8.
//!
//! The two paths save different state for the backward pass (the fused one a log-sum-exp
//! per row, the unfused one the probabilities), so the choice is a value, [`Path`], that the
//! caller makes once (in `Layer::prepare`, through [`prepare`]) and keeps from forward to
//! backward. Timing submits work: it must never run inside a capture, and [`choose`] refuses
//! to tune there.

use std::time::Instant;

use crate::error::{Error, Result};
use crate::exec::dispatch::Record;
use crate::exec::recorder::Recorder;
use crate::kernels::attention::{self, Shape, MAX_HEAD_SIZE};
use crate::kernels::attention_unfused::{self as unfused, General};
use crate::kernels::{matmul_gen, matmul_tune, matmul_variant};
use crate::runtime::Device;
use crate::tensor::Tensor;

/// The tuning cache's family name.
const FAMILY: &str = "attention";

/// Which attention runs a shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Path {
    /// The fused kernels: memory linear in T, the log-sum-exp saved.
    Fused,
    /// Batched matmuls and the row softmax: the probabilities saved (B·H·T²).
    Unfused,
}

impl Path {
    /// The name `SUANLI_ATTENTION` and the tuning cache use.
    pub fn name(self) -> &'static str {
        match self {
            Path::Fused => "fused",
            Path::Unfused => "unfused",
        }
    }

    /// Parses [`Path::name`].
    pub fn parse(s: &str) -> Option<Path> {
        match s.trim() {
            "fused" => Some(Path::Fused),
            "unfused" => Some(Path::Unfused),
            _ => None,
        }
    }
}

/// The fused kernels' shape for `g`, if they can run it (see the module docs): then q, k and
/// v must be one buffer, and their gradients another.
pub fn fused_shape(g: &General) -> Option<Shape> {
    let same_rows = g.q.stride == g.k.stride && g.k.stride == g.v.stride;
    let fits = g.tq == g.tk && g.dk == g.dv && g.dk <= MAX_HEAD_SIZE && !g.masked && same_rows;
    fits.then_some(Shape {
        batch: g.batch,
        t: g.tq,
        heads: g.heads,
        d: g.dk,
        causal: g.causal,
        stride: g.q.stride,
        offsets: [g.q.off, g.k.off, g.v.off],
        o_stride: g.o.stride,
        scale: g.scale,
    })
}

/// The shape class of a shape the fused kernels take.
fn class(s: &Shape) -> String {
    let tier = s.d.next_power_of_two().max(32);
    let t = s.t.next_power_of_two();
    format!("d{tier}-t{t}-{}", if s.causal { "causal" } else { "full" })
}

/// A version string of both paths' kernels and of the matmuls the unfused one runs.
fn version() -> String {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    attention::SHADER.source.hash(&mut h);
    attention::SHADER_BACKWARD.source.hash(&mut h);
    unfused::SHADER.source.hash(&mut h);
    matmul_variant::SHADER.source.hash(&mut h);
    matmul_gen::hash_version(&mut h);
    format!("{:016x}", h.finish())
}

/// The choice already made for `g` on this device (never tunes): `Unfused` where the fused
/// kernels cannot run it.
pub fn chosen(dev: &Device, g: &General) -> Option<Path> {
    match fused_shape(g) {
        None => Some(Path::Unfused),
        Some(s) => dev
            .tune()
            .get(FAMILY, &class(&s))
            .and_then(|v: String| Path::parse(&v)),
    }
}

/// The path for `g`: forced by the configuration (`SUANLI_ATTENTION`), else cached, else
/// measured now. Call it before capturing a program that records attention (it also
/// prepares the matmul choice the unfused path uses).
pub fn prepare(dev: &Device, g: &General) -> Result<Path> {
    g.check()?;
    matmul_tune::prepare(dev)?;
    let Some(s) = fused_shape(g) else {
        return Ok(Path::Unfused);
    };
    let class = class(&s);
    // The configuration wins over a cached measurement.
    if let Some(name) = dev.config().attention.clone() {
        let p = Path::parse(&name).ok_or_else(|| Error::Config {
            key: "SUANLI_ATTENTION".into(),
            value: name.clone(),
            source_name: "configuration".into(),
            reason: "expected fused or unfused".into(),
        })?;
        dev.tune().set(FAMILY, &class, p.name());
        return Ok(p);
    }
    if let Some(p) = dev
        .tune()
        .get(FAMILY, &class)
        .and_then(|v: String| Path::parse(&v))
    {
        return Ok(p);
    }
    let name = dev.tune().choose(
        FAMILY,
        &class,
        &version(),
        |v| Path::parse(v).is_some(),
        || tune(dev, &s).map(|p| p.name().to_string()),
    )?;
    Path::parse(&name).ok_or_else(|| Error::Internal {
        op: "attention",
        message: format!("the tuning cache holds an unknown path {name:?}"),
    })
}

/// The path for `g` when recording: inside a capture the choice must have been made
/// ([`prepare`]); outside, it is made now.
pub fn choose(rec: &dyn Record, g: &General) -> Result<Path> {
    if !rec.is_capture() {
        return prepare(rec.device(), g);
    }
    chosen(rec.device(), g).ok_or_else(|| Error::Internal {
        op: "attention",
        message: "attention_tune::prepare must run before a capture records attention".into(),
    })
}

/// Rounds of the tuner: each times both paths once.
const ROUNDS: usize = 5;

/// Times both paths (forward and backward) on the class's representative shape: head size
/// and T of `s`, batch·heads 8 (2 sequences of 4 heads), packed. Returns the faster.
pub fn tune(dev: &Device, s: &Shape) -> Result<Path> {
    let (t, d) = (s.t.next_power_of_two(), s.d);
    let rep = Shape::packed(2, t, 4, d, s.causal);
    let g = General::packed(2, t, 4, d, s.causal);
    let bufs = Buffers::new(dev, &rep, &g)?;
    let mut times = [Vec::new(), Vec::new()];
    for round in 0..=ROUNDS {
        for (i, path) in [Path::Fused, Path::Unfused].into_iter().enumerate() {
            let secs = time_once(dev, &rep, &g, &bufs, path, true)?;
            if round > 0 {
                times[i].push(secs); // round 0 compiles
            }
        }
    }
    let med = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (f, u) = (med(&mut times[0]), med(&mut times[1]));
    let p = if f <= u { Path::Fused } else { Path::Unfused };
    log::info!(
        "attention tuning on {} ({}): fused {:.3} ms, unfused {:.3} ms; chose {}",
        dev.name(),
        class(s),
        f * 1e3,
        u * 1e3,
        p.name()
    );
    Ok(p)
}

/// The tensors of one attention on either path.
pub struct Buffers {
    qkv: Tensor,
    d_o: Tensor,
    o: Tensor,
    dqkv: Tensor,
    /// LSE and delta (fused); unused by the unfused path.
    lse: Tensor,
    delta: Tensor,
    /// P and dP (unfused).
    p: Tensor,
    dp: Tensor,
}

impl Buffers {
    /// Random inputs and empty outputs for `s` (the fused shape) and `g` (the same shape,
    /// unfused).
    pub fn new(dev: &Device, s: &Shape, g: &General) -> Result<Buffers> {
        Ok(Buffers {
            qkv: Tensor::rand_uniform(dev, &[s.qkv_len()], -1.0, 1.0, 1)?,
            d_o: Tensor::rand_uniform(dev, &[s.o_len()], -1.0, 1.0, 2)?,
            o: Tensor::empty(dev, &[s.o_len()])?,
            dqkv: Tensor::zeros(dev, &[s.qkv_len()])?,
            lse: Tensor::empty(dev, &[s.lse_len()])?,
            delta: Tensor::empty(dev, &[s.lse_len()])?,
            p: Tensor::empty(dev, &[g.probs_len()])?,
            dp: Tensor::empty(dev, &[g.probs_len()])?,
        })
    }
}

/// Records one attention on `path`: forward, and with `backward` the backward pass.
pub fn record(
    rec: &mut dyn Record,
    s: &Shape,
    g: &General,
    b: &Buffers,
    path: Path,
    backward: bool,
) -> Result<()> {
    let x = b.qkv.buffer();
    match path {
        Path::Fused => {
            attention::forward(rec, s, x, b.o.buffer(), b.lse.buffer())?;
            if backward {
                attention::backward(
                    rec,
                    s,
                    x,
                    b.o.buffer(),
                    b.d_o.buffer(),
                    b.lse.buffer(),
                    b.delta.buffer(),
                    b.dqkv.buffer(),
                )?;
            }
        }
        Path::Unfused => {
            unfused::probs(rec, g, x, x, None, b.p.buffer())?;
            unfused::output(rec, g, b.p.buffer(), x, b.o.buffer())?;
            if backward {
                let (p, dp, g_x) = (b.p.buffer(), b.dp.buffer(), b.dqkv.buffer());
                unfused::backward_v(rec, g, p, x, b.d_o.buffer(), g_x, dp)?;
                unfused::backward_qk(rec, g, p, dp, x, x, g_x, g_x)?;
            }
        }
    }
    Ok(())
}

/// Wall time in seconds of one recorded, submitted and awaited attention.
pub fn time_once(
    dev: &Device,
    s: &Shape,
    g: &General,
    b: &Buffers,
    path: Path,
    backward: bool,
) -> Result<f64> {
    let t0 = Instant::now();
    let mut rec = Recorder::new(dev);
    record(&mut rec, s, g, b, path, backward)?;
    let idx = rec.submit()?;
    dev.core().wait(Some(idx), "attention timing")?;
    Ok(t0.elapsed().as_secs_f64())
}
