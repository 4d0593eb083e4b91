//! Arrays from the host and back, and the creation functions (`zeros`, `arange`, `eye`, …).
//! Creation functions are expressions like any other (a scalar broadcast, a position
//! scaled), so `zeros(..) + x` costs no extra pass.

use crate::array::array::{Array, Expr, State, Strided};
use crate::array::dtype::DType;
use crate::array::eval::alloc_words;
use crate::array::layout::{numel, Layout};
use crate::array::ops::Binary;
use crate::error::{Error, Result};
use crate::runtime::Device;

fn check_len(op: &'static str, shape: &[usize], found: usize, what: &str) -> Result<usize> {
    let n = shape
        .iter()
        .try_fold(1usize, |a, &d| a.checked_mul(d))
        .filter(|&n| n <= i32::MAX as usize)
        .ok_or_else(|| Error::InvalidArgument {
            op,
            name: "shape",
            expected: format!("at most {} elements", i32::MAX),
            found: format!("{shape:?}"),
        })?;
    if n != found {
        return Err(Error::ShapeMismatch {
            op,
            expected: format!("{n} {what} for shape {shape:?}"),
            found: format!("{found} {what}"),
        });
    }
    Ok(n)
}

impl Array {
    /// Uploads host data: `bytes` holds the elements in row-major order, each
    /// `dtype.host_size()` bytes, little-endian (NumPy's layout for a C-contiguous array).
    pub fn from_bytes(
        device: &Device,
        dtype: DType,
        bytes: &[u8],
        shape: &[usize],
    ) -> Result<Array> {
        let sz = dtype.host_size();
        if !bytes.len().is_multiple_of(sz) {
            return Err(Error::ShapeMismatch {
                op: "asarray",
                expected: format!("a multiple of {sz} bytes for {dtype}"),
                found: format!("{} bytes", bytes.len()),
            });
        }
        check_len("asarray", shape, bytes.len() / sz, "elements")?;
        let words = dtype.words_from_bytes(bytes);
        Array::from_words(device, dtype, &words, shape)
    }

    pub(crate) fn from_words(
        device: &Device,
        dtype: DType,
        words: &[u32],
        shape: &[usize],
    ) -> Result<Array> {
        dtype.check_device(device, "asarray")?;
        let data = alloc_words(device, words.len())?;
        if !words.is_empty() {
            device
                .wgpu_queue()
                .write_buffer(data.buffer(), 0, bytemuck::cast_slice(words));
        }
        Ok(Array::from_strided(
            device,
            dtype,
            Strided {
                data,
                layout: Layout::contiguous(shape),
            },
        ))
    }

    /// Uploads f32 values (row-major).
    pub fn from_f32(device: &Device, values: &[f32], shape: &[usize]) -> Result<Array> {
        check_len("asarray", shape, values.len(), "values")?;
        let words: Vec<u32> = values.iter().map(|v| v.to_bits()).collect();
        Array::from_words(device, DType::Float32, &words, shape)
    }

    /// Uploads values given as f64, converted to `dtype` as a cast would.
    pub fn from_f64(
        device: &Device,
        values: &[f64],
        shape: &[usize],
        dtype: DType,
    ) -> Result<Array> {
        check_len("asarray", shape, values.len(), "values")?;
        let words: Vec<u32> = values
            .iter()
            .flat_map(|&v| {
                let (lo, hi) = dtype.words_of(v);
                [lo, hi].into_iter().take(dtype.words())
            })
            .collect();
        Array::from_words(device, dtype, &words, shape)
    }

    /// Uploads complex values as complex64 (row-major, `(real, imaginary)` pairs).
    pub fn from_complex(device: &Device, values: &[(f32, f32)], shape: &[usize]) -> Result<Array> {
        check_len("asarray", shape, values.len(), "values")?;
        let words: Vec<u32> = values
            .iter()
            .flat_map(|&(re, im)| [re.to_bits(), im.to_bits()])
            .collect();
        Array::from_words(device, DType::Complex64, &words, shape)
    }

    /// A complex64 array's elements in row-major order as `(real, imaginary)` pairs (waits
    /// for the device); other dtypes' values with an imaginary part of 0.
    pub fn to_complex_vec(&self) -> Result<Vec<(f64, f64)>> {
        if !self.dtype().is_complex() {
            return Ok(self.to_f64_vec()?.into_iter().map(|v| (v, 0.0)).collect());
        }
        let w = self.to_words()?;
        Ok(w.chunks_exact(2)
            .map(|c| (f32::from_bits(c[0]) as f64, f32::from_bits(c[1]) as f64))
            .collect())
    }

    /// The device words of the elements in row-major order (waits for the device).
    pub(crate) fn to_words(&self) -> Result<Vec<u32>> {
        let a = self.contiguous()?;
        let s = a.strided()?;
        let n = a.size();
        if n == 0 {
            return Ok(Vec::new());
        }
        let all = s.data.to_vec()?;
        let words: &[u32] = bytemuck::cast_slice(&all);
        let w = self.dtype().words();
        Ok(words[s.layout.offset * w..(s.layout.offset + n) * w].to_vec())
    }

    /// The elements in row-major order as host bytes of the dtype's width (waits for the
    /// device): what `numpy.frombuffer(.., dtype).reshape(shape)` reads.
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        Ok(self.dtype().bytes_from_words(&self.to_words()?))
    }

    /// The elements in row-major order as f64 (waits for the device); complex64 is refused
    /// (`to_complex_vec` reads it).
    pub fn to_f64_vec(&self) -> Result<Vec<f64>> {
        let d = self.dtype();
        if d.is_complex() {
            return Err(Error::DType {
                op: "to_f64_vec",
                expected: "a real or boolean dtype (to_complex_vec reads complex64)".into(),
                found: d.name().into(),
            });
        }
        let w = self.to_words()?;
        Ok(match d.words() {
            1 => w.iter().map(|&x| d.value_of((x, 0))).collect(),
            _ => w
                .chunks_exact(2)
                .map(|c| d.value_of((c[0], c[1])))
                .collect(),
        })
    }

    /// An array of `shape` filled with `value` (converted to `dtype`).
    pub fn full(device: &Device, shape: &[usize], value: f64, dtype: DType) -> Result<Array> {
        check_len("full", shape, numel(shape), "elements")?;
        let s = Array::scalar(device, value, dtype);
        Array::lazy("full", dtype, shape.to_vec(), &[&s], |o| {
            // `positive` of the scalar, broadcast: the node's shape is the array's.
            Expr::Cast(o[0].clone())
        })
    }

    /// Zeros.
    pub fn zeros(device: &Device, shape: &[usize], dtype: DType) -> Result<Array> {
        Array::full(device, shape, 0.0, dtype)
    }

    /// Ones.
    pub fn ones(device: &Device, shape: &[usize], dtype: DType) -> Result<Array> {
        Array::full(device, shape, 1.0, dtype)
    }

    /// An array whose contents are undefined (a buffer, no kernel).
    pub fn empty(device: &Device, shape: &[usize], dtype: DType) -> Result<Array> {
        let n = check_len("empty", shape, numel(shape), "elements")?;
        Ok(Array::from_strided(
            device,
            dtype,
            Strided {
                data: alloc_words(device, n * dtype.words())?,
                layout: Layout::contiguous(shape),
            },
        ))
    }

    /// Each element's position along `axis` of `shape`, as int32.
    pub fn positions(device: &Device, shape: &[usize], axis: usize) -> Result<Array> {
        check_len("positions", shape, numel(shape), "elements")?;
        if axis >= shape.len() {
            return Err(Error::InvalidArgument {
                op: "positions",
                name: "axis",
                expected: format!("an axis of {shape:?}"),
                found: axis.to_string(),
            });
        }
        Ok(Array::from_state(
            device,
            DType::Int32,
            shape.to_vec(),
            1,
            Vec::new(),
            State::Lazy(Expr::Iota(axis)),
        ))
    }

    /// `start, start + step, …` up to (not including) `stop`, as NumPy's `arange`.
    pub fn arange(
        device: &Device,
        start: f64,
        stop: f64,
        step: f64,
        dtype: DType,
    ) -> Result<Array> {
        if step == 0.0 || !step.is_finite() || !start.is_finite() || !stop.is_finite() {
            return Err(Error::InvalidArgument {
                op: "arange",
                name: "step",
                expected: "finite start, stop and a finite step other than 0".into(),
                found: format!("start {start}, stop {stop}, step {step}"),
            });
        }
        if dtype == DType::Float16 {
            // Each value start + i·step computed in float32 and rounded once. NumPy fills
            // float16 from start + i·(f16(start + step) - f16(start)), which rounds the step
            // first, so its values can differ (0.2998 for 0.3 at i = 3 with step 0.1): this
            // keeps the closest float16 to each value instead.
            return Array::arange(device, start, stop, step, DType::Float32)?.astype(dtype);
        }
        let n = ((stop - start) / step).ceil().max(0.0) as usize;
        let i = Array::positions(device, &[n], 0)?;
        if dtype.is_float() || dtype.is_complex() {
            i.astype(dtype)?
                .binary_scalar(Binary::Multiply, step.into())?
                .binary_scalar(Binary::Add, start.into())
        } else if dtype.is_wide_int() {
            // Positions widened first: int64 values pass 2^31 (computed in int64, then cast,
            // so a uint64 range may count down).
            i.astype(DType::Int64)?
                .binary_scalar(Binary::Multiply, (step as i64).into())?
                .binary_scalar(Binary::Add, (start as i64).into())?
                .astype(dtype)
        } else {
            i.binary_scalar(Binary::Multiply, (step as i64).into())?
                .binary_scalar(Binary::Add, (start as i64).into())?
                .astype(dtype)
        }
    }

    /// `num` values evenly spaced from `start` to `stop` (inclusive when `endpoint`).
    pub fn linspace(
        device: &Device,
        start: f64,
        stop: f64,
        num: usize,
        endpoint: bool,
        dtype: DType,
    ) -> Result<Array> {
        let div = if endpoint { num.saturating_sub(1) } else { num };
        let step = if div > 0 {
            (stop - start) / div as f64
        } else {
            0.0
        };
        // float64 is computed in float64; every other dtype in float32, then cast.
        let f = if dtype == DType::Float64 {
            DType::Float64
        } else {
            DType::Float32
        };
        let i = Array::positions(device, &[num], 0)?.astype(f)?;
        let v = i
            .binary_scalar(Binary::Multiply, step.into())?
            .binary_scalar(Binary::Add, start.into())?;
        let v = if endpoint && num > 1 {
            // The last value is `stop` exactly, as NumPy makes it.
            let last = Array::positions(device, &[num], 0)?
                .binary_scalar(Binary::Equal, ((num - 1) as i64).into())?;
            Array::where_(&last, &Array::scalar(device, stop, f), &v)?
        } else {
            v
        };
        v.astype(dtype)
    }

    /// Ones on the `k`-th diagonal of an `n × m` matrix, zeros elsewhere.
    pub fn eye(device: &Device, n: usize, m: usize, k: isize, dtype: DType) -> Result<Array> {
        let r = Array::positions(device, &[n, m], 0)?;
        let c = Array::positions(device, &[n, m], 1)?;
        r.binary_scalar(Binary::Add, (k as i64).into())?
            .binary(Binary::Equal, &c)?
            .astype(dtype)
    }

    /// The array with elements above the `k`-th diagonal of its last two axes set to zero
    /// (`tril`), or below it (`triu`, `upper`).
    pub fn triangle(&self, k: isize, upper: bool) -> Result<Array> {
        let n = self.ndim();
        if n < 2 {
            return Err(Error::InvalidArgument {
                op: if upper { "triu" } else { "tril" },
                name: "x",
                expected: "an array of at least 2 axes".into(),
                found: format!("shape {:?}", self.shape()),
            });
        }
        let shape = &self.shape()[n - 2..];
        let r = Array::positions(self.device(), shape, 0)?;
        let c = Array::positions(self.device(), shape, 1)?;
        let d = c.binary(Binary::Subtract, &r)?;
        let keep = if upper {
            d.binary_scalar(Binary::GreaterEqual, (k as i64).into())?
        } else {
            d.binary_scalar(Binary::LessEqual, (k as i64).into())?
        };
        let z = Array::scalar(self.device(), 0.0, self.dtype());
        Array::where_(&keep, self, &z)
    }
}
