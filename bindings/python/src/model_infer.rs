//! Inference from Python: Keras's `model(x)` and `predict`, with their input checks and the
//! conversion of arrays into device tensors and back. The model's `#[pymethods]`
//! (`model.rs`) hand over to these.

use numpy::prelude::*;
use numpy::PyArray1;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use suanli::nn::Sequential;
use suanli::Tensor;

use crate::convert;
use crate::errors::IntoPy;
use crate::tensor::PyTensor;

/// The model on `x` (a Tensor or an array of samples), in inference mode, as a Tensor on
/// the model's device: Keras's `model(x)`.
pub(crate) fn call(model: &Sequential, py: Python<'_>, x: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
    let want = model.expected_input_shape().unwrap_or(&[]).to_vec();
    let dev = model.device().clone();
    let t = match x.cast::<PyTensor>() {
        Ok(t) if t.get().0.device().same_as(&dev) => t.get().0.clone(),
        _ => {
            let (m, sample) = convert::samples(x, "model(x)", false)?;
            let mut shape = vec![m.rows];
            shape.extend_from_slice(&sample);
            let per: usize = sample.iter().product();
            let data = m.into_f32();
            model.check_input_ids(0, &data, per).py()?;
            py.detach(|| Tensor::from_slice(&dev, &data, &shape)).py()?
        }
    };
    let sample = &t.shape()[1.min(t.shape().len())..];
    let squeezed = want.last() == Some(&1) && sample == &want[..want.len() - 1];
    let t = if squeezed {
        let mut shape = vec![t.shape()[0]];
        shape.extend_from_slice(&want);
        t.reshape(&shape).py()?
    } else {
        t
    };
    if t.shape().len() < 2 || t.shape()[1..] != want[..] {
        return Err(PyValueError::new_err(format!(
            "model(x): expected samples of shape {} (the model's input); found {}",
            suanli::nn::spec::sample_shape(&want),
            suanli::nn::spec::sample_shape(&t.shape()[1.min(t.shape().len())..])
        )));
    }
    py.detach(|| model.predict(&t)).py().map(PyTensor)
}

/// The model's outputs for `x` (see `PyModel::predict`).
pub(crate) fn predict<'py>(
    model: &Sequential,
    py: Python<'py>,
    x: &Bound<'py, PyAny>,
    batch_size: usize,
) -> PyResult<Bound<'py, PyAny>> {
    let arrays = crate::train::columns(x)?;
    let wants: Vec<Vec<usize>> = model.input_shapes().iter().map(|s| s.to_vec()).collect();
    if arrays.len() != wants.len() {
        return Err(PyValueError::new_err(format!(
            "predict x: expected {} arrays (the model's inputs {:?}); found {}",
            wants.len(),
            model.input_names(),
            arrays.len()
        )));
    }
    // Each input's (values per sample, values), every one of `rows` samples.
    let mut rows = None;
    let mut inputs: Vec<(usize, Vec<f32>)> = Vec::with_capacity(arrays.len());
    for (k, (a, want)) in arrays.iter().zip(&wants).enumerate() {
        let (m, sample) = convert::samples(a, "predict x", false)?;
        let squeezed = want.last() == Some(&1) && sample == want[..want.len() - 1];
        if sample != *want && !squeezed {
            return Err(PyValueError::new_err(format!(
                "predict x: expected samples of shape {} (the model's input {k}); found {}",
                suanli::nn::spec::sample_shape(want),
                suanli::nn::spec::sample_shape(&sample)
            )));
        }
        if rows.is_some_and(|r| r != m.rows) {
            return Err(PyValueError::new_err(format!(
                "predict x: x[0] has {} samples but x[{k}] has {}",
                rows.unwrap_or(0),
                m.rows
            )));
        }
        rows = Some(m.rows);
        let cols = m.cols;
        let values = m.into_f32();
        // Ids past an Embedding's table would read zeros: refused, as fit refuses them.
        model.check_input_ids(k, &values, cols).py()?;
        inputs.push((cols, values));
    }
    let rows = rows.unwrap_or(0);
    let cols: usize = inputs.iter().map(|(c, _)| *c).sum();
    let out_shapes: Vec<Vec<usize>> = model.output_shapes().iter().map(|s| s.to_vec()).collect();
    let outs: usize = out_shapes.iter().map(|s| s.iter().product::<usize>()).sum();
    let dev = model.device();
    // 16 MiB of inputs or outputs per chunk: far from any binding limit, few submissions.
    let chunk = ((16usize << 20) / (4 * cols.max(outs).max(1)))
        .max(batch_size)
        .max(1);
    let out = py.detach(|| -> suanli::Result<Vec<Vec<f32>>> {
        let mut out: Vec<Vec<f32>> = out_shapes
            .iter()
            .map(|s| Vec::with_capacity(rows * s.iter().product::<usize>()))
            .collect();
        for start in (0..rows).step_by(chunk) {
            let n = chunk.min(rows - start);
            let ts = inputs
                .iter()
                .zip(&wants)
                .map(|((c, data), want)| {
                    let mut shape = vec![n];
                    shape.extend_from_slice(want);
                    Tensor::from_slice(dev, &data[start * c..(start + n) * c], &shape)
                })
                .collect::<suanli::Result<Vec<Tensor>>>()?;
            let refs: Vec<&Tensor> = ts.iter().collect();
            for (o, t) in out.iter_mut().zip(model.predict_outputs(&refs)?) {
                o.extend(t.to_vec()?);
            }
        }
        Ok(out)
    });
    // One array per output: the array itself for one output, a list for several (as
    // Keras returns them).
    let mut arrays = Vec::with_capacity(out_shapes.len());
    for (values, s) in out.py()?.into_iter().zip(&out_shapes) {
        let mut shape = vec![rows];
        shape.extend_from_slice(s);
        arrays.push(PyArray1::from_vec(py, values).reshape(shape)?.into_any());
    }
    if arrays.len() == 1 {
        return Ok(arrays.remove(0));
    }
    Ok(pyo3::types::PyList::new(py, arrays)?.into_any())
}
