//! A small residual network on Fashion-MNIST (Zalando's 28×28 grey clothing images, ten
//! classes), built with the functional API: the graph a `Sequential` cannot express.
//!
//! | block                                                  | output       |
//! |--------------------------------------------------------|--------------|
//! | Conv2D 32 3×3 same → BatchNormalization → ReLU         | 28 × 28 × 32 |
//! | residual: Conv-BN-ReLU-Conv-BN, + identity, ReLU       | 28 × 28 × 32 |
//! | Conv2D 64 3×3 stride 2 same → BatchNormalization → ReLU | 14 × 14 × 64 |
//! | residual: Conv-BN-ReLU-Conv-BN, + identity, ReLU       | 14 × 14 × 64 |
//! | GlobalAveragePooling2D → Dense 10 softmax              | 10           |
//!
//! About 133k weights. Adam, batch 64, 5 epochs, 10% of the training images held out
//! (`validation_split=0.1`), the test set evaluated at the end. The same program in Python's
//! functional API is `examples/python/resnet_fashion.py`, and in TensorFlow/Keras
//! `benches/keras_resnet_fashion.py` (run side by side by `--bench`).
//!
//! ```text
//! cargo run --release --example resnet_fashion                          # the full run
//! cargo run --release --example resnet_fashion -- --epochs 1 --train-rows 2048   # a quick try
//! cargo run --release --example resnet_fashion -- --bench --epochs 3   # timing; Keras beside
//! ```
//! Fashion-MNIST is read from `data/fashion-mnist`, `~/.suanli/datasets/fashion-mnist` or
//! `/usr/share/datasets/fashion-mnist` (Debian's `dataset-fashion-mnist`), or
//! `$FASHION_MNIST_DIR`. The flags are mnist_cnn's (`--help`).

#[path = "harness/mod.rs"]
mod harness;

use suanli::nn::{
    Add, BatchNormalization, Call, Conv2D, Dense, GlobalAveragePooling2D, Input, Loss, Model,
    Optimizer, ReLU, SymbolicTensor,
};
use suanli::Device;

/// Conv2D (no bias: the normalisation's β stands in for it) → BatchNormalization → ReLU.
fn conv_bn_relu(
    x: &SymbolicTensor,
    filters: usize,
    stride: usize,
) -> suanli::Result<SymbolicTensor> {
    let h = Conv2D::new(filters, 3)
        .padding("same")
        .strides(stride)
        .use_bias(false)
        .call(x)?;
    let h = BatchNormalization::new().call(&h)?;
    ReLU::new().call(&h)
}

/// A residual block with an identity shortcut: relu(x + bn(conv(relu(bn(conv(x)))))).
fn residual(x: &SymbolicTensor, filters: usize) -> suanli::Result<SymbolicTensor> {
    let h = conv_bn_relu(x, filters, 1)?;
    let h = Conv2D::new(filters, 3)
        .padding("same")
        .use_bias(false)
        .call(&h)?;
    let h = BatchNormalization::new().call(&h)?;
    let s = Add::new().call_on(&[x, &h])?;
    ReLU::new().call(&s)
}

/// The network (see the module docs), compiled with Adam and sparse categorical
/// cross-entropy.
fn build(dev: &Device, args: &harness::Args) -> suanli::Result<Model> {
    let x = Input::named(&[28, 28, 1], "image");
    let h = conv_bn_relu(&x, 32, 1)?;
    let h = residual(&h, 32)?;
    let h = conv_bn_relu(&h, 64, 2)?;
    let h = residual(&h, 64)?;
    let h = GlobalAveragePooling2D::new().call(&h)?;
    let y = Dense::new(10, "softmax").call(&h)?;
    let mut m = Model::with_seed(dev, args.seed)
        .build(&[&x], &[&y])?
        .named("resnet_fashion");
    m.compile(
        Optimizer::Adam {
            lr: args.lr,
            beta1: 0.9,
            beta2: 0.999,
            eps: 1e-7,
        },
        Loss::SparseCategoricalCrossentropy,
    )?;
    Ok(m)
}

fn main() {
    harness::main(harness::Example {
        name: "resnet_fashion",
        about:
            "resnet_fashion: a small residual CNN (functional API) on Fashion-MNIST, 10% held out.",
        defaults: harness::Defaults {
            epochs: 5,
            batch_size: 64,
            lr: 1e-3,
        },
        sample_shape: &[28, 28, 1],
        validation: harness::Validation::Split(0.1),
        fashion: true,
        build,
        peers: &[(
            "TensorFlow/Keras",
            "tensorflow",
            "benches/keras_resnet_fashion.py",
        )],
    })
}
