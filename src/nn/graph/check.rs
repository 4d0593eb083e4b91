//! The checks a dataset must pass before a model trains or evaluates on it: the device, each
//! input's sample shape, where dropout sits, the output activation each loss can fold, and
//! targets each loss accepts (class labels within the classes, one per sample or one per
//! position of a (positions, classes) output; or dense rows of the output's width), one
//! target column per output; and integer ids within the table of the `Embedding` reading them.

use crate::data::dataset::Dataset;
use crate::data::features::Targets;
use crate::error::{Error, Result};
use crate::nn::graph::model::Model;
use crate::nn::graph::walk;
use crate::nn::layer::Src;
use crate::nn::registry::LayerConfig;
use crate::nn::spec::{keras_shape, sample_shape};
use crate::nn::train::options::Loss;
use crate::vocab::Activation;

impl Model {
    /// Checks that `data` fits the model: same device, sample shapes (a shape with the
    /// model's trailing channel of 1 left out is the same samples), and for each output
    /// targets its loss accepts (class labels within the outputs, or dense rows of the
    /// outputs' width).
    pub(crate) fn check_dataset(&self, op: &'static str, data: &Dataset) -> Result<()> {
        if !data.device().same_as(&self.device) {
            return Err(Error::DeviceMismatch {
                op,
                expected: format!("{:?}", self.device),
                found: format!("{:?}", data.device()),
            });
        }
        if self.layers.is_empty() {
            return Err(Error::InvalidArgument {
                op,
                name: "model",
                expected: "at least one layer".into(),
                found: "none".into(),
            });
        }
        self.check_inputs(op, data)?;
        self.check_ids(op, data)?;
        let outs = self.output_layers();
        let targets: Vec<&Targets> = data.all_targets().collect();
        if targets.len() != outs.len() {
            return Err(Error::ShapeMismatch {
                op,
                expected: format!(
                    "{} target columns (the model's outputs: {})",
                    outs.len(),
                    self.output_names().join(", ")
                ),
                found: format!("{} columns", targets.len()),
            });
        }
        self.check_metrics()?;
        let metrics = self.output_metrics();
        let readers = walk::consumers(self);
        for (k, ((&j, loss), t)) in outs.iter().zip(self.losses()).zip(targets).enumerate() {
            // An output read by another layer as well gets that layer's gradient at its
            // activation's output, which a loss taking the logits cannot be added to.
            if loss.takes_logits() && readers[j] > 1 {
                return Err(Error::InvalidArgument {
                    op,
                    name: "loss",
                    expected: format!(
                        "a loss on the values, not the logits, for output {:?}, which other layers read too",
                        self.layers[j].spec.name.as_deref().unwrap_or("")
                    ),
                    found: format!("{loss:?}"),
                });
            }
            self.check_output(op, data, j, loss, t, !metrics[k].is_empty())?;
        }
        Ok(())
    }

    /// Each input column against the model's input.
    fn check_inputs(&self, op: &'static str, data: &Dataset) -> Result<()> {
        let (want, have) = (self.input_shapes(), data.input_shapes());
        if want.len() != have.len() {
            return Err(Error::ShapeMismatch {
                op,
                expected: format!(
                    "{} input columns (the model's inputs: {})",
                    want.len(),
                    self.input_names().join(", ")
                ),
                found: format!("{} columns", have.len()),
            });
        }
        for (k, (&i, &s)) in want.iter().zip(&have).enumerate() {
            let same = s == i || (i.last() == Some(&1) && s == &i[..i.len() - 1]);
            // A column given flat holds the same samples (the first is checked as before).
            let flat = k > 0 && s.len() == 1 && s[0] == i.iter().product::<usize>();
            if !same && !flat {
                return Err(Error::ShapeMismatch {
                    op,
                    expected: format!(
                        "samples of shape {} (the model's input {:?})",
                        sample_shape(i),
                        self.input_names()[k]
                    ),
                    found: format!("samples of shape {}", sample_shape(s)),
                });
            }
        }
        Ok(())
    }

    /// Each `Embedding` reading an integer id column directly against it: every id must
    /// select a row of its table (the kernel would give zeros, silently, for one past it).
    /// Ids reaching the layer another way (floats, through other layers) are not seen here.
    fn check_ids(&self, op: &'static str, data: &Dataset) -> Result<()> {
        for entry in &self.layers {
            let (LayerConfig::Embedding(e), [Src::Input(k)]) =
                (&entry.spec.config, entry.inbound.as_slice())
            else {
                continue;
            };
            let rows = u32::try_from(e.input_dim).unwrap_or(u32::MAX);
            if let Some((id, row, col)) = data.first_id_at_least(*k, rows) {
                return Err(Error::InvalidArgument {
                    op,
                    name: "ids",
                    expected: format!(
                        "ids below {} (input_dim of the Embedding {:?}, reading input {:?})",
                        e.input_dim,
                        entry.spec.name.as_deref().unwrap_or(""),
                        self.input_names()[*k]
                    ),
                    found: format!("{id} at row {row}, column {col}"),
                });
            }
        }
        Ok(())
    }

    /// The check `fit` makes of an integer id column, for values about to be predicted:
    /// every value of input `input` (`per_sample` per sample, row-major) that an `Embedding`
    /// reads directly must be a whole number selecting a row of its table. The kernel reads
    /// zeros for any other value, so a prediction made from it would be silently wrong; the
    /// error names the first such value by sample and position. Nothing is checked for
    /// inputs no Embedding reads.
    pub fn check_input_ids(&self, input: usize, values: &[f32], per_sample: usize) -> Result<()> {
        for entry in &self.layers {
            let (LayerConfig::Embedding(e), [Src::Input(k)]) =
                (&entry.spec.config, entry.inbound.as_slice())
            else {
                continue;
            };
            if *k != input {
                continue;
            }
            let rows = e.input_dim as f32;
            let bad = values
                .iter()
                .position(|&v| !(v >= 0.0 && v < rows && v.fract() == 0.0));
            if let Some(i) = bad {
                let per = per_sample.max(1);
                return Err(Error::InvalidArgument {
                    op: "predict",
                    name: "ids",
                    expected: format!(
                        "whole ids from 0 to {} (input_dim of the Embedding {:?}, reading input {:?})",
                        e.input_dim - 1,
                        entry.spec.name.as_deref().unwrap_or(""),
                        self.input_names().get(input).map_or("", String::as_str)
                    ),
                    found: format!("{} at sample {}, position {}", values[i], i / per, i % per),
                });
            }
        }
        Ok(())
    }

    /// The output at layer `j` against its targets `t` under `loss` (and, with `metrics`,
    /// the metrics it has beyond loss and accuracy).
    fn check_output(
        &self,
        op: &'static str,
        data: &Dataset,
        j: usize,
        loss: Loss,
        t: &Targets,
        metrics: bool,
    ) -> Result<()> {
        let out_layer = self.behind_views(j).unwrap_or(j);
        let mut l = j;
        loop {
            // A Dropout layer at the output (an attention's dropout is inside the layer).
            let dropout_layer = matches!(
                self.layers[l].spec.config,
                crate::nn::registry::LayerConfig::Dropout(_)
            );
            if dropout_layer && self.layers[l].dropout().is_some() {
                return Err(Error::InvalidArgument {
                    op,
                    name: "dropout",
                    expected: "dropout on hidden layers only".into(),
                    found: format!(
                        "{} after the output layer",
                        self.layers[l]
                            .spec
                            .name
                            .as_deref()
                            .unwrap_or("a dropout layer")
                    ),
                });
            }
            match self.layers[l].inbound.as_slice() {
                [crate::nn::layer::Src::Layer(p)] if l != out_layer => l = *p,
                _ => break,
            }
        }
        let act = self.layers[out_layer].activation();
        let act_ok = match loss {
            Loss::SparseCategoricalCrossentropy | Loss::CategoricalCrossentropy => {
                matches!(act, Activation::Softmax | Activation::Linear)
            }
            Loss::BinaryCrossentropy => matches!(act, Activation::Sigmoid | Activation::Linear),
            Loss::MeanSquaredError | Loss::MeanAbsoluteError | Loss::Huber => {
                act.derivative_from_output()
            }
        };
        if !act_ok {
            return Err(Error::InvalidArgument {
                op,
                name: "last layer activation",
                expected: match loss {
                    Loss::SparseCategoricalCrossentropy | Loss::CategoricalCrossentropy => {
                        "softmax or linear (logits) for a categorical cross-entropy"
                    }
                    Loss::BinaryCrossentropy => {
                        "sigmoid or linear (logits) for binary cross-entropy"
                    }
                    Loss::MeanSquaredError | Loss::MeanAbsoluteError | Loss::Huber => {
                        "linear, relu, leaky_relu, sigmoid or tanh for a regression loss"
                    }
                }
                .into(),
                found: act.to_string(),
            });
        }
        let out = self.layers[j].io().output.as_slice();
        let o: usize = out.iter().product();
        // Labels one per position: the output's leading axes are the positions, its last the
        // classes.
        let positions = t.len();
        let classes = if t.labels().is_some() && positions > 1 {
            self.check_positions(op, data, out, positions, loss, metrics)?
        } else {
            o
        };
        match (loss, t.labels()) {
            (Loss::SparseCategoricalCrossentropy, Some(labels))
                if labels.max() as usize >= classes =>
            {
                return Err(Error::InvalidArgument {
                    op,
                    name: "labels",
                    expected: format!("class indices below the model's {classes} classes"),
                    found: format!("a label of {}", labels.max()),
                })
            }
            (Loss::SparseCategoricalCrossentropy, Some(_)) => {}
            (Loss::SparseCategoricalCrossentropy, None) => {
                return Err(Error::InvalidArgument {
                    op,
                    name: "targets",
                    expected: "class labels for sparse categorical cross-entropy".into(),
                    found: format!("dense target rows of {}", t.len()),
                })
            }
            (_, Some(_)) if positions > 1 => {}
            (_, labels) if labels.is_some() || t.len() != o => {
                return Err(Error::ShapeMismatch {
                    op,
                    expected: format!(
                        "dense target rows of {o} values (the model's outputs) for {loss:?}"
                    ),
                    found: if labels.is_some() {
                        "class labels".to_string()
                    } else {
                        format!("rows of {}", t.len())
                    },
                })
            }
            _ => {}
        }
        Ok(())
    }

    /// For labels one per position: checks the output `out` is (positions…, classes) with as
    /// many positions as the targets have labels per sample, and that nothing per-sample is
    /// asked of them; the classes.
    fn check_positions(
        &self,
        op: &'static str,
        data: &Dataset,
        out: &[usize],
        positions: usize,
        loss: Loss,
        metrics: bool,
    ) -> Result<usize> {
        let lead: usize = out[..out.len().saturating_sub(1)].iter().product();
        if out.len() < 2 || lead != positions {
            return Err(Error::ShapeMismatch {
                op,
                expected: format!(
                    "{lead} labels per sample, one per position of the output {} (its last axis the classes)",
                    keras_shape(out)
                ),
                found: format!("{positions} labels per sample"),
            });
        }
        let refuse = |name: &'static str, what: &str| Error::InvalidArgument {
            op,
            name,
            expected: format!(
                "{what} with labels per sample, not per position (not supported yet)"
            ),
            found: format!("{positions} labels per sample"),
        };
        if loss != Loss::SparseCategoricalCrossentropy {
            return Err(refuse(
                "loss",
                "a loss other than sparse categorical cross-entropy",
            ));
        }
        if data.has_weights() {
            return Err(refuse("sample_weight", "sample weights"));
        }
        if metrics {
            return Err(refuse("metrics", "metrics beyond loss and accuracy"));
        }
        Ok(*out.last().unwrap_or(&1))
    }
}
