//! `Array`: an N-dimensional array of one dtype on one device, computed lazily.
//!
//! An array is either data (a buffer of device words and a strided [`Layout`] over it) or an
//! elementwise expression over other arrays that has not run yet. Elementwise operations only
//! build expressions; the first thing that needs the values (reading them, a reduction, a
//! view that needs a layout, `eval`) generates one WGSL kernel for the whole expression
//! (`array::codegen`) and runs it, so `exp(a * b + c) / 2` is one dispatch. Once run, the
//! array is data and lets go of its operands.
//!
//! Expressions are capped (`MAX_NODES` operations, and as many distinct buffers as a kernel
//! may bind); an operation that would pass the cap runs its operands first.
//!
//! This file is the type; running it is `eval`, building expressions `elementwise`, views
//! `views`, so that the type sits below the code generator that reads it.

use std::sync::{Arc, Mutex, MutexGuard};

use crate::array::dtype::DType;
use crate::array::layout::{numel, Layout};
use crate::array::ops::{Binary, Unary};
use crate::error::{Error, Result};
use crate::runtime::Device;
use crate::tensor::Tensor;

/// Operations an expression may hold before it runs (the generated kernel's size).
pub(crate) const MAX_NODES: usize = 64;

/// A Python-style scalar operand: its kind decides the result's dtype beside an array.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Scalar {
    /// `True`/`False`.
    Bool(bool),
    /// An integer literal: 128 bits, so that every value of int64 and of uint64 (NumPy takes
    /// `2**64 - 1` beside a uint64 array) is one.
    Int(i128),
    /// A float literal.
    Float(f64),
    /// A complex literal (real, imaginary).
    Complex(f64, f64),
}

impl From<f64> for Scalar {
    fn from(v: f64) -> Scalar {
        Scalar::Float(v)
    }
}

impl From<f32> for Scalar {
    fn from(v: f32) -> Scalar {
        Scalar::Float(v as f64)
    }
}

impl From<i64> for Scalar {
    fn from(v: i64) -> Scalar {
        Scalar::Int(v.into())
    }
}

impl From<u64> for Scalar {
    fn from(v: u64) -> Scalar {
        Scalar::Int(v.into())
    }
}

impl From<i32> for Scalar {
    fn from(v: i32) -> Scalar {
        Scalar::Int(v.into())
    }
}

impl From<bool> for Scalar {
    fn from(v: bool) -> Scalar {
        Scalar::Bool(v)
    }
}

/// An array's data: a flat buffer of device words, and where the elements are in it.
#[derive(Clone)]
pub(crate) struct Strided {
    /// The words (a 1-D tensor; its f32 type is only the container's).
    pub data: Tensor,
    /// Which words are the array's elements.
    pub layout: Layout,
}

/// How an array's values come about.
#[derive(Clone)]
pub(crate) enum Expr {
    /// A scalar's device words (the array is 0-d): the value's, and the imaginary part's
    /// for complex64 or the high half for float64 (0 otherwise, unused).
    Scalar(u32, u32),
    /// Each element's position along an axis (int32): `arange`, `eye`, `tril` build on it.
    Iota(usize),
    /// `op(x)`, computed in dtype `t`.
    Unary(Unary, DType, Array),
    /// `op(a, b)`, both converted to dtype `t` first.
    Binary(Binary, DType, Array, Array),
    /// `where(cond, a, b)`, `a` and `b` converted to the result's dtype.
    Where(Array, Array, Array),
    /// `x` converted to the array's dtype.
    Cast(Array),
}

pub(crate) enum State {
    Ready(Strided),
    Lazy(Expr),
}

pub(crate) struct Node {
    pub device: Device,
    pub dtype: DType,
    pub shape: Vec<usize>,
    /// Operations in the expression (shared ones counted once per use: an upper bound).
    pub nodes: usize,
    /// The distinct buffers the expression reads.
    pub buffers: Vec<usize>,
    pub state: Mutex<State>,
}

/// An N-dimensional array on a device. Cloning shares it (and its buffer).
///
/// ```no_run
/// use suanli::array::{Array, DType};
/// use suanli::Device;
/// let dev = Device::open("auto")?;
/// let x = Array::from_f32(&dev, &[1.0, 2.0, 3.0, 4.0], &[2, 2])?;
/// let y = x.mul(&x)?.add_scalar(1.0)?.exp()?; // one kernel, run when read
/// let total = y.sum(None, false)?.to_f64_vec()?;
/// assert_eq!(y.dtype(), DType::Float32);
/// # Ok::<(), suanli::Error>(())
/// ```
#[derive(Clone)]
pub struct Array {
    pub(crate) node: Arc<Node>,
}

impl std::fmt::Debug for Array {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Array(shape={:?}, dtype={}, device={:?})",
            self.shape(),
            self.dtype(),
            self.node.device
        )
    }
}

fn lock(node: &Node) -> MutexGuard<'_, State> {
    // A poisoned lock only means another thread panicked while holding it; the state it
    // guards is replaced whole, never left half-written.
    node.state.lock().unwrap_or_else(|e| e.into_inner())
}

impl Array {
    pub(crate) fn from_state(
        device: &Device,
        dtype: DType,
        shape: Vec<usize>,
        nodes: usize,
        buffers: Vec<usize>,
        state: State,
    ) -> Array {
        Array {
            node: Arc::new(Node {
                device: device.clone(),
                dtype,
                shape,
                nodes,
                buffers,
                state: Mutex::new(state),
            }),
        }
    }

    /// An array over existing words.
    pub(crate) fn from_strided(device: &Device, dtype: DType, s: Strided) -> Array {
        let id = s.data.storage_id();
        Array::from_state(
            device,
            dtype,
            s.layout.shape.clone(),
            1,
            vec![id],
            State::Ready(s),
        )
    }

    /// Its shape.
    pub fn shape(&self) -> &[usize] {
        &self.node.shape
    }

    /// Number of axes.
    pub fn ndim(&self) -> usize {
        self.node.shape.len()
    }

    /// Number of elements.
    pub fn size(&self) -> usize {
        numel(&self.node.shape)
    }

    /// Its dtype.
    pub fn dtype(&self) -> DType {
        self.node.dtype
    }

    /// The device it lives on.
    pub fn device(&self) -> &Device {
        &self.node.device
    }

    /// Whether this and `other` are the same array (not only equal values).
    pub fn same_as(&self, other: &Array) -> bool {
        Arc::ptr_eq(&self.node, &other.node)
    }

    /// Whether the values are computed (false while an expression waits to run).
    pub fn is_evaluated(&self) -> bool {
        matches!(*lock(&self.node), State::Ready(_))
    }

    pub(crate) fn expr(&self) -> Option<Expr> {
        match &*lock(&self.node) {
            State::Ready(_) => None,
            State::Lazy(e) => Some(e.clone()),
        }
    }

    pub(crate) fn ready(&self) -> Option<Strided> {
        match &*lock(&self.node) {
            State::Ready(s) => Some(s.clone()),
            State::Lazy(_) => None,
        }
    }

    pub(crate) fn set_ready(&self, s: Strided) {
        *lock(&self.node) = State::Ready(s);
    }

    pub(crate) fn check_device(&self, other: &Array, op: &'static str) -> Result<()> {
        if self.device().same_as(other.device()) {
            Ok(())
        } else {
            Err(Error::DeviceMismatch {
                op,
                expected: format!("arrays on one device ({:?})", self.device()),
                found: format!("an array on {:?}", other.device()),
            })
        }
    }

    /// A 0-d array holding `value` as `dtype` (converted as a cast would).
    pub fn scalar(device: &Device, value: f64, dtype: DType) -> Array {
        Array::from_state(
            device,
            dtype,
            Vec::new(),
            1,
            Vec::new(),
            State::Lazy({
                let (lo, hi) = dtype.words_of(value);
                Expr::Scalar(lo, hi)
            }),
        )
    }

    /// A 0-d array holding the integer `value` exactly as `dtype` (wrapped to an integer
    /// dtype's width, rounded once to a float dtype): int64 values beyond 2^53 survive,
    /// which [`Array::scalar`]'s f64 would round.
    pub fn scalar_int(device: &Device, value: i128, dtype: DType) -> Array {
        let (lo, hi) = dtype.words_of_int(value);
        Array::from_state(
            device,
            dtype,
            Vec::new(),
            1,
            Vec::new(),
            State::Lazy(Expr::Scalar(lo, hi)),
        )
    }

    /// A 0-d complex64 array holding `re + im·j`.
    pub fn complex_scalar(device: &Device, re: f64, im: f64) -> Array {
        Array::from_state(
            device,
            DType::Complex64,
            Vec::new(),
            1,
            Vec::new(),
            State::Lazy(Expr::Scalar((re as f32).to_bits(), (im as f32).to_bits())),
        )
    }
}
