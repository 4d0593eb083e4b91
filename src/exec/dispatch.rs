//! What recording and capturing share: the [`Record`] trait kernels launch through, and the
//! checks and binding of one dispatch.
//!
//! A kernel's launch function takes `&mut dyn Record`, so the same function records work for
//! immediate submission ([`crate::exec::Recorder`]) or captures it into a replayable
//! [`crate::exec::Program`] ([`crate::exec::Capture`]). The two are different types on
//! purpose: a capture has no `submit`, no copies and no clears, so captured work cannot be
//! dropped by submitting it by mistake.

use std::sync::Arc;

use crate::error::{Error, Result};
use crate::memory::PooledBuffer;
use crate::runtime::Device;
use crate::services::pipeline::{Access, KernelSpec, Pipeline};
use crate::services::profile::Work;

/// Where kernel launches go: a [`crate::exec::Recorder`] or a [`crate::exec::Capture`].
pub trait Record {
    /// The device the work is for.
    fn device(&self) -> &Device;

    /// The cached pipeline for a built-in kernel as this recorder binds it: with a
    /// dynamic-offset uniform in a capture with a parameter table, a plain one otherwise.
    /// Launch functions get their pipelines here, so none is compiled in a form it is not
    /// used in.
    fn pipeline(&self, spec: &KernelSpec, constants: &[(&str, f64)]) -> Result<Arc<Pipeline>>;

    /// Declares the work of the next dispatch (FLOPs, bytes) so the profiler can report
    /// achieved GFLOP/s and GB/s for it.
    fn declare_work(&mut self, flops: f64, bytes: f64);

    /// Records one dispatch. `buffers` are the storage bindings in declaration order, each
    /// bound to its first `bytes` bytes (so `arrayLength` sees the tensor, not the pooled
    /// buffer); `params`, if the kernel declares a uniform last, its bytes.
    fn dispatch(
        &mut self,
        pipe: &Arc<Pipeline>,
        buffers: &[(&wgpu::Buffer, u64)],
        params: Option<&[u8]>,
        groups: [u32; 3],
    ) -> Result<()>;

    /// True for a capture: its work runs only when the program is replayed.
    fn is_capture(&self) -> bool;

    /// In a capture with a parameter table: whether the next dispatches read their uniform
    /// from the table (see [`crate::exec::Capture::set_table_uniforms`]). Returns whether the
    /// request could be honoured (never for an immediate recorder, which has no table).
    fn set_table_uniforms(&mut self, _on: bool) -> bool {
        false
    }

    /// In a capture: ends the program so far and starts the next (see
    /// [`crate::exec::Capture::cut`]); `None` for an immediate recorder, whose work is
    /// submitted whole.
    fn cut(&mut self) -> Option<Program> {
        None
    }
}

/// A captured list of dispatches, built by a [`crate::exec::Capture`] and replayed by a
/// [`crate::exec::Recorder`].
#[derive(Default)]
pub struct Program {
    pub(crate) ops: Vec<Prepared>,
}

impl Program {
    /// Number of dispatches.
    pub fn len(&self) -> usize {
        self.ops.len()
    }

    /// True if nothing was captured.
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }

    /// Dispatches whose uniform is read from the parameter table: the number of offsets
    /// [`crate::exec::Recorder::replay_at`] takes.
    pub fn table_bound(&self) -> usize {
        self.ops.iter().filter(|o| o.dynamic).count()
    }
}

/// One dispatch with everything bound.
pub struct Prepared {
    pub(crate) pipeline: Arc<Pipeline>,
    pub(crate) bind_group: wgpu::BindGroup,
    pub(crate) groups: [u32; 3],
    /// Held so the pool does not hand the bound uniform buffer to anyone else.
    pub(crate) uniform: Option<PooledBuffer>,
    /// The uniform is bound to a parameter table at a dynamic offset.
    pub(crate) dynamic: bool,
    /// Work declared for the profiler.
    pub(crate) work: Option<Work>,
}

/// Checks a dispatch against its pipeline and the device, and binds it: `Ok(None)` for an
/// empty grid (nothing to do). With `table`, the uniform is bound there at a dynamic offset
/// chosen at replay; otherwise it gets its own small pooled buffer.
pub(crate) fn bind(
    device: &Device,
    pipe: &Arc<Pipeline>,
    buffers: &[(&wgpu::Buffer, u64)],
    params: Option<&[u8]>,
    groups: [u32; 3],
    table: Option<&wgpu::Buffer>,
    work: Option<Work>,
) -> Result<Option<Prepared>> {
    let storage = pipe
        .bindings
        .iter()
        .filter(|a| **a != Access::Uniform)
        .count();
    let uniforms = pipe.bindings.len() - storage;
    if buffers.len() != storage || (uniforms == 1) != params.is_some() || uniforms > 1 {
        return Err(Error::BindingMismatch {
            kernel: pipe.label.clone(),
            message: format!(
                "expected {storage} buffers and {uniforms} uniform(s), got {} buffers and {} uniform(s)",
                buffers.len(),
                params.is_some() as usize
            ),
        });
    }
    if groups.contains(&0) {
        return Ok(None);
    }
    let max = device.info().limits.max_workgroups_per_dimension;
    if groups.iter().any(|&g| g > max) {
        return Err(Error::InvalidArgument {
            op: "dispatch",
            name: "workgroups",
            expected: format!("at most {max} per dimension"),
            found: format!("{groups:?}"),
        });
    }
    if buffers.iter().any(|(_, n)| *n == 0) {
        return Err(Error::InvalidArgument {
            op: "dispatch",
            name: "buffers",
            expected: "non-empty storage bindings".into(),
            found: "a 0-byte binding".into(),
        });
    }
    let dynamic = table.is_some() && params.is_some();
    if dynamic != pipe.dynamic_uniform {
        return Err(Error::Internal {
            op: "dispatch",
            message: format!(
                "{} was built for a {} uniform but recorded {} a parameter table (use Record::pipeline)",
                pipe.label,
                if pipe.dynamic_uniform { "dynamic" } else { "static" },
                if dynamic { "with" } else { "without" }
            ),
        });
    }
    let uniform = match params {
        Some(bytes) if !dynamic => {
            let padded_len = bytes.len().div_ceil(16).max(1) * 16;
            let b = device.pool().alloc(device.core(), padded_len as u64)?;
            let mut padded = bytes.to_vec();
            padded.resize(padded_len, 0);
            device.wgpu_queue().write_buffer(b.buffer(), 0, &padded);
            Some((b, padded_len as u64))
        }
        _ => None,
    };
    fn binding(buffer: &wgpu::Buffer, size: u64) -> wgpu::BindingResource<'_> {
        wgpu::BindingResource::Buffer(wgpu::BufferBinding {
            buffer,
            offset: 0,
            size: wgpu::BufferSize::new(size),
        })
    }
    let mut entries: Vec<wgpu::BindGroupEntry> = buffers
        .iter()
        .enumerate()
        .map(|(i, (b, n))| wgpu::BindGroupEntry {
            binding: i as u32,
            resource: binding(b, *n),
        })
        .collect();
    if let Some((u, n)) = &uniform {
        entries.push(wgpu::BindGroupEntry {
            binding: buffers.len() as u32,
            resource: binding(u.buffer(), *n),
        });
    }
    if let (true, Some(table), Some(bytes)) = (dynamic, table, params) {
        entries.push(wgpu::BindGroupEntry {
            binding: buffers.len() as u32,
            resource: binding(table, bytes.len().div_ceil(16).max(1) as u64 * 16),
        });
    }
    let bind_group = device.core().scoped("bind group", || {
        device
            .wgpu_device()
            .create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some(&pipe.label),
                layout: &pipe.layout,
                entries: &entries,
            })
    })?;
    Ok(Some(Prepared {
        pipeline: pipe.clone(),
        bind_group,
        groups,
        uniform: uniform.map(|(u, _)| u),
        dynamic,
        work,
    }))
}
