//! Discrete Fourier transforms of arrays (NumPy's `numpy.fft`, the standard's `fft`
//! extension): complex-to-complex along one axis (`fft`, `ifft`), real input (`rfft`) and
//! Hermitian input giving real output (`irfft`), each with `n` (truncate or zero-pad) and the
//! standard's `norm`. The n-dimensional forms and the helpers are compositions of these
//! (the Python face builds them).
//!
//! The axis is moved last with a copy, so every transform runs over contiguous rows, batched
//! over the other axes. Power-of-two lengths run the Stockham kernels of
//! `kernels::fft` (radix 4, and one radix-2 pass for odd log2 n: ⌈log2(n)/2⌉ dispatches). Other lengths use Bluestein's chirp-z identity,
//! `X_k = w_k · Σ_j (x_j w_j) · conj(w_{k-j})` with `w_k = exp(∓πi k²/n)`, a convolution done
//! with power-of-two FFTs of length `M ≥ 2n - 1`; the chirp is computed on the host in f64
//! from `k² mod 2n` (exact integers), so its angle never loses precision as `k` grows. The
//! elementwise steps (the chirp products, the spectrum product, the scaling) are ordinary
//! array expressions.

use crate::array::array::{Array, Strided};
use crate::array::dtype::DType;
use crate::array::eval::alloc_words;
use crate::array::layout::{Index, Layout};
use crate::array::ops::{Binary, Unary};
use crate::array::reduce::normalize_axes;
use crate::error::{Error, Result};
use crate::exec::recorder::Recorder;
use crate::kernels::fft::{record, twiddles};
use crate::runtime::Device;
use crate::tensor::Tensor;

/// Which direction carries the `1/n` (the standard's `norm`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Norm {
    /// The inverse transform divides by `n` (the default).
    Backward,
    /// Both divide by `√n`.
    Ortho,
    /// The forward transform divides by `n`.
    Forward,
}

impl Norm {
    /// The norm of its name (`"backward"`, `"ortho"`, `"forward"`).
    pub fn from_name(name: &str) -> Result<Norm> {
        match name {
            "backward" => Ok(Norm::Backward),
            "ortho" => Ok(Norm::Ortho),
            "forward" => Ok(Norm::Forward),
            _ => Err(Error::InvalidArgument {
                op: "fft",
                name: "norm",
                expected: "\"backward\", \"ortho\" or \"forward\"".into(),
                found: format!("{name:?}"),
            }),
        }
    }

    /// The factor a transform of length `n` applies.
    fn scale(self, n: usize, inverse: bool) -> f64 {
        match (self, inverse) {
            (Norm::Ortho, _) => 1.0 / (n as f64).sqrt(),
            (Norm::Backward, true) | (Norm::Forward, false) => 1.0 / n as f64,
            _ => 1.0,
        }
    }
}

impl Array {
    /// The discrete Fourier transform along `axis`, of length `n` (the input truncated or
    /// zero-padded; its length when None). Real input is taken as complex; the result is
    /// complex64.
    pub fn fft(&self, n: Option<usize>, axis: isize, norm: Norm) -> Result<Array> {
        c2c(self, n, axis, norm, false, "fft")
    }

    /// The inverse of `fft`.
    pub fn ifft(&self, n: Option<usize>, axis: isize, norm: Norm) -> Result<Array> {
        c2c(self, n, axis, norm, true, "ifft")
    }

    /// The transform of real input: the `n/2 + 1` non-negative frequencies (the rest are
    /// their conjugates). Complex input is refused, as the standard says.
    pub fn rfft(&self, n: Option<usize>, axis: isize, norm: Norm) -> Result<Array> {
        if self.dtype().is_complex() {
            return Err(Error::DType {
                op: "rfft",
                expected: "a real dtype (fft takes complex input)".into(),
                found: self.dtype().name().into(),
            });
        }
        let full = c2c(self, n, axis, norm, false, "rfft")?;
        let axis = normalize_axes("rfft", self.ndim(), Some(&[axis]))?[0];
        let keep = full.shape()[axis] / 2 + 1;
        full.index(&slice_along(full.ndim(), axis, 0, keep, 1))
    }

    /// The inverse of `rfft`: real output of length `n` (default `2·(m - 1)` for `m` input
    /// values along `axis`) from the non-negative frequencies, the others taken as their
    /// conjugates (the imaginary parts of the zero and Nyquist frequencies are ignored).
    pub fn irfft(&self, n: Option<usize>, axis: isize, norm: Norm) -> Result<Array> {
        let (moved, axis, inverse_perm) = self.axis_last(axis, "irfft")?;
        let m = self.shape()[axis];
        let n = match n {
            Some(n) => n,
            None => 2 * m.saturating_sub(1),
        };
        check_n("irfft", n)?;
        let half = n / 2 + 1;
        let x = resize_last(&moved.astype(DType::Complex64)?, half)?;
        let mut shape = x.shape().to_vec();
        let last = shape.len() - 1;
        shape[last] = n;
        let full = Array::zeros(self.device(), &shape, DType::Complex64)?;
        full.index(&slice_along(shape.len(), last, 0, half, 1))?
            .assign(&x)?;
        let tail = (n - 1) / 2;
        if tail > 0 {
            // X[n-k] = conj(X[k]) for k = 1..=tail, written at n - tail .. n.
            let mirrored = x
                .index(&[
                    Index::Ellipsis,
                    Index::Slice {
                        start: Some(tail as isize),
                        stop: Some(0),
                        step: Some(-1),
                    },
                ])?
                .unary(Unary::Conj)?;
            full.index(&slice_along(shape.len(), last, half, n, 1))?
                .assign(&mirrored)?;
        }
        let rows = transform_last(&full, n, true)?;
        rows.permute_dims(&inverse_perm)?
            .unary(Unary::Real)?
            .binary_scalar(Binary::Multiply, norm.scale(n, true).into())
    }
}

/// `fft`/`ifft`: the axis moved last, resized to `n`, transformed, moved back and scaled.
fn c2c(
    x: &Array,
    n: Option<usize>,
    axis: isize,
    norm: Norm,
    inverse: bool,
    op: &'static str,
) -> Result<Array> {
    if x.dtype() == DType::Float64 || x.dtype().is_wide_int() {
        // The transforms run in complex64: float64 and 64-bit integer input is refused,
        // never rounded.
        return Err(Error::DType {
            op,
            expected: "a dtype other than float64, int64 or uint64 (the transforms run in complex64; complex128 is not supported yet)".into(),
            found: x.dtype().name().into(),
        });
    }
    let (moved, axis, inverse_perm) = x.axis_last(axis, op)?;
    let n = n.unwrap_or(x.shape()[axis]);
    check_n(op, n)?;
    let moved = resize_last(&moved.astype(DType::Complex64)?, n)?;
    let out = transform_last(&moved, n, inverse)?.permute_dims(&inverse_perm)?;
    let s = norm.scale(n, inverse);
    if s == 1.0 {
        Ok(out)
    } else {
        out.binary_scalar(Binary::Multiply, s.into())
    }
}

fn check_n(op: &'static str, n: usize) -> Result<()> {
    if n == 0 || n > i32::MAX as usize {
        return Err(Error::InvalidArgument {
            op,
            name: "n",
            expected: "a number of data points >= 1".into(),
            found: n.to_string(),
        });
    }
    Ok(())
}

/// Index entries selecting `start..stop` by `step` along `axis` of an `ndim`-axis array.
fn slice_along(ndim: usize, axis: usize, start: usize, stop: usize, step: isize) -> Vec<Index> {
    let mut idx = vec![
        Index::Slice {
            start: None,
            stop: None,
            step: None
        };
        ndim
    ];
    idx[axis] = Index::Slice {
        start: Some(start as isize),
        stop: Some(stop as isize),
        step: Some(step),
    };
    idx
}

/// `x` (complex64) truncated or zero-padded to `n` along its last axis (a view when it
/// shrinks or keeps its length).
fn resize_last(x: &Array, n: usize) -> Result<Array> {
    let last = x.ndim() - 1;
    let len = x.shape()[last];
    if n <= len {
        return x.index(&slice_along(x.ndim(), last, 0, n, 1));
    }
    let mut shape = x.shape().to_vec();
    shape[last] = n;
    let out = Array::zeros(x.device(), &shape, DType::Complex64)?;
    out.index(&slice_along(shape.len(), last, 0, len, 1))?
        .assign(x)?;
    Ok(out)
}

/// The unnormalized transform of complex64 `x` along its last axis (of length `n`): a new
/// contiguous array of `x`'s shape.
fn transform_last(x: &Array, n: usize, inverse: bool) -> Result<Array> {
    let shape = x.shape().to_vec();
    let rows = x.size() / n.max(1);
    let device = x.device().clone();
    if rows > 0 && !n.is_power_of_two() {
        return bluestein(x, rows, n, inverse);
    }
    let data = x.copy()?.strided()?.data;
    if rows == 0 {
        return Ok(from_rows(&device, data, &shape));
    }
    let out = pow2(&device, data, rows, n, inverse)?;
    Ok(from_rows(&device, out, &shape))
}

fn from_rows(device: &Device, data: Tensor, shape: &[usize]) -> Array {
    Array::from_strided(
        device,
        DType::Complex64,
        Strided {
            data,
            layout: Layout::contiguous(shape),
        },
    )
}

/// Uploads f32 words.
fn upload(device: &Device, v: &[f32]) -> Result<Tensor> {
    let t = alloc_words(device, v.len())?;
    if !v.is_empty() {
        device
            .wgpu_queue()
            .write_buffer(t.buffer(), 0, bytemuck::cast_slice(v));
    }
    Ok(t)
}

/// The power-of-two transform of `rows` contiguous rows in `data` (which it overwrites):
/// the buffer holding the result.
fn pow2(device: &Device, data: Tensor, rows: usize, n: usize, inverse: bool) -> Result<Tensor> {
    if n == 1 {
        return Ok(data);
    }
    let other = alloc_words(device, rows * n * 2)?;
    let tw = upload(device, &twiddles(n))?;
    let mut rec = Recorder::new(device);
    let in_other = record(
        &mut rec,
        data.buffer(),
        other.buffer(),
        tw.buffer(),
        rows,
        n,
        inverse,
    )?;
    rec.submit()?;
    Ok(if in_other { other } else { data })
}

/// Bluestein's transform of `x`'s rows (length `n`, not a power of two).
fn bluestein(x: &Array, rows: usize, n: usize, inverse: bool) -> Result<Array> {
    let device = x.device().clone();
    let m = (2 * n - 1).next_power_of_two();
    // w_k = exp(sign·πi·k²/n), the angle from k² mod 2n so that it stays exact.
    let sign = if inverse { 1.0 } else { -1.0 };
    let chirp: Vec<(f64, f64)> = (0..n as u64)
        .map(|k| {
            let r = (k * k) % (2 * n as u64);
            let a = sign * std::f64::consts::PI * (r as f64 / n as f64);
            (a.cos(), a.sin())
        })
        .collect();
    let w_words: Vec<f32> = chirp
        .iter()
        .flat_map(|&(c, s)| [c as f32, s as f32])
        .collect();
    let w = Array::from_strided(
        &device,
        DType::Complex64,
        Strided {
            data: upload(&device, &w_words)?,
            layout: Layout::contiguous(&[n]),
        },
    );
    // b_k = conj(w_k) at k and M - k: the convolution kernel, transformed once.
    let mut b = vec![0f32; 2 * m];
    for (k, &(c, s)) in chirp.iter().enumerate() {
        for j in [k, (m - k) % m] {
            b[2 * j] = c as f32;
            b[2 * j + 1] = -s as f32;
        }
    }
    let b_hat = from_rows(
        &device,
        pow2(&device, upload(&device, &b)?, 1, m, false)?,
        &[m],
    );
    let lead: Vec<usize> = x.shape()[..x.ndim() - 1].to_vec();
    let flat = x.reshape(&[Some(rows), Some(n)])?;
    let a = resize_last(&flat.binary(Binary::Multiply, &w)?, m)?;
    let a_hat = from_rows(
        &device,
        pow2(&device, a.copy()?.strided()?.data, rows, m, false)?,
        &[rows, m],
    );
    let prod = a_hat
        .binary(Binary::Multiply, &b_hat)?
        .copy()?
        .strided()?
        .data;
    let conv = from_rows(&device, pow2(&device, prod, rows, m, true)?, &[rows, m]);
    let y = conv
        .index(&slice_along(2, 1, 0, n, 1))?
        .binary(Binary::Multiply, &w)?
        .binary_scalar(Binary::Multiply, (1.0 / m as f64).into())?;
    let mut shape = lead;
    shape.push(n);
    y.copy()?
        .reshape(&shape.iter().map(|&d| Some(d)).collect::<Vec<_>>())
}
