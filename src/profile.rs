//! Kernel profiler: GPU time per kernel from timestamp queries written around every dispatch.
//!
//! Off by default; off, it costs one relaxed atomic load per recorder. On
//! ([`Device::set_profiling`]), every recorder writes a timestamp before and after each dispatch
//! (adapters with `TIMESTAMP_QUERY_INSIDE_PASSES`), and its submission waits for the GPU and
//! folds the durations into per-kernel totals, so profiling serialises submissions: measure
//! with it, not under it. [`Device::profile`] gives the table.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use crate::{Device, Error, Result};

/// At most this many timestamps per submission (wgpu's limit per query set); dispatches past
/// half of it in one submission are not timed (and counted in [`Profile::untimed`]).
pub const MAX_QUERIES: u32 = 4096;

/// One kernel's totals.
#[derive(Clone, Debug, PartialEq)]
pub struct KernelStat {
    /// The pipeline label, `shader::entry`.
    pub name: String,
    /// Dispatches timed.
    pub calls: u64,
    /// Total GPU time in nanoseconds.
    pub total_ns: f64,
}

impl KernelStat {
    /// Mean GPU time per dispatch in nanoseconds.
    pub fn mean_ns(&self) -> f64 {
        self.total_ns / self.calls.max(1) as f64
    }
}

/// The profiler's table, kernels sorted by total time.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Profile {
    /// Per kernel.
    pub kernels: Vec<KernelStat>,
    /// Dispatches that could not be timed (past the query budget of one submission).
    pub untimed: u64,
}

impl Profile {
    /// Sum of all kernels' GPU time in nanoseconds.
    pub fn total_ns(&self) -> f64 {
        self.kernels.iter().map(|k| k.total_ns).sum()
    }

    /// A printable table: kernel, calls, total ms, mean µs, share.
    pub fn table(&self) -> String {
        let total = self.total_ns().max(1.0);
        let mut s = format!(
            "{:<44} {:>8} {:>11} {:>10} {:>7}\n",
            "kernel", "calls", "total ms", "mean µs", "share"
        );
        for k in &self.kernels {
            s.push_str(&format!(
                "{:<44} {:>8} {:>11.2} {:>10.1} {:>6.1}%\n",
                k.name,
                k.calls,
                k.total_ns / 1e6,
                k.mean_ns() / 1e3,
                100.0 * k.total_ns / total
            ));
        }
        s
    }
}

/// Per kernel name: (calls, total ns).
type Totals = HashMap<String, (u64, f64)>;

/// At most this many dispatches are kept for the trace (the totals count them all).
pub const MAX_TRACE_EVENTS: usize = 1 << 20;

/// One timed dispatch: kernel, start (GPU clock, ns), duration (ns).
#[derive(Clone, Debug, PartialEq)]
pub struct TraceEvent {
    /// Kernel name.
    pub name: String,
    /// Start on the GPU's clock, in nanoseconds.
    pub start_ns: f64,
    /// Duration in nanoseconds.
    pub dur_ns: f64,
}

#[derive(Default)]
pub(crate) struct Profiler {
    pub(crate) enabled: AtomicBool,
    /// Totals and the count of untimed dispatches.
    stats: Mutex<(Totals, u64)>,
    events: Mutex<Vec<TraceEvent>>,
}

impl Profiler {
    pub(crate) fn add(&self, name: &str, start_ns: f64, ns: f64) {
        let mut s = self.stats.lock().unwrap_or_else(|p| p.into_inner());
        let e = s.0.entry(name.to_string()).or_insert((0, 0.0));
        e.0 += 1;
        e.1 += ns;
        drop(s);
        let mut ev = self.events.lock().unwrap_or_else(|p| p.into_inner());
        if ev.len() < MAX_TRACE_EVENTS {
            ev.push(TraceEvent {
                name: name.to_string(),
                start_ns,
                dur_ns: ns,
            });
        }
    }

    pub(crate) fn add_untimed(&self, n: u64) {
        self.stats.lock().unwrap_or_else(|p| p.into_inner()).1 += n;
    }
}

impl Device {
    /// Turns the kernel profiler on or off. Turning it on fails on adapters without timestamp
    /// queries inside compute passes.
    pub fn set_profiling(&self, on: bool) -> Result<()> {
        if on && !self.inner.desc.features.timestamp_inside_passes {
            return Err(Error::InvalidArgument {
                op: "set_profiling",
                name: "adapter",
                expected: "an adapter with timestamp queries inside compute passes".into(),
                found: format!("{} without them", self.name()),
            });
        }
        self.inner.profiler.enabled.store(on, Ordering::Relaxed);
        Ok(())
    }

    /// Whether the profiler is on.
    pub fn profiling(&self) -> bool {
        self.inner.profiler.enabled.load(Ordering::Relaxed)
    }

    /// The per-kernel table so far.
    pub fn profile(&self) -> Profile {
        let s = self
            .inner
            .profiler
            .stats
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        let mut kernels: Vec<KernelStat> =
            s.0.iter()
                .map(|(name, &(calls, total_ns))| KernelStat {
                    name: name.clone(),
                    calls,
                    total_ns,
                })
                .collect();
        kernels.sort_by(|a, b| b.total_ns.total_cmp(&a.total_ns).then(a.name.cmp(&b.name)));
        Profile {
            kernels,
            untimed: s.1,
        }
    }

    /// Clears the table and the trace.
    pub fn reset_profile(&self) {
        let mut s = self
            .inner
            .profiler
            .stats
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        s.0.clear();
        s.1 = 0;
        self.inner
            .profiler
            .events
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
    }

    /// The timed dispatches so far (at most [`MAX_TRACE_EVENTS`]), in submission order.
    pub fn trace_events(&self) -> Vec<TraceEvent> {
        self.inner
            .profiler
            .events
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Writes the timed dispatches as a Chrome trace (`chrome://tracing`, ui.perfetto.dev):
    /// one complete event (`"ph": "X"`) per dispatch, times in microseconds from the first.
    /// Written atomically.
    pub fn write_chrome_trace(&self, path: &std::path::Path) -> Result<()> {
        let events = self.trace_events();
        let t0 = events
            .iter()
            .map(|e| e.start_ns)
            .fold(f64::INFINITY, f64::min);
        let list: Vec<serde_json::Value> = events
            .iter()
            .map(|e| {
                serde_json::json!({
                    "name": e.name,
                    "cat": "kernel",
                    "ph": "X",
                    "ts": (e.start_ns - t0) / 1e3,
                    "dur": e.dur_ns / 1e3,
                    "pid": 0,
                    "tid": 0,
                })
            })
            .collect();
        let doc = serde_json::json!({
            "traceEvents": list,
            "displayTimeUnit": "ns",
            "otherData": { "device": self.name() },
        });
        crate::io::write_atomic(path, doc.to_string().as_bytes())
    }
}
