//! The headline: a 784-128-64-10 MLP (ReLU, softmax) trained with Adam and sparse categorical
//! cross-entropy on real MNIST, entirely on the GPU (or lavapipe).
//!
//! ```text
//! cargo run --release --example mnist_mlp
//! cargo run --release --example mnist_mlp -- --epochs 3 --batch-size 128 --device cpu --save model.safetensors
//! cargo run --release --example mnist_mlp -- --bench --epochs 4     # median epoch time over epochs 2..N
//! cargo run --release --example mnist_mlp -- --checkpoint run.ckpt    # checkpoint every epoch
//! cargo run --release --example mnist_mlp -- --resume run.ckpt        # continue to --epochs
//! ```
//! Flags: --epochs N (10), --batch-size N (32), --lr X (0.001), --device SPEC (auto),
//! --seed N (0), --save PATH, --quiet, --bench (--no-torch: without the PyTorch comparison),
//! --profile (per-kernel GPU time after training; it waits for every submission, so epochs
//! run slower while it is on), --checkpoint PATH (weights, optimizer state, epoch and seed
//! after every epoch, atomically), --resume PATH (continue from a checkpoint, and keep
//! checkpointing to it), --load PATH (start from the weights of a model file saved by Rust or
//! Python; with --epochs 0 only evaluate them), --train-rows N (train on the first N images
//! only; for quick tries), --devices LIST (data-parallel over several devices: `gpu:0,gpu:1`,
//! `all`, or `cpu,cpu` to try it on the software adapter; prints each device's share and
//! throughput per epoch), --bucket-kb N (gradient bucket size for --devices and --mpi;
//! default 25600, PyTorch DDP's 25 MB). Every epoch is validated on the test set.
//!
//! Several processes (cargo feature `mpi`):
//! ```text
//! cargo build --release --features mpi --example mnist_mlp
//! mpirun -n 2 target/release/examples/mnist_mlp --mpi --epochs 2 --batch-size 128
//! ```
//! --mpi trains one model across the processes of the MPI job (each on its local GPU, or
//! --device/--devices); rank 0 prints. Fault tests: --fault-rank R --fault-step N --fault
//! error|exit|kill|hang|panic makes rank R fail that way around step N; --save-every-rank
//! writes each rank's weights to PATH.rankR (with --save).
//!
//! Everything but the model lives in `examples/harness/`, shared with `mnist_cnn`.

#[path = "harness/mod.rs"]
mod harness;

use suanli::nn::{Dense, Loss, Optimizer, Sequential};
use suanli::{Activation, Device};

/// The model: 784 pixels in, two ReLU layers of 128 and 64 units, 10 softmax outputs;
/// Adam with Keras's defaults.
fn build(dev: &Device, args: &harness::Args) -> suanli::Result<Sequential> {
    let mut m = Sequential::with_seed(dev, args.seed);
    m.add(Dense::new(128, Activation::Relu).input_dim(784))?;
    m.add(Dense::new(64, Activation::Relu))?;
    m.add(Dense::new(10, Activation::Softmax))?;
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
        name: "mnist_mlp",
        about: "mnist_mlp: a 784-128-64-10 MLP on MNIST, validated on the test set every epoch.",
        defaults: harness::Defaults {
            epochs: 10,
            batch_size: 32,
            lr: 1e-3,
        },
        sample_shape: &[784],
        validation: harness::Validation::TestSet,
        fashion: false,
        build,
        peers: &[("PyTorch", "torch", "benches/torch_mnist.py")],
    })
}
