//! Kernel profiler and queue utilisation.
//!
//! **Profiler.** Off by default; off, it costs one relaxed atomic load per recorder. On
//! ([`Device::set_profiling`](crate::runtime::Device::set_profiling)), every recorder writes a GPU timestamp before and after each
//! dispatch (adapters with `TIMESTAMP_QUERY_INSIDE_PASSES`), and its submission waits for the
//! GPU and folds the durations into per-kernel totals, so profiling serialises submissions:
//! measure with it, not under it. Kernels that declare their work (matmul: FLOPs and bytes;
//! optimizers and gathers: bytes) also get achieved GFLOP/s and GB/s. Adapters without
//! timestamp queries fall back to wall-clock time around each submission
//! ([`ProfileClock::WallClock`]), which the report says. [`Profiler::profile`] gives the
//! table, [`Profiler::write_chrome_trace`] a Chrome / Perfetto trace (the device handle has
//! both as methods).
//!
//! **Utilisation.** Always on and cheap (one lock and one completion callback per
//! submission): the device counts the time during which it had submitted, unfinished work.
//! [`Profiler::utilisation_window`] turns that into busy/wall over a window (an epoch).
//! Completion is observed when the runtime polls (every wait, every submission), so this is
//! queue occupancy, an upper bound on the time the GPU spent executing; the profiler's summed
//! kernel time is the matching lower bound.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::device::core::DeviceCore;
use crate::error::{Error, Result};

/// At most this many timestamps per submission (wgpu's limit per query set); dispatches past
/// half of it in one submission are not timed (and counted in [`Profile::untimed`]).
pub const MAX_QUERIES: u32 = 4096;

/// Work a dispatch declares, for achieved rates in the profile.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Work {
    /// Floating-point operations (a multiply-add counts 2).
    pub flops: f64,
    /// Bytes read and written from device memory (each operand once).
    pub bytes: f64,
}

/// How the profiler measured time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ProfileClock {
    /// GPU timestamps around every dispatch.
    #[default]
    Timestamps,
    /// GPU timestamps at pass boundaries (adapters with timestamp queries but not inside
    /// passes): each dispatch gets its own pass while profiling.
    PassTimestamps,
    /// Wall clock around every submission (adapters without timestamp queries inside
    /// passes): one entry per submission, named after the kernels in it.
    WallClock,
}

/// One kernel's totals.
#[derive(Clone, Debug, PartialEq)]
pub struct KernelStat {
    /// The pipeline label, `shader::entry` (with the wall clock: the submission's kernels).
    pub name: String,
    /// Dispatches timed.
    pub calls: u64,
    /// Total GPU time in nanoseconds.
    pub total_ns: f64,
    /// Total declared FLOPs, for kernels that declare their work.
    pub flops: Option<f64>,
    /// Total declared bytes moved, for kernels that declare their work.
    pub bytes: Option<f64>,
}

impl KernelStat {
    /// Mean GPU time per dispatch in nanoseconds.
    pub fn mean_ns(&self) -> f64 {
        self.total_ns / self.calls.max(1) as f64
    }

    /// Achieved GFLOP/s over all calls, where the kernel declares its FLOPs.
    pub fn gflops(&self) -> Option<f64> {
        self.flops
            .filter(|f| *f > 0.0)
            .map(|f| f / self.total_ns.max(1.0))
    }

    /// Achieved GB/s over all calls, where the kernel declares its bytes.
    pub fn gbps(&self) -> Option<f64> {
        self.bytes
            .filter(|b| *b > 0.0)
            .map(|b| b / self.total_ns.max(1.0))
    }
}

/// The profiler's table, kernels sorted by total time.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Profile {
    /// Per kernel.
    pub kernels: Vec<KernelStat>,
    /// Dispatches that could not be timed (past the query budget of one submission).
    pub untimed: u64,
    /// How time was measured.
    pub clock: ProfileClock,
}

impl Profile {
    /// Sum of all kernels' GPU time in nanoseconds.
    pub fn total_ns(&self) -> f64 {
        self.kernels.iter().map(|k| k.total_ns).sum()
    }

    /// A printable table: kernel, calls, total ms, mean µs, share, GFLOP/s, GB/s; the top
    /// `limit` kernels (all with `usize::MAX`).
    pub fn table(&self, limit: usize) -> String {
        let total = self.total_ns().max(1.0);
        let mut s = String::new();
        if self.clock == ProfileClock::WallClock {
            s.push_str("(wall clock around submissions: this adapter has no timestamp queries inside passes)\n");
        }
        s.push_str(&format!(
            "{:<44} {:>8} {:>11} {:>10} {:>7} {:>9} {:>8}\n",
            "kernel", "calls", "total ms", "mean µs", "share", "GFLOP/s", "GB/s"
        ));
        let rate = |v: Option<f64>| v.map_or_else(|| "-".to_string(), |r| format!("{r:.2}"));
        for k in self.kernels.iter().take(limit) {
            let mut name = k.name.clone();
            if name.chars().count() > 44 {
                name = name.chars().take(43).collect::<String>() + "…";
            }
            s.push_str(&format!(
                "{:<44} {:>8} {:>11.2} {:>10.1} {:>6.1}% {:>9} {:>8}\n",
                name,
                k.calls,
                k.total_ns / 1e6,
                k.mean_ns() / 1e3,
                100.0 * k.total_ns / total,
                rate(k.gflops()),
                rate(k.gbps()),
            ));
        }
        if self.kernels.len() > limit {
            s.push_str(&format!(
                "… and {} more kernels\n",
                self.kernels.len() - limit
            ));
        }
        if self.untimed > 0 {
            s.push_str(&format!(
                "({} dispatches past the per-submission query budget were not timed)\n",
                self.untimed
            ));
        }
        s
    }
}

/// Per kernel name: calls, total ns, declared work (summed) if any.
type Totals = HashMap<String, (u64, f64, Option<Work>)>;

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

/// Profiler modes.
pub(crate) const OFF: u8 = 0;
pub(crate) const TIMESTAMPS: u8 = 1;
pub(crate) const WALL: u8 = 2;
pub(crate) const PASSES: u8 = 3;

/// A device's profiler: per-kernel totals, the trace, and queue occupancy.
#[derive(Default)]
pub struct Profiler {
    /// [`OFF`], [`TIMESTAMPS`], [`WALL`] or [`PASSES`].
    pub(crate) mode: AtomicU8,
    /// The clock of the last time it was on ([`TIMESTAMPS`] or [`WALL`]; [`OFF`] if never).
    last_clock: AtomicU8,
    /// Totals and the count of untimed dispatches.
    stats: Mutex<(Totals, u64)>,
    events: Mutex<Vec<TraceEvent>>,
    /// Queue occupancy.
    pub(crate) busy: Arc<Mutex<Busy>>,
}

/// Time with submitted, unfinished work. Every method takes the time it happens at, so the
/// accounting is tested with made-up instants rather than with sleeps.
#[derive(Default)]
pub(crate) struct Busy {
    in_flight: u64,
    since: Option<Instant>,
    total: Duration,
}

impl Busy {
    /// A submission enters the queue at `now`.
    pub(crate) fn start(&mut self, now: Instant) {
        if self.in_flight == 0 {
            self.since = Some(now);
        }
        self.in_flight += 1;
    }

    /// A submission finished at `now`; the queue is idle when none is left.
    pub(crate) fn finish(&mut self, now: Instant) {
        self.in_flight = self.in_flight.saturating_sub(1);
        if self.in_flight == 0 {
            if let Some(t) = self.since.take() {
                self.total += now.saturating_duration_since(t);
            }
        }
    }

    /// Busy time up to `now`, counting an open interval.
    pub(crate) fn at(&self, now: Instant) -> Duration {
        self.total
            + self
                .since
                .map_or(Duration::ZERO, |t| now.saturating_duration_since(t))
    }
}

impl Profiler {
    pub(crate) fn add(&self, name: &str, start_ns: f64, ns: f64, work: Option<Work>) {
        let mut s = self.stats.lock().unwrap_or_else(|p| p.into_inner());
        let e = s.0.entry(name.to_string()).or_insert((0, 0.0, None));
        e.0 += 1;
        e.1 += ns;
        if let Some(w) = work {
            let t = e.2.get_or_insert_with(Work::default);
            t.flops += w.flops;
            t.bytes += w.bytes;
        }
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

    /// Counts a submission as in flight from now (call just before `queue.submit`) …
    pub(crate) fn submitting(&self) {
        self.busy
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .start(Instant::now());
    }

    /// … until `queue` reports it done (call just after `queue.submit`).
    pub(crate) fn submitted(&self, queue: &wgpu::Queue) {
        let busy = self.busy.clone();
        queue.on_submitted_work_done(move || {
            busy.lock()
                .unwrap_or_else(|p| p.into_inner())
                .finish(Instant::now());
        });
    }

    /// Nanoseconds from the profiler's first use to `t`: the wall-clock trace's time base.
    pub(crate) fn wall_ns(&self, t: Instant) -> f64 {
        static EPOCH: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
        let e = *EPOCH.get_or_init(|| t);
        t.saturating_duration_since(e).as_nanos() as f64
    }

    fn busy_now(&self) -> Duration {
        self.busy
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .at(Instant::now())
    }
}

/// A window over which to measure a device's utilisation
/// (`Profiler::utilisation_window`, through [`crate::runtime::Device::utilisation_window`]).
pub struct UtilisationWindow {
    core: Arc<DeviceCore>,
    profiler: Arc<Profiler>,
    start: Instant,
    busy0: Duration,
    kernel_ns0: f64,
}

/// Busy time over wall time for a window.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Utilisation {
    /// Wall time of the window.
    pub wall: Duration,
    /// Time the queue held submitted, unfinished work (an upper bound on GPU busy time).
    pub busy: Duration,
    /// Summed kernel time from the profiler in the window (a lower bound), if it was on.
    pub kernel_time: Option<Duration>,
}

impl Utilisation {
    /// `busy / wall`, in [0, 1].
    pub fn fraction(&self) -> f64 {
        (self.busy.as_secs_f64() / self.wall.as_secs_f64().max(1e-9)).min(1.0)
    }

    /// `kernel_time / wall`, with the profiler on.
    pub fn kernel_fraction(&self) -> Option<f64> {
        self.kernel_time
            .map(|k| (k.as_secs_f64() / self.wall.as_secs_f64().max(1e-9)).min(1.0))
    }
}

impl UtilisationWindow {
    /// Utilisation from the window's start until now (the window stays open).
    pub fn utilisation(&self) -> Utilisation {
        self.core.poll();
        let kernel_ns = self.profiler.profile().total_ns();
        Utilisation {
            wall: self.start.elapsed(),
            busy: self.profiler.busy_now().saturating_sub(self.busy0),
            kernel_time: self
                .profiler
                .enabled()
                .then(|| Duration::from_nanos((kernel_ns - self.kernel_ns0).max(0.0) as u64)),
        }
    }
}

impl Profiler {
    /// The clock [`Profiler::set_enabled`] uses on this adapter: timestamps around every
    /// dispatch where it has them inside passes, at pass boundaries where it has them only
    /// there, the wall clock otherwise.
    pub fn best_clock(core: &DeviceCore) -> ProfileClock {
        let f = core.desc().features;
        if f.timestamp_inside_passes {
            ProfileClock::Timestamps
        } else if f.timestamp_query {
            ProfileClock::PassTimestamps
        } else {
            ProfileClock::WallClock
        }
    }

    /// Turns the profiler on with the adapter's best clock, or off.
    pub fn set_enabled(&self, core: &DeviceCore, on: bool) {
        if on {
            let clock = Profiler::best_clock(core);
            if clock == ProfileClock::WallClock {
                log::info!(
                    "{}: no timestamp queries inside passes; profiling with the wall clock",
                    core.desc().name
                );
            }
            // Only fails for a clock the adapter lacks, and the best clock is one it has.
            let _ = self.set_clock(core, clock);
        } else {
            self.mode.store(OFF, Ordering::Relaxed);
        }
    }

    /// Turns the profiler on with a given clock: [`ProfileClock::WallClock`] works everywhere,
    /// [`ProfileClock::PassTimestamps`] needs timestamp queries, [`ProfileClock::Timestamps`]
    /// timestamp queries inside passes.
    pub fn set_clock(&self, core: &DeviceCore, clock: ProfileClock) -> Result<()> {
        let f = core.desc().features;
        if (clock == ProfileClock::Timestamps && !f.timestamp_inside_passes)
            || (clock == ProfileClock::PassTimestamps && !f.timestamp_query)
        {
            return Err(Error::InvalidArgument {
                op: "set_profiling_clock",
                name: "clock",
                expected: format!("an adapter with the timestamp queries {clock:?} needs"),
                found: format!("{} without them", core.desc().name),
            });
        }
        let mode = match clock {
            ProfileClock::Timestamps => TIMESTAMPS,
            ProfileClock::WallClock => WALL,
            ProfileClock::PassTimestamps => PASSES,
        };
        self.mode.store(mode, Ordering::Relaxed);
        self.last_clock.store(mode, Ordering::Relaxed);
        Ok(())
    }

    /// Whether the profiler is on.
    pub fn enabled(&self) -> bool {
        self.mode.load(Ordering::Relaxed) != OFF
    }

    /// Opens a utilisation window over `core`'s queue.
    pub fn utilisation_window(self: &Arc<Self>, core: &Arc<DeviceCore>) -> UtilisationWindow {
        core.poll();
        UtilisationWindow {
            core: core.clone(),
            profiler: self.clone(),
            start: Instant::now(),
            busy0: self.busy_now(),
            kernel_ns0: self.profile().total_ns(),
        }
    }

    /// The per-kernel table so far.
    pub fn profile(&self) -> Profile {
        let s = self.stats.lock().unwrap_or_else(|p| p.into_inner());
        let mut kernels: Vec<KernelStat> =
            s.0.iter()
                .map(|(name, &(calls, total_ns, work))| KernelStat {
                    name: name.clone(),
                    calls,
                    total_ns,
                    flops: work.map(|w| w.flops),
                    bytes: work.map(|w| w.bytes),
                })
                .collect();
        kernels.sort_by(|a, b| b.total_ns.total_cmp(&a.total_ns).then(a.name.cmp(&b.name)));
        Profile {
            kernels,
            untimed: s.1,
            clock: match self.last_clock.load(Ordering::Relaxed) {
                WALL => ProfileClock::WallClock,
                PASSES => ProfileClock::PassTimestamps,
                _ => ProfileClock::Timestamps,
            },
        }
    }

    /// Clears the table and the trace.
    pub fn reset(&self) {
        let mut s = self.stats.lock().unwrap_or_else(|p| p.into_inner());
        s.0.clear();
        s.1 = 0;
        self.events
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
    }

    /// The timed dispatches so far (at most [`MAX_TRACE_EVENTS`]), in submission order.
    pub fn trace_events(&self) -> Vec<TraceEvent> {
        self.events
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Writes the timed dispatches as a Chrome trace (`chrome://tracing`, ui.perfetto.dev):
    /// one complete event (`"ph": "X"`) per dispatch, times in microseconds from the first.
    /// Written atomically.
    pub fn write_chrome_trace(&self, path: &std::path::Path, device_name: &str) -> Result<()> {
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
            "otherData": { "device": device_name },
        });
        crate::io::write_atomic(path, doc.to_string().as_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::Busy;
    use std::time::{Duration, Instant};

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn busy_counts_time_with_work_in_flight_once() {
        let t0 = Instant::now();
        let mut b = Busy::default();
        assert_eq!(b.at(t0 + 5 * MS), Duration::ZERO, "idle: nothing counted");
        // Two overlapping submissions: 10..30 and 20..40 ms are busy 10..40.
        b.start(t0 + 10 * MS);
        b.start(t0 + 20 * MS);
        b.finish(t0 + 30 * MS);
        assert_eq!(
            b.at(t0 + 35 * MS),
            25 * MS,
            "an open interval counts up to now"
        );
        b.finish(t0 + 40 * MS);
        assert_eq!(b.at(t0 + 100 * MS), 30 * MS);
        // Idle from 40 to 100 ms; then 100..101 ms.
        b.start(t0 + 100 * MS);
        b.finish(t0 + 101 * MS);
        assert_eq!(b.at(t0 + 200 * MS), 31 * MS);
        // A finish without a start (a callback after a reset) does not underflow.
        b.finish(t0 + 300 * MS);
        assert_eq!(b.at(t0 + 400 * MS), 31 * MS);
    }
}
