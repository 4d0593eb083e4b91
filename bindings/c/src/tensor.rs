//! Tensors (`suanli_tensor`): float32 arrays on a device, made from host data, read back
//! into a caller's buffer, and the tensor API's core operations.

use suanli::{Activation, Tensor};

use crate::device::suanli_device;
use crate::{deref, guard, put, suanli_status, Fail};

/// A float32 tensor on a device (a handle: release it with `suanli_tensor_release`).
/// Thread-safe to read and to pass to operations from several threads.
pub struct suanli_tensor(pub(crate) Tensor);

/// Which operands of `suanli_matmul` are stored transposed. (Functions take it as a
/// `uint32_t` and check it: a value that is none of these is refused, not undefined.)
#[repr(C)]
#[allow(dead_code)] // the values are C's to pass
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum suanli_layout {
    /// `a · b`.
    SUANLI_NN = 0,
    /// `aᵀ · b`.
    SUANLI_TN = 1,
    /// `a · bᵀ`.
    SUANLI_NT = 2,
}

/// An activation for `suanli_activation_apply` (taken as a checked `uint32_t`).
#[repr(C)]
#[allow(dead_code)] // the values are C's to pass
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum suanli_activation {
    /// max(x, 0).
    SUANLI_RELU = 0,
    /// 1 / (1 + e^-x).
    SUANLI_SIGMOID = 1,
    /// tanh(x).
    SUANLI_TANH = 2,
    /// GELU (exact).
    SUANLI_GELU = 3,
    /// None (`suanli_linear` only).
    SUANLI_LINEAR = 4,
}

unsafe fn shape_of<'a>(shape: *const usize, ndim: usize) -> crate::Result<&'a [usize]> {
    if ndim == 0 {
        return Ok(&[]);
    }
    if shape.is_null() {
        return Err(Fail::null("shape"));
    }
    Ok(std::slice::from_raw_parts(shape, ndim))
}

fn out(t: Tensor) -> *mut suanli_tensor {
    Box::into_raw(Box::new(suanli_tensor(t)))
}

/// A tensor of `shape` (`ndim` sizes) on `device` holding `len` floats from `data`
/// (row-major; `len` must be the shape's product), into `*tensor`.
#[no_mangle]
pub unsafe extern "C" fn suanli_tensor_from_data(
    device: *const suanli_device,
    data: *const f32,
    len: usize,
    shape: *const usize,
    ndim: usize,
    tensor: *mut *mut suanli_tensor,
) -> suanli_status {
    guard("suanli_tensor_from_data", || {
        let d = deref(device, "device")?;
        let shape = shape_of(shape, ndim)?;
        if data.is_null() && len > 0 {
            return Err(Fail::null("data"));
        }
        if tensor.is_null() {
            return Err(Fail::null("tensor"));
        }
        let values = if len == 0 {
            &[][..]
        } else {
            std::slice::from_raw_parts(data, len)
        };
        let t = Tensor::from_slice(&d.0, values, shape)?;
        put(tensor, out(t), "tensor")
    })
}

/// A tensor of zeros of `shape` on `device`, into `*tensor`.
#[no_mangle]
pub unsafe extern "C" fn suanli_tensor_zeros(
    device: *const suanli_device,
    shape: *const usize,
    ndim: usize,
    tensor: *mut *mut suanli_tensor,
) -> suanli_status {
    guard("suanli_tensor_zeros", || {
        let d = deref(device, "device")?;
        let shape = shape_of(shape, ndim)?;
        if tensor.is_null() {
            return Err(Fail::null("tensor"));
        }
        put(tensor, out(Tensor::zeros(&d.0, shape)?), "tensor")
    })
}

/// The tensor's rank into `*ndim` and, if `shape` is not NULL, its sizes into `shape`
/// (room for `capacity` sizes; a smaller room is an error that says how many are needed).
#[no_mangle]
pub unsafe extern "C" fn suanli_tensor_shape(
    tensor: *const suanli_tensor,
    shape: *mut usize,
    capacity: usize,
    ndim: *mut usize,
) -> suanli_status {
    guard("suanli_tensor_shape", || {
        let t = deref(tensor, "tensor")?;
        let s = t.0.shape();
        put(ndim, s.len(), "ndim")?;
        if shape.is_null() {
            return Ok(());
        }
        if capacity < s.len() {
            return Err(Fail {
                status: suanli_status::SUANLI_ERROR_SHAPE_MISMATCH,
                message: format!(
                    "shape: expected room for {} sizes; found {capacity}",
                    s.len()
                ),
            });
        }
        std::ptr::copy_nonoverlapping(s.as_ptr(), shape, s.len());
        Ok(())
    })
}

/// Reads the tensor back into `data` (room for `capacity` floats: fewer than the tensor
/// holds is an error, nothing written). Waits for the work that writes it.
#[no_mangle]
pub unsafe extern "C" fn suanli_tensor_download(
    tensor: *const suanli_tensor,
    data: *mut f32,
    capacity: usize,
) -> suanli_status {
    guard("suanli_tensor_download", || {
        let t = deref(tensor, "tensor")?;
        let n = t.0.numel();
        if data.is_null() && n > 0 {
            return Err(Fail::null("data"));
        }
        if capacity < n {
            return Err(Fail {
                status: suanli_status::SUANLI_ERROR_SHAPE_MISMATCH,
                message: format!("data: expected room for {n} floats; found {capacity}"),
            });
        }
        let v = t.0.to_vec()?;
        std::ptr::copy_nonoverlapping(v.as_ptr(), data, n);
        Ok(())
    })
}

/// `c = op(a) · op(b)` for 2-D tensors, the layout saying which are transposed.
#[no_mangle]
pub unsafe extern "C" fn suanli_matmul(
    a: *const suanli_tensor,
    b: *const suanli_tensor,
    layout: u32,
    c: *mut *mut suanli_tensor,
) -> suanli_status {
    guard("suanli_matmul", || {
        let (a, b) = (deref(a, "a")?, deref(b, "b")?);
        if c.is_null() {
            return Err(Fail::null("c"));
        }
        let r = match layout {
            0 => a.0.matmul(&b.0)?,
            1 => a.0.matmul_tn(&b.0)?,
            2 => a.0.matmul_nt(&b.0)?,
            other => {
                return Err(Fail::invalid(format!(
                    "layout: expected SUANLI_NN, SUANLI_TN or SUANLI_NT; found {other}"
                )))
            }
        };
        put(c, out(r), "c")
    })
}

/// `y = act(x)`, elementwise.
#[no_mangle]
pub unsafe extern "C" fn suanli_activation_apply(
    x: *const suanli_tensor,
    act: u32,
    y: *mut *mut suanli_tensor,
) -> suanli_status {
    guard("suanli_activation_apply", || {
        let x = deref(x, "x")?;
        if y.is_null() {
            return Err(Fail::null("y"));
        }
        put(y, out(x.0.activation(activation_of(act, false)?)?), "y")
    })
}

/// The activation a C caller's code names; `linear` (`SUANLI_LINEAR`) only where allowed.
fn activation_of(act: u32, linear_ok: bool) -> crate::Result<Activation> {
    Ok(match act {
        0 => Activation::Relu,
        1 => Activation::Sigmoid,
        2 => Activation::Tanh,
        3 => Activation::Gelu,
        4 if linear_ok => Activation::Linear,
        other => {
            let names = if linear_ok {
                "SUANLI_RELU, SUANLI_SIGMOID, SUANLI_TANH, SUANLI_GELU or SUANLI_LINEAR"
            } else {
                "SUANLI_RELU, SUANLI_SIGMOID, SUANLI_TANH or SUANLI_GELU"
            };
            return Err(Fail::invalid(format!(
                "act: expected {names}; found {other}"
            )));
        }
    })
}

/// A dense layer's forward pass in one fused kernel: `act(x·w + bias)` for `x` of (m, k),
/// `w` of (k, n) and `bias` of (n) or NULL; `act` a `suanli_activation`, `SUANLI_LINEAR`
/// for none.
#[no_mangle]
pub unsafe extern "C" fn suanli_linear(
    x: *const suanli_tensor,
    w: *const suanli_tensor,
    bias: *const suanli_tensor,
    act: u32,
    y: *mut *mut suanli_tensor,
) -> suanli_status {
    guard("suanli_linear", || {
        let (x, w) = (deref(x, "x")?, deref(w, "w")?);
        let b = if bias.is_null() {
            None
        } else {
            Some(&deref(bias, "bias")?.0)
        };
        if y.is_null() {
            return Err(Fail::null("y"));
        }
        let a = activation_of(act, true)?;
        put(y, out(x.0.linear(&w.0, b, a)?), "y")
    })
}

/// Softmax of each row of a 2-D tensor.
#[no_mangle]
pub unsafe extern "C" fn suanli_softmax(
    x: *const suanli_tensor,
    y: *mut *mut suanli_tensor,
) -> suanli_status {
    guard("suanli_softmax", || {
        let x = deref(x, "x")?;
        if y.is_null() {
            return Err(Fail::null("y"));
        }
        put(y, out(x.0.softmax(1)?), "y")
    })
}

/// The sum of a 2-D tensor over `axis` (0: per column, 1: per row).
#[no_mangle]
pub unsafe extern "C" fn suanli_sum(
    x: *const suanli_tensor,
    axis: usize,
    y: *mut *mut suanli_tensor,
) -> suanli_status {
    guard("suanli_sum", || {
        let x = deref(x, "x")?;
        if y.is_null() {
            return Err(Fail::null("y"));
        }
        put(y, out(x.0.sum(axis)?), "y")
    })
}

/// Releases a tensor handle (NULL is ignored).
#[no_mangle]
pub unsafe extern "C" fn suanli_tensor_release(tensor: *mut suanli_tensor) {
    if !tensor.is_null() {
        drop(Box::from_raw(tensor));
    }
}
