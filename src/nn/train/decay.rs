//! Which weights weight decay applies to. Decaying a bias or a normalisation's scale pulls
//! it towards zero for no benefit, so GPT recipes (nanoGPT's `configure_optimizers`) decay
//! only matrices, and Keras lets a program exclude weights by name
//! (`optimizer.exclude_from_weight_decay(var_names=[...])`). The filter is the model's: the
//! optimizer step of every parameter reads its own uniform from the step table each step,
//! so an excluded parameter simply gets a weight decay of 0 there, on the fused and the
//! unfused path alike, at no cost.

use crate::error::{Error, Result};
use crate::nn::graph::model::Model;
use crate::vocab::Rule;

/// Which weights the optimizer's weight decay applies to ([`Model::set_weight_decay_filter`]).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum DecayFilter {
    /// Every trainable weight (Keras's default).
    #[default]
    All,
    /// Weights of two or more dimensions (Dense and Conv2D kernels), not biases, scales or
    /// offsets: nanoGPT's rule.
    MatricesOnly,
    /// Every weight but those whose name (`layer/weight`, as [`Model::weights`] names them,
    /// e.g. `dense/bias`) contains one of these (Keras's `var_names`).
    ExcludeNames(Vec<String>),
}

impl DecayFilter {
    /// Whether the weight `name` (`layer/weight`) of `shape` decays.
    pub fn decays(&self, name: &str, shape: &[usize]) -> bool {
        match self {
            DecayFilter::All => true,
            DecayFilter::MatricesOnly => shape.len() >= 2,
            DecayFilter::ExcludeNames(names) => !names.iter().any(|n| name.contains(n.as_str())),
        }
    }
}

/// `rule` without its weight decay (for a parameter the filter excludes).
pub(crate) fn undecayed(rule: &Rule) -> Rule {
    let mut r = *rule;
    match &mut r {
        Rule::Sgd { weight_decay, .. }
        | Rule::Adam { weight_decay, .. }
        | Rule::RmsProp { weight_decay, .. } => *weight_decay = 0.0,
    }
    r
}

impl Model {
    /// Sets which weights weight decay applies to (AdamW's decoupled decay, the optimizer
    /// that has one). Kept by checkpoints. An exclusion list of which no name is part of any
    /// weight's is refused: a typo would otherwise silently decay everything (names that
    /// match nothing beside one that does are accepted, as Keras programs list
    /// `["bias", "layer_norm"]` for any model).
    pub fn set_weight_decay_filter(&mut self, filter: DecayFilter) -> Result<()> {
        if let DecayFilter::ExcludeNames(names) = &filter {
            let all: Vec<String> = self.weights().into_iter().map(|(n, _)| n).collect();
            let matches = |n: &String| !n.is_empty() && all.iter().any(|w| w.contains(n.as_str()));
            if names.iter().any(String::is_empty) || !names.iter().any(matches) {
                return Err(Error::InvalidArgument {
                    op: "set_weight_decay_filter",
                    name: "var_names",
                    expected: format!(
                        "non-empty names, at least one part of a weight's name ({})",
                        all.join(", ")
                    ),
                    found: format!("{names:?}"),
                });
            }
        }
        self.decay = filter;
        Ok(())
    }

    /// Which weights weight decay applies to.
    pub fn weight_decay_filter(&self) -> &DecayFilter {
        &self.decay
    }

    /// For each trainable parameter, in optimizer order, whether weight decay applies to it.
    pub(crate) fn decay_mask(&self) -> Vec<bool> {
        self.trainable_names()
            .iter()
            .map(|(name, shape)| self.decay.decays(&name.replacen('.', "/", 1), shape))
            .collect()
    }
}
