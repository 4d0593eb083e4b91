//! A model's outputs: one (the last layer, as every `Sequential` has) or several (Keras's
//! `Model(outputs=[a, b])`), each with its loss and loss weight. Training minimises
//! `Σ weight_k · loss_k`: each output's loss kernel scales its gradient by its weight, the
//! gradients meet where the branches do (summed on the device as any fan-out), and each
//! output's `[Σ loss, Σ correct, rows]` lands in its own block of the step's accumulator, so
//! `fit` reports the total and `{output}_loss` / `{output}_accuracy` per output, as Keras
//! does, from one read.
//!
//! Metrics beyond loss and accuracy ([`Metric`]) are per output too: one list for every
//! output (Keras's `metrics=[...]`, [`Model::set_metrics`]) or a list each (Keras's
//! `metrics={output: [...]}`, [`Model::set_output_metrics`]). Each output's metrics sum into
//! its own block, after its loss and accuracy, and a model of several outputs reports them
//! as Keras names them, `{output}_{metric}`.

use crate::error::{Error, Result};
use crate::nn::graph::model::Model;
use crate::nn::train::metric::{self, Metric};
use crate::nn::train::options::{Loss, Optimizer};

impl Model {
    /// The layers whose outputs are the model's outputs, in order: the last layer alone,
    /// unless the model was built with several outputs.
    pub fn output_layers(&self) -> Vec<usize> {
        if self.outputs.is_empty() {
            self.layers.len().checked_sub(1).into_iter().collect()
        } else {
            self.outputs.clone()
        }
    }

    /// Each output's name (its layer's).
    pub fn output_names(&self) -> Vec<String> {
        self.output_layers()
            .iter()
            .map(|&j| self.layers[j].spec.name.clone().unwrap_or_default())
            .collect()
    }

    /// Makes the layers `outputs` the model's outputs, in order (Keras's
    /// `Model(outputs=[...])`; for bindings that build a graph node by node): each a layer of
    /// the model, each once, and every layer leading to one of them.
    pub fn set_output_layers(&mut self, outputs: &[usize]) -> Result<()> {
        let n = self.layers.len();
        let bad = |expected: String, found: String| Error::InvalidArgument {
            op: "Model::set_output_layers",
            name: "outputs",
            expected,
            found,
        };
        if outputs.is_empty() || outputs.iter().any(|&j| j >= n) {
            return Err(bad(
                format!("layers of the model (0..{n})"),
                format!("{outputs:?}"),
            ));
        }
        if (1..outputs.len()).any(|k| outputs[..k].contains(&outputs[k])) {
            return Err(bad("each output once".into(), format!("{outputs:?}")));
        }
        let mut leads = vec![false; n];
        for &j in outputs {
            leads[j] = true;
        }
        for j in (0..n).rev() {
            if leads[j] {
                for s in &self.layers[j].inbound {
                    if let crate::nn::layer::Src::Layer(p) = s {
                        leads[*p] = true;
                    }
                }
            }
        }
        if let Some(dead) = leads.iter().position(|l| !l) {
            return Err(bad(
                "every layer on a path to an output".into(),
                format!("layer {dead} leads to none of {outputs:?}"),
            ));
        }
        self.set_outputs(outputs.to_vec())
    }

    /// Each output's activation (of the layer behind its views), which a loss taking logits
    /// folds in.
    pub fn output_activations(&self) -> Vec<crate::vocab::Activation> {
        self.output_layers()
            .iter()
            .map(|&j| self.layers[self.behind_views(j).unwrap_or(j)].activation())
            .collect()
    }

    /// Each output's per-sample shape.
    pub fn output_shapes(&self) -> Vec<&[usize]> {
        self.output_layers()
            .iter()
            .map(|&j| self.layers[j].io().output.as_slice())
            .collect()
    }

    /// Each output's loss: as compiled per output, else the model's loss for every output.
    pub fn losses(&self) -> Vec<Loss> {
        let n = self.output_layers().len();
        if self.output_losses.len() == n {
            return self.output_losses.iter().map(|(l, _)| *l).collect();
        }
        vec![self.loss.unwrap_or(Loss::SparseCategoricalCrossentropy); n]
    }

    /// Each output's loss weight (Keras's `loss_weights`; 1 unless compiled with others).
    pub fn loss_weights(&self) -> Vec<f32> {
        let n = self.output_layers().len();
        if self.output_losses.len() == n {
            return self.output_losses.iter().map(|(_, w)| *w).collect();
        }
        vec![1.0; n]
    }

    /// [`Model::compile`] with a loss per output (one loss: the same for every output) and
    /// Keras's `loss_weights` (empty: all 1): training minimises `Σ weight_k · loss_k`.
    pub fn compile_outputs(
        &mut self,
        optimizer: Optimizer,
        losses: &[Loss],
        weights: &[f32],
    ) -> Result<()> {
        let n = self.output_layers().len();
        let bad = |name: &'static str, expected: String, found: String| Error::InvalidArgument {
            op: "compile",
            name,
            expected,
            found,
        };
        let losses: Vec<Loss> = match losses {
            [one] => vec![*one; n],
            l if l.len() == n => l.to_vec(),
            l => {
                return Err(bad(
                    "loss",
                    format!(
                        "one loss, or one per output ({n}: {:?})",
                        self.output_names()
                    ),
                    format!("{} losses", l.len()),
                ))
            }
        };
        let weights: Vec<f32> = match weights {
            [] => vec![1.0; n],
            w if w.len() == n => w.to_vec(),
            w => {
                return Err(bad(
                    "loss_weights",
                    format!("one weight per output ({n})"),
                    format!("{} weights", w.len()),
                ))
            }
        };
        if let Some(w) = weights.iter().find(|w| !(w.is_finite() && **w >= 0.0)) {
            return Err(bad(
                "loss_weights",
                "finite weights ≥ 0".into(),
                w.to_string(),
            ));
        }
        self.compile(optimizer, losses[0])?;
        if n > 1 || weights[0] != 1.0 {
            self.output_losses = losses.into_iter().zip(weights).collect();
        }
        Ok(())
    }
}

impl Model {
    /// Sets the metrics `fit` and `evaluate` report beside loss and accuracy, for every
    /// output (Keras's `metrics=[...]`): in [`crate::nn::History::metrics`] and
    /// [`crate::nn::Evaluation::metrics`] under [`Metric::name`] for a model of one output
    /// and `{output}_{name}` for several, with `val_` for validation. Checked against each
    /// output's loss here when the model is compiled, and again when training starts.
    pub fn set_metrics(&mut self, metrics: &[Metric]) -> Result<()> {
        let n = self.output_layers().len().max(1);
        self.check_metric_lists(&vec![metrics.to_vec(); n])?;
        self.metrics = metrics.to_vec();
        self.output_metrics.clear();
        Ok(())
    }

    /// Sets each output's own metrics, one list per output in output order (Keras's
    /// `metrics={output: [...]}`, or its list of lists): an output judged by a regression
    /// error and another by AUC, say. Reported as [`Model::set_metrics`]'s are.
    pub fn set_output_metrics(&mut self, metrics: &[Vec<Metric>]) -> Result<()> {
        let n = self.output_layers().len();
        if metrics.len() != n {
            return Err(Error::InvalidArgument {
                op: "metrics",
                name: "metrics",
                expected: format!(
                    "one list of metrics per output ({n}: {:?})",
                    self.output_names()
                ),
                found: format!("{} lists", metrics.len()),
            });
        }
        self.check_metric_lists(metrics)?;
        self.output_metrics = metrics.to_vec();
        self.metrics.clear();
        Ok(())
    }

    /// The metrics set with [`Model::set_metrics`] (empty when set per output).
    pub fn metrics(&self) -> &[Metric] {
        &self.metrics
    }

    /// Each output's metrics, in output order: as set per output, else the model's metrics
    /// for every output.
    pub fn output_metrics(&self) -> Vec<Vec<Metric>> {
        let n = self.output_layers().len();
        if !self.output_metrics.is_empty() && self.output_metrics.len() == n {
            return self.output_metrics.clone();
        }
        vec![self.metrics.clone(); n]
    }

    /// Checks every output's metrics before a run: a list per output (the outputs may have
    /// changed since they were set), each metric's parameters, a loss with dense targets,
    /// and an activation the metric can read predictions through. The error names the
    /// output when there are several.
    pub(crate) fn check_metrics(&self) -> Result<()> {
        let n = self.output_layers().len();
        if !self.output_metrics.is_empty() && self.output_metrics.len() != n {
            return Err(Error::InvalidArgument {
                op: "metrics",
                name: "metrics",
                expected: format!("one list of metrics per output ({n})"),
                found: format!(
                    "{} lists, set before the outputs changed",
                    self.output_metrics.len()
                ),
            });
        }
        let per = self.output_metrics();
        self.check_metric_lists(&per)?;
        let (names, losses) = (self.output_names(), self.losses());
        for (k, act) in self.output_activations().into_iter().enumerate() {
            if !per[k].is_empty() {
                metric::prediction(act, losses[k].takes_logits())
                    .map_err(|e| of_output(e, &names, k))?;
            }
        }
        Ok(())
    }

    /// Each list's metrics once each, with valid parameters, and (once compiled) against its
    /// output's loss.
    fn check_metric_lists(&self, per: &[Vec<Metric>]) -> Result<()> {
        let names = self.output_names();
        let losses = self.loss.map(|_| self.losses());
        for (k, ms) in per.iter().enumerate() {
            for (i, m) in ms.iter().enumerate() {
                m.check_parameters()?;
                if let Some(&loss) = losses.as_ref().and_then(|l| l.get(k)) {
                    m.check(loss).map_err(|e| of_output(e, &names, k))?;
                }
                if ms[..i].iter().any(|o| o.name() == m.name()) {
                    return Err(of_output(
                        Error::InvalidArgument {
                            op: "metrics",
                            name: "metrics",
                            expected: "each metric once".into(),
                            found: format!("{} twice", m.name()),
                        },
                        &names,
                        k,
                    ));
                }
            }
        }
        Ok(())
    }
}

/// `e` naming output `k` when the model has several (one output needs no name).
fn of_output(e: Error, names: &[String], k: usize) -> Error {
    match e {
        Error::InvalidArgument {
            op,
            name,
            expected,
            found,
        } if names.len() > 1 => Error::InvalidArgument {
            op,
            name,
            expected: format!("{expected} (output {:?})", names[k]),
            found,
        },
        e => e,
    }
}
