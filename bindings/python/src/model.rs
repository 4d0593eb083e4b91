//! The native half of `suanli.keras.Sequential`: building, compiling, `fit` with Python
//! callbacks (the GIL released while the device works; Ctrl-C seen between chunks of steps),
//! `evaluate`, `predict`, and the safetensors files shared with Rust.

use std::path::PathBuf;
use std::sync::Mutex;

use numpy::prelude::*;
use numpy::{PyArray1, PyArrayDyn};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use suanli::nn::{
    Clip, DecayFilter, FitOptions, History, Loss, MetricsServer, Sequential, Src, ValidationFreq,
};

use crate::convert;
use crate::device::PyDevice;
use crate::errors::IntoPy;
use crate::model_args::{loss_scaling_of, metric_of, optimizer_of, srcs};
use crate::model_infer;
use crate::tensor::PyTensor;
use crate::train::{append, history_dict, loss_name, loss_of, weighted, PyCallbacks};

/// Loss, accuracy and the metrics by name: what `evaluate` gives Python.
type Evaluated = (f64, Option<f64>, std::collections::BTreeMap<String, f64>);

/// A Keras-style sequential model on one device.
#[pyclass(module = "suanli._native", name = "Model")]
pub struct PyModel {
    pub(crate) inner: Sequential,
    /// Epochs trained so far, and their history (saved with the model once compiled).
    history: History,
    /// The seed of the last `fit` (kept in checkpoints).
    seed: u64,
}

#[pymethods]
impl PyModel {
    /// An empty model on `device` for samples of `input_shape` (or the first layer says it);
    /// `seed` fixes the initial weights.
    #[new]
    #[pyo3(signature = (device, seed = 0, input_shape = None))]
    fn new(device: &PyDevice, seed: u64, input_shape: Option<Vec<usize>>) -> Self {
        let mut inner = Sequential::with_seed(&device.0, seed);
        if let Some(s) = input_shape {
            inner = inner.input_shape(&s);
        }
        PyModel {
            inner,
            history: History::default(),
            seed,
        }
    }

    /// Appends a layer given by its spec as JSON, Keras's form: `{"class_name": "Conv2D",
    /// "config": {"filters": 32, "kernel_size": [3, 3], ...}}` (the shape, the arguments and
    /// their values are checked here, once, for Rust and Python alike).
    fn add_layer(&mut self, spec: &str) -> PyResult<()> {
        let v: serde_json::Value = serde_json::from_str(spec)
            .map_err(|e| PyValueError::new_err(format!("layer spec: {e}")))?;
        self.inner.add(v).py()
    }

    /// Appends a layer of a graph (the functional API), given by its spec as JSON, reading
    /// `reads`: -1 - k for the model's input k (-1 the first), `j` for layer `j`'s output.
    fn add_node(&mut self, spec: &str, reads: Vec<i64>) -> PyResult<()> {
        let v: serde_json::Value = serde_json::from_str(spec)
            .map_err(|e| PyValueError::new_err(format!("layer spec: {e}")))?;
        self.inner.add_node_from(v, &srcs(&reads)).py()
    }

    /// Appends another call of layer `of` (Keras's layer object called again: the same
    /// weights), reading `reads` as `add_node` reads them.
    fn add_call(&mut self, of: usize, reads: Vec<i64>) -> PyResult<()> {
        self.inner.add_call_of(of, &srcs(&reads)).py()
    }

    /// Appends an input after the first (Keras's `Model(inputs=[a, b])`); its index.
    fn add_input(&mut self, shape: Vec<usize>, name: &str) -> PyResult<usize> {
        self.inner.add_input(&shape, name).py()
    }

    /// Every input's name, the first's first.
    fn input_names(&self) -> Vec<String> {
        self.inner.input_names()
    }

    /// Every input's per-sample shape, the first's first.
    fn input_shapes(&self) -> Vec<Vec<usize>> {
        self.inner
            .input_shapes()
            .iter()
            .map(|s| s.to_vec())
            .collect()
    }

    /// Names the model and its input (Keras's `Model(name=)` and `Input(name=)`).
    #[pyo3(signature = (model = None, input = None))]
    fn set_names(&mut self, model: Option<String>, input: Option<String>) -> PyResult<()> {
        if let Some(i) = input {
            self.inner.set_input_name(&i).py()?;
        }
        if let Some(m) = model {
            self.inner.set_name(&m);
        }
        Ok(())
    }

    /// What each layer reads (-1: the model's input), for a graph; `None` for a chain.
    fn graph(&self) -> Option<Vec<Vec<i64>>> {
        if self.inner.is_chain() {
            return None;
        }
        Some(
            self.inner
                .layer_sources()
                .into_iter()
                .map(|r| {
                    r.into_iter()
                        .map(|s| match s {
                            Src::Input(k) => -1 - k as i64,
                            Src::Layer(j) => j as i64,
                        })
                        .collect()
                })
                .collect(),
        )
    }

    /// The input's name.
    fn input_name(&self) -> String {
        self.inner.input_name()
    }

    /// Each layer's spec as JSON (Keras's form, with the names given at `add`).
    fn layer_specs(&self) -> Vec<String> {
        self.inner
            .layer_specs()
            .iter()
            .map(|s| s.to_json().to_string())
            .collect()
    }

    /// The per-sample input shape.
    #[getter]
    fn input_shape(&self) -> Option<Vec<usize>> {
        self.inner.expected_input_shape().map(<[usize]>::to_vec)
    }

    /// The per-sample output shape.
    #[getter]
    fn output_shape(&self) -> Option<Vec<usize>> {
        self.inner.output_shape().map(<[usize]>::to_vec)
    }

    /// Sets the optimizer (`sgd`, `adam`, `adamw`, `rmsprop`, with Keras's defaults for what
    /// is not given) and the loss.
    #[pyo3(signature = (optimizer, loss, from_logits = false, learning_rate = None, beta_1 = None, beta_2 = None, epsilon = None, momentum = None, nesterov = None, weight_decay = None, rho = None, clipnorm = None, clipvalue = None, global_clipnorm = None, more_losses = None, loss_weights = None, decay_exclude = None, gradient_accumulation_steps = None, precision = None, loss_scale = None))]
    #[allow(clippy::too_many_arguments)] // Keras's optimizer arguments, spelled out
    fn compile(
        &mut self,
        optimizer: &str,
        loss: &str,
        from_logits: bool,
        learning_rate: Option<f64>,
        beta_1: Option<f64>,
        beta_2: Option<f64>,
        epsilon: Option<f64>,
        momentum: Option<f64>,
        nesterov: Option<bool>,
        weight_decay: Option<f64>,
        rho: Option<f64>,
        clipnorm: Option<f64>,
        clipvalue: Option<f64>,
        global_clipnorm: Option<f64>,
        more_losses: Option<Vec<(String, bool)>>,
        loss_weights: Option<Vec<f32>>,
        decay_exclude: Option<Vec<String>>,
        gradient_accumulation_steps: Option<usize>,
        precision: Option<String>,
        loss_scale: Option<(String, f64, u32)>,
    ) -> PyResult<()> {
        let clip = Clip {
            norm: clipnorm,
            value: clipvalue,
            global_norm: global_clipnorm,
        };
        clip.validate().py()?;
        let opt = optimizer_of(
            optimizer,
            learning_rate,
            [beta_1, beta_2, epsilon, momentum, weight_decay, rho],
            nesterov,
        )?;
        // A loss per output (the first, then `more_losses`), each checked against its
        // output's activation.
        let mut losses = vec![(loss_of(loss)?, from_logits)];
        for (name, logits) in more_losses.unwrap_or_default() {
            losses.push((loss_of(&name)?, logits));
        }
        let acts = self.inner.output_activations();
        if losses.len() == 1 {
            losses = vec![losses[0]; acts.len().max(1)];
        }
        for ((l, logits), act) in losses.iter().zip(&acts) {
            l.check_from_logits(*logits, *act).py()?;
        }
        let only: Vec<Loss> = losses.iter().map(|(l, _)| *l).collect();
        match (acts.len(), &loss_weights) {
            (0 | 1, None) => self.inner.compile(opt, only[0]).py()?,
            _ => self
                .inner
                .compile_outputs(opt, &only, loss_weights.as_deref().unwrap_or(&[]))
                .py()?,
        }
        self.inner.set_gradient_clipping(clip).py()?;
        let filter = match decay_exclude {
            Some(names) => DecayFilter::ExcludeNames(names),
            None => DecayFilter::All,
        };
        self.inner.set_weight_decay_filter(filter).py()?;
        self.inner
            .set_gradient_accumulation(gradient_accumulation_steps.unwrap_or(1))
            .py()?;
        let policy = match precision {
            Some(p) => p.parse::<suanli::Precision>().py()?,
            None => suanli::Precision::Float32,
        };
        self.inner.set_precision_policy(policy);
        let scaling = loss_scaling_of(loss_scale)?;
        self.inner.set_loss_scaling(scaling).py()
    }

    /// The precision policy's name (`"float32"` or `"mixed_float16"`).
    fn precision_policy(&self) -> &'static str {
        self.inner.precision_policy().name()
    }

    /// The loss scale's state, `(scale, clean steps, skipped steps)`, read from the device;
    /// `None` without loss scaling.
    fn loss_scale_state(&self) -> PyResult<Option<(f64, u32, u32)>> {
        Ok(self
            .inner
            .loss_scale_state()
            .py()?
            .map(|s| (s.scale, s.clean_steps, s.skipped_steps)))
    }

    /// Makes layers `outputs` the model's outputs, in order (Keras's `Model(outputs=[...])`).
    fn set_outputs(&mut self, outputs: Vec<usize>) -> PyResult<()> {
        self.inner.set_output_layers(&outputs).py()
    }

    /// Each output's layer index, in order.
    fn output_layers(&self) -> Vec<usize> {
        self.inner.output_layers()
    }

    /// Each output's name (its layer's).
    fn output_names(&self) -> Vec<String> {
        self.inner.output_names()
    }

    /// Appends every layer of `other`, sharing its weights (a model used as a layer).
    fn add_shared(&mut self, other: PyRef<'_, PyModel>) -> PyResult<()> {
        self.inner.add_shared(&other.inner).py()
    }

    /// The model on `x` (a Tensor or an array of samples), in inference mode, as a Tensor on
    /// the model's device: Keras's `model(x)`.
    fn call(&self, py: Python<'_>, x: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        model_infer::call(&self.inner, py, x)
    }

    /// Trains; returns the history of this call as a dict of lists.
    #[pyo3(signature = (x, y, epochs = 1, batch_size = 32, shuffle = true, seed = 0, validation_data = None, validation_split = 0.0, checkpoint = None, on_epoch_begin = None, on_progress = None, on_epoch_end = None, learning_rate = None, initial_epoch = 0, validation_every = 1, validation_epochs = None, on_chunk = None, sample_weight = None, validation_weight = None, metrics_addr = None, on_metrics_address = None))]
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
        learning_rate: Option<Py<PyAny>>,
        initial_epoch: usize,
        validation_every: usize,
        validation_epochs: Option<Vec<usize>>,
        on_chunk: Option<Py<PyAny>>,
        sample_weight: Option<Vec<f32>>,
        validation_weight: Option<Vec<f32>>,
        metrics_addr: Option<String>,
        on_metrics_address: Option<Py<PyAny>>,
    ) -> PyResult<Bound<'py, PyDict>> {
        // keras.callbacks.PrometheusMetrics: the server lives while this fit runs, and its
        // bound address (port 0 picks one) goes back to the callback before training starts.
        let mut server = match &metrics_addr {
            Some(a) => Some(MetricsServer::start(a, self.inner.device()).py()?),
            None => None,
        };
        if let (Some(s), Some(f)) = (&server, &on_metrics_address) {
            f.call1(py, (s.address(),))?;
        }
        let train = weighted(py, &self.inner, x, y, sample_weight, "fit")?;
        let val = match &validation_data {
            Some((vx, vy)) => Some(weighted(
                py,
                &self.inner,
                vx,
                vy,
                validation_weight,
                "validation_data",
            )?),
            None => None,
        };
        let mut cbs = PyCallbacks {
            on_epoch_begin,
            on_progress,
            on_epoch_end,
            on_chunk,
            steps: 0,
            error: None,
            sums: Vec::new(),
        };
        // `learning_rate(step)`, asked for every step's rate (a Python callable: the GIL is
        // taken for the call). Its exception is kept and raised once the engine stops on the
        // NaN returned in its place.
        let lr_error: Mutex<Option<PyErr>> = Mutex::new(None);
        let lr_at = |step: u64| -> f64 {
            let Some(f) = &learning_rate else {
                return f64::NAN;
            };
            Python::attach(
                |py| match f.call1(py, (step,)).and_then(|v| v.extract::<f64>(py)) {
                    Ok(v) => v,
                    Err(e) => {
                        if let Ok(mut slot) = lr_error.lock() {
                            slot.get_or_insert(e);
                        }
                        f64::NAN
                    }
                },
            )
        };
        let step_lr: Option<&(dyn Fn(u64) -> f64 + Sync)> =
            learning_rate.as_ref().map(|_| &lr_at as _);
        let model = &mut self.inner;
        let result = py.detach(|| {
            let options = FitOptions {
                step_lr: step_lr.map(|f| f as &dyn Fn(u64) -> f64),
                initial_epoch,
                validation_freq: match validation_epochs {
                    Some(v) => ValidationFreq::Epochs(v),
                    None => ValidationFreq::Every(validation_every),
                },
                epochs,
                batch_size,
                shuffle,
                seed,
                validation_data: val.as_ref(),
                validation_split,
                checkpoint: checkpoint.as_deref(),
                callbacks: match server.as_mut() {
                    // The server first: callbacks after it see this epoch's numbers served.
                    Some(s) => vec![s as &mut dyn suanli::nn::Callback, &mut cbs],
                    None => vec![&mut cbs],
                },
                ..Default::default()
            };
            model.fit(&train, options)
        });
        if let Some(e) = cbs.error.take() {
            return Err(e);
        }
        if let Some(e) = lr_error.into_inner().ok().flatten() {
            return Err(e);
        }
        let h = result.py()?;
        self.seed = seed;
        append(&mut self.history, &h);
        let d = history_dict(py, &h)?;
        d.set_item("_sums", std::mem::take(&mut cbs.sums))?;
        Ok(d)
    }

    /// Sets the metrics beyond loss and accuracy, for every output: `(name, parameter)`
    /// pairs (see [`metric_of`]).
    fn set_metrics(&mut self, metrics: Vec<(String, f64)>) -> PyResult<()> {
        let ms = metrics
            .iter()
            .map(metric_of)
            .collect::<PyResult<Vec<_>>>()?;
        self.inner.set_metrics(&ms).py()
    }

    /// Sets each output's metrics: a list of `(name, parameter)` pairs per output, in output
    /// order (Keras's `metrics={output: [...]}`); reported as `{output}_{name}`.
    fn set_output_metrics(&mut self, metrics: Vec<Vec<(String, f64)>>) -> PyResult<()> {
        let per = metrics
            .iter()
            .map(|ms| ms.iter().map(metric_of).collect::<PyResult<Vec<_>>>())
            .collect::<PyResult<Vec<_>>>()?;
        self.inner.set_output_metrics(&per).py()
    }

    /// The accumulator of an evaluation of `x`, `y`: parts of a dataset add theirs up and
    /// hand the total to `evaluation_of`.
    #[pyo3(signature = (x, y, batch_size = 32, sample_weight = None))]
    fn evaluate_sums(
        &self,
        py: Python<'_>,
        x: &Bound<'_, PyAny>,
        y: &Bound<'_, PyAny>,
        batch_size: usize,
        sample_weight: Option<Vec<f32>>,
    ) -> PyResult<Vec<f64>> {
        let data = weighted(py, &self.inner, x, y, sample_weight, "evaluate")?;
        py.detach(|| self.inner.evaluate_sums(&data, batch_size))
            .py()
    }

    /// `(loss, accuracy, {metric: value})` from an accumulator's contents.
    fn evaluation_of(&self, sums: Vec<f64>) -> PyResult<Evaluated> {
        let e = self.inner.evaluation_of(&sums).py()?;
        Ok((e.loss, e.accuracy, e.metrics.into_iter().collect()))
    }

    /// `(loss, accuracy, {metric: value})` on `x`, `y` (accuracy None for losses without
    /// one; the metrics those of `set_metrics`, under the engine's names).
    #[pyo3(signature = (x, y, batch_size = 32, sample_weight = None))]
    fn evaluate(
        &self,
        py: Python<'_>,
        x: &Bound<'_, PyAny>,
        y: &Bound<'_, PyAny>,
        batch_size: usize,
        sample_weight: Option<Vec<f32>>,
    ) -> PyResult<Evaluated> {
        let data = weighted(py, &self.inner, x, y, sample_weight, "evaluate")?;
        let e = py.detach(|| self.inner.evaluate(&data, batch_size)).py()?;
        Ok((e.loss, e.accuracy, e.metrics.into_iter().collect()))
    }

    /// The model's outputs for `x` (samples of the model's input shape, or of it without a
    /// trailing channel of 1) as a float32 array (samples, output shape…), computed in chunks
    /// of at least `batch_size` rows that each fit the device's largest binding.
    #[pyo3(signature = (x, batch_size = 32))]
    fn predict<'py>(
        &self,
        py: Python<'py>,
        x: &Bound<'py, PyAny>,
        batch_size: usize,
    ) -> PyResult<Bound<'py, PyAny>> {
        model_infer::predict(&self.inner, py, x, batch_size)
    }

    /// Freezes (false) or unfreezes layer `index` (Keras's `layer.trainable`).
    fn set_trainable(&mut self, index: usize, trainable: bool) -> PyResult<()> {
        self.inner.set_trainable(index, trainable).py()
    }

    /// Every weight as `(name, float32 array)`, in Keras's `get_weights` order and layouts.
    fn weights<'py>(
        &self,
        py: Python<'py>,
    ) -> PyResult<Vec<(String, Bound<'py, PyArrayDyn<f32>>)>> {
        let mut out = Vec::new();
        for (name, t) in self.inner.weights() {
            let v = py.detach(|| t.to_vec()).py()?;
            out.push((name, PyArray1::from_vec(py, v).reshape(t.shape().to_vec())?));
        }
        Ok(out)
    }

    /// Overwrites every weight in place from arrays of Keras's shapes (checked, each named in
    /// the error, before anything is written).
    fn set_weights(&self, py: Python<'_>, values: Vec<Bound<'_, PyAny>>) -> PyResult<()> {
        let w = self.inner.weights();
        if values.len() != w.len() {
            return Err(PyValueError::new_err(format!(
                "set_weights: expected {} arrays (one per weight: {}); found {}",
                w.len(),
                w.iter()
                    .map(|(n, _)| n.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
                values.len()
            )));
        }
        let mut data = Vec::with_capacity(values.len());
        for ((name, t), v) in w.iter().zip(&values) {
            let (shape, vals) = convert::values(v, "set_weights", false)?;
            if shape != t.shape() {
                return Err(PyValueError::new_err(format!(
                    "set_weights: {name} has shape {:?}; found an array of shape {shape:?}",
                    t.shape()
                )));
            }
            data.push(match vals {
                convert::Values::F32(v) => v,
                convert::Values::U8(v) => v.into_iter().map(f32::from).collect(),
            });
        }
        let refs: Vec<&[f32]> = data.iter().map(Vec::as_slice).collect();
        py.detach(|| self.inner.set_weights(&refs)).py()
    }

    /// The Keras-style summary table.
    fn summary(&self) -> String {
        self.inner.summary()
    }

    /// Weights in all layers, moving statistics included (Keras's `count_params`).
    #[getter]
    fn param_count(&self) -> usize {
        self.inner.param_count() + self.inner.state_count()
    }

    /// Layers.
    fn __len__(&self) -> usize {
        self.inner.len()
    }

    /// Values per input sample (None before the first layer).
    #[getter]
    fn input_dim(&self) -> Option<usize> {
        self.inner.input_dim()
    }

    /// Values per output sample.
    #[getter]
    fn output_dim(&self) -> Option<usize> {
        self.inner.output_dim()
    }

    /// Trainable values in all layers.
    #[getter]
    fn trainable_count(&self) -> usize {
        self.inner.param_count()
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

/// Keras's `loss_fn(y_true, y_pred)`: the mean loss as a scalar Tensor on `y_pred`'s device
/// (`y_pred` a Tensor, or an array uploaded to `device`).
#[pyfunction]
pub fn loss_value(
    py: Python<'_>,
    loss: &str,
    from_logits: bool,
    y_true: &Bound<'_, PyAny>,
    y_pred: &Bound<'_, PyAny>,
    device: &PyDevice,
) -> PyResult<PyTensor> {
    let pred = crate::tensor::asarray(py, y_pred, device)?.0;
    let (_, values) = convert::values(y_true, "y_true", false)?;
    let t = match values {
        convert::Values::F32(v) => v,
        convert::Values::U8(v) => v.into_iter().map(f32::from).collect(),
    };
    let loss = loss_of(loss)?;
    py.detach(|| suanli::nn::loss_value(loss, from_logits, &t, &pred))
        .py()
        .map(PyTensor)
}
