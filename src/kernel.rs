//! Kernels: WGSL validation with naga, binding declarations, the pipeline cache, dispatch.
//!
//! A kernel is a WGSL entry point plus the Rust declaration of its bindings ([`KernelSpec`]).
//! The house convention (DESIGN.md): group 0 only; read-only storage inputs first, then
//! read-write outputs, then the `Params` uniform. Pipelines use explicit layouts built from
//! that declaration and are compiled once per (shader, entry point, override constants) per
//! device. Work is recorded with a [`Recorder`] so many dispatches share one submission.

use std::collections::hash_map::DefaultHasher;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex};

use crate::memory::PooledBuffer;
use crate::profile::Work;
use crate::{Device, Error, Result};

/// How a binding is accessed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Access {
    /// `var<storage, read>`.
    ReadOnly,
    /// `var<storage, read_write>`.
    ReadWrite,
    /// `var<uniform>`.
    Uniform,
}

/// A WGSL source file embedded in the crate (or given by a user).
#[derive(Clone, Copy, Debug)]
pub struct Shader {
    /// The file stem, e.g. `elementwise`.
    pub name: &'static str,
    /// The WGSL text.
    pub source: &'static str,
}

/// Declares a shader embedded from `shaders/<name>.wgsl`, optionally after prelude files
/// (`shader!("matmul" after "activation")`): WGSL has no includes, so shared functions live in
/// a prelude file that is prepended at compile time.
#[macro_export]
#[doc(hidden)]
macro_rules! shader {
    ($name:literal $(after $($pre:literal),+)?) => {
        $crate::kernel::Shader {
            name: $name,
            source: concat!(
                $($(include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/shaders/", $pre, ".wgsl")), "\n",)+)?
                include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/shaders/", $name, ".wgsl"))
            ),
        }
    };
}

/// One entry point of a shader with its binding declaration (indices 0.. of group 0).
#[derive(Clone, Copy, Debug)]
pub struct KernelSpec {
    /// The shader file.
    pub shader: Shader,
    /// The entry point.
    pub entry: &'static str,
    /// Bindings in order.
    pub bindings: &'static [Access],
}

/// Every built-in shader as the crate assembles it, for validation (tests/shaders.rs).
pub fn all_shaders() -> Vec<Shader> {
    crate::kernels::SHADERS.to_vec()
}

/// Every built-in kernel declaration, for validation against its WGSL (tests/shaders.rs).
pub fn all_kernels() -> Vec<KernelSpec> {
    crate::kernels::KERNELS
        .iter()
        .flat_map(|k| k.iter().copied())
        .collect()
}

/// Parses and validates WGSL with naga, mapping failures to [`Error::Shader`].
pub fn validate_wgsl(name: &str, source: &str) -> Result<(naga::Module, naga::valid::ModuleInfo)> {
    let module = naga::front::wgsl::parse_str(source).map_err(|e| {
        let loc = e.location(source);
        Error::Shader {
            file: name.to_string(),
            line: loc.map_or(0, |l| l.line_number),
            column: loc.map_or(0, |l| l.line_position),
            message: e.emit_to_string(source).trim().to_string(),
        }
    })?;
    let info = naga::valid::Validator::new(
        naga::valid::ValidationFlags::all(),
        naga::valid::Capabilities::all(),
    )
    .validate(&module)
    .map_err(|e| {
        let loc = e.location(source);
        Error::Shader {
            file: name.to_string(),
            line: loc.map_or(0, |l| l.line_number),
            column: loc.map_or(0, |l| l.line_position),
            message: e.emit_to_string(source).trim().to_string(),
        }
    })?;
    Ok((module, info))
}

/// A binding as the WGSL declares it, found by reflection.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReflectedBinding {
    /// `@binding(N)` in group 0.
    pub binding: u32,
    /// The variable's name.
    pub name: String,
    /// How it is accessed.
    pub access: Access,
    /// Minimum size in bytes (one element for runtime-sized arrays).
    pub min_size: u64,
}

/// What reflection found for one entry point.
#[derive(Clone, Debug)]
pub struct Reflection {
    /// Bindings used by the entry point, ordered by binding index.
    pub bindings: Vec<ReflectedBinding>,
    /// `@workgroup_size`.
    pub workgroup_size: [u32; 3],
}

/// Reflects the group-0 buffer bindings an entry point uses.
pub fn reflect(
    name: &str,
    module: &naga::Module,
    info: &naga::valid::ModuleInfo,
    entry: &str,
) -> Result<Reflection> {
    let (ep_index, ep) = module
        .entry_points
        .iter()
        .enumerate()
        .find(|(_, e)| e.name == entry && e.stage == naga::ShaderStage::Compute)
        .ok_or_else(|| Error::Shader {
            file: name.to_string(),
            line: 0,
            column: 0,
            message: format!(
                "no compute entry point named {entry:?}; found: {}",
                module
                    .entry_points
                    .iter()
                    .filter(|e| e.stage == naga::ShaderStage::Compute)
                    .map(|e| e.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        })?;
    let mut layouter = naga::proc::Layouter::default();
    layouter
        .update(module.to_ctx())
        .map_err(|e| Error::Shader {
            file: name.to_string(),
            line: 0,
            column: 0,
            message: format!("layout: {e}"),
        })?;
    let fun_info = info.get_entry_point(ep_index);
    let mut bindings = Vec::new();
    for (handle, var) in module.global_variables.iter() {
        if fun_info[handle].is_empty() {
            continue; // not used by this entry point
        }
        let access = match var.space {
            naga::AddressSpace::Storage { access } => {
                if access.contains(naga::StorageAccess::STORE) {
                    Access::ReadWrite
                } else {
                    Access::ReadOnly
                }
            }
            naga::AddressSpace::Uniform => Access::Uniform,
            naga::AddressSpace::Handle => {
                return Err(Error::Shader {
                    file: name.to_string(),
                    line: 0,
                    column: 0,
                    message: format!(
                        "binding {:?}: textures and samplers are not supported in kernels; use storage buffers",
                        var.name.as_deref().unwrap_or("?")
                    ),
                })
            }
            _ => continue,
        };
        let rb = var.binding.as_ref().ok_or_else(|| Error::Shader {
            file: name.to_string(),
            line: 0,
            column: 0,
            message: "resource variable without @group/@binding".into(),
        })?;
        if rb.group != 0 {
            return Err(Error::Shader {
                file: name.to_string(),
                line: 0,
                column: 0,
                message: format!(
                    "binding {:?} uses @group({}); kernels use @group(0) only",
                    var.name.as_deref().unwrap_or("?"),
                    rb.group
                ),
            });
        }
        bindings.push(ReflectedBinding {
            binding: rb.binding,
            name: var.name.clone().unwrap_or_default(),
            access,
            min_size: layouter[var.ty].size as u64,
        });
    }
    bindings.sort_by_key(|b| b.binding);
    Ok(Reflection {
        bindings,
        workgroup_size: ep.workgroup_size,
    })
}

/// A compiled pipeline with the layout it was built for.
pub struct Pipeline {
    pub(crate) pipeline: wgpu::ComputePipeline,
    pub(crate) layout: wgpu::BindGroupLayout,
    pub(crate) bindings: Vec<Access>,
    /// The entry point's `@workgroup_size`.
    pub workgroup_size: [u32; 3],
    pub(crate) label: String,
    /// Its uniform is bound at a dynamic offset (see [`Device::capture_with_table`]).
    dynamic_uniform: bool,
}

#[derive(Clone, PartialEq, Eq, Hash)]
struct PipelineKey {
    shader: String,
    source_hash: u64,
    entry: String,
    constants: Vec<(String, u64)>,
    dynamic_uniform: bool,
}

/// Per-device cache of compiled pipelines, and of shader modules by source: a kernel family's
/// WGSL is parsed and validated (by naga here and by wgpu) once per device, not once per entry
/// point and specialisation (the subgroup matmul's 2,000 lines took ~50 ms a time).
#[derive(Default)]
pub(crate) struct PipelineCache {
    map: Mutex<HashMap<PipelineKey, Arc<Pipeline>>>,
    modules: Mutex<HashMap<u64, Arc<ShaderModule>>>,
}

/// A validated shader: naga's module (for reflection) and the device's module.
struct ShaderModule {
    naga: naga::Module,
    info: naga::valid::ModuleInfo,
    wgpu: wgpu::ShaderModule,
}

impl PipelineCache {
    pub(crate) fn len(&self) -> usize {
        self.map.lock().map(|m| m.len()).unwrap_or(0)
    }
}

/// Work-group counts covering `n` invocations of a 1-D kernel with `wg` threads per group,
/// spilling onto y beyond `max_per_dim` groups. The kernel recovers its linear index as
/// `gid.x + gid.y * nwg.x * wg` and must guard `index < n`.
///
/// ```
/// assert_eq!(suanli::kernel::grid_1d(1000, 256, 65535), [4, 1, 1]);
/// assert_eq!(suanli::kernel::grid_1d(70_000 * 64, 64, 65535), [65535, 2, 1]);
/// assert_eq!(suanli::kernel::grid_1d(0, 64, 65535), [0, 1, 1]);
/// ```
pub fn grid_1d(n: u64, wg: u32, max_per_dim: u32) -> [u32; 3] {
    let groups = n.div_ceil(wg.max(1) as u64);
    if groups <= max_per_dim as u64 {
        [groups as u32, 1, 1]
    } else {
        let y = groups.div_ceil(max_per_dim as u64);
        [max_per_dim, y as u32, 1]
    }
}

fn hash_str(s: &str) -> u64 {
    let mut h = DefaultHasher::new();
    s.hash(&mut h);
    h.finish()
}

impl Device {
    /// The validated module of a WGSL source, parsed once per device.
    fn shader_module(&self, name: &str, source: &str, hash: u64) -> Result<Arc<ShaderModule>> {
        let cached = self
            .inner
            .pipelines
            .modules
            .lock()
            .ok()
            .and_then(|m| m.get(&hash).cloned());
        if let Some(m) = cached {
            return Ok(m);
        }
        let (naga, info) = validate_wgsl(name, source)?;
        let wgpu = self.scoped("create shader module", || {
            self.inner
                .device
                .create_shader_module(wgpu::ShaderModuleDescriptor {
                    label: Some(name),
                    source: wgpu::ShaderSource::Wgsl(source.into()),
                })
        })?;
        let m = Arc::new(ShaderModule { naga, info, wgpu });
        if let Ok(mut map) = self.inner.pipelines.modules.lock() {
            map.insert(hash, m.clone());
        }
        Ok(m)
    }

    /// The cached pipeline for any WGSL entry point with the given binding declaration.
    pub(crate) fn pipeline_for(
        &self,
        name: &str,
        source: &str,
        entry: &str,
        bindings: &[Access],
        constants: &[(&str, f64)],
        dynamic_uniform: bool,
    ) -> Result<Arc<Pipeline>> {
        let key = PipelineKey {
            dynamic_uniform,
            shader: name.to_string(),
            source_hash: hash_str(source),
            entry: entry.to_string(),
            constants: constants
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_bits()))
                .collect(),
        };
        if let Some(p) = self
            .inner
            .pipelines
            .map
            .lock()
            .ok()
            .and_then(|m| m.get(&key).cloned())
        {
            return Ok(p);
        }
        let shader = self.shader_module(name, source, key.source_hash)?;
        let refl = reflect(name, &shader.naga, &shader.info, entry)?;
        let declared: Vec<(u32, Access)> = bindings
            .iter()
            .enumerate()
            .map(|(i, a)| (i as u32, *a))
            .collect();
        let found: Vec<(u32, Access)> = refl
            .bindings
            .iter()
            .map(|b| (b.binding, b.access))
            .collect();
        if declared != found {
            return Err(Error::BindingMismatch {
                kernel: format!("{name}::{entry}"),
                message: format!("declared bindings {declared:?}, WGSL uses {found:?}"),
            });
        }
        let d = &self.inner.device;
        let entries: Vec<wgpu::BindGroupLayoutEntry> = bindings
            .iter()
            .enumerate()
            .map(|(i, a)| wgpu::BindGroupLayoutEntry {
                binding: i as u32,
                visibility: wgpu::ShaderStages::COMPUTE,
                ty: wgpu::BindingType::Buffer {
                    ty: match a {
                        Access::ReadOnly => wgpu::BufferBindingType::Storage { read_only: true },
                        Access::ReadWrite => wgpu::BufferBindingType::Storage { read_only: false },
                        Access::Uniform => wgpu::BufferBindingType::Uniform,
                    },
                    has_dynamic_offset: dynamic_uniform && *a == Access::Uniform,
                    min_binding_size: None,
                },
                count: None,
            })
            .collect();
        let label = format!("{name}::{entry}");
        let t_compile = std::time::Instant::now();
        let pipeline = self.scoped("compile pipeline", || {
            let module = &shader.wgpu;
            let layout = d.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
                label: Some(&label),
                entries: &entries,
            });
            let pl = d.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
                label: Some(&label),
                bind_group_layouts: &[Some(&layout)],
                immediate_size: 0,
            });
            let pipeline = d.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                label: Some(&label),
                layout: Some(&pl),
                module,
                entry_point: Some(entry),
                compilation_options: wgpu::PipelineCompilationOptions {
                    constants,
                    zero_initialize_workgroup_memory: false,
                },
                cache: None,
            });
            (pipeline, layout)
        })?;
        log::debug!(
            "compiled pipeline {label} {constants:?} in {:.0} ms",
            t_compile.elapsed().as_secs_f64() * 1e3
        );
        let p = Arc::new(Pipeline {
            pipeline: pipeline.0,
            layout: pipeline.1,
            bindings: bindings.to_vec(),
            workgroup_size: refl.workgroup_size,
            label,
            dynamic_uniform,
        });
        if let Ok(mut m) = self.inner.pipelines.map.lock() {
            m.insert(key, p.clone());
        }
        Ok(p)
    }

    fn profiler_mode(&self) -> u8 {
        self.inner
            .profiler
            .mode
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Starts recording GPU work; [`Recorder::submit`] sends it in one submission.
    pub fn recorder(&self) -> Recorder<'_> {
        Recorder {
            device: self,
            encoder: self
                .inner
                .device
                .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                    label: Some("suanli"),
                }),
            keep: Vec::new(),
            capture: None,
            table: None,
            timing: self.profiling().then(|| Timing {
                per_pass: self.profiler_mode() == crate::profile::PASSES,
                set: (self.profiler_mode() != crate::profile::WALL).then(|| {
                    self.inner
                        .device
                        .create_query_set(&wgpu::QuerySetDescriptor {
                            label: Some("suanli profiler"),
                            ty: wgpu::QueryType::Timestamp,
                            count: crate::profile::MAX_QUERIES,
                        })
                }),
                labels: Vec::new(),
                untimed: 0,
            }),
            next_work: None,
            table_uniforms: false,
        }
    }

    /// Starts capturing dispatches into a [`Program`] instead of recording them: the kernel
    /// launch functions build their pipelines, bind groups and uniforms once, and
    /// [`Recorder::replay`] re-records the whole list cheaply as often as needed (a training
    /// step). Nothing is submitted while capturing.
    pub fn capture(&self) -> Recorder<'_> {
        let mut r = self.recorder();
        r.capture = Some(Vec::new());
        r
    }

    /// Like [`Device::capture`], but every dispatch's uniform is bound to `table` at a dynamic
    /// offset chosen at replay ([`Recorder::replay_at`]): parameters that change every step
    /// (a batch offset, an optimizer's bias corrections) are written into the table once per
    /// chunk of steps, with no per-step copy. Offsets must be multiples of
    /// [`Device::uniform_alignment`].
    pub fn capture_with_table(&self, table: &wgpu::Buffer) -> Recorder<'_> {
        let mut r = self.capture();
        r.table = Some(table.clone());
        r.table_uniforms = true;
        r
    }

    /// The alignment of dynamic uniform offsets on this device (at least 256).
    pub fn uniform_alignment(&self) -> u64 {
        (self
            .inner
            .device
            .limits()
            .min_uniform_buffer_offset_alignment as u64)
            .max(256)
    }
}

/// One dispatch with everything bound, ready to be recorded again and again.
pub struct Prepared {
    pipeline: Arc<Pipeline>,
    bind_group: wgpu::BindGroup,
    groups: [u32; 3],
    /// Held so the pool does not hand the bound uniform buffer to anyone else.
    _uniform: Option<PooledBuffer>,
    /// The uniform is bound to a parameter table at a dynamic offset.
    dynamic: bool,
    /// Work declared for the profiler.
    work: Option<Work>,
}

/// A captured list of dispatches (see [`Device::capture`]).
#[derive(Default)]
pub struct Program {
    ops: Vec<Prepared>,
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
}

/// Writes the profiler's timestamp `which` (0 before, 1 after) of dispatch `q`.
fn stamp(pass: &mut wgpu::ComputePass<'_>, timing: &Option<Timing>, q: Option<u32>, which: u32) {
    if let (Some(Timing { set: Some(set), .. }), Some(i)) = (timing, q) {
        pass.write_timestamp(set, 2 * i + which);
    }
}

/// Records dispatches and copies into one command buffer.
pub struct Recorder<'d> {
    device: &'d Device,
    encoder: wgpu::CommandEncoder,
    keep: Vec<PooledBuffer>,
    capture: Option<Vec<Prepared>>,
    /// While capturing with a parameter table: uniforms are bound to it at dynamic offsets.
    table: Option<wgpu::Buffer>,
    /// While capturing with a table: whether the next dispatches bind their uniform there
    /// (true) or get a fixed one (false); see [`Recorder::set_table_uniforms`].
    table_uniforms: bool,
    /// Timestamps around each dispatch while the profiler is on.
    timing: Option<Timing>,
    /// Work the next dispatch declares (see [`Recorder::declare_work`]).
    next_work: Option<Work>,
}

/// One dispatch to encode.
struct Op<'a> {
    pipe: &'a Pipeline,
    bind_group: &'a wgpu::BindGroup,
    offsets: &'a [u32],
    groups: [u32; 3],
    work: Option<Work>,
}

/// The profiler's record of one recorder's dispatches.
struct Timing {
    /// Timestamp queries; `None` when profiling with the wall clock.
    set: Option<wgpu::QuerySet>,
    /// Timestamps at pass boundaries, one pass per dispatch.
    per_pass: bool,
    labels: Vec<(String, Option<Work>)>,
    untimed: u64,
}

impl Timing {
    /// The next query pair for a dispatch of `label`, or None past the budget.
    fn next(&mut self, label: &str, work: Option<Work>) -> Option<u32> {
        if (self.labels.len() as u32 + 1) * 2 > crate::profile::MAX_QUERIES {
            self.untimed += 1;
            return None;
        }
        self.labels.push((label.to_string(), work));
        Some(self.labels.len() as u32 - 1)
    }
}

impl<'d> Recorder<'d> {
    /// The device this records for.
    pub fn device(&self) -> &'d Device {
        self.device
    }

    /// Declares the work of the next dispatch (FLOPs, bytes) so the profiler can report
    /// achieved GFLOP/s and GB/s for it.
    pub fn declare_work(&mut self, flops: f64, bytes: f64) {
        self.next_work = Some(Work { flops, bytes });
    }

    /// Records one dispatch. `buffers` are the storage bindings in declaration order, each
    /// bound to its first `bytes` bytes (so `arrayLength` sees the tensor, not the pooled
    /// buffer); `params`, if the kernel declares a uniform last, its bytes.
    pub(crate) fn dispatch(
        &mut self,
        pipe: &Arc<Pipeline>,
        buffers: &[(&wgpu::Buffer, u64)],
        params: Option<&[u8]>,
        groups: [u32; 3],
    ) -> Result<()> {
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
        let work = self.next_work.take();
        if groups.contains(&0) {
            return Ok(()); // nothing to do
        }
        let max = self.device.info().limits.max_workgroups_per_dimension;
        if groups.iter().any(|&g| g > max) {
            return Err(Error::InvalidArgument {
                op: "dispatch",
                name: "workgroups",
                expected: format!("at most {max} per dimension"),
                found: format!("{groups:?}"),
            });
        }
        if let Some((_, 0)) = buffers.iter().find(|(_, n)| *n == 0) {
            return Err(Error::InvalidArgument {
                op: "dispatch",
                name: "buffers",
                expected: "non-empty storage bindings".into(),
                found: "a 0-byte binding".into(),
            });
        }
        // With a parameter table the uniform is bound there at a dynamic offset (set at
        // replay); otherwise it gets its own small pooled buffer.
        let dynamic = self.table.is_some() && self.table_uniforms && params.is_some();
        if dynamic != pipe.dynamic_uniform {
            return Err(Error::Gpu {
                op: "dispatch",
                message: format!(
                    "internal error: {} was built for a {} uniform but recorded {} a parameter table (use Recorder::pipeline)",
                    pipe.label,
                    if pipe.dynamic_uniform { "dynamic" } else { "static" },
                    if dynamic { "with" } else { "without" }
                ),
            });
        }
        let ubuf = match params {
            Some(bytes) if !dynamic => {
                let padded_len = bytes.len().div_ceil(16).max(1) * 16;
                let b = self
                    .device
                    .inner
                    .pool
                    .alloc(self.device, padded_len as u64)?;
                let mut padded = bytes.to_vec();
                padded.resize(padded_len, 0);
                self.device.inner.queue.write_buffer(b.buffer(), 0, &padded);
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
        if let Some((u, n)) = &ubuf {
            entries.push(wgpu::BindGroupEntry {
                binding: buffers.len() as u32,
                resource: binding(u.buffer(), *n),
            });
        }
        if let (true, Some(table), Some(bytes)) = (dynamic, &self.table, params) {
            entries.push(wgpu::BindGroupEntry {
                binding: buffers.len() as u32,
                resource: binding(table, bytes.len().div_ceil(16).max(1) as u64 * 16),
            });
        }
        let bg = self.device.scoped("bind group", || {
            self.device
                .inner
                .device
                .create_bind_group(&wgpu::BindGroupDescriptor {
                    label: Some(&pipe.label),
                    layout: &pipe.layout,
                    entries: &entries,
                })
        })?;
        if let Some(list) = &mut self.capture {
            list.push(Prepared {
                pipeline: pipe.clone(),
                bind_group: bg,
                groups,
                _uniform: ubuf.map(|(u, _)| u),
                dynamic,
                work,
            });
            return Ok(());
        }
        {
            let op = Op {
                pipe,
                bind_group: &bg,
                offsets: &[],
                groups,
                work,
            };
            self.encode(&pipe.label, &mut std::iter::once(op));
        }
        if let Some((u, _)) = ubuf {
            self.keep.push(u);
        }
        Ok(())
    }

    /// The cached pipeline for a built-in kernel as this recorder binds it: with a dynamic-offset
    /// uniform while capturing with a parameter table, a plain one otherwise. Launch functions
    /// get their pipelines here, so none is compiled in a form it is not used in.
    pub(crate) fn pipeline(
        &self,
        spec: &KernelSpec,
        constants: &[(&str, f64)],
    ) -> Result<Arc<Pipeline>> {
        let dynamic =
            self.table.is_some() && self.table_uniforms && spec.bindings.contains(&Access::Uniform);
        let s = &spec.shader;
        self.device.pipeline_for(
            s.name,
            s.source,
            spec.entry,
            spec.bindings,
            constants,
            dynamic,
        )
    }

    /// While capturing with a table: `false` gives the following dispatches fixed uniforms,
    /// `true` (the default) binds them to the table. A program may mix both: only the steps
    /// that change per step (a dropout seed) then take table slots in
    /// [`Recorder::replay_at`].
    pub fn set_table_uniforms(&mut self, on: bool) {
        self.table_uniforms = on;
    }

    /// Ends a capture started with [`Device::capture`].
    pub fn finish_capture(self) -> Program {
        Program {
            ops: self.capture.unwrap_or_default(),
        }
    }

    /// Records every dispatch of a program captured with a table
    /// ([`Device::capture_with_table`]): the `i`-th table-bound dispatch reads its uniform at
    /// `offsets[i]`; dispatches captured with fixed uniforms need none.
    pub fn replay_at(&mut self, program: &Program, offsets: &[u32]) -> Result<()> {
        let dynamic = program.ops.iter().filter(|o| o.dynamic).count();
        if offsets.len() != dynamic {
            return Err(Error::InvalidArgument {
                op: "replay_at",
                name: "offsets",
                expected: format!("{dynamic} offsets, one per table-bound dispatch of the program"),
                found: offsets.len().to_string(),
            });
        }
        let mut next = offsets.iter();
        let mut ops = program.ops.iter().map(|p| Op {
            pipe: &p.pipeline,
            bind_group: &p.bind_group,
            offsets: if p.dynamic {
                next.next().map_or(&[][..], std::slice::from_ref)
            } else {
                &[]
            },
            groups: p.groups,
            work: p.work,
        });
        self.encode("suanli program", &mut ops);
        Ok(())
    }

    /// Records every dispatch of `program` in one compute pass, in order.
    pub fn replay(&mut self, program: &Program) {
        if program.ops.is_empty() {
            return;
        }
        let mut ops = program.ops.iter().map(|p| Op {
            pipe: &p.pipeline,
            bind_group: &p.bind_group,
            // Table-bound uniforms read slot 0 when replayed without offsets.
            offsets: if p.dynamic { &[0] } else { &[] },
            groups: p.groups,
            work: p.work,
        });
        self.encode("suanli program", &mut ops);
    }

    /// Encodes dispatches in one compute pass, with the profiler's timestamps around each;
    /// when profiling per pass (adapters with timestamps only at pass boundaries), in one
    /// pass each.
    fn encode(&mut self, label: &str, ops: &mut dyn Iterator<Item = Op<'_>>) {
        if matches!(&self.timing, Some(t) if t.per_pass) {
            for op in ops {
                let q = self
                    .timing
                    .as_mut()
                    .and_then(|t| t.next(&op.pipe.label, op.work));
                let writes = match (&self.timing, q) {
                    (Some(Timing { set: Some(set), .. }), Some(i)) => {
                        Some(wgpu::ComputePassTimestampWrites {
                            query_set: set,
                            beginning_of_pass_write_index: Some(2 * i),
                            end_of_pass_write_index: Some(2 * i + 1),
                        })
                    }
                    _ => None,
                };
                let mut pass = self
                    .encoder
                    .begin_compute_pass(&wgpu::ComputePassDescriptor {
                        label: Some(&op.pipe.label),
                        timestamp_writes: writes,
                    });
                pass.set_pipeline(&op.pipe.pipeline);
                pass.set_bind_group(0, op.bind_group, op.offsets);
                pass.dispatch_workgroups(op.groups[0], op.groups[1], op.groups[2]);
            }
            return;
        }
        let mut pass = self
            .encoder
            .begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: Some(label),
                timestamp_writes: None,
            });
        for op in ops {
            let q = self
                .timing
                .as_mut()
                .and_then(|t| t.next(&op.pipe.label, op.work));
            pass.set_pipeline(&op.pipe.pipeline);
            pass.set_bind_group(0, op.bind_group, op.offsets);
            stamp(&mut pass, &self.timing, q, 0);
            pass.dispatch_workgroups(op.groups[0], op.groups[1], op.groups[2]);
            stamp(&mut pass, &self.timing, q, 1);
        }
    }

    /// Records a buffer-to-buffer copy.
    pub(crate) fn copy(&mut self, src: &wgpu::Buffer, dst: &wgpu::Buffer, bytes: u64) {
        self.copy_at(src, dst, 0, bytes);
    }

    /// Records copying `bytes` from the start of `src` to `dst` at `dst_offset`.
    pub(crate) fn copy_at(
        &mut self,
        src: &wgpu::Buffer,
        dst: &wgpu::Buffer,
        dst_offset: u64,
        bytes: u64,
    ) {
        self.encoder
            .copy_buffer_to_buffer(src, 0, dst, dst_offset, bytes);
    }

    /// Records zero-filling a buffer.
    pub(crate) fn clear(&mut self, buf: &wgpu::Buffer) {
        self.encoder.clear_buffer(buf, 0, None);
    }

    /// Submits everything recorded and returns without waiting (with the profiler on, waits
    /// and records the dispatches' GPU times).
    pub fn submit(mut self) -> Result<wgpu::SubmissionIndex> {
        let device = self.device;
        let timed = match self.timing.take() {
            Some(t) if !t.labels.is_empty() || t.untimed > 0 => Some(t),
            _ => None,
        };
        let readback = match &timed {
            Some(t @ Timing { set: Some(set), .. }) if !t.labels.is_empty() => {
                let bytes = t.labels.len() as u64 * 16;
                let resolve = device.inner.device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some("suanli profiler resolve"),
                    size: bytes,
                    usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
                    mapped_at_creation: false,
                });
                let read = device.inner.device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some("suanli profiler readback"),
                    size: bytes,
                    usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                    mapped_at_creation: false,
                });
                self.encoder
                    .resolve_query_set(set, 0..t.labels.len() as u32 * 2, &resolve, 0);
                self.encoder
                    .copy_buffer_to_buffer(&resolve, 0, &read, 0, bytes);
                Some(read)
            }
            _ => None,
        };
        device.check_alive("submit")?;
        let cb = self.encoder.finish();
        let t_submit = std::time::Instant::now();
        device.inner.profiler.submitting();
        let idx = device.inner.queue.submit([cb]);
        device.inner.profiler.submitted(&device.inner.queue);
        // Completion callbacks run on polls: keep the busy count current.
        let _ = device.inner.device.poll(wgpu::PollType::Poll);
        drop(self.keep);
        device.take_uncaptured("submit")?;
        if let Some(t) = timed.as_ref().filter(|t| t.set.is_none()) {
            // Wall clock: one entry for the whole submission.
            device.wait(Some(idx.clone()), "profiler")?;
            let ns = t_submit.elapsed().as_nanos() as f64;
            let mut names: Vec<&str> = Vec::new();
            let mut work: Option<Work> = None;
            for (label, w) in &t.labels {
                if !names.contains(&label.as_str()) {
                    names.push(label);
                }
                if let Some(w) = w {
                    let sum = work.get_or_insert_with(Work::default);
                    sum.flops += w.flops;
                    sum.bytes += w.bytes;
                }
            }
            let name = if names.len() == 1 {
                names[0].to_string()
            } else {
                format!(
                    "submission: {} dispatches of {}",
                    t.labels.len(),
                    names.join(", ")
                )
            };
            let start = device.inner.profiler.wall_ns(t_submit);
            device.inner.profiler.add(&name, start, ns, work);
            device.inner.profiler.add_untimed(t.untimed);
            return Ok(idx);
        }
        if let (Some(t), Some(read)) = (timed, readback) {
            let (tx, rx) = std::sync::mpsc::channel();
            read.map_async(wgpu::MapMode::Read, .., move |r| {
                let _ = tx.send(r);
            });
            device.wait(Some(idx.clone()), "profiler")?;
            loop {
                match rx.recv_timeout(std::time::Duration::from_millis(1)) {
                    Ok(r) => {
                        r.map_err(|e| Error::Gpu {
                            op: "profiler",
                            message: e.to_string(),
                        })?;
                        break;
                    }
                    Err(_) => {
                        let _ = device.inner.device.poll(wgpu::PollType::Poll);
                    }
                }
            }
            let view = read.get_mapped_range(..).map_err(|e| Error::Gpu {
                op: "profiler",
                message: e.to_string(),
            })?;
            let ticks: Vec<u64> = bytemuck::pod_collect_to_vec(&view);
            drop(view);
            let period = device.inner.queue.get_timestamp_period() as f64;
            for (i, (label, work)) in t.labels.iter().enumerate() {
                let start = ticks[2 * i] as f64 * period;
                let ns = ticks[2 * i + 1].saturating_sub(ticks[2 * i]) as f64 * period;
                device.inner.profiler.add(label, start, ns, *work);
            }
            device.inner.profiler.add_untimed(t.untimed);
        }
        Ok(idx)
    }
}
