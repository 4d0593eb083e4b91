//! [`LayerProbe`]: one layer on its own, its forward pass and its backward pass from a
//! given output gradient, on host arrays. What a layer-level gradient check needs (tests run
//! finite differences of `Σ dy ⊙ forward(x, θ)` against `backward`), for any layer type, with
//! no knowledge of it. Not a stable API (`suanli::internals`).

use crate::error::{Error, Result};
use crate::exec::recorder::Recorder;
use crate::nn::graph::model::Sequential;
use crate::nn::layer::{Back, Cx, Mode, WeightGrad};
use crate::nn::registry::IntoLayers;
use crate::runtime::Device;
use crate::tensor::Tensor;

/// One layer, probed (see the module docs).
pub struct LayerProbe {
    model: Sequential,
}

/// What a backward pass gave: the input gradient and each trainable parameter's.
pub struct ProbeGrads {
    /// `∂L/∂x`.
    pub dx: Vec<f32>,
    /// `∂L/∂θ` per trainable parameter, in order.
    pub params: Vec<Vec<f32>>,
}

impl LayerProbe {
    /// The layer `layer` for samples of `input_shape`, initialised with `seed`.
    pub fn new(
        dev: &Device,
        layer: impl IntoLayers,
        input_shape: &[usize],
        seed: u64,
    ) -> Result<LayerProbe> {
        let mut model = Sequential::with_seed(dev, seed).input_shape(input_shape);
        model.add(layer)?;
        if model.len() != 1 || model.layers[0].dropout().is_some() {
            return Err(Error::InvalidArgument {
                op: "LayerProbe",
                name: "layer",
                expected: "one layer without a random mask".into(),
                found: format!("{} layers", model.len()),
            });
        }
        Ok(LayerProbe { model })
    }

    /// The per-sample output shape.
    pub fn output_shape(&self) -> Vec<usize> {
        self.model.layers[0].io().output.clone()
    }

    /// The trainable parameters' values.
    pub fn params(&self) -> Result<Vec<Vec<f32>>> {
        self.model.params().iter().map(|p| p.to_vec()).collect()
    }

    /// Replaces the trainable parameters' values (same shapes).
    pub fn set_params(&self, values: &[Vec<f32>]) -> Result<()> {
        let params = self.model.params();
        if values.len() != params.len()
            || values
                .iter()
                .zip(&params)
                .any(|(v, p)| v.len() != p.numel())
        {
            return Err(Error::ShapeMismatch {
                op: "LayerProbe::set_params",
                expected: format!("{:?}", params.iter().map(|p| p.numel()).collect::<Vec<_>>()),
                found: format!("{:?}", values.iter().map(|v| v.len()).collect::<Vec<_>>()),
            });
        }
        for (p, v) in params.iter().zip(values) {
            self.model
                .device
                .wgpu_queue()
                .write_buffer(p.buffer(), 0, bytemuck::cast_slice(v));
        }
        Ok(())
    }

    fn input(&self, x: &[f32], batch: usize) -> Result<Tensor> {
        let mut shape = vec![batch];
        shape.extend_from_slice(&self.model.layers[0].io().input);
        Tensor::from_slice(&self.model.device, x, &shape)
    }

    /// The training forward pass of a batch `x` (batch statistics; moving ones untouched
    /// by nothing a caller reads).
    pub fn forward(&self, x: &[f32], batch: usize) -> Result<Vec<f32>> {
        let dev = &self.model.device;
        let x = self.input(x, batch)?;
        let mut rec = Recorder::new(dev);
        let mut cx = Cx::new(&mut rec, batch, Mode::Train);
        cx.precision = self.model.precision;
        let pos = self.model.positions()[0];
        let y = self.model.layers[0].forward(&mut cx, pos, &x)?.output;
        let keep = std::mem::take(&mut cx.keep);
        drop(cx);
        rec.submit()?;
        drop(keep);
        y.to_vec()
    }

    /// The training forward pass of `x`, then the backward pass from `dy` (the gradient at
    /// the output): the input gradient and every trainable parameter's.
    pub fn backward(&self, x: &[f32], batch: usize, dy: &[f32]) -> Result<ProbeGrads> {
        let dev = &self.model.device;
        let layer = &self.model.layers[0];
        let x = self.input(x, batch)?;
        let mut out_shape = vec![batch];
        out_shape.extend_from_slice(&layer.io().output);
        let dy = Tensor::from_slice(dev, dy, &out_shape)?;
        let grads: Vec<Tensor> = self
            .model
            .params()
            .iter()
            .map(|p| Tensor::zeros(dev, p.shape()))
            .collect::<Result<_>>()?;
        let mut rec = Recorder::new(dev);
        let mut cx = Cx::new(&mut rec, batch, Mode::Train);
        cx.precision = self.model.precision;
        let pos = self.model.positions()[0];
        let saved = layer.forward(&mut cx, pos, &x)?;
        let dx = layer
            .backward(
                &mut cx,
                Back {
                    pos,
                    saved: &saved,
                    dy: &dy,
                    gated: false,
                    dx_gate: None,
                    need_dx: true,
                    grad: WeightGrad::Into(&grads),
                    dx_into: None,
                },
            )?
            .ok_or_else(|| Error::Internal {
                op: "LayerProbe",
                message: "no input gradient".into(),
            })?;
        let keep = std::mem::take(&mut cx.keep);
        drop(cx);
        rec.submit()?;
        drop(keep);
        Ok(ProbeGrads {
            dx: dx.grad.to_vec()?,
            params: grads.iter().map(|g| g.to_vec()).collect::<Result<_>>()?,
        })
    }
}
