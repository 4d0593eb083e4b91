//! What a sensor reports ([`Reading`]), the [`Sensor`] trait every platform implements, and
//! the PCI addresses adapters and sensors are matched by.

use serde::Serialize;

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
    /// Sensor reads that failed in this sample: a file or call that exists but could not be
    /// read or parsed (a sensor the platform does not have is not an error, just `None`).
    pub errors: u32,
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

    /// The kernel's spelling (sysfs, DRM fdinfo's `drm-pdev`), `0000:03:00.0`.
    pub fn linux_string(&self) -> String {
        format!(
            "{:04x}:{:02x}:{:02x}.{:x}",
            self.domain, self.bus, self.device, self.function
        )
    }

    /// NVML's spelling, `00000000:03:00.0`.
    pub fn nvml_string(&self) -> String {
        format!(
            "{:08x}:{:02x}:{:02x}.{:x}",
            self.domain, self.bus, self.device, self.function
        )
    }
}

/// A clock for sensors that derive rates (power from an energy counter): `Instant::now` in
/// use, a made-up sequence of instants in tests.
pub type Clock = Box<dyn FnMut() -> std::time::Instant + Send>;
