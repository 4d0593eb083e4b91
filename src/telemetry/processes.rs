//! The processes using each GPU, from Linux's DRM fdinfo: every open DRM file of a process
//! lists `drm-pdev` (the device's PCI address), `drm-client-id`, and, where the driver
//! reports them, `drm-engine-*` (busy time, ns) and `drm-memory-*` / `drm-total-*`
//! (memory). amdgpu, i915, xe, msm, panfrost and v3d write these; NVIDIA's proprietary
//! driver does not: [`crate::telemetry::device_processes`] asks NVML for NVIDIA GPUs instead.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use serde::Serialize;

/// One process's use of one device (all its DRM clients on that device added up).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct DeviceProcess {
    /// The device's PCI address (`drm-pdev`).
    pub pci_bus_id: String,
    /// Process id.
    pub pid: u32,
    /// The process's name (`/proc/PID/comm`).
    pub name: String,
    /// The DRM driver (`drm-driver`).
    pub driver: String,
    /// Distinct DRM clients (a process may open the device more than once).
    pub clients: usize,
    /// Device memory the driver attributes to it, bytes: its device-local regions (`vram`
    /// on amdgpu, `local0`… on i915 and xe) summed over clients, from `drm-total-*` where
    /// the driver writes it, else the older `drm-memory-*`; `None` where it says nothing.
    pub memory_bytes: Option<u64>,
    /// Busy time summed over engines and clients, nanoseconds since the clients opened.
    pub engine_ns: Option<u64>,
}

/// One process on one device while its fds are read: the process, memory by
/// `"total:region"` / `"memory:region"`, and the client ids seen.
type Tally = (DeviceProcess, BTreeMap<String, u64>, Vec<String>);

/// A size as fdinfo writes it: `1024 KiB`, `3 MiB`, `4096` (bytes).
fn bytes(v: &str) -> Option<u64> {
    let mut it = v.split_whitespace();
    let n: u64 = it.next()?.parse().ok()?;
    Some(match it.next() {
        None => n,
        Some("KiB") => n << 10,
        Some("MiB") => n << 20,
        Some("GiB") => n << 30,
        Some(_) => return None,
    })
}

/// The processes using DRM devices under `proc_root` (normally `/proc`), sorted by device then
/// pid. Unreadable processes (another user's, or gone) are skipped.
pub fn drm_processes(proc_root: &Path) -> Vec<DeviceProcess> {
    let mut out: BTreeMap<(String, u32), Tally> = BTreeMap::new();
    let Ok(pids) = fs::read_dir(proc_root) else {
        return Vec::new();
    };
    for p in pids.flatten() {
        let Some(pid) = p.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(fds) = fs::read_dir(p.path().join("fdinfo")) else {
            continue;
        };
        for fd in fds.flatten() {
            let Ok(text) = fs::read_to_string(fd.path()) else {
                continue;
            };
            let mut kv: BTreeMap<&str, &str> = BTreeMap::new();
            for line in text.lines() {
                if let Some((k, v)) = line.split_once(':') {
                    kv.insert(k.trim(), v.trim());
                }
            }
            let (Some(pdev), Some(client)) = (kv.get("drm-pdev"), kv.get("drm-client-id")) else {
                continue;
            };
            let entry = out.entry((pdev.to_string(), pid)).or_insert_with(|| {
                let name = fs::read_to_string(p.path().join("comm")).unwrap_or_default();
                (
                    DeviceProcess {
                        pci_bus_id: pdev.to_string(),
                        pid,
                        name: name.trim().to_string(),
                        driver: kv.get("drm-driver").unwrap_or(&"").to_string(),
                        ..Default::default()
                    },
                    BTreeMap::new(),
                    Vec::new(),
                )
            });
            // Several fds of one client repeat its numbers: count each client once.
            if entry.2.iter().any(|c| c == client) {
                continue;
            }
            entry.2.push(client.to_string());
            for (k, v) in &kv {
                if let Some(ns) = k
                    .strip_prefix("drm-engine-")
                    .filter(|e| !e.starts_with("capacity"))
                    .and(v.strip_suffix(" ns"))
                    .and_then(|n| n.trim().parse::<u64>().ok())
                {
                    entry.0.engine_ns = Some(entry.0.engine_ns.unwrap_or(0) + ns);
                }
                // Keyed "total:vram" / "memory:vram": the newer key wins when both are there.
                let region = k
                    .strip_prefix("drm-total-")
                    .map(|r| ("total", r))
                    .or_else(|| k.strip_prefix("drm-memory-").map(|r| ("memory", r)));
                if let (Some((kind, r)), Some(b)) = (region, bytes(v)) {
                    if r.starts_with("vram") || r.starts_with("local") {
                        *entry.1.entry(format!("{kind}:{r}")).or_default() += b;
                    }
                }
            }
        }
    }
    out.into_values()
        .map(|(mut p, mem, clients)| {
            p.clients = clients.len();
            let sum = |kind: &str| {
                let v: Vec<u64> = mem
                    .iter()
                    .filter(|(k, _)| k.starts_with(kind))
                    .map(|(_, b)| *b)
                    .collect();
                (!v.is_empty()).then(|| v.iter().sum())
            };
            p.memory_bytes = sum("total:").or_else(|| sum("memory:"));
            p
        })
        .collect()
}
