//! The native half of `suanli.keras.Sequential`: building, compiling, `fit` with Python
//! callbacks (the GIL released while the device works; Ctrl-C seen between chunks of steps),
//! `evaluate`, `predict`, and the safetensors files shared with Rust.

use std::path::PathBuf;

use numpy::prelude::*;
use numpy::{PyArray1, PyArray2};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use suanli::data::Dataset;
use suanli::nn::{
    Callback, Dense, EpochBegin, EpochEnd, FitOptions, History, Initializer, Loss, Optimizer,
    Progress, Sequential,
};
use suanli::Tensor;

use crate::convert::{self, Matrix, Values};
use crate::device::PyDevice;
use crate::errors::IntoPy;

/// A Keras-style sequential model on one device.
#[pyclass(module = "suanli._native", name = "Model")]
pub struct PyModel {
    inner: Sequential,
    /// Epochs trained so far, and their history (saved with the model once compiled).
    history: History,
    /// The seed of the last `fit` (kept in checkpoints).
    seed: u64,
}

/// A loss by its Keras name.
fn loss_of(name: &str) -> PyResult<Loss> {
    Ok(match name {
        "sparse_categorical_crossentropy" => Loss::SparseCategoricalCrossentropy,
        "categorical_crossentropy" => Loss::CategoricalCrossentropy,
        "binary_crossentropy" => Loss::BinaryCrossentropy,
        "mse" | "mean_squared_error" => Loss::MeanSquaredError,
        other => {
            return Err(PyValueError::new_err(format!(
                "loss: expected \"sparse_categorical_crossentropy\", \"categorical_crossentropy\", \"binary_crossentropy\" or \"mse\"; found {other:?}"
            )))
        }
    })
}

/// The Keras name of a loss.
fn loss_name(loss: Loss) -> &'static str {
    match loss {
        Loss::SparseCategoricalCrossentropy => "sparse_categorical_crossentropy",
        Loss::CategoricalCrossentropy => "categorical_crossentropy",
        Loss::BinaryCrossentropy => "binary_crossentropy",
        Loss::MeanSquaredError => "mean_squared_error",
    }
}

/// A dataset on `device` from Python features and targets, for `loss`.
fn dataset(
    py: Python<'_>,
    model: &Sequential,
    x: &Bound<'_, PyAny>,
    y: &Bound<'_, PyAny>,
    what: &str,
) -> PyResult<Dataset> {
    let xm = convert::matrix(x, &format!("{what} x"), true)?;
    let loss = model.loss().unwrap_or(Loss::SparseCategoricalCrossentropy);
    let dev = model.device().clone();
    let Matrix { rows, cols, values } = xm;
    if loss == Loss::SparseCategoricalCrossentropy {
        let labels = convert::labels(y, &format!("{what} y"))?;
        if labels.len() != rows {
            return Err(PyValueError::new_err(format!(
                "{what}: x has {rows} samples but y has {} labels",
                labels.len()
            )));
        }
        py.detach(|| match &values {
            Values::U8(b) => Dataset::from_u8(&dev, b, cols, 1.0, &labels),
            Values::F32(f) => Dataset::from_f32(&dev, f, cols, &labels),
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
        py.detach(|| Dataset::from_f32_targets(&dev, &xs, cols, &targets, tl))
            .py()
    }
}

/// History as a dict of lists, Keras's `History.history`.
fn history_dict<'py>(py: Python<'py>, h: &History) -> PyResult<Bound<'py, PyDict>> {
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
    // The engine's own training seconds per epoch (validation excluded), as Rust reports them.
    d.set_item("epoch_seconds", h.epoch_seconds.clone())?;
    Ok(d)
}

/// Python callables called from `fit`, on the calling thread, with the GIL taken back only
/// for the call. An exception (KeyboardInterrupt from Ctrl-C included) stops training and is
/// raised when `fit` returns.
struct PyCallbacks {
    on_epoch_begin: Option<Py<PyAny>>,
    on_progress: Option<Py<PyAny>>,
    on_epoch_end: Option<Py<PyAny>>,
    error: Option<PyErr>,
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
    fn on_epoch_begin(&mut self, e: &EpochBegin) {
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
            if let Some(v) = e.validation {
                logs.set_item("val_loss", v.loss)?;
                if let Some(a) = v.accuracy {
                    logs.set_item("val_accuracy", a)?;
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

#[pymethods]
impl PyModel {
    /// An empty model on `device`; `seed` fixes the initial weights.
    #[new]
    #[pyo3(signature = (device, seed = 0))]
    fn new(device: &PyDevice, seed: u64) -> Self {
        PyModel {
            inner: Sequential::with_seed(&device.0, seed),
            history: History::default(),
            seed,
        }
    }

    /// Appends a dense layer. `dropout` is the rate of a Keras `Dropout` layer after it.
    #[pyo3(signature = (units, activation = "linear", input_dim = None, use_bias = true, initializer = "glorot_uniform", dropout = 0.0))]
    fn add_dense(
        &mut self,
        units: usize,
        activation: &str,
        input_dim: Option<usize>,
        use_bias: bool,
        initializer: &str,
        dropout: f32,
    ) -> PyResult<()> {
        let mut b = Dense::new(units, activation)
            .use_bias(use_bias)
            .initializer(Initializer::parse(initializer).py()?)
            .dropout(dropout);
        if let Some(d) = input_dim {
            b = b.input_dim(d);
        }
        self.inner.add(b).py()
    }

    /// Sets the optimizer (`sgd`, `adam`, `adamw`, `rmsprop`, with Keras's defaults for what
    /// is not given) and the loss.
    #[pyo3(signature = (optimizer, loss, learning_rate = None, beta_1 = None, beta_2 = None, epsilon = None, momentum = None, nesterov = None, weight_decay = None, rho = None))]
    #[allow(clippy::too_many_arguments)] // Keras's optimizer arguments, spelled out
    fn compile(
        &mut self,
        optimizer: &str,
        loss: &str,
        learning_rate: Option<f64>,
        beta_1: Option<f64>,
        beta_2: Option<f64>,
        epsilon: Option<f64>,
        momentum: Option<f64>,
        nesterov: Option<bool>,
        weight_decay: Option<f64>,
        rho: Option<f64>,
    ) -> PyResult<()> {
        let name = optimizer.to_ascii_lowercase();
        let mut opt = match name.as_str() {
            "sgd" => Optimizer::sgd(0.01),
            "adam" => Optimizer::adam(),
            "adamw" => Optimizer::adamw(),
            "rmsprop" => Optimizer::rmsprop(),
            other => {
                return Err(PyValueError::new_err(format!(
                "optimizer: expected \"sgd\", \"adam\", \"adamw\" or \"rmsprop\"; found {other:?}"
            )))
            }
        };
        if let Some(lr) = learning_rate {
            opt = opt.with_lr(lr);
        }
        match &mut opt {
            Optimizer::Sgd {
                momentum: m,
                nesterov: n,
                ..
            } => {
                *m = momentum.unwrap_or(*m);
                *n = nesterov.unwrap_or(*n);
            }
            Optimizer::Adam {
                beta1, beta2, eps, ..
            } => {
                *beta1 = beta_1.unwrap_or(*beta1);
                *beta2 = beta_2.unwrap_or(*beta2);
                *eps = epsilon.unwrap_or(*eps);
            }
            Optimizer::AdamW {
                weight_decay: w,
                beta1,
                beta2,
                eps,
                ..
            } => {
                *w = weight_decay.unwrap_or(*w);
                *beta1 = beta_1.unwrap_or(*beta1);
                *beta2 = beta_2.unwrap_or(*beta2);
                *eps = epsilon.unwrap_or(*eps);
            }
            Optimizer::RmsProp { rho: r, eps, .. } => {
                *r = rho.unwrap_or(*r);
                *eps = epsilon.unwrap_or(*eps);
            }
        }
        self.inner.compile(opt, loss_of(loss)?).py()
    }

    /// Trains; returns the history of this call as a dict of lists.
    #[pyo3(signature = (x, y, epochs = 1, batch_size = 32, shuffle = true, seed = 0, validation_data = None, validation_split = 0.0, checkpoint = None, on_epoch_begin = None, on_progress = None, on_epoch_end = None))]
    #[allow(clippy::too_many_arguments)] // Keras's fit arguments, spelled out
    fn fit<'py>(
        &mut self,
        py: Python<'py>,
        x: &Bound<'py, PyAny>,
        y: &Bound<'py, PyAny>,
        epochs: usize,
        batch_size: usize,
        shuffle: bool,
        seed: u64,
        validation_data: Option<(Bound<'py, PyAny>, Bound<'py, PyAny>)>,
        validation_split: f64,
        checkpoint: Option<PathBuf>,
        on_epoch_begin: Option<Py<PyAny>>,
        on_progress: Option<Py<PyAny>>,
        on_epoch_end: Option<Py<PyAny>>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let train = dataset(py, &self.inner, x, y, "fit")?;
        let val = match &validation_data {
            Some((vx, vy)) => Some(dataset(py, &self.inner, vx, vy, "validation_data")?),
            None => None,
        };
        let mut cbs = PyCallbacks {
            on_epoch_begin,
            on_progress,
            on_epoch_end,
            error: None,
        };
        let model = &mut self.inner;
        let result = py.detach(|| {
            let options = FitOptions {
                epochs,
                batch_size,
                shuffle,
                seed,
                validation_data: val.as_ref(),
                validation_split,
                checkpoint: checkpoint.as_deref(),
                callbacks: vec![&mut cbs],
                ..Default::default()
            };
            model.fit(&train, options)
        });
        if let Some(e) = cbs.error.take() {
            return Err(e);
        }
        let h = result.py()?;
        self.seed = seed;
        append(&mut self.history, &h);
        history_dict(py, &h)
    }

    /// `(loss, accuracy)` on `x`, `y` (accuracy None for losses without one).
    #[pyo3(signature = (x, y, batch_size = 32))]
    fn evaluate(
        &self,
        py: Python<'_>,
        x: &Bound<'_, PyAny>,
        y: &Bound<'_, PyAny>,
        batch_size: usize,
    ) -> PyResult<(f64, Option<f64>)> {
        let data = dataset(py, &self.inner, x, y, "evaluate")?;
        let e = py.detach(|| self.inner.evaluate(&data, batch_size)).py()?;
        Ok((e.loss, e.accuracy))
    }

    /// The model's outputs for `x` as a float32 array (samples, outputs), computed in chunks
    /// of at least `batch_size` rows that each fit the device's largest binding.
    #[pyo3(signature = (x, batch_size = 32))]
    fn predict<'py>(
        &self,
        py: Python<'py>,
        x: &Bound<'py, PyAny>,
        batch_size: usize,
    ) -> PyResult<Bound<'py, PyArray2<f32>>> {
        let m = convert::matrix(x, "predict x", false)?;
        let (rows, cols) = (m.rows, m.cols);
        let data = m.into_f32();
        let outs = self.inner.output_dim().unwrap_or(0);
        let dev = self.inner.device();
        // 16 MiB of inputs or outputs per chunk: far from any binding limit, few submissions.
        let chunk = ((16usize << 20) / (4 * cols.max(outs).max(1)))
            .max(batch_size)
            .max(1);
        let out = py.detach(|| -> suanli::Result<Vec<f32>> {
            let mut out = Vec::with_capacity(rows * outs);
            for start in (0..rows).step_by(chunk) {
                let n = chunk.min(rows - start);
                let t =
                    Tensor::from_slice(dev, &data[start * cols..(start + n) * cols], &[n, cols])?;
                out.extend(self.inner.predict(&t)?.to_vec()?);
            }
            Ok(out)
        });
        PyArray1::from_vec(py, out.py()?).reshape([rows, outs])
    }

    /// The Keras-style summary table.
    fn summary(&self) -> String {
        self.inner.summary()
    }

    /// Parameters in all layers.
    #[getter]
    fn param_count(&self) -> usize {
        self.inner.param_count()
    }

    /// Layers.
    fn __len__(&self) -> usize {
        self.inner.len()
    }

    /// Input features (None before the first layer).
    #[getter]
    fn input_dim(&self) -> Option<usize> {
        self.inner.input_dim()
    }

    /// Outputs of the last layer.
    #[getter]
    fn output_dim(&self) -> Option<usize> {
        self.inner.output_dim()
    }

    /// Optimizer steps taken so far (fit interrupted mid-epoch stops between steps).
    #[getter]
    fn steps_taken(&self) -> u64 {
        self.inner.steps_taken()
    }

    /// Whether `compile` ran.
    #[getter]
    fn compiled(&self) -> bool {
        self.inner.loss().is_some()
    }

    /// The loss's Keras name, once compiled.
    #[getter]
    fn loss(&self) -> Option<&'static str> {
        self.inner.loss().map(loss_name)
    }

    /// The device it lives on.
    #[getter]
    fn device(&self) -> PyDevice {
        PyDevice(self.inner.device().clone())
    }

    /// The history of every `fit` so far, as a dict of lists.
    #[getter]
    fn history<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        history_dict(py, &self.history)
    }

    /// Saves as a safetensors file, atomically: with the optimizer state and training
    /// history once compiled (a checkpoint, which Rust's `Sequential::load` reads too),
    /// weights and architecture only otherwise.
    fn save(&self, py: Python<'_>, path: PathBuf) -> PyResult<()> {
        py.detach(|| {
            if self.inner.loss().is_some() {
                self.inner
                    .save_checkpoint(&path, self.history.loss.len(), self.seed, &self.history)
            } else {
                self.inner.save(&path)
            }
        })
        .py()
    }

    /// Loads a model file or checkpoint (written by Python or Rust) onto `device`: compiled,
    /// with its optimizer state, when the file is a checkpoint.
    #[staticmethod]
    fn load(py: Python<'_>, path: PathBuf, device: &PyDevice) -> PyResult<PyModel> {
        let dev = device.0.clone();
        py.detach(move || {
            match Sequential::load_checkpoint(&dev, &path) {
                Ok((inner, ck)) => Ok(PyModel {
                    inner,
                    history: ck.history,
                    seed: ck.seed,
                }),
                // Plain weights (or a damaged file, which `load` reports in its own words).
                Err(suanli::Error::Malformed { .. }) => Ok(PyModel {
                    inner: Sequential::load(&dev, &path)?,
                    history: History::default(),
                    seed: 0,
                }),
                Err(e) => Err(e),
            }
        })
        .py()
    }
}

/// `more` appended to `all`, epoch by epoch.
fn append(all: &mut History, more: &History) {
    all.loss.extend(&more.loss);
    all.accuracy.extend(&more.accuracy);
    all.val_loss.extend(&more.val_loss);
    all.val_accuracy.extend(&more.val_accuracy);
    all.epoch_seconds.extend(&more.epoch_seconds);
    all.utilisation.extend(&more.utilisation);
}
