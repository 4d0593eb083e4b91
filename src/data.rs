//! Data: the IDX format (MNIST's), the MNIST loader, and device-resident datasets.
//!
//! IDX files (LeCun's format) are `0x00 0x00 dtype ndim`, then `ndim` big-endian u32
//! dimensions, then the data. Only unsigned bytes (`0x08`) are used by MNIST and accepted here.
//! Files may be gzip-compressed (detected by their magic). Everything is validated before
//! anything of the claimed size is allocated: magic, dtype, dimensions and the exact data
//! length, with [`Error::Malformed`] naming the file and what was wrong.

use std::io::Read;
use std::path::{Path, PathBuf};

use crate::kernels::gather::{ByteBuffer, IndexBuffer};
use crate::{Device, Error, Result, Tensor};

/// An IDX array of bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Idx {
    /// Dimensions, e.g. `[60000, 28, 28]`.
    pub dims: Vec<usize>,
    /// Row-major data, `dims.product()` bytes.
    pub data: Vec<u8>,
}

/// The largest IDX payload accepted (2 GiB): beyond it a header is taken as corrupt.
pub const MAX_IDX_BYTES: u64 = 1 << 31;

fn malformed(path: &Path, expected: impl Into<String>, found: impl Into<String>) -> Error {
    Error::Malformed {
        path: path.to_path_buf(),
        format: "IDX",
        expected: expected.into(),
        found: found.into(),
    }
}

/// Parses IDX bytes (raw or gzip); `path` is only used in error messages.
pub fn parse_idx(path: &Path, bytes: &[u8]) -> Result<Idx> {
    if bytes.len() >= 2 && bytes[0] == 0x1f && bytes[1] == 0x8b {
        let mut dec = flate2::read::GzDecoder::new(bytes);
        let mut head = [0u8; 4];
        dec.read_exact(&mut head)
            .map_err(|e| malformed(path, "a gzip stream holding an IDX header", format!("{e}")))?;
        let ndim = check_magic(path, head)?;
        let mut dims_raw = vec![0u8; ndim * 4];
        dec.read_exact(&mut dims_raw).map_err(|_| {
            malformed(
                path,
                format!("{ndim} dimensions"),
                "the file ends inside the header",
            )
        })?;
        let (dims, claimed) = parse_dims(path, &dims_raw)?;
        // Read at most one byte more than claimed, so a huge or short claim is caught
        // without allocating what it claims.
        let mut data = Vec::new();
        dec.take(claimed + 1)
            .read_to_end(&mut data)
            .map_err(|e| malformed(path, "a valid gzip stream", format!("{e}")))?;
        if data.len() as u64 != claimed {
            return Err(malformed(
                path,
                format!("{claimed} data bytes for dimensions {dims:?}"),
                if data.len() as u64 > claimed {
                    "more data than that".to_string()
                } else {
                    format!("{} bytes", data.len())
                },
            ));
        }
        return Ok(Idx { dims, data });
    }
    if bytes.len() < 4 {
        return Err(malformed(
            path,
            "at least a 4-byte header",
            format!("{} bytes", bytes.len()),
        ));
    }
    let ndim = check_magic(path, [bytes[0], bytes[1], bytes[2], bytes[3]])?;
    let header = 4 + 4 * ndim;
    if bytes.len() < header {
        return Err(malformed(
            path,
            format!("{header} header bytes"),
            format!("{} bytes", bytes.len()),
        ));
    }
    let (dims, claimed) = parse_dims(path, &bytes[4..header])?;
    let actual = (bytes.len() - header) as u64;
    if actual != claimed {
        return Err(malformed(
            path,
            format!("{claimed} data bytes for dimensions {dims:?}"),
            format!("{actual} bytes"),
        ));
    }
    Ok(Idx {
        dims,
        data: bytes[header..].to_vec(),
    })
}

fn check_magic(path: &Path, head: [u8; 4]) -> Result<usize> {
    if head[0] != 0 || head[1] != 0 {
        return Err(malformed(
            path,
            "magic 00 00 (IDX)",
            format!("{:02x} {:02x}", head[0], head[1]),
        ));
    }
    if head[2] != 0x08 {
        return Err(malformed(
            path,
            "data type 0x08 (unsigned byte)",
            format!("0x{:02x}", head[2]),
        ));
    }
    let ndim = head[3] as usize;
    if ndim == 0 {
        return Err(malformed(path, "at least one dimension", "0"));
    }
    Ok(ndim)
}

fn parse_dims(path: &Path, raw: &[u8]) -> Result<(Vec<usize>, u64)> {
    let dims: Vec<usize> = raw
        .chunks_exact(4)
        .map(|c| u32::from_be_bytes([c[0], c[1], c[2], c[3]]) as usize)
        .collect();
    let mut claimed: u64 = 1;
    for &d in &dims {
        claimed = claimed.saturating_mul(d as u64);
    }
    if claimed > MAX_IDX_BYTES {
        return Err(malformed(
            path,
            format!("at most {MAX_IDX_BYTES} data bytes"),
            format!("dimensions {dims:?} claiming {claimed}"),
        ));
    }
    Ok((dims, claimed))
}

/// Reads an IDX file (raw or gzip).
pub fn read_idx(path: &Path) -> Result<Idx> {
    let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
    parse_idx(path, &bytes)
}

/// MNIST on the host: 60,000 training and 10,000 test images of 28×28 bytes, with labels.
#[derive(Clone, Debug)]
pub struct Mnist {
    /// Training images, 60000 × 784 bytes.
    pub train_images: Vec<u8>,
    /// Training labels, 0..=9.
    pub train_labels: Vec<u8>,
    /// Test images, 10000 × 784 bytes.
    pub test_images: Vec<u8>,
    /// Test labels.
    pub test_labels: Vec<u8>,
}

/// The four MNIST file names, as distributed.
pub const MNIST_FILES: [&str; 4] = [
    "train-images-idx3-ubyte",
    "train-labels-idx1-ubyte",
    "t10k-images-idx3-ubyte",
    "t10k-labels-idx1-ubyte",
];

impl Mnist {
    /// Loads MNIST from `$MNIST_DIR`, else `./data/mnist`, else this crate's `data/mnist`
    /// (files may be `.gz` or raw). The error lists every place looked.
    pub fn load() -> Result<Mnist> {
        let mut candidates = Vec::new();
        if let Some(d) = std::env::var_os("MNIST_DIR") {
            candidates.push(PathBuf::from(d));
        }
        candidates.push(PathBuf::from("data/mnist"));
        candidates.push(Path::new(env!("CARGO_MANIFEST_DIR")).join("data/mnist"));
        for dir in &candidates {
            if MNIST_FILES.iter().all(|f| find(dir, f).is_some()) {
                return Mnist::load_dir(dir);
            }
        }
        Err(Error::io(
            candidates[0].clone(),
            std::io::Error::new(
                std::io::ErrorKind::NotFound,
                format!(
                    "MNIST not found; looked for {} (.gz or raw) in: {}. Set MNIST_DIR to the folder holding them.",
                    MNIST_FILES.join(", "),
                    candidates.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
                ),
            ),
        ))
    }

    /// Loads MNIST from one directory, checking shapes and label range.
    pub fn load_dir(dir: &Path) -> Result<Mnist> {
        let get = |name: &str| -> Result<Idx> {
            let p = find(dir, name).ok_or_else(|| {
                Error::io(
                    dir.join(name),
                    std::io::Error::new(std::io::ErrorKind::NotFound, "missing (.gz or raw)"),
                )
            })?;
            read_idx(&p)
        };
        let check = |idx: &Idx, name: &str, want: &[usize]| -> Result<()> {
            if idx.dims != want {
                return Err(malformed(
                    &dir.join(name),
                    format!("dimensions {want:?}"),
                    format!("{:?}", idx.dims),
                ));
            }
            if want.len() == 1 && idx.data.iter().any(|&l| l > 9) {
                return Err(malformed(
                    &dir.join(name),
                    "labels 0..=9",
                    "a label above 9",
                ));
            }
            Ok(())
        };
        let ti = get(MNIST_FILES[0])?;
        check(&ti, MNIST_FILES[0], &[60000, 28, 28])?;
        let tl = get(MNIST_FILES[1])?;
        check(&tl, MNIST_FILES[1], &[60000])?;
        let vi = get(MNIST_FILES[2])?;
        check(&vi, MNIST_FILES[2], &[10000, 28, 28])?;
        let vl = get(MNIST_FILES[3])?;
        check(&vl, MNIST_FILES[3], &[10000])?;
        Ok(Mnist {
            train_images: ti.data,
            train_labels: tl.data,
            test_images: vi.data,
            test_labels: vl.data,
        })
    }
}

fn find(dir: &Path, name: &str) -> Option<PathBuf> {
    [dir.join(format!("{name}.gz")), dir.join(name)]
        .into_iter()
        .find(|p| p.is_file())
}

/// Features of a [`Dataset`] on the device.
#[derive(Debug)]
pub(crate) enum Features {
    /// Bytes scaled by a factor when gathered (pixels / 255).
    U8(ByteBuffer, f32),
    /// Plain floats.
    F32(Tensor),
}

/// A dataset resident on the device: features uploaded once, and targets: class indices
/// (`target_len` 1, for sparse categorical cross-entropy) or dense rows of `target_len` values
/// (one-hot or probabilities, binary targets, regression values).
/// Batches are gathered on the device through an index permutation.
#[derive(Debug)]
pub struct Dataset {
    pub(crate) features: Features,
    pub(crate) labels: Tensor,
    /// Values per target row: 1 for class indices.
    pub(crate) target_len: usize,
    /// Whether the targets are class indices.
    pub(crate) sparse: bool,
    pub(crate) rows: usize,
    pub(crate) row_len: usize,
    pub(crate) max_label: u32,
    pub(crate) device: Device,
}

impl Dataset {
    /// From `rows × row_len` bytes, scaled by `scale` when gathered (e.g. 1/255), and class
    /// labels.
    pub fn from_u8(
        device: &Device,
        x: &[u8],
        row_len: usize,
        scale: f32,
        labels: &[u8],
    ) -> Result<Dataset> {
        let rows = labels.len();
        Dataset::check(rows, row_len, x.len())?;
        let lab: Vec<f32> = labels.iter().map(|&l| l as f32).collect();
        Ok(Dataset {
            features: Features::U8(ByteBuffer::new(device, x)?, scale),
            labels: Tensor::from_slice(device, &lab, &[rows])?,
            target_len: 1,
            sparse: true,
            rows,
            row_len,
            max_label: labels.iter().copied().max().unwrap_or(0) as u32,
            device: device.clone(),
        }
        .tagged())
    }

    /// From `rows × row_len` floats and class labels.
    pub fn from_f32(device: &Device, x: &[f32], row_len: usize, labels: &[u32]) -> Result<Dataset> {
        let rows = labels.len();
        Dataset::check(rows, row_len, x.len())?;
        if let Some(&big) = labels.iter().find(|&&l| l >= 1 << 24) {
            return Err(Error::InvalidArgument {
                op: "Dataset::from_f32",
                name: "labels",
                expected: "class indices below 2^24".into(),
                found: big.to_string(),
            });
        }
        let lab: Vec<f32> = labels.iter().map(|&l| l as f32).collect();
        Ok(Dataset {
            features: Features::F32(Tensor::from_slice(device, x, &[x.len()])?),
            labels: Tensor::from_slice(device, &lab, &[rows])?,
            target_len: 1,
            sparse: true,
            rows,
            row_len,
            max_label: labels.iter().copied().max().unwrap_or(0),
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
            labels: Tensor::from_slice(device, targets, &[targets.len()])?,
            target_len,
            sparse: false,
            rows,
            row_len,
            max_label: 0,
            device: device.clone(),
        }
        .tagged())
    }

    /// Tags the device memory as a dataset's (for the memory breakdown).
    fn tagged(self) -> Dataset {
        self.labels
            .set_memory_kind(crate::memory::MemoryKind::Datasets);
        if let Features::F32(t) = &self.features {
            t.set_memory_kind(crate::memory::MemoryKind::Datasets);
        }
        self
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
    pub(crate) fn rows<'a>(
        &self,
        indices: &'a IndexBuffer,
        offset: usize,
        batch: usize,
    ) -> [crate::kernels::gather::Rows<'a>; 2] {
        use crate::kernels::gather::Rows;
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
                row_len: self.target_len,
                scale: 1.0,
            },
        ]
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
        rec: &mut crate::kernel::Recorder<'_>,
        indices: &IndexBuffer,
        offset: usize,
        batch: usize,
        x: &wgpu::Buffer,
        y: &wgpu::Buffer,
    ) -> Result<()> {
        use crate::kernels::gather;
        let [xr, yr] = self.rows(indices, offset, batch);
        match &self.features {
            Features::U8(b, _) if self.gathers_as_pair() => {
                return gather::gather_pair(rec, b, &self.labels, xr, self.target_len, x, y)
            }
            Features::U8(b, _) => gather::gather(rec, b, xr, x)?,
            Features::F32(t) => gather::gather_f32(rec, t, xr, x)?,
        }
        gather::gather_f32(rec, &self.labels, yr, y)
    }

    /// The uniforms of [`Dataset::gather`]'s dispatches for another batch of rows (a
    /// training step writes them into its parameter table).
    pub(crate) fn gather_uniforms(
        &self,
        indices: &IndexBuffer,
        offset: usize,
        batch: usize,
    ) -> Vec<Vec<u8>> {
        use crate::kernels::gather::PairParams;
        let [xr, yr] = self.rows(indices, offset, batch);
        if self.gathers_as_pair() {
            vec![bytemuck::bytes_of(&PairParams::new(&xr, self.target_len)).to_vec()]
        } else {
            vec![
                bytemuck::bytes_of(&xr.params()).to_vec(),
                bytemuck::bytes_of(&yr.params()).to_vec(),
            ]
        }
    }
}
