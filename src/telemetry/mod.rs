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

pub mod exposition;
pub mod governor;
#[cfg(feature = "nvml")]
pub mod nvml;
pub mod power_limit;
pub mod processes;
pub mod reading;
pub mod simulated;
pub mod sysfs;

use std::path::Path;

use serde::Serialize;

use crate::device::adapter::AdapterDesc;
#[cfg(feature = "nvml")]
use crate::device::adapter::Vendor;
use crate::error::Result;
use crate::runtime::Device;

pub use governor::{Governor, GovernorReport, Pace, RealTime, Tuning};
pub use processes::{drm_processes, DeviceProcess};
pub use reading::{Clock, NoSensor, PciAddress, Reading, Sensor};
pub use simulated::{SharedThermal, SimulatedSensor, Thermal, ThermalSensor, VirtualTime};
pub use sysfs::{energy_delta, SysfsSensor};

/// The default sysfs root of DRM cards.
pub const DRM_ROOT: &str = "/sys/class/drm";

/// The sensor for an adapter, chosen at run time.
pub fn sensor_for(desc: &AdapterDesc) -> Box<dyn Sensor> {
    sensor_in(Path::new(DRM_ROOT), desc)
}

/// [`sensor_for`] with the DRM cards looked up under `drm_root` (tests point it at a fixture
/// tree).
pub fn sensor_in(drm_root: &Path, desc: &AdapterDesc) -> Box<dyn Sensor> {
    sensor_in_with_clock(drm_root, desc, Box::new(std::time::Instant::now))
}

/// [`sensor_in`] with the clock rates are measured by.
pub fn sensor_in_with_clock(drm_root: &Path, desc: &AdapterDesc, clock: Clock) -> Box<dyn Sensor> {
    if !desc.kind.is_hardware() {
        return Box::new(NoSensor("none (software adapter)".into()));
    }
    #[cfg(feature = "nvml")]
    let pci = PciAddress::parse(&desc.pci_bus_id);
    #[cfg(feature = "nvml")]
    if desc.vendor == Vendor::Nvidia {
        match pci.map(nvml::open) {
            Some(Ok(s)) => return Box::new(s),
            Some(Err(e)) => log::debug!("NVML for {}: {e}", desc.name),
            None => log::debug!("{}: no PCI address, so no NVML match", desc.name),
        }
    }
    match card_for(drm_root, desc) {
        Some(card) => Box::new(SysfsSensor::new(card, clock)),
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

/// The DRM card of a hardware adapter under `drm_root`: by PCI address, else by vendor and
/// device id when exactly one card has them (never by enumeration order).
pub(crate) fn card_for(drm_root: &Path, desc: &AdapterDesc) -> Option<sysfs::Card> {
    let pci = PciAddress::parse(&desc.pci_bus_id);
    let cards = sysfs::cards(drm_root);
    if let Some(c) = pci.and_then(|a| cards.iter().find(|c| c.pci == Some(a))) {
        return Some(c.clone());
    }
    let same: Vec<_> = cards
        .iter()
        .filter(|c| c.vendor_id == desc.vendor_id && c.device_id == desc.device_id)
        .collect();
    match same.as_slice() {
        [one] => Some((*one).clone()),
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
    /// Vendor (`NVIDIA`, `AMD`, `Intel`, `Apple`, `Mesa`, …).
    pub vendor: String,
    /// `discrete`, `integrated`, `software` …
    pub kind: String,
    /// Backend.
    pub backend: String,
    /// PCI address as the driver reports it (may be empty).
    pub pci_bus_id: String,
    /// The sample.
    pub reading: Reading,
}

/// Every visible adapter with its sensor, for repeated sampling (`suanli-smi`). Each row keeps the adapter's identity; [`Monitor::sample`] fills the reading.
pub struct Monitor {
    rows: Vec<(Row, Box<dyn Sensor>)>,
}

impl Monitor {
    /// Finds the adapters ([`crate::devices`]) and their sensors.
    pub fn new() -> Result<Monitor> {
        Ok(Monitor::with_adapters(
            crate::device::devices()?,
            Path::new(DRM_ROOT),
        ))
    }

    /// A monitor over given adapters, DRM cards looked up under `drm_root`.
    pub fn with_adapters(adapters: Vec<AdapterDesc>, drm_root: &Path) -> Monitor {
        Monitor::with_sensors(
            adapters
                .into_iter()
                .map(|d| {
                    let s = sensor_in(drm_root, &d);
                    (Row::identity(&d), s)
                })
                .collect(),
        )
    }

    /// A monitor over given identities and sensors (simulated devices, fixtures).
    pub fn with_sensors(rows: Vec<(Row, Box<dyn Sensor>)>) -> Monitor {
        Monitor { rows }
    }

    /// `n` simulated devices (`sim:0`…) whose sensors report every field
    /// ([`SimulatedSensor`]): for trying an exporter or a dashboard without hardware, and for
    /// timing a scrape.
    pub fn simulated(n: usize) -> Monitor {
        Monitor::with_sensors(
            (0..n)
                .map(|i| {
                    let row = Row {
                        spec: format!("sim:{i}"),
                        name: format!("Simulated GPU {i}"),
                        vendor: "simulated".into(),
                        kind: "simulated".into(),
                        backend: "none".into(),
                        pci_bus_id: String::new(),
                        reading: Reading::unavailable("simulated"),
                    };
                    (row, Box::new(SimulatedSensor::new(i)) as Box<dyn Sensor>)
                })
                .collect(),
        )
    }

    /// Samples every adapter.
    pub fn sample(&mut self) -> Vec<Row> {
        self.rows
            .iter_mut()
            .map(|(id, s)| Row {
                reading: s.read(),
                ..id.clone()
            })
            .collect()
    }
}

impl Row {
    /// An adapter's identity, with an empty reading.
    pub fn identity(d: &AdapterDesc) -> Row {
        Row {
            spec: d.spec().to_string(),
            name: d.name.clone(),
            vendor: d.vendor.to_string(),
            kind: d.kind.to_string(),
            backend: d.backend.to_string(),
            pci_bus_id: d.pci_bus_id.clone(),
            reading: Reading::unavailable(""),
        }
    }
}

/// Everyone using the devices in `rows`: DRM fdinfo for the drivers that write it, and NVML
/// for NVIDIA GPUs (whose driver does not), sorted by device then pid. A device NVML cannot
/// list is logged at debug and left out, as an unreadable process is.
pub fn device_processes(proc_root: &Path, rows: &[Row]) -> Vec<DeviceProcess> {
    let mut all = drm_processes(proc_root);
    #[cfg(feature = "nvml")]
    {
        let nvidia = crate::device::adapter::Vendor::Nvidia.to_string();
        for r in rows.iter().filter(|r| r.vendor == nvidia) {
            let Some(pci) = PciAddress::parse(&r.pci_bus_id) else {
                continue;
            };
            match nvml::processes(pci, proc_root) {
                Ok(ps) => {
                    let new: Vec<_> = ps
                        .into_iter()
                        .filter(|p| {
                            !all.iter()
                                .any(|q| q.pid == p.pid && q.pci_bus_id == p.pci_bus_id)
                        })
                        .collect();
                    all.extend(new);
                }
                Err(e) => log::debug!("{}: {e}", r.spec),
            }
        }
    }
    #[cfg(not(feature = "nvml"))]
    let _ = rows;
    all.sort_by(|a, b| (&a.pci_bus_id, a.pid).cmp(&(&b.pci_bus_id, b.pid)));
    all
}

/// One sample of every adapter.
pub fn snapshot() -> Result<Vec<(AdapterDesc, Reading)>> {
    let adapters = crate::device::devices()?;
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
/// (work starved by the host). Call it from a training callback with the epoch's queue
/// utilisation (`History::utilisation`):
///
/// ```no_run
/// # use suanli::nn::{FitOptions, History};
/// # let dev = suanli::Device::open("auto")?;
/// let mut watch = suanli::telemetry::DeviceWatch::new(&dev);
/// let mut on_epoch = |epoch: usize, h: &History| {
///     watch.epoch_end(epoch, h.utilisation.last().copied());
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
    pub fn new(device: &Device) -> DeviceWatch {
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

    /// Reads the sensor after `epoch` (0-based) and checks it and the epoch's queue
    /// utilisation (a fraction, if measured); returns what it warned about.
    pub fn epoch_end(&mut self, epoch: usize, utilisation: Option<f64>) -> Vec<WatchEvent> {
        let r = self.sensor.read();
        let mut events = Vec::new();
        if r.throttled == Some(true) {
            events.push(WatchEvent::Throttled);
        }
        if let Some(t) = r.temperature_c.filter(|t| *t >= self.hot_c) {
            events.push(WatchEvent::Hot { temperature_c: t });
        }
        if let Some(u) = utilisation.filter(|u| u.is_finite()) {
            if u < self.low_utilisation {
                events.push(WatchEvent::LowUtilisation { fraction: u });
            }
        }
        let util = utilisation
            .filter(|u| u.is_finite())
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
