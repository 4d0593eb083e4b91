//! Views (indexing, transposition, broadcasting, new and dropped axes, reshapes that need
//! no copy), copies, assignment through a view, and the bridge to the engine's [`Tensor`].

use crate::array::array::{Array, Strided};
use crate::array::dtype::DType;
use crate::array::eval::{materialize, write_into};
use crate::array::layout::{broadcast_shapes, numel, Index, Layout};
use crate::array::reduce::normalize_axes;
use crate::error::{Error, Result};
use crate::tensor::Tensor;

impl Array {
    /// A view of the same buffer with another layout (runs the expression first).
    fn view(&self, f: impl FnOnce(&Layout) -> Result<Layout>) -> Result<Array> {
        let s = self.strided()?;
        let layout = f(&s.layout)?;
        Ok(Array::from_strided(
            self.device(),
            self.dtype(),
            Strided {
                data: s.data,
                layout,
            },
        ))
    }

    /// Basic indexing (`x[1, ::2, None, ...]`): a view, no copy.
    pub fn index(&self, idx: &[Index]) -> Result<Array> {
        self.view(|l| l.index(idx))
    }

    /// The axes reordered (`permute_dims`): a view.
    pub fn permute_dims(&self, axes: &[usize]) -> Result<Array> {
        self.view(|l| l.permute(axes))
    }

    /// The last two axes swapped (`matrix_transpose`, `.mT`); for 2-D arrays `.T`.
    pub fn matrix_transpose(&self) -> Result<Array> {
        let n = self.ndim();
        if n < 2 {
            return Err(Error::InvalidArgument {
                op: "matrix_transpose",
                name: "x",
                expected: "an array of at least 2 axes".into(),
                found: format!("shape {:?}", self.shape()),
            });
        }
        let mut axes: Vec<usize> = (0..n).collect();
        axes.swap(n - 2, n - 1);
        self.permute_dims(&axes)
    }

    /// The array broadcast to `shape`: a view with stride 0 along stretched axes.
    pub fn broadcast_to(&self, shape: &[usize]) -> Result<Array> {
        self.view(|l| l.broadcast_to(shape))
    }

    /// A view with a new axis of extent 1.
    pub fn expand_dims(&self, axis: usize) -> Result<Array> {
        self.view(|l| l.expand_dims(axis))
    }

    /// A view without the given axes of extent 1.
    pub fn squeeze(&self, axes: &[usize]) -> Result<Array> {
        self.view(|l| l.squeeze(axes))
    }

    /// The same elements under another shape: a view when the array is contiguous, a copy
    /// otherwise. One extent may be `None` (NumPy's -1), inferred from the others.
    pub fn reshape(&self, shape: &[Option<usize>]) -> Result<Array> {
        let known: usize = shape.iter().flatten().product();
        let holes = shape.iter().filter(|d| d.is_none()).count();
        let bad = || Error::ShapeMismatch {
            op: "reshape",
            expected: format!(
                "a shape of {} elements (from {:?})",
                self.size(),
                self.shape()
            ),
            found: format!("{:?}", shape),
        };
        let full: Vec<usize> = match holes {
            0 => shape.iter().map(|d| d.unwrap_or(0)).collect(),
            1 if known > 0 && self.size().is_multiple_of(known) => shape
                .iter()
                .map(|d| d.unwrap_or(self.size() / known))
                .collect(),
            _ => return Err(bad()),
        };
        if numel(&full) != self.size() {
            return Err(bad());
        }
        let s = self.strided()?;
        if let Some(layout) = s.layout.reshape_view(&full) {
            return Ok(Array::from_strided(
                self.device(),
                self.dtype(),
                Strided {
                    data: s.data,
                    layout,
                },
            ));
        }
        let c = self.contiguous()?;
        c.view(|l| Ok(l.reshape_view(&full).expect("a contiguous copy reshapes")))
    }

    /// A contiguous copy when the array is not contiguous; itself when it is.
    pub fn contiguous(&self) -> Result<Array> {
        let s = self.strided()?;
        if s.layout.is_contiguous() {
            return Ok(self.clone());
        }
        self.copy()
    }

    /// A new array with the same values in a new contiguous buffer.
    pub fn copy(&self) -> Result<Array> {
        let s = materialize(self, true)?;
        Ok(Array::from_strided(self.device(), self.dtype(), s))
    }

    /// Writes `value` (broadcast to this array's shape) into this array's elements, in
    /// place: `x[...] = value` on a view writes through to the viewed array.
    pub fn assign(&self, value: &Array) -> Result<()> {
        self.check_device(value, "__setitem__")?;
        let target = self.strided()?;
        broadcast_shapes("__setitem__", &[self.shape(), value.shape()]).and_then(|s| {
            if s == self.shape() {
                Ok(())
            } else {
                Err(Error::ShapeMismatch {
                    op: "__setitem__",
                    expected: format!("a value that broadcasts to {:?}", self.shape()),
                    found: format!("{:?}", value.shape()),
                })
            }
        })?;
        let value = value.astype(self.dtype())?;
        write_into(&value, &target)
    }

    /// Wraps an f32 [`Tensor`] as an array, sharing its buffer (no copy).
    pub fn from_tensor(t: &Tensor) -> Result<Array> {
        let flat = t.reshape(&[t.numel()])?;
        Ok(Array::from_strided(
            t.device(),
            DType::Float32,
            Strided {
                data: flat,
                layout: Layout::contiguous(t.shape()),
            },
        ))
    }

    /// The array's device words as a flat tensor sharing its buffer, for kernels of the
    /// user's own that read and write words of any dtype (`RawKernel` over arrays; complex64
    /// as interleaved real and imaginary words): the expression is run first. `None` when the array is a view that does not cover its
    /// buffer exactly, from its start, in C order (a write through a copy would be lost).
    pub fn device_words(&self) -> Result<Option<Tensor>> {
        let s = self.strided()?;
        let whole = s.layout.offset == 0
            && s.layout.is_contiguous()
            && s.data.numel() == (self.size() * self.dtype().words()).max(1);
        Ok(whole.then_some(s.data))
    }

    /// This array with `axis` moved last (a view) for kernels that work along the last
    /// axis (sort, FFT): the view, the axis normalized, and the permutation that puts the
    /// axes back. A 0-d array has no axis to move.
    pub(crate) fn axis_last(
        &self,
        axis: isize,
        op: &'static str,
    ) -> Result<(Array, usize, Vec<usize>)> {
        if self.ndim() == 0 {
            return Err(Error::InvalidArgument {
                op,
                name: "x",
                expected: "an array of at least one axis".into(),
                found: "a 0-d array".into(),
            });
        }
        let nd = self.ndim();
        let axis = normalize_axes(op, nd, Some(&[axis]))?[0];
        let mut perm: Vec<usize> = (0..nd).filter(|&a| a != axis).collect();
        perm.push(axis);
        let mut inverse = vec![0; nd];
        for (i, &a) in perm.iter().enumerate() {
            inverse[a] = i;
        }
        Ok((self.permute_dims(&perm)?, axis, inverse))
    }

    /// The array as an f32 [`Tensor`] for the training engine and the `ops` functions:
    /// shares the buffer when the array is float32, contiguous and starts its buffer;
    /// a copy otherwise.
    pub fn to_tensor(&self) -> Result<Tensor> {
        let a = self.astype(DType::Float32)?.contiguous()?;
        let s = a.strided()?;
        if s.layout.offset == 0 && s.data.numel() == a.size() {
            return s.data.reshape(a.shape());
        }
        let c = a.copy()?.strided()?;
        c.data.reshape(a.shape())
    }
}
