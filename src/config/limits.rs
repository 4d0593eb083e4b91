//! Operating limits per device, for the governor
//! ([`crate::telemetry::governor`]): the hottest a device may run and the most power it may
//! draw, for every device or for one.
//!
//! | limit | environment | `suanli.toml` |
//! |---|---|---|
//! | temperature | `SUANLI_MAX_TEMPERATURE_C=83` or `83,gpu:1=75` | `max_temperature_c = 83`, `[limits."gpu:1"] max_temperature_c = 75` |
//! | power | `SUANLI_POWER_CAP_W=300` or `gpu:0=250` | `power_cap_w = 300`, `[limits."gpu:0"] power_cap_w = 250` |
//!
//! A device's limit is the most specific value of the first source that sets it: the API,
//! then the environment, then the file; within a source, the device's own entry beats the
//! value for every device. Limits that no device can meet are refused here (a temperature
//! below 30°C, which no GPU reaches even idle, or above 150°C; a power cap of 0 W or above
//! 5 kW); one a particular device cannot meet (below what it draws idle) is a warning from
//! the governor, which reads the device.

use std::collections::{BTreeMap, HashMap};
use std::fmt;

use crate::error::{Error, Result};

/// The environment variable of the temperature limit.
pub const TEMPERATURE_VAR: &str = "SUANLI_MAX_TEMPERATURE_C";
/// The environment variable of the power cap.
pub const POWER_VAR: &str = "SUANLI_POWER_CAP_W";

/// The range a temperature limit must lie in, °C: no GPU idles below 30°C, and none runs
/// above 150°C.
pub const TEMPERATURE_RANGE: (f64, f64) = (30.0, 150.0);
/// The range a power cap must lie in, W.
pub const POWER_RANGE: (f64, f64) = (1.0, 5000.0);

/// One device's limits (`None`: no limit).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Limits {
    /// The temperature the device should stay at or below, °C.
    pub max_temperature_c: Option<f64>,
    /// The board power the device should stay at or below, W.
    pub power_cap_w: Option<f64>,
}

impl Limits {
    /// No limit at all.
    pub fn is_empty(&self) -> bool {
        self.max_temperature_c.is_none() && self.power_cap_w.is_none()
    }

    /// Each field of `self`, else of `other`.
    pub fn or(self, other: Limits) -> Limits {
        Limits {
            max_temperature_c: self.max_temperature_c.or(other.max_temperature_c),
            power_cap_w: self.power_cap_w.or(other.power_cap_w),
        }
    }

    /// Refuses limits no device can meet (see the module docs); `source` names where they
    /// came from for the error.
    pub fn check(&self, source: &str) -> Result<()> {
        if let Some(t) = self.max_temperature_c {
            check_value(TEMPERATURE_VAR, "°C", t, TEMPERATURE_RANGE, source)?;
        }
        if let Some(p) = self.power_cap_w {
            check_value(POWER_VAR, "W", p, POWER_RANGE, source)?;
        }
        Ok(())
    }
}

impl fmt::Display for Limits {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts = Vec::new();
        if let Some(t) = self.max_temperature_c {
            parts.push(format!("≤ {t}°C"));
        }
        if let Some(p) = self.power_cap_w {
            parts.push(format!("≤ {p} W"));
        }
        if parts.is_empty() {
            f.write_str("no limits")
        } else {
            f.write_str(&parts.join(", "))
        }
    }
}

fn check_value(key: &str, unit: &str, v: f64, (lo, hi): (f64, f64), source: &str) -> Result<()> {
    if v.is_finite() && v >= lo && v <= hi {
        return Ok(());
    }
    let why = if key == TEMPERATURE_VAR && v.is_finite() && v < lo && v > -273.15 {
        format!(
            "a temperature from {lo} to {hi} {unit}: no GPU cools below {lo} {unit} even idle, so the limit could never be met"
        )
    } else {
        format!("a number from {lo} to {hi} {unit}")
    };
    Err(Error::Config {
        key: key.into(),
        value: v.to_string(),
        source_name: source.into(),
        reason: format!("expected {why}"),
    })
}

/// Limits for every device and per device (see the module docs).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LimitTable {
    /// For every device.
    pub all: Limits,
    /// Per device, by spec (`gpu:0`, `cpu:0`); these beat `all`.
    pub devices: BTreeMap<String, Limits>,
}

impl LimitTable {
    /// The same limits for every device.
    pub fn for_all(limits: Limits) -> LimitTable {
        LimitTable {
            all: limits,
            devices: BTreeMap::new(),
        }
    }

    /// Sets `spec`'s own limits (a spec naming one device: `gpu:N` or `cpu:N`).
    pub fn set(&mut self, spec: &str, limits: Limits) -> Result<()> {
        let key = device_key(spec, "LimitTable::set")?;
        limits.check("the API")?;
        self.devices.insert(key, limits);
        Ok(())
    }

    /// No limit for any device.
    pub fn is_empty(&self) -> bool {
        self.all.is_empty() && self.devices.values().all(Limits::is_empty)
    }

    /// The limits of the device whose spec is `spec` (`gpu:0`, `cpu:0`, as
    /// `DeviceSpec`'s `Display` writes it): its own entry's fields, else `all`'s.
    pub fn for_device(&self, spec: &str) -> Limits {
        let own = device_key(spec, "")
            .ok()
            .and_then(|k| self.devices.get(&k).copied())
            .unwrap_or_default();
        own.or(self.all)
    }

    /// Each device's limits from `self`, else from `lower` (a source of lower precedence),
    /// field by field.
    pub fn over(&self, lower: &LimitTable) -> LimitTable {
        let mut devices = BTreeMap::new();
        for key in self.devices.keys().chain(lower.devices.keys()) {
            devices.insert(key.clone(), self.for_device(key).or(lower.for_device(key)));
        }
        LimitTable {
            all: self.all.or(lower.all),
            devices,
        }
    }
}

/// A spec naming one device by index, normalised as `DeviceSpec` writes it (`GPU:1` →
/// `gpu:1`, `software:0` → `cpu:0`).
pub fn device_key(spec: &str, source: &str) -> Result<String> {
    let t = spec.trim().trim_start_matches('/').to_ascii_lowercase();
    let (kind, index) = t.split_once(':').unwrap_or((t.as_str(), "0"));
    let kind = match kind.trim() {
        "gpu" => Some("gpu"),
        "cpu" | "software" => Some("cpu"),
        _ => None,
    };
    match (kind, index.trim().parse::<usize>()) {
        (Some(k), Ok(i)) => Ok(format!("{k}:{i}")),
        _ => Err(Error::Config {
            key: "limits".into(),
            value: spec.into(),
            source_name: source.into(),
            reason: "expected a device such as gpu:0 or cpu:0".into(),
        }),
    }
}

/// The limits of the environment (`SUANLI_MAX_TEMPERATURE_C`, `SUANLI_POWER_CAP_W`).
pub fn from_env(env: &HashMap<String, String>) -> Result<LimitTable> {
    let mut table = LimitTable::default();
    for (var, temperature) in [(TEMPERATURE_VAR, true), (POWER_VAR, false)] {
        let Some(text) = env.get(var).filter(|t| !t.trim().is_empty()) else {
            continue;
        };
        for item in text.split(',').map(str::trim) {
            let bad = |reason: String| Error::Config {
                key: var.into(),
                value: text.clone(),
                source_name: "environment".into(),
                reason,
            };
            let (spec, value) = match item.rsplit_once('=') {
                Some((s, v)) => (Some(s.trim()), v.trim()),
                None => (None, item),
            };
            let v: f64 = value.parse().map_err(|_| {
                bad(format!(
                    "expected a number or device=number items separated by commas (83 or 83,gpu:1=75), found {item:?}"
                ))
            })?;
            let l = if temperature {
                Limits {
                    max_temperature_c: Some(v),
                    ..Limits::default()
                }
            } else {
                Limits {
                    power_cap_w: Some(v),
                    ..Limits::default()
                }
            };
            l.check("environment")?;
            match spec {
                None => table.all = l.or(table.all),
                Some(s) => {
                    let key = device_key(s, "environment")?;
                    let e = table.devices.entry(key).or_default();
                    *e = l.or(*e);
                }
            }
        }
    }
    Ok(table)
}

/// One `[limits."gpu:0"]` table of the file.
#[derive(serde::Deserialize, Default, Clone, Copy)]
#[serde(deny_unknown_fields)]
pub(crate) struct FileLimits {
    max_temperature_c: Option<f64>,
    power_cap_w: Option<f64>,
}

/// The limits of the file: its top-level values and its `[limits."spec"]` tables.
pub(crate) fn from_file(
    all: FileLimits,
    devices: Option<&BTreeMap<String, FileLimits>>,
    file_name: &str,
) -> Result<LimitTable> {
    let conv = |f: FileLimits| Limits {
        max_temperature_c: f.max_temperature_c,
        power_cap_w: f.power_cap_w,
    };
    let mut table = LimitTable::for_all(conv(all));
    table.all.check(file_name)?;
    for (spec, l) in devices.into_iter().flatten() {
        let l = conv(*l);
        l.check(file_name)?;
        table.devices.insert(device_key(spec, file_name)?, l);
    }
    Ok(table)
}

impl FileLimits {
    /// The top-level values of the file.
    pub(crate) fn new(max_temperature_c: Option<f64>, power_cap_w: Option<f64>) -> FileLimits {
        FileLimits {
            max_temperature_c,
            power_cap_w,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn environment_sets_every_device_and_single_ones() {
        let t = from_env(&env(&[
            (TEMPERATURE_VAR, "83, GPU:1=75"),
            (POWER_VAR, "gpu:0=250"),
        ]))
        .unwrap();
        let g0 = t.for_device("gpu:0");
        let g1 = t.for_device("gpu:1");
        assert_eq!(g0.max_temperature_c, Some(83.0));
        assert_eq!(g0.power_cap_w, Some(250.0));
        assert_eq!(g1.max_temperature_c, Some(75.0));
        assert_eq!(g1.power_cap_w, None);
    }

    #[test]
    fn limits_no_device_can_meet_are_refused_with_the_reason() {
        for (var, v) in [
            (TEMPERATURE_VAR, "-5"),
            (TEMPERATURE_VAR, "20"),
            (TEMPERATURE_VAR, "NaN"),
            (TEMPERATURE_VAR, "400"),
            (POWER_VAR, "0"),
            (POWER_VAR, "-100"),
            (POWER_VAR, "hot"),
            (TEMPERATURE_VAR, "vulkan:0=80"),
        ] {
            let e = from_env(&env(&[(var, v)])).unwrap_err().to_string();
            assert!(e.contains(var) || e.contains("limits"), "{v}: {e}");
            assert!(e.contains("expected"), "{v}: {e}");
        }
        let e = from_env(&env(&[(TEMPERATURE_VAR, "20")]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("never be met"), "{e}");
    }

    #[test]
    fn a_higher_source_beats_a_lower_one_field_by_field() {
        let api = LimitTable::for_all(Limits {
            max_temperature_c: Some(70.0),
            power_cap_w: None,
        });
        let mut file = LimitTable::for_all(Limits {
            max_temperature_c: Some(90.0),
            power_cap_w: Some(300.0),
        });
        file.set(
            "gpu:1",
            Limits {
                max_temperature_c: None,
                power_cap_w: Some(200.0),
            },
        )
        .unwrap();
        let t = api.over(&file);
        assert_eq!(
            t.for_device("gpu:0"),
            Limits {
                max_temperature_c: Some(70.0),
                power_cap_w: Some(300.0)
            }
        );
        assert_eq!(
            t.for_device("gpu:1"),
            Limits {
                max_temperature_c: Some(70.0),
                power_cap_w: Some(200.0)
            }
        );
    }
}
