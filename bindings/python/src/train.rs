//! What `fit`, `evaluate` and `predict` need around the model: losses by their Keras names,
//! NumPy arrays as datasets (samples of any shape), the history as a dict, and the Python
//! callbacks `fit` calls (the GIL taken back only for the call).

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use suanli::data::Dataset;
use suanli::nn::{Callback, EpochBegin, EpochEnd, History, Loss, Progress, Sequential};

use crate::convert::{self, Matrix, Values};
use crate::errors::IntoPy;

/// A loss by its Keras name.
pub fn loss_of(name: &str) -> PyResult<Loss> {
    Ok(match name {
        "sparse_categorical_crossentropy" => Loss::SparseCategoricalCrossentropy,
        "categorical_crossentropy" => Loss::CategoricalCrossentropy,
        "binary_crossentropy" => Loss::BinaryCrossentropy,
        "mse" | "mean_squared_error" => Loss::MeanSquaredError,
        "mae" | "mean_absolute_error" => Loss::MeanAbsoluteError,
        "huber" | "huber_loss" => Loss::Huber,
        other => {
            return Err(PyValueError::new_err(format!(
                "loss: expected \"sparse_categorical_crossentropy\", \"categorical_crossentropy\", \"binary_crossentropy\", \"mse\", \"mae\" or \"huber\"; found {other:?}"
            )))
        }
    })
}

/// The Keras name of a loss.
pub fn loss_name(loss: Loss) -> &'static str {
    match loss {
        Loss::SparseCategoricalCrossentropy => "sparse_categorical_crossentropy",
        Loss::CategoricalCrossentropy => "categorical_crossentropy",
        Loss::BinaryCrossentropy => "binary_crossentropy",
        Loss::MeanSquaredError => "mean_squared_error",
        Loss::MeanAbsoluteError => "mean_absolute_error",
        Loss::Huber => "huber",
    }
}

/// A dataset on `device` from Python features (samples of any shape: the model checks it
/// against its input) and targets, for the model's loss.
/// [`dataset`] with per-row loss weights, when given (Keras's `sample_weight`).
pub fn weighted(
    py: Python<'_>,
    model: &Sequential,
    x: &Bound<'_, PyAny>,
    y: &Bound<'_, PyAny>,
    weights: Option<Vec<f32>>,
    what: &str,
) -> PyResult<Dataset> {
    let d = dataset(py, model, x, y, what)?;
    match weights {
        Some(w) => d.with_weights(&w).py(),
        None => Ok(d),
    }
}

/// The arrays of `x`: the columns of a model of several inputs (Python's `_Columns`, in the
/// model's input order), else `x` alone.
pub fn columns<'py>(x: &Bound<'py, PyAny>) -> PyResult<Vec<Bound<'py, PyAny>>> {
    match x.getattr("_suanli_columns") {
        Ok(c) => c.extract(),
        Err(_) => Ok(vec![x.clone()]),
    }
}

/// Whether `x` is a NumPy array (or anything with a dtype) of integers.
fn is_integer(x: &Bound<'_, PyAny>) -> bool {
    x.getattr("dtype")
        .and_then(|d| d.getattr("kind"))
        .and_then(|k| k.extract::<String>())
        .is_ok_and(|k| k == "i" || k == "u")
}

pub fn dataset(
    py: Python<'_>,
    model: &Sequential,
    x: &Bound<'_, PyAny>,
    y: &Bound<'_, PyAny>,
    what: &str,
) -> PyResult<Dataset> {
    let cols = columns(x)?;
    let ys = columns(y)?;
    let mut d = first_column(py, model, &cols[0], &ys[0], what)?;
    // The other outputs' targets: class labels for sparse cross-entropy, values otherwise.
    let losses = model.losses();
    if ys.len() != losses.len() {
        return Err(PyValueError::new_err(format!(
            "{what}: the model has {} outputs {:?}; found targets for {}",
            losses.len(),
            model.output_names(),
            ys.len()
        )));
    }
    for (k, (t, loss)) in ys.iter().zip(&losses).enumerate().skip(1) {
        let what = format!("{what} y[{k}]");
        if *loss == Loss::SparseCategoricalCrossentropy {
            let (labels, positions) = convert::labels(t, &what)?;
            if labels.len() != d.len() * positions {
                return Err(PyValueError::new_err(format!(
                    "{what}: x has {} samples but y[{k}] has {} labels",
                    d.len(),
                    labels.len() / positions.max(1)
                )));
            }
            d = py
                .detach(move || d.with_target_classes(&labels, positions))
                .py()?;
        } else {
            let m = convert::targets(t, &what)?;
            if m.rows != d.len() {
                return Err(PyValueError::new_err(format!(
                    "{what}: x has {} samples but y[{k}] has {} target rows",
                    d.len(),
                    m.rows
                )));
            }
            let n = m.cols;
            let values = m.into_f32();
            d = py.detach(move || d.with_target_values(&values, n)).py()?;
        }
    }
    // The other inputs' columns: integer arrays as ids (uploaded as integers), the rest as
    // floats.
    for (k, c) in cols.iter().enumerate().skip(1) {
        let (m, sample) = convert::samples(c, &format!("{what} x[{k}]"), false)?;
        if m.rows != d.len() {
            return Err(PyValueError::new_err(format!(
                "{what}: x[0] has {} samples but x[{k}] has {}",
                d.len(),
                m.rows
            )));
        }
        let ints = is_integer(c);
        let values = m.into_f32();
        d = py
            .detach(move || {
                if ints {
                    let ids: Vec<u32> = values
                        .iter()
                        .map(|&v| if v < 0.0 { u32::MAX } else { v as u32 })
                        .collect();
                    d.with_input_ids(&ids, &sample)
                } else {
                    d.with_input(&values, &sample)
                }
            })
            .py()?;
    }
    Ok(d)
}

/// The dataset of the first input's column and the targets.
fn first_column(
    py: Python<'_>,
    model: &Sequential,
    x: &Bound<'_, PyAny>,
    y: &Bound<'_, PyAny>,
    what: &str,
) -> PyResult<Dataset> {
    let (xm, sample) = convert::samples(x, &format!("{what} x"), true)?;
    let loss = model.loss().unwrap_or(Loss::SparseCategoricalCrossentropy);
    let dev = model.device().clone();
    let Matrix { rows, cols, values } = xm;
    if loss == Loss::SparseCategoricalCrossentropy {
        let (labels, positions) = convert::labels(y, &format!("{what} y"))?;
        if labels.len() != rows * positions {
            return Err(PyValueError::new_err(format!(
                "{what}: x has {rows} samples but y has {} labels",
                labels.len() / positions
            )));
        }
        // Integer arrays (token ids) go up as integers; bytes stay bytes.
        let ids = matches!(values, Values::F32(_)) && is_integer(x);
        py.detach(|| {
            match &values {
                Values::F32(f) if ids => {
                    let ids: Vec<u32> = f
                        .iter()
                        .map(|&v| if v < 0.0 { u32::MAX } else { v as u32 })
                        .collect();
                    Dataset::from_ids(&dev, &ids, cols, &labels, positions)
                }
                Values::U8(b) if positions == 1 => Dataset::from_u8(&dev, b, cols, 1.0, &labels),
                Values::F32(f) if positions == 1 => Dataset::from_f32(&dev, f, cols, &labels),
                Values::U8(b) => {
                    let f: Vec<f32> = b.iter().map(|&v| f32::from(v)).collect();
                    Dataset::from_f32_positions(&dev, &f, cols, &labels, positions)
                }
                Values::F32(f) => Dataset::from_f32_positions(&dev, f, cols, &labels, positions),
            }?
            .with_sample_shape(&sample)
        })
        .py()
    } else {
        let t = convert::targets(y, &format!("{what} y"))?;
        if t.rows != rows {
            return Err(PyValueError::new_err(format!(
                "{what}: x has {rows} samples but y has {} target rows",
                t.rows
            )));
        }
        let tl = t.cols;
        let targets = t.into_f32();
        let xs = match values {
            Values::F32(f) => f,
            Values::U8(b) => b.into_iter().map(f32::from).collect(),
        };
        py.detach(|| {
            Dataset::from_f32_targets(&dev, &xs, cols, &targets, tl)?.with_sample_shape(&sample)
        })
        .py()
    }
}

/// History as a dict of lists, Keras's `History.history`.
pub fn history_dict<'py>(py: Python<'py>, h: &History) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("loss", h.loss.clone())?;
    if !h.accuracy.is_empty() {
        d.set_item("accuracy", h.accuracy.clone())?;
    }
    if !h.val_loss.is_empty() {
        d.set_item("val_loss", h.val_loss.clone())?;
    }
    if !h.val_accuracy.is_empty() {
        d.set_item("val_accuracy", h.val_accuracy.clone())?;
    }
    // Metrics beyond loss and accuracy, under the engine's names (`val_` for validation).
    for (name, v) in &h.metrics {
        d.set_item(name, v.clone())?;
    }
    // The engine's own training seconds per epoch (validation excluded), as Rust reports them.
    d.set_item("epoch_seconds", h.epoch_seconds.clone())?;
    Ok(d)
}

/// Python callables called from `fit`, on the calling thread, with the GIL taken back only
/// for the call. An exception (KeyboardInterrupt from Ctrl-C included) stops training and is
/// raised when `fit` returns.
pub struct PyCallbacks {
    pub on_epoch_begin: Option<Py<PyAny>>,
    pub on_progress: Option<Py<PyAny>>,
    pub on_epoch_end: Option<Py<PyAny>>,
    /// Called as `f(epoch, step)` before each submission of steps but the first of an
    /// epoch (the first is announced by `on_epoch_begin`): Keras's `on_train_batch_begin`.
    pub on_chunk: Option<Py<PyAny>>,
    /// Steps in the current epoch.
    pub steps: usize,
    pub error: Option<PyErr>,
    /// The last epoch's accumulator (a stream of chunks adds these up).
    pub sums: Vec<f64>,
}

impl PyCallbacks {
    /// Calls `f` with the GIL; false (stop) when it raises or a signal handler does.
    fn call(&mut self, f: impl FnOnce(Python<'_>) -> PyResult<bool>) -> bool {
        if self.error.is_some() {
            return false;
        }
        match Python::attach(|py| py.check_signals().and_then(|()| f(py))) {
            Ok(go_on) => go_on,
            Err(e) => {
                self.error = Some(e);
                false
            }
        }
    }
}

impl Callback for PyCallbacks {
    fn on_steps(&mut self, epoch: usize, done: usize) {
        if done >= self.steps {
            return;
        }
        if let Some(f) = &self.on_chunk {
            let f = Python::attach(|py| f.clone_ref(py));
            self.call(|py| {
                f.call1(py, (epoch, done))?;
                Ok(true)
            });
        }
    }

    fn on_epoch_begin(&mut self, e: &EpochBegin) {
        self.steps = e.steps;
        if let Some(f) = &self.on_epoch_begin {
            let f = Python::attach(|py| f.clone_ref(py));
            self.call(|py| {
                f.call1(py, (e.epoch, e.epochs, e.steps, e.first))?;
                Ok(true)
            });
        }
    }

    fn on_progress(&mut self, p: &Progress) -> bool {
        let f = self
            .on_progress
            .as_ref()
            .map(|f| Python::attach(|py| f.clone_ref(py)));
        self.call(|py| {
            if let Some(f) = f {
                f.call1(py, (p.epoch, p.step, p.steps, p.loss, p.accuracy))?;
            }
            Ok(true)
        })
    }

    fn on_epoch_end(&mut self, e: &EpochEnd, h: &History) -> bool {
        self.sums = e.sums.clone();
        let f = self
            .on_epoch_end
            .as_ref()
            .map(|f| Python::attach(|py| f.clone_ref(py)));
        self.call(|py| {
            let Some(f) = f else { return Ok(true) };
            let logs = PyDict::new(py);
            logs.set_item("loss", e.loss)?;
            if let Some(a) = e.accuracy {
                logs.set_item("accuracy", a)?;
            }
            for (name, v) in &e.metrics {
                logs.set_item(name, v)?;
            }
            if let Some(v) = &e.validation {
                logs.set_item("val_loss", v.loss)?;
                if let Some(a) = v.accuracy {
                    logs.set_item("val_accuracy", a)?;
                }
                for (name, x) in &v.metrics {
                    logs.set_item(format!("val_{name}"), x)?;
                }
            }
            let info = PyDict::new(py);
            info.set_item("epoch", e.epoch)?;
            info.set_item("epochs", e.epochs)?;
            info.set_item("steps", e.steps)?;
            info.set_item("seconds", e.seconds)?;
            info.set_item("samples_per_second", e.samples_per_second)?;
            info.set_item("keras_line", e.keras_line())?;
            info.set_item("history", history_dict(py, h)?)?;
            let r = f.call1(py, (logs, info))?;
            // None (the usual Python callback) means go on.
            Ok(r.is_none(py) || r.is_truthy(py)?)
        })
    }
}

/// `more` appended to `all`, epoch by epoch.
pub fn append(all: &mut History, more: &History) {
    all.loss.extend(&more.loss);
    all.accuracy.extend(&more.accuracy);
    all.val_loss.extend(&more.val_loss);
    all.val_accuracy.extend(&more.val_accuracy);
    all.epoch_seconds.extend(&more.epoch_seconds);
    all.utilisation.extend(&more.utilisation);
    for (name, v) in &more.metrics {
        all.metrics.entry(name.clone()).or_default().extend(v);
    }
}
