//! Several processes, on one machine or many, through MPI (cargo feature `mpi`): an
//! [`Exchange`] for [`crate::nn::Sequential::fit_distributed`].
//!
//! ```no_run
//! # fn main() -> suanli::Result<()> {
//! use suanli::multi::{mpi::Mpi, DeviceGroup, ParallelOptions};
//! let mut mpi = Mpi::init()?; // once per process, under mpirun or srun
//! let dev = mpi.device(None)?; // a GPU chosen by the local rank
//! # let (mut model, train): (suanli::nn::Sequential, suanli::data::Dataset) = todo!();
//! let group = DeviceGroup::from_devices(vec![dev])?;
//! model.fit_distributed(&group, &[train], Default::default(), &ParallelOptions::default(), &mut mpi)?;
//! # Ok(()) }
//! ```
//!
//! **Threads.** rsmpi's communicators cannot move between threads, and MPI only progresses
//! while some thread is inside an MPI call, so one communication thread initialises MPI
//! (`MPI_THREAD_FUNNELED`: that thread makes every MPI call), owns it, and works through jobs
//! sent by the training thread: gradient buckets to sum (which therefore overlap the backward
//! pass still running on the device) and small messages every rank must see.
//!
//! **Sums.** A ring all-reduce by point-to-point messages between neighbours: a
//! reduce-scatter in which chunk `c` is summed in ring order starting at rank `c`, then an
//! all-gather that copies each finished chunk to every rank, so every rank holds the same bits.
//! Each rank sends `2·(N−1)/N` of a bucket per step. Small messages (metrics, decisions,
//! hashes, the run's description) go round the same ring.
//!
//! **Faults.** Open MPI 4 tells no survivor that a peer died, and rsmpi turns every MPI error
//! into an abort. So every wait is bounded and watched:
//! - a rank whose training returns an error tells every other rank (a fault message naming
//!   itself) before the error reaches its caller; the others stop with
//!   [`Error::PeerFailed`] naming it;
//! - a rank that waited `SUANLI_MPI_TIMEOUT` seconds (default 60) for a neighbour tells the
//!   others, listens a few seconds for their reports, and names the rank that answered
//!   nobody;
//! - a rank killed outright is noticed by the launcher (mpirun, srun), which ends the job and
//!   names it; the others' deadlines cover launchers that do not;
//! - a panic on a rank of several aborts the whole job (`MPI_Abort`) instead of leaving the
//!   others waiting (the hook is installed by [`Mpi::init`] and calls the previous hook first).
//!
//! After [`Error::PeerFailed`] the process should exit with a non-zero status: the
//! communication thread stays parked inside the failed exchange (leaving it would abort the
//! process), and MPI cannot be used again.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::config;
use crate::device;
use crate::error::{Error, Result};
use crate::multi::exchange::{sum_in_order, Combined, Exchange, ExchangeStats};
use crate::multi::mpi_ring::{comm_thread, Fatal, Info, Job, ABORT_ON_PANIC};
use crate::runtime::Device;

/// MPI is initialised at most once per process.
static STARTED: AtomicBool = AtomicBool::new(false);

/// This process's place in an MPI run, and the [`Exchange`] over it (see the module docs).
pub struct Mpi {
    info: Info,
    timeout: Duration,
    jobs: Sender<Job>,
    inflight: VecDeque<(usize, Receiver<Combined>)>,
    /// Singleton runs (one rank) combine here, without the thread.
    local: Vec<(usize, Combined)>,
    failure: Arc<Mutex<Option<String>>>,
    fatal: Fatal,
    stats: Arc<Mutex<ExchangeStats>>,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for Mpi {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Mpi {{ rank {} of {}, local rank {} of {} on {}, {} }}",
            self.info.rank,
            self.info.ranks,
            self.info.local_rank,
            self.info.local_ranks,
            self.info.host,
            self.info.library
        )
    }
}

impl Mpi {
    /// Initialises MPI (once per process) on a communication thread of its own and installs
    /// the panic hook that aborts the job (see the module docs). Works under `mpirun`/`srun`
    /// and as a single process started directly (one rank).
    pub fn init() -> Result<Mpi> {
        if STARTED.swap(true, Ordering::SeqCst) {
            return Err(Error::Mpi {
                message: "MPI is initialised once per process: keep and reuse the first Mpi".into(),
            });
        }
        let timeout = config::mpi_timeout()?;
        let (info_tx, info_rx) = mpsc::channel();
        let (jobs, job_rx) = mpsc::channel();
        let failure: Arc<Mutex<Option<String>>> = Arc::default();
        let fatal: Fatal = Arc::default();
        let stats: Arc<Mutex<ExchangeStats>> = Arc::default();
        let (f2, fa2, s2) = (failure.clone(), fatal.clone(), stats.clone());
        let thread = std::thread::Builder::new()
            .name("suanli-mpi".into())
            .spawn(move || comm_thread(info_tx, job_rx, f2, fa2, s2, timeout))
            .map_err(|e| Error::Mpi {
                message: format!("could not start the communication thread: {e}"),
            })?;
        let info = info_rx
            .recv()
            .map_err(|_| Error::Mpi {
                message: "the communication thread ended during MPI initialisation".into(),
            })?
            .map_err(|message| Error::Mpi { message })?;
        if info.ranks > 1 {
            install_panic_hook();
            ABORT_ON_PANIC.store(true, Ordering::SeqCst);
        }
        log::info!(
            "MPI: rank {} of {} (local {} of {}) on {}; {}",
            info.rank,
            info.ranks,
            info.local_rank,
            info.local_ranks,
            info.host,
            info.library
        );
        Ok(Mpi {
            info,
            timeout,
            jobs,
            inflight: VecDeque::new(),
            local: Vec::new(),
            failure,
            fatal,
            stats,
            thread: Some(thread),
        })
    }

    /// This process's rank among the processes on its machine: the index of the GPU it
    /// should drive.
    pub fn local_rank(&self) -> usize {
        self.info.local_rank
    }

    /// Processes on this machine.
    pub fn local_ranks(&self) -> usize {
        self.info.local_ranks
    }

    /// The machine's name as MPI reports it.
    pub fn host(&self) -> &str {
        &self.info.host
    }

    /// The MPI library's version line.
    pub fn library(&self) -> &str {
        &self.info.library
    }

    /// How long a rank waits for another before it reports that one as failed.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// The device this rank drives: `spec` if given, else the hardware GPU of index
    /// `local_rank % GPUs` (so ranks on a machine spread over its GPUs), else the default
    /// (`SUANLI_DEVICE`, `auto`).
    pub fn device(&self, spec: Option<&str>) -> Result<Device> {
        if let Some(s) = spec {
            return Device::open(s);
        }
        let gpus = device::devices()?.iter().filter(|a| a.is_gpu()).count();
        if gpus > 0 {
            Device::open(&format!("gpu:{}", self.info.local_rank % gpus))
        } else {
            Device::open("auto")
        }
    }

    /// The communication thread's failure, if it had one.
    fn fatal(&self) -> Option<Error> {
        self.fatal
            .lock()
            .ok()
            .and_then(|g| g.clone())
            .map(|(rank, message)| Error::PeerFailed { rank, message })
    }

    /// Waits for a job's reply, or the communication thread's failure.
    fn wait<T>(&self, rx: &Receiver<T>) -> Result<T> {
        loop {
            match rx.recv_timeout(Duration::from_millis(20)) {
                Ok(v) => return Ok(v),
                Err(RecvTimeoutError::Timeout) => {
                    if let Some(e) = self.fatal() {
                        return Err(e);
                    }
                }
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(self.fatal().unwrap_or(Error::Mpi {
                        message: "the communication thread has ended".into(),
                    }))
                }
            }
        }
    }

    fn send(&self, job: Job) -> Result<()> {
        if let Some(e) = self.fatal() {
            return Err(e);
        }
        self.jobs.send(job).map_err(|_| {
            self.fatal().unwrap_or(Error::Mpi {
                message: "the communication thread has ended".into(),
            })
        })
    }
}

impl Exchange for Mpi {
    fn rank(&self) -> usize {
        self.info.rank
    }

    fn ranks(&self) -> usize {
        self.info.ranks
    }

    fn start(&mut self, bucket: usize, parts: Vec<Vec<f32>>) -> Result<()> {
        let started = Instant::now();
        let data = sum_in_order(parts)?;
        if let Ok(mut s) = self.stats.lock() {
            s.buckets += 1;
        }
        if self.info.ranks == 1 {
            let done = Instant::now();
            self.local.push((
                bucket,
                Combined {
                    data,
                    started,
                    done,
                },
            ));
            return Ok(());
        }
        let (reply, rx) = mpsc::channel();
        self.send(Job::Reduce { data, reply })?;
        self.inflight.push_back((bucket, rx));
        Ok(())
    }

    fn finish(&mut self, bucket: usize) -> Result<Combined> {
        if let Some(at) = self.local.iter().position(|(b, _)| *b == bucket) {
            return Ok(self.local.swap_remove(at).1);
        }
        let at = self.inflight.iter().position(|(b, _)| *b == bucket);
        match at.and_then(|i| self.inflight.remove(i)) {
            Some((_, rx)) => self.wait(&rx),
            None => Err(Error::Internal {
                op: "MPI exchange",
                message: format!("bucket {bucket} finished but never started"),
            }),
        }
    }

    fn all_gather(&mut self, bytes: Vec<u8>) -> Result<Vec<Vec<u8>>> {
        if self.info.ranks == 1 {
            return Ok(vec![bytes]);
        }
        let (reply, rx) = mpsc::channel();
        self.send(Job::Gather { bytes, reply })?;
        self.wait(&rx)
    }

    fn fail(&mut self, message: &str) {
        if self.info.ranks == 1 {
            return;
        }
        if let Ok(mut f) = self.failure.lock() {
            *f = Some(message.to_string());
        }
        let _ = self.jobs.send(Job::Fail);
    }

    fn take_stats(&mut self) -> ExchangeStats {
        self.stats
            .lock()
            .map(|mut s| std::mem::take(&mut *s))
            .unwrap_or_default()
    }
}

impl Drop for Mpi {
    fn drop(&mut self) {
        let failed =
            self.fatal().is_some() || self.failure.lock().map(|f| f.is_some()).unwrap_or(true);
        if failed {
            // The communication thread is parked inside a failed exchange: leave it (the
            // process is about to exit; MPI cannot finish normally).
            return;
        }
        let (reply, rx) = mpsc::channel();
        if self.jobs.send(Job::Shutdown { reply }).is_ok()
            && rx
                .recv_timeout(self.timeout + Duration::from_secs(5))
                .is_ok()
        {
            if let Some(t) = self.thread.take() {
                let _ = t.join();
            }
        }
    }
}

fn install_panic_hook() {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        previous(info);
        if ABORT_ON_PANIC.swap(false, Ordering::SeqCst) {
            // SAFETY: MPI is initialised and not finalised (the flag is cleared before
            // MPI_Finalize); MPI_Abort ends every process of the job and does not return.
            unsafe {
                mpi::ffi::MPI_Abort(mpi::ffi::RSMPI_COMM_WORLD, 101);
            }
        }
    }));
}
