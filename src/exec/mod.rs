//! Running work on a device: WGSL validation and the pipeline cache ([`pipeline`]), the
//! profiler ([`Profile`]), and recording ([`Recorder`]) or capturing ([`Capture`]) kernel
//! launches through one [`Record`] trait.
//!
//! [`pipeline`] and the profiler are services the [`crate::runtime::Device`] handle holds;
//! Dispatch, [`Capture`] and [`Recorder`] work on a `Device` and sit above it.

pub(crate) mod capture;
pub(crate) mod dispatch;
pub mod pipeline;
pub(crate) mod profile;
pub(crate) mod recorder;
pub(crate) mod timing;

pub use capture::Capture;
pub use dispatch::Program;
pub use dispatch::Record;
pub use pipeline::{
    grid_1d, reflect, validate_wgsl, Access, KernelSpec, Pipeline, ReflectedBinding, Reflection,
    Shader,
};
pub use profile::{KernelStat, Profile, ProfileClock, TraceEvent, Utilisation, UtilisationWindow};
pub use recorder::Recorder;
