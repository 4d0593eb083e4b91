//! suanli's typed errors as Python exceptions: arguments and shapes → `ValueError`, indices
//! → `IndexError`, dtypes → `TypeError`, a singular matrix → `LinAlgError` (a `ValueError`,
//! as NumPy's), out of memory → `MemoryError`, missing files → `FileNotFoundError`, the device and the GPU →
//! `RuntimeError` subclasses, each with suanli's message.

use pyo3::create_exception;
use pyo3::exceptions::{
    PyFileNotFoundError, PyIndexError, PyKeyboardInterrupt, PyMemoryError, PyOSError,
    PyPermissionError, PyRuntimeError, PyTimeoutError, PyTypeError, PyValueError,
};
use pyo3::PyErr;

create_exception!(
    suanli,
    SuanliError,
    PyRuntimeError,
    "A device, driver or runtime failure reported by suanli."
);
create_exception!(
    suanli,
    LinAlgError,
    PyValueError,
    "A linear-algebra operation failed (a singular matrix), as numpy.linalg.LinAlgError."
);
create_exception!(
    suanli,
    DeviceLostError,
    SuanliError,
    "The device was lost (driver reset, removal, or a failed wait); open a device again."
);

/// suanli's error as the Python exception a Python user expects. A function, not `From`:
/// both types are foreign to this crate.
pub fn to_py(err: suanli::Error) -> PyErr {
    use suanli::Error as E;
    let msg = err.to_string();
    match err {
        E::InvalidDeviceSpec { .. }
        | E::Config { .. }
        | E::ShapeMismatch { .. }
        | E::DeviceMismatch { .. }
        | E::Shader { .. }
        | E::BindingMismatch { .. }
        | E::InvalidArgument { .. }
        | E::Malformed { .. } => PyValueError::new_err(msg),
        E::IndexOutOfBounds { .. } => PyIndexError::new_err(msg),
        E::DType { .. } => PyTypeError::new_err(msg),
        E::Singular { .. } | E::NoConvergence { .. } => LinAlgError::new_err(msg),
        E::OutOfMemory { .. } => PyMemoryError::new_err(msg),
        E::Timeout { .. } => PyTimeoutError::new_err(msg),
        E::DeviceLost { .. } => DeviceLostError::new_err(msg),
        E::Interrupted { .. } => PyKeyboardInterrupt::new_err(msg),
        E::Io { path, source } => {
            // (errno, strerror, filename): Python fills e.errno, e.strerror and e.filename.
            let text = source.to_string();
            let strerror = text.split(" (os error").next().unwrap_or(&text).to_string();
            let args = (
                source.raw_os_error().unwrap_or(0),
                strerror,
                path.display().to_string(),
            );
            match source.kind() {
                std::io::ErrorKind::NotFound => PyFileNotFoundError::new_err(args),
                std::io::ErrorKind::PermissionDenied => PyPermissionError::new_err(args),
                _ => PyOSError::new_err(args),
            }
        }
        // No adapter, a GPU validation error, a non-finite loss, and variants to come
        // (suanli::Error is non-exhaustive).
        _ => SuanliError::new_err(msg),
    }
}

/// `result.py()?` at call sites.
pub trait IntoPy<T> {
    /// The result with suanli's error mapped by [`to_py`].
    fn py(self) -> pyo3::PyResult<T>;
}

impl<T> IntoPy<T> for suanli::Result<T> {
    fn py(self) -> pyo3::PyResult<T> {
        self.map_err(to_py)
    }
}
