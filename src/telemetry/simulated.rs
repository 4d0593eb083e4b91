//! A sensor with no hardware behind it: plausible numbers for every field, changing with
//! each read, so an exporter, a dashboard or a scrape's cost can be tried on any machine.

use crate::telemetry::governor::Pace;
use crate::telemetry::reading::{Reading, Sensor};

/// Readings of a made-up 80 GiB, 700 W GPU: utilisation, memory, temperature, power and
/// clocks follow slow waves offset by the device's index; every 11th read is throttled.
pub struct SimulatedSensor {
    index: usize,
    reads: u64,
}

impl SimulatedSensor {
    /// The sensor of simulated device `index`.
    pub fn new(index: usize) -> SimulatedSensor {
        SimulatedSensor { index, reads: 0 }
    }
}

impl Sensor for SimulatedSensor {
    fn source(&self) -> String {
        "simulated".into()
    }

    fn read(&mut self) -> Reading {
        self.reads += 1;
        let t = self.reads as f64 * 0.3 + self.index as f64;
        let load = 0.5 + 0.45 * t.sin();
        let total = 80u64 << 30;
        Reading {
            source: "simulated".into(),
            utilisation: Some(100.0 * load),
            memory_used: Some((total as f64 * (0.2 + 0.5 * load)) as u64),
            memory_total: Some(total),
            temperature_c: Some(35.0 + 45.0 * load),
            power_w: Some(80.0 + 600.0 * load),
            power_limit_w: Some(700.0),
            graphics_clock_mhz: Some(1980.0 - 400.0 * load),
            memory_clock_mhz: Some(3201.0),
            throttled: Some(self.reads.is_multiple_of(11)),
            errors: 0,
        }
    }
}

/// A simulated device whose temperature follows its load, for testing the governor
/// ([`crate::telemetry::governor`]) without hardware or waiting: a first-order thermal model
/// (the temperature moves exponentially, with time constant `tau_s`, towards
/// `idle_c + (full_c − idle_c) × load`) and a board power of `idle_w + (full_w − idle_w) ×
/// load`. Time passes only through [`Thermal::run`], so tests drive it with an injected clock.
#[derive(Clone, Debug)]
pub struct Thermal {
    /// Temperature at rest, °C (the room and the fans set it).
    pub idle_c: f64,
    /// Temperature it would settle at under full load, °C.
    pub full_c: f64,
    /// Thermal time constant, seconds.
    pub tau_s: f64,
    /// Power at rest, W.
    pub idle_w: f64,
    /// Power under full load, W.
    pub full_w: f64,
    /// The temperature now, °C.
    pub temperature_c: f64,
    /// Energy since the sensor last read it, J, and over how many seconds.
    energy: (f64, f64),
    /// The last read's average power, W, for a read with no time since the one before.
    last_power: f64,
}

impl Thermal {
    /// A device at rest (`temperature_c = idle_c`).
    pub fn new(idle_c: f64, full_c: f64, tau_s: f64, idle_w: f64, full_w: f64) -> Thermal {
        Thermal {
            idle_c,
            full_c,
            tau_s,
            idle_w,
            full_w,
            temperature_c: idle_c,
            energy: (0.0, 0.0),
            last_power: idle_w,
        }
    }

    /// `seconds` pass with the device busy a fraction `load` (0..1) of them.
    pub fn run(&mut self, seconds: f64, load: f64) {
        if seconds <= 0.0 {
            return;
        }
        let load = load.clamp(0.0, 1.0);
        let target = self.idle_c + (self.full_c - self.idle_c) * load;
        let k = (-seconds / self.tau_s.max(1e-9)).exp();
        self.temperature_c = target + (self.temperature_c - target) * k;
        let power = self.idle_w + (self.full_w - self.idle_w) * load;
        self.energy.0 += power * seconds;
        self.energy.1 += seconds;
    }

    /// What a sensor reads now: the temperature in whole degrees (as real sensors report it)
    /// and the average power since the last read (as NVML and hwmon average it).
    pub fn reading(&mut self) -> Reading {
        if self.energy.1 > 0.0 {
            self.last_power = self.energy.0 / self.energy.1;
        }
        self.energy = (0.0, 0.0);
        Reading {
            source: "simulated thermal".into(),
            temperature_c: Some(self.temperature_c.round()),
            power_w: Some(self.last_power),
            power_limit_w: Some(self.full_w),
            ..Reading::default()
        }
    }
}

/// A handle to a simulated [`Thermal`] device shared between its sensor and the test (or
/// the [`crate::telemetry::governor::Pace`]) that drives its time.
pub type SharedThermal = std::sync::Arc<std::sync::Mutex<Thermal>>;

/// The sensor of a simulated [`Thermal`] device.
pub struct ThermalSensor(pub SharedThermal);

impl Sensor for ThermalSensor {
    fn source(&self) -> String {
        "simulated thermal".into()
    }

    fn read(&mut self) -> Reading {
        match self.0.lock() {
            Ok(mut t) => t.reading(),
            Err(_) => Reading {
                errors: 1,
                ..Reading::unavailable("simulated thermal")
            },
        }
    }
}

/// Virtual time for the governor's tests: simulated [`Thermal`] devices advance only when
/// this clock does, so a test covers minutes of heating in microseconds and never sleeps.
/// Clones share the clock.
#[derive(Clone)]
pub struct VirtualTime {
    state: std::sync::Arc<std::sync::Mutex<(std::time::Instant, Vec<SharedThermal>)>>,
    per_read: std::time::Duration,
}

impl VirtualTime {
    /// A clock over `devices`. Each read of the clock ([`Pace::now`]) first lets `per_read`
    /// pass with every device fully busy: with a nonzero `per_read`, code that reads the
    /// clock around its work (training's chunks) runs the devices for that long per read;
    /// with zero, time passes only through [`VirtualTime::advance`] and pauses.
    pub fn new(devices: Vec<SharedThermal>, per_read: std::time::Duration) -> VirtualTime {
        VirtualTime {
            state: std::sync::Arc::new(std::sync::Mutex::new((std::time::Instant::now(), devices))),
            per_read,
        }
    }

    /// Lets `d` pass with device `i` busy a fraction `loads[i]` of it (missing loads: 0).
    pub fn advance(&self, d: std::time::Duration, loads: &[f64]) {
        if let Ok(mut s) = self.state.lock() {
            s.0 += d;
            for (i, t) in s.1.iter().enumerate() {
                if let Ok(mut t) = t.lock() {
                    t.run(d.as_secs_f64(), loads.get(i).copied().unwrap_or(0.0));
                }
            }
        }
    }

    /// The virtual instant now, without advancing.
    pub fn peek(&self) -> std::time::Instant {
        self.state
            .lock()
            .map_or_else(|_| std::time::Instant::now(), |s| s.0)
    }
}

impl Pace for VirtualTime {
    fn now(&mut self) -> std::time::Instant {
        if !self.per_read.is_zero() {
            let n = self.state.lock().map_or(0, |s| s.1.len());
            self.advance(self.per_read, &vec![1.0; n]);
        }
        self.peek()
    }

    fn sleep(&mut self, d: std::time::Duration) {
        self.advance(d, &[]);
    }
}
