//! Several devices in one process: the job scheduler (order, memory-aware placement, failures)
//! on two devices opened on the test adapter.

mod common;

use suanli::multi::{DeviceGroup, Job};
use suanli::{Error, Tensor};

fn two(limit_a: Option<u64>) -> Option<DeviceGroup> {
    let a = common::own_device(limit_a)?;
    let b = common::own_device(None)?;
    Some(DeviceGroup::from_devices(vec![a, b]).unwrap())
}

#[test]
fn jobs_run_on_both_devices_and_come_back_in_order() {
    let Some(g) = two(None) else {
        return;
    };
    let ids: Vec<u64> = g.devices().iter().map(|d| d.id()).collect();
    let jobs: Vec<Job<usize>> = (0..16).map(|i| Job::new(i, 1 << 20)).collect();
    let out = g.map(jobs, |dev, i| {
        // Enough work per job that both workers get some.
        let a = Tensor::full(dev, &[128, 128], i as f32)?;
        let s = a.matmul(&a)?.sum(0)?.sum(0)?.to_vec()?[0];
        Ok((i, dev.id(), s))
    });
    assert_eq!(out.len(), 16);
    let mut used = std::collections::HashSet::new();
    for (k, r) in out.into_iter().enumerate() {
        let (i, dev, s) = r.unwrap();
        assert_eq!(i, k, "results must come back in job order");
        // Σ over a 128×128 matrix of (i·i·128) = 128³·i².
        let want = (128f64).powi(3) * (i * i) as f64;
        assert!(
            (s as f64 - want).abs() <= 1e-5 * want.max(1.0),
            "job {k}: {s} vs {want}"
        );
        assert!(ids.contains(&dev));
        used.insert(dev);
    }
    assert_eq!(used.len(), 2, "both devices should have taken jobs");
}

#[test]
fn memory_limits_decide_where_jobs_may_run() {
    // Device 0 may hold 1 MiB, device 1 is unlimited.
    let Some(g) = two(Some(1 << 20)) else {
        return;
    };
    let big_dev = g.devices()[1].id();
    let mut jobs: Vec<Job<(usize, usize)>> = Vec::new();
    for i in 0..10 {
        // Every third job needs 4 MiB (a million floats).
        let n = if i % 3 == 0 { 1 << 20 } else { 1 << 10 };
        jobs.push(Job::new((i, n), n as u64 * 4));
    }
    // More than any device may hold: refused up front.
    jobs.push(Job::new((10, 0), u64::MAX / 2));
    let out = g.map(jobs, |dev, (i, n)| {
        let t = Tensor::full(dev, &[n], 1.0)?;
        Ok((i, dev.id(), t.sum(0)?.to_vec()?[0]))
    });
    for (k, r) in out.iter().enumerate().take(10) {
        let (i, dev, s) = r.as_ref().unwrap();
        assert_eq!(*i, k);
        let n = if k % 3 == 0 { 1 << 20 } else { 1 << 10 };
        assert_eq!(*s as usize, n);
        if k % 3 == 0 {
            assert_eq!(
                *dev, big_dev,
                "job {k} needs 4 MiB: only device 1 can hold it"
            );
        }
    }
    match &out[10] {
        Err(e) => {
            assert_eq!(e.job, 10);
            assert!(e.device.is_none());
            assert!(matches!(*e.error, Error::OutOfMemory { .. }), "{e}");
        }
        Ok(_) => panic!("an impossible job succeeded"),
    }
}

#[test]
fn a_failing_job_names_itself_and_its_device_and_loses_nothing() {
    let Some(g) = two(None) else {
        return;
    };
    let jobs: Vec<Job<usize>> = (0..8).map(|i| Job::new(i, 4096)).collect();
    let out = g.map(jobs, |dev, i| {
        if i == 3 {
            // A shape error from inside the job.
            let a = Tensor::zeros(dev, &[2, 3])?;
            a.matmul(&a)?;
        }
        Ok(i * 10)
    });
    for (k, r) in out.iter().enumerate() {
        if k == 3 {
            let e = r.as_ref().unwrap_err();
            assert_eq!(e.job, 3);
            let name = e.device.as_deref().unwrap();
            assert!(g.devices().iter().any(|d| d.name() == name));
            assert!(matches!(*e.error, Error::ShapeMismatch { .. }), "{e}");
            assert!(e.to_string().starts_with("job 3 on "), "{e}");
        } else {
            assert_eq!(*r.as_ref().unwrap(), k * 10);
        }
    }
}

#[test]
fn groups_parse_specs() {
    if common::device().is_none() {
        return;
    }
    let spec = std::env::var("SUANLI_TEST_DEVICE").unwrap_or_else(|_| "auto".into());
    let g = DeviceGroup::parse(&format!("{spec}, {spec}")).unwrap();
    assert_eq!(g.len(), 2);
    assert_ne!(
        g.devices()[0].id(),
        g.devices()[1].id(),
        "two independent devices"
    );
    assert!(!DeviceGroup::parse("all").unwrap().is_empty());
    assert!(DeviceGroup::parse("").is_err());
    assert!(DeviceGroup::parse("gpu:99").is_err());
}
