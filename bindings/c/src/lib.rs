//! The C ABI of suanli (`libsuanli`, `suanli.h`): opaque handles over the crate's public
//! API, a status from every call, the calling thread's last error message, and no Rust
//! panic across the boundary.
//!
//! Every exported function runs its body through [`guard`]: a `suanli::Error` becomes its
//! status and message, a null pointer becomes `SUANLI_ERROR_NULL_POINTER`, and a panic is
//! caught and returned as `SUANLI_ERROR_INTERNAL` (the panic hook logs it through `log`
//! instead of printing). docs/C.md is the reference.

#![allow(non_camel_case_types)] // C's naming: suanli_device, suanli_status
#![allow(clippy::missing_safety_doc)] // the safety contract is the C header's (docs/C.md)

use std::cell::RefCell;
use std::ffi::{c_char, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Once;

mod batch;
mod device;
mod kernel;
mod model;
mod model_multi;
mod telemetry;
mod tensor;

/// What a call returned. `SUANLI_OK` is 0; every other value is an error whose message
/// `suanli_last_error()` gives.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum suanli_status {
    /// Success.
    SUANLI_OK = 0,
    /// A required pointer was null (or a handle was missing).
    SUANLI_ERROR_NULL_POINTER = 1,
    /// An argument's value is not allowed (what was expected and found is in the message).
    SUANLI_ERROR_INVALID_ARGUMENT = 2,
    /// Sizes or shapes do not fit together.
    SUANLI_ERROR_SHAPE_MISMATCH = 3,
    /// No adapter, or none matching the spec.
    SUANLI_ERROR_NO_DEVICE = 4,
    /// A device spec string that does not parse.
    SUANLI_ERROR_DEVICE_SPEC = 5,
    /// The configuration (SUANLI_* variables, suanli.toml) is invalid.
    SUANLI_ERROR_CONFIG = 6,
    /// Device memory (or its configured limit) is exhausted.
    SUANLI_ERROR_OUT_OF_MEMORY = 7,
    /// Handles on different devices were combined.
    SUANLI_ERROR_DEVICE_MISMATCH = 8,
    /// WGSL that does not validate (line and column in the message).
    SUANLI_ERROR_SHADER = 9,
    /// Kernel arguments that do not match the kernel's bindings.
    SUANLI_ERROR_BINDING_MISMATCH = 10,
    /// The device reported an error, or was lost.
    SUANLI_ERROR_DEVICE = 11,
    /// Waiting for the device took too long.
    SUANLI_ERROR_TIMEOUT = 12,
    /// A file that is not what it should be.
    SUANLI_ERROR_MALFORMED = 13,
    /// Training met a value that is not finite.
    SUANLI_ERROR_NON_FINITE = 14,
    /// Reading or writing a file failed.
    SUANLI_ERROR_IO = 15,
    /// Training was stopped by a callback.
    SUANLI_ERROR_INTERRUPTED = 16,
    /// A bug in suanli (including a caught panic).
    SUANLI_ERROR_INTERNAL = 17,
}

use suanli_status::*;

/// A failed call: its status and message.
pub(crate) struct Fail {
    pub(crate) status: suanli_status,
    pub(crate) message: String,
}

impl From<suanli::Error> for Fail {
    fn from(e: suanli::Error) -> Fail {
        use suanli::Error as E;
        let status = match &e {
            E::NoAdapter { .. } | E::DeviceNotFound { .. } => SUANLI_ERROR_NO_DEVICE,
            E::InvalidDeviceSpec { .. } => SUANLI_ERROR_DEVICE_SPEC,
            E::Config { .. } => SUANLI_ERROR_CONFIG,
            E::OutOfMemory { .. } => SUANLI_ERROR_OUT_OF_MEMORY,
            E::ShapeMismatch { .. } => SUANLI_ERROR_SHAPE_MISMATCH,
            E::DeviceMismatch { .. } => SUANLI_ERROR_DEVICE_MISMATCH,
            E::Shader { .. } => SUANLI_ERROR_SHADER,
            E::BindingMismatch { .. } => SUANLI_ERROR_BINDING_MISMATCH,
            E::InvalidArgument { .. }
            | E::IndexOutOfBounds { .. }
            | E::DType { .. }
            | E::Singular { .. } => SUANLI_ERROR_INVALID_ARGUMENT,
            E::Gpu { .. } | E::DeviceLost { .. } | E::DeviceRequest { .. } => SUANLI_ERROR_DEVICE,
            E::Timeout { .. } => SUANLI_ERROR_TIMEOUT,
            E::Malformed { .. } | E::Serialize { .. } => SUANLI_ERROR_MALFORMED,
            E::NonFinite { .. } => SUANLI_ERROR_NON_FINITE,
            E::Io { .. } => SUANLI_ERROR_IO,
            E::Interrupted { .. } => SUANLI_ERROR_INTERRUPTED,
            _ => SUANLI_ERROR_INTERNAL,
        };
        Fail {
            status,
            message: e.to_string(),
        }
    }
}

impl Fail {
    /// A null pointer where `what` was required.
    pub(crate) fn null(what: &str) -> Fail {
        Fail {
            status: SUANLI_ERROR_NULL_POINTER,
            message: format!("{what}: expected a pointer; found NULL"),
        }
    }

    /// An invalid argument.
    pub(crate) fn invalid(message: String) -> Fail {
        Fail {
            status: SUANLI_ERROR_INVALID_ARGUMENT,
            message,
        }
    }

    /// A crate error's status, its message after `context`.
    pub(crate) fn from_error(e: suanli::Error, context: &str) -> Fail {
        let f = Fail::from(e);
        Fail {
            status: f.status,
            message: format!("{context}{}", f.message),
        }
    }
}

pub(crate) type Result<T> = std::result::Result<T, Fail>;

thread_local! {
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

fn set_last_error(message: &str) {
    let c = CString::new(message.replace('\0', " ")).unwrap_or_default();
    LAST_ERROR.with(|l| *l.borrow_mut() = c);
}

/// Runs an exported function's body: its status, its message kept for
/// `suanli_last_error`, and any panic caught. `SUANLI_C_TEST_PANIC=<name>` makes the
/// function `name` panic inside the guard (the planted fault of the tests).
pub(crate) fn guard(name: &str, f: impl FnOnce() -> Result<()>) -> suanli_status {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        // A C program has no Rust panic hook of its own: log instead of printing.
        std::panic::set_hook(Box::new(|info| log::error!("suanli (C API): {info}")));
    });
    let r = catch_unwind(AssertUnwindSafe(|| {
        if std::env::var("SUANLI_C_TEST_PANIC").is_ok_and(|v| v == name) {
            panic!("{name}: panic planted by SUANLI_C_TEST_PANIC");
        }
        f()
    }));
    match r {
        Ok(Ok(())) => {
            set_last_error("");
            SUANLI_OK
        }
        Ok(Err(fail)) => {
            set_last_error(&format!("{name}: {}", fail.message));
            fail.status
        }
        Err(p) => {
            let what = p
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| p.downcast_ref::<&str>().copied())
                .unwrap_or("a panic");
            set_last_error(&format!("{name}: internal error (a bug in suanli): {what}"));
            SUANLI_ERROR_INTERNAL
        }
    }
}

/// `*p` as a `&T`, or a null-pointer failure naming `what`.
pub(crate) unsafe fn deref<'a, T>(p: *const T, what: &str) -> Result<&'a T> {
    p.as_ref().ok_or_else(|| Fail::null(what))
}

/// A C string argument as UTF-8.
pub(crate) unsafe fn text<'a>(p: *const c_char, what: &str) -> Result<&'a str> {
    if p.is_null() {
        return Err(Fail::null(what));
    }
    CStr::from_ptr(p)
        .to_str()
        .map_err(|_| Fail::invalid(format!("{what}: expected UTF-8 text")))
}

/// Writes `v` through the out-pointer `out`.
pub(crate) unsafe fn put<T>(out: *mut T, v: T, what: &str) -> Result<()> {
    if out.is_null() {
        return Err(Fail::null(what));
    }
    out.write(v);
    Ok(())
}

/// The API version: `major * 10000 + minor * 100 + patch` (this is 0.1.0: 100). A program
/// built against a header of another major version should not use this library.
#[no_mangle]
pub extern "C" fn suanli_api_version() -> u32 {
    100
}

/// The message of the last call on this thread that failed (empty after a success). The
/// pointer stays valid until the next suanli call on this thread; never NULL.
#[no_mangle]
pub extern "C" fn suanli_last_error() -> *const c_char {
    LAST_ERROR.with(|l| l.borrow().as_ptr())
}
