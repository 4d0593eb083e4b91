//! Deliberately naive f64 CPU references of every kernel, used by the tests (and readable as
//! the specification of what each kernel computes). Inputs are f32 as stored on the device;
//! outputs are f64. The pointwise activation references panic for
//! [`crate::vocab::Activation::Softmax`], which is a row operation ([`softmax`]).
//!
//! One file per kernel family. Not a stable API: public for the crate's tests and benchmarks.

mod activation;
mod attention;
mod attention_general;
mod batchnorm;
mod conv2d;
mod dropout;
mod embedding;
mod layernorm;
mod loss;
mod matmul;
mod merge;
mod optim;
mod philox;
mod pool;
mod rows;
mod sample;
mod windows;

pub use activation::{activate, activate_grad, activate_grad_from_output, erf};
pub use attention::{attention, attention_backward, AttnShape};
pub use attention_general::{attention_general_backward, attention_output, attention_probs};
pub use batchnorm::{batchnorm, batchnorm_backward, moments};
pub use conv2d::{conv2d, conv2d_backward_data, conv2d_backward_weights, ConvShape};
pub use dropout::{dropout, dropout_keep, hash32};
pub use embedding::{embedding, embedding_backward, embedding_row};
pub use layernorm::{layernorm, layernorm_backward, layernorm_stats};
pub use loss::dense_loss;
pub use matmul::matmul;
pub use merge::{concatenate, concatenate_backward, maximum, maximum_backward};
pub use optim::optim_step;
pub use philox::{philox4x32_10, word as philox_word};
pub use pool::{
    avgpool, avgpool_backward, global_avgpool, global_avgpool_backward, maxpool, maxpool_backward,
    PoolShape,
};
pub use rows::{max_rows, normalize, softmax, sum_cols, sum_rows, xent};
pub use sample::{sample_token, sample_uniform};
pub use windows::{window_start, windows};
