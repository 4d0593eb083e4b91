//! How the shards of a data-parallel step combine their gradients, and how the processes of a
//! run agree on everything else.
//!
//! Data-parallel training cuts every global batch of B rows into consecutive shards: first
//! across the processes of a run (ranks, in rank order), then across each process's devices
//! (in device order). Every shard's gradient is its rows' part of the batch mean, already
//! weighted by `rows / B`, so the step's gradient is the plain sum of the shards' gradients.
//! An [`Exchange`] computes that sum, bucket by bucket, and gives every participant the same
//! bits, so the replicas stay identical.
//!
//! Two implementations:
//! - [`HostExchange`]: one process. The devices' gradients meet in host memory and are
//!   summed there in device order.
//! - `multi::mpi::Mpi` (cargo feature `mpi`): several processes. Each process sums its own
//!   devices' shards in device order, then the processes sum their partial sums with a ring
//!   all-reduce: chunk `c` of a bucket is summed in ring order starting at rank `c`,
//!   `((g_c + g_{c+1}) + g_{c+2}) + …`, by point-to-point messages, and the finished chunk is
//!   copied to every rank. The order depends on the number of ranks, never on timing; every
//!   rank ends with the same bits.
//!
//! Either sum differs from single-device training only by floating-point rounding: f32
//! additions of N partial sums, relative error at most about `N·2⁻²⁴·Σ|g_i| / |Σ g_i|` per
//! element, against the same rounding inside the single device's batch reduction.
//!
//! Besides gradients, ranks must take the same decisions (progress reads, early stopping,
//! stopping on NaN, a callback asking to stop) and see the same metrics: [`Exchange::all_gather`]
//! carries those small messages, and the helpers below build on it.

use std::time::Instant;

use crate::error::{Error, Result};

/// One combined bucket, and when the exchange worked on it.
#[derive(Clone, Debug)]
pub struct Combined {
    /// The sum over every shard of every process.
    pub data: Vec<f32>,
    /// When the exchange began combining (the bucket was handed over and the exchange was
    /// free).
    pub started: Instant,
    /// When the sum was complete.
    pub done: Instant,
}

/// What an exchange moved and how long it took, since the last [`Exchange::take_stats`].
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ExchangeStats {
    /// Bytes this process sent to other processes.
    pub bytes_sent: u64,
    /// Buckets combined.
    pub buckets: u64,
}

/// Combines gradients across the participants of a data-parallel run (see the module docs).
pub trait Exchange {
    /// This process's index among the run's processes (0 for a single process).
    fn rank(&self) -> usize;

    /// Number of processes in the run.
    fn ranks(&self) -> usize;

    /// Starts combining bucket `bucket` of the current step. `parts` are this process's
    /// shards' gradients for the bucket (each already weighted by its share of the batch), in
    /// device order, all of one length. Where the implementation can, it returns at once and
    /// combines in the background, so the exchange overlaps the rest of the backward pass.
    fn start(&mut self, bucket: usize, parts: Vec<Vec<f32>>) -> Result<()>;

    /// Waits for bucket `bucket`'s sum (started before).
    fn finish(&mut self, bucket: usize) -> Result<Combined>;

    /// Every process's `bytes`, in rank order (configuration checks, metrics, hashes,
    /// decisions).
    fn all_gather(&mut self, bytes: Vec<u8>) -> Result<Vec<Vec<u8>>>;

    /// Tells the other processes that this one failed with `message`, before the error is
    /// returned to the caller, so they stop with an error naming this rank instead of waiting.
    /// Best effort; a single process has no one to tell.
    fn fail(&mut self, message: &str);

    /// Traffic since the last call.
    fn take_stats(&mut self) -> ExchangeStats;
}

/// The exchange of one process: the devices' gradients are summed in host memory in device
/// order (see the module docs).
#[derive(Debug, Default)]
pub struct HostExchange {
    done: Vec<(usize, Combined)>,
    buckets: u64,
}

impl HostExchange {
    /// An exchange for a single process.
    pub fn new() -> HostExchange {
        HostExchange::default()
    }
}

/// Σ of `parts` in order, element by element (`parts[0] + parts[1] + …`).
pub(crate) fn sum_in_order(parts: Vec<Vec<f32>>) -> Result<Vec<f32>> {
    let mut it = parts.into_iter();
    let mut out = it.next().unwrap_or_default();
    for p in it {
        if p.len() != out.len() {
            return Err(Error::Internal {
                op: "gradient exchange",
                message: format!("parts of {} and {} values", out.len(), p.len()),
            });
        }
        for (o, v) in out.iter_mut().zip(&p) {
            *o += *v;
        }
    }
    Ok(out)
}

impl Exchange for HostExchange {
    fn rank(&self) -> usize {
        0
    }

    fn ranks(&self) -> usize {
        1
    }

    fn start(&mut self, bucket: usize, parts: Vec<Vec<f32>>) -> Result<()> {
        let started = Instant::now();
        let data = sum_in_order(parts)?;
        self.done.push((
            bucket,
            Combined {
                data,
                started,
                done: Instant::now(),
            },
        ));
        self.buckets += 1;
        Ok(())
    }

    fn finish(&mut self, bucket: usize) -> Result<Combined> {
        let at = self
            .done
            .iter()
            .position(|(b, _)| *b == bucket)
            .ok_or_else(|| Error::Internal {
                op: "gradient exchange",
                message: format!("bucket {bucket} finished but never started"),
            })?;
        Ok(self.done.swap_remove(at).1)
    }

    fn all_gather(&mut self, bytes: Vec<u8>) -> Result<Vec<Vec<u8>>> {
        Ok(vec![bytes])
    }

    fn fail(&mut self, _message: &str) {}

    fn take_stats(&mut self) -> ExchangeStats {
        ExchangeStats {
            bytes_sent: 0,
            buckets: std::mem::take(&mut self.buckets),
        }
    }
}

/// Σ over processes of `values`, summed in rank order: every process gets the same bits.
pub fn sum_f64(ex: &mut dyn Exchange, values: &[f64]) -> Result<Vec<f64>> {
    let bytes = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    let all = ex.all_gather(bytes)?;
    let mut out = vec![0.0; values.len()];
    for (r, b) in all.iter().enumerate() {
        if b.len() != 8 * values.len() {
            return Err(Error::RankMismatch {
                what: "the number of values summed".into(),
                rank: r,
                expected: values.len().to_string(),
                found: (b.len() / 8).to_string(),
            });
        }
        for (o, c) in out.iter_mut().zip(b.chunks_exact(8)) {
            let mut a = [0u8; 8];
            a.copy_from_slice(c);
            *o += f64::from_le_bytes(a);
        }
    }
    Ok(out)
}

/// True on every process if `flag` is true on any.
pub fn any(ex: &mut dyn Exchange, flag: bool) -> Result<bool> {
    if ex.ranks() == 1 {
        return Ok(flag);
    }
    Ok(ex
        .all_gather(vec![flag as u8])?
        .iter()
        .any(|b| b.first() == Some(&1)))
}

/// Checks that every process describes its run the same way: `fields` are (what, value)
/// pairs in the same order on every process. The first difference from rank 0 is an error
/// naming the field, both values and the rank.
pub fn check_same(ex: &mut dyn Exchange, fields: &[(&str, String)]) -> Result<()> {
    let text = serde_json::to_vec(
        &fields
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect::<Vec<_>>(),
    )
    .map_err(|e| Error::Serialize {
        op: "rank agreement",
        what: "the run's description",
        message: e.to_string(),
    })?;
    let all = ex.all_gather(text)?;
    let decode = |r: usize, b: &[u8]| -> Result<Vec<(String, String)>> {
        serde_json::from_slice(b).map_err(|e| Error::RankMismatch {
            what: "the run's description".into(),
            rank: r,
            expected: "a description from the same suanli build".into(),
            found: e.to_string(),
        })
    };
    let root = decode(0, &all[0])?;
    for (r, b) in all.iter().enumerate().skip(1) {
        let other = decode(r, b)?;
        for (i, (k, v)) in root.iter().enumerate() {
            match other.get(i) {
                Some((k2, v2)) if k2 == k && v2 == v => {}
                Some((k2, v2)) if k2 == k => {
                    return Err(Error::RankMismatch {
                        what: k.clone(),
                        rank: r,
                        expected: v.clone(),
                        found: v2.clone(),
                    })
                }
                _ => {
                    return Err(Error::RankMismatch {
                        what: "the run's description".into(),
                        rank: r,
                        expected: format!("{k} at position {i}"),
                        found: other.get(i).map_or("nothing".into(), |(k2, _)| k2.clone()),
                    })
                }
            }
        }
        if other.len() != root.len() {
            return Err(Error::RankMismatch {
                what: "the run's description".into(),
                rank: r,
                expected: format!("{} fields", root.len()),
                found: format!("{} fields", other.len()),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_exchange_sums_in_device_order() {
        let mut ex = HostExchange::new();
        ex.start(1, vec![vec![1.0, 2.0], vec![0.5, -2.0], vec![1e-8, 0.0]])
            .unwrap();
        ex.start(0, vec![vec![3.0]]).unwrap();
        assert_eq!(ex.finish(0).unwrap().data, vec![3.0]);
        let got = ex.finish(1).unwrap().data;
        assert_eq!(got, vec![(1.0f32 + 0.5) + 1e-8, 0.0]);
        assert!(ex.finish(1).is_err(), "a bucket is finished once");
        assert_eq!(ex.take_stats().buckets, 2);
        assert!(ex.start(2, vec![vec![1.0], vec![1.0, 2.0]]).is_err());
    }

    #[test]
    fn helpers_on_one_process() {
        let mut ex = HostExchange::new();
        assert_eq!(sum_f64(&mut ex, &[1.5, -2.0]).unwrap(), vec![1.5, -2.0]);
        assert!(any(&mut ex, true).unwrap());
        assert!(!any(&mut ex, false).unwrap());
        check_same(&mut ex, &[("batch size", "128".into())]).unwrap();
    }
}
