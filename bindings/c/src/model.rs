//! Models (`suanli_model`): a model file written by Rust or Python (MLP or CNN), loaded onto
//! a device, predicting and evaluating on host arrays.

use std::ffi::c_char;
use std::path::Path;

use suanli::data::Dataset;
use suanli::nn::Sequential;
use suanli::Tensor;

use crate::device::suanli_device;
use crate::{deref, guard, put, suanli_status, text, Fail};

/// A model on a device (a handle: release it with `suanli_model_release`). Not thread-safe:
/// use one model from one thread at a time (predict and evaluate read only, but share the
/// model's scratch).
pub struct suanli_model(Sequential);

/// Loads the model file `path` (`Sequential::save`, Python's `model.save`, or a
/// checkpoint) onto `device`, into `*model`.
#[no_mangle]
pub unsafe extern "C" fn suanli_model_load(
    device: *const suanli_device,
    path: *const c_char,
    model: *mut *mut suanli_model,
) -> suanli_status {
    guard("suanli_model_load", || {
        let d = deref(device, "device")?;
        let path = text(path, "path")?;
        if model.is_null() {
            return Err(Fail::null("model"));
        }
        let m = match Sequential::load_checkpoint(&d.0, Path::new(path)) {
            Ok((m, _)) => m,
            Err(suanli::Error::Malformed { .. }) => Sequential::load(&d.0, Path::new(path))?,
            Err(e) => return Err(e.into()),
        };
        put(model, Box::into_raw(Box::new(suanli_model(m))), "model")
    })
}

/// Values per input sample, and per output sample.
#[no_mangle]
pub unsafe extern "C" fn suanli_model_dims(
    model: *const suanli_model,
    inputs: *mut usize,
    outputs: *mut usize,
) -> suanli_status {
    guard("suanli_model_dims", || {
        let m = deref(model, "model")?;
        put(inputs, m.0.input_dim().unwrap_or(0), "inputs")?;
        put(outputs, m.0.output_dim().unwrap_or(0), "outputs")
    })
}

/// The outputs for `rows` samples of `x` (`rows × inputs` floats, row-major), into `y`
/// (room for `capacity` floats: `rows × outputs` are written).
#[no_mangle]
pub unsafe extern "C" fn suanli_model_predict(
    model: *const suanli_model,
    x: *const f32,
    rows: usize,
    y: *mut f32,
    capacity: usize,
) -> suanli_status {
    guard("suanli_model_predict", || {
        let m = deref(model, "model")?;
        let (ins, outs) = (m.0.input_dim().unwrap_or(0), m.0.output_dim().unwrap_or(0));
        if x.is_null() || y.is_null() {
            return Err(Fail::null(if x.is_null() { "x" } else { "y" }));
        }
        if capacity < rows * outs {
            return Err(Fail {
                status: suanli_status::SUANLI_ERROR_SHAPE_MISMATCH,
                message: format!(
                    "y: expected room for {} floats ({rows} × {outs}); found {capacity}",
                    rows * outs
                ),
            });
        }
        let xs = std::slice::from_raw_parts(x, rows * ins);
        let mut shape = vec![rows];
        shape.extend_from_slice(m.0.expected_input_shape().unwrap_or(&[]));
        let t = Tensor::from_slice(m.0.device(), xs, &shape)?;
        let v = m.0.predict(&t)?.to_vec()?;
        std::ptr::copy_nonoverlapping(v.as_ptr(), y, v.len());
        Ok(())
    })
}

/// The loss and accuracy (NaN for a loss without one) on `rows` samples of `x` with class
/// labels `labels` (a compiled model: a checkpoint, or one compiled before saving).
#[no_mangle]
pub unsafe extern "C" fn suanli_model_evaluate(
    model: *const suanli_model,
    x: *const f32,
    labels: *const u32,
    rows: usize,
    loss: *mut f64,
    accuracy: *mut f64,
) -> suanli_status {
    guard("suanli_model_evaluate", || {
        let m = deref(model, "model")?;
        if x.is_null() || labels.is_null() {
            return Err(Fail::null(if x.is_null() { "x" } else { "labels" }));
        }
        let ins = m.0.input_dim().unwrap_or(0);
        let xs = std::slice::from_raw_parts(x, rows * ins);
        let ls = std::slice::from_raw_parts(labels, rows);
        let data = Dataset::from_f32(m.0.device(), xs, ins, ls)?
            .with_sample_shape(m.0.expected_input_shape().unwrap_or(&[]))?;
        let e = m.0.evaluate(&data, 256)?;
        put(loss, e.loss, "loss")?;
        put(accuracy, e.accuracy.unwrap_or(f64::NAN), "accuracy")
    })
}

/// Releases a model handle (NULL is ignored).
#[no_mangle]
pub unsafe extern "C" fn suanli_model_release(model: *mut suanli_model) {
    if !model.is_null() {
        drop(Box::from_raw(model));
    }
}
