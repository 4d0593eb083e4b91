//! The per-device caching buffer pool.
//!
//! Allocating GPU memory is slow and fragments it, so buffers are recycled: a request is
//! rounded up to a size bucket (quarter steps between powers of two, so at most 25% is
//! wasted, minimum 256 bytes), served from that bucket's free list when possible (a *hit*),
//! and returned to it when the owning pooled buffer is dropped. `in_use + cached` is what
//! the pool holds from the driver; with a memory limit, cached buffers are released first
//! and only then does an allocation fail with [`Error::OutOfMemory`], before the driver is
//! asked. All pool buffers are storage buffers usable as copy source and destination.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use crate::device::core::DeviceCore;
use crate::error::{Error, Result};

/// Smallest bucket, in bytes.
pub const MIN_BUCKET: u64 = 256;

/// Rounds a byte count up to its bucket size.
///
/// ```
/// use suanli::memory::bucket_size;
/// assert_eq!(bucket_size(1), 256);
/// assert_eq!(bucket_size(1024), 1024);
/// assert_eq!(bucket_size(1025), 1280);
/// assert_eq!(bucket_size(4_000_004), 4_194_304);
/// ```
pub fn bucket_size(bytes: u64) -> u64 {
    if bytes <= MIN_BUCKET {
        return MIN_BUCKET;
    }
    let p = 63 - (bytes - 1).leading_zeros(); // 2^p < bytes <= 2^(p+1)
    let base = 1u64 << p;
    let step = base / 4;
    bytes.div_ceil(step) * step
}

/// What a pooled buffer holds, for the per-kind breakdown in [`MemoryStats::by_kind`].
/// Buffers start as [`MemoryKind::Other`]; the training code tags its tensors
/// ([`crate::tensor::Tensor::set_memory_kind`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MemoryKind {
    /// Model weights and biases.
    Parameters,
    /// Parameter gradients.
    Gradients,
    /// Optimizer moments and velocities.
    OptimizerState,
    /// Activations, batch buffers and other per-step scratch of a training plan.
    Activations,
    /// Device-resident datasets and index permutations.
    Datasets,
    /// Everything else: user tensors, kernel parameter uniforms.
    Other,
}

impl MemoryKind {
    /// Every kind, in the order of [`MemoryStats::by_kind`].
    pub const ALL: [MemoryKind; 6] = [
        MemoryKind::Parameters,
        MemoryKind::Gradients,
        MemoryKind::OptimizerState,
        MemoryKind::Activations,
        MemoryKind::Datasets,
        MemoryKind::Other,
    ];

    /// Position in [`MemoryKind::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }

    /// A short lowercase name (`"optimizer state"`).
    pub fn name(self) -> &'static str {
        match self {
            MemoryKind::Parameters => "parameters",
            MemoryKind::Gradients => "gradients",
            MemoryKind::OptimizerState => "optimizer state",
            MemoryKind::Activations => "activations",
            MemoryKind::Datasets => "datasets",
            MemoryKind::Other => "other",
        }
    }
}

/// The driver's own view of device memory (wgpu's allocator report, Vulkan and DX12).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DriverMemory {
    /// Bytes in live allocations.
    pub allocated: u64,
    /// Bytes in memory blocks reserved from the device (allocated plus free space in them).
    pub reserved: u64,
    /// Memory blocks.
    pub blocks: u64,
    /// Live allocations (buffers, query sets, …).
    pub allocations: u64,
}

/// Pool statistics, in bytes and counts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MemoryStats {
    /// Bytes held by live buffers (bucket sizes).
    pub in_use: u64,
    /// Bytes held in the pool's free lists, ready for reuse.
    pub cached: u64,
    /// Highest `in_use` seen.
    pub peak_in_use: u64,
    /// Buffers created from the driver.
    pub allocations: u64,
    /// Requests served from the cache.
    pub hits: u64,
    /// Requests that needed a new buffer.
    pub misses: u64,
    /// The memory limit, if any.
    pub limit: Option<u64>,
    /// `in_use` split by [`MemoryKind`], indexed by [`MemoryKind::index`].
    pub by_kind: [u64; 6],
}

impl MemoryStats {
    /// Bytes in use holding `kind`.
    pub fn in_use_by(&self, kind: MemoryKind) -> u64 {
        self.by_kind[kind.index()]
    }

    /// `parameters 1.2 MB · optimizer state 2.4 MB · …`, kinds with bytes only.
    pub fn breakdown(&self) -> String {
        let parts: Vec<String> = MemoryKind::ALL
            .iter()
            .filter(|k| self.in_use_by(**k) > 0)
            .map(|k| format!("{} {:.2} MB", k.name(), self.in_use_by(*k) as f64 / 1e6))
            .collect();
        if parts.is_empty() {
            "nothing in use".into()
        } else {
            parts.join(" · ")
        }
    }
}

#[derive(Default)]
struct PoolState {
    free: HashMap<u64, Vec<wgpu::Buffer>>,
    stats: MemoryStats,
}

/// The pool itself; one per [`crate::runtime::Device`].
pub(crate) struct Pool {
    state: Arc<Mutex<PoolState>>,
    limit: Option<u64>,
    max_buffer: u64,
}

fn lock(m: &Mutex<PoolState>) -> MutexGuard<'_, PoolState> {
    // A panic while holding the lock cannot leave the counters inconsistent enough to matter.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Usage of every pooled buffer (kernel parameters are pooled too, hence `UNIFORM`).
pub(crate) const POOL_USAGE: wgpu::BufferUsages = wgpu::BufferUsages::STORAGE
    .union(wgpu::BufferUsages::UNIFORM)
    .union(wgpu::BufferUsages::COPY_SRC)
    .union(wgpu::BufferUsages::COPY_DST);

impl Pool {
    pub(crate) fn new(limit: Option<u64>, max_buffer: u64) -> Pool {
        let mut st = PoolState::default();
        st.stats.limit = limit;
        Pool {
            state: Arc::new(Mutex::new(st)),
            limit,
            max_buffer,
        }
    }

    pub(crate) fn stats(&self) -> MemoryStats {
        lock(&self.state).stats
    }

    pub(crate) fn empty_cache(&self) {
        let mut st = lock(&self.state);
        for (_, bufs) in st.free.drain() {
            for b in bufs {
                b.destroy();
            }
        }
        st.stats.cached = 0;
    }

    /// Takes a buffer of at least `bytes` bytes (contents undefined).
    pub(crate) fn alloc(&self, core: &DeviceCore, bytes: u64) -> Result<PooledBuffer> {
        let size = bucket_size(bytes.max(4));
        let mut st = lock(&self.state);
        if size > self.max_buffer {
            return Err(Error::OutOfMemory {
                requested: bytes,
                in_use: st.stats.in_use,
                limit: self.max_buffer,
            });
        }
        if let Some(buf) = st.free.get_mut(&size).and_then(|v| v.pop()) {
            st.stats.cached -= size;
            st.stats.in_use += size;
            st.stats.hits += 1;
            st.stats.peak_in_use = st.stats.peak_in_use.max(st.stats.in_use);
            st.stats.by_kind[MemoryKind::Other.index()] += size;
            return Ok(PooledBuffer {
                buffer: Some(buf),
                size,
                pool: self.state.clone(),
                kind: AtomicU8::new(MemoryKind::Other as u8),
            });
        }
        if let Some(limit) = self.limit {
            if st.stats.in_use + st.stats.cached + size > limit {
                // Release cached buffers before giving up.
                for (_, bufs) in st.free.drain() {
                    for b in bufs {
                        b.destroy();
                    }
                }
                st.stats.cached = 0;
            }
            if st.stats.in_use + size > limit {
                return Err(Error::OutOfMemory {
                    requested: bytes,
                    in_use: st.stats.in_use,
                    limit,
                });
            }
        }
        drop(st);
        let buffer = core.scoped("allocate buffer", || {
            core.device().create_buffer(&wgpu::BufferDescriptor {
                label: Some("suanli pool"),
                size,
                usage: POOL_USAGE,
                mapped_at_creation: false,
            })
        });
        let mut st = lock(&self.state);
        let buffer = match buffer {
            Ok(b) => b,
            Err(e) => {
                log::warn!("driver refused a {size}-byte buffer: {e}");
                return Err(Error::OutOfMemory {
                    requested: bytes,
                    in_use: st.stats.in_use,
                    limit: self.limit.unwrap_or(self.max_buffer),
                });
            }
        };
        st.stats.in_use += size;
        st.stats.misses += 1;
        st.stats.allocations += 1;
        st.stats.peak_in_use = st.stats.peak_in_use.max(st.stats.in_use);
        st.stats.by_kind[MemoryKind::Other.index()] += size;
        Ok(PooledBuffer {
            buffer: Some(buffer),
            size,
            pool: self.state.clone(),
            kind: AtomicU8::new(MemoryKind::Other as u8),
        })
    }
}

/// A buffer on loan from a device's pool; it goes back to the pool when dropped.
pub(crate) struct PooledBuffer {
    buffer: Option<wgpu::Buffer>,
    size: u64,
    pool: Arc<Mutex<PoolState>>,
    kind: AtomicU8,
}

impl PooledBuffer {
    /// Retags the buffer (moves its bytes between the per-kind counters).
    pub fn set_kind(&self, kind: MemoryKind) {
        let mut st = lock(&self.pool);
        let old = self.kind.swap(kind as u8, Ordering::Relaxed) as usize;
        st.stats.by_kind[old] -= self.size;
        st.stats.by_kind[kind.index()] += self.size;
    }

    /// The wgpu buffer.
    pub fn buffer(&self) -> &wgpu::Buffer {
        self.buffer
            .as_ref()
            .expect("internal error: pooled buffer used after release")
    }
}

impl Drop for PooledBuffer {
    fn drop(&mut self) {
        if let Some(b) = self.buffer.take() {
            let mut st = lock(&self.pool);
            st.stats.in_use -= self.size;
            st.stats.by_kind[self.kind.load(Ordering::Relaxed) as usize] -= self.size;
            st.stats.cached += self.size;
            st.free.entry(self.size).or_default().push(b);
        }
    }
}

impl std::fmt::Debug for PooledBuffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PooledBuffer({} bytes)", self.size)
    }
}
