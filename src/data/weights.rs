//! Per-row weights of a dataset (Keras's `sample_weight`, and `class_weight` looked up by
//! label on the host): kept on the device beside the rows and gathered with them, one more
//! gather per step, so a weighted epoch still never leaves the device.

use crate::data::dataset::Dataset;
use crate::error::{Error, Result};
use crate::kernels::gather::Rows;
use crate::memory::MemoryKind;
use crate::tensor::{IndexBuffer, Tensor};

impl Dataset {
    /// The same rows with a weight each (Keras's `sample_weight`, or `class_weight` looked up
    /// by label): each row's loss, and so its gradient, is multiplied by its weight before
    /// the batch mean (Keras's `sum_over_batch_size`), and the reported loss is that weighted
    /// mean. Accuracy and metrics stay unweighted (Keras's `metrics`, not
    /// `weighted_metrics`). Weights must be finite and ≥ 0, one per row.
    pub fn with_weights(mut self, weights: &[f32]) -> Result<Dataset> {
        if weights.len() != self.len() {
            return Err(Error::ShapeMismatch {
                op: "Dataset::with_weights",
                expected: format!("one weight per row ({})", self.len()),
                found: format!("{} weights", weights.len()),
            });
        }
        if let Some((i, w)) = weights
            .iter()
            .enumerate()
            .find(|(_, w)| !(w.is_finite() && **w >= 0.0))
        {
            return Err(Error::InvalidArgument {
                op: "Dataset::with_weights",
                name: "weights",
                expected: "finite weights ≥ 0".into(),
                found: format!("{w} at row {i}"),
            });
        }
        let t = Tensor::from_slice(self.device(), weights, &[weights.len()])?;
        t.set_memory_kind(MemoryKind::Datasets);
        self.weights = Some(t);
        Ok(self)
    }

    /// Whether rows carry weights ([`Dataset::with_weights`]).
    pub fn has_weights(&self) -> bool {
        self.weights.is_some()
    }

    /// The selection of the weights of rows `indices[offset..offset + batch]`.
    pub(crate) fn weight_rows<'a>(
        &self,
        indices: &'a IndexBuffer,
        offset: usize,
        batch: usize,
    ) -> Rows<'a> {
        Rows {
            indices,
            offset,
            batch,
            row_len: 1,
            scale: 1.0,
        }
    }
}
