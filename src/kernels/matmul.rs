//! `C = op(A)·op(B)` with a fused epilogue (+ bias, activation, accumulate, column sums, the
//! activation-derivative gate of backprop, or an optimizer step applied to C in place).
//!
//! Shapes: `op(A)` is (M, K), `op(B)` is (K, N), C is (M, N), all row-major f32 (see
//! [`Layout`]). This module is the operation: its arguments, their checks, the uniform and the
//! dispatch of one product with a given kernel ([`record_with`]). The kernels themselves and
//! what each can do are in [`crate::kernels::matmul_variant`]; the per-device choice, and
//! [`record`](crate::kernels::matmul_tune::record) that uses it, in
//! [`crate::kernels::matmul_tune`].

use crate::error::{Error, Result};
use crate::exec::dispatch::Record;
use crate::kernels::matmul_batch::Batch;
use crate::kernels::matmul_variant::{vec4_ok, Variant, NARROW, STORAGE_BINDINGS};
use crate::kernels::optim;
use crate::kernels::prelude::act_code;
use crate::vocab::{Activation, Layout, Rule};

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

// The batched uniform (`matmul_batch`) reuses this one's optimizer words: the same size.
const _: () = assert!(
    std::mem::size_of::<crate::kernels::matmul_batch::BatchedParams>()
        == std::mem::size_of::<Params>()
);

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
/// use suanli::internals::kernels::{matmul::{Epilogue, MatmulArgs, Update}, matmul_tune};
/// use suanli::exec::Recorder;
/// use suanli::{Activation, Device, Layout, Rule, Tensor};
/// let dev = Device::open("auto")?;
/// let (batch, inputs, units) = (32, 784, 128);
/// let x = Tensor::rand_uniform(&dev, &[batch, inputs], 0.0, 1.0, 1)?;
/// let dy = Tensor::rand_uniform(&dev, &[batch, units], -1.0, 1.0, 2)?;
/// let w = Tensor::rand_uniform(&dev, &[inputs, units], -0.1, 0.1, 3)?;
/// let b = Tensor::zeros(&dev, &[units])?;
/// let (w_velocity, b_velocity) = (Tensor::zeros(&dev, &[inputs * units])?, Tensor::zeros(&dev, &[units])?);
/// let rule = Rule::Sgd { lr: 0.01, momentum: 0.9, nesterov: false, weight_decay: 0.0 };
/// let mut rec = Recorder::new(&dev);
/// matmul_tune::record(
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
///         half: false,
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
        q: optim::params(rule, m as usize * n as usize, t),
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
    /// Float16 operands (Keras's `mixed_float16` policy, [`crate::vocab::Precision`]): every
    /// value of A and B the kernel loads is rounded to binary16 (to nearest even, |x| ≥ 65520
    /// to ±inf, NaN and subnormals kept) before it is multiplied; products and sums stay f32
    /// and C is written as f32. Why in the kernel: a layer under the policy computes what
    /// Keras computes in float16 without an extra pass over its operands; storage stays f32
    /// words. An infinity from an overflowing operand reaches C, where loss scaling sees it.
    pub half: bool,
}

/// How a GEMM reads its A operand through implicit im2col (a convolution's GEMM): the
/// pipeline constants of its geometry (`shaders/im2col.wgsl`), whether the vec4 twin applies,
/// and the split of K across work-groups. Built by [`crate::kernels::conv2d`].
#[derive(Clone, Debug, PartialEq)]
pub struct Im2col {
    /// `IM2COL`, the geometry, `KCHUNK`.
    pub constants: Vec<(&'static str, f64)>,
    /// The channels read four at a time are aligned (the vec4 twin applies).
    pub vec4: bool,
    /// Work-groups along z (K chunks); 1 without a split.
    pub splits: u32,
    /// K per chunk (K itself without a split).
    pub chunk: u32,
    /// Bytes of the tensor A is read from (the input or dy).
    pub a_bytes: u64,
}

/// Records one matmul with an explicit variant.
pub fn record_with(rec: &mut dyn Record, args: &MatmulArgs<'_>, variant: Variant) -> Result<()> {
    record_gemm(rec, args, variant, None)
}

/// Records one GEMM with an explicit variant: a matmul, or with `conv` a convolution's GEMM
/// whose A is read through implicit im2col (its twin entry point).
pub fn record_gemm(
    rec: &mut dyn Record,
    args: &MatmulArgs<'_>,
    variant: Variant,
    conv: Option<&Im2col>,
) -> Result<()> {
    gemm(rec, args, variant, conv, None)
}

/// Records a batch of matmuls with an explicit variant ([`Batch`]: one product per
/// work-group z, each operand at its own offsets and row stride). The epilogue must be
/// [`Epilogue::None`] (any activation, `accumulate` allowed).
pub fn record_batched_with(
    rec: &mut dyn Record,
    args: &MatmulArgs<'_>,
    batch: &Batch,
    variant: Variant,
) -> Result<()> {
    gemm(rec, args, variant, None, Some(batch))
}

fn gemm(
    rec: &mut dyn Record,
    args: &MatmulArgs<'_>,
    variant: Variant,
    conv: Option<&Im2col>,
    batch: Option<&Batch>,
) -> Result<()> {
    let dev = rec.device().clone();
    if args.m == 0 || args.n == 0 || args.k == 0 {
        return Err(Error::InvalidArgument {
            op: "matmul",
            name: "shape",
            expected: "M, N, K >= 1".into(),
            found: format!("M={}, N={}, K={}", args.m, args.n, args.k),
        });
    }
    // The tensor-core kernels have no implicit-im2col twin; the kernel that runs is the one
    // checked.
    let variant = if conv.is_some() {
        variant.conv_fallback()
    } else {
        variant
    };
    if !variant.eligible(dev.info()) {
        return Err(Error::InvalidArgument {
            op: "matmul",
            name: "variant",
            expected: "a variant this adapter supports".into(),
            found: variant.name(),
        });
    }
    let narrow = matches!(
        variant,
        Variant::SubgroupNarrow { .. } | Variant::BlockedNarrow
    );
    let shallow = matches!(variant, Variant::SubgroupShallow { .. });
    if (narrow && args.n > NARROW) || (shallow && args.k > NARROW) {
        return Err(Error::InvalidArgument {
            op: "matmul",
            name: "variant",
            expected: format!(
                "at most {NARROW} columns for the narrow kernel, a depth of at most {NARROW} for the shallow one"
            ),
            found: format!("{} with N={}, K={}", variant.name(), args.n, args.k),
        });
    }
    let deepest = conv.map_or(args.k, |c| c.chunk);
    if let Some(max) = variant
        .max_k(dev.info())
        .filter(|&max| deepest as u64 > max)
    {
        return Err(Error::InvalidArgument {
            op: "matmul",
            name: "shape",
            expected: format!(
                "K at most {max} for {} on {} (it stops any loop after {} iterations)",
                variant.name(),
                dev.name(),
                dev.info().limits.max_loop_iterations.unwrap_or(0)
            ),
            found: format!("K={deepest}"),
        });
    }
    let spans = match batch {
        Some(bt) => {
            if !matches!(args.epilogue, Epilogue::None) {
                return Err(Error::InvalidArgument {
                    op: "matmul (batched)",
                    name: "epilogue",
                    expected: "no epilogue (an activation and accumulate are allowed)".into(),
                    found: format!("{:?}", args.epilogue),
                });
            }
            let max = dev.info().limits.max_workgroups_per_dimension;
            Some(bt.check((args.m, args.n, args.k), args.layout, max)?)
        }
        None => None,
    };
    let variant = variant.for_rows(args.m);
    let spec = match conv {
        Some(c) => variant.conv_spec(c.vec4 && args.n.is_multiple_of(4)),
        None => variant.spec_on(
            vec4_ok(args.layout, args.m, args.n, args.k) && batch.is_none_or(|b| b.vec4_ok()),
            dev.info(),
        ),
    };
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
            check_gate("matmul", g, args.act)?;
            Some(g)
        }
        _ => None,
    };
    let (m, n, k) = (args.m as u64, args.n as u64, args.k as u64);
    let dummy = dev.core().dummy_buffer();
    // Optimizer states of C and of the bias (dummies without an update).
    let mut states = [(dummy, 16u64); 4];
    let update = match args.epilogue {
        Epilogue::Update(u) => {
            let want = u.rule.state_count();
            let bias_states = u.bias.map(|(_, s)| s.len());
            let refuse = |name: &'static str, expected: String, found: String| {
                Err(Error::InvalidArgument {
                    op: "matmul (fused update)",
                    name,
                    expected,
                    found,
                })
            };
            if args.act != Activation::Linear {
                return refuse(
                    "act",
                    "a linear activation: the product is a gradient".into(),
                    format!("{:?}", args.act),
                );
            }
            if args.accumulate {
                return refuse(
                    "accumulate",
                    "no accumulation: the update replaces C".into(),
                    "accumulate".into(),
                );
            }
            if u.state.len() != want || bias_states.is_some_and(|c| c != want) {
                return refuse(
                    "state",
                    format!("{want} state buffer(s) for C and for the bias"),
                    format!("{} for C, {:?} for the bias", u.state.len(), bias_states),
                );
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
    let mut constants = vec![
        ("TRANS_A", (args.layout == Layout::TN) as u32 as f64),
        ("TRANS_B", (args.layout == Layout::NT) as u32 as f64),
        ("EPI", args.epilogue.code() as f64),
        ("GATE", gate.map_or(Ok(0), act_code)? as f64),
        ("ACCUMULATE", args.accumulate as u32 as f64),
        ("ACT", act_code(args.act)? as f64),
        (
            "OPT",
            update.map_or(0, |u| optim::rule_code(&u.rule)) as f64,
        ),
    ];
    if let Some(c) = conv {
        constants.extend_from_slice(&c.constants);
    }
    if batch.is_some() {
        constants.push(("BATCHED", 1.0));
    }
    if args.half {
        constants.push(("HALF", 1.0));
    }
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
    if let (Some(bt), Some(sp)) = (batch, spans) {
        let count = bt.count as u64;
        rec.declare_work(
            (2 * m * n * k * count) as f64,
            (4 * count * (m * k + k * n + m * n * (1 + args.accumulate as u64))) as f64,
        );
        let mut groups = variant.groups(args.m, args.n);
        groups[2] = bt.count;
        let bp = bt.params((args.m, args.n, args.k), params.alpha);
        return rec.dispatch(
            &pipe,
            &[
                (args.a, sp[0] * 4),
                (args.b, sp[1] * 4),
                aux,
                (args.c, sp[2] * 4),
                states[0],
                states[1],
                states[2],
                states[3],
            ],
            Some(bytemuck::bytes_of(&bp)),
            groups,
        );
    }
    rec.declare_work(
        (2 * m * n * k) as f64,
        (4 * (m * k + k * n) + aux_bytes + c_bytes) as f64,
    );
    let (a_bytes, c_bytes, aux, groups) = match conv {
        // A is the tensor im2col reads (its size is the caller's); with a split K, C and the
        // column sums hold a partial result per chunk.
        Some(c) => {
            let mut g = variant.groups(args.m, args.n);
            g[2] = c.splits;
            let aux = if c.splits > 1 && aux.1 == n * 4 {
                (aux.0, n * 4 * c.splits as u64)
            } else {
                aux
            };
            (c.a_bytes, m * n * 4 * c.splits.max(1) as u64, aux, g)
        }
        None => (m * k * 4, m * n * 4, aux, variant.groups(args.m, args.n)),
    };
    rec.dispatch(
        &pipe,
        &[
            (args.a, a_bytes),
            (args.b, k * n * 4),
            aux,
            (args.c, c_bytes),
            states[0],
            states[1],
            states[2],
            states[3],
        ],
        Some(bytemuck::bytes_of(&params)),
        groups,
    )
}

/// Refuses a gate epilogue (the previous layer's activation derivative, read from its output)
/// that the kernels cannot apply: one whose derivative does not follow from its output (GELU,
/// softmax), or one after a non-linear `act`. `op` names the caller (the matmul, or the
/// strided convolution's gather, which applies the same gate).
pub fn check_gate(op: &'static str, gate: Activation, act: Activation) -> Result<()> {
    if !gate.derivative_from_output() || act != Activation::Linear {
        return Err(Error::InvalidArgument {
            op,
            name: "epilogue",
            expected: "a gate activation whose derivative follows from its output (linear, relu, leaky relu, sigmoid, tanh), with a linear matmul activation".into(),
            found: format!("gate {gate:?} with activation {act:?}"),
        });
    }
    Ok(())
}
