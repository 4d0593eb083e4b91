//! The governor inside training: `fit` paces a simulated hot device and still trains the
//! same weights; `fit_parallel` moves rows off a hot device and back when it cools. Time is
//! virtual (`VirtualTime`): the devices heat by the governor's clock, nothing sleeps.

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use suanli::config::Limits;
use suanli::multi::{DeviceGroup, ParallelOptions};
use suanli::nn::{Callback, FitOptions, History, Optimizer};
use suanli::telemetry::{
    Governor, GovernorReport, SharedThermal, Thermal, ThermalSensor, Tuning, VirtualTime,
};

fn limit(c: f64) -> Limits {
    Limits {
        max_temperature_c: Some(c),
        power_cap_w: None,
    }
}

fn thermal(full_c: f64) -> SharedThermal {
    Arc::new(Mutex::new(Thermal::new(35.0, full_c, 30.0, 80.0, 700.0)))
}

/// Each read of the clock runs the devices for `per_read`, fully busy.
fn governor(devs: &[SharedThermal], per_read: Duration) -> Governor {
    let clock = VirtualTime::new(devs.to_vec(), per_read);
    let mut g = Governor::with_pace(Box::new(clock));
    g.tuning = Tuning::default();
    for (i, d) in devs.iter().enumerate() {
        g.add(
            &format!("sim:{i}"),
            "simulated",
            Box::new(ThermalSensor(d.clone())),
            limit(80.0),
        )
        .unwrap();
    }
    g
}

#[derive(Default)]
struct Seen(Vec<Vec<GovernorReport>>);

impl Callback for Seen {
    fn on_governor(&mut self, reports: &[GovernorReport]) {
        self.0.push(reports.to_vec());
    }
}

fn weights(m: &suanli::nn::Sequential) -> Vec<Vec<f32>> {
    m.weights()
        .iter()
        .map(|(_, t)| t.to_vec().unwrap())
        .collect()
}

#[test]
fn fit_paces_a_hot_device_and_trains_the_same_weights() {
    let Some(dev) = common::own_device(None) else {
        return;
    };
    let data = common::noisy_classes(&dev, 1024);
    let opts = || FitOptions {
        epochs: 6,
        batch_size: 8,
        seed: 3,
        ..Default::default()
    };
    let mut free = common::small_model(&dev, Optimizer::adam());
    free.fit(&data, opts()).unwrap();

    let hot = thermal(100.0);
    let mut gov = governor(std::slice::from_ref(&hot), Duration::from_secs(10));
    let mut seen = Seen::default();
    let mut paced = common::small_model(&dev, Optimizer::adam());
    paced
        .fit(
            &data,
            FitOptions {
                governor: Some(&mut gov),
                callbacks: vec![&mut seen],
                ..opts()
            },
        )
        .unwrap();
    let r = &gov.reports()[0];
    assert!(r.lowered > 0 && r.duty < 1.0, "{r:?}");
    assert!(r.paced_seconds > 0.0, "{r:?}");
    let t = hot.lock().unwrap().temperature_c;
    assert!(t <= 81.0, "the device ended at {t:.1}°C");
    // Callbacks heard every change, and the epochs' ends.
    assert!(
        seen.0.len() as u64 >= r.lowered + r.raised,
        "{}",
        seen.0.len()
    );
    assert_eq!(seen.0.last().unwrap()[0], *r);
    // Pacing changes when work runs, never what it computes.
    assert_eq!(weights(&free), weights(&paced));
}

#[test]
fn fit_parallel_moves_rows_off_a_hot_device_and_back() {
    let (Some(a), Some(b)) = (common::own_device(None), common::own_device(None)) else {
        return;
    };
    let group = DeviceGroup::from_devices(vec![a, b]).unwrap();
    let data: Vec<_> = group
        .devices()
        .iter()
        .map(|d| common::noisy_classes(d, 2048))
        .collect();
    let devs = vec![thermal(110.0), thermal(60.0)];
    let mut gov = governor(&devs, Duration::from_secs(10));
    let hot = devs[0].clone();
    let mut cool_down = |epoch: usize, _h: &History| {
        if epoch == 2 {
            hot.lock().unwrap().full_c = 60.0;
        }
        true
    };
    let mut m = common::small_model(&group.devices()[0], Optimizer::adam());
    let p = m
        .fit_parallel(
            &group,
            &data,
            FitOptions {
                epochs: 7,
                batch_size: 16,
                governor: Some(&mut gov),
                on_epoch_end: Some(&mut cool_down),
                ..Default::default()
            },
            // Equal simulated speeds: only the governor moves the shares.
            &ParallelOptions {
                simulated_rates: Some(vec![2000.0, 2000.0]),
                ..Default::default()
            },
        )
        .unwrap();
    let steps = 2048 / 16;
    let hot_share = p.shares[3 * steps - 1][0];
    assert!(
        hot_share < 0.42,
        "the hot device still had {hot_share:.2} of the batch"
    );
    let r = gov.reports();
    // The cool device was never paced, so the group never paused.
    assert_eq!(r[1].duty, 1.0);
    assert_eq!(r[0].paced_seconds, 0.0, "{:?}", r[0]);
    assert!(r[0].lowered > 0 && r[0].raised > 0, "{:?}", r[0]);
    let last = p.shares.last().unwrap();
    assert!(
        (last[0] - 0.5).abs() < 0.05,
        "after cooling the share came back to {:.2}",
        last[0]
    );
}
