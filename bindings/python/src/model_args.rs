//! The conversion of what Python's `compile` and `Model` pass into suanli's types: an
//! optimizer from its Keras name and hyper-parameters, the loss-scaling setting, a metric
//! from its name and parameter, a node's sources. Kept apart from `model.rs`, which holds
//! the model's methods themselves.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use suanli::nn::{LossScale, LossScaling, Metric, Optimizer, Src};

use crate::errors::IntoPy;

/// An optimizer from its Keras name (`"sgd"`, `"adam"`, `"adamw"`, `"rmsprop"`) with
/// Keras's defaults, overridden by what was given: `hyper` is `[beta_1, beta_2, epsilon,
/// momentum, weight_decay, rho]` (each used by the optimizers that have it).
pub(crate) fn optimizer_of(
    optimizer: &str,
    learning_rate: Option<f64>,
    hyper: [Option<f64>; 6],
    nesterov: Option<bool>,
) -> PyResult<Optimizer> {
    let [beta_1, beta_2, epsilon, momentum, weight_decay, rho] = hyper;
    let name = optimizer.to_ascii_lowercase();
    let mut opt = match name.as_str() {
        "sgd" => Optimizer::sgd(0.01),
        "adam" => Optimizer::adam(),
        "adamw" => Optimizer::adamw(),
        "rmsprop" => Optimizer::rmsprop(),
        other => {
            return Err(PyValueError::new_err(format!(
                "optimizer: expected \"sgd\", \"adam\", \"adamw\" or \"rmsprop\"; found {other:?}"
            )))
        }
    };
    if let Some(lr) = learning_rate {
        opt = opt.with_lr(lr);
    }
    match &mut opt {
        Optimizer::Sgd {
            momentum: m,
            nesterov: n,
            ..
        } => {
            *m = momentum.unwrap_or(*m);
            *n = nesterov.unwrap_or(*n);
        }
        Optimizer::Adam {
            beta1, beta2, eps, ..
        } => {
            *beta1 = beta_1.unwrap_or(*beta1);
            *beta2 = beta_2.unwrap_or(*beta2);
            *eps = epsilon.unwrap_or(*eps);
        }
        Optimizer::AdamW {
            weight_decay: w,
            beta1,
            beta2,
            eps,
            ..
        } => {
            *w = weight_decay.unwrap_or(*w);
            *beta1 = beta_1.unwrap_or(*beta1);
            *beta2 = beta_2.unwrap_or(*beta2);
            *eps = epsilon.unwrap_or(*eps);
        }
        Optimizer::RmsProp { rho: r, eps, .. } => {
            *r = rho.unwrap_or(*r);
            *eps = epsilon.unwrap_or(*eps);
        }
    }
    Ok(opt)
}

/// The loss scaling `compile` asks for: `("auto" | "off" | "dynamic" | "fixed", initial
/// scale, growth interval)`, or `None` for auto (as the precision policy says).
pub(crate) fn loss_scaling_of(loss_scale: Option<(String, f64, u32)>) -> PyResult<LossScaling> {
    Ok(match loss_scale {
        None => LossScaling::Auto,
        Some((mode, initial, growth_steps)) => match mode.as_str() {
            "auto" => LossScaling::Auto,
            "off" => LossScaling::Off,
            "dynamic" | "fixed" => LossScaling::On(LossScale {
                initial,
                dynamic: mode == "dynamic",
                growth_steps,
            }),
            other => {
                let msg = format!(
                    "loss_scale: expected \"auto\", \"off\", \"dynamic\" or \"fixed\"; found {other:?}"
                );
                return Err(PyValueError::new_err(msg));
            }
        },
    })
}

/// The sources `reads` names: -1 - k for the model's input k, `j` for layer `j`'s output.
pub(crate) fn srcs(reads: &[i64]) -> Vec<Src> {
    reads
        .iter()
        .map(|&r| match usize::try_from(r) {
            Ok(j) => Src::Layer(j),
            Err(_) => Src::Input((-1 - r) as usize),
        })
        .collect()
}

/// A metric from a `(name, parameter)` pair: the name as `Metric::from_name` knows it, the
/// parameter a threshold (precision, recall) or a number of thresholds (auc), ignored
/// otherwise.
pub(crate) fn metric_of((name, p): &(String, f64)) -> PyResult<Metric> {
    Ok(match Metric::from_name(name).py()? {
        Metric::Precision { .. } => Metric::Precision {
            threshold: *p as f32,
        },
        Metric::Recall { .. } => Metric::Recall {
            threshold: *p as f32,
        },
        Metric::Auc { .. } if p.fract() == 0.0 && *p >= 0.0 => Metric::Auc {
            thresholds: *p as usize,
        },
        Metric::Auc { .. } => {
            return Err(PyValueError::new_err(format!(
                "AUC: num_thresholds must be a whole number; found {p}"
            )))
        }
        m => m,
    })
}
