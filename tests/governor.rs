//! The governor against simulated devices whose temperature and power follow their load
//! (`telemetry::Thermal`), in virtual time: minutes of heating per test, no sleeps, no GPU.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use suanli::config::Limits;
use suanli::multi::Balancer;
use suanli::telemetry::{
    Governor, NoSensor, Reading, Sensor, SharedThermal, Thermal, ThermalSensor, Tuning, VirtualTime,
};

fn device(full_c: f64, tau_s: f64) -> SharedThermal {
    Arc::new(Mutex::new(Thermal::new(35.0, full_c, tau_s, 80.0, 700.0)))
}

fn temp_limit(c: f64) -> Limits {
    Limits {
        max_temperature_c: Some(c),
        power_cap_w: None,
    }
}

/// One step of the trace: seconds, true temperature, power read, duty.
#[derive(Clone, Copy, Debug)]
struct Point {
    t: f64,
    temp: f64,
    duty: f64,
}

/// Runs one device for `seconds` of virtual time in chunks of `chunk` busy time, governed
/// with `tuning`; returns the trace (one point per chunk).
fn run_one(
    gov: &mut Governor,
    clock: &VirtualTime,
    dev: &SharedThermal,
    seconds: f64,
    chunk: Duration,
) -> Vec<Point> {
    let start = clock.peek();
    let mut trace = Vec::new();
    while clock.peek().duration_since(start).as_secs_f64() < seconds {
        clock.advance(chunk, &[1.0]);
        gov.update();
        gov.pace_after(chunk);
        trace.push(Point {
            t: clock.peek().duration_since(start).as_secs_f64(),
            temp: dev.lock().unwrap().temperature_c,
            duty: gov.duty(0),
        });
    }
    trace
}

/// Whether a trace holds `limit` (see [`OVER_C`], [`UNDER_C`], [`DUTY_SWING`]): never more
/// than `OVER_C` over it, and from `from` seconds on, within the band with a duty that moves
/// less than `DUTY_SWING` from end to end (no swings).
fn holds(trace: &[Point], limit: f64, from: f64) -> Result<(), String> {
    let peak = trace.iter().map(|p| p.temp).fold(0.0, f64::max);
    let tail: Vec<&Point> = trace.iter().filter(|p| p.t >= from).collect();
    let (lo, hi) = tail
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), p| {
            (l.min(p.temp), h.max(p.temp))
        });
    let (dlo, dhi) = tail
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), p| {
            (l.min(p.duty), h.max(p.duty))
        });
    let text = format!("peak {peak:.2}°C; settled {lo:.2}..{hi:.2}°C with duty {dlo:.2}..{dhi:.2}");
    if peak <= limit + OVER_C
        && lo >= limit - UNDER_C
        && hi <= limit + OVER_C
        && dhi - dlo <= DUTY_SWING
    {
        Ok(())
    } else {
        Err(text)
    }
}

fn governed(dev: &SharedThermal, limits: Limits, tuning: Tuning) -> (Governor, VirtualTime) {
    let clock = VirtualTime::new(vec![dev.clone()], Duration::ZERO);
    let mut gov = Governor::with_pace(Box::new(clock.clone()));
    gov.tuning = tuning;
    gov.add(
        "sim:0",
        "simulated",
        Box::new(ThermalSensor(dev.clone())),
        limits,
    )
    .unwrap();
    (gov, clock)
}

/// The band the governor holds a temperature limit within, once settled: at most this far
/// over and under it.
const OVER_C: f64 = 1.0;
const UNDER_C: f64 = 4.0;
/// The most a settled duty moves, end to end: sensors read whole degrees, so the loop
/// nudges the duty by a step or two as the reading flickers between two degrees.
const DUTY_SWING: f64 = 0.08;

#[test]
fn holds_a_temperature_limit_without_oscillating() {
    // Thermal time constants from seconds to minutes, devices that would settle 10 to 30°C
    // over the limit, chunks of 20 ms to 0.5 s.
    for (tau, full, chunk_ms) in [
        (5.0, 90.0, 20),
        (20.0, 100.0, 100),
        (60.0, 110.0, 100),
        (120.0, 100.0, 500),
        (30.0, 95.0, 50),
    ] {
        let dev = device(full, tau);
        let (mut gov, clock) = governed(&dev, temp_limit(80.0), Tuning::default());
        let trace = run_one(
            &mut gov,
            &clock,
            &dev,
            30.0 * tau.max(20.0),
            Duration::from_millis(chunk_ms),
        );
        let case = format!("tau {tau} s, full load {full}°C, chunks of {chunk_ms} ms");
        if let Err(e) = holds(&trace, 80.0, 15.0 * tau.max(20.0)) {
            panic!("{case}: {e}");
        }
        // It paced the device to what holds the limit: the duty is near the one whose steady
        // temperature is the limit.
        let needed = (80.0 - 35.0) / (full - 35.0);
        let duty = trace.last().unwrap().duty;
        assert!(
            duty < needed + 0.05 && duty > needed - 0.15,
            "{case}: duty {duty:.2}, the limit needs {needed:.2}"
        );
        let r = &gov.reports()[0];
        assert!(r.lowered > 0 && r.paced_seconds > 0.0, "{r:?}");
    }
}

#[test]
fn the_oscillation_check_catches_a_controller_that_hunts() {
    // A planted fault: all integral, no proportional band. The same check must fail it.
    let dev = device(100.0, 20.0);
    let tuning = Tuning {
        kp: 0.0,
        ki: 3.0,
        band_c: 1.0,
        margin_c: 0.0,
        ..Tuning::default()
    };
    let (mut gov, clock) = governed(&dev, temp_limit(80.0), tuning);
    let trace = run_one(&mut gov, &clock, &dev, 600.0, Duration::from_millis(100));
    let verdict = holds(&trace, 80.0, 300.0);
    assert!(verdict.is_err(), "a hunting controller passed the check");
    eprintln!("the hunting controller: {}", verdict.unwrap_err());
}

#[test]
fn holds_a_power_cap() {
    let dev = device(70.0, 20.0);
    let cap = 400.0;
    let (mut gov, clock) = governed(
        &dev,
        Limits {
            max_temperature_c: None,
            power_cap_w: Some(cap),
        },
        Tuning::default(),
    );
    let mut read = Vec::new();
    let start = clock.peek();
    while clock.peek().duration_since(start).as_secs_f64() < 600.0 {
        clock.advance(Duration::from_millis(100), &[1.0]);
        if gov.update() || clock.peek().duration_since(start).as_secs_f64() > 300.0 {
            read.push(gov.reports()[0].power_w.unwrap());
        }
        gov.pace_after(Duration::from_millis(100));
    }
    let tail = &read[read.len() / 2..];
    let (lo, hi) = tail
        .iter()
        .fold((f64::INFINITY, 0.0f64), |(l, h), p| (l.min(*p), h.max(*p)));
    assert!(
        hi <= cap * 1.01 && lo >= cap * 0.85,
        "settled power {lo:.0}..{hi:.0} W against a cap of {cap} W"
    );
}

#[test]
fn the_duty_comes_back_when_the_device_cools() {
    let dev = device(100.0, 20.0);
    let (mut gov, clock) = governed(&dev, temp_limit(80.0), Tuning::default());
    run_one(&mut gov, &clock, &dev, 600.0, Duration::from_millis(100));
    let paced = gov.duty(0);
    assert!(paced < 0.8, "duty {paced}");
    // The room cools: at full load it would now settle at 70°C.
    dev.lock().unwrap().full_c = 70.0;
    let trace = run_one(&mut gov, &clock, &dev, 600.0, Duration::from_millis(100));
    assert_eq!(gov.duty(0), 1.0, "not restored");
    let back = trace.iter().find(|p| p.duty == 1.0).unwrap().t;
    assert!(back < 300.0, "took {back:.0} s to come back");
    assert!(gov.reports()[0].raised > 0);
}

/// A group of three equally fast devices, one of them badly cooled, trained step by step:
/// shares from the balancer, each device's busy time its shard over its rate, the step as
/// long as the slowest, the governor's duties as the balancer's penalties.
#[test]
fn a_group_shifts_work_off_a_hot_device_and_back() {
    let devs = vec![device(110.0, 20.0), device(70.0, 20.0), device(72.0, 20.0)];
    let clock = VirtualTime::new(devs.clone(), Duration::ZERO);
    let mut gov = Governor::with_pace(Box::new(clock.clone()));
    for (i, d) in devs.iter().enumerate() {
        gov.add(
            &format!("sim:{i}"),
            "simulated",
            Box::new(ThermalSensor(d.clone())),
            temp_limit(80.0),
        )
        .unwrap();
    }
    let mut bal = Balancer::new(3, None);
    let rate = 10_000.0; // rows per second, every device
    let batch = 3000;
    let run = |steps: usize, gov: &mut Governor, bal: &mut Balancer| {
        let mut shares = Vec::new();
        let mut peak: f64 = 0.0;
        for _ in 0..steps {
            let sizes = bal.split(batch);
            let secs: Vec<f64> = sizes.iter().map(|s| *s as f64 / rate).collect();
            let step = secs.iter().copied().fold(0.0, f64::max);
            let loads: Vec<f64> = secs.iter().map(|s| s / step).collect();
            clock.advance(Duration::from_secs_f64(step), &loads);
            gov.update();
            gov.pace_after(Duration::from_secs_f64(step));
            bal.observe(&sizes, &secs, &gov.share_factors());
            shares.push(bal.shares().to_vec());
            peak = peak.max(devs[0].lock().unwrap().temperature_c);
        }
        (shares, peak)
    };
    let (shares, peak) = run(6000, &mut gov, &mut bal); // 30 minutes
    let last = shares.last().unwrap();
    assert!(
        last[0] < 0.25,
        "the hot device kept {:.2} of the batch",
        last[0]
    );
    assert!(last[1] > 0.35 && last[2] > 0.35, "{last:?}");
    assert!(
        peak <= 80.0 + OVER_C,
        "the hot device peaked at {peak:.1}°C"
    );
    let t0 = devs[0].lock().unwrap().temperature_c;
    assert!((80.0 - UNDER_C..=80.0 + OVER_C).contains(&t0), "{t0:.1}°C");
    // The cool devices were never paced: the group did not pause for the hot one.
    assert_eq!(gov.group_duty(), 1.0);
    // Settled: the hot device's share holds within a narrow band over the last third.
    let tail = &shares[4000..];
    let (lo, hi) = tail
        .iter()
        .fold((1.0f64, 0.0f64), |(l, h), s| (l.min(s[0]), h.max(s[0])));
    assert!(
        hi - lo < 0.06,
        "the hot device's share swung {lo:.2}..{hi:.2}"
    );
    // Its cooling is fixed: its share comes back.
    devs[0].lock().unwrap().full_c = 70.0;
    let (shares, _) = run(6000, &mut gov, &mut bal);
    let last = shares.last().unwrap();
    assert!(
        last.iter().all(|s| (s - 1.0 / 3.0).abs() < 0.04),
        "shares after recovery {last:?}"
    );
    assert_eq!(gov.duty(0), 1.0);
}

/// A sensor that works for a while, then fails every read.
struct Failing {
    inner: ThermalSensor,
    good: usize,
}

impl Sensor for Failing {
    fn source(&self) -> String {
        "flaky".into()
    }
    fn read(&mut self) -> Reading {
        if self.good == 0 {
            return Reading {
                errors: 1,
                ..Reading::unavailable("flaky")
            };
        }
        self.good -= 1;
        self.inner.read()
    }
}

#[test]
fn limits_that_make_no_sense_are_refused_and_missing_sensors_hold_the_duty() {
    let dev = device(100.0, 20.0);
    let mut gov = Governor::new();
    for bad in [
        temp_limit(-5.0),
        temp_limit(10.0),
        temp_limit(f64::NAN),
        Limits {
            max_temperature_c: None,
            power_cap_w: Some(0.0),
        },
    ] {
        let e = gov
            .add("sim:0", "s", Box::new(ThermalSensor(dev.clone())), bad)
            .unwrap_err()
            .to_string();
        assert!(e.contains("expected"), "{e}");
    }
    assert!(gov.is_empty());
    // No sensor at all (a software adapter): accepted with a warning, never paced.
    let clock = VirtualTime::new(vec![dev.clone()], Duration::ZERO);
    let mut gov = Governor::with_pace(Box::new(clock.clone()));
    gov.add(
        "cpu:0",
        "lavapipe",
        Box::new(NoSensor("none".into())),
        temp_limit(80.0),
    )
    .unwrap();
    // A sensor that fails after 400 reads (400 s: by then the device is paced).
    gov.add(
        "sim:1",
        "flaky",
        Box::new(Failing {
            inner: ThermalSensor(dev.clone()),
            good: 400,
        }),
        temp_limit(80.0),
    )
    .unwrap();
    for _ in 0..12_000 {
        clock.advance(Duration::from_millis(100), &[1.0]);
        gov.update();
    }
    let r = gov.reports();
    assert_eq!(r[0].duty, 1.0);
    assert!(r[0].sensor_errors > 0 && r[0].lowered == 0, "{:?}", r[0]);
    assert!(r[1].lowered > 0, "{:?}", r[1]);
    assert!(r[1].sensor_errors > 0);
    // The duty it had when the sensor failed holds rather than snapping back to 1.
    assert!(r[1].duty < 1.0, "{:?}", r[1]);
}
