//! Rust bindings of the WGSL kernel families, one module per file in `shaders/`.
//!
//! Each module declares its [`Shader`], its entry points as [`KernelSpec`] constants (the
//! binding layout in one place), its `Params` struct mirroring the WGSL uniform field by field,
//! and functions that record launches into a [`Recorder`](crate::kernel::Recorder).
//! `activation.wgsl` is a prelude shared by the families that fuse activations, and
//! `optim_rule.wgsl` one shared by the optimizers and the matmul epilogue that applies them; the subgroup
//! matmul lives in `matmul_subgroup.wgsl` (bound in [`matmul`]) because subgroup operations
//! make a module unusable on adapters without them.

use crate::kernel::{KernelSpec, Shader};

pub mod elementwise;
pub mod gather;
pub mod loss;
pub mod matmul;
pub mod optim;
pub mod reduce;
pub mod softmax_xent;

/// The uniform of the row-wise families (reduce, softmax_xent, loss): a (rows, cols) matrix and
/// a scale (1/count for a mean, 1/B for a batch-mean gradient). Mirrors their WGSL `Params`.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub struct RowParams {
    /// Rows.
    pub rows: u32,
    /// Columns.
    pub cols: u32,
    /// Multiplier (see the family).
    pub scale: f32,
    /// Padding to 16 bytes.
    pub _pad: u32,
}

impl RowParams {
    /// The uniform for a (rows, cols) matrix with this multiplier.
    pub fn new(rows: usize, cols: usize, scale: f32) -> RowParams {
        RowParams {
            rows: rows as u32,
            cols: cols as u32,
            scale,
            _pad: 0,
        }
    }
}

/// The activation prelude on its own (it is valid WGSL by itself).
pub const ACTIVATION: Shader = crate::shader!("activation");

/// The optimizer-rule prelude on its own (valid WGSL by itself).
pub const OPTIM_RULE: Shader = crate::shader!("optim_rule");

/// Every built-in shader as assembled by the crate.
pub const SHADERS: &[Shader] = &[
    ACTIVATION,
    OPTIM_RULE,
    elementwise::SHADER,
    gather::SHADER,
    loss::SHADER,
    matmul::SHADER,
    matmul::SHADER_SUBGROUP,
    optim::SHADER,
    reduce::SHADER,
    reduce::SHADER_SUBGROUP,
    softmax_xent::SHADER,
];

/// Every built-in kernel, by family.
pub const KERNELS: &[&[KernelSpec]] = &[
    elementwise::KERNELS,
    gather::KERNELS,
    loss::KERNELS,
    matmul::KERNELS,
    optim::KERNELS,
    reduce::KERNELS,
    softmax_xent::KERNELS,
];
