//! Keras-style neural networks: [`Dense`] layers in a [`Sequential`] model, compiled with an
//! [`Optimizer`] and a [`Loss`], trained with [`Sequential::fit`] entirely on the device.
//!
//! ```no_run
//! use suanli::nn::{Dense, FitOptions, Loss, Optimizer, ProgressBar, Sequential};
//! use suanli::data::{Dataset, Mnist};
//! use suanli::Device;
//!
//! let dev = Device::open("auto")?;
//! let mnist = Mnist::load()?;
//! let train = Dataset::from_u8(&dev, &mnist.train_images, 784, 1.0 / 255.0, &mnist.train_labels)?;
//! let mut model = Sequential::new(&dev);
//! model.add(Dense::new(128, "relu").input_dim(784))?;
//! model.add(Dense::new(64, suanli::Activation::Relu))?;
//! model.add(Dense::new(10, "softmax"))?;
//! model.compile(Optimizer::adam(), Loss::SparseCategoricalCrossentropy)?;
//! let mut bar = ProgressBar::stdout();
//! let history = model.fit(&train, FitOptions { epochs: 10, callbacks: vec![&mut bar], ..Default::default() })?;
//! println!("final accuracy {:.4}", history.accuracy.last().unwrap());
//! # Ok::<(), suanli::Error>(())
//! ```
//!
//! The files, bottom to top: `options` (what users choose and what training reports),
//! `layer` (what a layer type is to the engine) and `dense` (the dense layer), `model`
//! (`Sequential`), `step` (a step as a captured program, and the per-step table), `loss_end`
//! (the loss, row weights and metrics that end a step), `metric` (the metrics beyond loss and
//! accuracy), `fit` (the one epoch loop) and `evaluate`, `store` (files), `progress` (a
//! Keras-style progress callback), `serve` (a training's own `/metrics`, feature `serve`).
//! `docs/ARCHITECTURE.md` walks through them.

pub(crate) mod batchnorm;
pub(crate) mod build;
pub(crate) mod clip;
pub(crate) mod conv2d;
pub(crate) mod dense;
pub(crate) mod dropout;
pub(crate) mod evaluate;
pub(crate) mod fit;
pub(crate) mod functional;
pub(crate) mod graph;
pub mod graph_config;
pub(crate) mod head;
pub(crate) mod layer;
pub(crate) mod loss_end;
pub(crate) mod loss_fn;
pub(crate) mod merge;
pub(crate) mod metric;
pub(crate) mod model;
pub(crate) mod normalization;
pub(crate) mod options;
pub(crate) mod pointwise;
pub(crate) mod pooling;
pub(crate) mod probe;
pub(crate) mod progress;
pub mod registry;
pub(crate) mod rescaling;
pub(crate) mod reshape;
#[cfg(feature = "serve")]
pub(crate) mod serve;
pub mod spec;
pub(crate) mod step;
pub(crate) mod store;
pub(crate) mod tensorboard;
pub(crate) mod weights_file;

pub use batchnorm::BatchNormalization;
pub use clip::Clip;
pub use conv2d::Conv2D;
pub use dense::{ActivationArg, Dense, DenseDropout};
pub use dropout::Dropout;
pub use functional::{Call, Input, SymbolicTensor};
pub use loss_fn::loss_value;
pub use merge::{Add, Average, Concatenate, Maximum, Multiply, Subtract};
pub use metric::{auc as metric_auc, Metric};
pub use model::{Model, Sequential};
pub use normalization::Normalization;
pub use options::{
    Callback, Checkpoint, EarlyStopping, EpochBegin, EpochCallback, EpochEnd, Evaluation,
    FitOptions, History, Loss, Optimizer, Progress, ValidationFreq,
};
pub use pointwise::{Activation, ReLU, Softmax};
pub use pooling::{AveragePooling2D, GlobalAveragePooling2D, MaxPooling2D};
pub use progress::ProgressBar;
pub use registry::{layer_classes, IntoLayers, LayerConfig, LayerSpec};
pub use rescaling::Rescaling;
pub use reshape::{Flatten, Reshape};
#[cfg(feature = "serve")]
pub use serve::MetricsServer;
pub use spec::{Initializer, Padding, Pair};
pub use step::dropout_mask_seed;
pub use tensorboard::{EventWriter, TensorBoard};
