//! `shaders/optim.wgsl`: fused optimizer steps. Step scalars are computed here in f64.
//!
//! The rules live in the `optim_rule.wgsl` prelude, shared with the matmul epilogue that
//! applies them to a weight while computing its gradient
//! ([`Epilogue::Update`](crate::kernels::matmul::Epilogue::Update)).
//! Formulas (also in the WGSL prelude): SGD with momentum, Nesterov and weight decay as in
//! `torch.optim.SGD`; Adam (Kingma & Ba 2015) with L2 decay as in `torch.optim.Adam`; AdamW
//! (Loshchilov & Hutter 2019); RMSprop (Tieleman & Hinton 2012) as in Keras, without momentum.

use crate::kernel::{grid_1d, Access, KernelSpec, Recorder, Shader};
use crate::Result;

/// optim.wgsl.
pub const SHADER: Shader = crate::shader!("optim" after "optim_rule");

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

/// Every entry point of this family.
pub const KERNELS: &[KernelSpec] = &[SGD, ADAM, ADAMW, RMSPROP];

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

/// An optimizer's update rule and hyper-parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Rule {
    /// SGD.
    Sgd {
        /// Learning rate.
        lr: f64,
        /// Momentum (0: none).
        momentum: f64,
        /// Nesterov momentum.
        nesterov: bool,
        /// L2 weight decay.
        weight_decay: f64,
    },
    /// Adam (`decoupled`: AdamW).
    Adam {
        /// Learning rate.
        lr: f64,
        /// β1.
        beta1: f64,
        /// β2.
        beta2: f64,
        /// ε.
        eps: f64,
        /// Weight decay.
        weight_decay: f64,
        /// Decoupled weight decay (AdamW).
        decoupled: bool,
    },
    /// RMSprop.
    RmsProp {
        /// Learning rate.
        lr: f64,
        /// ρ.
        rho: f64,
        /// ε.
        eps: f64,
        /// L2 weight decay.
        weight_decay: f64,
    },
}

impl Rule {
    /// Number of state buffers (each the size of the parameter) the rule needs.
    pub fn state_count(&self) -> usize {
        match self {
            Rule::Sgd { .. } | Rule::RmsProp { .. } => 1,
            Rule::Adam { .. } => 2,
        }
    }

    /// The uniform for step `t` (1-based) over `n` elements, scalars computed in f64.
    pub fn params(&self, n: usize, t: u64) -> Params {
        let mut p = Params {
            n: n as u32,
            ..Default::default()
        };
        match *self {
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
    pub fn code(&self) -> u32 {
        match self {
            Rule::Sgd { .. } => 1,
            Rule::Adam {
                decoupled: false, ..
            } => 2,
            Rule::Adam { .. } => 3,
            Rule::RmsProp { .. } => 4,
        }
    }

    fn spec(&self) -> &'static KernelSpec {
        match self {
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
}

/// Records one update of `param` (n elements, buffers of at least `n` rounded up to 4
/// elements, as pool buffers are) from `grad`, with `state` buffers
/// ([`Rule::state_count`] of them, zero-initialised before step 1) at step `t` (1-based).
pub fn step(
    rec: &mut Recorder<'_>,
    rule: &Rule,
    grad: &wgpu::Buffer,
    param: &wgpu::Buffer,
    state: &[&wgpu::Buffer],
    n: usize,
    t: u64,
) -> Result<()> {
    let dev = rec.device();
    if state.len() != rule.state_count() {
        return Err(crate::Error::InvalidArgument {
            op: "optimizer step",
            name: "state",
            expected: format!("{} state buffers", rule.state_count()),
            found: state.len().to_string(),
        });
    }
    let pipe = rec.pipeline(rule.spec(), &[])?;
    let p = rule.params(n, t);
    // Four elements per invocation; bindings rounded up to whole vec4s (pool buffers have
    // room: buckets are multiples of 64 bytes).
    let bytes = (n as u64 * 4).div_ceil(16) * 16;
    let all = [grad, param].into_iter().chain(state.iter().copied());
    if let Some(small) = all.clone().find(|b| b.size() < bytes) {
        return Err(crate::Error::InvalidArgument {
            op: "optimizer step",
            name: "buffers",
            expected: format!("at least {bytes} bytes (n rounded up to 4 elements)"),
            found: format!("{} bytes", small.size()),
        });
    }
    let bufs: Vec<(&wgpu::Buffer, u64)> = all.map(|b| (b, bytes)).collect();
    // Gradient read; parameter and every state read and written.
    rec.declare_work(0.0, (n * 4 * (1 + 2 * (1 + state.len()))) as f64);
    let groups = grid_1d(
        (n as u64).div_ceil(4),
        256,
        dev.info().limits.max_workgroups_per_dimension,
    );
    rec.dispatch(&pipe, &bufs, Some(bytemuck::bytes_of(&p)), groups)
}
