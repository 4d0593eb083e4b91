//! The one error type of the crate.
//!
//! Every fallible public function returns [`Result<T>`](crate::Result). Variants carry the
//! numbers that explain the failure (what was expected, what was found), so a message can be
//! acted upon without a debugger.

use std::path::PathBuf;

/// Everything that can go wrong in suanli.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// No adapter at all could be found (no GPU driver and no software Vulkan driver).
    #[error("no GPU or software adapter found{}. {hint}", if backends.is_empty() { String::new() } else { format!(" (backends searched: {backends})") })]
    NoAdapter {
        /// The backends that were searched.
        backends: String,
        /// How to get a driver.
        hint: String,
    },

    /// A device spec string could not be parsed.
    #[error("invalid device spec {spec:?}: {reason}. Expected one of: auto, gpu:N, cpu, software, vulkan:N, metal:N, dx12:N, gl:N, or a name substring")]
    InvalidDeviceSpec {
        /// The spec as given.
        spec: String,
        /// What is wrong with it.
        reason: String,
    },

    /// A device spec was well formed but no visible adapter matches it.
    #[error("no adapter matches device spec {spec:?}. Available:\n{available}")]
    DeviceNotFound {
        /// The spec as given.
        spec: String,
        /// The table of available adapters (one per line), or a hint if there are none.
        available: String,
    },

    /// The adapter refused to create a device.
    #[error("could not open device {adapter:?}: {message}")]
    DeviceRequest {
        /// The adapter's name.
        adapter: String,
        /// The driver's message.
        message: String,
    },

    /// A configuration value (environment variable or config file entry) is malformed.
    #[error("invalid configuration {key} = {value:?} (from {source_name}): {reason}")]
    Config {
        /// The key, e.g. `SUANLI_MEMORY_LIMIT`.
        key: String,
        /// The value found.
        value: String,
        /// Where it came from (environment, a file path).
        source_name: String,
        /// What is wrong and what is expected.
        reason: String,
    },

    /// An allocation would exceed the memory limit or the adapter's maximum buffer size.
    #[error("out of memory: requested {requested} bytes with {in_use} bytes in use, limit {limit} bytes")]
    OutOfMemory {
        /// Bytes requested by the failing allocation.
        requested: u64,
        /// Bytes held by live buffers at the time.
        in_use: u64,
        /// The limit that would have been exceeded.
        limit: u64,
    },

    /// Tensor shapes do not fit the operation.
    #[error("{op}: shape mismatch: expected {expected}, found {found}")]
    ShapeMismatch {
        /// The operation that checked the shapes.
        op: &'static str,
        /// What was expected.
        expected: String,
        /// What was found.
        found: String,
    },

    /// A tensor from one device was used with another.
    #[error("{op}: tensor lives on device {found:?}, expected device {expected:?}")]
    DeviceMismatch {
        /// The operation.
        op: &'static str,
        /// The device the operation runs on.
        expected: String,
        /// The tensor's device.
        found: String,
    },

    /// WGSL source failed to parse or validate.
    #[error("shader {file}:{line}:{column}: {message}")]
    Shader {
        /// The shader's name (file stem or the name given to a custom kernel).
        file: String,
        /// 1-based line (0 when naga gave no location).
        line: u32,
        /// 1-based column (0 when naga gave no location).
        column: u32,
        /// naga's message.
        message: String,
    },

    /// The arguments given to a kernel do not match its bindings.
    #[error("kernel {kernel}: binding mismatch: {message}")]
    BindingMismatch {
        /// The kernel's name.
        kernel: String,
        /// What was expected and what was found.
        message: String,
    },

    /// An argument is outside its valid range.
    #[error("{op}: invalid argument {name}: expected {expected}, found {found}")]
    InvalidArgument {
        /// The operation.
        op: &'static str,
        /// The argument's name.
        name: &'static str,
        /// The valid range or form.
        expected: String,
        /// The value given.
        found: String,
    },

    /// An index or axis lies outside an array's extent (Python's `IndexError`).
    #[error("{op}: index out of bounds: expected {expected}, found {found}")]
    IndexOutOfBounds {
        /// The operation.
        op: &'static str,
        /// The valid range.
        expected: String,
        /// The index given.
        found: String,
    },

    /// An operation does not apply to an array's dtype, or the device does not hold the
    /// dtype (Python's `TypeError`).
    #[error("{op}: unsupported dtype: expected {expected}, found {found}")]
    DType {
        /// The operation.
        op: &'static str,
        /// The dtypes it takes.
        expected: String,
        /// The dtype given.
        found: String,
    },

    /// A matrix has no inverse (NumPy's `LinAlgError`).
    #[error("{op}: singular matrix: {found}")]
    Singular {
        /// The operation.
        op: &'static str,
        /// Which matrix, and what showed it singular.
        found: String,
    },

    /// An iterative factorisation did not converge in its most iterations (NumPy's
    /// `LinAlgError: SVD did not converge`).
    #[error("{op}: did not converge: {found}")]
    NoConvergence {
        /// The operation.
        op: &'static str,
        /// What did not converge, after how many iterations.
        found: String,
    },

    /// wgpu reported an error (validation, internal or out of memory) that was caught in an error scope.
    #[error("{op}: GPU error: {message}")]
    Gpu {
        /// What was being done.
        op: &'static str,
        /// wgpu's message.
        message: String,
    },

    /// The device was lost (driver reset, GPU removed, or destroyed): everything on it is
    /// gone; open a new [`crate::Device`].
    #[error("{op}: device {device} was lost ({reason}); open it again")]
    DeviceLost {
        /// What was being done.
        op: &'static str,
        /// The adapter.
        device: String,
        /// wgpu's reason and message.
        reason: String,
    },

    /// Waiting for the GPU took longer than the timeout.
    #[error("{op}: the GPU did not finish within {seconds} s")]
    Timeout {
        /// What was being waited for.
        op: &'static str,
        /// The timeout in seconds.
        seconds: f64,
    },

    /// A file's contents are not what its format requires.
    #[error("{path}: malformed {format} file: expected {expected}, found {found}")]
    Malformed {
        /// The file.
        path: PathBuf,
        /// The format (IDX, safetensors…).
        format: &'static str,
        /// What the format requires.
        expected: String,
        /// What the file holds.
        found: String,
    },

    /// Training produced a NaN or infinite loss.
    #[error("the loss became {value} at epoch {epoch}, step {step}: training stopped (lower the learning rate?)")]
    NonFinite {
        /// 1-based epoch.
        epoch: usize,
        /// Step within the epoch (the end of the chunk where it was seen).
        step: usize,
        /// The value seen.
        value: f64,
    },

    /// Data could not be encoded for a file (safetensors, JSON): a host-side failure, not a
    /// GPU one.
    #[error("{op}: could not encode {what}: {message}")]
    Serialize {
        /// The operation.
        op: &'static str,
        /// What was being encoded.
        what: &'static str,
        /// The encoder's message.
        message: String,
    },

    /// An internal invariant did not hold: a bug in suanli, not in the caller's input.
    #[error("{op}: internal error: {message} (this is a bug in suanli; please report it)")]
    Internal {
        /// The operation.
        op: &'static str,
        /// What went wrong.
        message: String,
    },

    /// Training was stopped by a callback (a Ctrl-C check) before the epoch ended; the
    /// model holds the weights of the last completed step.
    #[error("training interrupted at epoch {epoch}, step {step}")]
    Interrupted {
        /// 1-based epoch.
        epoch: usize,
        /// Steps completed in that epoch.
        step: usize,
    },

    /// Another process of a distributed run failed, stopped answering, or was lost: this one
    /// stops too instead of waiting for it. End the process with a non-zero status; MPI cannot
    /// continue after a peer is lost.
    #[error("rank {rank} failed: {message}")]
    PeerFailed {
        /// The rank that failed (or did not answer).
        rank: usize,
        /// What it reported, or how it was noticed.
        message: String,
    },

    /// The processes of a distributed run were not started alike (a different model,
    /// optimizer, batch size, dataset, seed …); found before training changes anything.
    #[error(
        "the ranks of this run disagree on {what}: rank 0 has {expected}, rank {rank} has {found}"
    )]
    RankMismatch {
        /// What differs.
        what: String,
        /// The first rank that differs from rank 0.
        rank: usize,
        /// Rank 0's value.
        expected: String,
        /// That rank's value.
        found: String,
    },

    /// MPI could not be used: not initialised, initialised twice, or launched wrongly.
    #[error("MPI: {message}")]
    Mpi {
        /// What went wrong and what to do.
        message: String,
    },

    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
}

impl Error {
    /// An [`Error::Io`] for `path`.
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }
}

/// `Result` with [`Error`] as the error type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
