//! Datasets resident on the device: features uploaded once (bytes stay bytes and are looked
//! up in a 256-entry palette when gathered; floats with at most 256 distinct values become
//! such bytes too), targets as class [`Labels`] or dense rows, and batches gathered on the
//! device through an index permutation.

use crate::error::{Error, Result};
use crate::exec::dispatch::Record;
use crate::exec::recorder::Recorder;
use crate::kernels::gather::{self, Lookup, PairParams, Rows, PALETTE_LEN};
use crate::memory::MemoryKind;
use crate::ops::{ClassIndex, Labels};
use crate::runtime::Device;
use crate::tensor::{ByteBuffer, IndexBuffer, Tensor};

/// Features of a [`Dataset`] on the device.
#[derive(Debug)]
pub(crate) enum Features {
    /// Bytes, turned into floats when gathered as the [`Lookup`] says: scaled (pixels / 255),
    /// divided, or through the palette of [`PALETTE_LEN`] floats (bound in every mode, and
    /// holding what each byte stands for).
    U8(ByteBuffer, Tensor, Lookup),
    /// Plain floats.
    F32(Tensor),
    /// Integer ids (token or class ids), gathered as floats (exact below 2^24).
    Ids(IndexBuffer),
}

impl Features {
    /// Bytes when `x` has at most [`PALETTE_LEN`] distinct values (compared bit for bit, so
    /// -0.0, 0.0 and each NaN pattern stay what they were), else floats. Values that are
    /// exactly `k · s` or `k / d` for bytes k (pixels scaled in f32, or divided by 255 in
    /// f64 and rounded, as NumPy's `x / 255.0`) are gathered by a multiply or a divide, the
    /// divide only after this device reproduced all 256 quotients bit for bit; other values
    /// go through the palette.
    pub(crate) fn from_f32(device: &Device, x: &[f32]) -> Result<Features> {
        let Some((bytes, palette)) = palette_of(x) else {
            return Ok(Features::F32(Tensor::from_slice(device, x, &[x.len()])?));
        };
        let used = &palette[..distinct(&bytes)];
        if let Some((lookup, remap)) = affine(used) {
            let table: Vec<f32> = (0..PALETTE_LEN)
                .map(|k| lookup.value(k as u8, &[]))
                .collect();
            let pal = Tensor::from_slice(device, &table, &[PALETTE_LEN])?;
            let exact = match lookup {
                Lookup::Divide(_) => divides_exactly(device, &pal, &table, lookup)?,
                _ => true,
            };
            if exact {
                let bytes: Vec<u8> = bytes.iter().map(|&b| remap[b as usize]).collect();
                return Ok(Features::U8(ByteBuffer::new(device, &bytes)?, pal, lookup));
            }
        }
        Ok(Features::U8(
            ByteBuffer::new(device, &bytes)?,
            Tensor::from_slice(device, &palette, &[PALETTE_LEN])?,
            Lookup::Palette,
        ))
    }
}

/// How many palette entries the bytes use (indices are given in order of first use).
fn distinct(bytes: &[u8]) -> usize {
    bytes.iter().map(|&b| b as usize + 1).max().unwrap_or(0)
}

/// A multiply or divide that reproduces every value of `used` from a byte, and the byte
/// each palette index becomes: `k / d` with d the rounded reciprocal of the smallest
/// positive value (`x / 255.0`), else `k · s` with s that value (`x * (1/255)`).
fn affine(used: &[f32]) -> Option<(Lookup, [u8; PALETTE_LEN])> {
    let smallest = used
        .iter()
        .copied()
        .filter(|v| *v > 0.0 && v.is_finite())
        .fold(f32::INFINITY, f32::min);
    if !smallest.is_finite() {
        return None;
    }
    // 255 first: images divided by 255 whose darkest non-zero pixel is not 1 still match.
    let d = (1.0 / smallest as f64).round() as f32;
    let candidates = [
        Some(Lookup::Divide(255.0)),
        (d.is_finite() && d >= 1.0 && d != 255.0).then_some(Lookup::Divide(d)),
        Some(Lookup::Multiply(1.0 / 255.0)),
        Some(Lookup::Multiply(smallest)),
    ];
    'next: for lookup in candidates.into_iter().flatten() {
        let mut remap = [0u8; PALETTE_LEN];
        for (i, &v) in used.iter().enumerate() {
            let k = match lookup {
                Lookup::Divide(d) => (v as f64 * d as f64).round(),
                Lookup::Multiply(s) => (v as f64 / s as f64).round(),
                Lookup::Palette => continue 'next,
            };
            if !(0.0..=255.0).contains(&k) || lookup.value(k as u8, &[]).to_bits() != v.to_bits() {
                continue 'next;
            }
            remap[i] = k as u8;
        }
        return Some((lookup, remap));
    }
    None
}

/// Whether this device's byte gather in `lookup`'s mode gives `want` (the host's values,
/// bound as `table`) bit for bit for all 256 bytes (WGSL's division may be off by 2.5 ULP;
/// lavapipe's is exact, GPUs' varies). Runs before the dataset's bytes are uploaded.
fn divides_exactly(device: &Device, table: &Tensor, want: &[f32], lookup: Lookup) -> Result<bool> {
    let all: Vec<u8> = (0..=255u8).collect();
    let data = ByteBuffer::new(device, &all)?;
    let idx = IndexBuffer::new(device, &[0])?;
    let out = Tensor::zeros(device, &[PALETTE_LEN])?;
    let mut rec = Recorder::new(device);
    let rows = Rows {
        indices: &idx,
        offset: 0,
        batch: 1,
        row_len: PALETTE_LEN,
        scale: 1.0,
    };
    gather::gather(&mut rec, &data, table, lookup, rows, out.buffer())?;
    rec.submit()?;
    let got = out.to_vec()?;
    let same = got
        .iter()
        .zip(want)
        .all(|(a, b)| a.to_bits() == b.to_bits());
    if !same {
        log::info!("this device's division is not exact for byte datasets; using a palette");
    }
    Ok(same)
}

/// `x` as indices into a palette of its distinct values, if it has at most [`PALETTE_LEN`]
/// of them: one pass with a small open-addressed table of bit patterns (the image data of a
/// typical dataset repeats the previous value often, which the first check catches).
pub(crate) fn palette_of(x: &[f32]) -> Option<(Vec<u8>, Vec<f32>)> {
    const SLOTS: usize = 1024; // a power of two, 4× the palette: short probes
    let mut keys = [0u32; SLOTS];
    let mut vals = [0u8; SLOTS];
    let mut used = [false; SLOTS];
    let mut palette: Vec<f32> = Vec::with_capacity(PALETTE_LEN);
    let mut bytes = Vec::with_capacity(x.len());
    let (mut last_bits, mut last_idx) = (None::<u32>, 0u8);
    for &v in x {
        let bits = v.to_bits();
        if last_bits == Some(bits) {
            bytes.push(last_idx);
            continue;
        }
        let mut slot = (bits.wrapping_mul(0x9E37_79B1) >> 22) as usize & (SLOTS - 1);
        let idx = loop {
            if !used[slot] {
                if palette.len() == PALETTE_LEN {
                    return None;
                }
                used[slot] = true;
                keys[slot] = bits;
                vals[slot] = palette.len() as u8;
                palette.push(v);
                break vals[slot];
            }
            if keys[slot] == bits {
                break vals[slot];
            }
            slot = (slot + 1) & (SLOTS - 1);
        };
        bytes.push(idx);
        last_bits = Some(bits);
        last_idx = idx;
    }
    palette.resize(PALETTE_LEN, 0.0);
    Some((bytes, palette))
}

impl Targets {
    /// The values as f32 on the device (class indices, or dense rows).
    pub(crate) fn tensor(&self) -> &Tensor {
        match self {
            Targets::Classes(l, _) => l.tensor(),
            Targets::Dense(t, _) => t,
        }
    }

    /// Values per sample: the labels per sample, or the dense row's length.
    pub(crate) fn len(&self) -> usize {
        match self {
            Targets::Classes(_, n) | Targets::Dense(_, n) => *n,
        }
    }

    /// The class labels, for targets that are classes.
    pub(crate) fn labels(&self) -> Option<&Labels> {
        match self {
            Targets::Classes(l, _) => Some(l),
            Targets::Dense(..) => None,
        }
    }
}

/// Targets of a [`Dataset`] on the device.
#[derive(Debug)]
pub(crate) enum Targets {
    /// Class indices (sparse categorical cross-entropy), this many per sample (one per
    /// position of a sequence; 1 for a label per sample).
    Classes(Labels, usize),
    /// Dense rows of this many values (one-hot or probabilities, binary targets, regression
    /// values), row-major.
    Dense(Tensor, usize),
}

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
    pub(crate) more_inputs: Vec<crate::data::columns::Column>,
    /// The targets of the model's outputs after the first ([`Dataset::with_target_classes`]).
    pub(crate) more_targets: Vec<Targets>,
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
            device: device.clone(),
        }
        .tagged()
    }

    /// Tags the device memory as a dataset's (for the memory breakdown).
    fn tagged(self) -> Dataset {
        self.target_tensor().set_memory_kind(MemoryKind::Datasets);
        match &self.features {
            Features::F32(t) | Features::U8(_, t, _) => t.set_memory_kind(MemoryKind::Datasets),
            Features::Ids(_) => {} // an index buffer is a dataset's from the start
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
        if self.gathers_as_pair() {
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
    /// training step writes them into its parameter table).
    pub(crate) fn gather_uniforms(
        &self,
        indices: &IndexBuffer,
        offset: usize,
        batch: usize,
    ) -> Vec<Vec<u8>> {
        let [xr, yr] = self.selection(indices, offset, batch);
        let mut u =
            if let (true, Features::U8(_, _, lookup)) = (self.gathers_as_pair(), &self.features) {
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
        u
    }
}

#[cfg(test)]
mod tests {
    use super::{affine, palette_of};
    use crate::kernels::gather::Lookup;

    #[test]
    fn pixels_divided_or_scaled_are_recognised_exactly() {
        // Shuffled levels, as a dataset's first appearances come.
        let ks: Vec<u8> = (0..=255u8).rev().step_by(3).collect();
        let divided: Vec<f32> = ks.iter().map(|&k| (k as f64 / 255.0) as f32).collect();
        let (lookup, remap) = affine(&divided).expect("k / 255");
        assert_eq!(lookup, Lookup::Divide(255.0));
        for (i, &k) in ks.iter().enumerate() {
            assert_eq!(remap[i], k);
        }
        let scaled: Vec<f32> = ks.iter().map(|&k| k as f32 * (1.0 / 255.0)).collect();
        // f32(k)·f32(1/255) differs from k/255 for about half of the k: not a divide.
        assert_eq!(affine(&scaled).unwrap().0, Lookup::Multiply(1.0 / 255.0));
        let halves: Vec<f32> = (0..10).map(|k| k as f32 * 0.5).collect();
        assert_eq!(affine(&halves).unwrap().0, Lookup::Divide(2.0));
        // -0.0 is no byte's quotient; neither are values past 255 steps.
        assert!(affine(&[-0.0, 1.0 / 255.0]).is_none());
        assert!(affine(&[0.001, 1.0]).is_none());
        assert!(affine(&[(1.0f64 / 3.0) as f32, 0.7]).is_none());
    }

    #[test]
    fn palette_round_trips_bit_for_bit() {
        // Pixels divided by 255 in f64 and rounded to f32, as NumPy users produce them, with
        // both zeros, a NaN and 0.5: 253 levels and those three fill the 256 entries.
        let mut x: Vec<f32> = (0..253u32).map(|k| (k as f64 / 255.0) as f32).collect();
        x.extend([-0.0, f32::NAN, 0.0, 0.5, 0.5, (3.0f64 / 255.0) as f32]);
        let (bytes, pal) = palette_of(&x).expect("256 distinct values fit");
        assert_eq!(pal.len(), 256);
        assert_eq!(bytes.len(), x.len());
        for (b, v) in bytes.iter().zip(&x) {
            assert_eq!(pal[*b as usize].to_bits(), v.to_bits());
        }
        // -0.0 and 0.0 are different entries.
        assert_ne!(bytes[0], bytes[253]);
    }

    #[test]
    fn more_than_256_distinct_values_are_refused() {
        let x: Vec<f32> = (0..257).map(|k| k as f32).collect();
        assert!(palette_of(&x).is_none());
        assert!(palette_of(&x[..256]).is_some());
        assert!(palette_of(&[]).is_some());
    }
}
