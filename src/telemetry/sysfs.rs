//! AMD and Intel (and any other DRM driver's) telemetry from Linux sysfs, read directly.
//!
//! Layout read (all optional; a missing or unreadable file gives `None`, and an unreadable
//! or unparseable one also counts in [`Reading::errors`]):
//! ```text
//! /sys/class/drm/cardN/device/uevent               DRIVER=, PCI_ID=VVVV:DDDD, PCI_SLOT_NAME=
//! /sys/class/drm/cardN/device/gpu_busy_percent     amdgpu: utilisation, %
//! /sys/class/drm/cardN/device/mem_info_vram_used   amdgpu: bytes (and mem_info_vram_total)
//! /sys/class/drm/cardN/device/hwmon/hwmonM/
//!     temp1_input (m°C), power1_average | power1_input (µW), power1_cap | power1_max (µW),
//!     energy1_input (µJ; i915/xe: power from its rate), freq1_input / freq2_input (Hz; amdgpu
//!     shader and memory clocks)
//! /sys/class/drm/cardN/gt_act_freq_mhz             i915: actual GT clock
//! /sys/class/drm/cardN/gt/gt0/throttle_reason_status           i915: 1 while throttled
//! /sys/class/drm/cardN/device/tile0/gt0/freq0/act_freq         xe: actual GT clock
//! /sys/class/drm/cardN/device/tile0/gt0/freq0/throttle/status  xe: 1 while throttled
//! ```
//! Nothing here links a GPL library: these are plain files.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::telemetry::reading::{Clock, PciAddress, Reading, Sensor};

/// The DRM cards under `root` (normally `/sys/class/drm`) with their driver, ids and PCI
/// address. Connector entries (`card0-DP-1`) and render nodes are skipped.
pub(crate) fn cards(root: &Path) -> Vec<Card> {
    let Ok(rd) = fs::read_dir(root) else {
        return Vec::new();
    };
    let mut out: Vec<Card> = rd
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().to_string();
            let digits = name.strip_prefix("card")?;
            if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            Card::read(&e.path())
        })
        .collect();
    out.sort_by(|a, b| a.dir.cmp(&b.dir));
    out
}

/// One DRM card's identity.
#[derive(Clone, Debug)]
pub(crate) struct Card {
    pub(crate) dir: PathBuf,
    pub(crate) driver: String,
    pub(crate) vendor_id: u32,
    pub(crate) device_id: u32,
    pub(crate) pci: Option<PciAddress>,
}

impl Card {
    fn read(dir: &Path) -> Option<Card> {
        let uevent = fs::read_to_string(dir.join("device/uevent")).ok()?;
        let mut card = Card {
            dir: dir.to_path_buf(),
            driver: String::new(),
            vendor_id: 0,
            device_id: 0,
            pci: None,
        };
        for line in uevent.lines() {
            if let Some(v) = line.strip_prefix("DRIVER=") {
                card.driver = v.trim().to_string();
            } else if let Some(v) = line.strip_prefix("PCI_ID=") {
                let mut it = v.trim().split(':');
                card.vendor_id = u32::from_str_radix(it.next()?, 16).ok()?;
                card.device_id = u32::from_str_radix(it.next()?, 16).ok()?;
            } else if let Some(v) = line.strip_prefix("PCI_SLOT_NAME=") {
                card.pci = PciAddress::parse(v.trim());
            }
        }
        (card.vendor_id != 0).then_some(card)
    }
}

/// Reads one card's files on every [`Sensor::read`].
pub struct SysfsSensor {
    card: Card,
    hwmon: Option<PathBuf>,
    source: String,
    /// Last energy reading (µJ) and when, for power from the energy counter.
    last_energy: Option<(u64, Instant)>,
    clock: Clock,
}

/// A sensor file's value: `None` when the file is absent (the platform has no such sensor)
/// and also, counted in `errors`, when it exists but cannot be read or parsed.
fn read_val<T: std::str::FromStr>(p: &Path, errors: &mut u32) -> Option<T> {
    match fs::read_to_string(p) {
        Ok(s) => {
            let v = s.trim().parse().ok();
            *errors += u32::from(v.is_none());
            v
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(_) => {
            *errors += 1;
            None
        }
    }
}

/// Energy consumed between two readings of a cumulative counter, in µJ. Counters only grow;
/// a smaller reading means the counter wrapped. Drivers keep it in 32 bits (RAPL-style
/// registers) or 64 bits, so the wrap is taken at 2³² when the old value fits in 32 bits and
/// at 2⁶⁴ otherwise.
///
/// ```
/// use suanli::telemetry::energy_delta;
/// assert_eq!(energy_delta(1_000, 3_500), 2_500);
/// assert_eq!(energy_delta(u32::MAX as u64 - 999, 500), 1_500); // wrapped at 2^32
/// ```
pub fn energy_delta(old: u64, new: u64) -> u64 {
    if new >= old {
        new - old
    } else if old <= u32::MAX as u64 {
        (1u64 << 32) - old + new
    } else {
        u64::MAX - old + new + 1
    }
}

impl SysfsSensor {
    pub(crate) fn new(card: Card, clock: Clock) -> SysfsSensor {
        let hwmon = fs::read_dir(card.dir.join("device/hwmon"))
            .ok()
            .and_then(|rd| {
                let mut v: Vec<PathBuf> = rd.flatten().map(|e| e.path()).collect();
                v.sort();
                v.into_iter().next()
            });
        let source = format!(
            "{} sysfs",
            if card.driver.is_empty() {
                "drm"
            } else {
                &card.driver
            }
        );
        SysfsSensor {
            card,
            hwmon,
            source,
            last_energy: None,
            clock,
        }
    }

    fn power_from_energy(&mut self, hw: &Path, errors: &mut u32) -> Option<f64> {
        let e: u64 = read_val(&hw.join("energy1_input"), errors)?;
        let now = (self.clock)();
        let power = self.last_energy.and_then(|(old, t)| {
            let dt = now.duration_since(t).as_secs_f64();
            (dt > 1e-3).then(|| energy_delta(old, e) as f64 / 1e6 / dt)
        });
        self.last_energy = Some((e, now));
        power
    }
}

impl Sensor for SysfsSensor {
    fn source(&self) -> String {
        self.source.clone()
    }

    fn read(&mut self) -> Reading {
        let dev = self.card.dir.join("device");
        let mut r = Reading::unavailable(&self.source);
        let mut e = 0u32;
        r.utilisation = read_val(&dev.join("gpu_busy_percent"), &mut e);
        r.memory_used = read_val(&dev.join("mem_info_vram_used"), &mut e);
        r.memory_total = read_val(&dev.join("mem_info_vram_total"), &mut e);
        if let Some(hw) = self.hwmon.clone() {
            r.temperature_c = read_val(&hw.join("temp1_input"), &mut e).map(|m: f64| m / 1000.0);
            r.power_w = read_val(&hw.join("power1_average"), &mut e)
                .or_else(|| read_val(&hw.join("power1_input"), &mut e))
                .map(|uw: f64| uw / 1e6);
            if r.power_w.is_none() {
                r.power_w = self.power_from_energy(&hw, &mut e);
            }
            r.power_limit_w = read_val(&hw.join("power1_cap"), &mut e)
                .or_else(|| read_val(&hw.join("power1_max"), &mut e))
                .map(|uw: f64| uw / 1e6);
            r.graphics_clock_mhz =
                read_val(&hw.join("freq1_input"), &mut e).map(|hz: f64| hz / 1e6);
            r.memory_clock_mhz = read_val(&hw.join("freq2_input"), &mut e).map(|hz: f64| hz / 1e6);
        }
        if r.graphics_clock_mhz.is_none() {
            r.graphics_clock_mhz = read_val(&self.card.dir.join("gt_act_freq_mhz"), &mut e)
                .or_else(|| read_val(&dev.join("tile0/gt0/freq0/act_freq"), &mut e));
        }
        r.throttled = read_val(&self.card.dir.join("gt/gt0/throttle_reason_status"), &mut e)
            .or_else(|| read_val(&dev.join("tile0/gt0/freq0/throttle/status"), &mut e))
            .map(|v: u64| v != 0);
        r.errors = e;
        r
    }
}
