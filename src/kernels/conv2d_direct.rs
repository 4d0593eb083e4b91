//! The direct forward convolution for a tiny K = KH·KW·C ≤ 32 (`shaders/conv2d_direct.wgsl`):
//! an image network's first layer (1 or 3 input channels, 3×3), where the implicit GEMM's K
//! step is mostly padding. Same operands, layouts and epilogue as
//! [`crate::kernels::conv2d::forward`], so a caller swaps one for the other; which one runs a
//! shape is [`crate::kernels::conv2d_tune::direct`]'s choice (timed per device).

use crate::error::{Error, Result};
use crate::exec::dispatch::Record;
use crate::kernels::conv2d::{Geometry, Op};
use crate::kernels::prelude::act_code;
use crate::services::pipeline::{Access, KernelSpec, Shader};
use crate::vocab::Activation;

/// conv2d_direct.wgsl, after the activation prelude.
pub const SHADER: Shader = crate::services::pipeline::shader!("conv2d_direct" after "activation", "f16_round", "half_operands");

use Access::{ReadOnly as RO, ReadWrite as RW, Uniform as U};

/// `y = act(conv(x, W) + bias)`. Bindings: x, W, bias (or a dummy), y, params.
pub const FORWARD: KernelSpec = KernelSpec {
    shader: SHADER,
    entry: "conv2d_direct",
    bindings: &[RO, RO, RO, RW, U],
};

/// Every entry point of conv2d_direct.wgsl.
pub const KERNELS: &[KernelSpec] = &[FORWARD];

/// The largest K the kernel takes (its per-invocation loop, and where it stops paying).
pub const MAX_K: usize = 32;
/// Output vec4 columns per invocation at most (`CT4`).
const MAX_CT4: usize = 4;
/// Output pixels per invocation (the shader's `PX`).
const PX: u64 = 4;
/// Invocations per work-group (the shader's `@workgroup_size`).
const WG: u64 = 64;

/// Whether the direct kernel can run `g`: K ≤ [`MAX_K`] and filters a multiple of 4 (y and W
/// are read as vec4).
pub fn eligible(g: &Geometry) -> bool {
    g.kh * g.kw * g.c <= MAX_K && g.oc.is_multiple_of(4)
}

/// The uniform: output pixels, work-groups along x, the activation's slope.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    m: u32,
    groups_x: u32,
    alpha: f32,
    _pad: u32,
}

/// Records `y = act(conv(x, W) + bias)` with the direct kernel: x (batch, h, w, c), W (kh,
/// kw, c, oc), y (batch, oh, ow, oc); a typed error when `g` is not [`eligible`].
#[allow(clippy::too_many_arguments)] // a pass's operands, spelled out
pub fn forward(
    rec: &mut dyn Record,
    g: &Geometry,
    x: &wgpu::Buffer,
    w: &wgpu::Buffer,
    bias: Option<&wgpu::Buffer>,
    y: &wgpu::Buffer,
    act: Activation,
) -> Result<()> {
    g.check()?;
    if !eligible(g) {
        return Err(Error::InvalidArgument {
            op: "conv2d (direct)",
            name: "geometry",
            expected: format!("kh·kw·c ≤ {MAX_K} and filters a multiple of 4"),
            found: format!("kh·kw·c = {}, {} filters", g.kh * g.kw * g.c, g.oc),
        });
    }
    let (m, n, k) = g.gemm(Op::Forward);
    let oc4 = g.oc / 4;
    // As many columns per invocation as fit, split evenly over the blocks.
    let blocks = oc4.div_ceil(MAX_CT4);
    let ct4 = oc4.div_ceil(blocks);
    let mut constants = g.strided().constants().to_vec();
    constants.extend([
        ("ACT", act_code(act)? as f64),
        ("HAS_BIAS", bias.is_some() as u32 as f64),
        ("CT4", ct4 as f64),
    ]);
    if g.half {
        constants.push(("HALF", 1.0));
    }
    let pipe = rec.pipeline(&FORWARD, &constants)?;
    let max = rec.device().info().limits.max_workgroups_per_dimension as u64;
    let groups = (m as u64).div_ceil(WG * PX);
    let gx = groups.min(max);
    let gz = groups.div_ceil(gx.max(1));
    let params = Params {
        m,
        groups_x: gx as u32,
        alpha: act.alpha(),
        _pad: 0,
    };
    let (xn, yn, wn) = g.sizes();
    let dev = rec.device().clone();
    let dummy = dev.core().dummy_buffer();
    let bias = bias.map_or((dummy, 16), |b| (b, n as u64 * 4));
    rec.declare_work(
        2.0 * m as f64 * n as f64 * k as f64,
        4.0 * (xn + yn + wn) as f64,
    );
    rec.dispatch(
        &pipe,
        &[
            (x, xn as u64 * 4),
            (w, wn as u64 * 4),
            bias,
            (y, yn as u64 * 4),
        ],
        Some(bytemuck::bytes_of(&params)),
        [gx as u32, blocks as u32, gz as u32],
    )
}
