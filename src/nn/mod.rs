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
//! The folder, by room: the layer contract and vocabulary at the top (`layer`: what a layer
//! type is to the engine; `spec`: what a type provides; `registry`: every type, tagged);
//! `layers/` (one file per layer type, and `head`, the activation shared by those that have
//! one); `graph/` (the model as a graph: `model`, `build` and `functional` to make one, `walk`
//! to record it, `graph_config`, `store` and `weights_file` for its files); `train/` (what
//! users choose and what training reports, `options`; the step program `step`, `loss_end`,
//! `metric`, `clip`; the one epoch loop `fit`, `evaluate`; `progress`, `tensorboard`,
//! `serve` and `probe`). `docs/ARCHITECTURE.md` walks through them.

pub(crate) mod graph;
pub(crate) mod layer;
pub(crate) mod layers;
pub mod registry;
pub mod spec;
pub(crate) mod train;

pub use graph::functional::{Call, Input, SymbolicTensor};
pub use graph::generate::GenerateOptions;
pub use graph::graph_config;
pub use graph::model::{Model, Sequential};
pub use graph::shared::{Share, Shared, Transposed};
pub use layer::Src;
pub use layers::attention::MultiHeadAttention;
pub use layers::batchnorm::BatchNormalization;
pub use layers::conv2d::Conv2D;
pub use layers::dense::{ActivationArg, Dense, DenseDropout};
pub use layers::dropout::Dropout;
pub use layers::embedding::Embedding;
pub use layers::layernorm::LayerNormalization;
pub use layers::merge::{Add, Average, Concatenate, Maximum, Multiply, Subtract};
pub use layers::normalization::Normalization;
pub use layers::pointwise::{Activation, ReLU, Softmax};
pub use layers::pooling::{AveragePooling2D, GlobalAveragePooling2D, MaxPooling2D};
pub use layers::rescaling::Rescaling;
pub use layers::reshape::{Flatten, Reshape};
pub use registry::{layer_classes, IntoLayers, LayerConfig, LayerSpec};
pub use spec::{Initializer, Padding, Pair};
pub use train::clip::Clip;
pub use train::decay::DecayFilter;
pub use train::loss_fn::loss_value;
pub use train::loss_scale::{LossScale, LossScaleState, LossScaling};
pub use train::metric::{auc as metric_auc, Metric};
pub use train::options::{
    Callback, Checkpoint, EarlyStopping, EpochBegin, EpochCallback, EpochEnd, Evaluation,
    FitOptions, History, Loss, Optimizer, Progress, ValidationFreq,
};
pub use train::progress::ProgressBar;
#[cfg(feature = "serve")]
pub use train::serve::MetricsServer;
pub use train::table::dropout_mask_seed;
pub use train::tensorboard::{EventWriter, TensorBoard};
