//! Several devices: a [`DeviceGroup`] and its job scheduler ([`group`]), the throughput
//! [`Balancer`] ([`balancer`]), and data-parallel training over a group
//! ([`data_parallel`], [`crate::nn::Sequential::fit_parallel`]), which plugs into the one
//! training loop as an engine.

pub mod balancer;
pub mod data_parallel;
pub mod group;

pub use balancer::Balancer;
pub use data_parallel::{ParallelHistory, ParallelOptions};
pub use group::{DeviceGroup, Job, JobError};
