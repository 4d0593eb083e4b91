//! 2-D convolutions (NHWC, Keras's HWIO kernels) as GEMMs whose A operand is read through
//! implicit im2col, on the matmul kernels (`shaders/im2col.wgsl` and the `conv2d_*` twins in
//! the matmul family), plus `shaders/conv2d.wgsl`: the kernel transpose of the backward data
//! pass and the reduction of a split-K weight gradient.
//!
//! | pass | GEMM | M | N | K |
//! |---|---|---|---|---|
//! | forward | `y = im2col(x)·W` (bias and activation in the epilogue) | N·OH·OW | OC | KH·KW·C |
//! | backward data | `dx = im2col'(dy)·Wᵗ` (the previous layer's gate in the epilogue) | N·H·W | C | KH·KW·OC |
//! | backward weights | `dW = im2col(x)ᵀ·dy` (bias gradient as column sums) | KH·KW·C | OC | N·OH·OW |
//!
//! The backward data pass reads dy at `h + pad − kh·dilation` for every tap, which is a
//! separable address only with stride 1; a strided convolution's is a gather of the taps
//! that land (`conv2d_strided`), or the naive kernel, whose loader divides (`IM2COL` 4),
//! past the adapter's loop limit. The weight gradient's K is long (86,528 for the MNIST
//! convnet's first layer at batch 128, past llvmpipe's 65,535-iteration loop limit at one
//! product per iteration): it is split into chunks ([`WeightsPlan`]) whose partial products
//! `conv2d_reduce_step` sums in a fixed order, applying the optimizer as it goes, as the
//! dense layer's weight-gradient matmul does. With one chunk the GEMM applies it itself.

use crate::error::{Error, Result};
use crate::exec::dispatch::Record;
use crate::kernels::conv2d_strided::{self, Geometry as Strided};
use crate::kernels::matmul::{record_gemm, Epilogue, Im2col, MatmulArgs, Update};
use crate::kernels::matmul_variant::Variant;
use crate::kernels::optim;
use crate::services::pipeline::{grid_1d, Access, KernelSpec, Shader};
use crate::vocab::{window_axis, Activation, Layout, Padding, Rule};

/// conv2d.wgsl, after the optimizer-rule prelude.
pub const SHADER: Shader = crate::services::pipeline::shader!("conv2d" after "optim_rule");

use Access::{ReadOnly as RO, ReadWrite as RW, Uniform as U};

/// `Wᵗ[t, co, ci] = W[t, ci, co]`. Bindings: W, Wᵗ, params.
pub const TRANSPOSE: KernelSpec = KernelSpec {
    shader: SHADER,
    entry: "conv2d_transpose",
    bindings: &[RO, RW, U],
};

/// The sum of a split K's partial weight and bias gradients, written or applied. Bindings:
/// partial weight gradients, partial bias gradients, weight, bias, weight states (2), bias
/// states (2), params.
pub const REDUCE: KernelSpec = KernelSpec {
    shader: SHADER,
    entry: "conv2d_reduce_step",
    bindings: &[RO, RO, RW, RW, RW, RW, RW, RW, U],
};

/// Every entry point of conv2d.wgsl (the GEMM twins are listed with the matmul family).
pub const KERNELS: &[KernelSpec] = &[TRANSPOSE, REDUCE];

/// A convolution's pass.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Op {
    /// `y = conv(x, W)`.
    Forward,
    /// `dx` from `dy`.
    BackwardData,
    /// `dW` (and `db`) from `x` and `dy`.
    BackwardWeights,
}

impl Op {
    /// Every pass.
    pub const ALL: [Op; 3] = [Op::Forward, Op::BackwardData, Op::BackwardWeights];

    /// Its name in the tuning cache and in messages.
    pub fn name(self) -> &'static str {
        match self {
            Op::Forward => "forward",
            Op::BackwardData => "backward_data",
            Op::BackwardWeights => "backward_weights",
        }
    }
}

/// The shape of one convolution: input (batch, h, w, c), output (batch, oh, ow, oc), kernel
/// (kh, kw), strides, padding before the first row and column, dilations.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[allow(missing_docs)] // the fields are named as the module docs name them
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
    /// Float16 operands (the `mixed_float16` policy): every pass rounds the values it loads
    /// from x, W, dy and Wᵀ to binary16 ([`crate::kernels::matmul::MatmulArgs::half`]); sums
    /// stay f32. Not a shape: [`Geometry::new`] leaves it off, [`Geometry::with_half`] sets it.
    pub half: bool,
}

impl Geometry {
    /// The geometry of `filters` filters of `kernel` (height, width) over a batch of
    /// (h, w, c) inputs with these strides, dilations and padding, or a typed error naming
    /// the input and the window when the window does not fit (valid padding) or a size is 0.
    pub fn new(
        batch: usize,
        (h, w, c): (usize, usize, usize),
        filters: usize,
        (kh, kw): (usize, usize),
        (sh, sw): (usize, usize),
        (dh, dw): (usize, usize),
        padding: Padding,
    ) -> Result<Geometry> {
        let sizes = [batch, h, w, c, filters, kh, kw, sh, sw, dh, dw];
        if sizes.contains(&0) {
            return Err(Error::InvalidArgument {
                op: "conv2d",
                name: "shape",
                expected: "sizes, strides and dilations of at least 1".into(),
                found: format!("input ({h}, {w}, {c}), {filters} filters of ({kh}, {kw}), strides ({sh}, {sw}), dilation ({dh}, {dw})"),
            });
        }
        let (Some((oh, ph)), Some((ow, pw))) = (
            window_axis(h, kh, sh, dh, padding),
            window_axis(w, kw, sw, dw, padding),
        ) else {
            return Err(Error::ShapeMismatch {
                op: "conv2d",
                expected: format!(
                    "an input at least as large as the dilated window ({}, {}) with valid padding",
                    dh * (kh - 1) + 1,
                    dw * (kw - 1) + 1
                ),
                found: format!("input ({h}, {w}, {c})"),
            });
        };
        let g = Geometry {
            batch,
            h,
            w,
            c,
            oh,
            ow,
            oc: filters,
            kh,
            kw,
            sh,
            sw,
            ph,
            pw,
            dh,
            dw,
            half: false,
        };
        g.check()?;
        Ok(g)
    }

    /// The same convolution over a batch of `batch`.
    pub fn with_batch(mut self, batch: usize) -> Geometry {
        self.batch = batch;
        self
    }

    /// The same convolution with float16 operands or not ([`Geometry::half`]).
    pub fn with_half(mut self, half: bool) -> Geometry {
        self.half = half;
        self
    }

    /// The GEMM of a pass: (M, N, K).
    pub fn gemm(&self, op: Op) -> (u32, u32, u32) {
        let (pix_in, pix_out) = (self.batch * self.h * self.w, self.batch * self.oh * self.ow);
        let taps = self.kh * self.kw;
        let (m, n, k) = match op {
            Op::Forward => (pix_out, self.oc, taps * self.c),
            Op::BackwardData => (pix_in, self.c, taps * self.oc),
            Op::BackwardWeights => (taps * self.c, self.oc, pix_out),
        };
        (m as u32, n as u32, k as u32)
    }

    /// Multiply-adds ×2 of the forward pass (each backward pass does as many).
    pub fn flops(&self) -> f64 {
        let (m, n, k) = self.gemm(Op::Forward);
        2.0 * m as f64 * n as f64 * k as f64
    }

    /// Values of the input, output and kernel.
    pub fn sizes(&self) -> (usize, usize, usize) {
        (
            self.batch * self.h * self.w * self.c,
            self.batch * self.oh * self.ow * self.oc,
            self.kh * self.kw * self.c * self.oc,
        )
    }

    /// Whether the channels are read four at a time (both counts multiples of 4).
    pub fn vec4(&self) -> bool {
        self.c.is_multiple_of(4) && self.oc.is_multiple_of(4)
    }

    /// Its shape fields as the modules below this one take them: the strided backward data
    /// gather, and every convolution shader's shape constants ([`Strided::constants`]).
    pub fn strided(&self) -> Strided {
        let g = *self;
        Strided {
            batch: g.batch,
            h: g.h,
            w: g.w,
            c: g.c,
            oh: g.oh,
            ow: g.ow,
            oc: g.oc,
            kh: g.kh,
            kw: g.kw,
            sh: g.sh,
            sw: g.sw,
            ph: g.ph,
            pw: g.pw,
            dh: g.dh,
            dw: g.dw,
            half: g.half,
        }
    }

    /// The backward data pass runs as a GEMM (stride 1), not as a gather (`conv2d_strided`).
    pub fn dx_as_gemm(&self) -> bool {
        self.sh == 1 && self.sw == 1
    }

    /// Checks what the kernels assume: positive sizes, offsets that fit in an i32.
    pub fn check(&self) -> Result<()> {
        let dims = [
            self.batch, self.h, self.w, self.c, self.oh, self.ow, self.oc, self.kh, self.kw,
            self.sh, self.sw, self.dh, self.dw,
        ];
        let (x, y, _) = self.sizes();
        if dims.contains(&0) || x.max(y) >= i32::MAX as usize {
            return Err(Error::InvalidArgument {
                op: "conv2d",
                name: "geometry",
                expected: "positive sizes and tensors of fewer than 2^31 values".into(),
                found: format!("{self:?}"),
            });
        }
        Ok(())
    }

    /// The pipeline constants of a pass (`shaders/im2col.wgsl`), with K chunks of `kchunk`
    /// (0: none).
    fn constants(&self, op: Op, kchunk: u32) -> Vec<(&'static str, f64)> {
        let mode = match op {
            Op::Forward => 1,
            Op::BackwardData if self.dx_as_gemm() => 2,
            Op::BackwardData => 4,
            Op::BackwardWeights => 3,
        };
        let mut c = vec![("IM2COL", mode as f64)];
        c.extend(self.strided().constants());
        c.push(("KCHUNK", kchunk as f64));
        c
    }

    fn im2col(&self, op: Op, a_values: usize, splits: u32, chunk: u32, k: u32) -> Im2col {
        Im2col {
            constants: self.constants(op, if splits > 1 { chunk } else { 0 }),
            vec4: self.vec4(),
            splits,
            chunk: if splits > 1 { chunk } else { k },
            a_bytes: a_values as u64 * 4,
        }
    }
}

/// Records `y = act(conv(x, W) + bias)`: x (batch, h, w, c), W (kh, kw, c, oc), y (batch, oh,
/// ow, oc), with the convolution twin of the kernel `variant` (exactly that one: routing a
/// shape to the narrow and shallow kernels is [`crate::kernels::conv2d_tune::pick`]'s).
#[allow(clippy::too_many_arguments)] // a pass's operands, spelled out
pub fn forward(
    rec: &mut dyn Record,
    g: &Geometry,
    x: &wgpu::Buffer,
    w: &wgpu::Buffer,
    bias: Option<&wgpu::Buffer>,
    y: &wgpu::Buffer,
    act: Activation,
    variant: Variant,
) -> Result<()> {
    g.check()?;
    let (m, n, k) = g.gemm(Op::Forward);
    let args = MatmulArgs {
        a: x,
        b: w,
        epilogue: bias.map_or(Epilogue::None, Epilogue::Bias),
        c: y,
        m,
        n,
        k,
        layout: Layout::NN,
        act,
        accumulate: false,
        half: g.half,
    };
    let conv = g.im2col(Op::Forward, g.sizes().0, 1, k, k);
    record_gemm(rec, &args, variant, Some(&conv))
}

/// Records `Wᵗ`, the kernel with its channel axes swapped ((kh, kw, oc, c)), which the
/// backward data pass multiplies by.
pub fn transpose(
    rec: &mut dyn Record,
    g: &Geometry,
    w: &wgpu::Buffer,
    wt: &wgpu::Buffer,
) -> Result<()> {
    let n = g.sizes().2;
    let params = [(g.kh * g.kw) as u32, g.c as u32, g.oc as u32, 0];
    let pipe = rec.pipeline(&TRANSPOSE, &[])?;
    let groups = grid_1d(
        n as u64,
        256,
        rec.device().info().limits.max_workgroups_per_dimension,
    );
    rec.declare_work(0.0, 8.0 * n as f64);
    let bytes = n as u64 * 4;
    rec.dispatch(
        &pipe,
        &[(w, bytes), (wt, bytes)],
        Some(bytemuck::bytes_of(&params)),
        groups,
    )
}

/// Records `dx` from `dy` (batch, oh, ow, oc) and `wt` (the transposed kernel,
/// [`transpose`]), multiplied by `gate`'s derivative (`act'(y)` from the previous layer's
/// output `y`) when given.
#[allow(clippy::too_many_arguments)] // a pass's operands, spelled out
pub fn backward_data(
    rec: &mut dyn Record,
    g: &Geometry,
    dy: &wgpu::Buffer,
    wt: &wgpu::Buffer,
    gate: Option<(Activation, &wgpu::Buffer)>,
    dx: &wgpu::Buffer,
    variant: Variant,
) -> Result<()> {
    backward_data_into(rec, g, dy, wt, gate, dx, variant, false)
}

/// [`backward_data`] adding `dx` to what the buffer holds (another reader's gradient at the
/// same input: the fan-out sum in the GEMM's store, no add of its own). No gate: an input
/// that fans out is never gated.
pub fn backward_data_adding(
    rec: &mut dyn Record,
    g: &Geometry,
    dy: &wgpu::Buffer,
    wt: &wgpu::Buffer,
    dx: &wgpu::Buffer,
    variant: Variant,
) -> Result<()> {
    backward_data_into(rec, g, dy, wt, None, dx, variant, true)
}

#[allow(clippy::too_many_arguments)] // a pass's operands, spelled out
fn backward_data_into(
    rec: &mut dyn Record,
    g: &Geometry,
    dy: &wgpu::Buffer,
    wt: &wgpu::Buffer,
    gate: Option<(Activation, &wgpu::Buffer)>,
    dx: &wgpu::Buffer,
    variant: Variant,
    accumulate: bool,
) -> Result<()> {
    g.check()?;
    let (m, n, k) = g.gemm(Op::BackwardData);
    let args = MatmulArgs {
        a: dy,
        b: wt,
        epilogue: gate.map_or(Epilogue::None, |(act, y)| Epilogue::Gate(y, act)),
        c: dx,
        m,
        n,
        k,
        layout: Layout::NN,
        act: Activation::Linear,
        accumulate,
        half: g.half,
    };
    let conv = g.im2col(Op::BackwardData, g.sizes().1, 1, k, k);
    if g.dx_as_gemm() {
        return record_gemm(rec, &args, variant, Some(&conv));
    }
    // A strided convolution's: the gather of the taps that land (`conv2d_strided`), or where
    // its loops would pass the adapter's limit the naive kernel's dividing loader.
    let max_loops = rec.device().info().limits.max_loop_iterations;
    let s = g.strided();
    if conv2d_strided::fits(&s, max_loops) {
        return conv2d_strided::backward_data(rec, &s, dy, wt, gate, dx, accumulate);
    }
    record_gemm(rec, &args, Variant::Naive, Some(&conv))
}

/// How the weight gradient's long K is cut: `splits` chunks of `chunk` (a multiple of 64,
/// every kernel's K step), the last one ragged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WeightsPlan {
    /// Chunks.
    pub splits: u32,
    /// K per chunk.
    pub chunk: u32,
}

/// Work-groups a weight-gradient pass aims for: enough to keep every core of a CPU adapter
/// and a GPU's multiprocessors busy when the GEMM alone gives few (M and N are small).
const TARGET_GROUPS: u64 = 64;
/// The shortest chunk worth a partial product.
const MIN_CHUNK: u64 = 256;

/// The chunks of `g`'s weight gradient for `variant` on an adapter that stops loops after
/// `max_loops` iterations (none: `None`).
pub fn plan_weights(g: &Geometry, v: Variant, max_loops: Option<u32>) -> WeightsPlan {
    let (m, n, k) = g.gemm(Op::BackwardWeights);
    let groups = v.groups(m, n);
    let base = (groups[0] as u64 * groups[1] as u64).max(1);
    let k = k as u64;
    let mut splits = TARGET_GROUPS
        .div_ceil(base)
        .min(k.div_ceil(MIN_CHUNK))
        .max(1);
    // Every chunk must stay inside the loop limit.
    if let Some(l) = max_loops {
        let deepest = l as u64 * v.k_per_iteration().min(1 << 40);
        splits = splits.max(k.div_ceil(deepest.max(64)));
    }
    let chunk = k.div_ceil(splits).div_ceil(64) * 64;
    let splits = k.div_ceil(chunk);
    WeightsPlan {
        splits: splits as u32,
        chunk: chunk.min(u32::MAX as u64) as u32,
    }
}

/// Where a weight-gradient pass puts its result.
pub enum WeightsOut<'a> {
    /// The gradients: dW (kh, kw, c, oc), and db (oc) with a bias.
    Grad {
        /// dW.
        dw: &'a wgpu::Buffer,
        /// db.
        db: Option<&'a wgpu::Buffer>,
    },
    /// An optimizer step applied to W (and the bias) in place: see
    /// [`crate::kernels::matmul::Update`] (`bias` holds the bias and its states).
    Update {
        /// W.
        w: &'a wgpu::Buffer,
        /// The step, its states, and the bias with its states.
        update: Update<'a>,
    },
}

/// Records the weight gradient of `g` from `x` and `dy` in one GEMM, written or applied by
/// the optimizer in its epilogue: the path of a plan with one chunk. With an update, this is
/// the dispatch that reads the per-step uniform.
pub fn weights_direct(
    rec: &mut dyn Record,
    g: &Geometry,
    x: &wgpu::Buffer,
    dy: &wgpu::Buffer,
    out: WeightsOut<'_>,
    variant: Variant,
) -> Result<()> {
    g.check()?;
    let (m, n, k) = g.gemm(Op::BackwardWeights);
    let (c, epilogue) = match out {
        WeightsOut::Grad { dw, db } => (dw, db.map_or(Epilogue::None, Epilogue::ColSum)),
        WeightsOut::Update { w, update } => (w, Epilogue::Update(update)),
    };
    let args = MatmulArgs {
        a: x,
        b: dy,
        epilogue,
        c,
        m,
        n,
        k,
        layout: Layout::TN,
        act: Activation::Linear,
        accumulate: false,
        half: g.half,
    };
    let conv = g.im2col(Op::BackwardWeights, g.sizes().0, 1, k, k);
    record_gemm(rec, &args, variant, Some(&conv))
}

/// Records the partial weight (and bias) gradients of each chunk of `plan` into `part`
/// (splits × kh·kw·c·oc values) and `part_b` (splits × oc, with a bias).
#[allow(clippy::too_many_arguments)] // a pass's operands, spelled out
pub fn weights_partial(
    rec: &mut dyn Record,
    g: &Geometry,
    x: &wgpu::Buffer,
    dy: &wgpu::Buffer,
    part: &wgpu::Buffer,
    part_b: Option<&wgpu::Buffer>,
    plan: WeightsPlan,
    variant: Variant,
) -> Result<()> {
    g.check()?;
    let (m, n, k) = g.gemm(Op::BackwardWeights);
    let args = MatmulArgs {
        a: x,
        b: dy,
        epilogue: part_b.map_or(Epilogue::None, Epilogue::ColSum),
        c: part,
        m,
        n,
        k,
        layout: Layout::TN,
        act: Activation::Linear,
        accumulate: false,
        half: g.half,
    };
    let conv = g.im2col(Op::BackwardWeights, g.sizes().0, plan.splits, plan.chunk, k);
    record_gemm(rec, &args, variant, Some(&conv))
}

/// The uniform of `conv2d_reduce_step`: the shape (16 bytes), then the optimizer's step.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub struct ReduceParams {
    /// Weight values.
    pub len: u32,
    /// Bias values (0 without a bias).
    pub nb: u32,
    /// Chunks summed.
    pub splits: u32,
    /// Padding.
    pub _pad: u32,
    /// The optimizer step (zero without one).
    pub q: optim::Params,
}

impl ReduceParams {
    /// The shape words, as a training step's table slot holds them.
    pub fn head(&self) -> [u32; 4] {
        [self.len, self.nb, self.splits, 0]
    }
}

/// Records the sum of `plan.splits` partial gradients into `out`: the gradients written, or
/// the optimizer applied to W and the bias in place (the dispatch that reads the per-step
/// uniform).
pub fn reduce(
    rec: &mut dyn Record,
    g: &Geometry,
    part: &wgpu::Buffer,
    part_b: Option<&wgpu::Buffer>,
    plan: WeightsPlan,
    out: WeightsOut<'_>,
) -> Result<()> {
    let dev = rec.device().clone();
    let dummy = dev.core().dummy_buffer();
    let len = g.sizes().2 as u64;
    let nb = part_b.map_or(0, |_| g.oc as u64);
    let s = plan.splits as u64;
    let mut states = [(dummy, 16u64); 4];
    let (w, b, rule, step) = match out {
        WeightsOut::Grad { dw, db } => (dw, db, None, 0),
        WeightsOut::Update { w, update } => {
            if update.state.len() != update.rule.state_count() {
                return Err(Error::InvalidArgument {
                    op: "conv2d (weights update)",
                    name: "state",
                    expected: format!("{} state buffers", update.rule.state_count()),
                    found: update.state.len().to_string(),
                });
            }
            for (i, st) in update.state.iter().enumerate() {
                states[i] = (st, len * 4);
            }
            if let Some((_, bs)) = update.bias {
                for (i, st) in bs.iter().enumerate() {
                    states[2 + i] = (st, nb.max(1) * 4);
                }
            }
            (
                w,
                update.bias.map(|(b, _)| b),
                Some(update.rule),
                update.step,
            )
        }
    };
    if b.is_some() != part_b.is_some() {
        return Err(Error::Internal {
            op: "conv2d reduce",
            message: "partial bias gradients without a bias, or the other way round".into(),
        });
    }
    let params = ReduceParams {
        len: len as u32,
        nb: nb as u32,
        splits: plan.splits,
        _pad: 0,
        q: rule.map_or_else(optim::Params::default, |r: Rule| {
            optim::params(&r, len as usize, step)
        }),
    };
    let constants = [("OPT", rule.map_or(0, |r| optim::rule_code(&r)) as f64)];
    let pipe = rec.pipeline(&REDUCE, &constants)?;
    let n = len + nb;
    rec.declare_work(n as f64 * s as f64, (4 * (n * s + 2 * n)) as f64);
    let groups = grid_1d(n, 256, dev.info().limits.max_workgroups_per_dimension);
    rec.dispatch(
        &pipe,
        &[
            (part, len * s * 4),
            // Without a bias, the partials again (the dummy is bound read-write elsewhere).
            part_b.map_or((part, 16), |p| (p, nb * s * 4)),
            (w, len * 4),
            b.map_or((dummy, 16), |b| (b, nb * 4)),
            states[0],
            states[1],
            states[2],
            states[3],
        ],
        Some(bytemuck::bytes_of(&params)),
        groups,
    )
}

/// Rounds a plan so its chunks are whole multiples of every kernel's K step (a chunk of 64)
/// — exposed for tests that force a split.
pub fn plan_with_chunk(g: &Geometry, chunk: u32) -> WeightsPlan {
    let (_, _, k) = g.gemm(Op::BackwardWeights);
    let chunk = chunk.div_ceil(64).max(1) * 64;
    WeightsPlan {
        splits: k.div_ceil(chunk),
        chunk,
    }
}
