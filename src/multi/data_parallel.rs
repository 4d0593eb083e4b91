//! Data-parallel training: an engine for the one training loop, over the devices of a
//! [`DeviceGroup`] in this process and, through an [`Exchange`], over several processes.
//!
//! The model is replicated on every device of every process. Each global batch (the same
//! rows, in the same order, as single-device training with the same seed) is cut into
//! consecutive shards: equal slices per process (rank order), then per device by the
//! [`Balancer`]'s shares. Every replica computes its shard's gradient, weighted by its share
//! of the batch; the exchange sums the shards bucket by bucket ([`crate::multi::exchange`]
//! documents the order), overlapping the backward pass of the layers below
//! (`multi::replica`); and every replica applies the same update with the same
//! kernels, so the replicas stay identical. That is checked at the end of every epoch:
//! bitwise between the devices of a process, by a hash of the weights between processes;
//! a difference is an error.
//!
//! Everything else is the shared loop's (validation, checkpoints, resume, early stopping, the
//! learning-rate schedule, the NaN stop, callbacks); where processes must agree (when to read
//! metrics, whether to stop) the loop asks the engine, which asks the exchange. Validation
//! rows are split across processes and their sums combined; checkpoints are written by rank 0
//! only. A run whose processes were started differently is refused before training
//! ([`crate::multi::exchange::check_same`]).

use crate::data::dataset::Dataset;
use crate::error::{Error, Result};
use crate::multi::balancer::Balancer;
use crate::multi::engine::{even_split, weights_hash, ParallelEngine, Tally};
pub use crate::multi::engine::{ExchangeReport, ParallelHistory};
use crate::multi::exchange::{self, Exchange, HostExchange};
use crate::multi::group::DeviceGroup;
use crate::multi::replica::{self, Pollers, Replica};
use crate::nn::graph::model::Sequential;
use crate::nn::train::evaluate::Evaluator;
use crate::nn::train::fit::{self, Setup};
use crate::nn::train::options::FitOptions;
use crate::telemetry::governor::Governor;
use crate::telemetry::DeviceWatch;

/// PyTorch DDP's default bucket size.
pub const DEFAULT_BUCKET_BYTES: usize = 25 << 20;

/// Options of [`Sequential::fit_parallel`] beyond [`FitOptions`].
#[derive(Clone, Debug)]
pub struct ParallelOptions {
    /// Starting shares of this process's devices (else equal).
    pub initial_shares: Option<Vec<f64>>,
    /// Gradient bucket size in bytes (default [`DEFAULT_BUCKET_BYTES`], as PyTorch DDP):
    /// smaller buckets start the exchange earlier and hide more of it behind the backward pass,
    /// at the cost of one submission and one message per bucket.
    pub bucket_bytes: usize,
    /// Benchmark hook: device `d`'s measured step time is stretched by `slowdown[d]` (≥ 1)
    /// by sleeping the difference, as if it were that much slower.
    pub slowdown: Vec<f64>,
    /// Test hook, an injected clock: device `d`'s shard time is taken to be `rows /
    /// simulated_rates[d]` seconds instead of measured, so balancing is tested without
    /// depending on how fast or how noisy the machine is.
    pub simulated_rates: Option<Vec<f64>>,
    /// Test hook for the fault tests: this process's training fails with an error at this
    /// optimizer step, as a device or disk failure would, so the other processes' handling
    /// of a failed rank can be tested.
    pub fail_at_step: Option<u64>,
}

impl Default for ParallelOptions {
    fn default() -> ParallelOptions {
        ParallelOptions {
            initial_shares: None,
            bucket_bytes: DEFAULT_BUCKET_BYTES,
            slowdown: Vec::new(),
            simulated_rates: None,
            fail_at_step: None,
        }
    }
}

impl Sequential {
    /// Data-parallel training over the devices of `group` in this process (see the module
    /// docs). `data[d]` is the training set on device `d` (the same rows on every device);
    /// `options` work as in [`Sequential::fit`], with the batch size as the global batch and
    /// validation data on the group's first device. This model supplies the starting weights
    /// (and optimizer state, when resuming) and receives the trained ones.
    pub fn fit_parallel(
        &mut self,
        group: &DeviceGroup,
        data: &[Dataset],
        options: FitOptions<'_>,
        popts: &ParallelOptions,
    ) -> Result<ParallelHistory> {
        self.fit_distributed(group, data, options, popts, &mut HostExchange::new())
    }

    /// [`Sequential::fit_parallel`] as one process of a run of several that combine their
    /// gradients through `exchange` (MPI: `suanli::multi::mpi::Mpi`). Every process calls it
    /// with the same model, options and dataset; each trains its slice of every global batch
    /// on its devices. Validation rows are split across processes, checkpoints are written
    /// by rank 0 only, and a process that fails tells the others, which then stop with
    /// [`Error::PeerFailed`].
    pub fn fit_distributed(
        &mut self,
        group: &DeviceGroup,
        data: &[Dataset],
        options: FitOptions<'_>,
        popts: &ParallelOptions,
        exchange: &mut dyn Exchange,
    ) -> Result<ParallelHistory> {
        let out = self.fit_distributed_inner(group, data, options, popts, exchange);
        if let Err(e) = &out {
            // Failures the others share or caused need no telling.
            let shared = matches!(
                e,
                Error::PeerFailed { .. }
                    | Error::RankMismatch { .. }
                    | Error::Interrupted { .. }
                    | Error::NonFinite { .. }
            );
            if !shared {
                exchange.fail(&e.to_string());
            }
        }
        out
    }

    fn fit_distributed_inner(
        &mut self,
        group: &DeviceGroup,
        data: &[Dataset],
        mut options: FitOptions<'_>,
        popts: &ParallelOptions,
        ex: &mut dyn Exchange,
    ) -> Result<ParallelHistory> {
        let nd = group.len();
        if data.len() != nd {
            return Err(Error::InvalidArgument {
                op: "fit_parallel",
                name: "data",
                expected: format!("one dataset per device ({nd})"),
                found: data.len().to_string(),
            });
        }
        let rows = data[0].len();
        for (d, (ds, dev)) in data.iter().zip(group.devices()).enumerate() {
            if ds.len() != rows || ds.input_shapes() != data[0].input_shapes() {
                return Err(Error::ShapeMismatch {
                    op: "fit_parallel",
                    expected: format!(
                        "{rows} rows of {:?} on every device",
                        data[0].input_shapes()
                    ),
                    found: format!("{} rows of {:?} on device {d}", ds.len(), ds.input_shapes()),
                });
            }
            if !ds.device().same_as(dev) {
                return Err(Error::DeviceMismatch {
                    op: "fit_parallel",
                    expected: format!("data[{d}] on {dev:?}"),
                    found: format!("{:?}", ds.device()),
                });
            }
        }
        let setup = Setup::new("fit_parallel", self, rows, &options)?;
        agree_on_the_run(ex, self, data, &options, popts, &setup)?;
        let rule0 = setup.optimizer.rule(setup.lrs[setup.start]);
        let buckets = replica::buckets(self, popts.bucket_bytes);
        let reps = group
            .devices()
            .iter()
            .zip(data)
            .map(|(dev, ds)| Replica::new(self, dev, ds, setup.n_train, &rule0, &buckets))
            .collect::<Result<Vec<_>>>()?;
        if let Some(v) = options.validation_data {
            reps[0]
                .model
                .check_dataset("fit_parallel (validation data)", v)?;
        }
        // This process's consecutive slice of the validation rows.
        let (val_rows, val_data): (Vec<u32>, Option<&Dataset>) = match options.validation_data {
            Some(v) => ((0..v.len() as u32).collect(), Some(v)),
            None if setup.n_train < rows => (setup.split_rows(rows), Some(&data[0])),
            None => (Vec::new(), None),
        };
        let validation = match val_data {
            Some(v) => {
                let per = even_split(val_rows.len(), ex.ranks());
                let from: usize = per[..ex.rank()].iter().sum();
                let slice = &val_rows[from..from + per[ex.rank()]];
                let e = if slice.is_empty() {
                    None
                } else {
                    Some(Evaluator::new(&reps[0].model, v, Some(slice), 1000)?)
                };
                Some((e, v))
            }
            None => None,
        };
        let nparams: usize = buckets.iter().map(|b| b.len).sum();
        let t0 = reps[0].model.step;
        let mut engine = ParallelEngine {
            reps,
            pollers: (nd > 1).then(|| Pollers::start(group.devices())),
            data,
            ex,
            buckets,
            balancer: Balancer::new(nd, popts.initial_shares.as_deref()),
            watches: group.devices().iter().map(DeviceWatch::new).collect(),
            penalty: vec![1.0; nd],
            gov_factor: vec![1.0; nd],
            slowdown: popts.slowdown.clone(),
            simulated: popts.simulated_rates.clone(),
            fail_at: popts.fail_at_step,
            seed: setup.seed,
            work: vec![(0, 0.0); nd],
            validation,
            tally: Tally::default(),
            window: None,
            out: ParallelHistory {
                bytes_per_step: 2 * nparams as u64 * 4,
                ..Default::default()
            },
        };
        let mut auto = match options.governor {
            Some(_) => None,
            None => Governor::for_devices(group.devices())?,
        };
        let given = options.governor.take();
        let history = fit::run(
            &mut engine,
            &setup,
            &mut options,
            t0,
            given.or(auto.as_mut()),
        );
        engine.pollers = None;
        // Whatever happened, the last completed step's update is applied before the weights
        // come home.
        let flushed = engine.flush();
        let history = history?;
        flushed?;
        let back = engine.reps[0].model.to_device(&self.device)?;
        self.layers = back.layers;
        self.opt_state = back.opt_state;
        self.step = back.step;
        let mut out = engine.out;
        out.history = history;
        Ok(out)
    }
}

/// Refuses a run whose processes were not started alike: everything that must match is
/// compared with rank 0's (see [`exchange::check_same`]).
fn agree_on_the_run(
    ex: &mut dyn Exchange,
    model: &Sequential,
    data: &[Dataset],
    o: &FitOptions<'_>,
    popts: &ParallelOptions,
    s: &Setup,
) -> Result<()> {
    if ex.ranks() == 1 {
        return Ok(());
    }
    let weights = model
        .params()
        .iter()
        .map(|p| p.to_vec())
        .collect::<Result<Vec<_>>>()?;
    let fields = [
        ("the suanli version", env!("CARGO_PKG_VERSION").to_string()),
        ("the model", model.summary()),
        ("the optimizer", format!("{:?}", model.optimizer)),
        ("the loss", format!("{:?}", model.loss)),
        ("the batch size", o.batch_size.to_string()),
        ("the epochs", o.epochs.to_string()),
        ("the seed", s.seed.to_string()),
        ("shuffling", o.shuffle.to_string()),
        (
            "the dataset",
            format!(
                "{} rows of {:?} values, targets of {}",
                data[0].len(),
                data[0].input_shapes(),
                data[0].target_len()
            ),
        ),
        ("the training rows", s.n_train.to_string()),
        (
            "the validation data",
            o.validation_data
                .map_or("none".into(), |v| format!("{} rows", v.len())),
        ),
        ("the learning rates", format!("{:?}", s.lrs)),
        ("early stopping", format!("{:?}", o.early_stopping)),
        ("the resumed epoch", s.start.to_string()),
        ("the optimizer step", model.step.to_string()),
        ("the bucket size", popts.bucket_bytes.to_string()),
        (
            "the initial weights",
            format!("{:016x}", weights_hash(&weights)),
        ),
    ];
    exchange::check_same(ex, &fields)
}

#[cfg(test)]
mod tests {
    #[test]
    fn even_split_is_consecutive_and_covers_everything() {
        assert_eq!(super::even_split(10, 3), vec![4, 3, 3]);
        assert_eq!(super::even_split(2, 4), vec![1, 1, 0, 0]);
        assert_eq!(super::even_split(128, 2), vec![64, 64]);
    }
}
