//! The layer types, one file each (Keras's class names): its configuration, checks, shapes,
//! weights and how it records its passes. `head` is the activation shared by the types that
//! have one. Adding a type: docs/ARCHITECTURE.md, "Adding a layer type".

pub(crate) mod attention;
pub(crate) mod attention_pass;
pub(crate) mod batchnorm;
pub(crate) mod conv2d;
pub(crate) mod dense;
pub(crate) mod dropout;
pub(crate) mod embedding;
pub(crate) mod head;
pub(crate) mod layernorm;
pub(crate) mod merge;
pub(crate) mod normalization;
pub(crate) mod pointwise;
pub(crate) mod pooling;
pub(crate) mod rescaling;
pub(crate) mod reshape;
