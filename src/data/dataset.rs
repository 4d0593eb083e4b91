//! Datasets resident on the device: features uploaded once (bytes stay bytes and are looked
//! up in a 256-entry palette when gathered; floats with at most 256 distinct values become
//! such bytes too), targets as class [`Labels`] or dense rows, and batches gathered on the
//! device through an index permutation.

use crate::data::features::{Column, Features, IdRecords, Targets};
use crate::error::{Error, Result};
use crate::exec::dispatch::Record;
use crate::kernels::gather::{self, Lookup, PairParams, Rows, PALETTE_LEN};
use crate::kernels::windows;
use crate::memory::MemoryKind;
use crate::ops::{ClassIndex, Labels};
use crate::runtime::Device;
use crate::tensor::{ByteBuffer, IndexBuffer, Tensor};

/// A dataset resident on the device: features uploaded once (one column per model input:
/// the first given to the constructor, more by [`Dataset::with_input`]), and targets: class labels (for
/// sparse categorical cross-entropy) or dense rows (one-hot or probabilities, binary targets,
/// regression values). Batches are gathered on the device through an index permutation.
#[derive(Debug)]
pub struct Dataset {
    features: Features,
    targets: Targets,
    rows: usize,
    row_len: usize,
    /// The per-sample shape (`[row_len]` unless set).
    shape: Vec<usize>,
    /// Per-row loss weights (Keras's `sample_weight`), gathered with the rows.
    pub(crate) weights: Option<Tensor>,
    /// The columns of the model's inputs after the first ([`Dataset::with_input`]).
    pub(crate) more_inputs: Vec<Column>,
    /// The targets of the model's outputs after the first ([`Dataset::with_target_classes`]).
    pub(crate) more_targets: Vec<Targets>,
    /// Where each integer id column's values first rise, by input (`from_ids`,
    /// `with_input_ids`): the ids themselves live on the device only, and this is enough to
    /// name the first id past an `Embedding`'s table when a model checks the dataset.
    pub(crate) id_records: Vec<(usize, IdRecords)>,
    device: Device,
}

impl Dataset {
    /// From `rows × row_len` bytes, scaled by `scale` when gathered (e.g. 1/255), and class
    /// labels of any integer type (one per row).
    pub fn from_u8<L: ClassIndex>(
        device: &Device,
        x: &[u8],
        row_len: usize,
        scale: f32,
        labels: &[L],
    ) -> Result<Dataset> {
        let rows = labels.len();
        Dataset::check(rows, row_len, x.len())?;
        if !scale.is_finite() {
            return Err(Error::InvalidArgument {
                op: "Dataset::from_u8",
                name: "scale",
                expected: "a finite factor".into(),
                found: scale.to_string(),
            });
        }
        Ok(Dataset {
            features: Features::U8(
                ByteBuffer::new(device, x)?,
                Tensor::from_slice(device, &gather::scaled_palette(scale), &[PALETTE_LEN])?,
                Lookup::Multiply(scale),
            ),
            targets: Targets::Classes(Labels::new(device, labels)?, 1),
            rows,
            row_len,
            shape: vec![row_len],
            weights: None,
            more_inputs: Vec::new(),
            more_targets: Vec::new(),
            id_records: Vec::new(),
            device: device.clone(),
        }
        .tagged())
    }

    /// From `rows × row_len` floats and class labels of any integer type (one per row).
    ///
    /// Floats with at most 256 distinct values (images divided by 255, as Python users
    /// write it; one-hot or binary features) are stored as one byte each plus a palette of
    /// the values: a quarter of the device memory, and the same bits when gathered. That is
    /// what lets the 60,000 MNIST images as floats (188 MB) fit a device whose largest
    /// storage binding is 128 MiB, as lavapipe's is.
    pub fn from_f32<L: ClassIndex>(
        device: &Device,
        x: &[f32],
        row_len: usize,
        labels: &[L],
    ) -> Result<Dataset> {
        let rows = labels.len();
        Dataset::check(rows, row_len, x.len())?;
        Dataset::finite(x, row_len)?;
        Ok(Dataset {
            features: Features::from_f32(device, x)?,
            targets: Targets::Classes(Labels::new(device, labels)?, 1),
            rows,
            row_len,
            shape: vec![row_len],
            weights: None,
            more_inputs: Vec::new(),
            more_targets: Vec::new(),
            id_records: Vec::new(),
            device: device.clone(),
        }
        .tagged())
    }

    /// From `rows × row_len` floats and `positions` class labels per sample (row-major:
    /// sample 0's labels first), for a model whose output has a class axis per position —
    /// (positions, classes), as a language model's logits per token are. Sparse categorical
    /// cross-entropy and accuracy then average over every position of every sample, as Keras
    /// and PyTorch do.
    pub fn from_f32_positions<L: ClassIndex>(
        device: &Device,
        x: &[f32],
        row_len: usize,
        labels: &[L],
        positions: usize,
    ) -> Result<Dataset> {
        if positions == 0 || labels.is_empty() || !labels.len().is_multiple_of(positions) {
            return Err(Error::ShapeMismatch {
                op: "Dataset::from_f32_positions",
                expected: format!("a whole number of samples of {positions} labels (at least one)"),
                found: format!("{} labels", labels.len()),
            });
        }
        let rows = labels.len() / positions;
        Dataset::check(rows, row_len, x.len())?;
        Dataset::finite(x, row_len)?;
        Ok(Dataset {
            features: Features::from_f32(device, x)?,
            targets: Targets::Classes(Labels::new(device, labels)?, positions),
            rows,
            row_len,
            shape: vec![row_len],
            weights: None,
            more_inputs: Vec::new(),
            more_targets: Vec::new(),
            id_records: Vec::new(),
            device: device.clone(),
        }
        .tagged())
    }

    /// [`Dataset::from_f32`] with the floats stored as floats whatever their values (tests
    /// compare it with the compact storage; the two must train bit for bit alike).
    #[doc(hidden)]
    pub fn from_f32_plain<L: ClassIndex>(
        device: &Device,
        x: &[f32],
        row_len: usize,
        labels: &[L],
    ) -> Result<Dataset> {
        let rows = labels.len();
        Dataset::check(rows, row_len, x.len())?;
        Dataset::finite(x, row_len)?;
        Ok(Dataset {
            features: Features::F32(Tensor::from_slice(device, x, &[x.len()])?),
            targets: Targets::Classes(Labels::new(device, labels)?, 1),
            rows,
            row_len,
            shape: vec![row_len],
            weights: None,
            more_inputs: Vec::new(),
            more_targets: Vec::new(),
            id_records: Vec::new(),
            device: device.clone(),
        }
        .tagged())
    }

    /// From `rows × row_len` floats and dense targets, `target_len` values per row (one-hot
    /// rows for categorical cross-entropy, 0/1 for binary cross-entropy, values for MSE).
    pub fn from_f32_targets(
        device: &Device,
        x: &[f32],
        row_len: usize,
        targets: &[f32],
        target_len: usize,
    ) -> Result<Dataset> {
        if target_len == 0 || !targets.len().is_multiple_of(target_len) {
            return Err(Error::ShapeMismatch {
                op: "Dataset::from_f32_targets",
                expected: format!("a whole number of target rows of {target_len}"),
                found: format!("{} values", targets.len()),
            });
        }
        let rows = targets.len() / target_len;
        Dataset::check(rows, row_len, x.len())?;
        Dataset::finite(x, row_len)?;
        if let Some(bad) = targets.iter().find(|v| !v.is_finite()) {
            return Err(Error::InvalidArgument {
                op: "Dataset::from_f32_targets",
                name: "targets",
                expected: "finite values".into(),
                found: bad.to_string(),
            });
        }
        Ok(Dataset {
            features: Features::from_f32(device, x)?,
            targets: Targets::Dense(
                Tensor::from_slice(device, targets, &[targets.len()])?,
                target_len,
            ),
            rows,
            row_len,
            shape: vec![row_len],
            weights: None,
            more_inputs: Vec::new(),
            more_targets: Vec::new(),
            id_records: Vec::new(),
            device: device.clone(),
        }
        .tagged())
    }

    /// A dataset of these parts (checked by the caller), without weights or more columns.
    pub(crate) fn assemble(
        device: &Device,
        features: Features,
        targets: Targets,
        rows: usize,
        row_len: usize,
    ) -> Dataset {
        Dataset {
            features,
            targets,
            rows,
            row_len,
            shape: vec![row_len],
            weights: None,
            more_inputs: Vec::new(),
            more_targets: Vec::new(),
            id_records: Vec::new(),
            device: device.clone(),
        }
        .tagged()
    }

    /// Tags the device memory as a dataset's (for the memory breakdown).
    fn tagged(self) -> Dataset {
        self.target_tensor().set_memory_kind(MemoryKind::Datasets);
        match &self.features {
            Features::F32(t) | Features::U8(_, t, _) => t.set_memory_kind(MemoryKind::Datasets),
            // An index buffer, and a text's tokens, are a dataset's from the start.
            Features::Ids(_) | Features::Windows(_) => {}
        }
        self
    }

    /// Whether the features are held as bytes (see [`Dataset::from_f32`]).
    pub fn is_compact(&self) -> bool {
        matches!(self.features, Features::U8(..))
    }

    /// How the features are stored: `"f32"`, `"u8 * factor"`, `"u8 / factor"` or `"u8
    /// palette"` (for tests and diagnostics).
    #[doc(hidden)]
    pub fn feature_storage(&self) -> &'static str {
        match &self.features {
            Features::F32(_) => "f32",
            Features::Ids(_) => "u32 ids",
            Features::U8(_, _, Lookup::Multiply(_)) => "u8 * factor",
            Features::U8(_, _, Lookup::Divide(_)) => "u8 / factor",
            Features::U8(_, _, Lookup::Palette) => "u8 palette",
            Features::Windows(w) if w.tokens.is_packed() => "u8 token windows",
            Features::Windows(_) => "u32 token windows",
        }
    }

    /// The device the data lives on.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// The targets as f32 values on the device (class indices, or dense rows).
    fn target_tensor(&self) -> &Tensor {
        self.targets.tensor()
    }

    /// The first output's targets, then the others'.
    pub(crate) fn all_targets(&self) -> impl Iterator<Item = &Targets> {
        std::iter::once(&self.targets).chain(&self.more_targets)
    }

    /// Values per target row: the labels per sample (1, or one per position), or the dense
    /// row's length.
    pub fn target_len(&self) -> usize {
        match &self.targets {
            Targets::Classes(_, n) => *n,
            Targets::Dense(_, n) => *n,
        }
    }

    /// The class labels, for a dataset of classes.
    pub fn labels(&self) -> Option<&Labels> {
        match &self.targets {
            Targets::Classes(l, _) => Some(l),
            Targets::Dense(..) => None,
        }
    }

    /// Number of samples.
    pub fn len(&self) -> usize {
        self.rows
    }

    /// True if empty (never: construction requires a row).
    pub fn is_empty(&self) -> bool {
        self.rows == 0
    }

    /// Features per sample.
    pub fn row_len(&self) -> usize {
        self.row_len
    }

    /// The shape of one sample: `(row_len,)` unless set by [`Dataset::with_sample_shape`].
    pub fn sample_shape(&self) -> &[usize] {
        &self.shape
    }

    /// The same data with samples of shape `shape` (MNIST's 784 bytes as `&[28, 28, 1]`:
    /// height, width, channels). The shape must hold `row_len` values; nothing moves.
    pub fn with_sample_shape(mut self, shape: &[usize]) -> Result<Dataset> {
        if shape.is_empty() || shape.contains(&0) || shape.iter().product::<usize>() != self.row_len
        {
            return Err(Error::ShapeMismatch {
                op: "Dataset::with_sample_shape",
                expected: format!(
                    "a shape of sizes ≥ 1 holding the {} values of a sample",
                    self.row_len
                ),
                found: format!("{shape:?}"),
            });
        }
        self.shape = shape.to_vec();
        Ok(self)
    }

    /// The feature and target selections of rows `indices[offset..offset + batch]`.
    fn selection<'a>(
        &self,
        indices: &'a IndexBuffer,
        offset: usize,
        batch: usize,
    ) -> [Rows<'a>; 2] {
        let scale = match &self.features {
            Features::U8(_, _, Lookup::Multiply(f) | Lookup::Divide(f)) => *f,
            _ => 1.0,
        };
        [
            Rows {
                indices,
                offset,
                batch,
                row_len: self.row_len,
                scale,
            },
            Rows {
                indices,
                offset,
                batch,
                row_len: self.target_len(),
                scale: 1.0,
            },
        ]
    }

    /// How many dispatches [`Dataset::gather`] records (and uniforms it reads).
    pub(crate) fn gather_dispatches(&self) -> usize {
        let w =
            usize::from(self.weights.is_some()) + self.more_inputs.len() + self.more_targets.len();
        if self.gathers_as_pair() || matches!(self.features, Features::Windows(_)) {
            1 + w
        } else {
            2 + w
        }
    }

    /// Whether features and targets are gathered by one dispatch (byte rows of whole words).
    fn gathers_as_pair(&self) -> bool {
        matches!(self.features, Features::U8(..)) && self.row_len.is_multiple_of(4)
    }

    /// Records gathering rows `indices[offset..offset + batch]` into `x` and `y` (and their
    /// weights into `w`, for a dataset with weights; the other input columns into `more`):
    /// one dispatch for byte rows of whole words, two otherwise, one for the weights and one
    /// per other column; their uniforms, in order, are [`Dataset::gather_uniforms`].
    #[allow(clippy::too_many_arguments)] // buffers and shape, spelled out
    pub(crate) fn gather(
        &self,
        rec: &mut dyn Record,
        indices: &IndexBuffer,
        offset: usize,
        batch: usize,
        x: &wgpu::Buffer,
        y: &wgpu::Buffer,
        w: Option<&wgpu::Buffer>,
        more: &[&wgpu::Buffer],
    ) -> Result<()> {
        self.gather_xy(rec, indices, offset, batch, x, y)?;
        if let (Some(weights), Some(w)) = (&self.weights, w) {
            gather::gather_f32(rec, weights, self.weight_rows(indices, offset, batch), w)?;
        }
        self.gather_more(rec, indices, offset, batch, more)
    }

    #[allow(clippy::too_many_arguments)] // buffers and shape, spelled out
    fn gather_xy(
        &self,
        rec: &mut dyn Record,
        indices: &IndexBuffer,
        offset: usize,
        batch: usize,
        x: &wgpu::Buffer,
        y: &wgpu::Buffer,
    ) -> Result<()> {
        let [xr, yr] = self.selection(indices, offset, batch);
        let targets = self.target_tensor();
        match &self.features {
            // Inputs and targets in one dispatch; the step's uniform says which windows.
            Features::Windows(w) => {
                return windows::windows(rec, &w.tokens, &w.draw(0, offset, batch), x, y)
            }
            Features::U8(b, pal, lookup) if self.gathers_as_pair() => {
                return gather::gather_pair(
                    rec,
                    b,
                    pal,
                    *lookup,
                    targets,
                    xr,
                    self.target_len(),
                    x,
                    y,
                )
            }
            Features::U8(b, pal, lookup) => gather::gather(rec, b, pal, *lookup, xr, x)?,
            Features::F32(t) => gather::gather_f32(rec, t, xr, x)?,
            Features::Ids(ids) => gather::gather_ids(rec, ids, xr, x)?,
        }
        gather::gather_f32(rec, targets, yr, y)
    }

    /// The uniforms of [`Dataset::gather`]'s dispatches for another batch of rows (a
    /// training step writes them into its parameter table). `step` is the optimizer step
    /// (0 when evaluating): a text's windows are drawn from it and the rows' numbers.
    pub(crate) fn gather_uniforms(
        &self,
        indices: &IndexBuffer,
        offset: usize,
        batch: usize,
        step: u64,
    ) -> Result<Vec<Vec<u8>>> {
        let [xr, yr] = self.selection(indices, offset, batch);
        let mut u = if let Features::Windows(w) = &self.features {
            let p = windows::params(&w.tokens, &w.draw(step, offset, batch))?;
            vec![bytemuck::bytes_of(&p).to_vec()]
        } else if let (true, Features::U8(_, _, lookup)) = (self.gathers_as_pair(), &self.features)
        {
            vec![bytemuck::bytes_of(&PairParams::new(&xr, self.target_len(), *lookup)).to_vec()]
        } else {
            vec![
                bytemuck::bytes_of(&xr.params()).to_vec(),
                bytemuck::bytes_of(&yr.params()).to_vec(),
            ]
        };
        if self.weights.is_some() {
            let wr = self.weight_rows(indices, offset, batch);
            u.push(bytemuck::bytes_of(&wr.params()).to_vec());
        }
        u.extend(self.gather_more_uniforms(indices, offset, batch));
        Ok(u)
    }
}
