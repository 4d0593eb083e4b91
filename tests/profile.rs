//! The kernel profiler: per-kernel counts match the dispatches issued, durations are positive
//! and add up to no more than the wall time, declared work gives rates, the wall-clock
//! fallback records one entry per submission, with the profiler off nothing is recorded; and
//! queue utilisation over a window. No assertion here depends on how fast the adapter is: the
//! busy-time accounting itself is unit-tested with made-up instants (src/services/profile.rs).

mod common;

use std::time::{Duration, Instant};

use suanli::exec::{Capture, ProfileClock, Recorder};
use suanli::internals::kernels::elementwise;
use suanli::{Activation, Tensor};

#[test]
fn counts_durations_and_off_means_off() {
    let Some(dev) = common::own_device(None) else {
        return;
    };
    if !dev.info().features.timestamp_inside_passes {
        assert!(
            dev.set_profiling_clock(ProfileClock::Timestamps).is_err(),
            "timestamps must be refused without timestamp support"
        );
        return;
    }
    let a = Tensor::rand_uniform(&dev, &[64, 64], -1.0, 1.0, 1).unwrap();
    // Off: work leaves no trace.
    let _ = a.matmul(&a).unwrap().to_vec().unwrap();
    assert!(dev.profile().kernels.is_empty());
    dev.set_profiling(true);
    let t0 = Instant::now();
    for _ in 0..5 {
        let _ = a.matmul(&a).unwrap();
    }
    for _ in 0..3 {
        let _ = a.activation(Activation::Relu).unwrap();
    }
    let _ = a.to_vec().unwrap();
    let wall = t0.elapsed().as_secs_f64() * 1e9;
    dev.set_profiling(false);
    let p = dev.profile();
    let calls = |needle: &str| {
        p.kernels
            .iter()
            .filter(|k| k.name.contains(needle))
            .map(|k| k.calls)
            .sum::<u64>()
    };
    let table = p.table(usize::MAX);
    assert_eq!(p.clock, ProfileClock::Timestamps);
    assert_eq!(calls("matmul"), 5, "{table}");
    assert_eq!(calls("unary_forward"), 3, "{table}");
    assert!(p.kernels.iter().all(|k| k.total_ns > 0.0), "{table}");
    // matmul declares 2·M·N·K FLOPs per call, so its rate is FLOPs over its own GPU time.
    let mm = p
        .kernels
        .iter()
        .find(|k| k.name.contains("matmul"))
        .unwrap();
    assert_eq!(mm.flops, Some(5.0 * 2.0 * 64f64.powi(3)));
    let rate = mm.gflops().unwrap();
    assert!((rate - mm.flops.unwrap() / mm.total_ns).abs() < 1e-9 * rate);
    assert!(mm.gbps().unwrap() > 0.0);
    let relu = p.kernels.iter().find(|k| k.name.contains("unary")).unwrap();
    assert_eq!(relu.gflops(), None, "undeclared work has no rate");
    assert!(
        table.contains("GFLOP/s") && table.contains(&format!("{rate:.2}")),
        "{table}"
    );
    assert!(
        p.total_ns() <= wall,
        "GPU {} ns > wall {wall} ns",
        p.total_ns()
    );
    // The Chrome trace: valid JSON, one complete event per timed dispatch, non-negative times.
    let path = std::env::temp_dir().join(format!("suanli-trace-{}.json", std::process::id()));
    dev.write_chrome_trace(&path).unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let events = doc["traceEvents"].as_array().unwrap();
    assert_eq!(
        events.len() as u64,
        p.kernels.iter().map(|k| k.calls).sum::<u64>()
    );
    for e in events {
        assert_eq!(e["ph"], "X");
        assert!(e["name"].as_str().is_some_and(|n| !n.is_empty()));
        assert!(
            e["ts"].as_f64().unwrap() >= 0.0 && e["dur"].as_f64().unwrap() > 0.0,
            "{e}"
        );
    }
    std::fs::remove_file(&path).unwrap();
    // Off again: the table no longer grows.
    let _ = a.matmul(&a).unwrap().to_vec().unwrap();
    assert_eq!(dev.profile(), p);
    dev.reset_profile();
    assert!(dev.profile().kernels.is_empty() && dev.trace_events().is_empty());
}

#[test]
fn wall_clock_fallback_records_each_submission() {
    let Some(dev) = common::own_device(None) else {
        return;
    };
    let a = Tensor::rand_uniform(&dev, &[48, 48], -1.0, 1.0, 2).unwrap();
    dev.set_profiling_clock(ProfileClock::WallClock).unwrap();
    let t0 = Instant::now();
    for _ in 0..4 {
        let _ = a.matmul(&a).unwrap(); // one submission each
    }
    let wall = t0.elapsed().as_secs_f64() * 1e9;
    dev.set_profiling(false);
    let p = dev.profile();
    assert_eq!(p.clock, ProfileClock::WallClock);
    assert_eq!(p.kernels.len(), 1, "{}", p.table(9));
    let k = &p.kernels[0];
    assert!(k.name.contains("matmul"), "{}", k.name);
    assert_eq!(k.calls, 4);
    assert!(k.total_ns > 0.0 && k.total_ns <= wall);
    assert_eq!(k.flops, Some(4.0 * 2.0 * 48f64.powi(3)));
    assert!(p.table(9).starts_with("(wall clock"), "{}", p.table(9));
}

#[test]
fn utilisation_is_busy_over_wall() {
    let Some(dev) = common::own_device(None) else {
        return;
    };
    let a = Tensor::rand_uniform(&dev, &[384, 384], -1.0, 1.0, 3).unwrap();
    // Warm up: pipeline compilation and tuning are host work, not queue time.
    let _ = a.matmul(&a).unwrap().to_vec().unwrap();
    // Busy: back-to-back matmuls, then wait for them.
    let w = dev.utilisation_window();
    let mut keep = Vec::new();
    for _ in 0..8 {
        keep.push(a.matmul(&a).unwrap());
    }
    dev.synchronize().unwrap();
    let busy = w.utilisation();
    assert!(busy.busy <= busy.wall, "{busy:?}");
    assert!(
        busy.busy > Duration::ZERO,
        "submitted work counts as busy: {busy:?}"
    );
    assert_eq!(busy.kernel_time, None, "profiler off");
    // Idle: everything finished before the window opened and nothing is submitted in it, so
    // no busy time at all, however long the window.
    let w = dev.utilisation_window();
    let _host_work: f64 = (0..200_000).map(|i| (i as f64).sqrt()).sum();
    let idle = w.utilisation();
    assert_eq!(idle.busy, Duration::ZERO, "{idle:?}");
    assert_eq!(idle.fraction(), 0.0);
    // With the profiler on, summed kernel time bounds the busy time from below.
    dev.set_profiling(true);
    let w = dev.utilisation_window();
    for _ in 0..4 {
        keep.push(a.matmul(&a).unwrap());
    }
    dev.synchronize().unwrap();
    let u = w.utilisation();
    dev.set_profiling(false);
    if dev.info().features.timestamp_inside_passes {
        let k = u.kernel_time.expect("kernel time with the profiler on");
        assert!(k > Duration::ZERO && k <= u.busy, "{u:?}");
    }
}

#[test]
fn pass_timestamps_time_replayed_programs_one_pass_per_dispatch() {
    let Some(dev) = common::own_device(None) else {
        return;
    };
    if !dev.info().features.timestamp_query {
        return;
    }
    let x = Tensor::rand_uniform(&dev, &[1000], -1.0, 1.0, 4).unwrap();
    let y = Tensor::empty(&dev, &[1000]).unwrap();
    let z = Tensor::empty(&dev, &[1000]).unwrap();
    let mut cap = Capture::new(&dev);
    elementwise::activation(&mut cap, Activation::Relu, x.buffer(), y.buffer(), 1000).unwrap();
    elementwise::activation(&mut cap, Activation::Tanh, y.buffer(), z.buffer(), 1000).unwrap();
    let prog = cap.finish();
    dev.set_profiling_clock(ProfileClock::PassTimestamps)
        .unwrap();
    let mut rec = Recorder::new(&dev);
    for _ in 0..3 {
        rec.replay(&prog);
    }
    rec.submit().unwrap();
    dev.set_profiling(false);
    let p = dev.profile();
    assert_eq!(p.clock, ProfileClock::PassTimestamps);
    let unary: Vec<_> = p
        .kernels
        .iter()
        .filter(|k| k.name.contains("unary"))
        .collect();
    assert_eq!(
        unary.iter().map(|k| k.calls).sum::<u64>(),
        6,
        "{}",
        p.table(9)
    );
    assert!(unary.iter().all(|k| k.total_ns > 0.0));
    // The results are those of unprofiled work.
    let zv = z.to_vec().unwrap();
    let xv = x.to_vec().unwrap();
    for (a, b) in xv.iter().zip(&zv) {
        assert!((a.max(0.0).tanh() - b).abs() < 1e-6);
    }
}
