//! The bottom of an opened device: the wgpu device and queue, and what every layer above needs
//! from them: the adapter's description and limits, error scopes, bounded waits, one bounded
//! buffer mapping, and the lost and uncaptured-error flags.
//!
//! It knows nothing of pools, pipelines, profilers or kernels: those are built on top of it,
//! and the [`crate::runtime::Device`] handle assembles them.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use crate::device::adapter::AdapterDesc;
use crate::error::{Error, Result};

static NEXT_DEVICE_ID: AtomicU64 = AtomicU64::new(1);

/// Adds `EXPERIMENTAL_COOPERATIVE_MATRIX` to `features` where the adapter offers it, with
/// the opt-in token wgpu requires for it: the one place suanli opts into an experimental
/// wgpu feature.
///
/// Why it is sound to request: wgpu marks the feature experimental because misuse of its
/// shader operations may reach bugs in wgpu's translation. Asking for it changes nothing for
/// any other shader; only the generated cooperative-matrix kernels
/// (`kernels::matmul_gen::coop`) use it, and those are validated by naga, run only on the
/// shapes and scalar types the adapter itself reports (`AdapterDesc::coop_matrices`), and
/// are candidates only when the user opts in (`SUANLI_MATMUL_PRECISION=medium`); the tuner
/// drops one that fails or disagrees with the f32 kernels.
fn cooperative_matrix_opt_in(
    adapter: &wgpu::Adapter,
    features: wgpu::Features,
) -> (wgpu::Features, wgpu::ExperimentalFeatures) {
    if !adapter
        .features()
        .contains(wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX)
    {
        return (features, wgpu::ExperimentalFeatures::disabled());
    }
    // SAFETY: see above: the feature is used only by the cooperative-matrix kernels, on the
    // configurations the adapter reports.
    let token = unsafe { wgpu::ExperimentalFeatures::enabled() };
    (
        features | wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX,
        token,
    )
}

/// The wgpu handle of one opened device (see the module docs).
pub struct DeviceCore {
    id: u64,
    desc: AdapterDesc,
    device: wgpu::Device,
    queue: wgpu::Queue,
    /// Errors wgpu reported outside any error scope, kept instead of panicking.
    uncaptured: Arc<Mutex<Vec<String>>>,
    /// Longest wait for the GPU, in milliseconds.
    timeout_ms: AtomicU64,
    /// Set by wgpu's device-lost callback.
    lost: Arc<Mutex<Option<String>>>,
    /// A small storage buffer bound where a kernel's optional slot is unused.
    dummy: OnceLock<wgpu::Buffer>,
}

impl DeviceCore {
    /// Requests a device on `adapter` with every limit it offers and the features suanli uses.
    pub(crate) fn open(desc: AdapterDesc, adapter: wgpu::Adapter) -> Result<DeviceCore> {
        let wanted = wgpu::Features::SUBGROUP
            | wgpu::Features::SHADER_F16
            // The arrays' float64 (two u32 words joined through a u64: `crate::array::dtype`).
            | wgpu::Features::SHADER_F64
            | wgpu::Features::SHADER_INT64
            | wgpu::Features::TIMESTAMP_QUERY
            | wgpu::Features::TIMESTAMP_QUERY_INSIDE_PASSES
            | wgpu::Features::TIMESTAMP_QUERY_INSIDE_ENCODERS;
        let features = adapter.features() & wanted;
        let (features, experimental) = cooperative_matrix_opt_in(&adapter, features);
        // Without asking for the adapter's limits the device is held to WebGPU's defaults
        // (256 invocations, 16 KiB of workgroup memory, 256 MiB buffers).
        let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
            label: Some("suanli"),
            required_features: features,
            required_limits: adapter.limits(),
            experimental_features: experimental,
            ..Default::default()
        }))
        .map_err(|e| Error::DeviceRequest {
            adapter: desc.name.clone(),
            message: e.to_string(),
        })?;
        let uncaptured = Arc::new(Mutex::new(Vec::new()));
        let sink = uncaptured.clone();
        // wgpu's default handler panics; a library keeps the error and reports it at the next
        // wait or submission instead.
        device.on_uncaptured_error(Arc::new(move |e: wgpu::Error| {
            log::error!("uncaptured GPU error: {e}");
            if let Ok(mut v) = sink.lock() {
                v.push(e.to_string());
            }
        }));
        log::info!(
            "opened {} ({}, {}, {})",
            desc.name,
            desc.kind,
            desc.backend,
            desc.driver_info
        );
        if !desc.is_gpu() {
            log::info!("{} is a software adapter: it runs on the CPU", desc.name);
        }
        let lost = Arc::new(Mutex::new(None));
        let flag = lost.clone();
        let name = desc.name.clone();
        device.set_device_lost_callback(move |reason, message| {
            log::error!("device {name} lost: {reason:?} {message}");
            if let Ok(mut l) = flag.lock() {
                *l = Some(format!("{reason:?}: {message}"));
            }
        });
        Ok(DeviceCore {
            id: NEXT_DEVICE_ID.fetch_add(1, Ordering::Relaxed),
            desc,
            device,
            queue,
            uncaptured,
            timeout_ms: AtomicU64::new(120_000),
            lost,
            dummy: OnceLock::new(),
        })
    }

    /// A process-unique id.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The adapter this device was opened on.
    pub fn desc(&self) -> &AdapterDesc {
        &self.desc
    }

    /// The wgpu device.
    pub fn device(&self) -> &wgpu::Device {
        &self.device
    }

    /// The wgpu queue.
    pub fn queue(&self) -> &wgpu::Queue {
        &self.queue
    }

    /// The alignment of dynamic uniform offsets (at least 256).
    pub fn uniform_alignment(&self) -> u64 {
        (self.device.limits().min_uniform_buffer_offset_alignment as u64).max(256)
    }

    /// Sets the longest any wait may take before it fails with [`Error::Timeout`].
    pub fn set_timeout(&self, timeout: Duration) {
        let ms = timeout.as_millis().clamp(1, u64::MAX as u128) as u64;
        self.timeout_ms.store(ms, Ordering::Relaxed);
    }

    /// The wait timeout.
    pub fn timeout(&self) -> Duration {
        Duration::from_millis(self.timeout_ms.load(Ordering::Relaxed))
    }

    /// True once the driver has reported the device lost.
    pub fn is_lost(&self) -> bool {
        self.lost.lock().map_or(true, |l| l.is_some())
    }

    /// `Err(DeviceLost)` once the device is lost.
    pub fn check_alive(&self, op: &'static str) -> Result<()> {
        let reason = match self.lost.lock() {
            Ok(l) => l.clone(),
            Err(_) => Some("internal error: lost-flag lock poisoned".into()),
        };
        match reason {
            None => Ok(()),
            Some(reason) => Err(Error::DeviceLost {
                op,
                device: self.desc.name.clone(),
                reason,
            }),
        }
    }

    /// Completion callbacks run on polls; a non-blocking poll delivers those that are due.
    pub fn poll(&self) {
        let _ = self.device.poll(wgpu::PollType::Poll);
    }

    /// Blocks until submission `index` (all work with `None`) has finished, or the timeout.
    pub fn wait(&self, index: Option<wgpu::SubmissionIndex>, op: &'static str) -> Result<()> {
        self.check_alive(op)?;
        let timeout = self.timeout();
        match self.device.poll(wgpu::PollType::Wait {
            submission_index: index,
            timeout: Some(timeout),
        }) {
            Ok(_) => {
                self.check_alive(op)?;
                self.take_uncaptured(op)
            }
            Err(wgpu::PollError::Timeout) => Err(Error::Timeout {
                op,
                seconds: timeout.as_secs_f64(),
            }),
            Err(e) => Err(Error::Gpu {
                op,
                message: e.to_string(),
            }),
        }
    }

    /// Turns errors wgpu reported outside error scopes into an `Error`.
    pub fn take_uncaptured(&self, op: &'static str) -> Result<()> {
        let mut v = match self.uncaptured.lock() {
            Ok(v) => v,
            Err(p) => p.into_inner(),
        };
        if v.is_empty() {
            Ok(())
        } else {
            let message = v.join("; ");
            v.clear();
            Err(Error::Gpu { op, message })
        }
    }

    /// Runs `f` inside wgpu error scopes (validation and out of memory) and returns what they
    /// caught as an [`Error::Gpu`].
    pub fn scoped<T>(&self, op: &'static str, f: impl FnOnce() -> T) -> Result<T> {
        let oom = self.device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let val = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let out = f();
        let v = pollster::block_on(val.pop());
        let o = pollster::block_on(oom.pop());
        match (v, o) {
            (None, None) => Ok(out),
            (Some(e), _) | (None, Some(e)) => Err(Error::Gpu {
                op,
                message: e.to_string(),
            }),
        }
    }

    /// A 256-byte storage buffer that no pool ever hands out: bound where a kernel's optional
    /// read-write slot is unused, so it never aliases a real operand.
    pub fn dummy_buffer(&self) -> &wgpu::Buffer {
        self.dummy.get_or_init(|| {
            self.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("suanli dummy"),
                size: 256,
                usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            })
        })
    }

    /// Maps a `MAP_READ` buffer (whose copies have been submitted), copies its bytes out and
    /// unmaps it, waiting at most the device's timeout: the one way anything is read back.
    ///
    /// Another thread's poll may be the one that runs the mapping callback, so this keeps
    /// polling until the callback has arrived or the deadline has passed.
    pub fn map_read(&self, buffer: &wgpu::Buffer, op: &'static str) -> Result<Vec<u8>> {
        self.map_read_after(buffer, None, op)
    }

    /// [`DeviceCore::map_read`] once submission `index` is done, without waiting for later
    /// ones (data-parallel training reads one bucket of gradients while the next bucket's
    /// work still runs). `None` waits for everything submitted.
    pub fn map_read_after(
        &self,
        buffer: &wgpu::Buffer,
        index: Option<wgpu::SubmissionIndex>,
        op: &'static str,
    ) -> Result<Vec<u8>> {
        let (tx, rx) = mpsc::channel();
        buffer.map_async(wgpu::MapMode::Read, .., move |r| {
            let _ = tx.send(r);
        });
        let timeout = self.timeout();
        let deadline = Instant::now() + timeout;
        let timed_out = || Error::Timeout {
            op,
            seconds: timeout.as_secs_f64(),
        };
        let mapped = loop {
            if let Ok(r) = rx.try_recv() {
                break r;
            }
            self.check_alive(op)?;
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(timed_out());
            }
            match self.device.poll(wgpu::PollType::Wait {
                submission_index: index.clone(),
                timeout: Some(left),
            }) {
                Ok(_) => {}
                Err(wgpu::PollError::Timeout) => return Err(timed_out()),
                Err(e) => {
                    return Err(Error::Gpu {
                        op,
                        message: e.to_string(),
                    })
                }
            }
            if let Ok(r) = rx.recv_timeout(Duration::from_millis(1)) {
                break r;
            }
        };
        mapped.map_err(|e| Error::Gpu {
            op,
            message: e.to_string(),
        })?;
        let view = buffer.get_mapped_range(..).map_err(|e| Error::Gpu {
            op,
            message: e.to_string(),
        })?;
        let out = view.to_vec();
        drop(view);
        buffer.unmap();
        self.take_uncaptured(op)?;
        Ok(out)
    }
}
