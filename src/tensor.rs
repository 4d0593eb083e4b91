//! Tensors: f32 data in a pooled device buffer, with a shape and an owning device; and the
//! device arrays of bytes and indices that datasets and gathers use.
//!
//! A `Tensor` is a handle: cloning shares the buffer, and [`Tensor::reshape`] is a view (the
//! same buffer under another shape). Creation functions return `Result` because they allocate
//! (memory limits) and check shapes. The tensor ops (`matmul`, `relu`, …) are in
//! [`crate::ops`], above the kernels they run.

use std::fmt;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::exec::recorder::Recorder;
use crate::memory::{MemoryKind, PooledBuffer};
use crate::random::Rng;
use crate::runtime::Device;

struct Storage {
    buffer: PooledBuffer,
    device: Device,
}

/// An f32 tensor on a device, row-major.
///
/// ```no_run
/// use suanli::{Device, Tensor};
/// let dev = Device::open("auto")?;
/// let t = Tensor::from_slice(&dev, &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3])?;
/// assert_eq!(t.shape(), &[2, 3]);
/// assert_eq!(t.to_vec()?, vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
/// # Ok::<(), suanli::Error>(())
/// ```
#[derive(Clone)]
pub struct Tensor {
    storage: Arc<Storage>,
    shape: Arc<[usize]>,
}

const _: () = {
    // Tensors move between threads with their device (DeviceGroup workers).
    const fn send_sync<T: Send + Sync>() {}
    send_sync::<Tensor>();
};

impl fmt::Debug for Tensor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Tensor(shape={:?}, device={:?})",
            self.shape, self.storage.device
        )
    }
}

fn numel_of(op: &'static str, shape: &[usize]) -> Result<usize> {
    let mut n: usize = 1;
    for &d in shape {
        n = n.checked_mul(d).ok_or_else(|| Error::InvalidArgument {
            op,
            name: "shape",
            expected: "an element count that fits in memory".into(),
            found: format!("{shape:?}"),
        })?;
    }
    if n > u32::MAX as usize {
        return Err(Error::InvalidArgument {
            op,
            name: "shape",
            expected: format!("at most {} elements", u32::MAX),
            found: format!("{shape:?} ({n} elements)"),
        });
    }
    Ok(n)
}

impl Tensor {
    /// An uninitialised tensor (contents undefined); used by kernels for outputs.
    pub fn empty(device: &Device, shape: &[usize]) -> Result<Tensor> {
        let n = numel_of("Tensor::empty", shape)?;
        let buffer = device.pool().alloc(device.core(), (n as u64) * 4)?;
        Ok(Tensor {
            storage: Arc::new(Storage {
                buffer,
                device: device.clone(),
            }),
            shape: shape.into(),
        })
    }

    /// Uploads `data` (row-major) with the given shape.
    pub fn from_slice(device: &Device, data: &[f32], shape: &[usize]) -> Result<Tensor> {
        let n = numel_of("Tensor::from_slice", shape)?;
        if n != data.len() {
            return Err(Error::ShapeMismatch {
                op: "Tensor::from_slice",
                expected: format!("{n} elements for shape {shape:?}"),
                found: format!("{} elements", data.len()),
            });
        }
        let t = Tensor::empty(device, shape)?;
        if !data.is_empty() {
            device
                .wgpu_queue()
                .write_buffer(t.buffer(), 0, bytemuck::cast_slice(data));
        }
        Ok(t)
    }

    /// Overwrites the tensor's values with `data` (row-major, as many values as it holds), in
    /// place: every holder of this tensor (a shared layer, a view) sees the new values; work
    /// submitted before reads the old ones.
    pub fn write_slice(&self, data: &[f32]) -> Result<()> {
        if data.len() != self.numel() {
            return Err(Error::ShapeMismatch {
                op: "Tensor::write_slice",
                expected: format!("{} values for shape {:?}", self.numel(), self.shape()),
                found: format!("{} values", data.len()),
            });
        }
        if !data.is_empty() {
            self.device()
                .wgpu_queue()
                .write_buffer(self.buffer(), 0, bytemuck::cast_slice(data));
        }
        Ok(())
    }

    /// A tensor of zeros.
    pub fn zeros(device: &Device, shape: &[usize]) -> Result<Tensor> {
        let t = Tensor::empty(device, shape)?;
        let mut rec = Recorder::new(device);
        rec.clear(t.buffer());
        rec.submit()?;
        Ok(t)
    }

    /// Uniform random values in `[lo, hi)` from a seeded generator (same seed, same values).
    pub fn rand_uniform(
        device: &Device,
        shape: &[usize],
        lo: f32,
        hi: f32,
        seed: u64,
    ) -> Result<Tensor> {
        if !(lo.is_finite() && hi.is_finite() && lo < hi) {
            return Err(Error::InvalidArgument {
                op: "Tensor::rand_uniform",
                name: "range",
                expected: "finite lo < hi".into(),
                found: format!("[{lo}, {hi})"),
            });
        }
        let n = numel_of("Tensor::rand_uniform", shape)?;
        let mut rng = Rng::new(seed);
        let data: Vec<f32> = (0..n)
            .map(|_| rng.uniform(lo as f64, hi as f64) as f32)
            .collect();
        Tensor::from_slice(device, &data, shape)
    }

    /// Normal random values with the given mean and standard deviation, seeded.
    pub fn randn(
        device: &Device,
        shape: &[usize],
        mean: f32,
        std: f32,
        seed: u64,
    ) -> Result<Tensor> {
        if !(mean.is_finite() && std.is_finite() && std >= 0.0) {
            return Err(Error::InvalidArgument {
                op: "Tensor::randn",
                name: "std",
                expected: "finite mean and std >= 0".into(),
                found: format!("mean {mean}, std {std}"),
            });
        }
        let n = numel_of("Tensor::randn", shape)?;
        let mut rng = Rng::new(seed);
        let data: Vec<f32> = (0..n)
            .map(|_| (mean as f64 + std as f64 * rng.normal()) as f32)
            .collect();
        Tensor::from_slice(device, &data, shape)
    }

    /// The shape.
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    /// Number of elements.
    pub fn numel(&self) -> usize {
        self.shape.iter().product()
    }

    /// Size of the data in bytes (`numel * 4`).
    pub fn byte_len(&self) -> u64 {
        self.numel() as u64 * 4
    }

    /// The owning device.
    pub fn device(&self) -> &Device {
        &self.storage.device
    }

    /// Tags the tensor's memory for the per-kind breakdown of [`Device::memory_stats`]
    /// (shared by clones and views: they share the buffer).
    pub fn set_memory_kind(&self, kind: MemoryKind) {
        self.storage.buffer.set_kind(kind);
    }

    /// The underlying buffer (at least `byte_len()` bytes; may be larger, from the pool).
    pub fn buffer(&self) -> &wgpu::Buffer {
        self.storage.buffer.buffer()
    }

    /// True if both handles share one buffer (clones and views of one another).
    pub fn same_buffer(&self, other: &Tensor) -> bool {
        Arc::ptr_eq(&self.storage, &other.storage)
    }

    /// The same data under another shape of equal element count: a view that shares the
    /// buffer (writing through one is seen through the other), no copy.
    pub fn reshape(&self, shape: &[usize]) -> Result<Tensor> {
        let n = numel_of("Tensor::reshape", shape)?;
        if n != self.numel() {
            return Err(Error::ShapeMismatch {
                op: "Tensor::reshape",
                expected: format!("{} elements (from {:?})", self.numel(), self.shape()),
                found: format!("{n} elements for {shape:?}"),
            });
        }
        Ok(Tensor {
            storage: self.storage.clone(),
            shape: shape.into(),
        })
    }

    /// Reads the data back to the host (waits for pending work, at most the device's
    /// timeout).
    pub fn to_vec(&self) -> Result<Vec<f32>> {
        let bytes = self.byte_len();
        if bytes == 0 {
            return Ok(Vec::new());
        }
        let dev = self.device();
        let staging = dev.core().scoped("allocate readback buffer", || {
            dev.wgpu_device().create_buffer(&wgpu::BufferDescriptor {
                label: Some("suanli readback"),
                size: bytes,
                usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            })
        })?;
        let mut rec = Recorder::new(dev);
        rec.copy(self.buffer(), &staging, bytes);
        rec.submit()?;
        let raw = dev.core().map_read(&staging, "Tensor::to_vec")?;
        Ok(bytemuck::pod_collect_to_vec(&raw))
    }

    /// Identifies the buffer (shared by clones and reshaped views), so a kernel binds one
    /// buffer once however many views of it it reads.
    pub(crate) fn storage_id(&self) -> usize {
        Arc::as_ptr(&self.storage) as usize
    }

    pub(crate) fn check_device(&self, device: &Device, op: &'static str) -> Result<()> {
        if self.device().same_as(device) {
            Ok(())
        } else {
            Err(Error::DeviceMismatch {
                op,
                expected: format!("{device:?}"),
                found: format!("{:?}", self.device()),
            })
        }
    }
}

/// A u8 array on the device, packed four bytes per u32 word (a dataset's pixels).
#[derive(Debug)]
pub struct ByteBuffer {
    buffer: PooledBuffer,
    /// Number of bytes.
    pub len: usize,
}

impl ByteBuffer {
    /// Uploads bytes.
    pub fn new(dev: &Device, bytes: &[u8]) -> Result<ByteBuffer> {
        let padded_len = bytes.len().div_ceil(4).max(1) * 4;
        let buffer = dev.pool().alloc(dev.core(), padded_len as u64)?;
        buffer.set_kind(MemoryKind::Datasets);
        let mut padded = bytes.to_vec();
        padded.resize(padded_len, 0);
        dev.wgpu_queue().write_buffer(buffer.buffer(), 0, &padded);
        Ok(ByteBuffer {
            buffer,
            len: bytes.len(),
        })
    }

    /// The underlying buffer.
    pub fn buffer(&self) -> &wgpu::Buffer {
        self.buffer.buffer()
    }

    /// The storage binding: the bytes as whole u32 words.
    pub fn binding(&self) -> (&wgpu::Buffer, u64) {
        (self.buffer(), (self.len.div_ceil(4).max(1) * 4) as u64)
    }
}

/// A u32 array on the device (gather indices: an epoch's permutation of rows).
#[derive(Debug)]
pub struct IndexBuffer {
    buffer: PooledBuffer,
    /// Number of indices.
    pub len: usize,
}

impl IndexBuffer {
    /// Uploads indices.
    pub fn new(dev: &Device, indices: &[u32]) -> Result<IndexBuffer> {
        let buffer = dev
            .pool()
            .alloc(dev.core(), (indices.len().max(1) * 4) as u64)?;
        buffer.set_kind(MemoryKind::Datasets);
        if !indices.is_empty() {
            dev.wgpu_queue()
                .write_buffer(buffer.buffer(), 0, bytemuck::cast_slice(indices));
        }
        Ok(IndexBuffer {
            buffer,
            len: indices.len(),
        })
    }

    /// Overwrites the indices from the start (a new epoch's permutation); at most `len`.
    pub fn write(&self, dev: &Device, indices: &[u32]) -> Result<()> {
        if indices.len() > self.len {
            return Err(Error::ShapeMismatch {
                op: "IndexBuffer::write",
                expected: format!("at most {} indices", self.len),
                found: indices.len().to_string(),
            });
        }
        if !indices.is_empty() {
            dev.wgpu_queue()
                .write_buffer(self.buffer(), 0, bytemuck::cast_slice(indices));
        }
        Ok(())
    }

    /// The underlying buffer.
    pub fn buffer(&self) -> &wgpu::Buffer {
        self.buffer.buffer()
    }

    /// The storage binding of the indices.
    pub fn binding(&self) -> (&wgpu::Buffer, u64) {
        (self.buffer(), (self.len.max(1) * 4) as u64)
    }
}
