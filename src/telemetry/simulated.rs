//! A sensor with no hardware behind it: plausible numbers for every field, changing with
//! each read, so an exporter, a dashboard or a scrape's cost can be tried on any machine.

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
