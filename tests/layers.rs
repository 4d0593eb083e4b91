//! Every layer type's backward pass against finite differences of its own forward pass,
//! through one generic helper (tests/common/layercheck.rs) that knows nothing of the layer:
//! Dense, Conv2D (same and valid, stride 2, dilation 2, a first layer of one channel),
//! MaxPooling2D (distinct values, so no maximum moves within the step), AveragePooling2D,
//! GlobalAveragePooling2D, BatchNormalization (with and without γ and β), Flatten, Reshape,
//! Activation (tanh, sigmoid, GELU), Normalization, Rescaling and Embedding (its table). Softmax and ReLU are checked as models in
//! tests/keras_layers.rs (a softmax layer only ever trains folded into its loss).
//! Smooth activations (tanh, sigmoid): finite differences cannot see through a kink.

mod common;

use common::layercheck::check_layer;
use suanli::nn::{
    Activation, AveragePooling2D, BatchNormalization, Conv2D, Dense, Flatten,
    GlobalAveragePooling2D, LayerSpec, MaxPooling2D, Normalization, Rescaling, Reshape,
};

const H: f32 = 1e-2;
const TOL: f64 = 2e-2;

#[test]
fn dense_and_views() {
    let dev = dev_or_skip!();
    check_layer(
        &dev,
        "Dense tanh",
        Dense::new(5, "tanh"),
        &[7],
        3,
        None,
        H,
        TOL,
    );
    check_layer(
        &dev,
        "Dense on (4, 3)",
        Dense::new(2, "sigmoid"),
        &[4, 3],
        2,
        None,
        H,
        TOL,
    );
    check_layer(&dev, "Flatten", Flatten::new(), &[3, 4, 2], 2, None, H, TOL);
    check_layer(
        &dev,
        "Reshape",
        Reshape::new(&[-1, 4]),
        &[3, 4, 2],
        2,
        None,
        H,
        TOL,
    );
}

#[test]
fn convolutions() {
    let dev = dev_or_skip!();
    check_layer(
        &dev,
        "Conv2D same",
        Conv2D::new(4, 3).padding("same").activation("tanh"),
        &[5, 6, 3],
        2,
        None,
        H,
        TOL,
    );
    check_layer(
        &dev,
        "Conv2D valid",
        Conv2D::new(3, (2, 3)).activation("sigmoid"),
        &[6, 5, 2],
        2,
        None,
        H,
        TOL,
    );
    check_layer(
        &dev,
        "Conv2D stride 2",
        Conv2D::new(3, 3).strides(2).activation("tanh"),
        &[7, 7, 2],
        2,
        None,
        H,
        TOL,
    );
    check_layer(
        &dev,
        "Conv2D dilation 2",
        Conv2D::new(2, 3).dilation(2).padding("same"),
        &[6, 6, 2],
        1,
        None,
        H,
        TOL,
    );
    check_layer(
        &dev,
        "Conv2D first layer",
        Conv2D::new(5, 3).activation("tanh"),
        &[6, 6, 1],
        3,
        None,
        H,
        TOL,
    );
    check_layer(
        &dev,
        "Conv2D no bias",
        Conv2D::new(3, 1).use_bias(false),
        &[4, 4, 4],
        2,
        None,
        H,
        TOL,
    );
}

#[test]
fn poolings() {
    let dev = dev_or_skip!();
    // Distinct values 0.05 apart in a random order: a step of 0.01 moves no maximum.
    let distinct = |n: usize, seed: u64| {
        let mut v: Vec<f32> = (0..n).map(|i| i as f32 * 0.05 - n as f32 * 0.025).collect();
        suanli::random::Rng::new(seed).shuffle(&mut v);
        v
    };
    check_layer(
        &dev,
        "MaxPooling2D",
        MaxPooling2D::new(2),
        &[5, 6, 3],
        2,
        Some(distinct(180, 1)),
        H,
        TOL,
    );
    check_layer(
        &dev,
        "MaxPooling2D overlapping, same",
        MaxPooling2D::new(3).strides(2).padding("same"),
        &[5, 5, 2],
        2,
        Some(distinct(100, 2)),
        H,
        TOL,
    );
    check_layer(
        &dev,
        "AveragePooling2D",
        AveragePooling2D::new(2).padding("same"),
        &[5, 5, 2],
        2,
        None,
        H,
        TOL,
    );
    check_layer(
        &dev,
        "GlobalAveragePooling2D",
        GlobalAveragePooling2D::new(),
        &[4, 3, 5],
        3,
        None,
        H,
        TOL,
    );
}

#[test]
fn batch_normalization() {
    let dev = dev_or_skip!();
    check_layer(
        &dev,
        "BatchNormalization",
        BatchNormalization::new(),
        &[4, 3, 5],
        3,
        None,
        H,
        TOL,
    );
    let mut no_affine = BatchNormalization::new();
    no_affine.center = false;
    no_affine.scale = false;
    check_layer(
        &dev,
        "BatchNormalization without γ, β",
        LayerSpec::new(no_affine),
        &[6],
        8,
        None,
        H,
        TOL,
    );
}

#[test]
fn activations_and_rescaling() {
    let dev = dev_or_skip!();
    for act in ["tanh", "sigmoid", "gelu"] {
        check_layer(
            &dev,
            &format!("Activation {act}"),
            Activation::new(act),
            &[3, 4, 2],
            2,
            None,
            H,
            TOL,
        );
    }
    check_layer(
        &dev,
        "Normalization",
        Normalization::new().with_stats(&[0.5, -1.0, 2.0], &[4.0, 0.25, 1.0]),
        &[2, 3],
        3,
        None,
        H,
        TOL,
    );
    check_layer(
        &dev,
        "Rescaling",
        Rescaling::new(0.5, 0.25),
        &[3, 5],
        3,
        None,
        H,
        TOL,
    );
}

#[test]
fn embedding() {
    let dev = dev_or_skip!();
    // Ids halfway between integers (v + 0.5 selects row v), so that x ± H selects the same
    // rows: the input gradient is zero, as the layer returns, and the table's is the
    // scatter-add of dy. Ids 0..7 of a table of 7 rows, with repeats, and one past it.
    let ids: Vec<f32> = (0..2 * 3 * 4).map(|i| ((i * 5) % 8) as f32 + 0.5).collect();
    check_layer(
        &dev,
        "Embedding",
        suanli::nn::Embedding::new(7, 3),
        &[3, 4],
        2,
        Some(ids),
        H,
        TOL,
    );
}
