//! Parsing and validating a model file ([`crate::nn::Sequential::save`]'s safetensors
//! layout) on the host, before anything is allocated on a device. Kept free of devices so
//! it can be fuzzed (`fuzz/fuzz_targets/model_file.rs`).
//!
//! Checked: the safetensors framing (header length, JSON header, offsets inside the file),
//! the `"architecture"` metadata (a list of layer specs in Keras's JSON form, every argument
//! checked as `Sequential::add` checks it, shapes inferred from the first layer's input
//! shape), and for every weight the specs list a tensor `{layer name}.{weight name}` of
//! dtype F32 and the expected shape. Sizes come from the file itself, so nothing is
//! allocated beyond the file's own length.
//!
//! Files written before layer specs (`suanli-sequential-v1`: a list of dense records with
//! `units`, `activation`, `use_bias`, `input_dim`, `dropout`, and tensors
//! `dense_{i}.kernel`) are read too, as Dense layers named `dense_{i}` (and a Dropout after
//! each with a rate).

use std::collections::HashMap;
use std::path::Path;

use crate::error::{Error, Result};
use crate::nn::graph::graph_config;
use crate::nn::layers::dense::Dense;
use crate::nn::layers::dropout::Dropout;
use crate::nn::registry::LayerSpec;
use crate::nn::spec::{Shape, WeightSpec};

/// One layer as stored: its spec, its shapes and its weights.
#[derive(Clone, Debug, PartialEq)]
pub struct LayerRecord {
    /// The layer (name, type, configuration; the input shape on the first).
    pub spec: LayerSpec,
    /// Per-sample input shape (the first input's).
    pub input: Shape,
    /// What the layer reads, in order: a model input, or an earlier layer's output.
    pub inbound: Vec<graph_config::Ref>,
    /// The per-sample shape of each input.
    pub inputs: Vec<Shape>,
    /// Per-sample output shape.
    pub output: Shape,
    /// Each weight the spec lists, in order (trainable first), with its values row-major.
    pub weights: Vec<(WeightSpec, Vec<f32>)>,
}

impl LayerRecord {
    /// The values of the weight named `name` (`"kernel"`, `"bias"`, `"moving_mean"`).
    pub fn weight(&self, name: &str) -> Option<&[f32]> {
        self.weights
            .iter()
            .find(|(w, _)| w.name == name)
            .map(|(_, v)| v.as_slice())
    }
}

/// A parsed model file.
#[derive(Clone, Debug, PartialEq)]
pub struct ModelFile {
    /// The layers in order.
    pub layers: Vec<LayerRecord>,
    /// The file's metadata (format, architecture, training state…).
    pub metadata: HashMap<String, String>,
    /// The tensor names of every weight, in the order of `layers` (for the optimizer state
    /// of a checkpoint, named after them).
    pub names: Vec<String>,
    /// For a graph (a functional config): its name, inputs and outputs.
    pub graph: Option<GraphMeta>,
}

/// What a graph's file says beyond its layers.
#[derive(Clone, Debug, PartialEq)]
pub struct GraphMeta {
    /// The model's name.
    pub name: Option<String>,
    /// Each input's name and per-sample shape.
    pub inputs: graph_config::Inputs,
    /// The output layers, in order.
    pub outputs: Vec<usize>,
}

/// The format of files with layer specs.
pub const MODEL_FORMAT: &str = "suanli-sequential-v2";
/// The checkpoint format with layer specs.
pub const CHECKPOINT_FORMAT: &str = "suanli-checkpoint-v2";

/// Every format tag this version reads (model files and checkpoints, with and without layer
/// specs).
pub const FORMATS: &[&str] = &[
    "suanli-sequential-v1",
    MODEL_FORMAT,
    "suanli-checkpoint-v1",
    CHECKPOINT_FORMAT,
];

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
    // A tag this version does not know (a later version's, junk, none) is refused rather than
    // read as far as it goes: an unknown file could mean something else by the same keys.
    let format = metadata.get("format").map(String::as_str);
    if !format.is_some_and(|f| FORMATS.contains(&f)) {
        return Err(bad(
            format!(
                "a \"format\" tag this version reads: {}",
                FORMATS.join(", ")
            ),
            format.map_or_else(|| "none".to_string(), |f| format!("{f:?}")),
        ));
    }
    let arch = metadata
        .get("architecture")
        .ok_or_else(|| bad("an \"architecture\" metadata entry".into(), "none".into()))?;
    let arch: serde_json::Value =
        serde_json::from_str(arch).map_err(|e| bad("architecture JSON".into(), e.to_string()))?;
    let mut graph = None;
    let (specs, reads): (Vec<LayerSpec>, Vec<Vec<graph_config::Ref>>) = match &arch {
        serde_json::Value::Array(list) => {
            let specs = chain_specs(list).map_err(|e| bad(e.0, e.1))?;
            let reads = (0..specs.len())
                .map(|i| vec![i.checked_sub(1).into()])
                .collect();
            (specs, reads)
        }
        serde_json::Value::Object(_) => {
            let g = graph_config::parse(&arch).map_err(|e| bad(e.0, e.1))?;
            graph = Some(GraphMeta {
                name: g.name,
                inputs: g.inputs,
                outputs: g.outputs,
            });
            g.layers.into_iter().unzip()
        }
        other => {
            return Err(bad(
                "architecture JSON: a list of layers or a functional config".into(),
                format!("{:.80}", other.to_string()),
            ))
        }
    };
    if specs.is_empty() {
        return Err(bad("at least one layer".into(), "none".into()));
    }
    let mut layers: Vec<LayerRecord> = Vec::with_capacity(specs.len());
    let mut names = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for (i, (mut spec, inbound)) in specs.into_iter().zip(reads).enumerate() {
        spec.config
            .check()
            .map_err(|e| bad(format!("valid arguments for layer {i}"), e.to_string()))?;
        let inputs: Vec<Shape> = match &graph {
            Some(GraphMeta { inputs: ins, .. }) => inbound
                .iter()
                .map(|s| match *s {
                    graph_config::Ref::Input(k) => ins[k].1.clone(),
                    graph_config::Ref::Layer(j) => layers[j].output.clone(),
                })
                .collect(),
            None => vec![chain_input(i, &spec, layers.last()).map_err(|e| bad(e.0, e.1))?],
        };
        let input = inputs[0].clone();
        if i > 0 || graph.is_some() {
            spec.input_shape = None;
        }
        let output = spec
            .config
            .output_shape_n(&inputs)
            .map_err(|e| bad(format!("shapes that fit at layer {i}"), e.to_string()))?;
        if spec.name.is_none() {
            spec.name = Some(format!("layer_{i}"));
        }
        let name = spec.name.clone().unwrap_or_default();
        if !seen.insert(name.clone()) {
            // In a graph, another call of a shared layer: its weights are the first call's
            // (stored once), which must fit this call's input.
            let first = layers
                .iter()
                .find(|l| l.spec.name == spec.name)
                .filter(|_| graph.is_some())
                .ok_or_else(|| bad("layer names used once".into(), format!("{name:?} twice")))?;
            let want: Vec<Shape> = spec
                .config
                .weights_n(&inputs)
                .into_iter()
                .map(|w| w.shape)
                .collect();
            let have: Vec<Shape> = first.weights.iter().map(|(w, _)| w.shape.clone()).collect();
            if want != have {
                return Err(bad(
                    format!("the calls of shared layer {name:?} giving its weights one shape ({have:?})"),
                    format!("{want:?} from input {input:?}"),
                ));
            }
            let weights = first.weights.clone();
            layers.push(LayerRecord {
                spec,
                input,
                inbound,
                inputs,
                output,
                weights,
            });
            continue;
        }
        if let Some(owner) = crate::nn::graph::build::tied_owner(&spec) {
            // A Dense using an earlier layer's matrix: stored once, as the owner's.
            let want = spec.config.weights_n(&inputs);
            let first = layers
                .iter()
                .find(|l| l.spec.name.as_deref() == Some(owner))
                .and_then(|l| l.weights.first())
                .filter(|(w, _)| want.first().is_some_and(|k| k.shape == w.shape))
                .ok_or_else(|| {
                    bad(
                        format!(
                            "an earlier layer {owner:?} with a matrix of shape {:?} for {name:?} to use",
                            want.first().map(|w| w.shape.clone()).unwrap_or_default()
                        ),
                        "none".into(),
                    )
                })?;
            let weights = vec![first.clone()];
            layers.push(LayerRecord {
                spec,
                input,
                inbound,
                inputs,
                output,
                weights,
            });
            continue;
        }
        let mut weights = Vec::new();
        for w in spec.config.weights_n(&inputs) {
            let tensor = format!("{name}.{}", w.name);
            let t = st
                .tensor(&tensor)
                .map_err(|_| bad(format!("a tensor {tensor:?}"), "none".into()))?;
            if t.dtype() != safetensors::Dtype::F32 || t.shape() != w.shape.as_slice() {
                return Err(bad(
                    format!("{tensor} as F32 {:?}", w.shape),
                    format!("{:?} {:?}", t.dtype(), t.shape()),
                ));
            }
            names.push(tensor);
            weights.push((w, bytemuck::pod_collect_to_vec(t.data())));
        }
        layers.push(LayerRecord {
            spec,
            input,
            inbound,
            inputs,
            output,
            weights,
        });
    }
    if let Some(first) = layers.first_mut().filter(|_| graph.is_none()) {
        first.spec.input_shape = Some(first.input.clone());
    }
    Ok(ModelFile {
        layers,
        metadata,
        names,
        graph,
    })
}

/// The layer specs of a chain's architecture (a list of specs, or of v1 dense records).
fn chain_specs(
    arch: &[serde_json::Value],
) -> std::result::Result<Vec<LayerSpec>, (String, String)> {
    let v1 = arch.first().is_some_and(|l| l.get("class_name").is_none());
    let mut specs: Vec<LayerSpec> = Vec::with_capacity(arch.len().min(1024));
    for (i, layer) in arch.iter().enumerate() {
        if v1 {
            let (dense, dropout) = v1_layer(i, layer)?;
            specs.push(dense);
            specs.extend(dropout);
        } else {
            let spec = LayerSpec::from_json(layer)
                .map_err(|e| (format!("a valid spec for layer {i}"), e.to_string()))?;
            specs.push(spec);
        }
    }
    Ok(specs)
}

/// The input shape of layer `i` of a chain: the previous layer's output (the spec may repeat
/// it), or the first layer's own.
fn chain_input(
    i: usize,
    spec: &LayerSpec,
    prev: Option<&LayerRecord>,
) -> std::result::Result<Shape, (String, String)> {
    match (prev, &spec.input_shape) {
        (Some(prev), None) => Ok(prev.output.clone()),
        (Some(prev), Some(s)) if *s == prev.output => Ok(s.clone()),
        (Some(prev), Some(s)) => Err((
            format!(
                "layer {i}'s input shape {:?} (layer {}'s output)",
                prev.output,
                i - 1
            ),
            format!("{s:?}"),
        )),
        (None, Some(s)) => Ok(s.clone()),
        (None, None) => Err(("an input shape on the first layer".into(), "none".into())),
    }
}

/// A dense layer of a v1 file, and the Dropout its `dropout` rate stands for.
fn v1_layer(
    i: usize,
    layer: &serde_json::Value,
) -> std::result::Result<(LayerSpec, Option<LayerSpec>), (String, String)> {
    let positive = |key: &str| {
        layer[key]
            .as_u64()
            .filter(|v| *v >= 1 && *v <= u32::MAX as u64)
            .map(|v| v as usize)
            .ok_or_else(|| {
                (
                    format!("{key} of layer {i} (1 to 2^32-1)"),
                    layer.to_string(),
                )
            })
    };
    let units = positive("units")?;
    let input_dim = positive("input_dim")?;
    let activation = layer["activation"]
        .as_str()
        .ok_or_else(|| (format!("activation of layer {i}"), layer.to_string()))?;
    let use_bias = match &layer["use_bias"] {
        serde_json::Value::Null => true,
        v => v
            .as_bool()
            .ok_or_else(|| (format!("use_bias of layer {i} (a bool)"), v.to_string()))?,
    };
    let dropout = match &layer["dropout"] {
        serde_json::Value::Null => 0.0,
        v => v
            .as_f64()
            .filter(|r| (0.0..1.0).contains(r))
            .ok_or_else(|| {
                (
                    format!("dropout of layer {i} (a rate in [0, 1))"),
                    v.to_string(),
                )
            })? as f32,
    };
    // v1 tensors are named dense_{i} after the record's index, and so are the layers.
    let mut spec = LayerSpec::new(Dense::new(units, activation).use_bias(use_bias));
    spec.name = Some(format!("dense_{i}"));
    // Every v1 record names its input size; only the first layer's is the model's input.
    spec.input_shape = Some(vec![input_dim]);
    let d = (dropout > 0.0).then(|| {
        let mut d = LayerSpec::new(Dropout::new(dropout));
        d.name = Some(format!("dropout_{i}"));
        d
    });
    Ok((spec, d))
}
