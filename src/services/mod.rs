//! Services a [`crate::runtime::Device`] holds, below it in the layering: WGSL validation,
//! reflection and the pipeline cache (`pipeline`, with the `shader!` macro that embeds a
//! kernel's WGSL), the profiler and queue utilisation (`profile`), and a recorder's
//! timestamps and their readback (`timing`). Recording work (`crate::exec`) sits above the
//! device and uses them.

pub mod pipeline;
pub(crate) mod profile;
pub(crate) mod timing;
