//! The layer vocabulary: one tagged description of every layer type, shared by
//! [`crate::nn::Sequential::add`], the model file and the Python builder.
//!
//! A layer is described by a [`LayerSpec`]: its type and configuration ([`LayerConfig`], with
//! Keras's class names and argument names), its name and, on the first layer, the input shape.
//! The same record is what `Sequential::add` takes (through the builders, or as JSON), what a
//! model file stores (`{"class_name": "Conv2D", "config": {"filters": 32, ...}}`, Keras's own
//! form), and what the Python package sends when it builds a model: the Python layer classes
//! are generated from [`layer_classes`], and every check happens here.
//!
//! Each layer type implements `nn::spec::LayerKind` in its own file; this file registers it, once, in
//! the `layer_types!` list.

use crate::error::{Error, Result};
use crate::nn::layer::{Io, Layer, Weights};
use crate::nn::layers::attention::MultiHeadAttention;
use crate::nn::layers::batchnorm::BatchNormalization;
use crate::nn::layers::conv2d::Conv2D;
use crate::nn::layers::dense::{Dense, DenseDropout};
use crate::nn::layers::dropout::Dropout;
use crate::nn::layers::embedding::Embedding;
use crate::nn::layers::layernorm::LayerNormalization;
use crate::nn::layers::merge::{Add, Average, Concatenate, Maximum, Multiply, Subtract};
use crate::nn::layers::normalization::Normalization;
use crate::nn::layers::pointwise::{Activation, ReLU, Softmax};
use crate::nn::layers::pooling::{AveragePooling2D, GlobalAveragePooling2D, MaxPooling2D};
use crate::nn::layers::rescaling::Rescaling;
use crate::nn::layers::reshape::{Flatten, Reshape};
use crate::nn::spec::{LayerKind, Shape, WeightSpec};

macro_rules! layer_types {
    ($($variant:ident),+ $(,)?) => {
        /// A layer's type and configuration, with Keras's class and argument names.
        #[derive(Clone, Debug, PartialEq)]
        #[allow(missing_docs)] // each variant is its configuration type, documented there
        pub enum LayerConfig {
            $($variant($variant),)+
        }

        $(impl From<$variant> for LayerConfig {
            fn from(c: $variant) -> LayerConfig {
                LayerConfig::$variant(c)
            }
        })+

        impl LayerConfig {
            /// Keras's class name.
            pub fn class_name(&self) -> &'static str {
                match self {
                    $(LayerConfig::$variant(_) => <$variant as LayerKind>::CLASS,)+
                }
            }

            /// Checks the arguments.
            pub fn check(&self) -> Result<()> {
                match self {
                    $(LayerConfig::$variant(c) => c.check(),)+
                }
            }

            /// The output shape for `input`, or a typed error naming both.
            pub fn output_shape(&self, input: &[usize]) -> Result<Shape> {
                match self {
                    $(LayerConfig::$variant(c) => c.output_shape(input),)+
                }
            }

            /// The output shape for the shapes of all its inputs (several for a merge).
            pub fn output_shape_n(&self, inputs: &[Shape]) -> Result<Shape> {
                match self {
                    $(LayerConfig::$variant(c) => c.output_shape_n(inputs),)+
                }
            }

            /// The weights for `input`: trainable parameters, then state.
            pub fn weights(&self, input: &[usize]) -> Vec<WeightSpec> {
                match self {
                    $(LayerConfig::$variant(c) => c.weights(input),)+
                }
            }

            /// The weights for the shapes of all its inputs (a cross-attention's projections
            /// depend on its query and value inputs; every other layer's on its first).
            pub fn weights_n(&self, inputs: &[Shape]) -> Vec<WeightSpec> {
                match self {
                    $(LayerConfig::$variant(c) => c.weights_n(inputs),)+
                }
            }

            /// The activation of the layer's output.
            pub fn activation(&self) -> Result<crate::vocab::Activation> {
                match self {
                    $(LayerConfig::$variant(c) => c.activation(),)+
                }
            }

            pub(crate) fn instantiate(&self, io: Io, w: Weights) -> Result<Box<dyn Layer>> {
                match self {
                    $(LayerConfig::$variant(c) => {
                        crate::nn::spec::check_weights(
                            <$variant as LayerKind>::CLASS,
                            &c.weights_n(&io.inputs),
                            &w,
                        )?;
                        c.instantiate(io, w)
                    })+
                }
            }

            fn to_json(&self) -> serde_json::Value {
                match self {
                    $(LayerConfig::$variant(c) => serde_json::to_value(c).unwrap_or_default(),)+
                }
            }

            fn from_json(class: &str, v: serde_json::Value) -> Result<LayerConfig> {
                match class {
                    $(<$variant as LayerKind>::CLASS => serde_json::from_value::<$variant>(v)
                        .map(LayerConfig::$variant)
                        .map_err(|e| Error::InvalidArgument {
                            op: <$variant as LayerKind>::CLASS,
                            name: "config",
                            expected: format!("the arguments of {}", <$variant as LayerKind>::CLASS),
                            found: e.to_string(),
                        }),)+
                    other => Err(Error::InvalidArgument {
                        op: "layer",
                        name: "class_name",
                        expected: format!("one of {}", layer_classes().iter().map(|c| c.0).collect::<Vec<_>>().join(", ")),
                        found: format!("{other:?}"),
                    }),
                }
            }
        }

        /// Every layer type: Keras's class name and its positional arguments (what the Python
        /// package builds its layer classes from).
        pub fn layer_classes() -> Vec<(&'static str, &'static [&'static str])> {
            vec![$((<$variant as LayerKind>::CLASS, <$variant as LayerKind>::POSITIONAL),)+]
        }
    };
}

// The registry: one line per layer type.
layer_types!(
    Dense,
    Conv2D,
    MaxPooling2D,
    AveragePooling2D,
    GlobalAveragePooling2D,
    BatchNormalization,
    LayerNormalization,
    Flatten,
    Reshape,
    Dropout,
    Activation,
    Softmax,
    ReLU,
    Rescaling,
    Normalization,
    Add,
    Subtract,
    Multiply,
    Average,
    Maximum,
    Concatenate,
    Embedding,
    MultiHeadAttention,
);

/// One layer as [`crate::nn::Sequential::add`] takes it and the model file stores it: its
/// configuration, its name (given at `add` when absent: `conv2d`, `conv2d_1`, … as Keras
/// names them) and, on the first layer, the per-sample input shape.
#[derive(Clone, Debug, PartialEq)]
pub struct LayerSpec {
    /// The type and its arguments.
    pub config: LayerConfig,
    /// The layer's name (unique in its model).
    pub name: Option<String>,
    /// The per-sample input shape (first layer).
    pub input_shape: Option<Shape>,
    /// Keras's `trainable`: false freezes the layer's parameters (the optimizer leaves them
    /// as they are; gradients still flow through the layer to the ones below).
    pub trainable: bool,
}

impl LayerSpec {
    /// A spec without a name or input shape.
    pub fn new(config: impl Into<LayerConfig>) -> LayerSpec {
        LayerSpec {
            config: config.into(),
            name: None,
            input_shape: None,
            trainable: true,
        }
    }

    /// Keras's JSON form: `{"class_name": "Conv2D", "config": {"name": ..., "filters": ...}}`
    /// (with `"batch_input_shape": [null, ...]` on the first layer, as Keras writes it).
    pub fn to_json(&self) -> serde_json::Value {
        let mut config = self.config.to_json();
        if let Some(map) = config.as_object_mut() {
            if let Some(n) = &self.name {
                map.insert("name".into(), n.clone().into());
            }
            if !self.trainable {
                map.insert("trainable".into(), false.into());
            }
            if let Some(s) = &self.input_shape {
                let mut dims = vec![serde_json::Value::Null];
                dims.extend(s.iter().map(|&d| serde_json::Value::from(d)));
                map.insert("batch_input_shape".into(), dims.into());
            }
        }
        serde_json::json!({ "class_name": self.config.class_name(), "config": config })
    }

    /// Parses Keras's JSON form (see [`LayerSpec::to_json`]); the configuration may also give
    /// the input shape as `"input_shape": [28, 28, 1]`. Unknown arguments are refused.
    pub fn from_json(v: &serde_json::Value) -> Result<LayerSpec> {
        let bad = |expected: &str, found: String| Error::InvalidArgument {
            op: "layer",
            name: "spec",
            expected: expected.into(),
            found,
        };
        let class = v["class_name"]
            .as_str()
            .ok_or_else(|| bad("a \"class_name\" string", v.to_string()))?;
        let mut config = match &v["config"] {
            serde_json::Value::Null => serde_json::Map::new(),
            serde_json::Value::Object(m) => m.clone(),
            other => return Err(bad("a \"config\" object", other.to_string())),
        };
        let name = match config.remove("name") {
            None | Some(serde_json::Value::Null) => None,
            Some(serde_json::Value::String(s)) if !s.is_empty() => Some(s),
            Some(other) => return Err(bad("a non-empty layer name", other.to_string())),
        };
        let dims = |v: &serde_json::Value, skip: usize| -> Result<Shape> {
            let a = v
                .as_array()
                .ok_or_else(|| bad("a shape: a list of sizes", v.to_string()))?;
            a.iter()
                .skip(skip)
                .map(|d| {
                    d.as_u64()
                        .filter(|d| (1..=u32::MAX as u64).contains(d))
                        .map(|d| d as usize)
                        .ok_or_else(|| bad("sizes of at least 1", v.to_string()))
                })
                .collect()
        };
        let mut input_shape = None;
        if let Some(s) = config.remove("input_shape").filter(|s| !s.is_null()) {
            input_shape = Some(dims(&s, 0)?);
        }
        if let Some(s) = config.remove("batch_input_shape").filter(|s| !s.is_null()) {
            input_shape = Some(dims(&s, 1)?);
        }
        if input_shape.as_ref().is_some_and(|s| s.is_empty()) {
            return Err(bad(
                "an input shape with at least one dimension",
                "()".into(),
            ));
        }
        let trainable = match config.remove("trainable") {
            None | Some(serde_json::Value::Null) => true,
            Some(serde_json::Value::Bool(b)) => b,
            Some(other) => return Err(bad("trainable: true or false", other.to_string())),
        };
        // Keras writes the dtype; only float32 is computed here.
        match config.remove("dtype") {
            None | Some(serde_json::Value::Null) => {}
            Some(serde_json::Value::String(s)) if s == "float32" => {}
            Some(other) => {
                return Err(Error::InvalidArgument {
                    op: "layer",
                    name: "dtype",
                    expected: "float32".into(),
                    found: other.to_string(),
                })
            }
        }
        let config = LayerConfig::from_json(class, serde_json::Value::Object(config))?;
        Ok(LayerSpec {
            config,
            name,
            input_shape,
            trainable,
        })
    }
}

/// What [`crate::nn::Sequential::add`] takes: one layer's spec or several (a builder that
/// stands for a layer and the `Dropout` after it).
pub trait IntoLayers {
    /// The layers, checked.
    fn into_layers(self) -> Result<Vec<LayerSpec>>;
}

impl IntoLayers for LayerSpec {
    fn into_layers(self) -> Result<Vec<LayerSpec>> {
        Ok(vec![self])
    }
}

impl IntoLayers for LayerConfig {
    fn into_layers(self) -> Result<Vec<LayerSpec>> {
        Ok(vec![LayerSpec::new(self)])
    }
}

impl IntoLayers for serde_json::Value {
    fn into_layers(self) -> Result<Vec<LayerSpec>> {
        Ok(vec![LayerSpec::from_json(&self)?])
    }
}

/// Builders of layers given with an input shape (`Conv2D::new(..).input_shape(&[28, 28, 1])`).
macro_rules! into_layers_for {
    ($($t:ty),+) => {
        $(impl IntoLayers for $t {
            fn into_layers(self) -> Result<Vec<LayerSpec>> {
                Ok(vec![LayerSpec::new(self)])
            }
        })+
    };
}
into_layers_for!(
    MaxPooling2D,
    AveragePooling2D,
    GlobalAveragePooling2D,
    Flatten,
    Reshape,
    Dropout,
    Activation,
    Softmax,
    ReLU,
    Rescaling,
    Normalization,
    Add,
    Subtract,
    Multiply,
    Average,
    Maximum,
    Concatenate
);

/// Builders that carry the first layer's input shape (`Conv2D::new(..).input_shape(..)`).
macro_rules! into_layers_with_input {
    ($($t:ty),+) => {
        $(impl IntoLayers for $t {
            fn into_layers(mut self) -> Result<Vec<LayerSpec>> {
                let input = self.input.take();
                Ok(vec![LayerSpec {
                    config: self.into(),
                    name: None,
                    input_shape: input,
                    trainable: true,
                }])
            }
        })+
    };
}
into_layers_with_input!(Dense, Conv2D, BatchNormalization, LayerNormalization);
into_layers_with_input!(Embedding);
into_layers_with_input!(MultiHeadAttention);

impl IntoLayers for DenseDropout {
    fn into_layers(self) -> Result<Vec<LayerSpec>> {
        let (dense, rate) = self.parts();
        let mut v = dense.into_layers()?;
        v.push(LayerSpec::new(Dropout::new(rate)));
        Ok(v)
    }
}
