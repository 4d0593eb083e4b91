//! The layer vocabulary without a model: the classes `suanli.keras.layers` is made of, and
//! what a layer spec (JSON, Keras's form) gives on given input shapes (its output, its
//! weights), so Python checks a call when it is made, as Keras does.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use suanli::nn::LayerSpec;

use crate::errors::IntoPy;

fn parse(spec: &str) -> PyResult<LayerSpec> {
    let v: serde_json::Value = serde_json::from_str(spec)
        .map_err(|e| PyValueError::new_err(format!("layer spec: {e}")))?;
    let spec = LayerSpec::from_json(&v).py()?;
    spec.config.check().py()?;
    Ok(spec)
}

/// Every layer type: `(class name, positional argument names)`, what `suanli.keras.layers`
/// builds its classes from.
#[pyfunction]
pub fn layer_classes() -> Vec<(&'static str, Vec<&'static str>)> {
    suanli::nn::layer_classes()
        .into_iter()
        .map(|(c, p)| (c, p.to_vec()))
        .collect()
}

/// The per-sample output shape of the layer `spec` (JSON) called on inputs of `shapes`, or
/// the error the model would give (Keras infers shapes at the call).
#[pyfunction]
pub fn layer_output_shape(spec: &str, shapes: Vec<Vec<usize>>) -> PyResult<Vec<usize>> {
    let spec = parse(spec)?;
    let out = spec.config.output_shape_n(&shapes).py()?;
    if out.contains(&0) || shapes.iter().any(|s| s.is_empty() || s.contains(&0)) {
        return Err(PyValueError::new_err(format!(
            "{}: expected inputs and an output with at least one value per sample; found inputs {shapes:?} and output {out:?}",
            spec.config.class_name()
        )));
    }
    Ok(out)
}

/// Checks a layer spec (JSON, Keras's form) on its own, as `Model.add_layer` would, without
/// a model: the arguments, their values and their types. Returns the spec with Keras's
/// defaults filled in.
#[pyfunction]
pub fn check_layer(spec: &str) -> PyResult<String> {
    Ok(parse(spec)?.to_json().to_string())
}

/// The shapes of the weights the layer `spec` (JSON) makes for inputs of per-sample
/// `shapes`, in Keras's order: what a second call of the layer must give again to share them.
#[pyfunction]
pub fn layer_weight_shapes(spec: &str, shapes: Vec<Vec<usize>>) -> PyResult<Vec<Vec<usize>>> {
    let spec = parse(spec)?;
    if shapes.is_empty() || shapes.iter().any(|s| s.is_empty() || s.contains(&0)) {
        return Err(PyValueError::new_err(format!(
            "{}: expected input shapes of sizes of at least 1; found {shapes:?}",
            spec.config.class_name()
        )));
    }
    Ok(spec
        .config
        .weights_n(&shapes)
        .into_iter()
        .map(|w| w.shape)
        .collect())
}
