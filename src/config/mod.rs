//! Device specs and configuration: environment variables and an optional TOML file.
//!
//! | key | environment | `suanli.toml` | meaning |
//! |---|---|---|---|
//! | device | `SUANLI_DEVICE` | `device = "gpu:0"` | default [`DeviceSpec`] |
//! | visible devices | `SUANLI_VISIBLE_DEVICES` | `visible_devices = "0,2"` | hardware GPUs to expose, renumbered from 0 |
//! | memory limit | `SUANLI_MEMORY_LIMIT` | `memory_limit = "2GiB"` | per-device cap on pooled buffer bytes |
//!
//! | matmul kernel | `SUANLI_MATMUL` | `matmul = "tiled"` | forces a matmul variant instead of the tuner's choice |
//! | matmul precision | `SUANLI_MATMUL_PRECISION` | `matmul_precision = "medium"` | `highest` (default) or `high`: f32 products everywhere; `medium`: f32 matmuls may multiply in f16 on tensor cores (cooperative matrices, f32 accumulation), PyTorch's `set_float32_matmul_precision` ([`MatmulPrecision`]) |
//! | attention path | `SUANLI_ATTENTION` | `attention = "unfused"` | forces the fused or the unfused attention (where the fused kernel applies) instead of the tuner's choice |
//! | cache folder | `SUANLI_CACHE_DIR` | `cache_dir = "/path"` | where measured choices are kept (default `$XDG_CACHE_HOME/suanli`, else `~/.cache/suanli`) |
//! | temperature limit | `SUANLI_MAX_TEMPERATURE_C` | `max_temperature_c = 83` | the governor paces a device above it ([`limits`]) |
//! | power cap | `SUANLI_POWER_CAP_W` | `power_cap_w = 300` | the governor paces a device drawing more ([`limits`]) |
//!
//! Precedence: an explicit API argument beats the environment, which beats the file. The file
//! is `$SUANLI_CONFIG` if set (it must then exist), else `suanli.toml` in the working directory
//! if present. wgpu's own `WGPU_BACKEND` restricts the backends searched, and
//! `WGPU_ADAPTER_NAME` acts as a name-substring device spec when neither the API nor
//! `SUANLI_DEVICE` chose a device.
//!
//! This module is the only place in the crate that reads the process environment: everything
//! else receives a [`Config`] (or asks a function here, such as [`mnist_dir`]), so behaviour
//! never hangs on a variable read deep inside a kernel. Resolution is a pure function
//! ([`Config::resolve`]) of explicit values, an environment map and the file's text, so it is
//! tested without touching the process environment.

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use crate::error::{Error, Result};

pub mod limits;

pub use limits::{LimitTable, Limits};

/// Which backend an adapter runs on, as far as device specs are concerned.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BackendKind {
    /// Vulkan (Linux, Windows, Android; lavapipe).
    Vulkan,
    /// Metal (macOS, iOS).
    Metal,
    /// Direct3D 12 (Windows).
    Dx12,
    /// OpenGL / GLES (fallback).
    Gl,
}

impl BackendKind {
    pub(crate) fn from_wgpu(b: wgpu::Backend) -> Option<Self> {
        match b {
            wgpu::Backend::Vulkan => Some(Self::Vulkan),
            wgpu::Backend::Metal => Some(Self::Metal),
            wgpu::Backend::Dx12 => Some(Self::Dx12),
            wgpu::Backend::Gl => Some(Self::Gl),
            _ => None,
        }
    }

    /// Lower rank is preferred when the same GPU is visible through several backends.
    pub(crate) fn rank(self) -> u8 {
        match self {
            Self::Vulkan => 0,
            Self::Metal => 1,
            Self::Dx12 => 2,
            Self::Gl => 3,
        }
    }
}

impl fmt::Display for BackendKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Vulkan => "vulkan",
            Self::Metal => "metal",
            Self::Dx12 => "dx12",
            Self::Gl => "gl",
        })
    }
}

/// A parsed device spec, like TensorFlow's `/GPU:0`.
///
/// ```
/// use suanli::DeviceSpec;
/// assert_eq!("gpu:1".parse::<DeviceSpec>().unwrap(), DeviceSpec::Gpu(1));
/// assert_eq!("GPU".parse::<DeviceSpec>().unwrap(), DeviceSpec::Gpu(0));
/// assert_eq!("cpu".parse::<DeviceSpec>().unwrap(), DeviceSpec::Software(0));
/// assert_eq!("vulkan:0".parse::<DeviceSpec>().unwrap(), DeviceSpec::Backend(suanli::BackendKind::Vulkan, 0));
/// assert_eq!("name:RTX".parse::<DeviceSpec>().unwrap(), DeviceSpec::Name("RTX".into()));
/// assert!("gpu:x".parse::<DeviceSpec>().is_err());
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum DeviceSpec {
    /// The best hardware GPU, else the software adapter (with a logged warning).
    Auto,
    /// The N-th visible hardware GPU (discrete first, then integrated, then virtual).
    Gpu(usize),
    /// The N-th software adapter (lavapipe/llvmpipe, WARP, SwiftShader). `cpu` and `software`.
    Software(usize),
    /// The N-th adapter of one backend, in the order of [`crate::devices`].
    Backend(BackendKind, usize),
    /// The first adapter whose name contains this text (case-insensitive).
    Name(String),
}

impl FromStr for DeviceSpec {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        let raw = s;
        let s = s.trim().trim_start_matches('/');
        let bad = |reason: &str| Error::InvalidDeviceSpec {
            spec: raw.to_string(),
            reason: reason.to_string(),
        };
        if s.is_empty() {
            return Err(bad("the spec is empty"));
        }
        let (head, index) = match s.split_once(':') {
            Some((h, i)) => (h, Some(i)),
            None => (s, None),
        };
        let parse_index = |i: Option<&str>| -> Result<usize> {
            match i {
                None => Ok(0),
                Some(t) => t
                    .trim()
                    .parse::<usize>()
                    .map_err(|_| bad(&format!("the index {t:?} is not a non-negative integer"))),
            }
        };
        let lower = head.trim().to_ascii_lowercase();
        Ok(match lower.as_str() {
            "auto" if index.is_none() => DeviceSpec::Auto,
            "auto" => return Err(bad("`auto` takes no index")),
            "gpu" => DeviceSpec::Gpu(parse_index(index)?),
            "cpu" | "software" => DeviceSpec::Software(parse_index(index)?),
            "vulkan" => DeviceSpec::Backend(BackendKind::Vulkan, parse_index(index)?),
            "metal" => DeviceSpec::Backend(BackendKind::Metal, parse_index(index)?),
            "dx12" => DeviceSpec::Backend(BackendKind::Dx12, parse_index(index)?),
            "gl" | "gles" => DeviceSpec::Backend(BackendKind::Gl, parse_index(index)?),
            "name" => match index {
                Some(n) if !n.trim().is_empty() => DeviceSpec::Name(n.trim().to_string()),
                _ => return Err(bad("`name:` needs a name substring after the colon")),
            },
            _ if index.is_some() => {
                return Err(bad(&format!(
                "unknown device kind {head:?} (use `name:TEXT` to match a name containing a colon)"
            )))
            }
            _ => DeviceSpec::Name(s.to_string()),
        })
    }
}

impl fmt::Display for DeviceSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DeviceSpec::Auto => f.write_str("auto"),
            DeviceSpec::Gpu(i) => write!(f, "gpu:{i}"),
            DeviceSpec::Software(i) => write!(f, "cpu:{i}"),
            DeviceSpec::Backend(b, i) => write!(f, "{b}:{i}"),
            DeviceSpec::Name(n) => write!(f, "name:{n}"),
        }
    }
}

/// Parses a byte size such as `512MiB`, `2GiB`, `1.5 GB`, `1000000` (bytes).
///
/// Binary suffixes (KiB, MiB, GiB, TiB) are powers of 1024, decimal ones (KB, MB, GB, TB)
/// powers of 1000; `K`/`M`/`G`/`T` alone are binary.
///
/// ```
/// assert_eq!(suanli::config::parse_bytes("512MiB").unwrap(), 512 << 20);
/// assert_eq!(suanli::config::parse_bytes("2 GB").unwrap(), 2_000_000_000);
/// assert!(suanli::config::parse_bytes("lots").is_err());
/// ```
pub fn parse_bytes(text: &str) -> std::result::Result<u64, String> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let value: f64 = num.parse().map_err(|_| {
        format!("expected a number with an optional unit like 512MiB, found {text:?}")
    })?;
    let mult: f64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1.0,
        "k" | "kib" => 1024.0,
        "m" | "mib" => 1024.0 * 1024.0,
        "g" | "gib" => 1024.0 * 1024.0 * 1024.0,
        "t" | "tib" => 1024.0f64.powi(4),
        "kb" => 1e3,
        "mb" => 1e6,
        "gb" => 1e9,
        "tb" => 1e12,
        other => {
            return Err(format!(
                "unknown unit {other:?}; expected B, KiB, MiB, GiB, TiB, KB, MB, GB or TB"
            ))
        }
    };
    let bytes = value * mult;
    if !bytes.is_finite() || bytes < 1.0 || bytes > u64::MAX as f64 {
        return Err(format!(
            "expected a size of at least 1 byte, found {text:?}"
        ));
    }
    Ok(bytes as u64)
}

/// Which hardware GPUs are visible, like `CUDA_VISIBLE_DEVICES`.
///
/// `"0,2"` exposes the GPUs numbered 0 and 2 in the full list, renumbered as `gpu:0` and `gpu:1`
/// in that order; `""` or `"-1"` hides all GPUs. Software adapters stay visible (they are the
/// CPU fallback, like TensorFlow's CPU device).
pub fn parse_visible(text: &str) -> std::result::Result<Vec<usize>, String> {
    let t = text.trim();
    if t.is_empty() || t == "-1" {
        return Ok(Vec::new());
    }
    let mut out = Vec::new();
    for part in t.split(',') {
        let p = part.trim();
        let i: usize = p.parse().map_err(|_| {
            format!("expected a comma-separated list of GPU indices like \"0,2\", found {p:?}")
        })?;
        if out.contains(&i) {
            return Err(format!("GPU index {i} is listed twice"));
        }
        out.push(i);
    }
    Ok(out)
}

/// How precisely f32 matmuls must multiply (`SUANLI_MATMUL_PRECISION`), PyTorch's
/// `torch.set_float32_matmul_precision`: the one setting that lets the tuner consider the
/// tensor-core kernels, whose products round their operands to f16 (10-bit mantissas) and
/// accumulate in f32, so a result differs from the f32 kernels' by about `2⁻¹¹·√K` of its
/// terms' magnitude instead of `2⁻²⁴·√K`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum MatmulPrecision {
    /// f32 products only (the default).
    #[default]
    Highest,
    /// As `Highest`: suanli has no TF32 or split-f16 path for PyTorch's `high` to choose.
    High,
    /// f16 products with f32 accumulation allowed (cooperative-matrix kernels, where the
    /// adapter has them).
    Medium,
}

impl MatmulPrecision {
    /// Whether products may round their operands to f16.
    pub fn allows_f16(self) -> bool {
        self == MatmulPrecision::Medium
    }

    /// The setting's name, as [`FromStr`] reads it.
    pub fn name(self) -> &'static str {
        match self {
            MatmulPrecision::Highest => "highest",
            MatmulPrecision::High => "high",
            MatmulPrecision::Medium => "medium",
        }
    }
}

impl FromStr for MatmulPrecision {
    type Err = String;

    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "highest" => Ok(MatmulPrecision::Highest),
            "high" => Ok(MatmulPrecision::High),
            "medium" => Ok(MatmulPrecision::Medium),
            _ => Err("expected highest, high or medium".into()),
        }
    }
}

/// Resolved configuration for opening devices.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Config {
    /// The default device spec (`None`: [`DeviceSpec::Auto`]).
    pub device: Option<DeviceSpec>,
    /// Visible hardware GPUs in the full numbering (`None`: all).
    pub visible_devices: Option<Vec<usize>>,
    /// Per-device memory limit in bytes (`None`: only the adapter's own limits).
    pub memory_limit: Option<u64>,
    /// The backends to search, as `WGPU_BACKEND` spells them (`"vulkan,gl"`; `None`: Vulkan,
    /// Metal and DX12, then GL only if those find nothing).
    pub backends: Option<String>,
    /// A matmul variant forced by name (`SUANLI_MATMUL`), checked by the matmul kernels.
    pub matmul: Option<String>,
    /// Whether f32 matmuls may multiply in f16 (`SUANLI_MATMUL_PRECISION`).
    pub matmul_precision: MatmulPrecision,
    /// The attention path forced by name (`SUANLI_ATTENTION`: `fused` or `unfused`), checked
    /// by the attention tuner.
    pub attention: Option<String>,
    /// Where measured per-device choices (the matmul tuner's) are cached; `None`: not cached.
    pub cache_dir: Option<PathBuf>,
    /// Temperature and power limits per device, for the governor.
    pub limits: LimitTable,
}

#[derive(serde::Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct FileConfig {
    device: Option<String>,
    visible_devices: Option<toml::Value>,
    memory_limit: Option<toml::Value>,
    matmul: Option<String>,
    matmul_precision: Option<String>,
    attention: Option<String>,
    cache_dir: Option<String>,
    max_temperature_c: Option<f64>,
    power_cap_w: Option<f64>,
    limits: Option<std::collections::BTreeMap<String, limits::FileLimits>>,
}

/// Values passed explicitly through the API; they beat the environment and the file.
#[derive(Clone, Debug, Default)]
pub struct Overrides {
    /// Device spec.
    pub device: Option<DeviceSpec>,
    /// Visible GPUs.
    pub visible_devices: Option<Vec<usize>>,
    /// Memory limit in bytes.
    pub memory_limit: Option<u64>,
    /// Temperature and power limits; each beats the environment's and the file's for the
    /// devices it covers.
    pub limits: LimitTable,
}

impl Config {
    /// Reads the process environment and the config file, with no explicit overrides.
    pub fn from_env() -> Result<Config> {
        let env: HashMap<String, String> = std::env::vars()
            .filter(|(k, _)| {
                k.starts_with("SUANLI_")
                    || k.starts_with("WGPU_")
                    || k == "XDG_CACHE_HOME"
                    || k == "HOME"
            })
            .collect();
        let (file_text, file_name) = match env.get("SUANLI_CONFIG") {
            Some(p) => {
                let path = PathBuf::from(p);
                let text = std::fs::read_to_string(&path).map_err(|e| Error::io(&path, e))?;
                (Some(text), path.display().to_string())
            }
            None => {
                let path = Path::new("suanli.toml");
                match std::fs::read_to_string(path) {
                    Ok(t) => (Some(t), "suanli.toml".to_string()),
                    Err(_) => (None, String::new()),
                }
            }
        };
        Config::resolve(
            &Overrides::default(),
            &env,
            file_text.as_deref(),
            &file_name,
        )
    }

    /// Pure resolution: `api` beats `env`, which beats the file's text.
    ///
    /// ```
    /// use std::collections::HashMap;
    /// use suanli::config::{Config, Overrides};
    /// let env = HashMap::from([("SUANLI_MEMORY_LIMIT".to_string(), "1GiB".to_string())]);
    /// let file = "memory_limit = \"2GiB\"\ndevice = \"gpu:1\"";
    /// let c = Config::resolve(&Overrides::default(), &env, Some(file), "suanli.toml").unwrap();
    /// assert_eq!(c.memory_limit, Some(1 << 30));
    /// assert_eq!(c.device, Some(suanli::DeviceSpec::Gpu(1)));
    /// ```
    pub fn resolve(
        api: &Overrides,
        env: &HashMap<String, String>,
        file_text: Option<&str>,
        file_name: &str,
    ) -> Result<Config> {
        let file: FileConfig = match file_text {
            Some(t) => toml::from_str(t).map_err(|e| Error::Config {
                key: "(file)".into(),
                value: String::new(),
                source_name: file_name.to_string(),
                reason: e.to_string(),
            })?,
            None => FileConfig::default(),
        };
        let cfg_err = |key: &str, value: &str, src: &str, reason: String| Error::Config {
            key: key.to_string(),
            value: value.to_string(),
            source_name: src.to_string(),
            reason,
        };
        let env_src = "environment";

        let device = if let Some(d) = &api.device {
            Some(d.clone())
        } else if let Some(v) = env.get("SUANLI_DEVICE") {
            Some(v.parse::<DeviceSpec>()?)
        } else if let Some(v) = env.get("WGPU_ADAPTER_NAME") {
            Some(DeviceSpec::Name(v.clone()))
        } else if let Some(v) = &file.device {
            Some(v.parse::<DeviceSpec>()?)
        } else {
            None
        };

        let value_text = |v: &toml::Value| match v {
            toml::Value::String(s) => s.clone(),
            other => format!("{other:?}"),
        };

        let visible_devices = if let Some(v) = &api.visible_devices {
            Some(v.clone())
        } else if let Some(v) = env.get("SUANLI_VISIBLE_DEVICES") {
            Some(parse_visible(v).map_err(|r| cfg_err("SUANLI_VISIBLE_DEVICES", v, env_src, r))?)
        } else if let Some(v) = &file.visible_devices {
            let parsed = match v {
                toml::Value::Array(items) => items
                    .iter()
                    .map(|x| match x {
                        toml::Value::Integer(i) if *i >= 0 => Ok(*i as usize),
                        other => Err(format!("expected a GPU index, found {other:?}")),
                    })
                    .collect::<std::result::Result<Vec<_>, _>>(),
                other => parse_visible(&value_text(other)),
            };
            Some(parsed.map_err(|r| cfg_err("visible_devices", &value_text(v), file_name, r))?)
        } else {
            None
        };

        let memory_limit = if let Some(m) = api.memory_limit {
            Some(m)
        } else if let Some(v) = env.get("SUANLI_MEMORY_LIMIT") {
            Some(parse_bytes(v).map_err(|r| cfg_err("SUANLI_MEMORY_LIMIT", v, env_src, r))?)
        } else if let Some(v) = &file.memory_limit {
            let parsed = match v {
                toml::Value::Integer(i) if *i > 0 => Ok(*i as u64),
                other => parse_bytes(&value_text(other)),
            };
            Some(parsed.map_err(|r| cfg_err("memory_limit", &value_text(v), file_name, r))?)
        } else {
            None
        };

        let matmul = env
            .get("SUANLI_MATMUL")
            .cloned()
            .or(file.matmul)
            .filter(|s| !s.trim().is_empty());
        let matmul_precision = if let Some(v) = env.get("SUANLI_MATMUL_PRECISION") {
            v.parse()
                .map_err(|r| cfg_err("SUANLI_MATMUL_PRECISION", v, env_src, r))?
        } else if let Some(v) = &file.matmul_precision {
            v.parse()
                .map_err(|r| cfg_err("matmul_precision", v, file_name, r))?
        } else {
            MatmulPrecision::default()
        };
        let attention = env
            .get("SUANLI_ATTENTION")
            .cloned()
            .or(file.attention)
            .filter(|s| !s.trim().is_empty());
        let cache_dir = if let Some(d) = env.get("SUANLI_CACHE_DIR") {
            Some(PathBuf::from(d))
        } else if let Some(d) = file.cache_dir {
            Some(PathBuf::from(d))
        } else if let Some(d) = env.get("XDG_CACHE_HOME").filter(|d| !d.is_empty()) {
            Some(PathBuf::from(d).join("suanli"))
        } else {
            env.get("HOME")
                .filter(|d| !d.is_empty())
                .map(|h| PathBuf::from(h).join(".cache").join("suanli"))
        };
        let backends = env
            .get("WGPU_BACKEND")
            .cloned()
            .filter(|s| !s.trim().is_empty());
        if let Some(b) = &backends {
            if wgpu::Backends::from_comma_list(b).is_empty() {
                return Err(cfg_err(
                    "WGPU_BACKEND",
                    b,
                    env_src,
                    "expected a comma-separated list of vulkan, metal, dx12, gl".into(),
                ));
            }
        }

        let file_limits = limits::from_file(
            limits::FileLimits::new(file.max_temperature_c, file.power_cap_w),
            file.limits.as_ref(),
            file_name,
        )?;
        let env_limits = limits::from_env(env)?;
        for (spec, l) in &api.limits.devices {
            l.check("the API")?;
            limits::device_key(spec, "the API")?;
        }
        api.limits.all.check("the API")?;
        let limits = api.limits.over(&env_limits.over(&file_limits));

        Ok(Config {
            device,
            visible_devices,
            memory_limit,
            backends,
            matmul,
            matmul_precision,
            attention,
            cache_dir,
            limits,
        })
    }

    /// The backends to search, and whether they were chosen explicitly (`WGPU_BACKEND`):
    /// without a choice, GL is tried only when Vulkan, Metal and DX12 find nothing.
    pub fn backends_to_search(&self) -> (wgpu::Backends, bool) {
        match &self.backends {
            Some(b) => (wgpu::Backends::from_comma_list(b), true),
            None => (wgpu::Backends::PRIMARY, false),
        }
    }
}

/// `$MNIST_DIR`, if set: the folder the MNIST loader must use (it is an error when the files
/// are not there, rather than a silent fall-back to another copy).
pub fn mnist_dir() -> Option<PathBuf> {
    dir_var("MNIST_DIR")
}

/// A folder named by the environment variable `var`, if set and not empty.
pub fn dir_var(var: &str) -> Option<PathBuf> {
    std::env::var_os(var)
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
}

/// How long a process of a distributed run waits for another before it reports that one as
/// failed: `SUANLI_MPI_TIMEOUT` in seconds (default 60: long enough for a peer's first
/// epoch to compile its kernels, short enough that a lost rank does not hold the job).
pub fn mpi_timeout() -> Result<std::time::Duration> {
    const KEY: &str = "SUANLI_MPI_TIMEOUT";
    match std::env::var(KEY) {
        Err(_) => Ok(std::time::Duration::from_secs(60)),
        Ok(v) => match v.trim().parse::<f64>() {
            Ok(s) if s > 0.0 && s.is_finite() => Ok(std::time::Duration::from_secs_f64(s)),
            _ => Err(Error::Config {
                key: KEY.into(),
                value: v,
                source_name: "environment".into(),
                reason: "expected a number of seconds greater than 0".into(),
            }),
        },
    }
}

/// The user's home folder (`$HOME`), for per-user data such as `~/.suanli/datasets`.
pub fn home_dir() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
}

/// Keeps a compute-only start quiet on a headless Linux machine.
///
/// Mesa installs an implicit Vulkan layer (`VK_LAYER_MESA_device_select`) that, while the
/// adapters are enumerated, connects to a Wayland display to find the default GPU; without
/// `XDG_RUNTIME_DIR` libwayland prints `error: XDG_RUNTIME_DIR is invalid or not set in the
/// environment.` to stderr twice, which reads like a failure. The layer only reorders adapters
/// for display use (suanli orders them itself), and its manifest honours `NODEVICE_SELECT=1`,
/// so on a headless start (no `XDG_RUNTIME_DIR`) that is set for this process, unless the user
/// asked the layer for something (`MESA_VK_DEVICE_SELECT`) or set `NODEVICE_SELECT`
/// themselves. It runs once, before the first Vulkan instance exists (discovery calls it
/// first), so no Vulkan code is reading the environment while it is written.
pub(crate) fn quiet_headless_vulkan() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let headless = std::env::var_os("XDG_RUNTIME_DIR")
            .is_none_or(|d| d.is_empty() || !Path::new(&d).is_dir());
        let chosen = std::env::var_os("MESA_VK_DEVICE_SELECT").is_some()
            || std::env::var_os("NODEVICE_SELECT").is_some();
        if headless && !chosen {
            log::debug!(
                "headless start: NODEVICE_SELECT=1 keeps Mesa's device-select layer from probing a display"
            );
            std::env::set_var("NODEVICE_SELECT", "1");
        }
    });
}
