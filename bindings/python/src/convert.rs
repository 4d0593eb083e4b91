//! NumPy arrays in, NumPy arrays out. Inputs of any numeric dtype and any memory layout
//! (C, Fortran, strided views, big-endian) are converted once, in logical C order; uint8
//! features stay bytes (a quarter of the device memory).

use numpy::prelude::*;
use numpy::{dtype, PyArrayDyn, PyUntypedArray};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;

/// A matrix's values, as they will be uploaded.
pub enum Values {
    /// Bytes (uint8 arrays).
    U8(Vec<u8>),
    /// Floats (every other numeric dtype, converted).
    F32(Vec<f32>),
}

/// A 2-D array taken from Python: rows × cols values in C order.
pub struct Matrix {
    /// Rows (samples).
    pub rows: usize,
    /// Columns (features).
    pub cols: usize,
    /// The values.
    pub values: Values,
}

impl Matrix {
    /// The values as floats (bytes converted: 0..255).
    pub fn into_f32(self) -> Vec<f32> {
        match self.values {
            Values::F32(v) => v,
            Values::U8(v) => v.into_iter().map(f32::from).collect(),
        }
    }
}

/// Copies a view in logical (C) order, whatever its strides.
fn to_vec<T: Copy>(view: numpy::ndarray::ArrayViewD<'_, T>) -> Vec<T> {
    match view.as_slice() {
        Some(s) => s.to_vec(),
        None => view.iter().copied().collect(),
    }
}

/// `obj` as a NumPy array (lists and scalars through `numpy.asarray`).
pub fn as_array<'py>(obj: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyUntypedArray>> {
    if let Ok(a) = obj.cast::<PyUntypedArray>() {
        return Ok(a.clone());
    }
    let np = obj.py().import("numpy")?;
    let a = np.call_method1("asarray", (obj,))?;
    Ok(a.cast_into::<PyUntypedArray>()?)
}

/// The array's values, any numeric dtype converted to f32 (u8 kept as bytes when
/// `keep_bytes`), with its shape.
pub fn values(
    obj: &Bound<'_, PyAny>,
    what: &str,
    keep_bytes: bool,
) -> PyResult<(Vec<usize>, Values)> {
    let py = obj.py();
    let arr = as_array(obj)?;
    let shape = arr.shape().to_vec();
    let dt = arr.dtype();
    let values = if keep_bytes && dt.is_equiv_to(&dtype::<u8>(py)) {
        Values::U8(to_vec(arr.cast::<PyArrayDyn<u8>>()?.readonly().as_array()))
    } else if dt.is_equiv_to(&dtype::<f32>(py)) {
        Values::F32(to_vec(arr.cast::<PyArrayDyn<f32>>()?.readonly().as_array()))
    } else if dt.is_equiv_to(&dtype::<f64>(py)) {
        // One pass from float64 to float32: no intermediate array.
        let a = arr.cast::<PyArrayDyn<f64>>()?.readonly();
        Values::F32(a.as_array().iter().map(|&x| x as f32).collect())
    } else if matches!(dt.kind(), b'f' | b'i' | b'u' | b'b') {
        // float16, integers, bool, byte-swapped floats: NumPy converts.
        let cast = arr.call_method1("astype", (dtype::<f32>(py),))?;
        Values::F32(to_vec(
            cast.cast::<PyArrayDyn<f32>>()?.readonly().as_array(),
        ))
    } else {
        return Err(PyTypeError::new_err(format!(
            "{what}: expected a numeric array (uint8, float32, float64, integers); found dtype {dt}"
        )));
    };
    Ok((shape, values))
}

/// Samples of any shape: an array (samples, …) with at least one sample and one value each;
/// returns the per-sample shape (`(28, 28, 1)` for images, `(784,)` for flat rows).
pub fn samples(
    obj: &Bound<'_, PyAny>,
    what: &str,
    keep_bytes: bool,
) -> PyResult<(Matrix, Vec<usize>)> {
    let (shape, values) = values(obj, what, keep_bytes)?;
    match shape.split_first() {
        Some((&rows, sample)) if rows > 0 && !sample.is_empty() && !sample.contains(&0) => {
            let cols = sample.iter().product();
            Ok((Matrix { rows, cols, values }, sample.to_vec()))
        }
        _ => Err(PyValueError::new_err(format!(
            "{what}: expected an array (samples, ...) with at least one sample of at least one value; found shape {shape:?}"
        ))),
    }
}

/// Dense targets: (samples, outputs…), or (samples,) as one output; a per-sample shape of
/// several axes (a sequence model's (samples, T, E) regression targets) is taken row-major,
/// as the output it is compared with is laid out.
pub fn targets(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<Matrix> {
    let (shape, values) = values(obj, what, false)?;
    let (rows, cols) = match shape[..] {
        [r] => (r, 1),
        [r, ref rest @ ..] if !rest.contains(&0) => (r, rest.iter().product()),
        _ => {
            return Err(PyValueError::new_err(format!(
                "{what}: expected targets of shape (samples,) or (samples, outputs…) with no empty axis; found {shape:?}"
            )))
        }
    };
    Ok(Matrix { rows, cols, values })
}

/// Class labels: (samples,) or (samples, 1) of non-negative integers (integer dtypes, or
/// floats holding whole numbers, as Keras accepts).
pub fn labels(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<(Vec<u32>, usize)> {
    let py = obj.py();
    let arr = as_array(obj)?;
    let shape = arr.shape().to_vec();
    // (samples,) or (samples, 1): a label per sample; (samples, positions…): one per position
    // of a (positions…, classes) output (a sequence model's per-token labels).
    let positions = match shape[..] {
        [_] | [_, 1] => 1,
        [_, ref rest @ ..] if !rest.is_empty() && arr.dtype().kind() != b'f' => {
            rest.iter().product::<usize>()
        }
        _ => {
            return Err(PyValueError::new_err(format!(
                "{what}: expected class labels of shape (samples,), (samples, 1), or integer labels (samples, positions) for a per-position output; found {shape:?} (one-hot rows take loss=\"categorical_crossentropy\")"
            )))
        }
    };
    if !matches!(arr.dtype().kind(), b'f' | b'i' | b'u' | b'b') {
        return Err(PyTypeError::new_err(format!(
            "{what}: expected integer class labels; found dtype {}",
            arr.dtype()
        )));
    }
    let f = arr.call_method1("astype", (dtype::<f64>(py),))?;
    let f = to_vec(f.cast::<PyArrayDyn<f64>>()?.readonly().as_array());
    let labels = f
        .iter()
        .enumerate()
        .map(|(i, &v)| {
            if v >= 0.0 && v.fract() == 0.0 && v <= u32::MAX as f64 {
                Ok(v as u32)
            } else {
                Err(PyValueError::new_err(format!(
                    "{what}: expected non-negative integer class labels; found {v} at index {i}"
                )))
            }
        })
        .collect::<PyResult<Vec<u32>>>()?;
    Ok((labels, positions))
}
