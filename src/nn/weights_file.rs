//! Parsing and validating a model file ([`crate::nn::Sequential::save`]'s safetensors
//! layout) on the host, before anything is allocated on a device. Kept free of devices so
//! it can be fuzzed (`fuzz/fuzz_targets/model_file.rs`).
//!
//! Checked: the safetensors framing (header length, JSON header, offsets inside the file),
//! the `"architecture"` metadata (a list of layers with positive `units` and `input_dim`,
//! each layer's input the previous layer's units), and for every layer a
//! `dense_{i}.kernel` of dtype F32 and shape (input_dim, units) and, with a bias, a
//! `dense_{i}.bias` of shape (units). Sizes come from the file itself, so nothing is
//! allocated beyond the file's own length.

use std::collections::HashMap;
use std::path::Path;

use crate::error::{Error, Result};

/// One layer as stored.
#[derive(Clone, Debug, PartialEq)]
pub struct LayerRecord {
    /// Output units.
    pub units: usize,
    /// Activation name.
    pub activation: String,
    /// Whether a bias is stored.
    pub use_bias: bool,
    /// Inputs.
    pub input_dim: usize,
    /// Dropout rate while training (0 when absent).
    pub dropout: f32,
    /// Row-major (input_dim, units).
    pub kernel: Vec<f32>,
    /// (units), with a bias.
    pub bias: Option<Vec<f32>>,
}

/// A parsed model file.
#[derive(Clone, Debug, PartialEq)]
pub struct ModelFile {
    /// The layers in order.
    pub layers: Vec<LayerRecord>,
    /// The file's metadata (format, architecture, training state…).
    pub metadata: HashMap<String, String>,
}

/// Parses and validates a model file's bytes; `path` is only used in error messages.
pub fn parse_model_file(path: &Path, bytes: &[u8]) -> Result<ModelFile> {
    let bad = |expected: String, found: String| Error::Malformed {
        path: path.to_path_buf(),
        format: "safetensors",
        expected,
        found,
    };
    let st = safetensors::SafeTensors::deserialize(bytes)
        .map_err(|e| bad("a safetensors file".into(), e.to_string()))?;
    let (_, meta) = safetensors::SafeTensors::read_metadata(bytes)
        .map_err(|e| bad("a safetensors header".into(), e.to_string()))?;
    let metadata = meta.metadata().clone().unwrap_or_default();
    let arch = metadata
        .get("architecture")
        .ok_or_else(|| bad("an \"architecture\" metadata entry".into(), "none".into()))?;
    let arch: Vec<serde_json::Value> = serde_json::from_str(arch)
        .map_err(|e| bad("architecture JSON (a list of layers)".into(), e.to_string()))?;
    if arch.is_empty() {
        return Err(bad("at least one layer".into(), "none".into()));
    }
    let mut layers: Vec<LayerRecord> = Vec::with_capacity(arch.len().min(1024));
    for (i, layer) in arch.iter().enumerate() {
        let positive = |key: &str| -> Result<usize> {
            layer[key]
                .as_u64()
                .filter(|v| *v >= 1 && *v <= u32::MAX as u64)
                .map(|v| v as usize)
                .ok_or_else(|| {
                    bad(
                        format!("{key} of layer {i} (1 to 2^32-1)"),
                        layer.to_string(),
                    )
                })
        };
        let units = positive("units")?;
        let input_dim = positive("input_dim")?;
        let activation = layer["activation"]
            .as_str()
            .ok_or_else(|| bad(format!("activation of layer {i}"), layer.to_string()))?
            .to_string();
        let use_bias = match &layer["use_bias"] {
            serde_json::Value::Null => true,
            v => v
                .as_bool()
                .ok_or_else(|| bad(format!("use_bias of layer {i} (a bool)"), v.to_string()))?,
        };
        let dropout = match &layer["dropout"] {
            serde_json::Value::Null => 0.0,
            v => v
                .as_f64()
                .filter(|r| (0.0..1.0).contains(r))
                .ok_or_else(|| {
                    bad(
                        format!("dropout of layer {i} (a rate in [0, 1))"),
                        v.to_string(),
                    )
                })? as f32,
        };
        if let Some(prev) = layers.last() {
            if prev.units != input_dim {
                return Err(bad(
                    format!(
                        "layer {i} input_dim {} (layer {}'s units)",
                        prev.units,
                        i - 1
                    ),
                    input_dim.to_string(),
                ));
            }
        }
        let take = |name: String, shape: &[usize]| -> Result<Vec<f32>> {
            let t = st
                .tensor(&name)
                .map_err(|_| bad(format!("a tensor {name:?}"), "none".into()))?;
            if t.dtype() != safetensors::Dtype::F32 || t.shape() != shape {
                return Err(bad(
                    format!("{name} as F32 {shape:?}"),
                    format!("{:?} {:?}", t.dtype(), t.shape()),
                ));
            }
            Ok(bytemuck::pod_collect_to_vec(t.data()))
        };
        let kernel = take(format!("dense_{i}.kernel"), &[input_dim, units])?;
        let bias = if use_bias {
            Some(take(format!("dense_{i}.bias"), &[units])?)
        } else {
            None
        };
        layers.push(LayerRecord {
            units,
            activation,
            use_bias,
            input_dim,
            dropout,
            kernel,
            bias,
        });
    }
    Ok(ModelFile { layers, metadata })
}
