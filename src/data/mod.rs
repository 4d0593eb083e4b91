//! Data: the IDX format ([`idx`]), the MNIST loader ([`mnist`]), character-level text for
//! language models ([`text`]), and datasets resident on the device ([`dataset`]).

mod checks;
pub mod columns;
pub mod dataset;
pub(crate) mod features;
pub mod idx;
pub mod mnist;
pub mod text;
mod weights;

pub use dataset::Dataset;
pub use idx::{parse_idx, read_idx, Idx, MAX_IDX_BYTES};
pub use mnist::{Mnist, MNIST_FILES};
pub use text::{Split, Text, Tokenizer};
