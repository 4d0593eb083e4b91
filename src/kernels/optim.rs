//! `shaders/optim.wgsl`: fused optimizer steps. Step scalars are computed here in f64.
//!
//! The rules ([`Rule`], formulas in its docs and in the WGSL prelude) live in the
//! `optim_rule.wgsl` prelude, shared with the matmul epilogue that applies them to a weight
//! while computing its gradient
//! ([`Epilogue::Update`](crate::kernels::matmul::Epilogue::Update)).

use crate::error::{Error, Result};
use crate::exec::dispatch::Record;
use crate::services::pipeline::{grid_1d, Access, KernelSpec, Shader};
use crate::vocab::Rule;

/// optim.wgsl.
pub const SHADER: Shader = crate::services::pipeline::shader!("optim" after "optim_rule");

use Access::{ReadOnly as RO, ReadWrite as RW, Uniform as U};

/// SGD. Bindings: grad, param, velocity, params.
pub const SGD: KernelSpec = KernelSpec {
    shader: SHADER,
    entry: "sgd_step",
    bindings: &[RO, RW, RW, U],
};
/// Adam. Bindings: grad, param, m, v, params.
pub const ADAM: KernelSpec = KernelSpec {
    shader: SHADER,
    entry: "adam_step",
    bindings: &[RO, RW, RW, RW, U],
};
/// AdamW. Bindings: grad, param, m, v, params.
pub const ADAMW: KernelSpec = KernelSpec {
    shader: SHADER,
    entry: "adamw_step",
    bindings: &[RO, RW, RW, RW, U],
};
/// RMSprop. Bindings: grad, param, mean square, params.
pub const RMSPROP: KernelSpec = KernelSpec {
    shader: SHADER,
    entry: "rmsprop_step",
    bindings: &[RO, RW, RW, U],
};

/// SGD behind the loss-scale skip word. Bindings: grad, param, velocity, guard (read-write
/// by the binding order's convention, only read), params.
pub const SGD_GUARDED: KernelSpec = KernelSpec {
    shader: SHADER,
    entry: "sgd_step_guarded",
    bindings: &[RO, RW, RW, RW, U],
};
/// Adam behind the skip word. Bindings: grad, param, m, v, guard, params.
pub const ADAM_GUARDED: KernelSpec = KernelSpec {
    shader: SHADER,
    entry: "adam_step_guarded",
    bindings: &[RO, RW, RW, RW, RW, U],
};
/// AdamW behind the skip word. Bindings: grad, param, m, v, guard, params.
pub const ADAMW_GUARDED: KernelSpec = KernelSpec {
    shader: SHADER,
    entry: "adamw_step_guarded",
    bindings: &[RO, RW, RW, RW, RW, U],
};
/// RMSprop behind the skip word. Bindings: grad, param, mean square, guard, params.
pub const RMSPROP_GUARDED: KernelSpec = KernelSpec {
    shader: SHADER,
    entry: "rmsprop_step_guarded",
    bindings: &[RO, RW, RW, RW, U],
};

/// Gradient accumulation: `acc = a·acc + b·grad`. Bindings: grad, acc, params.
pub const ACCUMULATE: KernelSpec = KernelSpec {
    shader: SHADER,
    entry: "accumulate_step",
    bindings: &[RO, RW, U],
};

/// Every entry point of this family.
pub const KERNELS: &[KernelSpec] = &[
    SGD,
    ADAM,
    ADAMW,
    RMSPROP,
    ACCUMULATE,
    SGD_GUARDED,
    ADAM_GUARDED,
    ADAMW_GUARDED,
    RMSPROP_GUARDED,
];

/// Mirrors `AccParams` in optim.wgsl.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
pub struct AccParams {
    /// Element count (0: the dispatch does nothing).
    pub n: u32,
    /// What the accumulator keeps: 0 on a cycle's first batch, 1 after.
    pub a: f32,
    /// What a batch's gradient adds: 1 / batches per cycle.
    pub b: f32,
    /// Padding to 16 bytes.
    pub _pad: u32,
}

/// Records `acc = a·acc + b·grad` over `n` elements (the uniform, read from the step table
/// when captured, says `a` and `b` each step).
pub fn accumulate(
    rec: &mut dyn Record,
    grad: &wgpu::Buffer,
    acc: &wgpu::Buffer,
    n: usize,
    p: AccParams,
) -> Result<()> {
    let pipe = rec.pipeline(&ACCUMULATE, &[])?;
    let bytes = (n as u64 * 4).div_ceil(16) * 16;
    if let Some(small) = [grad, acc].into_iter().find(|b| b.size() < bytes) {
        return Err(Error::InvalidArgument {
            op: "gradient accumulation",
            name: "buffers",
            expected: format!("at least {bytes} bytes (n rounded up to 4 elements)"),
            found: format!("{} bytes", small.size()),
        });
    }
    rec.declare_work(2.0 * n as f64, (n * 12) as f64);
    let groups = grid_1d(
        (n as u64).div_ceil(4),
        256,
        rec.device().info().limits.max_workgroups_per_dimension,
    );
    rec.dispatch(
        &pipe,
        &[(grad, bytes), (acc, bytes)],
        Some(bytemuck::bytes_of(&p)),
        groups,
    )
}

/// Mirrors `OptParams` in optim_rule.wgsl.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
pub struct Params {
    /// Element count.
    pub n: u32,
    /// Learning rate.
    pub lr: f32,
    /// Adam β1.
    pub beta1: f32,
    /// Adam β2.
    pub beta2: f32,
    /// ε.
    pub eps: f32,
    /// Weight decay (L2 for SGD/Adam/RMSprop, decoupled for AdamW).
    pub weight_decay: f32,
    /// Adam: `lr / (1 − β1^t)`.
    pub step_size: f32,
    /// Adam: `sqrt(1 − β2^t)`.
    pub bc2_sqrt: f32,
    /// SGD momentum μ.
    pub momentum: f32,
    /// SGD: 1 for Nesterov momentum.
    pub nesterov: u32,
    /// RMSprop ρ.
    pub rho: f32,
    /// Adam: `1 − β1`, computed in f64 (in f32 on the device, `1 − 0.999f32` is off by 1.3e-5).
    pub one_minus_beta1: f32,
    /// Adam: `1 − β2`, computed in f64.
    pub one_minus_beta2: f32,
    /// RMSprop: `1 − ρ`, computed in f64.
    pub one_minus_rho: f32,
    /// Padding to 64 bytes.
    pub _pad: [u32; 2],
}

/// The uniform of `rule`'s step `t` (1-based) over `n` elements, scalars computed in f64
/// (bias corrections, and `1 − β` exactly: in f32 on the device `1 − 0.999f32` is off by
/// 1.3e-5 relative).
pub fn params(rule: &Rule, n: usize, t: u64) -> Params {
    let mut p = Params {
        n: n as u32,
        ..Default::default()
    };
    match *rule {
        Rule::Sgd {
            lr,
            momentum,
            nesterov,
            weight_decay,
        } => {
            p.lr = lr as f32;
            p.momentum = momentum as f32;
            p.nesterov = nesterov as u32;
            p.weight_decay = weight_decay as f32;
        }
        Rule::Adam {
            lr,
            beta1,
            beta2,
            eps,
            weight_decay,
            ..
        } => {
            let t = t.max(1) as i32;
            p.lr = lr as f32;
            p.beta1 = beta1 as f32;
            p.beta2 = beta2 as f32;
            p.one_minus_beta1 = (1.0 - beta1) as f32;
            p.one_minus_beta2 = (1.0 - beta2) as f32;
            p.eps = eps as f32;
            p.weight_decay = weight_decay as f32;
            p.step_size = (lr / (1.0 - beta1.powi(t))) as f32;
            p.bc2_sqrt = (1.0 - beta2.powi(t)).sqrt() as f32;
        }
        Rule::RmsProp {
            lr,
            rho,
            eps,
            weight_decay,
        } => {
            p.lr = lr as f32;
            p.rho = rho as f32;
            p.one_minus_rho = (1.0 - rho) as f32;
            p.eps = eps as f32;
            p.weight_decay = weight_decay as f32;
        }
    }
    p
}

/// The rule's code in `optim_rule.wgsl` (1 SGD, 2 Adam, 3 AdamW, 4 RMSprop).
pub fn rule_code(rule: &Rule) -> u32 {
    match rule {
        Rule::Sgd { .. } => 1,
        Rule::Adam {
            decoupled: false, ..
        } => 2,
        Rule::Adam { .. } => 3,
        Rule::RmsProp { .. } => 4,
    }
}

fn spec(rule: &Rule, guarded: bool) -> &'static KernelSpec {
    match (rule, guarded) {
        (Rule::Sgd { .. }, true) => &SGD_GUARDED,
        (
            Rule::Adam {
                decoupled: false, ..
            },
            true,
        ) => &ADAM_GUARDED,
        (Rule::Adam { .. }, true) => &ADAMW_GUARDED,
        (Rule::RmsProp { .. }, true) => &RMSPROP_GUARDED,
        (rule, false) => spec_plain(rule),
    }
}

fn spec_plain(rule: &Rule) -> &'static KernelSpec {
    match rule {
        Rule::Sgd { .. } => &SGD,
        Rule::Adam {
            decoupled: false, ..
        } => &ADAM,
        Rule::Adam {
            decoupled: true, ..
        } => &ADAMW,
        Rule::RmsProp { .. } => &RMSPROP,
    }
}

/// Records one update of `param` (n elements, buffers of at least `n` rounded up to 4
/// elements, as pool buffers are) from `grad`, with `state` buffers
/// ([`Rule::state_count`] of them, zero-initialised before step 1) at step `t` (1-based).
pub fn step(
    rec: &mut dyn Record,
    rule: &Rule,
    grad: &wgpu::Buffer,
    param: &wgpu::Buffer,
    state: &[&wgpu::Buffer],
    n: usize,
    t: u64,
) -> Result<()> {
    step_guarded(rec, rule, grad, param, state, n, t, None)
}

/// [`step`] behind a skip word: with `guard` (the loss-scale state,
/// [`crate::kernels::loss_scale`]), the update does nothing on a step whose word 2 is set
/// (its gradients were not finite), leaving the parameter and its state as they were.
#[allow(clippy::too_many_arguments)] // an update's inputs, spelled out
pub fn step_guarded(
    rec: &mut dyn Record,
    rule: &Rule,
    grad: &wgpu::Buffer,
    param: &wgpu::Buffer,
    state: &[&wgpu::Buffer],
    n: usize,
    t: u64,
    guard: Option<&wgpu::Buffer>,
) -> Result<()> {
    let dev = rec.device().clone();
    if state.len() != rule.state_count() {
        return Err(Error::InvalidArgument {
            op: "optimizer step",
            name: "state",
            expected: format!("{} state buffers", rule.state_count()),
            found: state.len().to_string(),
        });
    }
    let pipe = rec.pipeline(spec(rule, guard.is_some()), &[])?;
    let p = params(rule, n, t);
    // Four elements per invocation; bindings rounded up to whole vec4s (pool buffers have
    // room: buckets are multiples of 64 bytes).
    let bytes = (n as u64 * 4).div_ceil(16) * 16;
    let all = [grad, param].into_iter().chain(state.iter().copied());
    if let Some(small) = all.clone().find(|b| b.size() < bytes) {
        return Err(Error::InvalidArgument {
            op: "optimizer step",
            name: "buffers",
            expected: format!("at least {bytes} bytes (n rounded up to 4 elements)"),
            found: format!("{} bytes", small.size()),
        });
    }
    let mut bufs: Vec<(&wgpu::Buffer, u64)> = all.map(|b| (b, bytes)).collect();
    if let Some(g) = guard {
        let words = 4 * crate::kernels::loss_scale::STATE_WORDS as u64;
        if g.size() < words {
            return Err(Error::InvalidArgument {
                op: "optimizer step",
                name: "guard",
                expected: format!("a loss-scale state of at least {words} bytes"),
                found: format!("{} bytes", g.size()),
            });
        }
        bufs.push((g, words));
    }
    // Gradient read; parameter and every state read and written.
    rec.declare_work(0.0, (n * 4 * (1 + 2 * (1 + state.len()))) as f64);
    let groups = grid_1d(
        (n as u64).div_ceil(4),
        256,
        dev.info().limits.max_workgroups_per_dimension,
    );
    rec.dispatch(&pipe, &bufs, Some(bytemuck::bytes_of(&p)), groups)
}
