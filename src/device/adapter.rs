//! Adapters: what an adapter is (vendor, kind, limits, features), the documented order and
//! numbering of the adapter list, and the selection of one by a [`DeviceSpec`]. All of it is
//! pure (no wgpu calls), so it is tested with made-up adapter lists.
//!
//! # Numbering
//! [`crate::devices`] returns adapters in a stable, documented order:
//! 1. hardware GPUs: discrete, then integrated, then virtual, then unknown; within a kind by
//!    backend (Vulkan, Metal, DX12, GL), then PCI bus id and name. Each physical GPU gets one
//!    `gpu:N` index, on its best backend; the same GPU seen through another backend is listed
//!    too (reachable as `vulkan:N`, `gl:N`, …) but has no `gpu:` index of its own.
//! 2. software adapters (lavapipe/llvmpipe, WARP, SwiftShader), numbered `cpu:N` (aliases on
//!    other backends likewise get no number of their own).
//!
//! `SUANLI_VISIBLE_DEVICES` hides GPUs and renumbers the rest in the order given.

use std::fmt;

use crate::config::{BackendKind, DeviceSpec};
use crate::device::coop::{CoopMatrix, CoopScalar};
use crate::error::{Error, Result};

/// Who made an adapter, from its PCI vendor id and device type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Vendor {
    /// NVIDIA (0x10DE).
    Nvidia,
    /// AMD (0x1002, 0x1022).
    Amd,
    /// Intel (0x8086).
    Intel,
    /// Apple (0x106B), or any Metal adapter without a PCI id.
    Apple,
    /// Qualcomm (0x5143).
    Qualcomm,
    /// Arm (0x13B5).
    Arm,
    /// A software rasterizer running on the CPU.
    Software,
    /// Anything else, with its vendor id.
    Other(u32),
}

impl Vendor {
    /// Classifies a vendor id; software adapters are recognised by device type and name.
    pub fn classify(vendor_id: u32, kind: DeviceKind) -> Vendor {
        if kind == DeviceKind::Software {
            return Vendor::Software;
        }
        match vendor_id {
            0x10DE => Vendor::Nvidia,
            0x1002 | 0x1022 => Vendor::Amd,
            0x8086 => Vendor::Intel,
            0x106B => Vendor::Apple,
            0x5143 => Vendor::Qualcomm,
            0x13B5 => Vendor::Arm,
            0x10005 => Vendor::Software, // Mesa's software vendor id
            other => Vendor::Other(other),
        }
    }
}

impl fmt::Display for Vendor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Vendor::Nvidia => f.write_str("NVIDIA"),
            Vendor::Amd => f.write_str("AMD"),
            Vendor::Intel => f.write_str("Intel"),
            Vendor::Apple => f.write_str("Apple"),
            Vendor::Qualcomm => f.write_str("Qualcomm"),
            Vendor::Arm => f.write_str("Arm"),
            Vendor::Software => f.write_str("software"),
            Vendor::Other(id) => write!(f, "0x{id:04x}"),
        }
    }
}

/// What kind of device an adapter is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DeviceKind {
    /// A discrete GPU with its own memory.
    Discrete,
    /// A GPU sharing memory with the CPU.
    Integrated,
    /// A GPU in a virtual machine.
    Virtual,
    /// The driver did not say.
    Unknown,
    /// A software implementation running on the CPU (never counted as a GPU).
    Software,
}

impl DeviceKind {
    /// Classifies from wgpu's device type and the adapter's name (some drivers report
    /// software rasterizers as `Other`).
    pub fn classify(t: wgpu::DeviceType, name: &str, vendor_id: u32) -> DeviceKind {
        let n = name.to_ascii_lowercase();
        let software_name = [
            "llvmpipe",
            "lavapipe",
            "softpipe",
            "swiftshader",
            "basic render driver",
            "warp",
        ]
        .iter()
        .any(|s| n.contains(s));
        if t == wgpu::DeviceType::Cpu || software_name || vendor_id == 0x10005 {
            return DeviceKind::Software;
        }
        match t {
            wgpu::DeviceType::DiscreteGpu => DeviceKind::Discrete,
            wgpu::DeviceType::IntegratedGpu => DeviceKind::Integrated,
            wgpu::DeviceType::VirtualGpu => DeviceKind::Virtual,
            _ => DeviceKind::Unknown,
        }
    }

    /// True for every kind but [`DeviceKind::Software`].
    pub fn is_hardware(self) -> bool {
        self != DeviceKind::Software
    }
}

impl fmt::Display for DeviceKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            DeviceKind::Discrete => "discrete",
            DeviceKind::Integrated => "integrated",
            DeviceKind::Virtual => "virtual",
            DeviceKind::Unknown => "unknown",
            DeviceKind::Software => "software",
        })
    }
}

/// The limits that matter for compute.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ComputeLimits {
    /// Largest buffer in bytes.
    pub max_buffer_size: u64,
    /// Largest storage-buffer binding in bytes.
    pub max_storage_binding: u64,
    /// Workgroup (shared) memory in bytes.
    pub max_workgroup_storage: u32,
    /// Invocations per workgroup.
    pub max_invocations: u32,
    /// Workgroup size per dimension (x, y, z).
    pub max_workgroup_size: [u32; 3],
    /// Workgroups per dispatch dimension.
    pub max_workgroups_per_dimension: u32,
    /// Storage buffers per shader stage.
    pub max_storage_buffers: u32,
    /// Subgroup size range `(min, max)`, `(0, 0)` when unknown.
    pub subgroup_size: (u32, u32),
    /// The most loop iterations one invocation may run, where the driver stops loops beyond
    /// a count (llvmpipe: 65,535, counting nested loops together); `None`: no such limit.
    /// Kernels check their trip counts against it rather than compute truncated results.
    pub max_loop_iterations: Option<u32>,
}

/// The optional features that matter for compute.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct ComputeFeatures {
    /// Subgroup operations in shaders.
    pub subgroups: bool,
    /// `f16` in shaders.
    pub shader_f16: bool,
    /// `f64` in shaders (the arrays' `float64`; Vulkan's `shaderFloat64`).
    pub shader_f64: bool,
    /// `i64`/`u64` in shaders (how `float64` words are joined; Vulkan's `shaderInt64`).
    pub shader_int64: bool,
    /// Timestamp queries (profiling).
    pub timestamp_query: bool,
    /// Timestamp queries inside compute passes (per-dispatch profiling).
    pub timestamp_inside_passes: bool,
    /// Cooperative matrices (tensor cores: Vulkan's `VK_KHR_cooperative_matrix`, Metal's
    /// simdgroup matrices), wgpu's `EXPERIMENTAL_COOPERATIVE_MATRIX`; the configurations
    /// are [`AdapterDesc::coop_matrices`]. Requested whenever offered.
    pub cooperative_matrix: bool,
}

/// One adapter as seen by [`crate::devices`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AdapterDesc {
    /// Position in the list returned by [`crate::devices`].
    pub index: usize,
    /// `gpu:N` index, for hardware GPUs on their preferred backend.
    pub gpu_index: Option<usize>,
    /// `cpu:N` index, for software adapters.
    pub software_index: Option<usize>,
    /// `<backend>:N` index among adapters of the same backend.
    pub backend_index: usize,
    /// The adapter's name, e.g. `llvmpipe (LLVM 15.0.6, 256 bits)`.
    pub name: String,
    /// Vendor classification.
    pub vendor: Vendor,
    /// PCI vendor id (0 when not reported).
    pub vendor_id: u32,
    /// PCI device id (0 when not reported).
    pub device_id: u32,
    /// Discrete, integrated, virtual, software…
    pub kind: DeviceKind,
    /// Graphics API backend.
    pub backend: BackendKind,
    /// Driver name.
    pub driver: String,
    /// Driver version information.
    pub driver_info: String,
    /// PCI bus id where the backend reports one (used to match telemetry).
    pub pci_bus_id: String,
    /// Compute limits.
    pub limits: ComputeLimits,
    /// Compute features.
    pub features: ComputeFeatures,
    /// The cooperative-matrix configurations the adapter reports (empty without
    /// [`ComputeFeatures::cooperative_matrix`]); the matmul's tensor-core kernels run only
    /// on these.
    pub coop_matrices: Vec<CoopMatrix>,
}

impl AdapterDesc {
    /// True for hardware GPUs (never for software adapters).
    pub fn is_gpu(&self) -> bool {
        self.kind.is_hardware()
    }

    /// The spec that selects this adapter (`gpu:0`, `cpu:0`, or `vulkan:1` for an alias).
    pub fn spec(&self) -> DeviceSpec {
        if let Some(i) = self.gpu_index {
            DeviceSpec::Gpu(i)
        } else if let Some(i) = self.software_index {
            DeviceSpec::Software(i)
        } else {
            DeviceSpec::Backend(self.backend, self.backend_index)
        }
    }

    pub(crate) fn from_adapter(a: &wgpu::Adapter) -> Option<AdapterDesc> {
        let info = a.get_info();
        let backend = BackendKind::from_wgpu(info.backend)?;
        let l = a.limits();
        let f = a.features();
        let kind = DeviceKind::classify(info.device_type, &info.name, info.vendor);
        let coop = f.contains(wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX);
        let mut vendor = Vendor::classify(info.vendor, kind);
        if backend == BackendKind::Metal && matches!(vendor, Vendor::Other(0)) {
            vendor = Vendor::Apple;
        }
        Some(AdapterDesc {
            index: 0,
            gpu_index: None,
            software_index: None,
            backend_index: 0,
            name: info.name.clone(),
            vendor,
            vendor_id: info.vendor,
            device_id: info.device,
            kind,
            backend,
            driver: info.driver.clone(),
            driver_info: info.driver_info.clone(),
            pci_bus_id: info.device_pci_bus_id.clone(),
            limits: ComputeLimits {
                max_buffer_size: l.max_buffer_size,
                max_storage_binding: l.max_storage_buffer_binding_size,
                max_workgroup_storage: l.max_compute_workgroup_storage_size,
                max_invocations: l.max_compute_invocations_per_workgroup,
                max_workgroup_size: [
                    l.max_compute_workgroup_size_x,
                    l.max_compute_workgroup_size_y,
                    l.max_compute_workgroup_size_z,
                ],
                max_workgroups_per_dimension: l.max_compute_workgroups_per_dimension,
                max_storage_buffers: l.max_storage_buffers_per_shader_stage,
                subgroup_size: if f.contains(wgpu::Features::SUBGROUP) {
                    (info.subgroup_min_size, info.subgroup_max_size)
                } else {
                    (0, 0)
                },
                max_loop_iterations: (info.name.to_ascii_lowercase().contains("llvmpipe")
                    || info.driver.to_ascii_lowercase().contains("llvmpipe"))
                .then_some(65_535),
            },
            features: ComputeFeatures {
                subgroups: f.contains(wgpu::Features::SUBGROUP),
                shader_f16: f.contains(wgpu::Features::SHADER_F16),
                shader_f64: f.contains(wgpu::Features::SHADER_F64),
                shader_int64: f.contains(wgpu::Features::SHADER_INT64),
                timestamp_query: f.contains(wgpu::Features::TIMESTAMP_QUERY),
                timestamp_inside_passes: f.contains(wgpu::Features::TIMESTAMP_QUERY_INSIDE_PASSES),
                cooperative_matrix: coop,
            },
            coop_matrices: if coop {
                a.cooperative_matrix_properties()
                    .into_iter()
                    .map(|c| CoopMatrix {
                        m: c.m_size,
                        n: c.n_size,
                        k: c.k_size,
                        ab: CoopScalar::from_wgpu(c.ab_type),
                        cr: CoopScalar::from_wgpu(c.cr_type),
                        saturating: c.saturating_accumulation,
                    })
                    .collect()
            } else {
                Vec::new()
            },
        })
    }
}

/// Orders adapters, assigns `gpu:`/`cpu:`/backend indices and applies visible-devices.
///
/// This is the pure part of discovery: `raw` may come from wgpu or be made up in a test.
/// `visible` lists GPU indices in the full numbering (see [`crate::config::parse_visible`]).
pub fn arrange(raw: Vec<AdapterDesc>, visible: Option<&[usize]>) -> Result<Vec<AdapterDesc>> {
    let tagged = raw.into_iter().map(|d| (d, ())).collect();
    Ok(arrange_with(tagged, visible)?
        .into_iter()
        .map(|(d, _)| d)
        .collect())
}

/// [`arrange`] carrying a payload (the wgpu adapter) along with each description.
pub(crate) fn arrange_with<T>(
    mut raw: Vec<(AdapterDesc, T)>,
    visible: Option<&[usize]>,
) -> Result<Vec<(AdapterDesc, T)>> {
    raw.sort_by(|(a, _), (b, _)| {
        (a.kind, a.backend.rank(), &a.pci_bus_id, &a.name).cmp(&(
            b.kind,
            b.backend.rank(),
            &b.pci_bus_id,
            &b.name,
        ))
    });
    // One gpu (or cpu) index per physical adapter: the first (best-backend) occurrence of its
    // identity; the same adapter through another backend is an alias without one.
    let identity = |d: &AdapterDesc| {
        let id = if d.pci_bus_id.is_empty() {
            d.name.to_ascii_lowercase()
        } else {
            d.pci_bus_id.clone()
        };
        (d.vendor_id, d.device_id, id)
    };
    let mut seen: Vec<(u32, u32, String)> = Vec::new();
    let mut gpu_count = 0;
    let mut full_gpu_of: Vec<Option<usize>> = Vec::with_capacity(raw.len());
    let mut owner: Vec<bool> = Vec::with_capacity(raw.len());
    let mut gpu_of_seen: Vec<Option<usize>> = Vec::new();
    for (d, _) in &raw {
        let id = identity(d);
        match seen.iter().position(|g| *g == id) {
            Some(p) => {
                full_gpu_of.push(gpu_of_seen[p]);
                owner.push(false);
            }
            None => {
                seen.push(id);
                let g = if d.kind.is_hardware() {
                    gpu_count += 1;
                    Some(gpu_count - 1)
                } else {
                    None
                };
                gpu_of_seen.push(g);
                full_gpu_of.push(g);
                owner.push(true);
            }
        }
    }
    // Visible devices: map full gpu index -> new index.
    let renumber = |full: usize| -> Option<usize> {
        match visible {
            None => Some(full),
            Some(v) => v.iter().position(|&x| x == full),
        }
    };
    if let Some(v) = visible {
        if let Some(&bad) = v.iter().find(|&&x| x >= gpu_count) {
            return Err(Error::Config {
                key: "SUANLI_VISIBLE_DEVICES".into(),
                value: v
                    .iter()
                    .map(|x| x.to_string())
                    .collect::<Vec<_>>()
                    .join(","),
                source_name: "configuration".into(),
                reason: format!(
                    "GPU index {bad} is listed but only {} hardware GPU(s) exist",
                    gpu_count
                ),
            });
        }
    }
    let mut out: Vec<(Option<usize>, AdapterDesc, T)> = Vec::new();
    for (((d, payload), full), own) in raw.into_iter().zip(full_gpu_of).zip(owner) {
        match full {
            Some(f) => {
                if let Some(new) = renumber(f) {
                    let mut d = d;
                    d.gpu_index = own.then_some(new);
                    out.push((Some(new), d, payload));
                }
            }
            None => {
                let mut d = d;
                d.software_index = own.then_some(0); // numbered below
                out.push((None, d, payload));
            }
        }
    }
    // Visible GPUs in the order given (renumbered; stable sort keeps backend order among
    // aliases), software adapters after.
    out.sort_by_key(|(g, d, _)| (g.is_none(), g.unwrap_or(0), d.kind == DeviceKind::Software));
    let mut software = 0;
    let mut per_backend: Vec<(BackendKind, usize)> = Vec::new();
    let mut result = Vec::with_capacity(out.len());
    for (i, (_, mut d, payload)) in out.into_iter().enumerate() {
        d.index = i;
        if d.software_index.is_some() {
            d.software_index = Some(software);
            software += 1;
        }
        let slot = match per_backend.iter_mut().find(|(b, _)| *b == d.backend) {
            Some(s) => s,
            None => {
                per_backend.push((d.backend, 0));
                per_backend.last_mut().expect("internal error: just pushed")
            }
        };
        d.backend_index = slot.1;
        slot.1 += 1;
        result.push((d, payload));
    }
    Ok(result)
}

/// Picks the adapter a spec names, from an arranged list. Pure; see [`arrange`].
pub fn select(spec: &DeviceSpec, adapters: &[AdapterDesc]) -> Result<usize> {
    let found = match spec {
        DeviceSpec::Auto => {
            let gpu = adapters.iter().position(|d| d.gpu_index == Some(0));
            match gpu {
                Some(i) => Some(i),
                None => {
                    let sw = adapters.iter().position(|d| d.software_index.is_some());
                    if let Some(i) = sw {
                        log::warn!(
                            "no hardware GPU found; using the software adapter {:?} (slow; install a GPU driver for real speed)",
                            adapters[i].name
                        );
                    }
                    sw
                }
            }
        }
        DeviceSpec::Gpu(n) => adapters.iter().position(|d| d.gpu_index == Some(*n)),
        DeviceSpec::Software(n) => adapters.iter().position(|d| d.software_index == Some(*n)),
        DeviceSpec::Backend(b, n) => adapters
            .iter()
            .position(|d| d.backend == *b && d.backend_index == *n),
        DeviceSpec::Name(s) => {
            let s = s.to_ascii_lowercase();
            adapters
                .iter()
                .position(|d| d.name.to_ascii_lowercase().contains(&s))
        }
    };
    match found {
        Some(i) => Ok(i),
        None if adapters.is_empty() => Err(no_adapter_error("")),
        None => Err(Error::DeviceNotFound {
            spec: spec.to_string(),
            available: format_table(adapters, None),
        }),
    }
}

/// The error for an empty adapter list; `backends` names what was searched ("" if unknown).
pub(crate) fn no_adapter_error(backends: &str) -> Error {
    Error::NoAdapter {
        backends: backends.to_string(),
        hint: "Install a GPU driver with Vulkan, Metal or DX12 support, or Mesa's software \
               Vulkan driver (lavapipe): `apt-get install mesa-vulkan-drivers` on Debian/Ubuntu. \
               Check with `vulkaninfo --summary`."
            .into(),
    }
}

/// Formats adapters as the table `examples/devices.rs` prints; `mark` flags one index.
pub fn format_table(adapters: &[AdapterDesc], mark: Option<usize>) -> String {
    if adapters.is_empty() {
        return format!("  (none) {}", no_adapter_error(""));
    }
    let mut s = format!(
        "  {:<9} {:<10} {:<8} {:<10} {:<40} {:>10} {:>10} {:>6} {:>8}  {}\n",
        "spec",
        "kind",
        "backend",
        "vendor",
        "name",
        "max buf",
        "max bind",
        "inv",
        "subgroup",
        "features"
    );
    for d in adapters {
        let mib = |b: u64| format!("{}M", b >> 20);
        let sg = match d.limits.subgroup_size {
            (0, 0) => "-".to_string(),
            (a, b) if a == b => a.to_string(),
            (a, b) => format!("{a}-{b}"),
        };
        let mut feats = Vec::new();
        if d.features.shader_f16 {
            feats.push("f16");
        }
        if d.features.shader_f64 {
            feats.push("f64");
        }
        if d.features.shader_int64 {
            feats.push("i64");
        }
        if d.features.timestamp_inside_passes {
            feats.push("timestamps(in-pass)");
        } else if d.features.timestamp_query {
            feats.push("timestamps");
        }
        let coop: Vec<String> = d.coop_matrices.iter().map(|c| c.to_string()).collect();
        let coop = format!("coop({})", coop.join(", "));
        if d.features.cooperative_matrix {
            feats.push(&coop);
        }
        let mut name = d.name.clone();
        if name.len() > 40 {
            name.truncate(37);
            name.push_str("...");
        }
        s.push_str(&format!(
            "{} {:<9} {:<10} {:<8} {:<10} {:<40} {:>10} {:>10} {:>6} {:>8}  {}\n",
            if mark == Some(d.index) { "*" } else { " " },
            d.spec().to_string(),
            d.kind.to_string(),
            d.backend.to_string(),
            d.vendor.to_string(),
            name,
            mib(d.limits.max_buffer_size),
            mib(d.limits.max_storage_binding),
            d.limits.max_invocations,
            sg,
            feats.join(" ")
        ));
    }
    s
}
