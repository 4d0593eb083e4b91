//! Running work on a device: WGSL validation and the pipeline cache ([`pipeline`]), the
//! profiler ([`profile`]), and recording ([`Recorder`]) or capturing ([`Capture`]) kernel
//! launches through one [`Record`] trait.
//!
//! [`pipeline`] and [`profile`] are services the [`crate::runtime::Device`] handle holds;
//! [`dispatch`], [`capture`] and [`recorder`] work on a `Device` and sit above it.

pub mod capture;
pub mod dispatch;
pub mod pipeline;
pub mod profile;
pub mod recorder;
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
