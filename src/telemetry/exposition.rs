//! The Prometheus text exposition format (version 0.0.4): what `suanli-smi --serve` answers
//! on `/metrics`, built here (no dependency: the format is lines of text) so the library can
//! expose training metrics the same way.
//!
//! Conventions followed: base units in the name (`_bytes`, `_celsius`, `_watts`, `_hertz`,
//! `_ratio` for 0..1 fractions, `_seconds`), `_total` on counters, one `# HELP` and
//! `# TYPE` per family, label values escaped. A sensor a device does not have gives no
//! sample at all, never a zero: a missing series reads as "unknown" in Prometheus, a zero as a
//! measurement.

use std::collections::BTreeMap;
use std::fmt::Write;

use crate::telemetry::Row;

/// A family's type line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A value that goes up and down.
    Gauge,
    /// A cumulative count (its name ends in `_total`).
    Counter,
}

/// Text in the exposition format, family by family.
#[derive(Debug, Default)]
pub struct Exposition {
    text: String,
}

/// A sample's labels, in order: `(name, value)`.
pub type Labels = Vec<(&'static str, String)>;

/// `value` as a label value: backslash, double quote and newline escaped.
pub fn escape(value: &str) -> String {
    let mut s = String::with_capacity(value.len());
    for c in value.chars() {
        match c {
            '\\' => s.push_str("\\\\"),
            '"' => s.push_str("\\\""),
            '\n' => s.push_str("\\n"),
            c => s.push(c),
        }
    }
    s
}

/// A sample value as Prometheus reads it (`NaN`, `+Inf`, `-Inf` spelled its way).
fn number(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v.is_infinite() {
        if v > 0.0 { "+Inf" } else { "-Inf" }.into()
    } else {
        format!("{v}")
    }
}

impl Exposition {
    /// An empty exposition.
    pub fn new() -> Exposition {
        Exposition::default()
    }

    /// Appends a family: its help, type and samples (`None` values are left out; a family
    /// with no sample left is left out whole).
    pub fn family(
        &mut self,
        name: &str,
        help: &str,
        kind: Kind,
        samples: &[(Labels, Option<f64>)],
    ) {
        if samples.iter().all(|(_, v)| v.is_none()) {
            return;
        }
        let kind = match kind {
            Kind::Gauge => "gauge",
            Kind::Counter => "counter",
        };
        let _ = writeln!(self.text, "# HELP {name} {help}");
        let _ = writeln!(self.text, "# TYPE {name} {kind}");
        for (labels, v) in samples {
            let Some(v) = v else { continue };
            self.text.push_str(name);
            if !labels.is_empty() {
                self.text.push('{');
                for (i, (k, val)) in labels.iter().enumerate() {
                    if i > 0 {
                        self.text.push(',');
                    }
                    let _ = write!(self.text, "{k}=\"{}\"", escape(val));
                }
                self.text.push('}');
            }
            let _ = writeln!(self.text, " {}", number(*v));
        }
    }

    /// A one-sample family without labels.
    pub fn single(&mut self, name: &str, help: &str, kind: Kind, value: f64) {
        self.family(name, help, kind, &[(Vec::new(), Some(value))]);
    }

    /// The text.
    pub fn finish(self) -> String {
        self.text
    }
}

/// The identity labels of a device's series: `device`, `name`, `vendor`, `backend`, `kind`.
pub fn device_labels(r: &Row) -> Labels {
    vec![
        ("device", r.spec.clone()),
        ("name", r.name.clone()),
        ("vendor", r.vendor.clone()),
        ("backend", r.backend.clone()),
        ("kind", r.kind.clone()),
    ]
}

/// The exporter's own state for a scrape.
#[derive(Clone, Debug, Default)]
pub struct Health {
    /// How long reading every sensor took for this scrape.
    pub scrape_seconds: f64,
    /// Failed sensor reads since the exporter started, by source (`nvml`, `amdgpu sysfs`, …).
    pub sensor_errors: BTreeMap<String, u64>,
}

/// The device families of a sample of `rows`, then the exporter's health.
pub fn render(rows: &[Row], health: &Health) -> String {
    let mut e = Exposition::new();
    e.single(
        "suanli_up",
        "1 while the exporter answers.",
        Kind::Gauge,
        1.0,
    );
    let info: Vec<(Labels, Option<f64>)> = rows
        .iter()
        .map(|r| {
            let mut l = device_labels(r);
            l.push(("pci_bus_id", r.pci_bus_id.clone()));
            l.push(("source", r.reading.source.clone()));
            (l, Some(1.0))
        })
        .collect();
    e.family(
        "suanli_device_info",
        "An adapter suanli sees (always 1); its identity is in the labels.",
        Kind::Gauge,
        &info,
    );
    type Field = fn(&crate::telemetry::reading::Reading) -> Option<f64>;
    let families: [(&str, &str, Field); 9] = [
        (
            "suanli_device_utilization_ratio",
            "Fraction of the last sample period the device was busy (0 to 1).",
            |r| r.utilisation.map(|p| p / 100.0),
        ),
        (
            "suanli_device_memory_used_bytes",
            "Device memory in use.",
            |r| r.memory_used.map(|b| b as f64),
        ),
        (
            "suanli_device_memory_total_bytes",
            "Device memory in total.",
            |r| r.memory_total.map(|b| b as f64),
        ),
        (
            "suanli_device_temperature_celsius",
            "GPU temperature.",
            |r| r.temperature_c,
        ),
        ("suanli_device_power_watts", "Board power draw.", |r| {
            r.power_w
        }),
        (
            "suanli_device_power_limit_watts",
            "The power limit the board enforces.",
            |r| r.power_limit_w,
        ),
        (
            "suanli_device_graphics_clock_hertz",
            "Graphics (shader) clock.",
            |r| r.graphics_clock_mhz.map(|m| m * 1e6),
        ),
        ("suanli_device_memory_clock_hertz", "Memory clock.", |r| {
            r.memory_clock_mhz.map(|m| m * 1e6)
        }),
        (
            "suanli_device_throttled",
            "1 while clocks are reduced for heat or power, 0 when not.",
            |r| r.throttled.map(|t| f64::from(u8::from(t))),
        ),
    ];
    for (name, help, field) in families {
        let samples: Vec<(Labels, Option<f64>)> = rows
            .iter()
            .map(|r| (device_labels(r), field(&r.reading)))
            .collect();
        e.family(name, help, Kind::Gauge, &samples);
    }
    e.single(
        "suanli_devices",
        "Adapters suanli sees.",
        Kind::Gauge,
        rows.len() as f64,
    );
    e.single(
        "suanli_scrape_duration_seconds",
        "Time to read every sensor for this scrape.",
        Kind::Gauge,
        health.scrape_seconds,
    );
    let errors: Vec<(Labels, Option<f64>)> = health
        .sensor_errors
        .iter()
        .map(|(s, n)| (vec![("source", s.clone())], Some(*n as f64)))
        .collect();
    e.family(
        "suanli_sensor_errors_total",
        "Sensor reads that failed (a sensor that exists but could not be read), by source.",
        Kind::Counter,
        &errors,
    );
    e.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_escaped_and_missing_values_leave_no_sample() {
        assert_eq!(escape("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
        let mut e = Exposition::new();
        e.family(
            "x_ratio",
            "help",
            Kind::Gauge,
            &[
                (vec![("device", "a\"".into())], Some(0.5)),
                (vec![("device", "b".into())], None),
            ],
        );
        e.family("empty", "help", Kind::Gauge, &[(Vec::new(), None)]);
        let t = e.finish();
        assert_eq!(
            t,
            "# HELP x_ratio help\n# TYPE x_ratio gauge\nx_ratio{device=\"a\\\"\"} 0.5\n"
        );
        assert_eq!(number(f64::INFINITY), "+Inf");
        assert_eq!(number(1e6), "1000000");
    }
}
