//! The governor's trace on simulated devices, in virtual time (no GPU, no waiting):
//! `cargo run --release --example governor_trace`.
//!
//! 1. One device that would settle at 100°C under full load, limit 80°C: its temperature
//!    and duty every minute for 10 minutes, then its cooling is fixed and the duty comes back.
//! 2. Three equally fast devices, one badly cooled: the shares of the batch as the governor
//!    holds the hot one to its limit, and after it is fixed.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use suanli::config::Limits;
use suanli::multi::Balancer;
use suanli::telemetry::{Governor, Thermal, ThermalSensor, VirtualTime};

fn limit() -> Limits {
    Limits {
        max_temperature_c: Some(80.0),
        power_cap_w: None,
    }
}

fn main() -> suanli::Result<()> {
    println!(
        "one device: full load settles at 100°C, limit 80°C, time constant 30 s, chunks of 0.1 s"
    );
    println!("{:>6} {:>8} {:>6}", "t (s)", "temp °C", "duty");
    let dev = Arc::new(Mutex::new(Thermal::new(35.0, 100.0, 30.0, 80.0, 700.0)));
    let clock = VirtualTime::new(vec![dev.clone()], Duration::ZERO);
    let mut gov = Governor::with_pace(Box::new(clock.clone()));
    gov.add(
        "sim:0",
        "simulated",
        Box::new(ThermalSensor(dev.clone())),
        limit(),
    )?;
    let chunk = Duration::from_millis(100);
    let mut next = 0.0;
    let start = clock.peek();
    let secs = |c: &VirtualTime| c.peek().duration_since(start).as_secs_f64();
    while secs(&clock) < 1200.0 {
        if secs(&clock) >= 600.0 && dev.lock().map(|d| d.full_c).unwrap_or(0.0) > 70.0 {
            println!("-- cooling fixed: full load now settles at 70°C --");
            if let Ok(mut d) = dev.lock() {
                d.full_c = 70.0;
            }
        }
        clock.advance(chunk, &[1.0]);
        gov.update();
        gov.pace_after(chunk);
        if secs(&clock) >= next {
            let t = dev.lock().map(|d| d.temperature_c).unwrap_or(f64::NAN);
            println!("{:>6.0} {t:>8.2} {:>6.2}", secs(&clock), gov.duty(0));
            next += 60.0;
        }
    }
    let r = &gov.reports()[0];
    println!(
        "lowered {} times, raised {}, paused {:.0} s, over the limit {:.0} s",
        r.lowered, r.raised, r.paced_seconds, r.over_temperature_seconds
    );

    println!("\nthree devices of equal speed; sim:0 would settle at 110°C, the others at 70-72°C");
    println!(
        "{:>6} {:>8} {:>6} {:>22}",
        "t (s)", "sim:0 °C", "duty", "shares sim:0/1/2"
    );
    let devs: Vec<_> = [110.0, 70.0, 72.0]
        .iter()
        .map(|f| Arc::new(Mutex::new(Thermal::new(35.0, *f, 20.0, 80.0, 700.0))))
        .collect();
    let clock = VirtualTime::new(devs.clone(), Duration::ZERO);
    let mut gov = Governor::with_pace(Box::new(clock.clone()));
    for (i, d) in devs.iter().enumerate() {
        gov.add(
            &format!("sim:{i}"),
            "simulated",
            Box::new(ThermalSensor(d.clone())),
            limit(),
        )?;
    }
    let mut bal = Balancer::new(3, None);
    let (rate, batch) = (10_000.0, 3000);
    let start = clock.peek();
    let mut next = 0.0;
    let secs = |c: &VirtualTime| c.peek().duration_since(start).as_secs_f64();
    while secs(&clock) < 1200.0 {
        if secs(&clock) >= 600.0 && devs[0].lock().map(|d| d.full_c).unwrap_or(0.0) > 70.0 {
            println!("-- sim:0's cooling fixed --");
            if let Ok(mut d) = devs[0].lock() {
                d.full_c = 70.0;
            }
        }
        let sizes = bal.split(batch);
        let busy: Vec<f64> = sizes.iter().map(|s| *s as f64 / rate).collect();
        let step = busy.iter().copied().fold(0.0, f64::max);
        let loads: Vec<f64> = busy.iter().map(|b| b / step).collect();
        clock.advance(Duration::from_secs_f64(step), &loads);
        gov.update();
        gov.pace_after(Duration::from_secs_f64(step));
        bal.observe(&sizes, &busy, &gov.share_factors());
        if secs(&clock) >= next {
            let t = devs[0].lock().map(|d| d.temperature_c).unwrap_or(f64::NAN);
            let s = bal.shares();
            println!(
                "{:>6.0} {t:>8.2} {:>6.2} {:>10.2} {:.2} {:.2}",
                secs(&clock),
                gov.duty(0),
                s[0],
                s[1],
                s[2]
            );
            next += 60.0;
        }
    }
    Ok(())
}
