//! Where an array's elements are in its buffer: shape, strides (in elements, negative for a
//! reversed view, 0 for a broadcast axis) and the offset of element 0. Views (slicing,
//! transposition, broadcasting, new and squeezed axes) are new layouts over the same buffer;
//! nothing here touches the device.

use crate::error::{Error, Result};

/// A strided view's geometry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    /// Extent of each axis.
    pub shape: Vec<usize>,
    /// Elements between neighbours along each axis.
    pub strides: Vec<isize>,
    /// Index of element (0, …, 0) in the buffer.
    pub offset: usize,
}

/// One entry of an index expression (`x[1, 2:8:2, None, ...]`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Index {
    /// One position (negative counts from the end); the axis goes.
    At(isize),
    /// Python's `start:stop:step`, each optional.
    Slice {
        /// First position, or the natural start for the step's direction.
        start: Option<isize>,
        /// One past the last, or the natural end.
        stop: Option<isize>,
        /// Distance between positions (not 0); 1 when omitted.
        step: Option<isize>,
    },
    /// `None`/`newaxis`: a new axis of extent 1.
    NewAxis,
    /// `...`: as many full slices as the other entries leave.
    Ellipsis,
}

/// The number of elements of `shape`.
pub fn numel(shape: &[usize]) -> usize {
    shape.iter().product()
}

/// Row-major strides of `shape`.
pub fn contiguous_strides(shape: &[usize]) -> Vec<isize> {
    let mut s = vec![0isize; shape.len()];
    let mut acc = 1isize;
    for (st, &d) in s.iter_mut().zip(shape).rev() {
        *st = acc;
        acc *= d.max(1) as isize;
    }
    s
}

/// The standard's broadcast of several shapes (right-aligned; extents equal or 1).
pub fn broadcast_shapes(op: &'static str, shapes: &[&[usize]]) -> Result<Vec<usize>> {
    let rank = shapes.iter().map(|s| s.len()).max().unwrap_or(0);
    let mut out = vec![1usize; rank];
    for s in shapes {
        let pad = rank - s.len();
        for (i, &d) in s.iter().enumerate() {
            let o = &mut out[pad + i];
            if *o == 1 {
                *o = d;
            } else if d != 1 && d != *o {
                return Err(Error::ShapeMismatch {
                    op,
                    expected:
                        "shapes that broadcast (each axis equal, or 1, counted from the last)"
                            .into(),
                    found: shapes
                        .iter()
                        .map(|s| format!("{s:?}"))
                        .collect::<Vec<_>>()
                        .join(" and "),
                });
            }
        }
    }
    Ok(out)
}

impl Layout {
    /// A row-major layout of `shape` from offset 0.
    pub fn contiguous(shape: &[usize]) -> Layout {
        Layout {
            shape: shape.to_vec(),
            strides: contiguous_strides(shape),
            offset: 0,
        }
    }

    /// Number of axes.
    pub fn ndim(&self) -> usize {
        self.shape.len()
    }

    /// Number of elements.
    pub fn numel(&self) -> usize {
        numel(&self.shape)
    }

    /// Whether the elements are in row-major order with no gaps (axes of extent 1 ignored).
    pub fn is_contiguous(&self) -> bool {
        if self.numel() == 0 {
            return true;
        }
        let want = contiguous_strides(&self.shape);
        self.shape
            .iter()
            .zip(self.strides.iter().zip(&want))
            .all(|(&d, (s, w))| d == 1 || s == w)
    }

    /// The smallest and largest buffer index the view touches (None when empty).
    pub fn span(&self) -> Option<(usize, usize)> {
        if self.numel() == 0 {
            return None;
        }
        let (mut lo, mut hi) = (self.offset as isize, self.offset as isize);
        for (&d, &s) in self.shape.iter().zip(&self.strides) {
            let far = s * (d as isize - 1);
            if far < 0 {
                lo += far;
            } else {
                hi += far;
            }
        }
        Some((lo as usize, hi as usize))
    }

    /// The view broadcast to `shape` (axes prepended, extents of 1 stretched with stride 0).
    pub fn broadcast_to(&self, shape: &[usize]) -> Result<Layout> {
        let bad = || Error::ShapeMismatch {
            op: "broadcast_to",
            expected: format!("a shape that {:?} broadcasts to", self.shape),
            found: format!("{shape:?}"),
        };
        if shape.len() < self.ndim() {
            return Err(bad());
        }
        let pad = shape.len() - self.ndim();
        let mut strides = vec![0isize; shape.len()];
        for i in 0..self.ndim() {
            let (d, t) = (self.shape[i], shape[pad + i]);
            strides[pad + i] = if d == t {
                self.strides[i]
            } else if d == 1 {
                0
            } else {
                return Err(bad());
            };
        }
        Ok(Layout {
            shape: shape.to_vec(),
            strides,
            offset: self.offset,
        })
    }

    /// The axes reordered: axis `i` of the result is axis `axes[i]` of this view.
    pub fn permute(&self, axes: &[usize]) -> Result<Layout> {
        let mut seen = vec![false; self.ndim()];
        let ok = axes.len() == self.ndim()
            && axes
                .iter()
                .all(|&a| a < seen.len() && !std::mem::replace(&mut seen[a], true));
        if !ok {
            return Err(Error::InvalidArgument {
                op: "permute_dims",
                name: "axes",
                expected: format!("a permutation of 0..{}", self.ndim()),
                found: format!("{axes:?}"),
            });
        }
        Ok(Layout {
            shape: axes.iter().map(|&a| self.shape[a]).collect(),
            strides: axes.iter().map(|&a| self.strides[a]).collect(),
            offset: self.offset,
        })
    }

    /// A view with a new axis of extent 1 at `axis` (in the result's numbering).
    pub fn expand_dims(&self, axis: usize) -> Result<Layout> {
        if axis > self.ndim() {
            return Err(Error::InvalidArgument {
                op: "expand_dims",
                name: "axis",
                expected: format!("an axis in 0..={}", self.ndim()),
                found: axis.to_string(),
            });
        }
        let mut l = self.clone();
        l.shape.insert(axis, 1);
        l.strides.insert(axis, 0);
        Ok(l)
    }

    /// A view without the given axes, each of extent 1.
    pub fn squeeze(&self, axes: &[usize]) -> Result<Layout> {
        for &a in axes {
            if a >= self.ndim() || self.shape[a] != 1 {
                return Err(Error::InvalidArgument {
                    op: "squeeze",
                    name: "axis",
                    expected: format!("axes of extent 1 of shape {:?}", self.shape),
                    found: format!("{axes:?}"),
                });
            }
        }
        let keep = |i: &usize| !axes.contains(i);
        Ok(Layout {
            shape: (0..self.ndim())
                .filter(keep)
                .map(|i| self.shape[i])
                .collect(),
            strides: (0..self.ndim())
                .filter(keep)
                .map(|i| self.strides[i])
                .collect(),
            offset: self.offset,
        })
    }

    /// The view under a new shape with the same elements, when that needs no copy (the view
    /// is contiguous); `None` otherwise (the caller copies first).
    pub fn reshape_view(&self, shape: &[usize]) -> Option<Layout> {
        if numel(shape) != self.numel() || !self.is_contiguous() {
            return None;
        }
        Some(Layout {
            shape: shape.to_vec(),
            strides: contiguous_strides(shape),
            offset: self.offset,
        })
    }

    /// The view an index expression selects (basic indexing: positions, slices, new axes and
    /// one ellipsis).
    pub fn index(&self, idx: &[Index]) -> Result<Layout> {
        let bad = |expected: String, found: String| Error::InvalidArgument {
            op: "__getitem__",
            name: "index",
            expected,
            found,
        };
        let ellipses = idx.iter().filter(|i| **i == Index::Ellipsis).count();
        if ellipses > 1 {
            return Err(bad("at most one ellipsis".into(), format!("{ellipses}")));
        }
        let consumed = idx
            .iter()
            .filter(|i| matches!(i, Index::At(_) | Index::Slice { .. }))
            .count();
        if consumed > self.ndim() {
            return Err(Error::IndexOutOfBounds {
                op: "__getitem__",
                expected: format!("at most {} indices for shape {:?}", self.ndim(), self.shape),
                found: format!("{consumed}"),
            });
        }
        let mut full: Vec<Index> = Vec::new();
        for &i in idx {
            if i == Index::Ellipsis {
                full.extend(std::iter::repeat_n(Index::full(), self.ndim() - consumed));
            } else {
                full.push(i);
            }
        }
        if ellipses == 0 {
            full.extend(std::iter::repeat_n(Index::full(), self.ndim() - consumed));
        }
        let mut out = Layout {
            shape: Vec::new(),
            strides: Vec::new(),
            offset: self.offset,
        };
        let mut axis = 0;
        let mut offset = self.offset as isize;
        for i in full {
            match i {
                Index::NewAxis => {
                    out.shape.push(1);
                    out.strides.push(0);
                }
                Index::At(p) => {
                    let d = self.shape[axis] as isize;
                    let q = if p < 0 { p + d } else { p };
                    if q < 0 || q >= d {
                        return Err(Error::IndexOutOfBounds {
                            op: "__getitem__",
                            expected: format!("an index in -{d}..{d} for axis {axis}"),
                            found: p.to_string(),
                        });
                    }
                    offset += q * self.strides[axis];
                    axis += 1;
                }
                Index::Slice { start, stop, step } => {
                    let step = step.unwrap_or(1);
                    if step == 0 {
                        return Err(bad("a slice step other than 0".into(), "0".into()));
                    }
                    let d = self.shape[axis] as isize;
                    let (first, n) = slice_range(start, stop, step, d);
                    if n > 0 {
                        offset += first * self.strides[axis];
                    }
                    out.shape.push(n as usize);
                    out.strides.push(self.strides[axis] * step);
                    axis += 1;
                }
                Index::Ellipsis => unreachable!("expanded above"),
            }
        }
        out.offset = offset.max(0) as usize;
        Ok(out)
    }
}

impl Index {
    /// `:`, the whole axis.
    pub fn full() -> Index {
        Index::Slice {
            start: None,
            stop: None,
            step: None,
        }
    }
}

/// Python's `slice.indices` and `range` length: the first position and the count.
fn slice_range(start: Option<isize>, stop: Option<isize>, step: isize, d: isize) -> (isize, isize) {
    let clamp = |v: isize, lo: isize, hi: isize| v.max(lo).min(hi);
    let norm = |v: isize| if v < 0 { v + d } else { v };
    let (lo, hi) = if step > 0 { (0, d) } else { (-1, d - 1) };
    let s = start.map_or(if step > 0 { lo } else { hi }, |v| clamp(norm(v), lo, hi));
    let e = stop.map_or(if step > 0 { hi } else { lo }, |v| clamp(norm(v), lo, hi));
    let n = if step > 0 {
        (e - s + step - 1).div_euclid(step).max(0)
    } else {
        (s - e + (-step) - 1).div_euclid(-step).max(0)
    };
    (s, n)
}

/// The view's axes merged where every operand steps through them as through one axis
/// (NumPy's iterator coalescing): fewer axes mean fewer divisions per element and fewer
/// distinct generated kernels. `layouts` all have `shape`; returns the merged shape and
/// each layout's merged strides.
pub fn coalesce(shape: &[usize], strides: &[Vec<isize>]) -> (Vec<usize>, Vec<Vec<isize>>) {
    let keep: Vec<usize> = (0..shape.len()).filter(|&i| shape[i] != 1).collect();
    let mut out_shape: Vec<usize> = Vec::new();
    let mut out_strides: Vec<Vec<isize>> = vec![Vec::new(); strides.len()];
    for &i in &keep {
        let mergeable = !out_shape.is_empty()
            && strides.iter().zip(&out_strides).all(|(s, o)| {
                let last = *o.last().unwrap_or(&0);
                last == s[i] * shape[i] as isize
            });
        if mergeable {
            let n = out_shape.len() - 1;
            out_shape[n] *= shape[i];
            for (s, o) in strides.iter().zip(out_strides.iter_mut()) {
                o[n] = s[i];
            }
        } else {
            out_shape.push(shape[i]);
            for (s, o) in strides.iter().zip(out_strides.iter_mut()) {
                o.push(s[i]);
            }
        }
    }
    (out_shape, out_strides)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(start: Option<isize>, stop: Option<isize>, step: Option<isize>) -> Index {
        Index::Slice { start, stop, step }
    }

    #[test]
    fn slices_match_python() {
        // range(10)[a:b:c] for a few cases, checked against Python by hand.
        type Case = ((Option<isize>, Option<isize>, isize), (isize, isize));
        let cases: [Case; 6] = [
            ((None, None, 1), (0, 10)),
            ((Some(2), Some(8), 2), (2, 3)),
            ((None, None, -1), (9, 10)),
            ((Some(-3), None, 1), (7, 3)),
            ((Some(8), Some(2), -3), (8, 2)),
            ((Some(20), None, 1), (10, 0)),
        ];
        for ((a, b, c), want) in cases {
            assert_eq!(slice_range(a, b, c, 10), want, "{a:?}:{b:?}:{c}");
        }
    }

    #[test]
    fn indexing_builds_views() {
        let l = Layout::contiguous(&[4, 5, 6]);
        let v = l
            .index(&[Index::At(1), s(None, None, Some(-2)), Index::NewAxis])
            .unwrap();
        assert_eq!(v.shape, vec![3, 1, 6]);
        assert_eq!(v.strides, vec![-12, 0, 1]);
        assert_eq!(v.offset, 30 + 24);
        let e = l.index(&[Index::Ellipsis, Index::At(-1)]).unwrap();
        assert_eq!((e.shape.clone(), e.offset), (vec![4, 5], 5));
        assert!(l.index(&[Index::At(4)]).is_err());
        assert!(l.index(&[Index::At(0); 4]).is_err());
    }

    #[test]
    fn broadcast_and_coalesce() {
        assert_eq!(
            broadcast_shapes("t", &[&[3, 1], &[4], &[2, 1, 1]]).unwrap(),
            vec![2, 3, 4]
        );
        assert!(broadcast_shapes("t", &[&[3], &[4]]).is_err());
        let b = Layout::contiguous(&[3, 1])
            .broadcast_to(&[2, 3, 4])
            .unwrap();
        assert_eq!(b.strides, vec![0, 1, 0]);
        let c = Layout::contiguous(&[2, 3, 4]);
        let (shape, st) = coalesce(&c.shape, &[c.strides.clone(), c.strides.clone()]);
        assert_eq!((shape, st[0].clone()), (vec![24], vec![1]));
        let t = c.permute(&[1, 0, 2]).unwrap();
        let (shape, _) = coalesce(&t.shape, std::slice::from_ref(&t.strides));
        assert_eq!(shape, vec![3, 2, 4]);
        assert!(!t.is_contiguous());
    }
}
