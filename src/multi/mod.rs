//! Several devices and several processes: a [`DeviceGroup`] and its job scheduler
//! ([`group`]), the throughput [`Balancer`] ([`balancer`]), and data-parallel training
//! ([`data_parallel`]: [`crate::nn::Sequential::fit_parallel`] over a group,
//! [`crate::nn::Sequential::fit_distributed`] over processes), which plugs into the one
//! training loop as an engine. Replicas and gradient buckets are in `replica`; how shards'
//! gradients are combined is an [`Exchange`] ([`exchange`]): in host memory in one process,
//! or over MPI between processes (`mpi`, cargo feature `mpi`).

pub mod balancer;
pub mod data_parallel;
pub(crate) mod engine;
pub mod exchange;
pub mod group;
#[cfg(feature = "mpi")]
pub mod mpi;
#[cfg(feature = "mpi")]
pub(crate) mod mpi_ring;
pub(crate) mod replica;

pub use balancer::Balancer;
pub use data_parallel::{ExchangeReport, ParallelHistory, ParallelOptions};
pub use exchange::{Exchange, HostExchange};
pub use group::{DeviceGroup, Job, JobError};
