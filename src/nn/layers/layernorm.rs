//! The [`LayerNormalization`] layer over the last axis, as Keras's (and nanoGPT's
//! `LayerNorm`): every row of the last axis — each position of each sample, so a
//! (batch, T, E) input is normalised over E per position — gets its own mean and (biased)
//! variance, then is scaled by γ and shifted by β. ε is 0.001 as in Keras (PyTorch's is
//! 1e-5: give `epsilon` to match). Unlike batch normalisation there is no batch statistic and
//! no state: training, evaluation and prediction compute the same thing, and a row's output
//! never depends on the other rows of its batch.
//!
//! γ and β are trainable parameters without a fused update: their gradients (Σ dy·x̂, Σ dy
//! over all rows) come from reductions, not a GEMM, so the engine steps them with the
//! optimizer kernel ([`crate::nn::layer::WeightGrad::apply`]). `center = false` is nanoGPT's
//! `bias=False` variant.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::kernels::layernorm::{self, LnShape};
use crate::nn::layer::{Back, Cx, Dx, Io, Layer, Position, Saved, Weights};
use crate::nn::spec::{Init, LayerKind, Shape, WeightSpec};
use crate::tensor::Tensor;

fn minus_one() -> i64 {
    -1
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

/// Keras's `LayerNormalization` over the last axis, with its defaults.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LayerNormalization {
    /// The normalised axis: only the last (-1, or its index counting the batch as 0).
    #[serde(default = "minus_one")]
    pub axis: i64,
    /// ε (default 0.001).
    #[serde(default = "epsilon")]
    pub epsilon: f32,
    /// Add β (default true; false is nanoGPT's layer norm without bias).
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
    /// Keras 3's RMS normalisation (`false` only: accepted so Keras 3's configs, which write
    /// it, load; left out of the JSON when false, as tf.keras has no such argument).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub rms_scaling: bool,
    /// The input shape, on the first layer (builder only: the spec carries it).
    #[serde(skip)]
    pub(crate) input: Option<Shape>,
}

impl Default for LayerNormalization {
    fn default() -> Self {
        LayerNormalization {
            axis: -1,
            epsilon: epsilon(),
            center: true,
            scale: true,
            beta_initializer: zeros(),
            gamma_initializer: ones(),
            rms_scaling: false,
            input: None,
        }
    }
}

impl LayerNormalization {
    /// A normalisation with Keras's defaults.
    pub fn new() -> LayerNormalization {
        LayerNormalization::default()
    }

    /// Sets ε.
    pub fn epsilon(mut self, e: f32) -> Self {
        self.epsilon = e;
        self
    }

    /// Sets Keras's `center` (false: no β).
    pub fn center(mut self, on: bool) -> Self {
        self.center = on;
        self
    }

    /// Sets Keras's `scale` (false: no γ).
    pub fn scale(mut self, on: bool) -> Self {
        self.scale = on;
        self
    }

    /// Sets the normalised axis (only the last is supported; others are refused when the
    /// input shape is known).
    pub fn axis(mut self, axis: i64) -> Self {
        self.axis = axis;
        self
    }

    /// Sets the per-sample input shape (first layer).
    pub fn input_shape(mut self, shape: &[usize]) -> Self {
        self.input = Some(shape.to_vec());
        self
    }
}

impl LayerKind for LayerNormalization {
    const CLASS: &'static str = "LayerNormalization";
    const POSITIONAL: &'static [&'static str] = &["axis", "epsilon", "center", "scale"];

    fn check(&self) -> Result<()> {
        let bad = |name: &'static str, expected: &str, found: String| Error::InvalidArgument {
            op: "LayerNormalization",
            name,
            expected: expected.into(),
            found,
        };
        if !(self.epsilon > 0.0 && self.epsilon.is_finite()) {
            return Err(bad("epsilon", "a finite ε > 0", self.epsilon.to_string()));
        }
        if self.rms_scaling {
            return Err(bad(
                "rms_scaling",
                "false (RMS normalisation is not supported yet)",
                "true".into(),
            ));
        }
        for (name, v, want) in [
            ("beta_initializer", &self.beta_initializer, "zeros"),
            ("gamma_initializer", &self.gamma_initializer, "ones"),
        ] {
            if v != want {
                return Err(bad(name, &format!("{want:?}"), format!("{v:?}")));
            }
        }
        Ok(())
    }

    fn output_shape(&self, input: &[usize]) -> Result<Shape> {
        // Only the last axis: -1, or its index with the batch counted as axis 0.
        if self.axis != -1 && self.axis != input.len() as i64 {
            return Err(Error::InvalidArgument {
                op: "LayerNormalization",
                name: "axis",
                expected: format!(
                    "-1 or {} (the last axis of an input of rank {}; only the last is supported)",
                    input.len(),
                    input.len() + 1
                ),
                found: self.axis.to_string(),
            });
        }
        Ok(input.to_vec())
    }

    fn weights(&self, input: &[usize]) -> Vec<WeightSpec> {
        let e = input.last().copied().unwrap_or(1);
        let spec = |name, init| WeightSpec {
            name,
            shape: vec![e],
            init,
            trainable: true,
        };
        let mut w = Vec::new();
        if self.scale {
            w.push(spec("gamma", Init::Ones));
        }
        if self.center {
            w.push(spec("beta", Init::Zeros));
        }
        w
    }

    fn instantiate(&self, io: Io, w: Weights) -> Result<Box<dyn Layer>> {
        Ok(Box::new(LayerNormLayer {
            cfg: self.clone(),
            io,
            w,
        }))
    }
}

struct LayerNormLayer {
    cfg: LayerNormalization,
    io: Io,
    w: Weights,
}

impl LayerNormLayer {
    fn shape(&self, batch: usize) -> LnShape {
        let e = self.io.input.last().copied().unwrap_or(1);
        LnShape {
            rows: batch * self.io.input.iter().product::<usize>() / e,
            cols: e,
            eps: self.cfg.epsilon,
            scale: self.cfg.scale,
            center: self.cfg.center,
            lanes: None,
        }
    }

    /// γ and β, as the layer has them.
    fn affine(&self) -> (Option<&Tensor>, Option<&Tensor>) {
        let mut it = self.w.params.iter();
        let gamma = if self.cfg.scale { it.next() } else { None };
        let beta = if self.cfg.center { it.next() } else { None };
        (gamma, beta)
    }
}

impl Layer for LayerNormLayer {
    fn io(&self) -> &Io {
        &self.io
    }

    fn weights(&self) -> &Weights {
        &self.w
    }

    fn forward(&self, cx: &mut Cx<'_>, _pos: Position, x: &Tensor) -> Result<Saved> {
        let s = self.shape(cx.batch);
        let (g, b) = self.affine();
        let y = cx.tensor(&self.io.output)?;
        // Every mode normalises the same way; the statistics serve a training step's
        // backward pass (a few bytes per row otherwise unread).
        let stats = cx.scratch(&[s.stats()])?;
        layernorm::forward(
            cx.rec(),
            &s,
            x.buffer(),
            g.map(|t| t.buffer()),
            b.map(|t| t.buffer()),
            y.buffer(),
            stats.buffer(),
        )?;
        Ok(Saved::plain(x, y, vec![stats]))
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
        let stats = &saved.extra[0];
        let x = saved.input.buffer();
        // The input gradient first: it reads γ as the forward pass used it, before the
        // optimizer steps it below.
        let dx = if need_dx {
            let dx = cx.tensor(&self.io.input)?;
            let gate = dx_gate.map(|(a, y)| (*a, y.buffer()));
            layernorm::backward(
                cx.rec(),
                &s,
                dy.buffer(),
                x,
                gamma.map(|t| t.buffer()),
                stats.buffer(),
                gate,
                dx.buffer(),
            )?;
            Some(Dx {
                grad: dx,
                gated: gate.is_some(),
            })
        } else {
            None
        };
        if gamma.is_none() && beta.is_none() {
            return Ok(dx);
        }
        // dγ and dβ go where the engine says (a gradient buffer, or scratch the optimizer
        // steps from); the kernel writes both, so an absent one goes to scratch.
        let e = [s.cols];
        let mut i = 0;
        let mut slot = |present: bool, cx: &mut Cx<'_>| -> Result<(Tensor, Option<usize>)> {
            if present {
                i += 1;
                Ok((grad.target(cx, i - 1, &e)?, Some(i - 1)))
            } else {
                Ok((cx.scratch(&e)?, None))
            }
        };
        let (dg, ig) = slot(gamma.is_some(), cx)?;
        let (db, ib) = slot(beta.is_some(), cx)?;
        let part = cx.scratch(&[s.partials()])?;
        layernorm::params_backward(
            cx.rec(),
            &s,
            dy.buffer(),
            x,
            stats.buffer(),
            part.buffer(),
            dg.buffer(),
            db.buffer(),
        )?;
        for (p, g, i) in [(gamma, &dg, ig), (beta, &db, ib)] {
            if let (Some(p), Some(i)) = (p, i) {
                grad.apply(cx, pos, i, p, g)?;
            }
        }
        Ok(dx)
    }
}
