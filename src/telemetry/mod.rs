//! Hardware telemetry: utilisation, memory, temperature, power and clocks, per adapter, on
//! every vendor, behind one trait.
//!
//! A [`Sensor`] is chosen per adapter at run time ([`sensor_for`]):
//! - NVIDIA: NVML, loaded dynamically (cargo feature `nvml`, on by default; no NVIDIA library
//!   is needed to build or to run elsewhere);
//! - AMD, Intel and other DRM drivers on Linux: sysfs and hwmon files, read directly;
//! - anything else (software adapters, Metal, Windows without NVML): no sensor.
//!
//! Adapters are matched to sensors by PCI bus address, or by vendor and device id when that
//! pair is unique, never by enumeration order. Every field of a [`Reading`] is an `Option`:
//! "n/a" is reported rather than a made-up number.
//!
//! ```no_run
//! for (desc, reading) in suanli::telemetry::snapshot()? {
//!     println!("{}: {}", desc.name, reading.summary());
//! }
//! # Ok::<(), suanli::Error>(())
//! ```

#[cfg(feature = "nvml")]
pub mod nvml;
pub mod sysfs;

use std::path::Path;

use serde::Serialize;

#[cfg(feature = "nvml")]
use crate::Vendor;
use crate::{AdapterDesc, Result};

pub use sysfs::{energy_delta, SysfsSensor};

/// One sample of an adapter's sensors. `None` means the platform does not expose it.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Reading {
    /// Where the numbers come from: `"nvml"`, `"amdgpu sysfs"`, `"i915 sysfs"`, `"none"`.
    pub source: String,
    /// Percent of the last sample period the GPU was busy.
    pub utilisation: Option<f64>,
    /// Device memory in use, bytes.
    pub memory_used: Option<u64>,
    /// Device memory in total, bytes.
    pub memory_total: Option<u64>,
    /// GPU temperature, °C.
    pub temperature_c: Option<f64>,
    /// Board power draw, W.
    pub power_w: Option<f64>,
    /// Power limit, W.
    pub power_limit_w: Option<f64>,
    /// Graphics / shader clock, MHz.
    pub graphics_clock_mhz: Option<f64>,
    /// Memory clock, MHz.
    pub memory_clock_mhz: Option<f64>,
    /// Clocks currently reduced for thermal or power reasons.
    pub throttled: Option<bool>,
}

impl Reading {
    /// A reading with every field `n/a`.
    pub fn unavailable(source: &str) -> Reading {
        Reading {
            source: source.to_string(),
            ..Reading::default()
        }
    }

    /// `"util 87% · mem 3.1/24.0 GiB · 71°C · 212/300 W · 1980 MHz"`, with `n/a` for the
    /// missing fields.
    pub fn summary(&self) -> String {
        let c = self.columns();
        format!(
            "util {} · mem {} · {} · {} · {}",
            c[0], c[1], c[2], c[3], c[4]
        )
    }

    /// The monitor's columns: utilisation, memory, temperature, power, clocks, throttled.
    pub fn columns(&self) -> [String; 6] {
        fn na<T>(v: Option<T>, f: impl Fn(T) -> String) -> String {
            v.map_or_else(|| "n/a".to_string(), f)
        }
        let gib = |b: u64| b as f64 / (1u64 << 30) as f64;
        let mem = match (self.memory_used, self.memory_total) {
            (Some(u), Some(t)) => format!("{:.1}/{:.1} GiB", gib(u), gib(t)),
            (Some(u), None) => format!("{:.1} GiB", gib(u)),
            _ => "n/a".into(),
        };
        let power = match (self.power_w, self.power_limit_w) {
            (Some(p), Some(l)) => format!("{p:.0}/{l:.0} W"),
            (Some(p), None) => format!("{p:.0} W"),
            _ => "n/a".into(),
        };
        let clocks = match (self.graphics_clock_mhz, self.memory_clock_mhz) {
            (Some(g), Some(m)) => format!("{g:.0}/{m:.0} MHz"),
            (Some(g), None) => format!("{g:.0} MHz"),
            _ => "n/a".into(),
        };
        [
            na(self.utilisation, |u| format!("{u:.0}%")),
            mem,
            na(self.temperature_c, |t| format!("{t:.0}°C")),
            power,
            clocks,
            na(self.throttled, |t| if t { "yes" } else { "no" }.to_string()),
        ]
    }
}

/// A source of [`Reading`]s for one adapter.
pub trait Sensor: Send {
    /// What the readings come from (`"nvml"`, `"amdgpu sysfs"`, `"none"` …).
    fn source(&self) -> String;
    /// Samples the sensors now. Rates (power from an energy counter) need two reads: the
    /// first gives `None` for them.
    fn read(&mut self) -> Reading;
}

/// The sensor of an adapter without one: every reading `n/a`, with the reason as its source.
pub struct NoSensor(pub String);

impl Sensor for NoSensor {
    fn source(&self) -> String {
        self.0.clone()
    }
    fn read(&mut self) -> Reading {
        Reading::unavailable(&self.0)
    }
}

/// A PCI address, `domain:bus:device.function`, compared by value (Vulkan writes the domain
/// with 4 hex digits, NVML with 8).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PciAddress {
    /// PCI domain.
    pub domain: u32,
    /// Bus.
    pub bus: u8,
    /// Device.
    pub device: u8,
    /// Function.
    pub function: u8,
}

impl PciAddress {
    /// Parses `0000:03:00.0` or `00000000:03:00.0`; `None` for anything else (an empty string
    /// where the driver reports none).
    ///
    /// ```
    /// use suanli::telemetry::PciAddress;
    /// let a = PciAddress::parse("0000:03:00.0").unwrap();
    /// assert_eq!(Some(a), PciAddress::parse("00000000:03:00.0"));
    /// assert_eq!(a.bus, 3);
    /// assert!(PciAddress::parse("").is_none());
    /// ```
    pub fn parse(s: &str) -> Option<PciAddress> {
        let mut parts = s.trim().split(':');
        let (d, b, rest) = (parts.next()?, parts.next()?, parts.next()?);
        if parts.next().is_some() {
            return None;
        }
        let (dev, func) = rest.split_once('.')?;
        Some(PciAddress {
            domain: u32::from_str_radix(d, 16).ok()?,
            bus: u8::from_str_radix(b, 16).ok()?,
            device: u8::from_str_radix(dev, 16).ok()?,
            function: u8::from_str_radix(func, 16).ok()?,
        })
    }

    /// NVML's spelling, `00000000:03:00.0`.
    pub fn nvml_string(&self) -> String {
        format!(
            "{:08x}:{:02x}:{:02x}.{:x}",
            self.domain, self.bus, self.device, self.function
        )
    }
}

/// The default sysfs root of DRM cards.
pub const DRM_ROOT: &str = "/sys/class/drm";

/// The sensor for an adapter, chosen at run time.
pub fn sensor_for(desc: &AdapterDesc) -> Box<dyn Sensor> {
    sensor_in(Path::new(DRM_ROOT), desc)
}

/// [`sensor_for`] with the DRM cards looked up under `drm_root` (tests point it at a fixture
/// tree).
pub fn sensor_in(drm_root: &Path, desc: &AdapterDesc) -> Box<dyn Sensor> {
    if !desc.kind.is_hardware() {
        return Box::new(NoSensor("none (software adapter)".into()));
    }
    let pci = PciAddress::parse(&desc.pci_bus_id);
    #[cfg(feature = "nvml")]
    if desc.vendor == Vendor::Nvidia {
        match pci.map(nvml::open) {
            Some(Ok(s)) => return Box::new(s),
            Some(Err(e)) => log::debug!("NVML for {}: {e}", desc.name),
            None => log::debug!("{}: no PCI address, so no NVML match", desc.name),
        }
    }
    let cards = sysfs::cards(drm_root);
    let by_pci = pci.and_then(|a| cards.iter().find(|c| c.pci == Some(a)));
    let by_id = || {
        let same: Vec<_> = cards
            .iter()
            .filter(|c| c.vendor_id == desc.vendor_id && c.device_id == desc.device_id)
            .collect();
        match same.as_slice() {
            [one] => Some(*one),
            [] => None,
            _ => {
                log::debug!(
                    "{}: {} cards share its ids and it has no PCI address; not guessing",
                    desc.name,
                    same.len()
                );
                None
            }
        }
    };
    match by_pci.or_else(by_id) {
        Some(card) => Box::new(SysfsSensor::new(card.clone())),
        None => Box::new(NoSensor(match desc.vendor {
            #[cfg(feature = "nvml")]
            Vendor::Nvidia => format!(
                "none (NVML: {})",
                nvml::status()
                    .err()
                    .unwrap_or_else(|| "no matching device".into())
            ),
            _ => "none".into(),
        })),
    }
}

/// This process's resident set size in bytes (Linux `/proc/self/status`; `None` elsewhere):
/// the host-side half of "does a long run grow?".
pub fn process_rss() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// One adapter's row of a snapshot.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    /// The adapter's spec (`gpu:0`, `cpu:0`).
    pub spec: String,
    /// Adapter name.
    pub name: String,
    /// `discrete`, `integrated`, `software` …
    pub kind: String,
    /// Backend.
    pub backend: String,
    /// PCI address as the driver reports it (may be empty).
    pub pci_bus_id: String,
    /// The sample.
    pub reading: Reading,
}

/// Every visible adapter with its sensor, for repeated sampling (the `monitor` example).
pub struct Monitor {
    rows: Vec<(AdapterDesc, Box<dyn Sensor>)>,
}

impl Monitor {
    /// Finds the adapters ([`crate::devices`]) and their sensors.
    pub fn new() -> Result<Monitor> {
        Ok(Monitor::with_adapters(
            crate::devices()?,
            Path::new(DRM_ROOT),
        ))
    }

    /// A monitor over given adapters, DRM cards looked up under `drm_root`.
    pub fn with_adapters(adapters: Vec<AdapterDesc>, drm_root: &Path) -> Monitor {
        Monitor {
            rows: adapters
                .into_iter()
                .map(|d| {
                    let s = sensor_in(drm_root, &d);
                    (d, s)
                })
                .collect(),
        }
    }

    /// Samples every adapter.
    pub fn sample(&mut self) -> Vec<Row> {
        self.rows
            .iter_mut()
            .map(|(d, s)| Row {
                spec: d.spec().to_string(),
                name: d.name.clone(),
                kind: d.kind.to_string(),
                backend: d.backend.to_string(),
                pci_bus_id: d.pci_bus_id.clone(),
                reading: s.read(),
            })
            .collect()
    }
}

/// One sample of every adapter.
pub fn snapshot() -> Result<Vec<(AdapterDesc, Reading)>> {
    let adapters = crate::devices()?;
    Ok(adapters
        .into_iter()
        .map(|d| {
            let r = sensor_for(&d).read();
            (d, r)
        })
        .collect())
}

/// The monitor's table for a sample.
pub fn format_rows(rows: &[Row]) -> String {
    let mut s = format!(
        "{:<9} {:<36} {:>6} {:>16} {:>7} {:>11} {:>14} {:>9}  {}\n",
        "device", "name", "util", "memory", "temp", "power", "clocks", "throttled", "source"
    );
    for r in rows {
        let c = r.reading.columns();
        let mut name = r.name.clone();
        if name.chars().count() > 36 {
            name = name.chars().take(35).collect::<String>() + "…";
        }
        s.push_str(&format!(
            "{:<9} {:<36} {:>6} {:>16} {:>7} {:>11} {:>14} {:>9}  {}\n",
            r.spec, name, c[0], c[1], c[2], c[3], c[4], c[5], r.reading.source
        ));
    }
    s
}

/// What a [`DeviceWatch`] noticed at the end of an epoch.
#[derive(Clone, Debug, PartialEq)]
pub enum WatchEvent {
    /// The sensor reports clocks reduced for thermal or power reasons.
    Throttled,
    /// The temperature is at or above the watch's threshold.
    Hot {
        /// °C.
        temperature_c: f64,
    },
    /// The device's queue was busy for less than the threshold share of the epoch.
    LowUtilisation {
        /// Busy fraction, 0..1.
        fraction: f64,
    },
}

/// Per-epoch telemetry for training: reads the device's sensor, logs it (`log::info`), and
/// warns (`log::warn`) when the device is throttling, hot, or idle for much of the epoch
/// (work starved by the host). Use it from [`crate::nn::FitOptions::on_epoch_end`]:
///
/// ```no_run
/// # use suanli::nn::{FitOptions, History};
/// # let dev = suanli::Device::open("auto")?;
/// let mut watch = suanli::telemetry::DeviceWatch::new(&dev);
/// let mut on_epoch = |epoch: usize, h: &History| {
///     watch.epoch_end(epoch, h);
///     true // keep training
/// };
/// let opts = FitOptions { on_epoch_end: Some(&mut on_epoch), ..Default::default() };
/// # Ok::<(), suanli::Error>(())
/// ```
pub struct DeviceWatch {
    name: String,
    sensor: Box<dyn Sensor>,
    /// Warn at or above this temperature (°C; default 85).
    pub hot_c: f64,
    /// Warn below this busy fraction (default 0.5).
    pub low_utilisation: f64,
    /// The last epoch's reading.
    pub last: Option<Reading>,
}

impl DeviceWatch {
    /// A watch over `device`'s sensor.
    pub fn new(device: &crate::Device) -> DeviceWatch {
        DeviceWatch::with_sensor(device.name(), sensor_for(device.info()))
    }

    /// A watch over a given sensor (tests, or a sensor chosen by hand).
    pub fn with_sensor(name: &str, sensor: Box<dyn Sensor>) -> DeviceWatch {
        DeviceWatch {
            name: name.to_string(),
            sensor,
            hot_c: 85.0,
            low_utilisation: 0.5,
            last: None,
        }
    }

    /// Reads the sensor after `epoch` (0-based) and checks it and the epoch's utilisation
    /// from `history`; returns what it warned about.
    pub fn epoch_end(&mut self, epoch: usize, history: &crate::nn::History) -> Vec<WatchEvent> {
        let r = self.sensor.read();
        let mut events = Vec::new();
        if r.throttled == Some(true) {
            events.push(WatchEvent::Throttled);
        }
        if let Some(t) = r.temperature_c.filter(|t| *t >= self.hot_c) {
            events.push(WatchEvent::Hot { temperature_c: t });
        }
        if let Some(&u) = history.utilisation.last() {
            if u < self.low_utilisation {
                events.push(WatchEvent::LowUtilisation { fraction: u });
            }
        }
        let util = history
            .utilisation
            .last()
            .map_or("n/a".into(), |u| format!("{:.0}%", 100.0 * u));
        log::info!(
            "epoch {} on {}: queue busy {util}; sensor ({}) {}",
            epoch + 1,
            self.name,
            r.source,
            r.summary()
        );
        for e in &events {
            match e {
                WatchEvent::Throttled => log::warn!(
                    "{} is throttling (clocks reduced for thermal or power reasons)",
                    self.name
                ),
                WatchEvent::Hot { temperature_c } => log::warn!(
                    "{} runs at {temperature_c:.0}°C (threshold {:.0}°C)",
                    self.name,
                    self.hot_c
                ),
                WatchEvent::LowUtilisation { fraction } => log::warn!(
                    "{} was busy only {:.0}% of epoch {}: the host is not feeding it fast enough",
                    self.name,
                    100.0 * fraction,
                    epoch + 1
                ),
            }
        }
        self.last = Some(r);
        events
    }
}
