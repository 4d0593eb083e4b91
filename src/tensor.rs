//! Tensors: f32 data in a pooled device buffer, with a shape and an owning device.
//!
//! A `Tensor` is an `Arc` handle: cloning shares the buffer. Creation functions return
//! `Result` because they allocate (memory limits) and check shapes.

use std::fmt;
use std::sync::Arc;

use crate::memory::PooledBuffer;
use crate::random::Rng;
use crate::{Device, Error, Result};

struct TensorInner {
    buffer: PooledBuffer,
    shape: Vec<usize>,
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
    inner: Arc<TensorInner>,
}

impl fmt::Debug for Tensor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Tensor(shape={:?}, device={:?})",
            self.inner.shape, self.inner.device
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
        let buffer = device.inner.pool.alloc(device, (n as u64) * 4)?;
        Ok(Tensor {
            inner: Arc::new(TensorInner {
                buffer,
                shape: shape.to_vec(),
                device: device.clone(),
            }),
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
                .inner
                .queue
                .write_buffer(t.buffer(), 0, bytemuck::cast_slice(data));
        }
        Ok(t)
    }

    /// A tensor of zeros.
    pub fn zeros(device: &Device, shape: &[usize]) -> Result<Tensor> {
        let t = Tensor::empty(device, shape)?;
        let mut rec = device.recorder();
        rec.clear(t.buffer());
        rec.submit()?;
        Ok(t)
    }

    /// A tensor filled with `value` (on the GPU, no upload).
    pub fn full(device: &Device, shape: &[usize], value: f32) -> Result<Tensor> {
        let t = Tensor::empty(device, shape)?;
        let mut rec = device.recorder();
        crate::kernels::elementwise::fill(&mut rec, t.buffer(), t.numel(), value)?;
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
        &self.inner.shape
    }

    /// Number of elements.
    pub fn numel(&self) -> usize {
        self.inner.shape.iter().product()
    }

    /// Size of the data in bytes (`numel * 4`).
    pub fn byte_len(&self) -> u64 {
        self.numel() as u64 * 4
    }

    /// The owning device.
    pub fn device(&self) -> &Device {
        &self.inner.device
    }

    /// Tags the tensor's memory for the per-kind breakdown of [`Device::memory_stats`]
    /// (shared by clones: they share the buffer).
    pub fn set_memory_kind(&self, kind: crate::memory::MemoryKind) {
        self.inner.buffer.set_kind(kind);
    }

    /// The underlying buffer (at least `byte_len()` bytes; may be larger, from the pool).
    pub fn buffer(&self) -> &wgpu::Buffer {
        self.inner.buffer.buffer()
    }

    /// True if both handles share one buffer.
    pub fn same_buffer(&self, other: &Tensor) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    /// A new tensor with the same data and a different shape of equal element count.
    pub fn reshape(&self, shape: &[usize]) -> Result<Tensor> {
        let n = numel_of("Tensor::reshape", shape)?;
        if n != self.numel() {
            return Err(Error::ShapeMismatch {
                op: "Tensor::reshape",
                expected: format!("{} elements (from {:?})", self.numel(), self.shape()),
                found: format!("{n} elements for {shape:?}"),
            });
        }
        let t = Tensor::empty(self.device(), shape)?;
        let mut rec = self.device().recorder();
        if n > 0 {
            rec.copy(self.buffer(), t.buffer(), self.byte_len());
        }
        rec.submit()?;
        Ok(t)
    }

    /// Reads the data back to the host (waits for pending work).
    pub fn to_vec(&self) -> Result<Vec<f32>> {
        let bytes = self.byte_len();
        if bytes == 0 {
            return Ok(Vec::new());
        }
        let dev = self.device();
        let staging = dev.scoped("allocate readback buffer", || {
            dev.inner.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("suanli readback"),
                size: bytes,
                usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            })
        })?;
        let mut rec = dev.recorder();
        rec.copy(self.buffer(), &staging, bytes);
        let idx = rec.submit()?;
        let (tx, rx) = std::sync::mpsc::channel();
        staging.map_async(wgpu::MapMode::Read, .., move |r| {
            let _ = tx.send(r);
        });
        dev.wait(Some(idx), "Tensor::to_vec")?;
        // Another thread's poll may be the one running our callback: keep polling until it
        // has arrived, up to the device's timeout.
        let deadline = std::time::Instant::now() + dev.timeout();
        let mapped = loop {
            match rx.recv_timeout(std::time::Duration::from_millis(1)) {
                Ok(r) => break r,
                Err(_) if std::time::Instant::now() > deadline => {
                    return Err(Error::Timeout {
                        op: "Tensor::to_vec (buffer mapping)",
                        seconds: dev.timeout().as_secs_f64(),
                    })
                }
                Err(_) => {
                    let _ = dev.inner.device.poll(wgpu::PollType::Poll);
                }
            }
        };
        mapped.map_err(|e| Error::Gpu {
            op: "Tensor::to_vec",
            message: e.to_string(),
        })?;
        let view = staging.get_mapped_range(..).map_err(|e| Error::Gpu {
            op: "Tensor::to_vec",
            message: e.to_string(),
        })?;
        let out: Vec<f32> = bytemuck::pod_collect_to_vec(&view);
        drop(view);
        staging.unmap();
        Ok(out)
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
