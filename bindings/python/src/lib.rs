//! `suanli._native`: the compiled half of the `suanli` Python package. Every computation
//! runs in the Rust crate; this module converts arguments, releases the GIL while the device
//! works and maps suanli's typed errors to Python exceptions. The Keras-compatible API and
//! the device context live in pure Python around it (python/suanli/).

use pyo3::prelude::*;

mod array;
mod convert;
mod custom;
mod datasets;
mod decomp;
mod device;
mod errors;
mod events;
mod layers;
mod model;
mod model_args;
mod model_infer;
mod random;
mod sorting;
mod tensor;
mod text;
mod train;

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("SuanliError", py.get_type::<errors::SuanliError>())?;
    m.add("DeviceLostError", py.get_type::<errors::DeviceLostError>())?;
    m.add("LinAlgError", py.get_type::<errors::LinAlgError>())?;
    m.add_class::<array::PyArray>()?;
    m.add_class::<random::PyGenerator>()?;
    m.add_class::<custom::PyElementwiseKernel>()?;
    m.add_class::<custom::PyReductionKernel>()?;
    m.add_function(wrap_pyfunction!(custom::array_device_words, m)?)?;
    m.add_function(wrap_pyfunction!(sorting::array_sort, m)?)?;
    m.add_function(wrap_pyfunction!(sorting::array_argsort, m)?)?;
    m.add_function(wrap_pyfunction!(sorting::array_take, m)?)?;
    m.add_function(wrap_pyfunction!(sorting::array_take_along_axis, m)?)?;
    m.add_function(wrap_pyfunction!(sorting::array_searchsorted, m)?)?;
    m.add_function(wrap_pyfunction!(sorting::array_cumulative, m)?)?;
    m.add_function(wrap_pyfunction!(sorting::array_nonzero, m)?)?;
    m.add_function(wrap_pyfunction!(sorting::array_unique, m)?)?;
    m.add_function(wrap_pyfunction!(decomp::array_solve, m)?)?;
    m.add_function(wrap_pyfunction!(decomp::array_inv, m)?)?;
    m.add_function(wrap_pyfunction!(decomp::array_det, m)?)?;
    m.add_function(wrap_pyfunction!(decomp::array_slogdet, m)?)?;
    m.add_function(wrap_pyfunction!(decomp::array_cholesky, m)?)?;
    m.add_function(wrap_pyfunction!(decomp::array_svd, m)?)?;
    m.add_function(wrap_pyfunction!(decomp::array_eigh, m)?)?;
    m.add_function(wrap_pyfunction!(decomp::array_qr, m)?)?;
    m.add_class::<device::PyDeviceInfo>()?;
    m.add_class::<device::PyDevice>()?;
    m.add_class::<tensor::PyTensor>()?;
    m.add_class::<tensor::PyRawKernel>()?;
    m.add_class::<model::PyModel>()?;
    m.add_class::<events::PyEventWriter>()?;
    m.add_class::<text::PyTokenizer>()?;
    m.add_class::<text::PyText>()?;
    m.add_function(wrap_pyfunction!(layers::layer_classes, m)?)?;
    m.add_function(wrap_pyfunction!(layers::check_layer, m)?)?;
    m.add_function(wrap_pyfunction!(layers::layer_output_shape, m)?)?;
    m.add_function(wrap_pyfunction!(layers::layer_weight_shapes, m)?)?;
    m.add_function(wrap_pyfunction!(model::loss_value, m)?)?;
    m.add_function(wrap_pyfunction!(text::generate, m)?)?;
    m.add_function(wrap_pyfunction!(device::devices, m)?)?;
    m.add_function(wrap_pyfunction!(device::is_gpu_available, m)?)?;
    m.add_function(wrap_pyfunction!(tensor::asarray, m)?)?;
    m.add_function(wrap_pyfunction!(datasets::load_mnist, m)?)?;
    m.add_function(wrap_pyfunction!(datasets::load_fashion_mnist, m)?)?;
    m.add_function(wrap_pyfunction!(init_logging, m)?)?;
    Ok(())
}

/// Routes suanli's `log` records to stderr, filtered by RUST_LOG (default: warnings). Called
/// once on import; later calls do nothing.
#[pyfunction]
fn init_logging() {
    let env = env_logger::Env::default().default_filter_or("warn");
    let _ = env_logger::Builder::from_env(env).try_init();
}
