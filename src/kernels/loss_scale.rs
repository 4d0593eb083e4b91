//! `shaders/loss_scale.wgsl`: dynamic loss scaling on the device (Keras's
//! `LossScaleOptimizer`): the loss's seed gradient multiplied by the current scale, every
//! gradient checked for inf/NaN, one single-invocation update of the scale, and the gradients
//! multiplied by this step's 1/scale. The scale lives in a small state buffer ([`STATE_WORDS`]
//! u32 words, layout in the shader), so nothing is read back or written by the host per step.

use crate::error::{Error, Result};
use crate::exec::dispatch::Record;
use crate::services::pipeline::{grid_1d, Access, KernelSpec, Shader};

/// loss_scale.wgsl (no prelude).
pub const SHADER: Shader = crate::services::pipeline::shader!("loss_scale");

use Access::{ReadOnly as RO, ReadWrite as RW, Uniform as U};

/// `x *= f32(state[slot])` in place. Bindings: state, x, params.
pub const SCALE: KernelSpec = KernelSpec {
    shader: SHADER,
    entry: "scale_forward",
    bindings: &[RO, RW, U],
};
/// `state[OVERFLOW] |= any(x is inf or NaN)`. Bindings: x, state, params.
pub const CHECK: KernelSpec = KernelSpec {
    shader: SHADER,
    entry: "check_forward",
    bindings: &[RO, RW, U],
};
/// The step's skip decision and the scale's update (one invocation). Bindings: state.
pub const UPDATE: KernelSpec = KernelSpec {
    shader: SHADER,
    entry: "update_forward",
    bindings: &[RW],
};

/// Every entry point of this family.
pub const KERNELS: &[KernelSpec] = &[SCALE, CHECK, UPDATE];

/// Words of the state buffer. The word indices below are the shader's `*_WORD` constants
/// (loss_scale.wgsl, and `SKIP_WORD` in optim.wgsl); the `words_match_the_shaders` test
/// checks they agree.
pub const STATE_WORDS: usize = 8;
/// State word: the current scale (f32 bits).
pub const SCALE_WORD: usize = 0;
/// State word: this step's unscale factor, 1/scale (f32 bits).
pub const UNSCALE_WORD: usize = 1;
/// State word: 1 when this step is skipped (read by the guarded optimizer entry points).
pub const SKIP_WORD: usize = 2;
/// State word: clean steps since the scale last changed.
pub const CLEAN_WORD: usize = 3;
/// State word: skipped steps in all.
pub const SKIPPED_WORD: usize = 4;
/// State word: 1 when a gradient of this step is not finite (the check's atomic OR, cleared
/// by the update).
pub const OVERFLOW_WORD: usize = 5;
/// State word: the growth interval.
pub const GROWTH_WORD: usize = 6;
/// State word: 1 when the scale is dynamic.
pub const DYNAMIC_WORD: usize = 7;

/// Mirrors `Params` in loss_scale.wgsl.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
pub struct Params {
    /// Elements of the tensor.
    pub n: u32,
    /// The state word multiplying (scale).
    pub slot: u32,
    /// Padding to 16 bytes.
    pub _pad: [u32; 2],
}

fn check_state(state: &wgpu::Buffer) -> Result<()> {
    if state.size() < 4 * STATE_WORDS as u64 {
        return Err(Error::InvalidArgument {
            op: "loss scaling",
            name: "state",
            expected: format!("a state buffer of at least {} bytes", 4 * STATE_WORDS),
            found: format!("{} bytes", state.size()),
        });
    }
    Ok(())
}

/// Records `x[..n] *= f32(state[slot])`: [`SCALE_WORD`] scales the loss's seed gradient,
/// [`UNSCALE_WORD`] unscales a gradient.
pub fn scale(
    rec: &mut dyn Record,
    state: &wgpu::Buffer,
    x: &wgpu::Buffer,
    n: usize,
    slot: usize,
) -> Result<()> {
    check_state(state)?;
    if n == 0 {
        return Ok(());
    }
    let pipe = rec.pipeline(&SCALE, &[])?;
    let p = Params {
        n: n as u32,
        slot: slot as u32,
        ..Default::default()
    };
    let groups = grid_1d(
        n as u64,
        256,
        rec.device().info().limits.max_workgroups_per_dimension,
    );
    rec.declare_work(n as f64, 8.0 * n as f64);
    rec.dispatch(
        &pipe,
        &[(state, 4 * STATE_WORDS as u64), (x, 4 * n as u64)],
        Some(bytemuck::bytes_of(&p)),
        groups,
    )
}

/// Records the finiteness check of `x[..n]` into `state`'s overflow flag.
pub fn check(rec: &mut dyn Record, x: &wgpu::Buffer, n: usize, state: &wgpu::Buffer) -> Result<()> {
    check_state(state)?;
    if n == 0 {
        return Ok(());
    }
    let pipe = rec.pipeline(&CHECK, &[])?;
    let p = Params {
        n: n as u32,
        ..Default::default()
    };
    let groups = grid_1d(
        n as u64,
        256,
        rec.device().info().limits.max_workgroups_per_dimension,
    );
    rec.declare_work(n as f64, 4.0 * n as f64);
    rec.dispatch(
        &pipe,
        &[(x, 4 * n as u64), (state, 4 * STATE_WORDS as u64)],
        Some(bytemuck::bytes_of(&p)),
        groups,
    )
}

/// Records the step's update of `state` (after every [`check`]).
pub fn update(rec: &mut dyn Record, state: &wgpu::Buffer) -> Result<()> {
    check_state(state)?;
    let pipe = rec.pipeline(&UPDATE, &[])?;
    rec.declare_work(4.0, 64.0);
    rec.dispatch(&pipe, &[(state, 4 * STATE_WORDS as u64)], None, [1, 1, 1])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each `*_WORD` constant equals the shaders' constant of the same name.
    #[test]
    fn words_match_the_shaders() {
        let words = [
            ("SCALE_WORD", SCALE_WORD),
            ("UNSCALE_WORD", UNSCALE_WORD),
            ("SKIP_WORD", SKIP_WORD),
            ("CLEAN_WORD", CLEAN_WORD),
            ("SKIPPED_WORD", SKIPPED_WORD),
            ("OVERFLOW_WORD", OVERFLOW_WORD),
            ("GROWTH_WORD", GROWTH_WORD),
            ("DYNAMIC_WORD", DYNAMIC_WORD),
        ];
        let ls = include_str!("../../shaders/loss_scale.wgsl");
        let optim = include_str!("../../shaders/optim.wgsl");
        for (name, w) in words {
            let decl = format!("const {name}: u32 = {w}u;");
            assert!(ls.contains(&decl), "loss_scale.wgsl lacks {decl:?}");
            assert!(w < STATE_WORDS, "{name}");
        }
        assert!(optim.contains(&format!("const SKIP_WORD: u32 = {SKIP_WORD}u;")));
    }
}
