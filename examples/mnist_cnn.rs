//! keras.io's "Simple MNIST convnet" in Rust: a small convolutional network for MNIST's
//! 28×28 grey digits (height, width, channels), trained on the GPU (or lavapipe on the CPU);
//! keras.io reports about 99% test accuracy after its 15 epochs.
//!
//! | layer                       | output       | parameters |
//! |-----------------------------|--------------|-----------:|
//! | Conv2D 32 filters 3×3, ReLU | 26 × 26 × 32 |        320 |
//! | MaxPooling2D 2×2            | 13 × 13 × 32 |          0 |
//! | Conv2D 64 filters 3×3, ReLU | 11 × 11 × 64 |     18,496 |
//! | MaxPooling2D 2×2            | 5 × 5 × 64   |          0 |
//! | Flatten                     | 1600         |          0 |
//! | Dropout 0.5                 | 1600         |          0 |
//! | Dense 10, softmax           | 10           |     16,010 |
//!
//! Convolutions learn local features (strokes, then their combinations), pooling halves the
//! resolution, dropout silences half of the features at random while training, and the dense
//! layer turns the 1600 features into the ten digits' probabilities. As on keras.io: Adam,
//! sparse categorical cross-entropy, batch 128, 15 epochs, and the last 10% of the training
//! images held out to validate every epoch (`validation_split=0.1`); the test set is
//! evaluated at the end.
//!
//! ```text
//! cargo run --release --example mnist_cnn                            # the keras.io run
//! cargo run --release --example mnist_cnn -- --epochs 1 --train-rows 1024   # a quick try
//! cargo run --release --example mnist_cnn -- --bench --epochs 3      # timing; PyTorch, Keras
//! ```
//! Flags (`--help` lists them all): --epochs N (15), --batch-size N (128), --lr X (0.001),
//! --device SPEC, --seed N, --train-rows N, --quiet, --save PATH, --load PATH, --checkpoint
//! PATH, --resume PATH, --profile, --devices LIST, --mpi, and --bench: the timing, then
//! PyTorch and TensorFlow/Keras on the CPU when they import (in `$SUANLI_PEER_PYTHON` or
//! `python3`; --no-torch skips them). The rest lives in `examples/harness/`, as for mnist_mlp.

#[path = "harness/mod.rs"]
mod harness;

use suanli::nn::{Conv2D, Dense, Dropout, Flatten, Loss, MaxPooling2D, Optimizer, Sequential};
use suanli::Device;

/// The model of keras.io's example, compiled with Adam (Keras's defaults) and sparse
/// categorical cross-entropy.
fn build(dev: &Device, args: &harness::Args) -> suanli::Result<Sequential> {
    let mut m = Sequential::with_seed(dev, args.seed).input_shape(&[28, 28, 1]);
    m.add(Conv2D::new(32, 3).activation("relu"))?;
    m.add(MaxPooling2D::new(2))?;
    m.add(Conv2D::new(64, 3).activation("relu"))?;
    m.add(MaxPooling2D::new(2))?;
    m.add(Flatten::new())?;
    m.add(Dropout::new(0.5))?;
    m.add(Dense::new(10, "softmax"))?;
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
        name: "mnist_cnn",
        about: "mnist_cnn: keras.io's \"Simple MNIST convnet\" on MNIST, 10% held out.",
        defaults: harness::Defaults {
            epochs: 15,
            batch_size: 128,
            lr: 1e-3,
        },
        sample_shape: &[28, 28, 1],
        validation: harness::Validation::Split(0.1),
        fashion: false,
        build,
        peers: &[
            ("PyTorch", "torch", "benches/torch_mnist_cnn.py"),
            (
                "TensorFlow/Keras",
                "tensorflow",
                "benches/keras_mnist_cnn.py",
            ),
        ],
    })
}
