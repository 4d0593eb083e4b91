//! A strided convolution's backward data pass as a direct gather (`shaders/conv2d_strided.wgsl`).
//!
//! With stride 1 the pass is a GEMM over implicit im2col (`conv2d`); with stride s the
//! address of dy for a tap divides, and only about 1/s² of the KH·KW taps of an input land
//! on an output. The naive GEMM's dividing loader walked all KH·KW·OC products per element
//! at about 1 GFLOP/s on lavapipe: issue 35's BatchNorm CNN spent 86% of its step in the
//! stride-2 layer's backward data. The gather does the landing taps' products only, an
//! invocation per element of dx (four channels of eight pixels of a row that share a phase
//! where C and OC are multiples of 4),
//! and applies the GEMM epilogue's gate and accumulation.

use crate::error::Result;
use crate::exec::dispatch::Record;
use crate::kernels::matmul::check_gate;
use crate::kernels::prelude::act_code;
use crate::services::pipeline::{grid_1d, Access, KernelSpec, Shader};
use crate::vocab::Activation;

/// conv2d_strided.wgsl, after the activation prelude (the gate's derivative).
pub const SHADER: Shader = crate::services::pipeline::shader!("conv2d_strided" after "activation", "f16_round", "half_operands");

use Access::{ReadOnly as RO, ReadWrite as RW, Uniform as U};

/// The gather. Bindings: dy, Wᵗ, gate output, dx, params.
pub const BACKWARD_DATA: KernelSpec = KernelSpec {
    shader: SHADER,
    entry: "conv2d_strided_backward_data",
    bindings: &[RO, RO, RO, RW, U],
};

/// The gather, four channels of eight same-phase pixels per invocation (C and OC multiples
/// of 4). Bindings as
/// [`BACKWARD_DATA`]'s.
pub const BACKWARD_DATA4: KernelSpec = KernelSpec {
    shader: SHADER,
    entry: "conv2d_strided_backward_data4",
    bindings: &[RO, RO, RO, RW, U],
};

/// Every entry point of conv2d_strided.wgsl.
pub const KERNELS: &[KernelSpec] = &[BACKWARD_DATA, BACKWARD_DATA4];

/// Whether `g` runs on the four-channel kernel.
pub fn by_four(g: &Geometry) -> bool {
    g.c.is_multiple_of(4) && g.oc.is_multiple_of(4)
}

/// Pixels per invocation of the four-channel kernel (`PXB` in the shader): a block of one
/// row's pixels `sw` apart, which the same taps land on.
const PXB: usize = 8;

/// Invocations of the four-channel kernel: for every (n, h), phase of w and block of `PXB`
/// pixels of that phase, `c / 4` of them (blocks past a short phase's row return at once).
fn blocks4(g: &Geometry) -> usize {
    let per_phase = g.w.div_ceil(g.sw).div_ceil(PXB);
    g.batch * g.h * g.sw * per_phase * (g.c / 4)
}

/// What the gather needs of a convolution's geometry (`conv2d::Geometry`, which builds it:
/// this module stays below `conv2d`, which routes to it). Fields as `Geometry` names them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(missing_docs)] // named as conv2d::Geometry's
pub struct Geometry {
    pub batch: usize,
    pub h: usize,
    pub w: usize,
    pub c: usize,
    pub oh: usize,
    pub ow: usize,
    pub oc: usize,
    pub kh: usize,
    pub kw: usize,
    pub sh: usize,
    pub sw: usize,
    pub ph: usize,
    pub pw: usize,
    pub dh: usize,
    pub dw: usize,
    /// Float16 operands: dy and Wᵀ rounded to binary16 as they are loaded (the `HALF`
    /// override; see `crate::kernels::conv2d::Geometry::half`).
    pub half: bool,
}

impl Geometry {
    /// The 14 shape constants every convolution shader reads (CH … DW): the one list that
    /// conv2d's im2col, conv2d_direct and this gather build their pipelines from.
    pub fn constants(&self) -> [(&'static str, f64); 14] {
        let v = |x: usize| x as f64;
        [
            ("CH", v(self.h)),
            ("CW", v(self.w)),
            ("CC", v(self.c)),
            ("OH", v(self.oh)),
            ("OW", v(self.ow)),
            ("OC", v(self.oc)),
            ("KH", v(self.kh)),
            ("KW", v(self.kw)),
            ("SH", v(self.sh)),
            ("SW", v(self.sw)),
            ("PH", v(self.ph)),
            ("PW", v(self.pw)),
            ("DH", v(self.dh)),
            ("DW", v(self.dw)),
        ]
    }

    /// Elements of x, y and the kernel.
    fn sizes(&self) -> (usize, usize, usize) {
        (
            self.batch * self.h * self.w * self.c,
            self.batch * self.oh * self.ow * self.oc,
            self.kh * self.kw * self.c * self.oc,
        )
    }
}

/// Mirrors `Params` in conv2d_strided.wgsl.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    n: u32,
    alpha: f32,
    _pad: [u32; 2],
}

/// Taps between two that land on an output along one axis: offsets are `t·d`, and they land
/// where `pos + pad - t·d` divides by `s`; `t·d mod s` repeats every `s / gcd(s, d)` taps
/// (every tap lands where `d` is a multiple of `s`).
fn period(s: usize, d: usize) -> usize {
    let (mut a, mut b) = (s, d);
    while b != 0 {
        (a, b) = (b, a % b);
    }
    s / a
}

/// Taps of a `k`-tap axis that can land on one position: `ceil(k / period)`.
fn landing(k: usize, s: usize, d: usize) -> usize {
    k.div_ceil(period(s, d))
}

/// Loop iterations one invocation runs for `g`: the tap tests plus, at most, the products
/// of every tap that can land (`landing` per axis: with a dilation sharing a factor with
/// the stride more than `ceil(K / S)` do).
pub fn loops(g: &Geometry) -> u64 {
    let landing = landing(g.kh, g.sh, g.dh) * landing(g.kw, g.sw, g.dw);
    let oc = if by_four(g) { g.oc / 4 } else { g.oc };
    (g.kh + g.kh * g.kw + landing * oc) as u64
}

/// Whether the gather runs `g` on an adapter that stops loops after `max_loops` iterations
/// (none: `None`); the naive GEMM takes what it cannot.
pub fn fits(g: &Geometry, max_loops: Option<u32>) -> bool {
    max_loops.is_none_or(|l| loops(g) <= l as u64)
}

/// Records `dx` from `dy` (batch, oh, ow, oc) and `wt` (the transposed kernel,
/// `conv2d::transpose`), for a geometry `conv2d::Geometry::check` passed: times `gate`'s derivative (from the previous layer's output) when
/// given, plus what `dx` holds when `accumulate`.
pub fn backward_data(
    rec: &mut dyn Record,
    g: &Geometry,
    dy: &wgpu::Buffer,
    wt: &wgpu::Buffer,
    gate: Option<(Activation, &wgpu::Buffer)>,
    dx: &wgpu::Buffer,
    accumulate: bool,
) -> Result<()> {
    let act = gate.map(|(a, _)| a);
    if let Some(a) = act {
        // The GEMM path's refusal: the shader's derivative is 1 for what it cannot gate.
        check_gate("conv2d backward data", a, Activation::Linear)?;
    }
    let (xn, yn, wn) = g.sizes();
    let mut constants = g.constants().to_vec();
    constants.extend([
        ("GATE", act.map_or(Ok(0), act_code)? as f64),
        ("ACCUMULATE", if accumulate { 1.0 } else { 0.0 }),
    ]);
    if g.half {
        constants.push(("HALF", 1.0));
    }
    let (spec, jobs) = if by_four(g) {
        (&BACKWARD_DATA4, blocks4(g))
    } else {
        (&BACKWARD_DATA, xn)
    };
    let pipe = rec.pipeline(spec, &constants)?;
    let p = Params {
        n: jobs as u32,
        alpha: act.map_or(0.0, |a| a.alpha()),
        _pad: [0; 2],
    };
    let (xb, yb, wb) = (xn as u64 * 4, yn as u64 * 4, wn as u64 * 4);
    // Without a gate (GATE 0) the kernel never reads the gate binding: dy stands in.
    let gy = gate.map_or((dy, yb), |(_, y)| (y, xb));
    // The products that land: about xn · OC · (KH/S'H)·(KW/S'W), S' = S / gcd(S, D).
    let axis = |k: usize, s: usize, d: usize| (k as f64 / period(s, d) as f64).max(1.0);
    let taps = axis(g.kh, g.sh, g.dh) * axis(g.kw, g.sw, g.dw);
    rec.declare_work(2.0 * xn as f64 * g.oc as f64 * taps, (xb + yb + wb) as f64);
    let groups = grid_1d(
        jobs as u64,
        256,
        rec.device().info().limits.max_workgroups_per_dimension,
    );
    rec.dispatch(
        &pipe,
        &[(dy, yb), (wt, wb), gy, (dx, xb)],
        Some(bytemuck::bytes_of(&p)),
        groups,
    )
}
