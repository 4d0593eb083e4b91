//! `shaders/pool2d.wgsl`: max, average and global average pooling over NHWC tensors, with
//! their backward passes (each applying the previous layer's gate).
//!
//! Max pooling records, for each output, the flat index of the input its maximum came from
//! (the first in row-major window order); its backward pass gathers, for each input, the
//! gradients of the windows whose maximum it was: no atomics, a fixed summation order, and
//! overlapping windows (stride below the window) handled. Windows are clipped to the input,
//! so padding never wins a maximum nor counts in an average (TensorFlow's "same").

use crate::error::{Error, Result};
use crate::exec::dispatch::Record;
use crate::kernels::prelude::{act_code, check_loops};
use crate::services::pipeline::{grid_1d, Access, KernelSpec, Shader};
use crate::vocab::{window_axis, Activation, Padding};

/// pool2d.wgsl, after the activation prelude.
pub const SHADER: Shader = crate::services::pipeline::shader!("pool2d" after "activation");

use Access::{ReadOnly as RO, ReadWrite as RW, Uniform as U};

/// Max pooling. Bindings: x, y, argmax (u32), params.
pub const MAX_FORWARD: KernelSpec = KernelSpec {
    shader: SHADER,
    entry: "maxpool_forward",
    bindings: &[RO, RW, RW, U],
};
/// Its backward pass. Bindings: dy, argmax, gate output, dx, params.
pub const MAX_BACKWARD: KernelSpec = KernelSpec {
    shader: SHADER,
    entry: "maxpool_backward",
    bindings: &[RO, RO, RO, RW, U],
};
/// Average pooling. Bindings: x, y, params.
pub const AVG_FORWARD: KernelSpec = KernelSpec {
    shader: SHADER,
    entry: "avgpool_forward",
    bindings: &[RO, RW, U],
};
/// Its backward pass. Bindings: dy, gate output, dx, params.
pub const AVG_BACKWARD: KernelSpec = KernelSpec {
    shader: SHADER,
    entry: "avgpool_backward",
    bindings: &[RO, RO, RW, U],
};
/// Global average pooling. Bindings: x, y, params.
pub const GLOBAL_FORWARD: KernelSpec = KernelSpec {
    shader: SHADER,
    entry: "global_avgpool_forward",
    bindings: &[RO, RW, U],
};
/// Its backward pass. Bindings: dy, gate output, dx, params.
pub const GLOBAL_BACKWARD: KernelSpec = KernelSpec {
    shader: SHADER,
    entry: "global_avgpool_backward",
    bindings: &[RO, RO, RW, U],
};

/// Max pooling, four channels per invocation. Bindings as [`MAX_FORWARD`].
pub const MAX4_FORWARD: KernelSpec = KernelSpec {
    shader: SHADER,
    entry: "maxpool4_forward",
    bindings: &[RO, RW, RW, U],
};
/// Its backward pass. Bindings as [`MAX_BACKWARD`].
pub const MAX4_BACKWARD: KernelSpec = KernelSpec {
    shader: SHADER,
    entry: "maxpool4_backward",
    bindings: &[RO, RO, RO, RW, U],
};
/// Average pooling, four channels per invocation. Bindings as [`AVG_FORWARD`].
pub const AVG4_FORWARD: KernelSpec = KernelSpec {
    shader: SHADER,
    entry: "avgpool4_forward",
    bindings: &[RO, RW, U],
};
/// Its backward pass. Bindings as [`AVG_BACKWARD`].
pub const AVG4_BACKWARD: KernelSpec = KernelSpec {
    shader: SHADER,
    entry: "avgpool4_backward",
    bindings: &[RO, RO, RW, U],
};

/// Every entry point of this family.
pub const KERNELS: &[KernelSpec] = &[
    MAX4_FORWARD,
    MAX4_BACKWARD,
    AVG4_FORWARD,
    AVG4_BACKWARD,
    MAX_FORWARD,
    MAX_BACKWARD,
    AVG_FORWARD,
    AVG_BACKWARD,
    GLOBAL_FORWARD,
    GLOBAL_BACKWARD,
];

/// Mirrors `Params` in pool2d.wgsl.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    n: u32,
    alpha: f32,
    _pad: [u32; 2],
}

/// A pooling's shape: input (batch, h, w, c), window (kh, kw), strides, padding before the
/// first row and column, output (oh, ow). A global pooling is the window of the whole image.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[allow(missing_docs)] // named as the module docs name them
pub struct PoolGeometry {
    pub batch: usize,
    pub h: usize,
    pub w: usize,
    pub c: usize,
    pub kh: usize,
    pub kw: usize,
    pub sh: usize,
    pub sw: usize,
    pub ph: usize,
    pub pw: usize,
    pub oh: usize,
    pub ow: usize,
}

impl PoolGeometry {
    /// A window of `pool` (height, width) moved by `strides` over (h, w, c) inputs, or a
    /// typed error naming the input and the window when it does not fit.
    pub fn new(
        batch: usize,
        (h, w, c): (usize, usize, usize),
        (kh, kw): (usize, usize),
        (sh, sw): (usize, usize),
        padding: Padding,
    ) -> Result<PoolGeometry> {
        if [batch, h, w, c, kh, kw, sh, sw].contains(&0) {
            return Err(Error::InvalidArgument {
                op: "pooling",
                name: "shape",
                expected: "sizes, windows and strides of at least 1".into(),
                found: format!("input ({h}, {w}, {c}), window ({kh}, {kw}), strides ({sh}, {sw})"),
            });
        }
        let (Some((oh, ph)), Some((ow, pw))) = (
            window_axis(h, kh, sh, 1, padding),
            window_axis(w, kw, sw, 1, padding),
        ) else {
            return Err(Error::ShapeMismatch {
                op: "pooling",
                expected: format!(
                    "an input at least as large as the window ({kh}, {kw}) with valid padding"
                ),
                found: format!("input ({h}, {w}, {c})"),
            });
        };
        Ok(PoolGeometry {
            batch,
            h,
            w,
            c,
            kh,
            kw,
            sh,
            sw,
            ph,
            pw,
            oh,
            ow,
        })
    }

    /// The global pooling of (h, w, c) inputs: one window of the whole image.
    pub fn global(batch: usize, (h, w, c): (usize, usize, usize)) -> PoolGeometry {
        PoolGeometry {
            batch,
            h,
            w,
            c,
            kh: h,
            kw: w,
            sh: 1,
            sw: 1,
            ph: 0,
            pw: 0,
            oh: 1,
            ow: 1,
        }
    }

    /// The same pooling over a batch of `batch`.
    pub fn with_batch(mut self, batch: usize) -> PoolGeometry {
        self.batch = batch;
        self
    }

    /// Values of the input and the output.
    pub fn sizes(&self) -> (usize, usize) {
        (
            self.batch * self.h * self.w * self.c,
            self.batch * self.oh * self.ow * self.c,
        )
    }

    fn constants(&self, gate: Option<Activation>) -> Result<Vec<(&'static str, f64)>> {
        let v = |x: usize| x as f64;
        Ok(vec![
            ("CH", v(self.h)),
            ("CW", v(self.w)),
            ("CC", v(self.c)),
            ("OH", v(self.oh)),
            ("OW", v(self.ow)),
            ("KH", v(self.kh)),
            ("KW", v(self.kw)),
            ("SH", v(self.sh)),
            ("SW", v(self.sw)),
            ("PH", v(self.ph)),
            ("PW", v(self.pw)),
            ("GATE", gate.map_or(Ok(0), act_code)? as f64),
        ])
    }
}

/// The kind of a windowed pooling.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pool {
    /// Maximum.
    Max,
    /// Average.
    Average,
    /// Average over the whole image.
    GlobalAverage,
}

fn launch(
    rec: &mut dyn Record,
    spec: &KernelSpec,
    g: &PoolGeometry,
    gate: Option<Activation>,
    n: usize,
    buffers: &[(&wgpu::Buffer, u64)],
) -> Result<()> {
    let dev = rec.device().clone();
    let loops = match spec.entry {
        "global_avgpool_forward" => (g.h * g.w).div_ceil(4),
        _ => g.kh.div_ceil(g.sh) * g.kw.div_ceil(g.sw) + g.kh * g.kw,
    };
    check_loops(&dev, "pooling", loops as u64, || format!("{g:?}"))?;
    let pipe = rec.pipeline(spec, &g.constants(gate)?)?;
    let p = Params {
        n: n as u32,
        alpha: gate.map_or(0.0, |a| a.alpha()),
        _pad: [0; 2],
    };
    let bytes: u64 = buffers.iter().map(|b| b.1).sum();
    rec.declare_work(0.0, bytes as f64);
    let groups = grid_1d(
        n as u64,
        256,
        dev.info().limits.max_workgroups_per_dimension,
    );
    rec.dispatch(&pipe, buffers, Some(bytemuck::bytes_of(&p)), groups)
}

/// Records the forward pass of `kind`: `y` (batch, oh, ow, c) from `x` (batch, h, w, c);
/// max pooling also writes `argmax` (one u32 per output, bound to an f32 tensor's buffer).
pub fn forward(
    rec: &mut dyn Record,
    kind: Pool,
    g: &PoolGeometry,
    x: &wgpu::Buffer,
    y: &wgpu::Buffer,
    argmax: Option<&wgpu::Buffer>,
) -> Result<()> {
    let (xn, yn) = g.sizes();
    let (xb, yb) = (xn as u64 * 4, yn as u64 * 4);
    // Four channels per invocation where they line up (the grid counts vec4s).
    let (max, avg, n) = if g.c.is_multiple_of(4) {
        (&MAX4_FORWARD, &AVG4_FORWARD, yn / 4)
    } else {
        (&MAX_FORWARD, &AVG_FORWARD, yn)
    };
    match (kind, argmax) {
        (Pool::Max, Some(a)) => launch(rec, max, g, None, n, &[(x, xb), (y, yb), (a, yb)]),
        (Pool::Max, None) => Err(Error::Internal {
            op: "maxpool",
            message: "max pooling needs an argmax buffer".into(),
        }),
        (Pool::Average, _) => launch(rec, avg, g, None, n, &[(x, xb), (y, yb)]),
        (Pool::GlobalAverage, _) => launch(rec, &GLOBAL_FORWARD, g, None, yn, &[(x, xb), (y, yb)]),
    }
}

/// Records the backward pass of `kind`: `dx` from `dy` (and max pooling's `argmax`), times
/// `gate`'s derivative computed from its output (the pooling's input) when given.
#[allow(clippy::too_many_arguments)] // a pass's operands, spelled out
pub fn backward(
    rec: &mut dyn Record,
    kind: Pool,
    g: &PoolGeometry,
    dy: &wgpu::Buffer,
    argmax: Option<&wgpu::Buffer>,
    gate: Option<(Activation, &wgpu::Buffer)>,
    dx: &wgpu::Buffer,
) -> Result<()> {
    let (xn, yn) = g.sizes();
    let (xb, yb) = (xn as u64 * 4, yn as u64 * 4);
    if let Some((a, _)) = gate {
        if !a.derivative_from_output() {
            return Err(Error::InvalidArgument {
                op: "pooling backward",
                name: "gate",
                expected: "an activation whose derivative follows from its output".into(),
                found: format!("{a:?}"),
            });
        }
    }
    let act = gate.map(|(a, _)| a);
    // Without a gate (GATE 0) the kernel never reads the gate binding: dy stands in.
    let gy = gate.map_or((dy, yb), |(_, y)| (y, xb));
    let (max, avg, n) = if g.c.is_multiple_of(4) {
        (&MAX4_BACKWARD, &AVG4_BACKWARD, xn / 4)
    } else {
        (&MAX_BACKWARD, &AVG_BACKWARD, xn)
    };
    match (kind, argmax) {
        (Pool::Max, Some(a)) => launch(rec, max, g, act, n, &[(dy, yb), (a, yb), gy, (dx, xb)]),
        (Pool::Max, None) => Err(Error::Internal {
            op: "maxpool",
            message: "max pooling's backward pass needs its argmax".into(),
        }),
        (Pool::Average, _) => launch(rec, avg, g, act, n, &[(dy, yb), gy, (dx, xb)]),
        (Pool::GlobalAverage, _) => {
            launch(rec, &GLOBAL_BACKWARD, g, act, xn, &[(dy, yb), gy, (dx, xb)])
        }
    }
}
