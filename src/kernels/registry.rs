//! Every built-in shader and kernel declaration, for validation against the WGSL
//! (`tests/shaders.rs` checks each entry point's bindings with naga, on the CPU).

use crate::kernels::prelude::{ACTIVATION, ARRAY_PRELUDE, IM2COL, OPTIM_RULE};
use crate::kernels::{
    attention, attention_cache, attention_unfused, batchnorm, clip, conv2d, elementwise, embedding,
    gather, layernorm, loss, matmul_variant, merge, metric, optim, philox, pool2d, reduce, sample,
    softmax_xent, sort, windows,
};
use crate::services::pipeline::{KernelSpec, Shader};

/// Every built-in shader as assembled by the crate.
pub const SHADERS: &[Shader] = &[
    ACTIVATION,
    OPTIM_RULE,
    IM2COL,
    ARRAY_PRELUDE,
    attention::COMMON,
    attention::SHADER,
    attention::SHADER_BACKWARD,
    attention_cache::SHADER,
    attention_unfused::SHADER,
    batchnorm::SHADER,
    clip::SHADER,
    conv2d::SHADER,
    elementwise::SHADER,
    embedding::SHADER,
    gather::SHADER,
    layernorm::SHADER,
    loss::SHADER,
    matmul_variant::SHADER,
    matmul_variant::SHADER_TILED,
    matmul_variant::SHADER_SG[0],
    matmul_variant::SHADER_SG[1],
    matmul_variant::SHADER_SG[2],
    matmul_variant::SHADER_SG[3],
    matmul_variant::SHADER_SG[4],
    matmul_variant::SHADER_SG[5],
    merge::SHADER,
    metric::SHADER,
    optim::SHADER,
    philox::SHADER,
    pool2d::SHADER,
    reduce::SHADER,
    reduce::SHADER_SUBGROUP,
    sample::SHADER,
    softmax_xent::SHADER,
    sort::SHADER,
    sort::SHADER_STEP,
    windows::SHADER,
];

/// Every built-in kernel, by family.
pub const KERNELS: &[&[KernelSpec]] = &[
    attention::KERNELS,
    attention_cache::KERNELS,
    attention_unfused::KERNELS,
    batchnorm::KERNELS,
    clip::KERNELS,
    conv2d::KERNELS,
    elementwise::KERNELS,
    embedding::KERNELS,
    gather::KERNELS,
    layernorm::KERNELS,
    loss::KERNELS,
    matmul_variant::KERNELS,
    matmul_variant::CONV_KERNELS,
    merge::KERNELS,
    metric::KERNELS,
    optim::KERNELS,
    philox::KERNELS,
    pool2d::KERNELS,
    reduce::KERNELS,
    sample::KERNELS,
    softmax_xent::KERNELS,
    sort::KERNELS,
    windows::KERNELS,
];
