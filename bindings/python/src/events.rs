//! `suanli._native.EventWriter`: TensorBoard event files written by the crate's writer (the
//! same one Rust's `nn::TensorBoard` callback uses), for `keras.callbacks.TensorBoard`.

use std::path::PathBuf;

use pyo3::prelude::*;
use suanli::nn::EventWriter;

use crate::errors::IntoPy;

/// One event file, appended to.
#[pyclass(module = "suanli._native", name = "EventWriter")]
pub struct PyEventWriter(EventWriter);

#[pymethods]
impl PyEventWriter {
    /// A new event file in `dir` (created if needed).
    #[new]
    fn new(dir: PathBuf) -> PyResult<Self> {
        EventWriter::new(&dir).py().map(PyEventWriter)
    }

    /// Appends `value` under `tag` at `step`.
    fn scalar(&mut self, tag: &str, value: f64, step: i64) -> PyResult<()> {
        self.0.scalar(tag, value, step).py()
    }

    /// Writes what is buffered.
    fn flush(&mut self) -> PyResult<()> {
        self.0.flush().py()
    }

    /// The file's path.
    #[getter]
    fn path(&self) -> PathBuf {
        self.0.path().to_path_buf()
    }
}
