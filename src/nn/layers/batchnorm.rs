//! The [`BatchNormalization`] layer over the last axis (channels), as Keras's: while
//! training, each channel is normalised with the batch's mean and (biased) variance, then
//! scaled by γ and shifted by β; the moving mean and variance follow the batch statistics with
//! `momentum` (0.99) and serve inference (evaluation, validation, prediction). ε is 0.001.
//!
//! γ and β are trainable parameters without a fused update: their gradients (Σ dy·x̂, Σ dy)
//! come from reductions, not a GEMM, so the engine steps them with the optimizer kernel
//! ([`crate::nn::layer::WeightGrad::apply`]). The moving statistics are state: saved, loaded,
//! checkpointed and resumed with the weights, never seen by the optimizer.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::kernels::batchnorm::{self, BnShape};
use crate::nn::layer::{Back, Cx, Dx, Io, Layer, Mode, Position, Saved, Weights};
use crate::nn::spec::{Init, LayerKind, Shape, WeightSpec};
use crate::tensor::Tensor;

fn minus_one() -> i64 {
    -1
}
fn momentum() -> f32 {
    0.99
}
fn epsilon() -> f32 {
    1e-3
}
fn yes() -> bool {
    true
}
fn zeros() -> String {
    "zeros".into()
}
fn ones() -> String {
    "ones".into()
}

/// Keras's `BatchNormalization` over the channels (the last axis), with its defaults.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BatchNormalization {
    /// The normalised axis (only -1, the channels; 3 for images is the same axis).
    #[serde(default = "minus_one")]
    pub axis: i64,
    /// Momentum of the moving statistics (default 0.99).
    #[serde(default = "momentum")]
    pub momentum: f32,
    /// ε (default 0.001).
    #[serde(default = "epsilon")]
    pub epsilon: f32,
    /// Add β (default true).
    #[serde(default = "yes")]
    pub center: bool,
    /// Multiply by γ (default true).
    #[serde(default = "yes")]
    pub scale: bool,
    /// β's initializer (`"zeros"` only).
    #[serde(default = "zeros")]
    pub beta_initializer: String,
    /// γ's initializer (`"ones"` only).
    #[serde(default = "ones")]
    pub gamma_initializer: String,
    /// The moving mean's initializer (`"zeros"` only).
    #[serde(default = "zeros")]
    pub moving_mean_initializer: String,
    /// The moving variance's initializer (`"ones"` only).
    #[serde(default = "ones")]
    pub moving_variance_initializer: String,
    /// The input shape, on the first layer (builder only: the spec carries it).
    #[serde(skip)]
    pub(crate) input: Option<Shape>,
}

impl Default for BatchNormalization {
    fn default() -> Self {
        BatchNormalization {
            axis: -1,
            momentum: momentum(),
            epsilon: epsilon(),
            center: true,
            scale: true,
            beta_initializer: zeros(),
            gamma_initializer: ones(),
            moving_mean_initializer: zeros(),
            moving_variance_initializer: ones(),
            input: None,
        }
    }
}

impl BatchNormalization {
    /// A normalisation with Keras's defaults.
    pub fn new() -> BatchNormalization {
        BatchNormalization::default()
    }

    /// Sets the momentum of the moving statistics.
    pub fn momentum(mut self, m: f32) -> Self {
        self.momentum = m;
        self
    }

    /// Sets ε.
    pub fn epsilon(mut self, e: f32) -> Self {
        self.epsilon = e;
        self
    }

    /// Sets the per-sample input shape (first layer).
    pub fn input_shape(mut self, shape: &[usize]) -> Self {
        self.input = Some(shape.to_vec());
        self
    }
}

impl LayerKind for BatchNormalization {
    const CLASS: &'static str = "BatchNormalization";
    const POSITIONAL: &'static [&'static str] = &["axis", "momentum", "epsilon", "center", "scale"];

    fn check(&self) -> Result<()> {
        let bad = |name: &'static str, expected: &str, found: String| Error::InvalidArgument {
            op: "BatchNormalization",
            name,
            expected: expected.into(),
            found,
        };
        if !(0.0..=1.0).contains(&self.momentum) {
            return Err(bad(
                "momentum",
                "a momentum in [0, 1]",
                self.momentum.to_string(),
            ));
        }
        if !(self.epsilon > 0.0 && self.epsilon.is_finite()) {
            return Err(bad("epsilon", "a finite ε > 0", self.epsilon.to_string()));
        }
        for (name, v, want) in [
            ("beta_initializer", &self.beta_initializer, "zeros"),
            ("gamma_initializer", &self.gamma_initializer, "ones"),
            (
                "moving_mean_initializer",
                &self.moving_mean_initializer,
                "zeros",
            ),
            (
                "moving_variance_initializer",
                &self.moving_variance_initializer,
                "ones",
            ),
        ] {
            if v != want {
                return Err(bad(name, &format!("{want:?}"), format!("{v:?}")));
            }
        }
        Ok(())
    }

    fn output_shape(&self, input: &[usize]) -> Result<Shape> {
        // Only the last axis (channels last): -1, or its positive index.
        if self.axis != -1 && self.axis != input.len() as i64 {
            return Err(Error::InvalidArgument {
                op: "BatchNormalization",
                name: "axis",
                expected: format!("-1 or {} (the channels, the last axis)", input.len()),
                found: self.axis.to_string(),
            });
        }
        Ok(input.to_vec())
    }

    fn weights(&self, input: &[usize]) -> Vec<WeightSpec> {
        let c = input.last().copied().unwrap_or(1);
        let spec = |name, init, trainable| WeightSpec {
            name,
            shape: vec![c],
            init,
            trainable,
        };
        let mut w = Vec::new();
        if self.scale {
            w.push(spec("gamma", Init::Ones, true));
        }
        if self.center {
            w.push(spec("beta", Init::Zeros, true));
        }
        w.push(spec("moving_mean", Init::Zeros, false));
        w.push(spec("moving_variance", Init::Ones, false));
        w
    }

    fn instantiate(&self, io: Io, w: Weights) -> Result<Box<dyn Layer>> {
        Ok(Box::new(BatchNormLayer {
            cfg: self.clone(),
            io,
            w,
        }))
    }
}

struct BatchNormLayer {
    cfg: BatchNormalization,
    io: Io,
    w: Weights,
}

impl BatchNormLayer {
    fn shape(&self, batch: usize) -> BnShape {
        let c = self.io.input.last().copied().unwrap_or(1);
        BnShape {
            rows: batch * self.io.input.iter().product::<usize>() / c,
            channels: c,
            eps: self.cfg.epsilon,
            momentum: self.cfg.momentum,
            scale: self.cfg.scale,
            center: self.cfg.center,
        }
    }

    /// γ and β, as the layer has them.
    fn affine(&self) -> (Option<&Tensor>, Option<&Tensor>) {
        let mut it = self.w.params.iter();
        let gamma = if self.cfg.scale { it.next() } else { None };
        let beta = if self.cfg.center { it.next() } else { None };
        (gamma, beta)
    }

    fn moving(&self) -> (&wgpu::Buffer, &wgpu::Buffer) {
        (self.w.state[0].buffer(), self.w.state[1].buffer())
    }
}

impl Layer for BatchNormLayer {
    fn io(&self) -> &Io {
        &self.io
    }

    fn weights(&self) -> &Weights {
        &self.w
    }

    fn forward(&self, cx: &mut Cx<'_>, _pos: Position, x: &Tensor) -> Result<Saved> {
        let s = self.shape(cx.batch);
        let (g, b) = self.affine();
        let (g, b) = (g.map(|t| t.buffer()), b.map(|t| t.buffer()));
        let y = cx.tensor(&self.io.output)?;
        if cx.mode != Mode::Train {
            batchnorm::inference(cx.rec(), &s, x.buffer(), g, b, self.moving(), y.buffer())?;
            return Ok(Saved::plain(x, y, Vec::new()));
        }
        let part = cx.scratch(&[s.partials()])?;
        let stats = cx.scratch(&[2 * s.channels])?;
        batchnorm::train_forward(
            cx.rec(),
            &s,
            x.buffer(),
            g,
            b,
            self.moving(),
            part.buffer(),
            stats.buffer(),
            y.buffer(),
        )?;
        Ok(Saved::plain(x, y, vec![stats, part]))
    }

    fn backward(&self, cx: &mut Cx<'_>, b: Back<'_>) -> Result<Option<Dx>> {
        let Back {
            pos,
            saved,
            dy,
            dx_gate,
            need_dx,
            grad,
            ..
        } = b;
        let s = self.shape(cx.batch);
        let (gamma, beta) = self.affine();
        let c = [s.channels];
        // dγ and dβ go where the engine says (a gradient buffer, or scratch the optimizer
        // steps from); without γ or β, scratch: dx needs both sums.
        let mut i = 0;
        let mut slot = |present: bool, cx: &mut Cx<'_>| -> Result<(Tensor, Option<usize>)> {
            if present {
                i += 1;
                Ok((grad.target(cx, i - 1, &c)?, Some(i - 1)))
            } else {
                Ok((cx.scratch(&c)?, None))
            }
        };
        let (dg, ig) = slot(gamma.is_some(), cx)?;
        let (db, ib) = slot(beta.is_some(), cx)?;
        let dx = cx.tensor(&self.io.input)?;
        let (stats, part) = (&saved.extra[0], &saved.extra[1]);
        let gate = if need_dx {
            dx_gate.map(|(a, y)| (*a, y.buffer()))
        } else {
            None
        };
        batchnorm::backward(
            cx.rec(),
            &s,
            dy.buffer(),
            saved.input.buffer(),
            gamma.map(|t| t.buffer()),
            stats.buffer(),
            part.buffer(),
            (dg.buffer(), db.buffer()),
            gate,
            dx.buffer(),
        )?;
        // γ changes only after dx used it.
        for (p, g, i) in [(gamma, &dg, ig), (beta, &db, ib)] {
            if let (Some(p), Some(i)) = (p, i) {
                grad.apply(cx, pos, i, p, g)?;
            }
        }
        Ok(need_dx.then_some(Dx {
            grad: dx,
            gated: gate.is_some(),
        }))
    }
}
