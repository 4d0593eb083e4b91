//! The kernel profiler: per-kernel counts match the dispatches issued, durations are positive
//! and add up to no more than the wall time, and with the profiler off nothing is recorded.

mod common;

use std::time::Instant;

use suanli::{Activation, Tensor};

#[test]
fn counts_durations_and_off_means_off() {
    let Some(dev) = common::own_device(None) else {
        return;
    };
    if !dev.info().features.timestamp_inside_passes {
        assert!(
            dev.set_profiling(true).is_err(),
            "enabling must fail without timestamp support"
        );
        return;
    }
    let a = Tensor::rand_uniform(&dev, &[64, 64], -1.0, 1.0, 1).unwrap();
    // Off: work leaves no trace.
    let _ = a.matmul(&a).unwrap().to_vec().unwrap();
    assert!(dev.profile().kernels.is_empty());
    dev.set_profiling(true).unwrap();
    let t0 = Instant::now();
    for _ in 0..5 {
        let _ = a.matmul(&a).unwrap();
    }
    for _ in 0..3 {
        let _ = a.activation(Activation::Relu).unwrap();
    }
    let _ = a.to_vec().unwrap();
    let wall = t0.elapsed().as_secs_f64() * 1e9;
    dev.set_profiling(false).unwrap();
    let p = dev.profile();
    let calls = |needle: &str| {
        p.kernels
            .iter()
            .filter(|k| k.name.contains(needle))
            .map(|k| k.calls)
            .sum::<u64>()
    };
    assert_eq!(calls("matmul"), 5, "{}", p.table());
    assert_eq!(calls("unary_forward"), 3, "{}", p.table());
    assert!(p.kernels.iter().all(|k| k.total_ns > 0.0), "{}", p.table());
    assert!(
        p.total_ns() <= wall,
        "GPU {} ns > wall {wall} ns",
        p.total_ns()
    );
    assert!(p.table().contains("matmul"));
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
