//! The harness the MNIST examples share: flags, device and MPI setup, data, building or
//! loading the model, training (one device, several, or an MPI job), the results, `--bench`
//! with its side-by-side peers, `--profile`, and the fault injection of the MPI tests.
//!
//! An example describes itself with an [`Example`] (its name, defaults, sample shape,
//! validation, model and peers) and hands it to [`main`]; it includes this folder with
//! `#[path = "harness/mod.rs"] mod harness;` (a folder without `main.rs`, so cargo does not
//! take it for an example of its own).
//!
//! - `args.rs`: the command line and its usage text;
//! - `run.rs`: processes, devices, data, the model, the results;
//! - `train.rs`: callbacks, and `fit` on one device or data-parallel;
//! - `report.rs`: `--profile`, the `--bench` table and the peers (PyTorch, Keras);
//! - `fault.rs`: the fault tests' trigger (`--fault-rank`, `--fault-step`, `--fault`).

use suanli::nn::Sequential;
use suanli::Device;

/// Prints on rank 0 only (every process when there is one).
macro_rules! say {
    ($root:expr, $($t:tt)*) => {
        if $root {
            println!($($t)*);
        }
    };
}

mod args;
mod fault;
mod report;
mod run;
mod train;

pub use args::Args;

/// What an example is: everything the harness cannot guess.
pub struct Example {
    /// The example's name (`cargo run --example NAME`), in messages and the usage text.
    pub name: &'static str,
    /// A line or two saying what the example trains; `--help` prints it above the flags.
    pub about: &'static str,
    /// The defaults of `--epochs`, `--batch-size` and `--lr`.
    pub defaults: Defaults,
    /// The shape of one sample as the model takes it: `&[784]` (a row of pixels) or
    /// `&[28, 28, 1]` (an image: height, width, channels).
    pub sample_shape: &'static [usize],
    /// What each epoch is validated on.
    pub validation: Validation,
    /// Train on Fashion-MNIST (Zalando's clothing images, the same shapes) instead of MNIST.
    pub fashion: bool,
    /// The model, built and compiled (`--load` and `--resume` bring their own).
    pub build: fn(&Device, &Args) -> suanli::Result<Sequential>,
    /// The same model in other frameworks, run side by side by `--bench`.
    pub peers: &'static [Peer],
}

/// Defaults of the flags that differ between examples.
pub struct Defaults {
    /// Epochs to train.
    pub epochs: usize,
    /// Samples per optimizer step.
    pub batch_size: usize,
    /// The optimizer's learning rate.
    pub lr: f64,
}

/// What the model is validated on at the end of every epoch.
// Each example constructs one variant; the harness handles both.
#[allow(dead_code)]
pub enum Validation {
    /// The test set (which is also evaluated at the end).
    TestSet,
    /// The last fraction of the training rows, held out before shuffling (Keras's
    /// `validation_split`); the test set is evaluated once, at the end.
    Split(f64),
}

/// A script training the same model in another framework, for `--bench`: the framework as
/// printed (`"PyTorch"`), the Python module that must import for the script to run
/// (`"torch"`), and the script, relative to the repository root. The script takes `--epochs
/// N --batch-size B --threads T` (and `--train-rows N` if it mentions it) and ends its output
/// with `median_epoch_s SECONDS test_accuracy ACC`.
pub type Peer = (&'static str, &'static str, &'static str);

/// Runs `example` with the process's command line: exit status 2 for a bad command line (and
/// `--help`), 1 for an error while running.
pub fn main(example: Example) {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    let args = match args::parse(&example, std::env::args().skip(1)) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    if let Err(e) = run::run(&example, &args) {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}
