//! The throughput balancer of data-parallel training: how the global batch is cut into
//! shards across devices.
//!
//! Shares start equal (or as given), then move towards each device's measured throughput
//! (samples/s of its shard: the median of its last few steps, so one step that the operating
//! system delayed does not move the shares), halfway to the target each step. They hold while
//! the devices would finish within 5% of each other (or within twice the scatter of the recent
//! measurements, where that is larger), and within a dead band of the target, so they settle
//! instead of oscillating; a floor keeps every device in. A device whose sensor
//! reports throttling or heat gets its target cut (the caller passes the penalty). It is pure
//! arithmetic on measured times, tested with made-up times.

/// Shares of the global batch per device, from measured throughput (see the module docs).
#[derive(Clone, Debug)]
pub struct Balancer {
    shares: Vec<f64>,
    /// The last few measured rates (rows per second) per device, oldest first.
    samples: Vec<std::collections::VecDeque<f64>>,
    /// Shares hold while the smoothed finish times differ by less than this fraction
    /// (default 0.05): when every device finishes together there is nothing to gain, and
    /// step-time noise would otherwise walk the shares around.
    pub time_band: f64,
    /// No device's share goes below this (default `0.25 / devices`).
    pub min_share: f64,
    /// Targets closer than this to the current share are ignored (default 0.01).
    pub dead_band: f64,
}

impl Balancer {
    /// Equal shares for `n` devices, or `initial` (normalised).
    pub fn new(n: usize, initial: Option<&[f64]>) -> Balancer {
        let mut shares = match initial {
            Some(s) if s.len() == n && s.iter().all(|v| *v > 0.0 && v.is_finite()) => s.to_vec(),
            _ => vec![1.0; n],
        };
        let total: f64 = shares.iter().sum();
        shares.iter_mut().for_each(|s| *s /= total);
        Balancer {
            shares,
            samples: vec![std::collections::VecDeque::new(); n],
            time_band: 0.05,
            min_share: 0.25 / n as f64,
            dead_band: 0.01,
        }
    }

    /// The current shares (sum 1).
    pub fn shares(&self) -> &[f64] {
        &self.shares
    }

    /// Cuts `batch` rows into per-device shard sizes by the shares (largest remainder), each
    /// at least 1 while `batch` allows.
    pub fn split(&self, batch: usize) -> Vec<usize> {
        let n = self.shares.len();
        let exact: Vec<f64> = self.shares.iter().map(|s| s * batch as f64).collect();
        let mut sizes: Vec<usize> = exact.iter().map(|e| e.floor() as usize).collect();
        let left = batch - sizes.iter().sum::<usize>();
        let mut order: Vec<usize> = (0..n).collect();
        order.sort_by(|&a, &b| {
            (exact[b] - exact[b].floor()).total_cmp(&(exact[a] - exact[a].floor()))
        });
        for &d in order.iter().cycle().take(left) {
            sizes[d] += 1;
        }
        // Nobody idles while there are rows to share.
        if batch >= n {
            while let Some(z) = sizes.iter().position(|&s| s == 0) {
                let big = (0..n).max_by_key(|&d| sizes[d]).unwrap_or(0);
                sizes[big] -= 1;
                sizes[z] += 1;
            }
        }
        sizes
    }

    /// Updates the shares from one step: device `d` did `sizes[d]` rows in `secs[d]` seconds;
    /// `penalty[d]` (1 = none) scales its target (thermal throttling).
    pub fn observe(&mut self, sizes: &[usize], secs: &[f64], penalty: &[f64]) {
        for d in 0..self.shares.len() {
            if sizes[d] == 0 || secs[d] <= 0.0 {
                continue;
            }
            let q = &mut self.samples[d];
            q.push_back(sizes[d] as f64 / secs[d]);
            if q.len() > SAMPLES {
                q.pop_front();
            }
        }
        let Some(rates) = self
            .samples
            .iter()
            .map(median)
            .collect::<Option<Vec<f64>>>()
        else {
            return;
        };
        // How long each device would take for its current shard at its rate.
        let (lo, hi) = sizes
            .iter()
            .zip(&rates)
            .filter(|(s, _)| **s > 0)
            .map(|(&s, r)| s as f64 / r)
            .fold((f64::INFINITY, 0.0f64), |(l, h), t| (l.min(t), h.max(t)));
        // Differences within the measurements' own scatter are noise, not speed: the band
        // widens to twice the largest relative spread (median absolute deviation) of the
        // recent rates, so identical devices on a noisy machine keep equal shares.
        let noise = self
            .samples
            .iter()
            .zip(&rates)
            .map(|(q, m)| {
                let dev: std::collections::VecDeque<f64> =
                    q.iter().map(|r| (r - m).abs()).collect();
                median(&dev).unwrap_or(0.0) / m.max(1e-300)
            })
            .fold(0.0f64, f64::max);
        let band = self.time_band.max(2.0 * noise);
        if hi / lo - 1.0 < band && penalty.iter().all(|p| *p == 1.0) {
            return;
        }
        let weighted: Vec<f64> = rates.iter().zip(penalty).map(|(r, p)| r * p).collect();
        let total: f64 = weighted.iter().sum();
        if total <= 0.0 {
            return;
        }
        let mut next = self.shares.clone();
        for d in 0..next.len() {
            let target = weighted[d] / total;
            if (target - self.shares[d]).abs() > self.dead_band {
                next[d] = self.shares[d] + 0.5 * (target - self.shares[d]);
            }
        }
        self.shares = with_floor(&next, self.min_share);
    }
}

/// Rate samples kept per device.
const SAMPLES: usize = 7;

/// The median of `q` (`None` when empty).
fn median(q: &std::collections::VecDeque<f64>) -> Option<f64> {
    let mut v: Vec<f64> = q.iter().copied().collect();
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied()
}

/// Normalises `shares` to sum 1 with every share at least `floor`: shares below it are
/// raised to it and the others scaled down to make room (repeated until none falls below).
fn with_floor(shares: &[f64], floor: f64) -> Vec<f64> {
    let n = shares.len();
    let floor = floor.min(1.0 / n as f64);
    let mut pinned = vec![false; n];
    loop {
        let free: f64 = (0..n).filter(|&d| !pinned[d]).map(|d| shares[d]).sum();
        let room = 1.0 - floor * pinned.iter().filter(|p| **p).count() as f64;
        let out: Vec<f64> = (0..n)
            .map(|d| {
                if pinned[d] {
                    floor
                } else {
                    shares[d] / free.max(1e-300) * room
                }
            })
            .collect();
        match (0..n).find(|&d| !pinned[d] && out[d] < floor) {
            Some(d) => pinned[d] = true,
            None => return out,
        }
    }
}
