//! WGSL validation and reflection with naga, kernel binding declarations, and the per-device
//! pipeline cache.
//!
//! A kernel is a WGSL entry point plus the Rust declaration of its bindings ([`KernelSpec`]).
//! The house convention: group 0 only; read-only storage inputs first, then read-write
//! outputs, then the `Params` uniform. Pipelines use explicit layouts built from that
//! declaration (checked against what naga finds the entry point using) and are compiled once
//! per (shader, entry point, override constants, uniform binding) per device.

use std::collections::hash_map::DefaultHasher;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex};

use crate::device::core::DeviceCore;
use crate::error::{Error, Result};

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
macro_rules! shader {
    ($name:literal $(after $($pre:literal),+)?) => {
        $crate::services::pipeline::Shader {
            name: $name,
            source: concat!(
                $($(include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/shaders/", $pre, ".wgsl")), "\n",)+)?
                include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/shaders/", $name, ".wgsl"))
            ),
        }
    };
}
pub(crate) use shader;

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
    /// Its uniform is bound at a dynamic offset (a capture with a parameter table).
    pub(crate) dynamic_uniform: bool,
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
    /// Pipelines compiled so far.
    pub(crate) fn len(&self) -> usize {
        self.map.lock().map(|m| m.len()).unwrap_or(0)
    }
}

/// Work-group counts covering `n` invocations of a 1-D kernel with `wg` threads per group,
/// spilling onto y beyond `max_per_dim` groups. The kernel recovers its linear index as
/// `gid.x + gid.y * nwg.x * wg` and must guard `index < n`.
///
/// ```
/// assert_eq!(suanli::exec::grid_1d(1000, 256, 65535), [4, 1, 1]);
/// assert_eq!(suanli::exec::grid_1d(70_000 * 64, 64, 65535), [65535, 2, 1]);
/// assert_eq!(suanli::exec::grid_1d(0, 64, 65535), [0, 1, 1]);
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

impl PipelineCache {
    /// The validated module of a WGSL source, parsed once per device.
    fn shader_module(
        &self,
        core: &DeviceCore,
        name: &str,
        source: &str,
        hash: u64,
    ) -> Result<Arc<ShaderModule>> {
        let cached = self.modules.lock().ok().and_then(|m| m.get(&hash).cloned());
        if let Some(m) = cached {
            return Ok(m);
        }
        let (naga, info) = validate_wgsl(name, source)?;
        let wgpu = core.scoped("create shader module", || {
            core.device()
                .create_shader_module(wgpu::ShaderModuleDescriptor {
                    label: Some(name),
                    source: wgpu::ShaderSource::Wgsl(source.into()),
                })
        })?;
        let m = Arc::new(ShaderModule { naga, info, wgpu });
        if let Ok(mut map) = self.modules.lock() {
            map.insert(hash, m.clone());
        }
        Ok(m)
    }

    /// The cached pipeline for any WGSL entry point with the given binding declaration,
    /// compiled on first use (WGSL validated by naga first, the declaration checked against
    /// what the entry point uses).
    #[allow(clippy::too_many_arguments)] // a pipeline's whole key, spelled out
    pub(crate) fn get(
        &self,
        core: &DeviceCore,
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
        if let Some(p) = self.map.lock().ok().and_then(|m| m.get(&key).cloned()) {
            return Ok(p);
        }
        let shader = self.shader_module(core, name, source, key.source_hash)?;
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
        let d = core.device();
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
        let pipeline = core.scoped("compile pipeline", || {
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
        if let Ok(mut m) = self.map.lock() {
            m.insert(key, p.clone());
        }
        Ok(p)
    }
}
