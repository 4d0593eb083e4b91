//! What the kernel families share: the WGSL preludes (`activation.wgsl`, `optim_rule.wgsl`,
//! `im2col.wgsl`),
//! the uniform of the row-wise families, and the activation codes the shaders use.

use crate::error::{Error, Result};
use crate::services::pipeline::{KernelSpec, Shader};
use crate::vocab::Activation;

/// The code `shaders/activation.wgsl` uses for a pointwise activation; softmax (a row
/// operation) is refused.
pub fn act_code(act: Activation) -> Result<u32> {
    Ok(match act {
        Activation::Linear => 0,
        Activation::Relu => 1,
        Activation::LeakyRelu(_) => 2,
        Activation::Sigmoid => 3,
        Activation::Tanh => 4,
        Activation::GeluTanh => 5,
        Activation::Gelu => 6,
        Activation::Softmax => {
            return Err(Error::InvalidArgument {
                op: "activation",
                name: "act",
                expected: "a pointwise activation (softmax works on rows: use the softmax op)"
                    .into(),
                found: "softmax".into(),
            })
        }
    })
}

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
    /// Where a metrics kernel adds its sums in the accumulator (a word offset, [`AccAt`]);
    /// padding to 16 bytes for the others.
    pub at: u32,
}

/// Where the loss-metric kernels add their `[Σ loss, Σ correct, rows]`: an accumulator and
/// the word offset of the block (a model of several outputs keeps a block per output in one
/// accumulator, so every output's sums come back in one read).
#[derive(Clone, Copy, Debug)]
pub struct AccAt<'a> {
    /// The accumulator.
    pub buffer: &'a wgpu::Buffer,
    /// The block's first word.
    pub at: usize,
}

impl<'a> From<&'a wgpu::Buffer> for AccAt<'a> {
    /// The block at the start.
    fn from(buffer: &'a wgpu::Buffer) -> AccAt<'a> {
        AccAt { buffer, at: 0 }
    }
}

impl AccAt<'_> {
    /// The binding: the buffer up to the end of the block.
    pub(crate) fn binding(&self) -> (&wgpu::Buffer, u64) {
        (self.buffer, (self.at as u64 + 3) * 4)
    }
}

impl RowParams {
    /// The uniform for a (rows, cols) matrix with this multiplier.
    pub fn new(rows: usize, cols: usize, scale: f32) -> RowParams {
        RowParams {
            rows: rows as u32,
            cols: cols as u32,
            scale,
            at: 0,
        }
    }
}

/// The activation prelude on its own (it is valid WGSL by itself).
pub const ACTIVATION: Shader = crate::services::pipeline::shader!("activation");

/// The optimizer-rule prelude on its own (valid WGSL by itself).
pub const OPTIM_RULE: Shader = crate::services::pipeline::shader!("optim_rule");

/// The prelude of the generated array kernels (`crate::array`), valid WGSL by itself.
pub const ARRAY_PRELUDE: Shader =
    crate::services::pipeline::shader!("array_prelude" after "f16_round");

/// The float64 functions of the generated array kernels, appended to [`ARRAY_PRELUDE`] only
/// in kernels that compute in float64 (valid WGSL by itself, on adapters with f64 and i64).
pub const ARRAY_PRELUDE_F64: Shader = crate::services::pipeline::shader!("array_prelude_f64");
/// The float64 transcendental functions of the array kernels, after the float64 prelude
/// they call.
pub const ARRAY_MATH_F64: Shader = crate::services::pipeline::shader!(
    "array_math_f64" after "array_prelude_f64", "array_rem_pio2_f64"
);
/// float64 sin, cos and tan's Payne-Hanek reduction of large arguments (the file stands
/// alone; [`ARRAY_MATH_F64`] includes it).
pub const ARRAY_REM_PIO2_F64: Shader = crate::services::pipeline::shader!("array_rem_pio2_f64");
/// The rest of them (hyperbolic functions, pow, hypot, logaddexp, nextafter), after the
/// float64 prelude and [`ARRAY_MATH_F64`]: what a kernel calling any of them includes.
pub const ARRAY_MATH_F64_MORE: Shader = crate::services::pipeline::shader!(
    "array_math_f64_more" after "array_prelude_f64", "array_rem_pio2_f64", "array_math_f64"
);
/// The int64/uint64 functions of the generated array kernels, appended to
/// [`ARRAY_PRELUDE`] only in kernels that compute in 64-bit integers (valid WGSL by itself,
/// on adapters with i64).
pub const ARRAY_PRELUDE_I64: Shader = crate::services::pipeline::shader!("array_prelude_i64");
/// The complex64 functions of the array kernels, after the array prelude they call (the
/// two together are what every generated array kernel includes).
pub const ARRAY_COMPLEX: Shader =
    crate::services::pipeline::shader!("array_complex" after "f16_round", "array_prelude");

/// The implicit-im2col prelude of the matmul family on its own (valid WGSL by itself).
pub const IM2COL: Shader = crate::services::pipeline::shader!("im2col");

/// `f16_round_`: binary16 rounding on an f32 word's bits, shared by the array dtype float16
/// ([`ARRAY_PRELUDE`]) and the kernels' float16 operands ([`HALF_OPERANDS`]).
pub const F16_ROUND: Shader = crate::services::pipeline::shader!("f16_round");

/// The `HALF` override and `h16`/`h16v`: the matmul and convolution kernels' float16 operands
/// (the `mixed_float16` policy), after [`F16_ROUND`].
pub const HALF_OPERANDS: Shader =
    crate::services::pipeline::shader!("half_operands" after "f16_round");

/// Refuses a launch whose invocations would loop more often than the adapter allows.
///
/// llvmpipe stops every loop of an invocation once it has run 65,535 iterations in all (see
/// [`crate::device::adapter::ComputeLimits::max_loop_iterations`]) and carries on with a
/// truncated result; a typed error naming the limit is better than a wrong answer. `trips` is
/// the most loop iterations (all loops together) one invocation of `op` runs for `shape`.
pub fn check_loops(
    dev: &crate::runtime::Device,
    op: &'static str,
    trips: u64,
    shape: impl FnOnce() -> String,
) -> Result<()> {
    match dev.info().limits.max_loop_iterations {
        Some(limit) if trips > limit as u64 => Err(Error::InvalidArgument {
            op,
            name: "shape",
            expected: format!(
                "at most {limit} loop iterations per invocation on {} (it stops longer loops)",
                dev.name()
            ),
            found: format!("{}, which needs {trips}", shape()),
        }),
        _ => Ok(()),
    }
}

/// The float64 twin of a kernel whose shader is written over `alias T = f32;` (the Jacobi
/// and Householder families): the same text with that line saying f64, so one source serves
/// both precisions; that is the only substitution, so such a shader uses no builtin that
/// WGSL defines for f32 alone (for `inverseSqrt(x)` it writes `1.0 / sqrt(x)`;
/// `tests/shaders.rs` validates the twins). Built once per kernel into `cell`; leaked as
/// [`KernelSpec`] needs `&'static str`, bounded by the number of such kernels. Only valid on adapters with `SHADER_F64`.
pub fn f64_twin(
    spec: &KernelSpec,
    name: &'static str,
    cell: &'static std::sync::OnceLock<KernelSpec>,
) -> Result<&'static KernelSpec> {
    const ALIAS: &str = "alias T = f32;";
    if !spec.shader.source.contains(ALIAS) {
        return Err(Error::Internal {
            op: "f64_twin",
            message: format!("{} has no `{ALIAS}` line", spec.shader.name),
        });
    }
    Ok(cell.get_or_init(|| {
        let source = spec.shader.source.replace(ALIAS, "alias T = f64;");
        KernelSpec {
            shader: Shader {
                name,
                source: Box::leak(source.into_boxed_str()),
            },
            ..*spec
        }
    }))
}
