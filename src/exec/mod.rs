//! Running work on a device: recording ([`Recorder`]) or capturing ([`Capture`]) kernel
//! launches through one [`Record`] trait. They work on a [`crate::runtime::Device`] and sit
//! above it; the services the device holds (the pipeline cache, the profiler) are in
//! [`crate::services`], below it, and re-exported here as the public API has always had them.

pub(crate) mod capture;
pub(crate) mod dispatch;
pub(crate) mod recorder;

pub use crate::services::pipeline;

pub use crate::services::pipeline::{
    grid_1d, reflect, validate_wgsl, Access, KernelSpec, Pipeline, ReflectedBinding, Reflection,
    Shader,
};
pub use crate::services::profile::{
    KernelStat, Profile, ProfileClock, TraceEvent, Utilisation, UtilisationWindow,
};
pub use capture::Capture;
pub use dispatch::Program;
pub use dispatch::Record;
pub use recorder::Recorder;
