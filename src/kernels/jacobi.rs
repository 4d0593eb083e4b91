//! One-sided (Hestenes) Jacobi on batches of contiguous m×n float32 or float64 matrices
//! (`shaders/array_jacobi.wgsl`, its f64 twin by [`crate::kernels::prelude::f64_twin`]), for the SVD and the symmetric eigensolver of
//! `array::spectral`: sweeps of rotations of column pairs until every pair is orthogonal;
//! A·V then holds U·Σ in its columns and V the right singular vectors.
//!
//! Why one-sided Jacobi: each round is one dispatch of independent workgroups (disjoint
//! column pairs, the round-robin schedule), its loops are short, and it is accurate (the
//! singular values to about ε relative to the largest, the vectors orthogonal to about n·ε
//! for well-separated values) without a bidiagonalisation, which would be a long chain of
//! dependent, poorly parallel steps. It costs O(m·n²) per sweep and about ten sweeps in
//! float32, so it suits small and medium orders; a blocked or two-stage method would serve
//! large ones better. Convergence is quadratic, so float64 costs a few sweeps more than
//! float32 (each at double the bytes), not twice as many.

use crate::error::Result;
use crate::exec::dispatch::Record;
use crate::exec::recorder::Recorder;
use crate::kernels::prelude::f64_twin;
use crate::runtime::Device;
use crate::services::pipeline::{Access, KernelSpec, Shader};
use crate::tensor::Tensor;

/// `shaders/array_jacobi.wgsl`.
pub const SHADER: Shader = crate::services::pipeline::shader!("array_jacobi");

use Access::{ReadWrite as RW, Uniform as U};

/// One round of rotations.
pub const ROUND: KernelSpec = KernelSpec {
    shader: SHADER,
    entry: "jacobi_round",
    bindings: &[RW, RW, RW, U],
};
/// Every kernel of the family.
pub const KERNELS: &[KernelSpec] = &[ROUND];

/// [`ROUND`] in float64.
pub fn round_f64() -> Result<&'static KernelSpec> {
    static CELL: std::sync::OnceLock<KernelSpec> = std::sync::OnceLock::new();
    f64_twin(&ROUND, "array_jacobi_f64", &CELL)
}

/// The most sweeps: both precisions converge in well under this (quadratically, once the
/// off-diagonal mass is small). A float32 batch that has not is used as it is then (its
/// columns orthogonal to within a few ulps of the tolerance); the caller decides for float64.
pub const MAX_SWEEPS: usize = 30;

/// The relative tolerance |a_p·a_q| ≤ tol·‖a_p‖·‖a_q‖ at which a column pair counts as
/// orthogonal: a few float32 ulps (4e-7) in float32; in float64 √m·ε with ε = 2^-52, at
/// least 4ε. LAPACK's dgesvj defaults to √m·2^-53 when it accumulates singular vectors (its
/// DLAMCH('Epsilon') is the unit roundoff 2^-53) and to m·2^-53 for the values alone, without
/// a floor; ours is twice its √m one, and the floor spares tiny orders from chasing the last
/// bit. The reason for √m is dgesvj's: the rounding error of an m-term dot product grows
/// about as √m·ε, and a tolerance below it would keep rotating pairs that are orthogonal to
/// working accuracy.
pub fn tolerance(m: usize, f64: bool) -> f32 {
    if f64 {
        ((m as f64).sqrt().max(4.0) * f64::EPSILON) as f32
    } else {
        4.0e-7
    }
}

/// The eighth root of the smallest squared column norm the kernel rotates:
/// m·MIN_POSITIVE/tol² of the scalar type, above which the underflow of the squares of a column's entries (each
/// losing less than MIN_POSITIVE) moves its squared norm by at most tol² of itself (the
/// shader's comment says why that matters). Tied to underflow rather than to ‖A‖, so graded
/// matrices keep their small singular values to full relative accuracy. Passed as an eighth
/// root because the float64 floor (about 1e-277) is far outside float32's range.
pub fn floor8(m: usize, f64: bool) -> f32 {
    let tol = tolerance(m, f64) as f64;
    let min = if f64 {
        f64::MIN_POSITIVE
    } else {
        f32::MIN_POSITIVE as f64
    };
    (m as f64 * min / (tol * tol)).powf(0.125) as f32
}

#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    batch: u32,
    m: u32,
    n: u32,
    round: u32,
    np: u32,
    tol: f32,
    floor8: f32,
    _pad: u32,
}

/// Orthogonalises the columns of `batch` m×n matrices in `a` in place (f32, or f64 when
/// `f64`; each balanced so that its largest magnitude is about 1, as `array::spectral` does;
/// columns whose squared norm is below the underflow floor of [`floor8`] are left as they
/// are), accumulating the rotations into `v` (which must hold `batch` n×n identities);
/// `info` is scratch (`batch` words). Returns the number of sweeps run, or `None` when the
/// last of [`MAX_SWEEPS`] still rotated some pair.
#[allow(clippy::too_many_arguments)]
pub fn orthogonalize(
    device: &Device,
    a: &wgpu::Buffer,
    v: &wgpu::Buffer,
    info: &Tensor,
    batch: usize,
    m: usize,
    n: usize,
    f64: bool,
) -> Result<Option<usize>> {
    if batch == 0 || n < 2 || m == 0 {
        return Ok(Some(0));
    }
    let spec = if f64 { round_f64()? } else { &ROUND };
    let size = if f64 { 8 } else { 4 };
    let np = n + n % 2;
    let pairs = np / 2;
    let max = device.info().limits.max_workgroups_per_dimension;
    let groups_n = batch * pairs;
    let groups = if groups_n as u64 <= max as u64 {
        [groups_n as u32, 1, 1]
    } else {
        [max, groups_n.div_ceil(max as usize) as u32, 1]
    };
    let (aw, vw, iw) = (
        (batch * m * n) as u64 * size,
        (batch * n * n) as u64 * size,
        batch as u64 * 4,
    );
    let zeros = vec![0u32; batch];
    for sweep in 0..MAX_SWEEPS {
        device
            .wgpu_queue()
            .write_buffer(info.buffer(), 0, bytemuck::cast_slice(&zeros));
        let mut rec = Recorder::new(device);
        let pipe = rec.pipeline(spec, &[])?;
        for round in 0..np - 1 {
            let params = Params {
                batch: batch as u32,
                m: m as u32,
                n: n as u32,
                round: round as u32,
                np: np as u32,
                tol: tolerance(m, f64),
                floor8: floor8(m, f64),
                _pad: 0,
            };
            rec.declare_work(
                (batch * pairs * (m + n) * 12) as f64,
                (batch * pairs * (m + n) * 4 * size as usize) as f64,
            );
            rec.dispatch(
                &pipe,
                &[(a, aw), (v, vw), (info.buffer(), iw)],
                Some(bytemuck::bytes_of(&params)),
                groups,
            )?;
        }
        rec.submit()?;
        let rotated = info.to_vec()?;
        if rotated.iter().take(batch).all(|w| w.to_bits() == 0) {
            return Ok(Some(sweep + 1));
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The floor's eighth root is a normal float32 for every order, and its eighth power in
    /// the scalar type is m·MIN_POSITIVE/tol² (float64's about 1e-277).
    #[test]
    fn the_underflow_floor_survives_its_float32_eighth_root() {
        for m in [1usize, 2, 15, 16, 17, 1000, 1 << 20] {
            for f64 in [false, true] {
                let r = floor8(m, f64);
                assert!(r.is_normal(), "m {m} f64 {f64}: {r:e}");
                let tol = tolerance(m, f64) as f64;
                let min = if f64 {
                    f64::MIN_POSITIVE
                } else {
                    f32::MIN_POSITIVE as f64
                };
                let want = m as f64 * min / (tol * tol);
                let got = (r as f64).powi(8);
                assert!(
                    (got / want - 1.0).abs() < 1e-5,
                    "m {m} f64 {f64}: {got:e} {want:e}"
                );
            }
        }
        assert!((floor8(64, true) as f64).powi(8) < 1e-276);
    }
}
