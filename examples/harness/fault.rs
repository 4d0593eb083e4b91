//! The fault tests' trigger (`--fault-rank R --fault-step N --fault KIND`): on rank R, once
//! optimizer step N has been submitted (checked after every chunk of steps, so at the same
//! step whatever the machine's speed), the process fails the way KIND says. `error` is
//! injected inside training instead, through `ParallelOptions::fail_at_step` (see
//! `train.rs`).

use suanli::nn::{Callback, EpochBegin};

/// A callback that fails this process at the configured step, if it is the configured rank.
pub struct Fault {
    /// This process's rank.
    pub rank: usize,
    /// The rank to fail, the step, and how (`exit`, `kill`, `hang`, `panic`; `error` is not
    /// handled here).
    pub fault: Option<(usize, u64, String)>,
    /// Steps of the epochs before the current one.
    pub steps: u64,
}

impl Fault {
    /// The trigger of `--fault` on rank `rank`.
    pub fn new(rank: usize, fault: Option<(usize, u64, String)>) -> Fault {
        Fault {
            rank,
            fault,
            steps: 0,
        }
    }
}

impl Callback for Fault {
    fn on_epoch_begin(&mut self, e: &EpochBegin) {
        self.steps = (e.epoch * e.steps) as u64;
    }

    fn on_steps(&mut self, _epoch: usize, done: usize) {
        let Some((r, n, kind)) = &self.fault else {
            return;
        };
        if *r != self.rank || self.steps + (done as u64) < *n {
            return;
        }
        eprintln!(
            "rank {r}: injected fault '{kind}' at step {}",
            self.steps + done as u64
        );
        match kind.as_str() {
            "exit" => std::process::exit(3),
            "kill" => {
                let pid = std::process::id().to_string();
                let _ = std::process::Command::new("kill")
                    .args(["-9", &pid])
                    .status();
                std::thread::sleep(std::time::Duration::from_secs(60));
            }
            "hang" => loop {
                std::thread::sleep(std::time::Duration::from_secs(3600));
            },
            "panic" => panic!("injected panic on rank {r}"),
            _ => {}
        }
    }
}
