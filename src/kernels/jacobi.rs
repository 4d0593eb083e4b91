//! One-sided (Hestenes) Jacobi on batches of contiguous m×n float32 matrices
//! (`shaders/array_jacobi.wgsl`), for the SVD and the symmetric eigensolver of
//! `array::spectral`: sweeps of rotations of column pairs until every pair is orthogonal;
//! A·V then holds U·Σ in its columns and V the right singular vectors.
//!
//! Why one-sided Jacobi: each round is one dispatch of independent workgroups (disjoint
//! column pairs, the round-robin schedule), its loops are short, and it is accurate (the
//! singular values to about ε relative to the largest, the vectors orthogonal to about n·ε
//! for well-separated values) without a bidiagonalisation, which would be a long chain of
//! dependent, poorly parallel steps. It costs O(m·n²) per sweep and about ten sweeps in
//! float32, so it suits small and medium orders; a blocked or two-stage method would serve
//! large ones better.

use crate::error::Result;
use crate::exec::dispatch::Record;
use crate::exec::recorder::Recorder;
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

/// The most sweeps: float32 converges in well under this; a batch that has not is used as it
/// is then (its columns orthogonal to within a few ulps of the tolerance).
pub const MAX_SWEEPS: usize = 30;

#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    batch: u32,
    m: u32,
    n: u32,
    round: u32,
    np: u32,
    _pad: [u32; 3],
}

/// Orthogonalises the columns of `batch` m×n matrices in `a` in place, accumulating the
/// rotations into `v` (which must hold `batch` n×n identities); `info` is scratch (`batch`
/// words). Returns the number of sweeps run.
pub fn orthogonalize(
    device: &Device,
    a: &wgpu::Buffer,
    v: &wgpu::Buffer,
    info: &Tensor,
    batch: usize,
    m: usize,
    n: usize,
) -> Result<usize> {
    if batch == 0 || n < 2 || m == 0 {
        return Ok(0);
    }
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
        (batch * m * n) as u64 * 4,
        (batch * n * n) as u64 * 4,
        batch as u64 * 4,
    );
    let zeros = vec![0u32; batch];
    for sweep in 0..MAX_SWEEPS {
        device
            .wgpu_queue()
            .write_buffer(info.buffer(), 0, bytemuck::cast_slice(&zeros));
        let mut rec = Recorder::new(device);
        let pipe = rec.pipeline(&ROUND, &[])?;
        for round in 0..np - 1 {
            let params = Params {
                batch: batch as u32,
                m: m as u32,
                n: n as u32,
                round: round as u32,
                np: np as u32,
                _pad: [0; 3],
            };
            rec.declare_work(
                (batch * pairs * (m + n) * 12) as f64,
                (batch * pairs * (m + n) * 16) as f64,
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
            return Ok(sweep + 1);
        }
    }
    Ok(MAX_SWEEPS)
}
