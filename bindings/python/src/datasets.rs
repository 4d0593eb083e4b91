//! `suanli.keras.datasets.mnist.load_data()` and `fashion_mnist.load_data()`: the arrays as
//! Keras returns them (uint8).

use numpy::prelude::*;
use numpy::{PyArray1, PyArray3};
use pyo3::prelude::*;

use crate::errors::IntoPy;

/// Keras's nested tuple of the four arrays.
type Arrays<'py> = (
    (Bound<'py, PyArray3<u8>>, Bound<'py, PyArray1<u8>>),
    (Bound<'py, PyArray3<u8>>, Bound<'py, PyArray1<u8>>),
);

/// The four arrays `((x_train, y_train), (x_test, y_test))`, found where suanli's Rust side
/// looks (MNIST_DIR, then ./data/mnist, ~/.suanli/datasets/mnist and the source tree's
/// data/mnist); a missing copy raises FileNotFoundError listing every place looked.
#[pyfunction]
pub fn load_mnist(py: Python<'_>) -> PyResult<Arrays<'_>> {
    let m = py.detach(suanli::data::Mnist::load).py()?;
    arrays(py, m)
}

/// Fashion-MNIST's four arrays, as `load_mnist` (FASHION_MNIST_DIR, then
/// ./data/fashion-mnist, ~/.suanli/datasets/fashion-mnist and Debian's
/// /usr/share/datasets/fashion-mnist).
#[pyfunction]
pub fn load_fashion_mnist(py: Python<'_>) -> PyResult<Arrays<'_>> {
    let m = py.detach(suanli::data::Mnist::load_fashion).py()?;
    arrays(py, m)
}

fn arrays(py: Python<'_>, m: suanli::data::Mnist) -> PyResult<Arrays<'_>> {
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
