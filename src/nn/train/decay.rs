//! Which weights weight decay applies to. Decaying a bias or a normalisation's scale pulls
//! it towards zero for no benefit, so GPT recipes (nanoGPT's `configure_optimizers`) decay
//! only matrices, and Keras lets a program exclude weights by name
//! (`optimizer.exclude_from_weight_decay(var_names=[...])`). The filter is the model's: the
//! optimizer step of every parameter reads its own uniform from the step table each step,
//! so an excluded parameter simply gets a weight decay of 0 there, on the fused and the
//! unfused path alike, at no cost.

use crate::vocab::Rule;

/// Which weights the optimizer's weight decay applies to
/// ([`crate::nn::Model::set_weight_decay_filter`]).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum DecayFilter {
    /// Every trainable weight (Keras's default).
    #[default]
    All,
    /// Weights of two or more dimensions (Dense and Conv2D kernels), not biases, scales or
    /// offsets: nanoGPT's rule.
    MatricesOnly,
    /// Every weight but those whose name (`layer/weight`, as [`crate::nn::Model::weights`] names them,
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
