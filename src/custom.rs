//! User-written WGSL kernels on suanli tensors (compare CuPy's `RawKernel`).
//!
//! The source is validated with naga before it reaches the driver (a bad shader is an
//! [`Error::Shader`] with line and column); the entry point's group-0 bindings are reflected,
//! and every launch checks the arguments against them: count, kind (storage vs uniform),
//! writability, size, device, and aliasing (one tensor bound twice where one binding
//! writes). The pipeline is compiled once and cached on the device.
//!
//! ```no_run
//! use suanli::{CustomKernel, Device, Grid, KernelArg, Tensor};
//! let dev = Device::open("auto")?;
//! let src = r#"
//! @group(0) @binding(0) var<storage, read> x: array<f32>;
//! @group(0) @binding(1) var<storage, read_write> y: array<f32>;
//! @compute @workgroup_size(64)
//! fn double(@builtin(global_invocation_id) g: vec3<u32>) {
//!     if (g.x < arrayLength(&y)) { y[g.x] = 2.0 * x[g.x]; }
//! }"#;
//! let k = CustomKernel::new(&dev, "double", src, "double")?;
//! let x = Tensor::from_slice(&dev, &[1.0, 2.0, 3.0], &[3])?;
//! let y = Tensor::empty(&dev, &[3])?;
//! k.launch(&[KernelArg::from(&x), KernelArg::from(&y)], Grid::Elements(3))?;
//! assert_eq!(y.to_vec()?, vec![2.0, 4.0, 6.0]);
//! # Ok::<(), suanli::Error>(())
//! ```
//!
//! Each tensor is bound to exactly its own bytes, so `arrayLength` is its element count even
//! though pooled buffers may be larger.

use std::sync::Arc;

use crate::error::{Error, Result};
use crate::exec::dispatch::Record;
use crate::exec::recorder::Recorder;
use crate::runtime::Device;
use crate::services::pipeline::{
    grid_1d, reflect, validate_wgsl, Access, Pipeline, ReflectedBinding,
};
use crate::tensor::Tensor;

/// How many work-groups to launch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Grid {
    /// Exactly these work-group counts (x, y, z).
    Workgroups(u32, u32, u32),
    /// Enough 1-D work-groups to cover this many invocations, spilling onto y past the
    /// per-dimension limit: the kernel's linear index is `gid.x + gid.y * nwg.x * WG_X`.
    Elements(u64),
}

/// One argument of a launch.
#[derive(Clone, Copy, Debug)]
pub enum KernelArg<'a> {
    /// A tensor the kernel may read or write.
    Tensor(&'a Tensor),
    /// A tensor the caller promises is only read: giving it to a `read_write` binding is an error.
    ReadOnly(&'a Tensor),
    /// Bytes for a `var<uniform>` binding (e.g. `bytemuck::bytes_of(&params)`).
    Uniform(&'a [u8]),
}

impl<'a> From<&'a Tensor> for KernelArg<'a> {
    fn from(t: &'a Tensor) -> Self {
        KernelArg::Tensor(t)
    }
}

/// A user kernel compiled for one device.
#[derive(Clone)]
pub struct CustomKernel {
    device: Device,
    name: String,
    bindings: Vec<ReflectedBinding>,
    pipeline: Arc<Pipeline>,
}

impl std::fmt::Debug for CustomKernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CustomKernel")
            .field("name", &self.name)
            .field("bindings", &self.bindings)
            .field("workgroup_size", &self.pipeline.workgroup_size)
            .finish()
    }
}

impl CustomKernel {
    /// Validates `source`, reflects `entry`'s bindings and compiles (or reuses) the pipeline.
    /// Bindings must be `@group(0)` with indices `0..n` without gaps.
    pub fn new(device: &Device, name: &str, source: &str, entry: &str) -> Result<CustomKernel> {
        let (module, info) = validate_wgsl(name, source)?;
        let refl = reflect(name, &module, &info, entry)?;
        for (i, b) in refl.bindings.iter().enumerate() {
            if b.binding != i as u32 {
                return Err(Error::BindingMismatch {
                    kernel: name.to_string(),
                    message: format!(
                        "bindings must be numbered 0..{} without gaps; found @binding({}) for {:?} at position {i}",
                        refl.bindings.len(),
                        b.binding,
                        b.name
                    ),
                });
            }
        }
        let access: Vec<Access> = refl.bindings.iter().map(|b| b.access).collect();
        let pipeline =
            device
                .pipelines()
                .get(device.core(), name, source, entry, &access, &[], false)?;
        Ok(CustomKernel {
            device: device.clone(),
            name: name.to_string(),
            bindings: refl.bindings,
            pipeline,
        })
    }

    /// The reflected bindings, in order.
    pub fn bindings(&self) -> &[ReflectedBinding] {
        &self.bindings
    }

    /// The entry point's `@workgroup_size`.
    pub fn workgroup_size(&self) -> [u32; 3] {
        self.pipeline.workgroup_size
    }

    fn mismatch(&self, message: String) -> Error {
        Error::BindingMismatch {
            kernel: self.name.clone(),
            message,
        }
    }

    /// Checks `args` against the bindings, then dispatches and submits (without waiting).
    pub fn launch(&self, args: &[KernelArg<'_>], grid: Grid) -> Result<()> {
        let mut rec = Recorder::new(&self.device);
        self.record(&mut rec, args, grid)?;
        rec.submit()?;
        Ok(())
    }

    /// Checks `args` against the bindings and records the dispatch into `rec` (a
    /// [`Recorder`] of the kernel's device, or a [`crate::exec::Capture`]), so many launches,
    /// of this kernel and of others, share one submission.
    pub fn record(&self, rec: &mut dyn Record, args: &[KernelArg<'_>], grid: Grid) -> Result<()> {
        if !rec.device().same_as(&self.device) {
            return Err(Error::DeviceMismatch {
                op: "CustomKernel::record",
                expected: format!("{:?}", self.device),
                found: format!("a recorder for {:?}", rec.device()),
            });
        }
        if args.len() != self.bindings.len() {
            return Err(self.mismatch(format!(
                "expected {} arguments ({}), found {}",
                self.bindings.len(),
                self.bindings
                    .iter()
                    .map(|b| format!("{}: {:?}", b.name, b.access))
                    .collect::<Vec<_>>()
                    .join(", "),
                args.len()
            )));
        }
        let max_binding = self.device.info().limits.max_storage_binding;
        let mut buffers: Vec<(&wgpu::Buffer, u64)> = Vec::new();
        let mut uniform: Option<&[u8]> = None;
        let mut tensors: Vec<(&Tensor, Access, &str)> = Vec::new();
        for (b, a) in self.bindings.iter().zip(args) {
            match (b.access, a) {
                (Access::Uniform, KernelArg::Uniform(bytes)) => {
                    if (bytes.len() as u64) < b.min_size {
                        return Err(self.mismatch(format!(
                            "uniform {:?} needs {} bytes, found {}",
                            b.name,
                            b.min_size,
                            bytes.len()
                        )));
                    }
                    if uniform.is_some() {
                        return Err(
                            self.mismatch("at most one uniform binding is supported".into())
                        );
                    }
                    uniform = Some(bytes);
                    if buffers.len() + 1 != self.bindings.len() {
                        return Err(self.mismatch(format!(
                            "the uniform {:?} must be the last binding",
                            b.name
                        )));
                    }
                }
                (Access::Uniform, _) => {
                    return Err(self.mismatch(format!(
                        "binding {} ({:?}) is a uniform; pass KernelArg::Uniform bytes",
                        b.binding, b.name
                    )))
                }
                (_, KernelArg::Uniform(_)) => {
                    return Err(self.mismatch(format!(
                        "binding {} ({:?}) is a storage buffer; pass a tensor, found uniform bytes",
                        b.binding, b.name
                    )))
                }
                (Access::ReadWrite, KernelArg::ReadOnly(_)) => {
                    return Err(self.mismatch(format!(
                        "binding {} ({:?}) is read_write but the tensor was passed as read-only",
                        b.binding, b.name
                    )))
                }
                (access, KernelArg::Tensor(t) | KernelArg::ReadOnly(t)) => {
                    t.check_device(&self.device, "CustomKernel::launch")?;
                    if t.byte_len() < b.min_size {
                        return Err(self.mismatch(format!(
                            "binding {} ({:?}) needs at least {} bytes, tensor {:?} has {}",
                            b.binding,
                            b.name,
                            b.min_size,
                            t.shape(),
                            t.byte_len()
                        )));
                    }
                    if t.byte_len() > max_binding {
                        return Err(self.mismatch(format!(
                            "binding {} ({:?}): tensor of {} bytes exceeds the adapter's storage binding limit of {} bytes",
                            b.binding,
                            b.name,
                            t.byte_len(),
                            max_binding
                        )));
                    }
                    tensors.push((t, access, &b.name));
                    buffers.push((t.buffer(), t.byte_len()));
                }
            }
        }
        for (i, (a, aa, an)) in tensors.iter().enumerate() {
            for (b, ba, bn) in &tensors[i + 1..] {
                if a.same_buffer(b) && (*aa == Access::ReadWrite || *ba == Access::ReadWrite) {
                    return Err(self.mismatch(format!(
                        "the same tensor is bound to {an:?} and {bn:?}, and one of them is read_write"
                    )));
                }
            }
        }
        let groups = match grid {
            Grid::Workgroups(x, y, z) => [x, y, z],
            Grid::Elements(n) => grid_1d(
                n,
                self.pipeline.workgroup_size[0],
                self.device.info().limits.max_workgroups_per_dimension,
            ),
        };
        rec.dispatch(&self.pipeline, &buffers, uniform, groups)
    }
}
