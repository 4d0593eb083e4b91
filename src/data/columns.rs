//! The columns of a dataset beyond its first: one per model input after the first (Keras's
//! `fit(x=[a, b])`), one per model output after the first (`fit(y=[t1, t2])`), and integer
//! id columns (token or class ids) uploaded as integers, not floats. Every column is gathered through the same row permutation as the first, one
//! dispatch per column per step, so a model of several inputs still trains without leaving
//! the device.

use crate::data::dataset::Dataset;
use crate::data::features::{Column, Features, IdRecords, Targets};
use crate::error::{Error, Result};
use crate::exec::dispatch::Record;
use crate::kernels::gather::{self, Lookup, Rows};
use crate::tensor::IndexBuffer;

/// The largest id gathered exactly: ids become f32 inputs when gathered, and every integer up
/// to 2^24 is an f32.
pub const MAX_ID: u32 = 1 << 24;

impl Column {
    /// The selection of rows `indices[offset..offset + batch]`.
    fn rows<'a>(&self, indices: &'a IndexBuffer, offset: usize, batch: usize) -> Rows<'a> {
        Rows {
            indices,
            offset,
            batch,
            row_len: self.row_len,
            scale: 1.0,
        }
    }

    /// Records gathering rows `indices[offset..offset + batch]` into `out` (one dispatch).
    fn gather(
        &self,
        rec: &mut dyn Record,
        indices: &IndexBuffer,
        offset: usize,
        batch: usize,
        out: &wgpu::Buffer,
    ) -> Result<()> {
        let rows = self.rows(indices, offset, batch);
        match &self.features {
            Features::U8(b, pal, lookup) => gather::gather(rec, b, pal, *lookup, rows, out),
            Features::F32(t) => gather::gather_f32(rec, t, rows, out),
            Features::Ids(ids) => gather::gather_ids(rec, ids, rows, out),
            Features::Windows(_) => Err(Error::Internal {
                op: "gather",
                message: "a text's windows as a column after the first".into(),
            }),
        }
    }

    /// The uniform of [`Column::gather`]'s dispatch (byte columns carry their lookup's
    /// factor, as the first column's do).
    fn uniform(&self, indices: &IndexBuffer, offset: usize, batch: usize) -> Vec<u8> {
        let mut p = self.rows(indices, offset, batch).params();
        if let Features::U8(_, _, lookup) = &self.features {
            p.scale = lookup.mode().1;
        }
        bytemuck::bytes_of(&p).to_vec()
    }
}

/// The selection of a target column's rows.
fn target_rows<'a>(t: &Targets, indices: &'a IndexBuffer, offset: usize, batch: usize) -> Rows<'a> {
    Rows {
        indices,
        offset,
        batch,
        row_len: t.len(),
        scale: 1.0,
    }
}

/// Refuses a per-sample shape that does not hold `rows × values` for this dataset's rows.
fn check_shape(op: &'static str, rows: usize, len: usize, shape: &[usize]) -> Result<usize> {
    let row_len: usize = shape.iter().product();
    if shape.is_empty() || row_len == 0 || rows.checked_mul(row_len) != Some(len) {
        return Err(Error::ShapeMismatch {
            op,
            expected: format!(
                "{rows} samples (the dataset's rows) of shape {shape:?}, {} values",
                rows.saturating_mul(row_len)
            ),
            found: format!("{len} values"),
        });
    }
    Ok(row_len)
}

/// Refuses ids past [`MAX_ID`], naming the first.
fn check_ids(op: &'static str, ids: &[u32], row_len: usize) -> Result<()> {
    match ids.iter().position(|&v| v >= MAX_ID) {
        None => Ok(()),
        Some(i) => Err(Error::InvalidArgument {
            op,
            name: "ids",
            expected: format!("ids below {MAX_ID} (2^24: exact as floats)"),
            found: format!("{} at row {}, column {}", ids[i], i / row_len, i % row_len),
        }),
    }
}

/// Ids as a column: one byte each when every id is below 256 (a quarter of the memory,
/// gathered by the byte kernels with a factor of 1), else four.
fn ids_features(dev: &crate::runtime::Device, ids: &[u32]) -> Result<Features> {
    if ids.iter().all(|&v| v < 256) {
        let bytes: Vec<u8> = ids.iter().map(|&v| v as u8).collect();
        return Ok(Features::U8(
            crate::tensor::ByteBuffer::new(dev, &bytes)?,
            crate::tensor::Tensor::from_slice(
                dev,
                &gather::scaled_palette(1.0),
                &[gather::PALETTE_LEN],
            )?,
            Lookup::Multiply(1.0),
        ));
    }
    Ok(Features::Ids(IndexBuffer::new(dev, ids)?))
}

impl Dataset {
    /// The same rows with one more input column: the model's next input (Keras's
    /// `fit(x=[a, b])`, in the order of `Model(inputs=[...])`), `shape` per sample, the values
    /// row-major (sample 0 first). Stored as the first column is (bytes where the values
    /// allow, see [`Dataset::from_f32`]).
    pub fn with_input(mut self, x: &[f32], shape: &[usize]) -> Result<Dataset> {
        let row_len = check_shape("Dataset::with_input", self.len(), x.len(), shape)?;
        Dataset::finite(x, row_len)?;
        let features = Features::from_f32(self.device(), x)?;
        self.more_inputs.push(Column {
            features,
            row_len,
            shape: shape.to_vec(),
        });
        Ok(self)
    }

    /// [`Dataset::with_input`] for integer ids (token ids, class ids): uploaded once as
    /// integers (one byte each when all are below 256), gathered as the f32 values a layer
    /// reads. Ids must be below [`MAX_ID`].
    pub fn with_input_ids(mut self, ids: &[u32], shape: &[usize]) -> Result<Dataset> {
        let row_len = check_shape("Dataset::with_input_ids", self.len(), ids.len(), shape)?;
        check_ids("Dataset::with_input_ids", ids, row_len)?;
        let features = ids_features(self.device(), ids)?;
        let input = self.inputs();
        self.id_records.push((input, IdRecords::new(ids, row_len)));
        self.more_inputs.push(Column {
            features,
            row_len,
            shape: shape.to_vec(),
        });
        Ok(self)
    }

    /// From integer ids as the first input (`rows × row_len`, below [`MAX_ID`]) and
    /// `positions` class labels per sample (1 for a label per sample; one per position for a
    /// (positions, classes) output, as a language model's next-token labels are).
    pub fn from_ids<L: crate::ops::ClassIndex>(
        device: &crate::runtime::Device,
        ids: &[u32],
        row_len: usize,
        labels: &[L],
        positions: usize,
    ) -> Result<Dataset> {
        let op = "Dataset::from_ids";
        if positions == 0 || labels.is_empty() || !labels.len().is_multiple_of(positions) {
            return Err(Error::ShapeMismatch {
                op,
                expected: format!("a whole number of samples of {positions} labels (at least one)"),
                found: format!("{} labels", labels.len()),
            });
        }
        let rows = labels.len() / positions;
        Dataset::check(rows, row_len, ids.len())?;
        check_ids(op, ids, row_len)?;
        let features = ids_features(device, ids)?;
        let labels = crate::ops::Labels::new(device, labels)?;
        let mut data = Dataset::assemble(
            device,
            features,
            Targets::Classes(labels, positions),
            rows,
            row_len,
        );
        data.id_records.push((0, IdRecords::new(ids, row_len)));
        Ok(data)
    }

    /// The first id at or above `bound` in input `k`'s column, as (id, row, column), if that
    /// column holds integer ids ([`Dataset::from_ids`], [`Dataset::with_input_ids`]).
    pub(crate) fn first_id_at_least(&self, k: usize, bound: u32) -> Option<(u32, usize, usize)> {
        let (_, r) = self.id_records.iter().find(|(i, _)| *i == k)?;
        r.first_at_least(bound)
    }

    /// The per-sample shape of every input column, the first's first.
    pub fn input_shapes(&self) -> Vec<&[usize]> {
        std::iter::once(self.sample_shape())
            .chain(self.more_inputs.iter().map(|c| c.shape.as_slice()))
            .collect()
    }

    /// Number of input columns.
    pub fn inputs(&self) -> usize {
        1 + self.more_inputs.len()
    }

    /// The same rows with the class labels of one more output (Keras's `fit(y=[t1, t2])`, in
    /// the order of `Model(outputs=[...])`): `positions` labels per sample (1, or one per
    /// position of a (positions, classes) output).
    pub fn with_target_classes<L: crate::ops::ClassIndex>(
        mut self,
        labels: &[L],
        positions: usize,
    ) -> Result<Dataset> {
        if positions == 0 || Some(labels.len()) != self.len().checked_mul(positions) {
            return Err(Error::ShapeMismatch {
                op: "Dataset::with_target_classes",
                expected: format!(
                    "{} samples (the dataset's rows) of {positions} labels",
                    self.len()
                ),
                found: format!("{} labels", labels.len()),
            });
        }
        let l = crate::ops::Labels::new(self.device(), labels)?;
        l.tensor()
            .set_memory_kind(crate::memory::MemoryKind::Datasets);
        self.more_targets.push(Targets::Classes(l, positions));
        Ok(self)
    }

    /// The same rows with the dense targets of one more output: `len` values per sample
    /// (one-hot rows, 0/1 for binary cross-entropy, values for a regression loss).
    pub fn with_target_values(mut self, values: &[f32], len: usize) -> Result<Dataset> {
        if len == 0 || Some(values.len()) != self.len().checked_mul(len) {
            return Err(Error::ShapeMismatch {
                op: "Dataset::with_target_values",
                expected: format!(
                    "{} samples (the dataset's rows) of {len} values",
                    self.len()
                ),
                found: format!("{} values", values.len()),
            });
        }
        if let Some(bad) = values.iter().find(|v| !v.is_finite()) {
            return Err(Error::InvalidArgument {
                op: "Dataset::with_target_values",
                name: "targets",
                expected: "finite values".into(),
                found: bad.to_string(),
            });
        }
        let t = crate::tensor::Tensor::from_slice(self.device(), values, &[values.len()])?;
        t.set_memory_kind(crate::memory::MemoryKind::Datasets);
        self.more_targets.push(Targets::Dense(t, len));
        Ok(self)
    }

    /// Number of target columns (one per model output).
    pub fn outputs(&self) -> usize {
        1 + self.more_targets.len()
    }

    /// Records the gathers of the columns after the first into `outs` (one each: the other
    /// inputs', then the other outputs' targets).
    pub(crate) fn gather_more(
        &self,
        rec: &mut dyn Record,
        indices: &IndexBuffer,
        offset: usize,
        batch: usize,
        outs: &[&wgpu::Buffer],
    ) -> Result<()> {
        let (n_in, n_out) = (self.more_inputs.len(), self.more_targets.len());
        if outs.len() != n_in + n_out {
            return Err(Error::Internal {
                op: "gather",
                message: format!(
                    "{} buffers for {n_in} more input and {n_out} more target columns",
                    outs.len()
                ),
            });
        }
        for (c, out) in self.more_inputs.iter().zip(outs) {
            c.gather(rec, indices, offset, batch, out)?;
        }
        for (t, out) in self.more_targets.iter().zip(&outs[n_in..]) {
            gather::gather_f32(rec, t.tensor(), target_rows(t, indices, offset, batch), out)?;
        }
        Ok(())
    }

    /// The uniforms of [`Dataset::gather_more`]'s dispatches.
    pub(crate) fn gather_more_uniforms(
        &self,
        indices: &IndexBuffer,
        offset: usize,
        batch: usize,
    ) -> Vec<Vec<u8>> {
        let targets = self
            .more_targets
            .iter()
            .map(|t| bytemuck::bytes_of(&target_rows(t, indices, offset, batch).params()).to_vec());
        self.more_inputs
            .iter()
            .map(|c| c.uniform(indices, offset, batch))
            .chain(targets)
            .collect()
    }
}
