//! Keras-style neural networks: [`Dense`] layers in a [`Sequential`] model, compiled with an
//! [`Optimizer`] and a [`Loss`], trained with [`Sequential::fit`] entirely on the device.
//!
//! ```no_run
//! use suanli::nn::{Dense, FitOptions, Loss, Optimizer, Sequential};
//! use suanli::data::{Dataset, Mnist};
//! use suanli::Device;
//!
//! let dev = Device::open("auto")?;
//! let mnist = Mnist::load()?;
//! let train = Dataset::from_u8(&dev, &mnist.train_images, 784, 1.0 / 255.0, &mnist.train_labels)?;
//! let mut model = Sequential::new(&dev);
//! model.add(Dense::new(128, "relu").input_dim(784))?;
//! model.add(Dense::new(64, "relu"))?;
//! model.add(Dense::new(10, "softmax"))?;
//! model.compile(Optimizer::adam(), Loss::SparseCategoricalCrossentropy)?;
//! let history = model.fit(&train, FitOptions { epochs: 10, ..Default::default() })?;
//! println!("final accuracy {:.4}", history.accuracy.last().unwrap());
//! # Ok::<(), suanli::Error>(())
//! ```

mod checkpoint;
mod layers;
mod model;
pub mod parallel;
mod train;
pub mod weights_file;

pub use checkpoint::Checkpoint;
pub use layers::{Dense, Initializer, LayerActivation};
pub use model::{EarlyStopping, EpochCallback, FitOptions, History, Loss, Optimizer, Sequential};
pub use train::dropout_mask_seed;
