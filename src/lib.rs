//! # suanli (算力): a vendor-neutral GPU compute runtime over wgpu
//!
//! suanli finds every GPU (NVIDIA, AMD, Intel, Apple) through Vulkan, Metal or DX12, falls back
//! to a software Vulkan driver (Mesa's lavapipe) where there is none, and runs numeric work on
//! it: pooled buffers, cached pipelines, WGSL kernels validated with naga, and your own kernels
//! on its tensors. No vendor SDK is needed.
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
//! - [`devices`], [`Device`], [`DeviceSpec`], [`config`]: discovery, selection, configuration.
//! - [`Tensor`]: f32 data on a device; [`memory`]: the caching pool behind it.
//! - [`kernel`]: WGSL validation, the pipeline cache and dispatch; [`kernels`]: built-in
//!   kernel families, one per file in `shaders/`.
//! - [`CustomKernel`]: run your own WGSL on suanli tensors.
//!
//! Nothing is global: every operation takes a [`Device`] (or a tensor that knows its device),
//! so several devices can be used from one process.

#![warn(missing_docs)]

pub mod adapter;
pub mod autograd;
pub mod config;
pub mod custom;
pub mod data;
pub mod device;
pub mod error;
pub mod group;
pub mod io;
pub mod kernel;
pub mod kernels;
pub mod memory;
pub mod nn;
pub mod ops;
pub mod profile;
pub mod random;
pub mod reference;
pub mod telemetry;
pub mod tensor;

pub use config::{BackendKind, Config, DeviceSpec};
pub use custom::{CustomKernel, Grid, KernelArg};
pub use device::{devices, is_gpu_available, AdapterDesc, Device, DeviceKind, Vendor};
pub use error::{Error, Result};
pub use group::DeviceGroup;
pub use kernels::matmul::{Activation, Layout};
pub use memory::MemoryStats;
pub use ops::Labels;
pub use tensor::Tensor;
