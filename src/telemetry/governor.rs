//! The governor: work that adjusts to temperature and power.
//!
//! Each governed device has limits ([`Limits`]: `max_temperature_c`, `power_cap_w`; from the
//! API, `SUANLI_MAX_TEMPERATURE_C` / `SUANLI_POWER_CAP_W` or `suanli.toml`) and a *duty*: the
//! fraction of wall time it may be busy. Training asks the governor after every chunk of
//! steps; while a device's duty is below 1, the chunk is waited for and followed by a pause
//! of `busy × (1 − duty) / duty`, so the device idles that share of the time. In a group of
//! devices a hot device's duty cuts its share of the batch instead (the others take the
//! rows), and only when every device is over its limit does the whole group pause.
//!
//! The duty comes from a proportional-integral controller per limit, read at most once per
//! [`Tuning::interval`]:
//! - the proportional term starts lowering the duty [`Tuning::band_c`] below the limit and
//!   reaches `1 − kp` at the limit, so a device heating towards it slows down *before* it gets
//!   there instead of overshooting;
//! - the integral term trims the duty until the reading sits at the setpoint, `margin` below
//!   the limit, and it stops integrating while the duty is pinned at 1 or at the floor (no
//!   wind-up, so recovery is not delayed);
//! - a power cap scales the duty by how far the draw is from its setpoint (power follows the
//!   duty at once, so no band is needed);
//! - the smaller of the temperature and power duties wins; it never goes below
//!   [`Tuning::min_duty`], so a governed device always makes progress.
//!
//! The gains are small enough that the loop is overdamped for thermal time constants from
//! seconds to minutes (tested on simulated devices, [`crate::telemetry::Thermal`]), so the
//! temperature settles under the limit without the on-off hunting of a threshold rule. Every
//! change of duty is logged (`log::info`) and counted ([`GovernorReport`]); readings the
//! device cannot give, limits it cannot meet and sensors that fail are logged warnings, and
//! the duty then holds rather than guessing.
//!
//! Time is injected ([`Pace`]): training uses [`RealTime`]; tests drive simulated devices
//! with [`crate::telemetry::simulated::VirtualTime`] and never sleep.

use std::time::{Duration, Instant};

use serde::Serialize;

use crate::config::limits::Limits;
use crate::error::Result;
use crate::runtime::Device;
use crate::telemetry::reading::{Reading, Sensor};
use crate::telemetry::sensor_for;

/// The clock and the pause of the governor: real time in use, virtual time in tests.
pub trait Pace: Send {
    /// Now.
    fn now(&mut self) -> Instant;
    /// Lets `d` pass with the governed devices idle.
    fn sleep(&mut self, d: Duration);
}

/// [`Instant::now`] and [`std::thread::sleep`].
pub struct RealTime;

impl Pace for RealTime {
    fn now(&mut self) -> Instant {
        Instant::now()
    }
    fn sleep(&mut self, d: Duration) {
        std::thread::sleep(d);
    }
}

/// The controller's settings (see the module docs); the defaults suit GPUs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Tuning {
    /// Time between sensor reads (default 1 s).
    pub interval: Duration,
    /// The lowest duty (default 0.1).
    pub min_duty: f64,
    /// Temperature: the proportional band below the limit, °C (default 8).
    pub band_c: f64,
    /// Temperature: the setpoint's distance below the limit, °C (default 1.5).
    pub margin_c: f64,
    /// Power: the setpoint's distance below the cap, as a fraction of it (default 0.03).
    pub margin_power: f64,
    /// Duty taken away across the proportional band (default 0.5).
    pub kp: f64,
    /// Integral gain: duty per second per band of error (default 0.02).
    pub ki: f64,
    /// Time constant of the smoothing of readings within a degree, seconds (default 6).
    pub smoothing_s: f64,
}

impl Default for Tuning {
    fn default() -> Tuning {
        Tuning {
            interval: Duration::from_secs(1),
            min_duty: 0.1,
            band_c: 8.0,
            margin_c: 1.5,
            margin_power: 0.03,
            kp: 0.5,
            ki: 0.02,
            smoothing_s: 6.0,
        }
    }
}

/// Duties this close to 1 count as 1: pacing by a percent costs a wait per chunk for
/// nothing.
const FULL: f64 = 0.985;

/// The smallest change of duty the governor makes.
const STEP: f64 = 0.03;

/// How long a device may sit at the lowest duty, still over its limit, before the governor
/// warns that the limit is out of its reach.
const UNREACHABLE_AFTER: f64 = 30.0;

/// One limit's proportional-integral loop, on a smoothed reading: sensors report whole
/// degrees, and a loop on the raw steps would dither the duty at every step.
#[derive(Clone, Copy, Debug, Default)]
struct Loop {
    integral: f64,
    smooth: Option<f64>,
}

impl Loop {
    /// The duty for `value` against `limit`, given the band and margin in the value's units;
    /// integrates over `dt` seconds unless the duty is pinned in the error's direction.
    fn duty(&mut self, value: f64, limit: f64, band: f64, margin: f64, dt: f64, t: &Tuning) -> f64 {
        let a = 1.0 - (-dt / t.smoothing_s.max(1e-9)).exp();
        // Readings within a degree of the smoothed value are averaged (a reading flickering
        // between two whole degrees then reads as the fraction between them); a rise of more
        // is taken at once, since heat is what the loop must not be late for.
        let value = match self.smooth {
            Some(s) if value <= s + 1.0 => s + a * (value - s),
            _ => value,
        };
        self.smooth = Some(value);
        let proportional = t.kp * ((value - (limit - band)) / band).max(0.0);
        let error = (value - (limit - margin)) / band;
        let raw = 1.0 - proportional - self.integral;
        let pinned_high = raw >= 1.0 && error < 0.0;
        let pinned_low = raw <= t.min_duty && error > 0.0;
        if !pinned_high && !pinned_low {
            self.integral = (self.integral + t.ki * error * dt).clamp(-t.kp, 1.0);
        }
        (1.0 - proportional - self.integral).clamp(t.min_duty, 1.0)
    }
}

/// The duty for a power draw of `watts` (averaged since the last read, at duty `duty`)
/// against `cap`. Power follows the duty within one read (no thermal lag), so a
/// proportional band would ring; instead the duty is scaled by how far the draw is from the
/// setpoint, damped (a power of 0.7): with a draw of `idle + k × duty` this converges without
/// overshoot (each step closes the same share of the gap), whatever `idle` and `k` are.
fn power_duty(duty: f64, watts: f64, cap: f64, t: &Tuning) -> f64 {
    let set = cap * (1.0 - t.margin_power);
    if watts <= set && duty >= 1.0 {
        return 1.0;
    }
    (duty * (set / watts.max(1e-9)).powf(0.7)).clamp(t.min_duty, 1.0)
}

/// What the governor did for one device: its limits, last reading, duty and counters.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct GovernorReport {
    /// The device's spec (`gpu:0`).
    pub spec: String,
    /// The device's name.
    pub name: String,
    /// Temperature limit, °C.
    pub max_temperature_c: Option<f64>,
    /// Power cap, W.
    pub power_cap_w: Option<f64>,
    /// The share of time the device may be busy, 0..1.
    pub duty: f64,
    /// Last temperature read, °C.
    pub temperature_c: Option<f64>,
    /// Last power read, W.
    pub power_w: Option<f64>,
    /// Times the duty was lowered.
    pub lowered: u64,
    /// Times the duty was raised.
    pub raised: u64,
    /// Seconds of pause inserted while this device was paced.
    pub paced_seconds: f64,
    /// Seconds the temperature was read above the limit.
    pub over_temperature_seconds: f64,
    /// Seconds the power was read above the cap.
    pub over_power_seconds: f64,
    /// Sensor reads.
    pub samples: u64,
    /// Sensor reads that failed or lacked a limited value.
    pub sensor_errors: u64,
}

/// One governed device.
struct Governed {
    sensor: Box<dyn Sensor>,
    limits: Limits,
    temperature: Loop,
    last: Option<Instant>,
    /// Seconds at the lowest duty while over a limit.
    stuck: f64,
    warned_stuck: bool,
    warned_sensor: bool,
    report: GovernorReport,
}

/// Paces work to keep devices within their limits (see the module docs).
pub struct Governor {
    devices: Vec<Governed>,
    pace: Box<dyn Pace>,
    /// The controller's settings.
    pub tuning: Tuning,
}

impl Default for Governor {
    fn default() -> Governor {
        Governor::new()
    }
}

impl Governor {
    /// A governor with no devices yet, in real time.
    pub fn new() -> Governor {
        Governor::with_pace(Box::new(RealTime))
    }

    /// A governor whose clock and pauses are `pace`'s (virtual time in tests).
    pub fn with_pace(pace: Box<dyn Pace>) -> Governor {
        Governor {
            devices: Vec::new(),
            pace,
            tuning: Tuning::default(),
        }
    }

    /// Governs a device read through `sensor` by `limits`. Limits no device can meet are an
    /// error; one this device cannot enforce or meet (no temperature sensor, a cap above the
    /// board's own limit, already over it) is a logged warning, read from the sensor now.
    pub fn add(
        &mut self,
        spec: &str,
        name: &str,
        mut sensor: Box<dyn Sensor>,
        limits: Limits,
    ) -> Result<()> {
        limits.check("the governor's limits")?;
        let first = sensor.read();
        warn_about(spec, &limits, &first);
        let report = GovernorReport {
            spec: spec.into(),
            name: name.into(),
            max_temperature_c: limits.max_temperature_c,
            power_cap_w: limits.power_cap_w,
            duty: 1.0,
            temperature_c: first.temperature_c,
            power_w: first.power_w,
            ..GovernorReport::default()
        };
        self.devices.push(Governed {
            sensor,
            limits,
            temperature: Loop::default(),
            last: None,
            stuck: 0.0,
            warned_stuck: false,
            warned_sensor: false,
            report,
        });
        Ok(())
    }

    /// A governor over `devices` by their configured limits ([`crate::config::LimitTable`]),
    /// reading their own sensors in real time; `None` when no device has a limit.
    pub fn for_devices(devices: &[Device]) -> Result<Option<Governor>> {
        let limits: Vec<Limits> = devices
            .iter()
            .map(|d| d.config().limits.for_device(&d.info().spec().to_string()))
            .collect();
        if limits.iter().all(Limits::is_empty) {
            return Ok(None);
        }
        let mut g = Governor::new();
        for (d, l) in devices.iter().zip(limits) {
            let spec = d.info().spec().to_string();
            log::info!("governor: {spec} ({}) {l}", d.name());
            g.add(&spec, d.name(), sensor_for(d.info()), l)?;
        }
        Ok(Some(g))
    }

    /// Governed devices.
    pub fn len(&self) -> usize {
        self.devices.len()
    }

    /// Whether no device is governed.
    pub fn is_empty(&self) -> bool {
        self.devices.is_empty()
    }

    /// Now, by the governor's clock.
    pub fn now(&mut self) -> Instant {
        self.pace.now()
    }

    /// Reads every device whose interval has passed and updates its duty; true when a duty
    /// changed.
    pub fn update(&mut self) -> bool {
        let now = self.pace.now();
        let tuning = self.tuning;
        let mut changed = false;
        for g in &mut self.devices {
            let dt = match g.last {
                Some(l) if now.saturating_duration_since(l) < tuning.interval => continue,
                // A long gap (validation, a checkpoint) counts as one interval: the integral
                // must not jump on time nobody measured.
                Some(l) => now
                    .saturating_duration_since(l)
                    .as_secs_f64()
                    .min(5.0 * tuning.interval.as_secs_f64()),
                None => tuning.interval.as_secs_f64(),
            };
            g.last = Some(now);
            changed |= g.sample(dt, &tuning);
        }
        changed
    }

    /// Device `d`'s duty (1 for a device not governed).
    pub fn duty(&self, d: usize) -> f64 {
        self.devices.get(d).map_or(1.0, |g| g.report.duty)
    }

    /// The duty of a group's pause: the largest device duty (the others are slowed through
    /// their shares; see [`Governor::share_factors`]).
    pub fn group_duty(&self) -> f64 {
        self.devices
            .iter()
            .map(|g| g.report.duty)
            .fold(0.0f64, f64::max)
            .max(if self.devices.is_empty() { 1.0 } else { 0.0 })
    }

    /// What each device's share of a group's batch is scaled by: its duty over the group's.
    pub fn share_factors(&self) -> Vec<f64> {
        let top = self.group_duty().max(1e-9);
        self.devices.iter().map(|g| g.report.duty / top).collect()
    }

    /// After work that kept the devices busy for `busy`, pauses for `busy × (1 − duty) /
    /// duty` at the group's duty (nothing at 1). Returns the pause.
    pub fn pace_after(&mut self, busy: Duration) -> Duration {
        let duty = self.group_duty();
        if duty >= 1.0 {
            return Duration::ZERO;
        }
        let pause = busy
            .mul_f64((1.0 - duty) / duty.max(1e-9))
            .min(Duration::from_secs(10));
        self.pace.sleep(pause);
        for g in &mut self.devices {
            if g.report.duty < 1.0 {
                g.report.paced_seconds += pause.as_secs_f64();
            }
        }
        pause
    }

    /// Whether any device is paced now.
    pub fn pacing(&self) -> bool {
        self.group_duty() < 1.0
    }

    /// Every device's report.
    pub fn reports(&self) -> Vec<GovernorReport> {
        self.devices.iter().map(|g| g.report.clone()).collect()
    }
}

impl Governed {
    /// Reads the sensor and moves the duty; true when it changed.
    fn sample(&mut self, dt: f64, t: &Tuning) -> bool {
        let r = self.sensor.read();
        let spec = self.report.spec.clone();
        self.report.samples += 1;
        self.report.temperature_c = r.temperature_c;
        self.report.power_w = r.power_w;
        let temp = self.limits.max_temperature_c.zip(r.temperature_c);
        let power = self.limits.power_cap_w.zip(r.power_w);
        let missing = (self.limits.max_temperature_c.is_some() && temp.is_none())
            || (self.limits.power_cap_w.is_some() && power.is_none());
        if r.errors > 0 || missing {
            self.report.sensor_errors += 1;
            if !self.warned_sensor {
                self.warned_sensor = true;
                log::warn!(
                    "governor: {spec}'s sensor ({}) gave no reading of a limited value: its duty holds at {:.0}%",
                    r.source,
                    100.0 * self.report.duty
                );
            }
        }
        let mut duty = 1.0f64;
        let mut over = false;
        if let Some((limit, v)) = temp {
            duty = duty.min(self.temperature.duty(v, limit, t.band_c, t.margin_c, dt, t));
            if v > limit {
                self.report.over_temperature_seconds += dt;
                over = true;
            }
        }
        if let Some((cap, v)) = power {
            duty = duty.min(power_duty(self.report.duty, v, cap, t));
            if v > cap {
                self.report.over_power_seconds += dt;
                over = true;
            }
        }
        if temp.is_none() && power.is_none() {
            // Nothing to go on: hold.
            return false;
        }
        let duty = if duty >= FULL {
            1.0
        } else {
            (duty * 100.0).round() / 100.0
        };
        self.watch_reach(over, duty, dt, t, &r);
        let before = self.report.duty;
        // Moves smaller than STEP are not worth a decision (the loop's own jitter on
        // whole-degree readings), except to reach 1 or the floor.
        let ends = duty == 1.0 || duty <= t.min_duty;
        if (duty - before).abs() < 1e-9 || ((duty - before).abs() < STEP && !ends) {
            return false;
        }
        self.report.duty = duty;
        if duty < before {
            self.report.lowered += 1;
        } else {
            self.report.raised += 1;
        }
        log::info!(
            "governor: {spec} {}: duty {:.0}% → {:.0}%",
            describe(&self.limits, &r),
            100.0 * before,
            100.0 * duty
        );
        true
    }

    /// Warns once per episode when the lowest duty does not bring the device under its
    /// limit: the limit is below what it holds nearly idle.
    fn watch_reach(&mut self, over: bool, duty: f64, dt: f64, t: &Tuning, r: &Reading) {
        if over && duty <= t.min_duty + 1e-9 {
            self.stuck += dt;
            if self.stuck >= UNREACHABLE_AFTER && !self.warned_stuck {
                self.warned_stuck = true;
                log::warn!(
                    "governor: {} stays over its limit ({}) at the lowest duty ({:.0}%) after {:.0} s: the limit is below what it holds nearly idle",
                    self.report.spec,
                    describe(&self.limits, r),
                    100.0 * t.min_duty,
                    self.stuck
                );
            }
        } else {
            self.stuck = 0.0;
            self.warned_stuck = false;
        }
    }
}

/// `81°C (limit 80°C), 250 W (cap 300 W)`.
fn describe(l: &Limits, r: &Reading) -> String {
    let mut parts = Vec::new();
    if let (Some(lim), Some(v)) = (l.max_temperature_c, r.temperature_c) {
        parts.push(format!("{v:.0}°C (limit {lim:.0}°C)"));
    }
    if let (Some(cap), Some(v)) = (l.power_cap_w, r.power_w) {
        parts.push(format!("{v:.0} W (cap {cap:.0} W)"));
    }
    parts.join(", ")
}

/// The warnings a device's first reading gives about its limits.
fn warn_about(spec: &str, l: &Limits, r: &Reading) {
    if l.max_temperature_c.is_some() && r.temperature_c.is_none() {
        log::warn!(
            "governor: {spec} reports no temperature (sensor: {}): its temperature limit cannot be enforced",
            r.source
        );
    }
    if l.power_cap_w.is_some() && r.power_w.is_none() {
        log::warn!(
            "governor: {spec} reports no power draw (sensor: {}): its power cap cannot be enforced",
            r.source
        );
    }
    if let (Some(cap), Some(board)) = (l.power_cap_w, r.power_limit_w) {
        if cap >= board {
            log::warn!(
                "governor: {spec}'s power cap {cap:.0} W is not below the board's own limit {board:.0} W: it never binds"
            );
        }
    }
    if let (Some(lim), Some(v)) = (l.max_temperature_c, r.temperature_c) {
        if v > lim {
            log::warn!(
                "governor: {spec} is already at {v:.0}°C, above its limit {lim:.0}°C: it is paced until it cools"
            );
        }
    }
}
