//! `shaders/elementwise.wgsl`: fill, activations forward/backward, binary ops, scale, bias add.

use crate::error::{Error, Result};
use crate::exec::dispatch::Record;
use crate::kernels::prelude::act_code;
use crate::services::pipeline::{grid_1d, Access, KernelSpec, Shader};
use crate::vocab::Activation;

/// elementwise.wgsl, after the activation prelude.
pub const SHADER: Shader = crate::services::pipeline::shader!("elementwise" after "activation");

use Access::{ReadOnly as RO, ReadWrite as RW, Uniform as U};

/// `out[i] = value`.
pub const FILL: KernelSpec = KernelSpec {
    shader: SHADER,
    entry: "fill_forward",
    bindings: &[RW, U],
};
/// `y = act(x)` (activation chosen by the `ACT` override).
pub const UNARY: KernelSpec = KernelSpec {
    shader: SHADER,
    entry: "unary_forward",
    bindings: &[RO, RW, U],
};
/// `dx = dy · act'(x)`.
pub const UNARY_BACKWARD: KernelSpec = KernelSpec {
    shader: SHADER,
    entry: "unary_backward",
    bindings: &[RO, RO, RW, U],
};
/// `c = a (op) b` (op chosen by the `OP` override).
pub const BINARY: KernelSpec = KernelSpec {
    shader: SHADER,
    entry: "binary_forward",
    bindings: &[RO, RO, RW, U],
};
/// `y = value · x + alpha` (a plain scale with `alpha = 0`).
pub const SCALE: KernelSpec = KernelSpec {
    shader: SHADER,
    entry: "scale_forward",
    bindings: &[RO, RW, U],
};
/// `y[r, c] = x[r, c] + bias[c]`.
pub const BIAS_ADD: KernelSpec = KernelSpec {
    shader: SHADER,
    entry: "bias_add_forward",
    bindings: &[RO, RO, RW, U],
};

/// `y[r, c] = x[r, c] · w[r]` (per-sample weights on per-row losses and gradients).
pub const ROW_SCALE: KernelSpec = KernelSpec {
    shader: SHADER,
    entry: "row_scale_forward",
    bindings: &[RO, RO, RW, U],
};

/// `y[r, c] = (x[r, c] − value·mean[c]) / max(sqrt(var[c]), 1e-7)` (Keras's Normalization).
pub const NORMALIZE: KernelSpec = KernelSpec {
    shader: SHADER,
    entry: "normalize_forward",
    bindings: &[RO, RO, RO, RW, U],
};

/// `dx = dy · act'(x)` computed from the output `y = act(x)` (linear, relu, leaky relu,
/// sigmoid, tanh).
pub const UNARY_OUTPUT_BACKWARD: KernelSpec = KernelSpec {
    shader: SHADER,
    entry: "unary_output_backward",
    bindings: &[RO, RO, RW, U],
};

/// Inverted dropout: `y = keep(i) ? x / (1 − p) : 0` with a hashed mask; the backward pass is
/// the same kernel on `dy` with the same seed.
pub const DROPOUT: KernelSpec = KernelSpec {
    shader: SHADER,
    entry: "dropout_forward",
    bindings: &[RO, RW, U],
};

/// Dropout's backward pass with the previous layer's activation derivative applied:
/// `dx = keep(i) ? dy / (1 − p) · act'(y) : 0` (act chosen by the `GATE` override, computed
/// from that layer's output `y`).
pub const DROPOUT_BACKWARD: KernelSpec = KernelSpec {
    shader: SHADER,
    entry: "dropout_backward",
    bindings: &[RO, RO, RW, U],
};

/// Every entry point of this family.
pub const KERNELS: &[KernelSpec] = &[
    DROPOUT,
    DROPOUT_BACKWARD,
    FILL,
    UNARY,
    UNARY_BACKWARD,
    BINARY,
    SCALE,
    BIAS_ADD,
    ROW_SCALE,
    UNARY_OUTPUT_BACKWARD,
    NORMALIZE,
];

/// Mirrors `Params` in elementwise.wgsl.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
pub struct Params {
    /// Element count.
    pub n: u32,
    /// Fill value or scale factor.
    pub value: f32,
    /// Bias length for `bias_add`.
    pub cols: u32,
    /// Leaky-ReLU slope, or the offset of an affine map.
    pub alpha: f32,
}

/// Work-group size of every kernel in this family.
pub const WG: u32 = 256;

/// Binary operations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinaryOp {
    /// `a + b`.
    Add,
    /// `a - b`.
    Sub,
    /// `a * b`.
    Mul,
    /// `a / b`.
    Div,
}

fn launch(
    rec: &mut dyn Record,
    spec: &KernelSpec,
    constants: &[(&str, f64)],
    buffers: &[(&wgpu::Buffer, u64)],
    params: Params,
) -> Result<()> {
    let dev = rec.device().clone();
    let pipe = rec.pipeline(spec, constants)?;
    let groups = grid_1d(
        params.n as u64,
        WG,
        dev.info().limits.max_workgroups_per_dimension,
    );
    rec.dispatch(&pipe, buffers, Some(bytemuck::bytes_of(&params)), groups)
}

fn bytes(n: usize) -> u64 {
    n as u64 * 4
}

/// Records `out[..n] = value`.
pub fn fill(rec: &mut dyn Record, out: &wgpu::Buffer, n: usize, value: f32) -> Result<()> {
    let p = Params {
        n: n as u32,
        value,
        ..Default::default()
    };
    launch(rec, &FILL, &[], &[(out, bytes(n))], p)
}

/// Records `y = act(x)` over `n` elements.
pub fn activation(
    rec: &mut dyn Record,
    act: Activation,
    x: &wgpu::Buffer,
    y: &wgpu::Buffer,
    n: usize,
) -> Result<()> {
    let p = Params {
        n: n as u32,
        alpha: act.alpha(),
        ..Default::default()
    };
    launch(
        rec,
        &UNARY,
        &[("ACT", act_code(act)? as f64)],
        &[(x, bytes(n)), (y, bytes(n))],
        p,
    )
}

/// Records `dx = dy · act'(x)` over `n` elements (`x` is the activation's input).
pub fn activation_backward(
    rec: &mut dyn Record,
    act: Activation,
    x: &wgpu::Buffer,
    dy: &wgpu::Buffer,
    dx: &wgpu::Buffer,
    n: usize,
) -> Result<()> {
    let p = Params {
        n: n as u32,
        alpha: act.alpha(),
        ..Default::default()
    };
    let bufs = [(x, bytes(n)), (dy, bytes(n)), (dx, bytes(n))];
    launch(
        rec,
        &UNARY_BACKWARD,
        &[("ACT", act_code(act)? as f64)],
        &bufs,
        p,
    )
}

/// Records `c = a (op) b` over `n` elements.
pub fn binary(
    rec: &mut dyn Record,
    op: BinaryOp,
    a: &wgpu::Buffer,
    b: &wgpu::Buffer,
    c: &wgpu::Buffer,
    n: usize,
) -> Result<()> {
    let code = match op {
        BinaryOp::Add => 0,
        BinaryOp::Sub => 1,
        BinaryOp::Mul => 2,
        BinaryOp::Div => 3,
    };
    let p = Params {
        n: n as u32,
        ..Default::default()
    };
    launch(
        rec,
        &BINARY,
        &[("OP", code as f64)],
        &[(a, bytes(n)), (b, bytes(n)), (c, bytes(n))],
        p,
    )
}

/// Records `y = s · x` over `n` elements.
pub fn scale(
    rec: &mut dyn Record,
    x: &wgpu::Buffer,
    y: &wgpu::Buffer,
    n: usize,
    s: f32,
) -> Result<()> {
    affine(rec, x, y, n, s, 0.0)
}

/// Records `y = s · x + offset` over `n` elements (Keras's `Rescaling`).
pub fn affine(
    rec: &mut dyn Record,
    x: &wgpu::Buffer,
    y: &wgpu::Buffer,
    n: usize,
    s: f32,
    offset: f32,
) -> Result<()> {
    let p = Params {
        n: n as u32,
        value: s,
        alpha: offset,
        ..Default::default()
    };
    launch(rec, &SCALE, &[], &[(x, bytes(n)), (y, bytes(n))], p)
}

/// Records `y[r, c] = x[r, c] · w[r]` for `x` of (rows, cols).
pub fn row_scale(
    rec: &mut dyn Record,
    x: &wgpu::Buffer,
    w: &wgpu::Buffer,
    y: &wgpu::Buffer,
    rows: usize,
    cols: usize,
) -> Result<()> {
    let n = rows * cols;
    let p = Params {
        n: n as u32,
        cols: cols.max(1) as u32,
        ..Default::default()
    };
    launch(
        rec,
        &ROW_SCALE,
        &[],
        &[(x, bytes(n)), (w, bytes(rows)), (y, bytes(n))],
        p,
    )
}

/// Records `y[r, c] = x[r, c] + bias[c]` for `rows × cols` elements.
pub fn bias_add(
    rec: &mut dyn Record,
    x: &wgpu::Buffer,
    bias: &wgpu::Buffer,
    y: &wgpu::Buffer,
    rows: usize,
    cols: usize,
) -> Result<()> {
    let n = rows * cols;
    let p = Params {
        n: n as u32,
        cols: cols as u32,
        ..Default::default()
    };
    launch(
        rec,
        &BIAS_ADD,
        &[],
        &[(x, bytes(n)), (bias, bytes(cols)), (y, bytes(n))],
        p,
    )
}

/// Records `y[r, c] = (x[r, c] − mean[c]) / max(sqrt(var[c]), 1e-7)` over `rows × cols`
/// elements, or, with `centre` false, `y = x / max(sqrt(var[c]), 1e-7)` (the backward pass).
#[allow(clippy::too_many_arguments)] // buffers and shape: a binding, spelled out
pub fn normalize(
    rec: &mut dyn Record,
    x: &wgpu::Buffer,
    mean: &wgpu::Buffer,
    var: &wgpu::Buffer,
    y: &wgpu::Buffer,
    rows: usize,
    cols: usize,
    centre: bool,
) -> Result<()> {
    let n = rows * cols;
    let p = Params {
        n: n as u32,
        value: if centre { 1.0 } else { 0.0 },
        cols: cols as u32,
        ..Default::default()
    };
    launch(
        rec,
        &NORMALIZE,
        &[],
        &[
            (x, bytes(n)),
            (mean, bytes(cols)),
            (var, bytes(cols)),
            (y, bytes(n)),
        ],
        p,
    )
}

/// Records `dx = dy · act'(x)` from the activation's output `y` (only where
/// [`Activation::derivative_from_output`] holds).
pub fn activation_output_backward(
    rec: &mut dyn Record,
    act: Activation,
    y: &wgpu::Buffer,
    dy: &wgpu::Buffer,
    dx: &wgpu::Buffer,
    n: usize,
) -> Result<()> {
    if !act.derivative_from_output() {
        return Err(Error::InvalidArgument {
            op: "activation_output_backward",
            name: "act",
            expected: "linear, relu, leaky relu (slope > 0), sigmoid or tanh".into(),
            found: format!("{act:?}"),
        });
    }
    let p = Params {
        n: n as u32,
        alpha: act.alpha(),
        ..Default::default()
    };
    let bufs = [(y, bytes(n)), (dy, bytes(n)), (dx, bytes(n))];
    launch(
        rec,
        &UNARY_OUTPUT_BACKWARD,
        &[("ACT", act_code(act)? as f64)],
        &bufs,
        p,
    )
}

/// The uniform of a dropout of `n` elements with rate `p` and mask seed `seed`.
pub fn dropout_params(n: usize, p: f32, seed: u32) -> Params {
    Params {
        n: n as u32,
        value: 1.0 / (1.0 - p),
        cols: seed,
        alpha: p,
    }
}

/// Records `y = keep(i) ? x / (1 − p) : 0` over `n` elements (`0 ≤ p < 1`); the mask is a
/// pure function of (`seed`, i), so the same call on the upstream gradient is the backward
/// pass. See `reference::dropout_keep`.
pub fn dropout(
    rec: &mut dyn Record,
    x: &wgpu::Buffer,
    y: &wgpu::Buffer,
    n: usize,
    p: f32,
    seed: u32,
) -> Result<()> {
    if !(0.0..1.0).contains(&p) {
        return Err(Error::InvalidArgument {
            op: "dropout",
            name: "rate",
            expected: "a rate in [0, 1)".into(),
            found: p.to_string(),
        });
    }
    let b = n as u64 * 4;
    launch(
        rec,
        &DROPOUT,
        &[],
        &[(x, b), (y, b)],
        dropout_params(n, p, seed),
    )
}

/// Records dropout's backward pass over `n` elements with the same mask as [`dropout`] (the
/// same uniform), times `gate`'s derivative computed from its output `y` when given:
/// `dx = keep(i) ? dy / (1 − p) · act'(y) : 0`.
#[allow(clippy::too_many_arguments)] // the pass's buffers and its mask, spelled out
pub fn dropout_backward(
    rec: &mut dyn Record,
    dy: &wgpu::Buffer,
    gate: Option<(Activation, &wgpu::Buffer)>,
    dx: &wgpu::Buffer,
    n: usize,
    p: f32,
    seed: u32,
) -> Result<()> {
    if !(0.0..1.0).contains(&p) {
        return Err(Error::InvalidArgument {
            op: "dropout",
            name: "rate",
            expected: "a rate in [0, 1)".into(),
            found: p.to_string(),
        });
    }
    let (act, y) = gate.unwrap_or((Activation::Linear, dy));
    if !act.derivative_from_output() {
        return Err(Error::InvalidArgument {
            op: "dropout_backward",
            name: "gate",
            expected: "an activation whose derivative follows from its output".into(),
            found: format!("{act:?}"),
        });
    }
    let b = n as u64 * 4;
    launch(
        rec,
        &DROPOUT_BACKWARD,
        &[
            ("GATE", act_code(act)? as f64),
            ("GATE_ALPHA", act.alpha() as f64),
        ],
        &[(dy, b), (y, b), (dx, b)],
        dropout_params(n, p, seed),
    )
}
