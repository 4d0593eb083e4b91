//! The checks a dataset must pass before a model trains or evaluates on it: the device, the
//! sample shape, where dropout sits, the output activation the loss can fold, and targets the
//! loss accepts (class labels within the classes, one per sample or one per position of a
//! (positions, classes) output; or dense rows of the output's width).

use crate::data::dataset::Dataset;
use crate::error::{Error, Result};
use crate::nn::graph::model::Model;
use crate::nn::spec::{keras_shape, sample_shape};
use crate::nn::train::options::Loss;
use crate::vocab::Activation;

impl Model {
    /// Checks that `data` fits the model: same device, sample shape (a shape with the
    /// model's trailing channel of 1 left out is the same samples), and targets the loss
    /// accepts (class labels within the outputs, or dense rows of the outputs' width).
    pub(crate) fn check_dataset(&self, op: &'static str, data: &Dataset) -> Result<()> {
        if !data.device().same_as(&self.device) {
            return Err(Error::DeviceMismatch {
                op,
                expected: format!("{:?}", self.device),
                found: format!("{:?}", data.device()),
            });
        }
        let (Some(_), Some(o), Some(out_layer)) = (
            self.expected_input_shape(),
            self.output_dim(),
            self.output_layer(),
        ) else {
            return Err(Error::InvalidArgument {
                op,
                name: "model",
                expected: "at least one layer".into(),
                found: "none".into(),
            });
        };
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
        if let Some(d) = self.layers[out_layer..]
            .iter()
            .find(|l| l.dropout().is_some())
        {
            return Err(Error::InvalidArgument {
                op,
                name: "dropout",
                expected: "dropout on hidden layers only".into(),
                found: format!(
                    "{} after the output layer",
                    d.spec.name.as_deref().unwrap_or("a dropout layer")
                ),
            });
        }
        let loss = self.loss.unwrap_or(Loss::SparseCategoricalCrossentropy);
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
        // Labels one per position: the output's leading axes are the positions, its last the
        // classes.
        let positions = data.target_len();
        let classes = if data.labels().is_some() && positions > 1 {
            self.check_positions(op, data, loss)?
        } else {
            o
        };
        match (loss, data.labels()) {
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
                    found: format!("dense target rows of {}", data.target_len()),
                })
            }
            (_, Some(_)) if positions > 1 => {}
            (_, labels) if labels.is_some() || data.target_len() != o => {
                return Err(Error::ShapeMismatch {
                    op,
                    expected: format!(
                        "dense target rows of {o} values (the model's outputs) for {loss:?}"
                    ),
                    found: if labels.is_some() {
                        "class labels".to_string()
                    } else {
                        format!("rows of {}", data.target_len())
                    },
                })
            }
            _ => {}
        }
        Ok(())
    }
    /// For labels one per position: checks the output is (positions…, classes) with as many
    /// positions as the dataset has labels per sample, and that nothing per-sample is asked
    /// of them; the classes.
    fn check_positions(&self, op: &'static str, data: &Dataset, loss: Loss) -> Result<usize> {
        let out = self.output_shape().unwrap_or(&[]);
        let lead: usize = out[..out.len().saturating_sub(1)].iter().product();
        let positions = data.target_len();
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
        if !self.metrics.is_empty() {
            return Err(refuse("metrics", "metrics beyond loss and accuracy"));
        }
        Ok(*out.last().unwrap_or(&1))
    }
}
