//! Power-of-two FFTs over rows of complex64 values (`shaders/array_fft.wgsl`): a Stockham
//! autosort network of radix-4 passes (and one radix-2 pass when log2 n is odd), one
//! dispatch per pass, all passes in one submission.
//! `array::fft` builds every transform (any length, any axis, real input) on it.
//!
//! Why Stockham: each pass reads one buffer and writes the other in natural order, so
//! there is no bit-reversal permutation and every pass is the same simple kernel; each
//! invocation does one butterfly, keeping loops out of the shader (llvmpipe caps them).

use crate::error::{Error, Result};
use crate::exec::dispatch::Record;
use crate::services::pipeline::{grid_1d, Access, KernelSpec, Shader};

/// `shaders/array_fft.wgsl`.
pub const SHADER: Shader = crate::services::pipeline::shader!("array_fft");

use Access::{ReadOnly as RO, ReadWrite as RW, Uniform as U};

/// One radix-2 pass.
pub const RADIX2: KernelSpec = KernelSpec {
    shader: SHADER,
    entry: "fft_radix2",
    bindings: &[RO, RO, RW, U],
};
/// One radix-4 pass.
pub const RADIX4: KernelSpec = KernelSpec {
    shader: SHADER,
    entry: "fft_radix4",
    bindings: &[RO, RO, RW, U],
};
/// Every kernel of the family.
pub const KERNELS: &[KernelSpec] = &[RADIX2, RADIX4];

#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    rows: u32,
    log_n: u32,
    log_s: u32,
    inverse: u32,
}

/// The twiddle table of a length-`n` transform: `exp(-2πi·k/n)` for `k < n/2`, as
/// interleaved f32 (real, imaginary), each computed in f64 from the exact fraction `k/n`
/// and rounded once.
pub fn twiddles(n: usize) -> Vec<f32> {
    let mut t = Vec::with_capacity(n.max(2));
    for k in 0..(n / 2).max(1) {
        let a = -2.0 * std::f64::consts::PI * (k as f64 / n as f64);
        t.push(a.cos() as f32);
        t.push(a.sin() as f32);
    }
    t
}

/// Records the transform of `rows` rows of `n` complex values (`n` a power of two) held in
/// `a` (row-major, from its start), using `b` (as large) as the other half of the ping-pong
/// and `tw` (`twiddles(n)`). Unnormalized; `inverse` flips the twiddles' sign. Returns true
/// when the result is in `b`, false when in `a` (an even number of passes).
pub fn record(
    rec: &mut dyn Record,
    a: &wgpu::Buffer,
    b: &wgpu::Buffer,
    tw: &wgpu::Buffer,
    rows: usize,
    n: usize,
    inverse: bool,
) -> Result<bool> {
    if !n.is_power_of_two() {
        return Err(Error::InvalidArgument {
            op: "fft",
            name: "n",
            expected: "a power of two (array::fft handles other lengths)".into(),
            found: n.to_string(),
        });
    }
    let log_n = n.trailing_zeros();
    let total = rows * n / 2;
    if total == 0 || log_n == 0 {
        return Ok(false);
    }
    if total > u32::MAX as usize / 2 {
        return Err(Error::InvalidArgument {
            op: "fft",
            name: "shape",
            expected: "fewer than 2^32 elements".into(),
            found: format!("{rows} rows of {n}"),
        });
    }
    let bytes = (rows * n * 8) as u64;
    let tw_bytes = (n.max(2) / 2 * 8) as u64;
    let max = rec.device().info().limits.max_workgroups_per_dimension;
    let radix2 = rec.pipeline(&RADIX2, &[])?;
    let radix4 = rec.pipeline(&RADIX4, &[])?;
    let (mut src, mut dst) = (a, b);
    let mut log_s = 0;
    let mut passes = 0;
    // Radix-4 passes while four or more points remain per sub-transform, then one radix-2
    // pass when log2(n) is odd.
    while log_s < log_n {
        let four = log_n - log_s >= 2;
        let prm = Params {
            rows: rows as u32,
            log_n,
            log_s,
            inverse: inverse as u32,
        };
        let (pipe, invocations) = if four {
            (&radix4, total / 2)
        } else {
            (&radix2, total)
        };
        rec.declare_work((total * 10) as f64, (rows * n * 16) as f64);
        rec.dispatch(
            pipe,
            &[(src, bytes), (tw, tw_bytes), (dst, bytes)],
            Some(bytemuck::bytes_of(&prm)),
            grid_1d(invocations as u64, 256, max),
        )?;
        std::mem::swap(&mut src, &mut dst);
        log_s += if four { 2 } else { 1 };
        passes += 1;
    }
    Ok(passes % 2 == 1)
}
