//! Datasets resident on the device: features uploaded once (bytes stay bytes and are scaled
//! when gathered), targets as class [`Labels`] or dense rows, and batches gathered on the
//! device through an index permutation.

use crate::error::{Error, Result};
use crate::exec::dispatch::Record;
use crate::kernels::gather::{self, PairParams, Rows};
use crate::memory::MemoryKind;
use crate::ops::{ClassIndex, Labels};
use crate::runtime::Device;
use crate::tensor::{ByteBuffer, IndexBuffer, Tensor};

/// Features of a [`Dataset`] on the device.
#[derive(Debug)]
pub(crate) enum Features {
    /// Bytes scaled by a factor when gathered (pixels / 255).
    U8(ByteBuffer, f32),
    /// Plain floats.
    F32(Tensor),
}

/// Targets of a [`Dataset`] on the device.
#[derive(Debug)]
pub(crate) enum Targets {
    /// Class indices (sparse categorical cross-entropy).
    Classes(Labels),
    /// Dense rows of this many values (one-hot or probabilities, binary targets, regression
    /// values), row-major.
    Dense(Tensor, usize),
}

/// A dataset resident on the device: features uploaded once, and targets: class labels (for
/// sparse categorical cross-entropy) or dense rows (one-hot or probabilities, binary targets,
/// regression values). Batches are gathered on the device through an index permutation.
#[derive(Debug)]
pub struct Dataset {
    features: Features,
    targets: Targets,
    rows: usize,
    row_len: usize,
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
            features: Features::U8(ByteBuffer::new(device, x)?, scale),
            targets: Targets::Classes(Labels::new(device, labels)?),
            rows,
            row_len,
            device: device.clone(),
        }
        .tagged())
    }

    /// From `rows × row_len` floats and class labels of any integer type (one per row).
    pub fn from_f32<L: ClassIndex>(
        device: &Device,
        x: &[f32],
        row_len: usize,
        labels: &[L],
    ) -> Result<Dataset> {
        let rows = labels.len();
        Dataset::check(rows, row_len, x.len())?;
        Ok(Dataset {
            features: Features::F32(Tensor::from_slice(device, x, &[x.len()])?),
            targets: Targets::Classes(Labels::new(device, labels)?),
            rows,
            row_len,
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
        if let Some(bad) = targets.iter().find(|v| !v.is_finite()) {
            return Err(Error::InvalidArgument {
                op: "Dataset::from_f32_targets",
                name: "targets",
                expected: "finite values".into(),
                found: bad.to_string(),
            });
        }
        Ok(Dataset {
            features: Features::F32(Tensor::from_slice(device, x, &[x.len()])?),
            targets: Targets::Dense(
                Tensor::from_slice(device, targets, &[targets.len()])?,
                target_len,
            ),
            rows,
            row_len,
            device: device.clone(),
        }
        .tagged())
    }

    /// Tags the device memory as a dataset's (for the memory breakdown).
    fn tagged(self) -> Dataset {
        self.target_tensor().set_memory_kind(MemoryKind::Datasets);
        if let Features::F32(t) = &self.features {
            t.set_memory_kind(MemoryKind::Datasets);
        }
        self
    }

    /// The device the data lives on.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// The targets as f32 values on the device (class indices, or dense rows).
    fn target_tensor(&self) -> &Tensor {
        match &self.targets {
            Targets::Classes(l) => l.tensor(),
            Targets::Dense(t, _) => t,
        }
    }

    /// Values per target row: 1 for class labels.
    pub fn target_len(&self) -> usize {
        match &self.targets {
            Targets::Classes(_) => 1,
            Targets::Dense(_, n) => *n,
        }
    }

    /// The class labels, for a dataset of classes.
    pub fn labels(&self) -> Option<&Labels> {
        match &self.targets {
            Targets::Classes(l) => Some(l),
            Targets::Dense(..) => None,
        }
    }

    fn check(rows: usize, row_len: usize, len: usize) -> Result<()> {
        if rows == 0 || row_len == 0 {
            return Err(Error::InvalidArgument {
                op: "Dataset",
                name: "shape",
                expected: "at least one row of at least one feature".into(),
                found: format!("{rows} rows of {row_len}"),
            });
        }
        if rows.checked_mul(row_len) != Some(len) {
            return Err(Error::ShapeMismatch {
                op: "Dataset",
                expected: format!(
                    "{rows} rows (one per label) × {row_len} features = {} values",
                    rows * row_len
                ),
                found: format!("{len} values"),
            });
        }
        Ok(())
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

    /// The feature and target selections of rows `indices[offset..offset + batch]`.
    fn selection<'a>(
        &self,
        indices: &'a IndexBuffer,
        offset: usize,
        batch: usize,
    ) -> [Rows<'a>; 2] {
        let scale = match &self.features {
            Features::U8(_, s) => *s,
            Features::F32(_) => 1.0,
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
        if self.gathers_as_pair() {
            1
        } else {
            2
        }
    }

    /// Whether features and targets are gathered by one dispatch (byte rows of whole words).
    fn gathers_as_pair(&self) -> bool {
        matches!(self.features, Features::U8(..)) && self.row_len.is_multiple_of(4)
    }

    /// Records gathering rows `indices[offset..offset + batch]` into `x` and `y`: one
    /// dispatch for byte rows of whole words, two otherwise; their uniforms, in order, are
    /// [`Dataset::gather_uniforms`].
    #[allow(clippy::too_many_arguments)] // buffers and shape, spelled out
    pub(crate) fn gather(
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
            Features::U8(b, _) if self.gathers_as_pair() => {
                return gather::gather_pair(rec, b, targets, xr, self.target_len(), x, y)
            }
            Features::U8(b, _) => gather::gather(rec, b, xr, x)?,
            Features::F32(t) => gather::gather_f32(rec, t, xr, x)?,
        }
        gather::gather_f32(rec, targets, yr, y)
    }

    /// The uniforms of [`Dataset::gather`]'s dispatches for another batch of rows (a
    /// training step writes them into its parameter table).
    pub(crate) fn gather_uniforms(
        &self,
        indices: &IndexBuffer,
        offset: usize,
        batch: usize,
    ) -> Vec<Vec<u8>> {
        let [xr, yr] = self.selection(indices, offset, batch);
        if self.gathers_as_pair() {
            vec![bytemuck::bytes_of(&PairParams::new(&xr, self.target_len())).to_vec()]
        } else {
            vec![
                bytemuck::bytes_of(&xr.params()).to_vec(),
                bytemuck::bytes_of(&yr.params()).to_vec(),
            ]
        }
    }
}
