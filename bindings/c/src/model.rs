//! Models (`suanli_model`): built from layer specs (the JSON of the one layer vocabulary
//! that Rust's `Sequential::add`, the model file and Python use) or loaded from a file
//! written by Rust or Python (MLP or CNN); compiled, trained with a progress callback,
//! predicting and evaluating on host arrays.

use std::ffi::c_char;
use std::path::Path;

use std::ffi::c_void;

use suanli::data::Dataset;
use suanli::nn::{Callback, FitOptions, Loss, Optimizer, Progress, Sequential};
use suanli::Tensor;

use crate::device::suanli_device;
use crate::{deref, guard, put, suanli_status, text, Fail};

/// A model on a device (a handle: release it with `suanli_model_release`). Not thread-safe:
/// use one model from one thread at a time (predict and evaluate read only, but share the
/// model's scratch).
pub struct suanli_model(pub(crate) Sequential);

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
/// (room for `capacity` floats: `rows × outputs` are written). A model of several inputs
/// or outputs: `suanli_model_predict_multi`.
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
/// labels `labels` (a compiled model: a checkpoint, or one compiled before saving), in
/// batches of `batch_size` rows (0: Keras's 32). The loss is summed on the device batch by
/// batch, so the same batch size gives Rust's `evaluate` to the bit. A model of several
/// inputs or outputs: `suanli_model_evaluate_multi`.
#[no_mangle]
#[allow(clippy::too_many_arguments)] // a C signature, spelled out
pub unsafe extern "C" fn suanli_model_evaluate(
    model: *const suanli_model,
    x: *const f32,
    labels: *const u32,
    rows: usize,
    batch_size: usize,
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
        let e =
            m.0.evaluate(&data, if batch_size == 0 { 32 } else { batch_size })?;
        put(loss, e.loss, "loss")?;
        put(accuracy, e.accuracy.unwrap_or(f64::NAN), "accuracy")
    })
}

/// An empty model on `device` for samples of `shape` (`ndim` sizes, channels last), its
/// weights drawn from `seed`, into `*model`. Add layers with `suanli_model_add`.
#[no_mangle]
pub unsafe extern "C" fn suanli_model_new(
    device: *const suanli_device,
    shape: *const usize,
    ndim: usize,
    seed: u64,
    model: *mut *mut suanli_model,
) -> suanli_status {
    guard("suanli_model_new", || {
        let d = deref(device, "device")?;
        if shape.is_null() || ndim == 0 {
            return Err(Fail::null("shape"));
        }
        if model.is_null() {
            return Err(Fail::null("model"));
        }
        let s = std::slice::from_raw_parts(shape, ndim);
        let m = Sequential::with_seed(&d.0, seed).input_shape(s);
        put(model, Box::into_raw(Box::new(suanli_model(m))), "model")
    })
}

/// A graph model (residual connections, merges) from Keras's functional config as JSON, the
/// form a graph's model file stores and `Model::from_config` takes in Rust: `{"class_name":
/// "Functional", "config": {"layers": [an InputLayer with its batch_input_shape, then each
/// layer with its "inbound_nodes"], "input_layers": [...], "output_layers": [...]}}`; its
/// weights drawn from `seed`, into `*model`. Every name, edge and shape is checked.
#[no_mangle]
pub unsafe extern "C" fn suanli_model_from_config(
    device: *const suanli_device,
    config_json: *const c_char,
    seed: u64,
    model: *mut *mut suanli_model,
) -> suanli_status {
    guard("suanli_model_from_config", || {
        let d = deref(device, "device")?;
        if model.is_null() {
            return Err(Fail::null("model"));
        }
        let json = text(config_json, "config_json")?;
        let v: serde_json::Value = serde_json::from_str(json)
            .map_err(|e| Fail::invalid(format!("config_json: expected JSON; {e}")))?;
        let m = Sequential::from_config(&d.0, seed, &v)?;
        put(model, Box::into_raw(Box::new(suanli_model(m))), "model")
    })
}

/// Appends a layer given as Keras's JSON form, the vocabulary Rust and Python share:
/// `{"class_name": "Dense", "config": {"units": 128, "activation": "relu"}}`. Arguments are
/// checked by the same code as in Rust (an unknown argument or a shape that does not fit is
/// an error naming it).
#[no_mangle]
pub unsafe extern "C" fn suanli_model_add(
    model: *mut suanli_model,
    layer_json: *const c_char,
) -> suanli_status {
    guard("suanli_model_add", || {
        let m = model.as_mut().ok_or_else(|| Fail::null("model"))?;
        let json = text(layer_json, "layer_json")?;
        let v: serde_json::Value = serde_json::from_str(json)
            .map_err(|e| Fail::invalid(format!("layer_json: expected JSON; {e}")))?;
        m.0.add(v)?;
        Ok(())
    })
}

/// An optimizer for `suanli_model_compile` (with Keras's defaults but the learning rate).
#[repr(C)]
#[allow(dead_code)] // the values are C's to pass
pub enum suanli_optimizer {
    /// Plain SGD.
    SUANLI_SGD = 0,
    /// Adam.
    SUANLI_ADAM = 1,
    /// AdamW.
    SUANLI_ADAMW = 2,
    /// RMSprop.
    SUANLI_RMSPROP = 3,
}

/// A loss for `suanli_model_compile`.
#[repr(C)]
#[allow(dead_code)] // the values are C's to pass
pub enum suanli_loss {
    /// Integer class labels; softmax or linear last layer.
    SUANLI_SPARSE_CATEGORICAL_CROSSENTROPY = 0,
    /// Mean squared error.
    SUANLI_MEAN_SQUARED_ERROR = 1,
}

/// Sets the optimizer (a `suanli_optimizer`, learning rate `lr`) and the loss (a
/// `suanli_loss`), both taken as checked integers.
#[no_mangle]
pub unsafe extern "C" fn suanli_model_compile(
    model: *mut suanli_model,
    optimizer: u32,
    lr: f64,
    loss: u32,
) -> suanli_status {
    guard("suanli_model_compile", || {
        let m = model.as_mut().ok_or_else(|| Fail::null("model"))?;
        m.0.compile(optimizer_of(optimizer, lr)?, loss_of(loss, "loss")?)?;
        Ok(())
    })
}

/// Sets the precision policy by its Keras name, as `Model::set_precision_policy`:
/// `"float32"` or `"mixed_float16"` (float16 matmul and convolution operands accumulating in
/// float32, float32 master weights and optimizer state, dynamic loss scaling). Set it before
/// `suanli_model_fit`; another name is `SUANLI_ERROR_INVALID_ARGUMENT`.
#[no_mangle]
pub unsafe extern "C" fn suanli_model_set_precision_policy(
    model: *mut suanli_model,
    policy: *const c_char,
) -> suanli_status {
    guard("suanli_model_set_precision_policy", || {
        let m = model.as_mut().ok_or_else(|| Fail::null("model"))?;
        let p: suanli::Precision = text(policy, "policy")?.parse()?;
        m.0.set_precision_policy(p);
        Ok(())
    })
}

/// The model's precision policy's name (`"float32"` or `"mixed_float16"`) into `*policy`: a
/// static string, never freed.
#[no_mangle]
pub unsafe extern "C" fn suanli_model_precision_policy(
    model: *const suanli_model,
    policy: *mut *const c_char,
) -> suanli_status {
    guard("suanli_model_precision_policy", || {
        let m = deref(model, "model")?;
        let name: &'static std::ffi::CStr = match m.0.precision_policy() {
            suanli::Precision::Float32 => c"float32",
            suanli::Precision::MixedFloat16 => c"mixed_float16",
        };
        put(policy, name.as_ptr(), "policy")
    })
}

/// An optimizer from its `suanli_optimizer` value and learning rate.
pub(crate) fn optimizer_of(optimizer: u32, lr: f64) -> crate::Result<Optimizer> {
    Ok(match optimizer {
        0 => Optimizer::sgd(lr),
        1 => Optimizer::adam().with_lr(lr),
        2 => Optimizer::adamw().with_lr(lr),
        3 => Optimizer::rmsprop().with_lr(lr),
        other => return Err(Fail::invalid(format!("optimizer: expected SUANLI_SGD, SUANLI_ADAM, SUANLI_ADAMW or SUANLI_RMSPROP; found {other}"))),
    })
}

/// A loss from its `suanli_loss` value (`what` names the argument in the message).
pub(crate) fn loss_of(loss: u32, what: &str) -> crate::Result<Loss> {
    match loss {
        0 => Ok(Loss::SparseCategoricalCrossentropy),
        1 => Ok(Loss::MeanSquaredError),
        other => Err(Fail::invalid(format!("{what}: expected SUANLI_SPARSE_CATEGORICAL_CROSSENTROPY or SUANLI_MEAN_SQUARED_ERROR; found {other}"))),
    }
}

/// Called during `suanli_model_fit` at each metric read (a few times a second) and at each
/// epoch's end (`step == steps`): epoch (0-based), epochs, steps done, steps per epoch, the
/// epoch's running loss and accuracy (NaN without one). Return non-zero to stop training:
/// the fit returns `SUANLI_ERROR_INTERRUPTED` and the model keeps its last step's weights
/// (the loss is still written when the stop came at an epoch's end).
pub type suanli_progress_fn = Option<
    unsafe extern "C" fn(
        user: *mut c_void,
        epoch: u32,
        epochs: u32,
        step: u32,
        steps: u32,
        loss: f64,
        accuracy: f64,
    ) -> i32,
>;

struct CProgress {
    f: suanli_progress_fn,
    user: *mut c_void,
    stopped: Option<usize>,
}

impl CProgress {
    fn call(
        &self,
        epoch: usize,
        epochs: usize,
        step: usize,
        steps: usize,
        loss: f64,
        acc: Option<f64>,
    ) -> bool {
        match self.f {
            // SAFETY: the caller of suanli_model_fit passed this function and pointer.
            Some(f) => unsafe {
                f(
                    self.user,
                    epoch as u32,
                    epochs as u32,
                    step as u32,
                    steps as u32,
                    loss,
                    acc.unwrap_or(f64::NAN),
                ) == 0
            },
            None => true,
        }
    }
}

impl Callback for CProgress {
    fn on_progress(&mut self, p: &Progress) -> bool {
        self.call(p.epoch, p.epochs, p.step, p.steps, p.loss, p.accuracy)
    }

    fn on_epoch_end(&mut self, e: &suanli::nn::EpochEnd, _h: &suanli::nn::History) -> bool {
        let go = self.call(e.epoch, e.epochs, e.steps, e.steps, e.loss, e.accuracy);
        if !go {
            self.stopped = Some(e.epoch);
        }
        go
    }
}

/// Trains on `rows` samples of `x` (`rows × inputs` floats) with class `labels` (sparse
/// cross-entropy) or `targets` (`rows × outputs` floats, MSE; the other pointer NULL), for
/// `epochs` epochs of `batch_size`, shuffled with `seed`; `progress` (or NULL) hears the
/// progress. The last epoch's mean loss goes into `*loss` (may be NULL). A model of several
/// inputs or outputs: `suanli_model_fit_multi`.
#[no_mangle]
pub unsafe extern "C" fn suanli_model_fit(
    model: *mut suanli_model,
    x: *const f32,
    labels: *const u32,
    targets: *const f32,
    rows: usize,
    epochs: usize,
    batch_size: usize,
    seed: u64,
    progress: suanli_progress_fn,
    user: *mut c_void,
    loss: *mut f64,
) -> suanli_status {
    guard("suanli_model_fit", || {
        let m = model.as_mut().ok_or_else(|| Fail::null("model"))?;
        if x.is_null() {
            return Err(Fail::null("x"));
        }
        let (ins, outs) = (m.0.input_dim().unwrap_or(0), m.0.output_dim().unwrap_or(0));
        let xs = std::slice::from_raw_parts(x, rows * ins);
        let dev = m.0.device().clone();
        let data = if !labels.is_null() {
            Dataset::from_f32(&dev, xs, ins, std::slice::from_raw_parts(labels, rows))?
        } else if !targets.is_null() {
            Dataset::from_f32_targets(
                &dev,
                xs,
                ins,
                std::slice::from_raw_parts(targets, rows * outs),
                outs,
            )?
        } else {
            return Err(Fail::null("labels or targets"));
        };
        let data = data.with_sample_shape(m.0.expected_input_shape().unwrap_or(&[]))?;
        fit_data(
            &mut m.0, &data, epochs, batch_size, seed, progress, user, loss,
        )
    })
}

/// Trains `model` on `data` as `suanli_model_fit` says (its progress callback, the last
/// epoch's loss into `*loss` where not NULL, a stop at an epoch's end as a stop between
/// steps); `suanli_model_fit_multi` shares it.
#[allow(clippy::too_many_arguments)] // suanli_model_fit's arguments, passed on
pub(crate) unsafe fn fit_data(
    model: &mut Sequential,
    data: &Dataset,
    epochs: usize,
    batch_size: usize,
    seed: u64,
    progress: suanli_progress_fn,
    user: *mut c_void,
    loss: *mut f64,
) -> crate::Result<()> {
    let mut cb = CProgress {
        f: progress,
        user,
        stopped: None,
    };
    let h = model.fit(
        data,
        FitOptions {
            epochs,
            batch_size,
            seed,
            callbacks: vec![&mut cb],
            ..Default::default()
        },
    )?;
    if !loss.is_null() {
        loss.write(h.loss.last().copied().unwrap_or(f64::NAN));
    }
    // Stopped at an epoch's end: the same status as a stop between steps.
    if let Some(e) = cb.stopped.filter(|&e| e + 1 < epochs) {
        return Err(Fail {
            status: suanli_status::SUANLI_ERROR_INTERRUPTED,
            message: format!("stopped by the progress callback after epoch {}", e + 1),
        });
    }
    Ok(())
}

/// Writes the model to `path` (safetensors, atomically): weights and architecture, with
/// the optimizer state once compiled and trained.
#[no_mangle]
pub unsafe extern "C" fn suanli_model_save(
    model: *const suanli_model,
    path: *const c_char,
) -> suanli_status {
    guard("suanli_model_save", || {
        let m = deref(model, "model")?;
        let path = text(path, "path")?;
        m.0.save(Path::new(path))?;
        Ok(())
    })
}

/// Releases a model handle (NULL is ignored).
#[no_mangle]
pub unsafe extern "C" fn suanli_model_release(model: *mut suanli_model) {
    if !model.is_null() {
        drop(Box::from_raw(model));
    }
}
