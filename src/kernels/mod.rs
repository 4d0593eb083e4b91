//! Rust bindings of the WGSL kernel families, one module per file in `shaders/`.
//!
//! Each module declares its `Shader`, its entry points as `KernelSpec` constants (the
//! binding layout in one place), its `Params` struct mirroring the WGSL uniform field by field,
//! and functions that record launches through [`Record`](crate::exec::Record) (immediately or
//! into a captured program). `activation.wgsl` is a prelude shared by the families that fuse
//! activations, and `optim_rule.wgsl` one shared by the optimizers and the matmul epilogue
//! that applies them. The matmul family is three modules: the operation ([`matmul`]), its
//! kernels and what each can do ([`matmul_variant`], including the subgroup kernels of
//! `matmul_subgroup.wgsl`, a file of its own because subgroup operations make a module
//! unusable on adapters without them), and the per-device choice ([`matmul_tune`]).
//!
//! Not a stable API: these are the crate's building blocks, public for its tests and
//! benchmarks (and for the curious), and they change without notice.
//!
//! [`prelude`] holds what the families share, [`registry`] lists them all.

pub mod attention;
pub mod attention_cache;
pub mod attention_tune;
pub mod attention_unfused;
pub mod batchnorm;
pub mod clip;
pub mod conv2d;
pub mod conv2d_direct;
pub mod conv2d_strided;
pub mod conv2d_tune;
pub mod elementwise;
pub mod embedding;
pub mod fft;
pub mod gather;
pub mod jacobi;
pub mod layernorm;
pub mod loss;
pub mod loss_scale;
pub mod lu;
pub mod matmul;
pub mod matmul_batch;
pub mod matmul_gen;
pub mod matmul_tune;
pub mod matmul_variant;
pub mod merge;
pub mod metric;
pub mod optim;
pub mod philox;
pub mod pool2d;
pub mod prelude;
pub mod qr;
pub mod reduce;
pub mod registry;
pub mod sample;
pub mod softmax_xent;
pub mod sort;
pub mod windows;

pub use prelude::{act_code, RowParams};
pub use registry::{KERNELS, SHADERS};
