//! The communication thread of [`crate::multi::mpi`]: it initialises MPI, owns it, and works
//! through the training thread's jobs (ring all-reduces of gradient buckets, small messages
//! every rank must see), watching every wait for a peer's fault report, this process's own
//! failure and the deadline (the fault protocol is described in [`crate::multi::mpi`]).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mpi::request::StaticScope;
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;
use mpi::Threading;

use crate::multi::exchange::{Combined, ExchangeStats};

const TAG_DATA: i32 = 11;
const TAG_BLOB: i32 = 12;
const TAG_FAULT: i32 = 13;

/// Set while MPI is up and there are several ranks: the panic hook aborts the job then.
pub(crate) static ABORT_ON_PANIC: AtomicBool = AtomicBool::new(false);

/// A failure seen by the communication thread: the rank it blames and why.
pub(crate) type Fatal = Arc<Mutex<Option<(usize, String)>>>;

/// What the training thread asks of the communication thread.
pub(crate) enum Job {
    Reduce {
        data: Vec<f32>,
        reply: Sender<Combined>,
    },
    Gather {
        bytes: Vec<u8>,
        reply: Sender<Vec<Vec<u8>>>,
    },
    /// The training thread failed: tell the others.
    Fail,
    Shutdown {
        reply: Sender<()>,
    },
}

/// What the communication thread learns at start.
pub(crate) struct Info {
    pub(crate) rank: usize,
    pub(crate) ranks: usize,
    pub(crate) local_rank: usize,
    pub(crate) local_ranks: usize,
    pub(crate) host: String,
    pub(crate) library: String,
}

/// The communication thread: initialises MPI, reports who it is, then works through jobs
/// until shut down (see the module docs).
pub(crate) fn comm_thread(
    info_tx: Sender<std::result::Result<Info, String>>,
    jobs: Receiver<Job>,
    failure: Arc<Mutex<Option<String>>>,
    fatal: Fatal,
    stats: Arc<Mutex<ExchangeStats>>,
    timeout: Duration,
) {
    let Some((universe, _threading)) = mpi::initialize_with_threading(Threading::Funneled) else {
        let _ = info_tx.send(Err(
            "MPI was initialised already by other code in this process".into(),
        ));
        return;
    };
    let world = universe.world();
    let rank = world.rank() as usize;
    let ranks = world.size() as usize;
    let node = world.split_shared(rank as i32);
    let info = Info {
        rank,
        ranks,
        local_rank: node.rank() as usize,
        local_ranks: node.size() as usize,
        host: mpi::environment::processor_name().unwrap_or_else(|_| "?".into()),
        library: mpi::environment::library_version()
            .map(|v| v.lines().next().unwrap_or("").to_string())
            .unwrap_or_default(),
    };
    let _ = info_tx.send(Ok(info));
    let ring = Ring {
        world: &world,
        rank,
        ranks,
        timeout,
        failure,
        fatal,
        stats,
    };
    for job in jobs.iter() {
        match job {
            Job::Reduce { mut data, reply } => {
                let started = Instant::now();
                ring.all_reduce(&mut data);
                let _ = reply.send(Combined {
                    data,
                    started,
                    done: Instant::now(),
                });
            }
            Job::Gather { bytes, reply } => {
                let _ = reply.send(ring.all_gather(bytes));
            }
            Job::Fail => ring.check(Instant::now(), "", rank),
            Job::Shutdown { reply } => {
                // Nobody finalises while another rank may still need it.
                ring.all_gather(Vec::new());
                ABORT_ON_PANIC.store(false, Ordering::SeqCst);
                drop(node);
                drop(universe);
                let _ = reply.send(());
                return;
            }
        }
    }
}

/// The ring of ranks, as seen by the communication thread.
struct Ring<'w> {
    world: &'w SimpleCommunicator,
    rank: usize,
    ranks: usize,
    timeout: Duration,
    failure: Arc<Mutex<Option<String>>>,
    fatal: Fatal,
    stats: Arc<Mutex<ExchangeStats>>,
}

/// Polls an optional request: `None` once it has completed.
macro_rules! poll {
    ($r:expr) => {
        if let Some(q) = $r.take() {
            if let Err(q) = q.test() {
                $r = Some(q);
            }
        }
    };
}

impl Ring<'_> {
    fn right(&self) -> usize {
        (self.rank + 1) % self.ranks
    }

    fn left(&self) -> usize {
        (self.rank + self.ranks - 1) % self.ranks
    }

    /// Sums `data` over every rank in place (see the module docs).
    fn all_reduce(&self, data: &mut [f32]) {
        let n = self.ranks;
        if n == 1 {
            return;
        }
        let len = data.len();
        let chunk = |c: usize| c * len / n..(c + 1) * len / n;
        let mut tmp = vec![0f32; len / n + 1];
        for s in 0..n - 1 {
            let send = chunk((self.rank + n - s) % n);
            let recv = chunk((self.rank + 2 * n - s - 1) % n);
            let m = recv.len();
            self.swap(&data[send], &mut tmp[..m], "summing gradients");
            for (d, t) in data[recv].iter_mut().zip(&tmp[..m]) {
                *d += *t;
            }
        }
        for s in 0..n - 1 {
            let send = chunk((self.rank + 1 + n - s) % n);
            let recv = chunk((self.rank + n - s) % n);
            let m = recv.len();
            self.swap(&data[send], &mut tmp[..m], "gathering summed gradients");
            data[recv].copy_from_slice(&tmp[..m]);
        }
    }

    /// Sends `send` to the right neighbour while receiving `recv` from the left one.
    fn swap(&self, send: &[f32], recv: &mut [f32], what: &str) {
        let right = self.world.process_at_rank(self.right() as i32);
        let left = self.world.process_at_rank(self.left() as i32);
        mpi::request::scope(|scope| {
            let mut s = Some(right.immediate_send_with_tag(scope, send, TAG_DATA));
            let mut r = Some(left.immediate_receive_into_with_tag(scope, recv, TAG_DATA));
            let t0 = Instant::now();
            let mut spins = 0u32;
            loop {
                poll!(s);
                poll!(r);
                if s.is_none() && r.is_none() {
                    break;
                }
                let peer = if r.is_some() {
                    self.left()
                } else {
                    self.right()
                };
                self.check(t0, what, peer);
                pause(&mut spins);
            }
        });
        self.sent(send.len() * 4);
    }

    /// Every rank's bytes, in rank order, passed round the ring.
    fn all_gather(&self, mine: Vec<u8>) -> Vec<Vec<u8>> {
        let n = self.ranks;
        let mut all = vec![Vec::new(); n];
        all[self.rank] = mine;
        let right = self.world.process_at_rank(self.right() as i32);
        let left = self.world.process_at_rank(self.left() as i32);
        for s in 0..n - 1 {
            let send = (self.rank + n - s) % n;
            let recv = (self.rank + 2 * n - s - 1) % n;
            let got = mpi::request::scope(|scope| {
                let mut q = Some(right.immediate_send_with_tag(scope, &all[send][..], TAG_BLOB));
                let mut got: Option<Vec<u8>> = None;
                let t0 = Instant::now();
                let mut spins = 0u32;
                loop {
                    poll!(q);
                    if got.is_none() {
                        if let Some(m) = left.immediate_matched_probe_with_tag(TAG_BLOB) {
                            got = Some(m.matched_receive_vec::<u8>().0);
                        }
                    }
                    if q.is_none() && got.is_some() {
                        break;
                    }
                    let peer = if got.is_none() {
                        self.left()
                    } else {
                        self.right()
                    };
                    self.check(t0, "exchanging the run's state", peer);
                    pause(&mut spins);
                }
                got.unwrap_or_default()
            });
            self.sent(all[send].len());
            all[recv] = got;
        }
        all
    }

    fn sent(&self, bytes: usize) {
        if let Ok(mut s) = self.stats.lock() {
            s.bytes_sent += bytes as u64;
        }
    }

    /// Inside a wait: stops (never returns) on a peer's fault message, on this process's own
    /// failure, or past the deadline.
    fn check(&self, t0: Instant, what: &str, peer: usize) {
        if let Some((rank, message)) = self.fault_message() {
            self.die(rank, message);
        }
        let mine = self.failure.lock().ok().and_then(|mut f| f.take());
        if let Some(m) = mine {
            self.tell_all(self.rank, &m);
            self.die(self.rank, format!("this rank failed: {m}"));
        }
        if t0.elapsed() > self.timeout {
            let waited = format!(
                "rank {} had no message from it for {:.0} s (while {what})",
                self.rank,
                self.timeout.as_secs_f64()
            );
            self.tell_all(peer, &waited);
            // Listen a while: ranks that report are alive; the one nobody heard from failed.
            let grace =
                (self.timeout / 4).clamp(Duration::from_millis(500), Duration::from_secs(5));
            let until = Instant::now() + grace;
            let mut alive = vec![false; self.ranks];
            alive[self.rank] = true;
            let mut blamed = peer;
            while Instant::now() < until {
                if let Some((from, b, _)) = self.fault_raw() {
                    alive[from] = true;
                    if b != from {
                        blamed = b;
                    }
                }
                std::thread::sleep(Duration::from_millis(5));
            }
            if alive[blamed] {
                if let Some(q) = (0..self.ranks).find(|&q| !alive[q]) {
                    blamed = q;
                }
            }
            self.die(blamed, format!("it stopped answering: {waited}"));
        }
    }

    /// A fault message from another rank, if one arrived: (sender, blamed rank, text).
    fn fault_raw(&self) -> Option<(usize, usize, String)> {
        let m = self
            .world
            .any_process()
            .immediate_matched_probe_with_tag(TAG_FAULT)?;
        let (bytes, status) = m.matched_receive_vec::<u8>();
        let from = status.source_rank() as usize;
        let text = String::from_utf8_lossy(&bytes).to_string();
        let (blamed, message) = match text.split_once('|') {
            Some((b, m)) => (b.parse().unwrap_or(from), m.to_string()),
            None => (from, text),
        };
        Some((from, blamed, message))
    }

    fn fault_message(&self) -> Option<(usize, String)> {
        self.fault_raw().map(|(from, blamed, m)| {
            if from == blamed {
                (blamed, m)
            } else {
                (blamed, format!("reported by rank {from}: {m}"))
            }
        })
    }

    /// Tells every other rank that `blamed` failed (best effort, a second at most).
    fn tell_all(&self, blamed: usize, message: &str) {
        let text: &'static [u8] = Box::leak(
            format!("{blamed}|{message}")
                .into_bytes()
                .into_boxed_slice(),
        );
        let mut pending = Vec::new();
        for p in (0..self.ranks).filter(|&p| p != self.rank) {
            let q = self
                .world
                .process_at_rank(p as i32)
                .immediate_send_with_tag(StaticScope, text, TAG_FAULT);
            pending.push(Some(q));
        }
        let until = Instant::now() + Duration::from_secs(1);
        while Instant::now() < until && pending.iter().any(Option::is_some) {
            for q in pending.iter_mut() {
                poll!(*q);
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        // A send to a rank that is gone never completes; its request is left alone (dropping
        // an incomplete request panics).
        for q in pending.into_iter().flatten() {
            std::mem::forget(q);
        }
    }

    /// Records the failure for the training thread and parks this thread for good: leaving
    /// a scope with requests still pending would abort the process.
    fn die(&self, rank: usize, message: String) -> ! {
        if let Ok(mut f) = self.fatal.lock() {
            f.get_or_insert((rank, message));
        }
        loop {
            std::thread::park();
        }
    }
}

/// Busy-polls briefly, then yields, then sleeps: low latency for a quick peer without
/// burning a core on a slow one.
fn pause(spins: &mut u32) {
    *spins += 1;
    if *spins < 200 {
        std::hint::spin_loop();
    } else if *spins < 2000 {
        std::thread::yield_now();
    } else {
        std::thread::sleep(Duration::from_micros(50));
    }
}
