//! # suanli (算力): a vendor-neutral GPU compute runtime over wgpu
//!
//! suanli finds every GPU (NVIDIA, AMD, Intel, Apple) through Vulkan, Metal or DX12, falls back
//! to a software Vulkan driver (Mesa's lavapipe) where there is none, and runs numeric work on
//! it: pooled buffers, cached pipelines, WGSL kernels validated with naga, your own kernels on
//! its tensors, and Keras-style training. No vendor SDK is needed.
//!
//! ## Quick start
//! ```no_run
//! use suanli::{Device, Tensor};
//!
//! // Pick a device: "auto", "gpu:0", "cpu", "vulkan:1", or a name substring.
//! let dev = Device::open("auto")?;
//! println!("{} ({}, {})", dev.name(), dev.info().kind, dev.info().backend);
//!
//! let x = Tensor::rand_uniform(&dev, &[1024, 1024], -1.0, 1.0, 42)?;
//! assert_eq!(x.to_vec()?.len(), 1 << 20);
//! println!("{:?}", dev.memory_stats());
//! # Ok::<(), suanli::Error>(())
//! ```
//!
//! ## Map
//! The crate reads bottom to top; a module imports only from the layers below it
//! (`tests/architecture.rs` enforces it, `docs/ARCHITECTURE.md` explains it):
//!
//! | layer | modules |
//! |---|---|
//! | base | [`error`], [`io`], [`random`] |
//! | configuration and vocabulary | [`config`] (the only reader of the environment), [`vocab`] |
//! | device | [`device`]: adapters, the wgpu handle, measured choices |
//! | memory | [`memory`]: the caching pool |
//! | execution services | [`services::pipeline`], the profiler ([`exec::Profile`]) |
//! | the device handle | [`runtime`]: [`Device`] |
//! | recording | [`exec`]: [`exec::Recorder`], [`exec::Capture`] |
//! | tensors | [`tensor`]: [`Tensor`] |
//! | kernels | `kernels` and the f64 `reference` (unstable: [`internals`]) |
//! | ops | [`ops`], [`custom`] ([`CustomKernel`]: your own WGSL) |
//! | observation | [`telemetry`] |
//! | data | [`data`] |
//! | training | [`nn`] |
//! | several devices | [`multi`] |
//!
//! Nothing is global: every operation takes a [`Device`] (or a tensor that knows its device),
//! so several devices can be used from one process.

#![warn(missing_docs)]

pub mod array;
pub mod config;
pub mod custom;
pub mod data;
pub mod device;
pub mod error;
pub mod exec;
pub mod io;
mod kernels;
pub mod memory;
pub mod multi;
pub mod nn;
pub mod ops;
pub mod random;
mod reference;
pub mod runtime;
pub mod services;
pub mod telemetry;
pub mod tensor;
pub mod vocab;

#[doc(hidden)]
pub mod internals {
    //! Not a stable API. The crate's building blocks below the tensor ops, public only so
    //! the crate's own tests and benchmarks can reach them: they change without notice.

    /// The WGSL kernel families' bindings (one module per shader).
    pub mod kernels {
        pub use crate::kernels::*;
    }

    /// Deliberately naive f64 references of every kernel, for tests.
    pub mod reference {
        pub use crate::reference::*;
    }

    /// One layer on its own, for layer-level gradient checks.
    pub use crate::nn::train::probe::{LayerProbe, ProbeGrads};

    /// The model file's host-side parser (the fuzzer's and the tests' way in).
    pub mod weights_file {
        pub use crate::nn::graph::weights_file::*;
    }

    /// Gradient buckets of data-parallel training (tests of their layout).
    pub use crate::multi::replica::{buckets, Bucket};
}

pub use config::{BackendKind, Config, DeviceSpec};
pub use custom::{CustomKernel, Grid, KernelArg};
pub use device::{devices, is_gpu_available, AdapterDesc, DeviceKind, Vendor};
pub use error::{Error, Result};
pub use memory::MemoryStats;
pub use multi::DeviceGroup;
pub use ops::Labels;
pub use runtime::Device;
pub use tensor::Tensor;
pub use vocab::{Activation, DenseLoss, Layout, Padding, Precision, Rule};
