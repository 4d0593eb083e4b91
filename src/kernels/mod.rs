//! Rust bindings of the WGSL kernel families, one module per file in `shaders/`.
//!
//! Each module declares its [`Shader`](crate::kernel::Shader), its entry points as
//! [`KernelSpec`](crate::kernel::KernelSpec) constants (binding layout in one place), its
//! `Params` struct mirroring the WGSL uniform, and launch functions.

pub mod elementwise;
