//! The model as a graph of layers: the model itself (`model`) and its outputs with their
//! losses (`outputs`) and training settings (`settings`: weight decay filter, gradient
//! accumulation), making one (`build`: adding
//! layers and sharing another model's; `functional`: Keras's functional API; `shared`: a layer
//! called several times with one set of weights, or its matrix used transposed), recording it
//! (`walk`: the forward pass in topological order, fan-out, gates across edges), generating
//! text from a language model (`generate`: a KV cache, tokens drawn on the device), and its
//! files (`graph_config`: a graph's architecture as Keras's functional config; `store`:
//! saving, loading, checkpoints; `weights_file`: parsing and validating a file on the host).

pub(crate) mod build;
pub(crate) mod check;
pub(crate) mod functional;
pub(crate) mod generate;
pub mod graph_config;
pub(crate) mod model;
pub(crate) mod outputs;
pub(crate) mod settings;
pub(crate) mod shared;
pub(crate) mod store;
pub(crate) mod walk;
pub(crate) mod weights_file;
