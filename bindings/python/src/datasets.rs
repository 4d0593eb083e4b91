//! `suanli.keras.datasets.mnist.load_data()`: MNIST as Keras returns it (uint8 arrays).

use numpy::prelude::*;
use numpy::{PyArray1, PyArray3};
use pyo3::prelude::*;

use crate::errors::IntoPy;

/// The four arrays `((x_train, y_train), (x_test, y_test))`, found where suanli's Rust side
/// looks (MNIST_DIR, then ./data/mnist, ~/.suanli/datasets/mnist and the source tree's
/// data/mnist); a missing copy raises FileNotFoundError listing every place looked.
#[pyfunction]
#[allow(clippy::type_complexity)] // Keras's nested tuple, spelled out
pub fn load_mnist(
    py: Python<'_>,
) -> PyResult<(
    (Bound<'_, PyArray3<u8>>, Bound<'_, PyArray1<u8>>),
    (Bound<'_, PyArray3<u8>>, Bound<'_, PyArray1<u8>>),
)> {
    let m = py.detach(suanli::data::Mnist::load).py()?;
    let (n, nt) = (m.train_labels.len(), m.test_labels.len());
    Ok((
        (
            PyArray1::from_vec(py, m.train_images).reshape([n, 28, 28])?,
            PyArray1::from_vec(py, m.train_labels),
        ),
        (
            PyArray1::from_vec(py, m.test_images).reshape([nt, 28, 28])?,
            PyArray1::from_vec(py, m.test_labels),
        ),
    ))
}
