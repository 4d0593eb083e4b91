//! The fused dense backward against central finite differences of the layer's own GPU forward
//! pass, for every activation a layer can train through, at the input, the kernel and the
//! bias, through the layer-level check (tests/common/layercheck.rs). The derivative comes from
//! the output (linear, ReLU, leaky ReLU, sigmoid, tanh: `activation_output_backward`) or from
//! the kept pre-activation (GELU, GELU-tanh: `activation_backward`); `dx = dz·Wᵀ` and
//! `dW = xᵀ·dz` are the NT and TN matmuls, `db` the row sum.
//!
//! Finite differences run the f32 GPU forward with step h = 1e-2 (smaller steps drown in f32
//! rounding), so agreement is checked to a relative L2 error of 2e-3 over the sampled
//! coordinates. The kernels themselves are checked to 1e-5 against f64 references in
//! kernels_*.rs (activation derivatives also by finite differences there), a whole model's
//! gradients against finite differences of its loss in training.rs, and every other layer
//! type in layers.rs.

mod common;

use common::layercheck::check_layer;
use suanli::nn::Dense;

const H: f32 = 1e-2;
const TOL: f64 = 2e-3;

#[test]
fn dense_with_every_activation_against_finite_differences() {
    let dev = dev_or_skip!();
    for act in [
        "linear",
        "relu",
        "leaky_relu(0.1)",
        "sigmoid",
        "tanh",
        "gelu",
        "gelu_tanh",
    ] {
        check_layer(
            &dev,
            &format!("Dense {act}"),
            Dense::new(5, act),
            &[4],
            3,
            None,
            H,
            TOL,
        );
    }
}

#[test]
fn dense_without_bias_and_on_a_batch_of_one() {
    let dev = dev_or_skip!();
    check_layer(
        &dev,
        "Dense tanh, no bias",
        Dense::new(6, "tanh").use_bias(false),
        &[5],
        4,
        None,
        H,
        TOL,
    );
    check_layer(
        &dev,
        "Dense sigmoid, batch 1",
        Dense::new(3, "sigmoid"),
        &[7],
        1,
        None,
        H,
        TOL,
    );
}
