//! Several devices in one process: a [`DeviceGroup`] and its job scheduler.
//!
//! Every member is an ordinary [`Device`] with its own pipelines, pool and statistics; any mix
//! of adapters works (an NVIDIA GPU beside an AMD one, or the software adapter opened twice
//! for testing). [`DeviceGroup::map`] runs independent jobs (batched inference, independent
//! matmuls, custom kernels over many inputs) on whichever device is free:
//!
//! - one worker thread per device pulls jobs from a shared queue, in order;
//! - a job declares the device memory it needs; a device only takes jobs that fit its memory
//!   limit (the configured one, else the adapter's largest buffer) next to what it already
//!   holds, so a big job waits for a device that can hold it instead of failing on a small
//!   one;
//! - faster devices are preferred: when several are idle, the one with the shortest measured
//!   mean job time takes the next job (the others wait a moment), so a slow device does not
//!   grab the last job while a fast one is about to be free;
//! - results come back in job order; a failing job reports its index and the device it ran
//!   on, and does not lose the other jobs' results.
//!
//! ```no_run
//! use suanli::multi::{DeviceGroup, Job};
//! let group = DeviceGroup::parse("all")?;
//! let jobs: Vec<Job<usize>> = (0..8).map(|i| Job::new(i, 4 << 20)).collect();
//! let sums = group.map(jobs, |dev, i| {
//!     let t = suanli::Tensor::full(dev, &[1 << 20], i as f32)?;
//!     Ok(t.sum(0)?.to_vec()?[0])
//! });
//! for r in sums {
//!     println!("{:?}", r.map_err(|e| e.to_string()));
//! }
//! # Ok::<(), suanli::Error>(())
//! ```

use std::collections::VecDeque;
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::runtime::Device;
use crate::telemetry::exposition::{Exposition, Kind, Labels};

/// Devices used together.
pub struct DeviceGroup {
    devices: Vec<Device>,
    jobs: JobStats,
}

/// Counters of one device's jobs in [`DeviceGroup::map`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DeviceJobs {
    /// Jobs finished without error.
    pub finished: u64,
    /// Jobs that returned an error.
    pub failed: u64,
    /// Seconds spent running jobs.
    pub busy_seconds: f64,
}

/// The job scheduler's counters, shared with whoever reports them (a `/metrics` server:
/// [`JobStats::render`]). Clones share the counters.
#[derive(Clone, Debug, Default)]
pub struct JobStats {
    inner: std::sync::Arc<Mutex<JobCounts>>,
}

/// Per device (spec, counters), jobs queued, jobs running.
type JobCounts = (Vec<(String, DeviceJobs)>, u64, u64);

impl JobStats {
    fn new(devices: &[Device]) -> JobStats {
        let per = devices
            .iter()
            .map(|d| (d.info().spec().to_string(), DeviceJobs::default()))
            .collect();
        JobStats {
            inner: std::sync::Arc::new(Mutex::new((per, 0, 0))),
        }
    }

    fn with(&self, f: impl FnOnce(&mut JobCounts)) {
        if let Ok(mut g) = self.inner.lock() {
            f(&mut g);
        }
    }

    /// Per device (spec, counters), jobs queued now, jobs running now.
    pub fn snapshot(&self) -> JobCounts {
        self.inner.lock().map(|g| g.clone()).unwrap_or_default()
    }

    /// The counters as Prometheus series (`suanli_jobs_*`).
    pub fn render(&self, e: &mut Exposition) {
        let (per, queued, running) = self.snapshot();
        let each = |f: &dyn Fn(&DeviceJobs) -> f64| -> Vec<(Labels, Option<f64>)> {
            per.iter()
                .enumerate()
                .map(|(i, (spec, j))| {
                    let l = vec![("device", spec.clone()), ("replica", i.to_string())];
                    (l, Some(f(j)))
                })
                .collect()
        };
        e.single(
            "suanli_jobs_queued",
            "Jobs waiting in DeviceGroup::map's queue.",
            Kind::Gauge,
            queued as f64,
        );
        e.single(
            "suanli_jobs_running",
            "Jobs running now.",
            Kind::Gauge,
            running as f64,
        );
        e.family(
            "suanli_jobs_finished_total",
            "Jobs finished without error, per device.",
            Kind::Counter,
            &each(&|j| j.finished as f64),
        );
        e.family(
            "suanli_jobs_failed_total",
            "Jobs that returned an error, per device.",
            Kind::Counter,
            &each(&|j| j.failed as f64),
        );
        e.family(
            "suanli_jobs_busy_seconds_total",
            "Seconds each device spent running jobs.",
            Kind::Counter,
            &each(&|j| j.busy_seconds),
        );
    }
}

impl DeviceGroup {
    /// Opens one device per spec (`["gpu:0", "gpu:1"]`; the same spec twice opens two
    /// independent devices on that adapter).
    pub fn new(specs: &[&str]) -> Result<DeviceGroup> {
        if specs.is_empty() {
            return Err(Error::InvalidArgument {
                op: "DeviceGroup::new",
                name: "specs",
                expected: "at least one device spec".into(),
                found: "none".into(),
            });
        }
        let devices = specs
            .iter()
            .map(|s| Device::open(s))
            .collect::<Result<Vec<_>>>()?;
        let jobs = JobStats::new(&devices);
        Ok(DeviceGroup { devices, jobs })
    }

    /// A group from a comma-separated list (`"gpu:0,gpu:1"`, `"cpu,cpu"`) or `"all"` (every
    /// hardware GPU, else the first software adapter).
    pub fn parse(list: &str) -> Result<DeviceGroup> {
        if list.trim() == "all" {
            let adapters = crate::device::devices()?;
            let gpus: Vec<String> = adapters
                .iter()
                .filter_map(|a| a.gpu_index.map(|i| format!("gpu:{i}")))
                .collect();
            if gpus.is_empty() {
                return DeviceGroup::new(&["auto"]);
            }
            let specs: Vec<&str> = gpus.iter().map(String::as_str).collect();
            return DeviceGroup::new(&specs);
        }
        let specs: Vec<&str> = list
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .collect();
        DeviceGroup::new(&specs)
    }

    /// A group of already opened devices.
    pub fn from_devices(devices: Vec<Device>) -> Result<DeviceGroup> {
        if devices.is_empty() {
            return Err(Error::InvalidArgument {
                op: "DeviceGroup::from_devices",
                name: "devices",
                expected: "at least one device".into(),
                found: "none".into(),
            });
        }
        let jobs = JobStats::new(&devices);
        Ok(DeviceGroup { devices, jobs })
    }

    /// The members, in order.
    pub fn devices(&self) -> &[Device] {
        &self.devices
    }

    /// Number of members.
    pub fn len(&self) -> usize {
        self.devices.len()
    }

    /// Never true (a group has at least one device).
    pub fn is_empty(&self) -> bool {
        self.devices.is_empty()
    }

    /// The most memory a job may need on member `i`: the configured limit, else the adapter's
    /// largest buffer.
    pub fn capacity(&self, i: usize) -> u64 {
        let d = &self.devices[i];
        d.memory_stats()
            .limit
            .unwrap_or(d.info().limits.max_buffer_size)
    }

    /// The job scheduler's counters (shared: they keep counting as [`DeviceGroup::map`]
    /// runs), for a `/metrics` server or a report.
    pub fn job_stats(&self) -> JobStats {
        self.jobs.clone()
    }

    /// Runs `f` on every job, each on some member device (see the module docs), and returns
    /// the results in job order.
    pub fn map<T, R, F>(&self, jobs: Vec<Job<T>>, f: F) -> Vec<std::result::Result<R, JobError>>
    where
        T: Send,
        R: Send,
        F: Fn(&Device, T) -> Result<R> + Sync,
    {
        let n = jobs.len();
        let caps: Vec<u64> = (0..self.len()).map(|i| self.capacity(i)).collect();
        let max_cap = caps.iter().copied().max().unwrap_or(0);
        let mut results: Vec<Option<std::result::Result<R, JobError>>> =
            (0..n).map(|_| None).collect();
        let mut queue = VecDeque::with_capacity(n);
        for (i, job) in jobs.into_iter().enumerate() {
            if job.memory > max_cap {
                results[i] = Some(Err(JobError {
                    job: i,
                    device: None,
                    error: Box::new(Error::OutOfMemory {
                        requested: job.memory,
                        in_use: 0,
                        limit: max_cap,
                    }),
                }));
            } else {
                queue.push_back((i, job));
            }
        }
        self.jobs.with(|j| j.1 += queue.len() as u64);
        let state = Mutex::new(Shared {
            queue,
            idle: vec![false; self.len()],
            running: 0,
            mean_secs: vec![None; self.len()],
            done: Vec::new(),
        });
        let wake = Condvar::new();
        std::thread::scope(|s| {
            for w in 0..self.devices.len() {
                let (devices, state, wake, f, caps) = (&self.devices, &state, &wake, &f, &caps);
                let stats = &self.jobs;
                s.spawn(move || worker(w, devices, caps, state, wake, f, stats));
            }
        });
        let shared = state.into_inner().unwrap_or_else(|p| p.into_inner());
        for (i, r) in shared.done {
            results[i] = Some(r);
        }
        results
            .into_iter()
            .enumerate()
            .map(|(i, r)| {
                r.unwrap_or_else(|| {
                    Err(JobError {
                        job: i,
                        device: None,
                        error: Box::new(Error::Gpu {
                            op: "DeviceGroup::map",
                            message: "internal error: job never ran".into(),
                        }),
                    })
                })
            })
            .collect()
    }
}

/// One job for [`DeviceGroup::map`]: its input and the device memory it needs, in bytes.
pub struct Job<T> {
    /// The job's input.
    pub input: T,
    /// Device memory the job allocates at most, in bytes.
    pub memory: u64,
}

impl<T> Job<T> {
    /// A job needing `memory` bytes of device memory.
    pub fn new(input: T, memory: u64) -> Job<T> {
        Job { input, memory }
    }
}

/// A job that failed: which one, where, and why.
#[derive(Debug)]
pub struct JobError {
    /// The job's index in the input.
    pub job: usize,
    /// The device it ran on (`None`: no device could hold it).
    pub device: Option<String>,
    /// What went wrong (boxed: errors carry messages and results stay small).
    pub error: Box<Error>,
}

impl std::fmt::Display for JobError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.device {
            Some(d) => write!(f, "job {} on {d}: {}", self.job, self.error),
            None => write!(f, "job {}: {}", self.job, self.error),
        }
    }
}

impl std::error::Error for JobError {}

type Outcome<R> = (usize, std::result::Result<R, JobError>);

struct Shared<T, R> {
    queue: VecDeque<(usize, Job<T>)>,
    /// Which workers are waiting for work.
    idle: Vec<bool>,
    /// Jobs running now.
    running: usize,
    /// Mean seconds per job, per worker (None until it ran one).
    mean_secs: Vec<Option<f64>>,
    done: Vec<Outcome<R>>,
}

/// Whether worker `w` should take the next job now: no idle worker known to be clearly
/// faster is waiting for it too.
fn my_turn<T, R>(st: &Shared<T, R>, w: usize) -> bool {
    let mine = st.mean_secs[w].unwrap_or(0.0);
    !st.idle
        .iter()
        .enumerate()
        .any(|(o, &idle)| o != w && idle && st.mean_secs[o].is_some_and(|m| m < mine * 0.8))
}

/// Whether a job of `memory` bytes fits on `dev` (capacity `cap`) next to what it holds.
fn fits(dev: &Device, cap: u64, memory: u64) -> bool {
    memory <= cap.saturating_sub(dev.memory_stats().in_use)
}

fn worker<T, R, F>(
    w: usize,
    devices: &[Device],
    caps: &[u64],
    state: &Mutex<Shared<T, R>>,
    wake: &Condvar,
    f: &F,
    stats: &JobStats,
) where
    F: Fn(&Device, T) -> Result<R>,
{
    let dev = &devices[w];
    let lock = || state.lock().unwrap_or_else(|p| p.into_inner());
    let mut yielded = false;
    loop {
        let mut st = lock();
        if st.queue.is_empty() {
            st.idle[w] = false;
            drop(st);
            wake.notify_all();
            return;
        }
        let pos = st
            .queue
            .iter()
            .position(|(_, j)| fits(dev, caps[w], j.memory));
        let take = match pos {
            Some(p) if yielded || my_turn(&st, w) => Some(p),
            Some(_) => None, // a faster idle device goes first; look again shortly
            None => {
                // Nothing here fits now. If nothing is running anywhere, memory will not free
                // up: a head job that fits no device now fails instead of waiting forever.
                let (i, head) = &st.queue[0];
                let fits_somewhere = devices
                    .iter()
                    .zip(caps)
                    .any(|(d, &c)| fits(d, c, head.memory));
                if st.running == 0 && !fits_somewhere {
                    let (i, need) = (*i, head.memory);
                    st.queue.pop_front();
                    stats.with(|j| j.1 = j.1.saturating_sub(1));
                    let in_use = dev.memory_stats().in_use;
                    st.done.push((
                        i,
                        Err(JobError {
                            job: i,
                            device: None,
                            error: Box::new(Error::OutOfMemory {
                                requested: need,
                                in_use,
                                limit: caps[w],
                            }),
                        }),
                    ));
                    continue;
                }
                None
            }
        };
        let Some(p) = take else {
            st.idle[w] = true;
            yielded = pos.is_some();
            let _ = wake
                .wait_timeout(st, Duration::from_millis(5))
                .unwrap_or_else(|p| p.into_inner());
            continue;
        };
        yielded = false;
        let (i, job) = st
            .queue
            .remove(p)
            .expect("internal error: picked job exists");
        st.idle[w] = false;
        st.running += 1;
        drop(st);
        stats.with(|j| {
            j.1 = j.1.saturating_sub(1);
            j.2 += 1;
        });
        let t = Instant::now();
        let r = f(dev, job.input).map_err(|error| JobError {
            job: i,
            device: Some(dev.name().to_string()),
            error: Box::new(error),
        });
        let secs = t.elapsed().as_secs_f64();
        stats.with(|j| {
            j.2 = j.2.saturating_sub(1);
            if let Some((_, d)) = j.0.get_mut(w) {
                d.busy_seconds += secs;
                if r.is_ok() {
                    d.finished += 1;
                } else {
                    d.failed += 1;
                }
            }
        });
        let mut st = lock();
        st.running -= 1;
        st.mean_secs[w] = Some(st.mean_secs[w].map_or(secs, |m| 0.7 * m + 0.3 * secs));
        st.done.push((i, r));
        drop(st);
        wake.notify_all();
    }
}
