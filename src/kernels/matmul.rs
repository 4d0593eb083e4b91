//! `shaders/matmul.wgsl` and `shaders/matmul_subgroup.wgsl`: C = op(A)·op(B) with a fused
//! epilogue (+ bias, activation, accumulate), and the per-device choice of kernel.
//!
//! Shapes: `op(A)` is (M, K), `op(B)` is (K, N), C is (M, N), all row-major f32.
//! [`Layout::NN`] is the forward product `y = x·W`; [`Layout::TN`] (A stored (K, M)) the weight
//! gradient `dW = xᵀ·dy`; [`Layout::NT`] (B stored (N, K)) the input gradient `dx = dy·Wᵀ`.
//!
//! # Choosing a kernel
//! Real GPUs want shared-memory tiles ([`Variant::Tiled`]); lavapipe, where every per-lane
//! load is a scalar loop, wants loads shared through subgroup broadcasts and tall per-lane tiles
//! ([`Variant::Subgroup8`], eligible only when the adapter's subgroup size is exactly 8). The
//! first matmul on a device times every eligible candidate on a 256×512×512 product with bias
//! and ReLU (a few milliseconds each, plus compilation) and keeps the fastest; the choice is cached in memory
//! and on disk (`$SUANLI_CACHE_DIR`, else `$XDG_CACHE_HOME/suanli`, else `~/.cache/suanli`),
//! keyed by adapter, driver and crate version. `SUANLI_MATMUL=naive|tiled|sg8x16|sg8x32`
//! forces a variant.

use std::time::Instant;

use crate::kernel::{Access, KernelSpec, Recorder, Shader};
use crate::kernels::optim::{self, Rule};
use crate::{Device, Error, Result};

/// matmul.wgsl, after the activation and optimizer-rule preludes.
pub const SHADER: Shader = crate::shader!("matmul" after "activation", "optim_rule");
/// matmul_subgroup.wgsl, after the preludes and matmul.wgsl (whose helpers it uses).
pub const SHADER_SUBGROUP: Shader =
    crate::shader!("matmul_subgroup" after "activation", "optim_rule", "matmul");

const BINDINGS: &[Access] = &[
    Access::ReadOnly,  // a
    Access::ReadOnly,  // b
    Access::ReadWrite, // aux: bias, column sums or gate (a dummy when unused)
    Access::ReadWrite, // c
    Access::ReadWrite, // st1: C's first optimizer state (a dummy without an update)
    Access::ReadWrite, // st2: C's second optimizer state
    Access::ReadWrite, // bst1: the bias's first optimizer state
    Access::ReadWrite, // bst2: the bias's second optimizer state
    Access::Uniform,   // params
];

/// Storage buffers a matmul binds (the kernels declare eight).
const STORAGE_BINDINGS: u32 = 8;

/// One output per invocation: the baseline.
pub const NAIVE: KernelSpec = KernelSpec {
    shader: SHADER,
    entry: "matmul_naive_forward",
    bindings: BINDINGS,
};
/// 64×64 shared-memory tiles, 4×4 per invocation: for hardware GPUs.
pub const TILED: KernelSpec = KernelSpec {
    shader: SHADER,
    entry: "matmul_tiled_forward",
    bindings: BINDINGS,
};
const fn sg(entry: &'static str) -> KernelSpec {
    KernelSpec {
        shader: SHADER_SUBGROUP,
        entry,
        bindings: BINDINGS,
    }
}
/// Subgroup-broadcast kernel for 8-lane subgroups (lavapipe), 16 rows per work-group.
pub const SUBGROUP8_R16: KernelSpec = sg("matmul_sg8_r16_forward");
/// The same with 32 rows per work-group.
pub const SUBGROUP8_R32: KernelSpec = sg("matmul_sg8_r32_forward");
/// 16-byte-load twin (N a multiple of 4, and K for NN and NT, M for TN), 16 rows.
pub const SUBGROUP8_VEC4_R16: KernelSpec = sg("matmul_sg8v4_r16_forward");
/// 16-byte-load twin, 32 rows.
pub const SUBGROUP8_VEC4_R32: KernelSpec = sg("matmul_sg8v4_r32_forward");
/// At most 16 columns: a lane per row of C, each column in its own accumulator.
pub const SUBGROUP8_NARROW: KernelSpec = sg("matmul_sg8_narrow_forward");
/// K at most 16: a lane per column of C, op(B)'s column in registers.
pub const SUBGROUP8_SHALLOW: KernelSpec = sg("matmul_sg8_shallow_forward");

/// Every entry point of this family.
pub const KERNELS: &[KernelSpec] = &[
    NAIVE,
    TILED,
    SUBGROUP8_R16,
    SUBGROUP8_R32,
    SUBGROUP8_VEC4_R16,
    SUBGROUP8_VEC4_R32,
    SUBGROUP8_NARROW,
    SUBGROUP8_SHALLOW,
];

/// Mirrors `Params` in matmul.wgsl.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub struct Params {
    /// Rows of C.
    pub m: u32,
    /// Columns of C.
    pub n: u32,
    /// Reduction length.
    pub k: u32,
    /// Leaky-ReLU slope.
    pub alpha: f32,
    /// The optimizer step of [`Epilogue::Update`] (zero otherwise).
    pub q: optim::Params,
}

/// An activation function, fused into matmul epilogues and used by elementwise kernels.
/// Codes match `shaders/activation.wgsl`.
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub enum Activation {
    /// Identity.
    #[default]
    Linear,
    /// `max(x, 0)`.
    Relu,
    /// `x` if `x > 0` else `slope·x`.
    LeakyRelu(f32),
    /// `1 / (1 + e^-x)`.
    Sigmoid,
    /// `tanh(x)`.
    Tanh,
    /// GELU, tanh approximation: `x/2·(1 + tanh(√(2/π)(x + 0.044715x³)))`.
    GeluTanh,
    /// GELU, exact: `x/2·(1 + erf(x/√2))`.
    Gelu,
}

impl Activation {
    /// The code used in WGSL.
    pub fn code(self) -> u32 {
        match self {
            Activation::Linear => 0,
            Activation::Relu => 1,
            Activation::LeakyRelu(_) => 2,
            Activation::Sigmoid => 3,
            Activation::Tanh => 4,
            Activation::GeluTanh => 5,
            Activation::Gelu => 6,
        }
    }

    /// The scalar parameter (leaky-ReLU slope; 0 otherwise).
    pub fn alpha(self) -> f32 {
        match self {
            Activation::LeakyRelu(a) => a,
            _ => 0.0,
        }
    }
}

/// Which operands are stored transposed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Layout {
    /// A (M, K), B (K, N).
    NN,
    /// A stored (K, M).
    TN,
    /// B stored (N, K).
    NT,
}

/// A matmul kernel configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Variant {
    /// [`NAIVE`].
    Naive,
    /// [`TILED`].
    Tiled,
    /// The subgroup kernels with this many rows per work-group (16 or 32).
    Subgroup8 {
        /// Rows of C per work-group.
        rows: u32,
    },
    /// The subgroup kernel for C with at most 16 columns ([`SUBGROUP8_NARROW`]); not a tuner
    /// candidate: [`Variant::for_shape`] picks it for narrow products.
    Subgroup8Narrow,
    /// The subgroup kernel for K at most 16 ([`SUBGROUP8_SHALLOW`]); picked by
    /// [`Variant::for_shape`] for shallow products.
    Subgroup8Shallow,
}

/// The most columns [`Variant::Subgroup8Narrow`] handles, and the deepest K
/// [`Variant::Subgroup8Shallow`] does.
pub const NARROW: u32 = 16;
/// Rows of C per work-group of the shallow kernel (`SHALLOW_ROWS` in the WGSL).
const SHALLOW_ROWS: u32 = 32;

/// Whether the aligned vec4 twin of the subgroup kernel applies to these arguments.
fn vec4_ok(args: &MatmulArgs<'_>) -> bool {
    match args.layout {
        Layout::NN => args.k.is_multiple_of(4) && args.n.is_multiple_of(4),
        Layout::TN => args.m.is_multiple_of(4) && args.n.is_multiple_of(4),
        Layout::NT => args.k.is_multiple_of(4) && args.n.is_multiple_of(4),
    }
}

impl Variant {
    /// Parses the names used by `SUANLI_MATMUL` and the tuning cache.
    pub fn parse(s: &str) -> Option<Variant> {
        match s.trim() {
            "naive" => Some(Variant::Naive),
            "tiled" => Some(Variant::Tiled),
            "sg8x16" => Some(Variant::Subgroup8 { rows: 16 }),
            "sg8x32" => Some(Variant::Subgroup8 { rows: 32 }),
            _ => None,
        }
    }

    /// The name [`Variant::parse`] reads.
    pub fn name(self) -> String {
        match self {
            Variant::Naive => "naive".into(),
            Variant::Tiled => "tiled".into(),
            Variant::Subgroup8 { rows } => format!("sg8x{rows}"),
            Variant::Subgroup8Narrow => "sg8narrow".into(),
            Variant::Subgroup8Shallow => "sg8shallow".into(),
        }
    }

    /// Whether the device can run this variant.
    pub fn eligible(self, dev: &Device) -> bool {
        let l = &dev.info().limits;
        match self {
            Variant::Naive | Variant::Tiled => {
                l.max_invocations >= 256 && l.max_workgroup_storage >= 8192
            }
            Variant::Subgroup8 { rows } => {
                dev.info().features.subgroups
                    && l.subgroup_size == (8, 8)
                    && matches!(rows, 16 | 32)
            }
            Variant::Subgroup8Narrow | Variant::Subgroup8Shallow => {
                Variant::Subgroup8 { rows: 16 }.eligible(dev)
            }
        }
    }

    fn spec(self, vec4: bool) -> &'static KernelSpec {
        match (self, vec4) {
            (Variant::Naive, _) => &NAIVE,
            (Variant::Tiled, _) => &TILED,
            (Variant::Subgroup8 { rows: 16 }, false) => &SUBGROUP8_R16,
            (Variant::Subgroup8 { .. }, false) => &SUBGROUP8_R32,
            (Variant::Subgroup8 { rows: 16 }, true) => &SUBGROUP8_VEC4_R16,
            (Variant::Subgroup8 { .. }, true) => &SUBGROUP8_VEC4_R32,
            (Variant::Subgroup8Narrow, _) => &SUBGROUP8_NARROW,
            (Variant::Subgroup8Shallow, _) => &SUBGROUP8_SHALLOW,
        }
    }

    fn groups(self, m: u32, n: u32) -> [u32; 3] {
        match self {
            Variant::Naive => [n.div_ceil(16), m.div_ceil(16), 1],
            Variant::Tiled => [n.div_ceil(64), m.div_ceil(64), 1],
            Variant::Subgroup8 { rows } => [n.div_ceil(32), m.div_ceil(rows), 1],
            Variant::Subgroup8Narrow => [m.div_ceil(8), 1, 1],
            Variant::Subgroup8Shallow => [n.div_ceil(8), m.div_ceil(SHALLOW_ROWS), 1],
        }
    }

    /// The variant [`record`] runs for an (M, N, K) product with this device choice.
    ///
    /// The subgroup kernels' work-groups cover 32-wide blocks of N and K, so on a narrow or
    /// shallow product most lanes would compute padding. With them:
    /// - N at most 16 (a classifier's last layer and its weight gradient) goes to
    ///   [`Variant::Subgroup8Narrow`], a lane per row;
    /// - otherwise K at most 16 (the input gradient through that layer) goes to
    ///   [`Variant::Subgroup8Shallow`], a lane per column.
    ///
    /// Both also spare a cold start: each specialisation of the unrolled subgroup kernels takes
    /// 1.4-3.4 s of LLVM compilation on lavapipe's first use, these two a few milliseconds.
    pub fn for_shape(self, _m: u32, n: u32, k: u32) -> Variant {
        match self {
            Variant::Subgroup8 { .. } if n <= NARROW => Variant::Subgroup8Narrow,
            Variant::Subgroup8 { .. } if k <= NARROW => Variant::Subgroup8Shallow,
            v => v,
        }
    }

    /// The subgroup kernel's row count for `m` rows: 16 when `m` is small, so a batch of 1
    /// does not compute 32 clamped rows.
    fn for_rows(self, m: u32) -> Variant {
        match self {
            Variant::Subgroup8 { .. } if m <= 16 => Variant::Subgroup8 { rows: 16 },
            v => v,
        }
    }
}

/// What the epilogue does besides the activation (see matmul.wgsl).
#[derive(Clone, Copy, Debug, Default)]
pub enum Epilogue<'a> {
    /// Nothing.
    #[default]
    None,
    /// `+ bias[col]` before the activation (N elements).
    Bias(&'a wgpu::Buffer),
    /// Also writes `Σ_k op(B)[k, col]` into this buffer (N elements): the bias gradient
    /// `db = Σ_rows dz` computed alongside `dW = xᵀ·dz` from the loads the product makes anyway.
    ColSum(&'a wgpu::Buffer),
    /// Multiplies the result by `f'(y)` with `y` read from this (M, N) buffer, for an
    /// activation whose derivative is a function of its output: backprop `dz = (dy·Wᵀ) ⊙ f'(y)`
    /// in one kernel. The matmul's own activation must then be linear.
    Gate(&'a wgpu::Buffer, Activation),
    /// The product is the gradient of C, which holds a parameter: C is updated in place by an
    /// optimizer step instead of being overwritten (and with a bias, the column sums of op(B)
    /// update it too). A weight-gradient product `xᵀ·dz` with this epilogue is a whole
    /// optimizer step for a dense layer: no gradient buffer, no separate optimizer dispatch.
    /// The activation must be linear and `accumulate` false.
    Update(Update<'a>),
}

/// An optimizer step fused into the matmul epilogue ([`Epilogue::Update`]).
///
/// One SGD step of a dense layer `y = x·W + b` from the gradient `dy` of its output: the
/// weight gradient `xᵀ·dy` and the bias gradient `Σ_rows dy` are applied as they are
/// computed, and never stored.
///
/// ```no_run
/// use suanli::kernels::matmul::{self, Activation, Epilogue, Layout, MatmulArgs, Update};
/// use suanli::kernels::optim::Rule;
/// use suanli::{Device, Tensor};
/// let dev = Device::open("auto")?;
/// let (batch, inputs, units) = (32, 784, 128);
/// let x = Tensor::rand_uniform(&dev, &[batch, inputs], 0.0, 1.0, 1)?;
/// let dy = Tensor::rand_uniform(&dev, &[batch, units], -1.0, 1.0, 2)?;
/// let w = Tensor::rand_uniform(&dev, &[inputs, units], -0.1, 0.1, 3)?;
/// let b = Tensor::zeros(&dev, &[units])?;
/// let (w_velocity, b_velocity) = (Tensor::zeros(&dev, &[inputs * units])?, Tensor::zeros(&dev, &[units])?);
/// let rule = Rule::Sgd { lr: 0.01, momentum: 0.9, nesterov: false, weight_decay: 0.0 };
/// let mut rec = dev.recorder();
/// matmul::record(
///     &mut rec,
///     &MatmulArgs {
///         a: x.buffer(), // stored (batch, inputs) = (K, M): the TN layout
///         b: dy.buffer(),
///         epilogue: Epilogue::Update(Update {
///             rule,
///             step: 1,
///             state: &[w_velocity.buffer()],
///             bias: Some((b.buffer(), &[b_velocity.buffer()])),
///         }),
///         c: w.buffer(),
///         m: inputs as u32,
///         n: units as u32,
///         k: batch as u32,
///         layout: Layout::TN,
///         act: Activation::Linear,
///         accumulate: false,
///     },
/// )?;
/// rec.submit()?;
/// # Ok::<(), suanli::Error>(())
/// ```
#[derive(Clone, Copy, Debug)]
pub struct Update<'a> {
    /// The rule and its hyper-parameters.
    pub rule: Rule,
    /// The step number `t` (1-based) of the recorded uniform. A program captured with a
    /// parameter table reads its step scalars from the table instead (see
    /// [`update_params`]).
    pub step: u64,
    /// C's optimizer states: [`Rule::state_count`] buffers of M·N elements.
    pub state: &'a [&'a wgpu::Buffer],
    /// The bias (N elements) and its states, updated with the column sums of op(B) as its
    /// gradient.
    pub bias: Option<(&'a wgpu::Buffer, &'a [&'a wgpu::Buffer])>,
}

/// The uniform of an [`Epilogue::Update`] matmul of shape (M, N, K) at step `t`: what a
/// training loop writes into its parameter table every step.
pub fn update_params(m: u32, n: u32, k: u32, rule: &Rule, t: u64) -> Params {
    Params {
        m,
        n,
        k,
        alpha: 0.0,
        q: rule.params(m as usize * n as usize, t),
    }
}

impl Epilogue<'_> {
    fn code(&self) -> u32 {
        match self {
            Epilogue::None => 0,
            Epilogue::Bias(_) => 1,
            Epilogue::ColSum(_) => 2,
            Epilogue::Gate(..) => 3,
            Epilogue::Update(u) => 2 * u.bias.is_some() as u32,
        }
    }
}

/// Everything one matmul needs. Buffers hold at least the elements their shapes imply.
#[derive(Clone, Copy, Debug)]
pub struct MatmulArgs<'a> {
    /// A, stored (M, K), or (K, M) for [`Layout::TN`].
    pub a: &'a wgpu::Buffer,
    /// B, stored (K, N), or (N, K) for [`Layout::NT`].
    pub b: &'a wgpu::Buffer,
    /// Bias, column sums or gate (see [`Epilogue`]).
    pub epilogue: Epilogue<'a>,
    /// C (M, N): written, or added to with `accumulate`.
    pub c: &'a wgpu::Buffer,
    /// Rows of C.
    pub m: u32,
    /// Columns of C.
    pub n: u32,
    /// Reduction length.
    pub k: u32,
    /// Transposes.
    pub layout: Layout,
    /// Activation applied after the bias.
    pub act: Activation,
    /// `C += result` instead of `C = result`.
    pub accumulate: bool,
}

/// Records one matmul with the device's chosen variant (tuning on first use), or the naive
/// kernel for a narrow product (see [`Variant::for_shape`]).
pub fn record(rec: &mut Recorder<'_>, args: &MatmulArgs<'_>) -> Result<()> {
    let v = choose(rec.device())?.for_shape(args.m, args.n, args.k);
    record_with(rec, args, v)
}

/// Records one matmul with an explicit variant.
pub fn record_with(rec: &mut Recorder<'_>, args: &MatmulArgs<'_>, variant: Variant) -> Result<()> {
    let dev = rec.device();
    if args.m == 0 || args.n == 0 || args.k == 0 {
        return Err(Error::InvalidArgument {
            op: "matmul",
            name: "shape",
            expected: "M, N, K >= 1".into(),
            found: format!("M={}, N={}, K={}", args.m, args.n, args.k),
        });
    }
    if !variant.eligible(dev) {
        return Err(Error::InvalidArgument {
            op: "matmul",
            name: "variant",
            expected: "a variant this adapter supports".into(),
            found: variant.name(),
        });
    }
    if (variant == Variant::Subgroup8Narrow && args.n > NARROW)
        || (variant == Variant::Subgroup8Shallow && args.k > NARROW)
    {
        return Err(Error::InvalidArgument {
            op: "matmul",
            name: "variant",
            expected: format!(
                "at most {NARROW} columns for the narrow kernel, a depth of at most {NARROW} for the shallow one"
            ),
            found: format!("{} with N={}, K={}", variant.name(), args.n, args.k),
        });
    }
    let variant = variant.for_rows(args.m);
    let spec = variant.spec(vec4_ok(args));
    if dev.info().limits.max_storage_buffers < STORAGE_BINDINGS {
        return Err(Error::InvalidArgument {
            op: "matmul",
            name: "device",
            expected: format!(
                "an adapter with at least {STORAGE_BINDINGS} storage buffers per shader stage"
            ),
            found: format!("{} ({})", dev.info().limits.max_storage_buffers, dev.name()),
        });
    }
    let gate = match args.epilogue {
        Epilogue::Gate(_, g) => {
            if !crate::kernels::elementwise::derivative_from_output(g)
                || args.act != Activation::Linear
            {
                return Err(Error::InvalidArgument {
                    op: "matmul",
                    name: "epilogue",
                    expected: "a gate activation whose derivative follows from its output (linear, relu, leaky relu, sigmoid, tanh), with a linear matmul activation".into(),
                    found: format!("gate {g:?} with activation {:?}", args.act),
                });
            }
            Some(g)
        }
        _ => None,
    };
    let (m, n, k) = (args.m as u64, args.n as u64, args.k as u64);
    let dummy = dev.dummy_buffer();
    // Optimizer states of C and of the bias (dummies without an update).
    let mut states = [(dummy, 16u64); 4];
    let update = match args.epilogue {
        Epilogue::Update(u) => {
            let want = u.rule.state_count();
            let bias_states = u.bias.map(|(_, s)| s.len());
            if args.act != Activation::Linear
                || args.accumulate
                || u.state.len() != want
                || bias_states.is_some_and(|c| c != want)
            {
                return Err(Error::InvalidArgument {
                    op: "matmul",
                    name: "epilogue",
                    expected: format!(
                        "an update with a linear activation, no accumulation and {want} state buffer(s) for C and the bias"
                    ),
                    found: format!(
                        "activation {:?}, accumulate {}, {} state(s) for C, {:?} for the bias",
                        args.act,
                        args.accumulate,
                        u.state.len(),
                        bias_states
                    ),
                });
            }
            for (i, b) in u.state.iter().enumerate() {
                states[i] = (b, m * n * 4);
            }
            if let Some((_, bs)) = u.bias {
                for (i, b) in bs.iter().enumerate() {
                    states[2 + i] = (b, n * 4);
                }
            }
            Some(u)
        }
        _ => None,
    };
    let constants = [
        ("TRANS_A", (args.layout == Layout::TN) as u32 as f64),
        ("TRANS_B", (args.layout == Layout::NT) as u32 as f64),
        ("EPI", args.epilogue.code() as f64),
        ("GATE", gate.map_or(0, |g| g.code()) as f64),
        ("ACCUMULATE", args.accumulate as u32 as f64),
        ("ACT", args.act.code() as f64),
        ("OPT", update.map_or(0, |u| u.rule.code()) as f64),
    ];
    let pipe = rec.pipeline(spec, &constants)?;
    let params = match update {
        Some(u) => update_params(args.m, args.n, args.k, &u.rule, u.step),
        None => Params {
            m: args.m,
            n: args.n,
            k: args.k,
            alpha: gate.map_or(args.act.alpha(), |g| g.alpha()),
            q: optim::Params::default(),
        },
    };
    let aux = match args.epilogue {
        Epilogue::None | Epilogue::Update(Update { bias: None, .. }) => (dummy, 16),
        Epilogue::Bias(b)
        | Epilogue::ColSum(b)
        | Epilogue::Update(Update {
            bias: Some((b, _)), ..
        }) => (b, n * 4),
        Epilogue::Gate(b, _) => (b, m * n * 4),
    };
    let aux_bytes = if aux.1 == 16 && std::ptr::eq(aux.0, dummy) {
        0
    } else {
        aux.1
    };
    // An update reads and writes C and its states instead of writing C once.
    let c_bytes = match update {
        Some(u) => m * n * 4 * 2 * (1 + u.state.len() as u64),
        None => m * n * 4 * (1 + args.accumulate as u64),
    };
    rec.declare_work(
        (2 * m * n * k) as f64,
        (4 * (m * k + k * n) + aux_bytes + c_bytes) as f64,
    );
    rec.dispatch(
        &pipe,
        &[
            (args.a, m * k * 4),
            (args.b, k * n * 4),
            aux,
            (args.c, m * n * 4),
            states[0],
            states[1],
            states[2],
            states[3],
        ],
        Some(bytemuck::bytes_of(&params)),
        variant.groups(args.m, args.n),
    )
}

/// Candidates the tuner times on this device.
///
/// On a software adapter with the subgroup kernels, the shared-memory tiled kernel is left
/// out: it is built for hardware GPUs and measured 1.7-2.2 GFLOP/s on llvmpipe against 17-30
/// for the subgroup kernels, so timing it only lengthens a first run (compile plus ~0.4 s).
pub fn candidates(dev: &Device) -> Vec<Variant> {
    let sg = [
        Variant::Subgroup8 { rows: 16 },
        Variant::Subgroup8 { rows: 32 },
    ];
    let skip_tiled = !dev.is_gpu() && sg.iter().any(|v| v.eligible(dev));
    std::iter::once(Variant::Tiled)
        .filter(|_| !skip_tiled)
        .chain(sg)
        .filter(|v| v.eligible(dev))
        .collect()
}

fn cache_file(dev: &Device) -> Option<std::path::PathBuf> {
    let dir = if let Some(d) = std::env::var_os("SUANLI_CACHE_DIR") {
        std::path::PathBuf::from(d)
    } else if let Some(d) = std::env::var_os("XDG_CACHE_HOME") {
        std::path::PathBuf::from(d).join("suanli")
    } else {
        std::path::PathBuf::from(std::env::var_os("HOME")?)
            .join(".cache")
            .join("suanli")
    };
    let info = dev.info();
    // Kernel sources are part of the key: editing a kernel invalidates the choice.
    let key = format!(
        "{}|{}|{}|{:?}|{}|{}|{}",
        info.name,
        info.driver_info,
        info.backend,
        info.limits.subgroup_size,
        env!("CARGO_PKG_VERSION"),
        SHADER.source,
        SHADER_SUBGROUP.source
    );
    let mut h = std::collections::hash_map::DefaultHasher::new();
    std::hash::Hash::hash(&key, &mut h);
    Some(dir.join(format!("matmul-{:016x}.txt", std::hash::Hasher::finish(&h))))
}

/// The device's matmul variant: forced by `SUANLI_MATMUL`, else cached, else tuned now.
pub fn choose(dev: &Device) -> Result<Variant> {
    if let Some(v) = dev.inner.matmul_variant.get() {
        return Ok(*v);
    }
    let v = if let Ok(name) = std::env::var("SUANLI_MATMUL") {
        let v = Variant::parse(&name).ok_or_else(|| Error::Config {
            key: "SUANLI_MATMUL".into(),
            value: name.clone(),
            source_name: "environment".into(),
            reason: "expected naive, tiled, sg8x16 or sg8x32".into(),
        })?;
        if !v.eligible(dev) {
            return Err(Error::Config {
                key: "SUANLI_MATMUL".into(),
                value: name,
                source_name: "environment".into(),
                reason: format!("{} cannot run this variant", dev.name()),
            });
        }
        v
    } else {
        let cached = cache_file(dev)
            .and_then(|f| std::fs::read_to_string(f).ok())
            .and_then(|s| Variant::parse(&s))
            .filter(|v| v.eligible(dev));
        match cached {
            Some(v) => v,
            None => {
                let v = tune(dev)?;
                if let Some(f) = cache_file(dev) {
                    if let Err(e) = crate::io::write_atomic(&f, v.name().as_bytes()) {
                        log::warn!("could not cache the matmul choice in {}: {e}", f.display());
                    }
                }
                v
            }
        }
    };
    let _ = dev.inner.matmul_variant.set(v);
    Ok(*dev.inner.matmul_variant.get().unwrap_or(&v))
}

/// Rounds of the tuner: each times every candidate once.
const TUNE_ROUNDS: usize = 9;

/// Times every candidate on a 256×512×512 NN product with bias and ReLU (after a warm-up, the
/// median of 9 rounds in which the candidates alternate) and returns the
/// fastest.
pub fn tune(dev: &Device) -> Result<Variant> {
    let (m, n, k) = (256u32, 512u32, 512u32);
    let a = crate::Tensor::rand_uniform(dev, &[m as usize, k as usize], -1.0, 1.0, 1)?;
    let b = crate::Tensor::rand_uniform(dev, &[k as usize, n as usize], -1.0, 1.0, 2)?;
    let c = crate::Tensor::empty(dev, &[m as usize, n as usize])?;
    let bias = crate::Tensor::zeros(dev, &[n as usize])?;
    // A dense layer's forward (bias + ReLU): the pipeline the tuner compiles for the winner is
    // then the one training uses, instead of one compiled only to be timed.
    let args = MatmulArgs {
        a: a.buffer(),
        b: b.buffer(),
        epilogue: Epilogue::Bias(bias.buffer()),
        c: c.buffer(),
        m,
        n,
        k,
        layout: Layout::NN,
        act: Activation::Relu,
        accumulate: false,
    };
    // Candidates alternate within each round, so a slow spell of a noisy machine (lavapipe
    // varies by ±30% over seconds) lands on all of them instead of deciding the choice.
    let cands = candidates(dev);
    for &v in &cands {
        time_variant(dev, &args, v, 0)?; // compiles it (first dispatch on lavapipe)
    }
    let mut times = vec![Vec::with_capacity(TUNE_ROUNDS); cands.len()];
    for _ in 0..TUNE_ROUNDS {
        for (i, &v) in cands.iter().enumerate() {
            times[i].push(time_once(dev, &args, v)?);
        }
    }
    let mut best: Option<(f64, Variant)> = None;
    let mut report = Vec::new();
    for (&v, mut t) in cands.iter().zip(times) {
        t.sort_by(f64::total_cmp);
        let secs = t[t.len() / 2];
        report.push(format!(
            "{} {:.1} GFLOP/s",
            v.name(),
            2.0 * (m * n * k) as f64 / secs / 1e9
        ));
        if best.is_none_or(|(t, _)| secs < t) {
            best = Some((secs, v));
        }
    }
    let v = best.map(|(_, v)| v).unwrap_or(Variant::Naive);
    log::info!(
        "matmul tuning on {}: {}; chose {}",
        dev.name(),
        report.join(", "),
        v.name()
    );
    Ok(v)
}

/// Median wall time in seconds of one matmul with `variant` over `runs` runs, after one
/// warm-up run (with `runs` 0, the warm-up's time).
pub fn time_variant(
    dev: &Device,
    args: &MatmulArgs<'_>,
    variant: Variant,
    runs: usize,
) -> Result<f64> {
    let warm = time_once(dev, args, variant)?;
    if runs == 0 {
        return Ok(warm);
    }
    let mut times = (0..runs)
        .map(|_| time_once(dev, args, variant))
        .collect::<Result<Vec<_>>>()?;
    times.sort_by(f64::total_cmp);
    Ok(times[times.len() / 2])
}

/// Wall time in seconds of one recorded, submitted and awaited matmul.
fn time_once(dev: &Device, args: &MatmulArgs<'_>, variant: Variant) -> Result<f64> {
    let t0 = Instant::now();
    let mut rec = dev.recorder();
    record_with(&mut rec, args, variant)?;
    let idx = rec.submit()?;
    dev.wait(Some(idx), "matmul timing")?;
    Ok(t0.elapsed().as_secs_f64())
}
