//! `sort` and `argsort` along an axis, stable, on the device ([`crate::kernels::sort`]).
//! The axis is moved last and the rows made contiguous (a copy only when they are not);
//! floats sort with NaN last, as NumPy does.

use crate::array::array::{Array, Strided};
use crate::array::dtype::{DType, Kind};
use crate::array::eval::alloc_words;
use crate::array::layout::Layout;
use crate::error::Result;
use crate::exec::recorder::Recorder;
use crate::kernels::sort::{padded, record, KeyKind, SortBuffers};

impl Array {
    /// The values sorted along `axis` (ascending, or descending keeping equal values in
    /// their original order).
    pub fn sort(&self, axis: isize, descending: bool) -> Result<Array> {
        self.dtype().refuse_wide("sort")?;
        Ok(sort_along(self, axis, descending, true)?
            .0
            .expect("values were asked for"))
    }

    /// The positions (int32) that sort the values along `axis`, stable.
    pub fn argsort(&self, axis: isize, descending: bool) -> Result<Array> {
        self.dtype().refuse_wide("argsort")?;
        Ok(sort_along(self, axis, descending, false)?.1)
    }
}

fn sort_along(
    x: &Array,
    axis: isize,
    descending: bool,
    values: bool,
) -> Result<(Option<Array>, Array)> {
    let op = if values { "sort" } else { "argsort" };
    let (moved, axis, inverse) = x.axis_last(axis, op)?;
    let moved = moved.contiguous()?;
    let s = moved.strided()?;
    let len = x.shape()[axis];
    let rows = x.size().checked_div(len).unwrap_or(0);
    let pl = padded(len);
    let device = x.device().clone();
    // The source must start its buffer: the kernels read rows from word 0.
    let s = if s.layout.offset != 0 {
        moved.copy()?.strided()?
    } else {
        s
    };
    let kind = match x.dtype().kind() {
        Kind::Float | Kind::Complex => KeyKind::Float,
        Kind::Signed => KeyKind::Signed,
        Kind::Unsigned | Kind::Bool => KeyKind::Unsigned,
    };
    let keys = alloc_words(&device, rows * pl)?;
    let pos = alloc_words(&device, rows * pl)?;
    let out = if values {
        Some(alloc_words(&device, rows * len)?)
    } else {
        None
    };
    let mut rec = Recorder::new(&device);
    record(
        &mut rec,
        &SortBuffers {
            src: s.data.buffer(),
            keys: keys.buffer(),
            pos: pos.buffer(),
            out: out.as_ref().map(|o| o.buffer()),
        },
        kind,
        rows,
        len,
        descending,
    )?;
    rec.submit()?;
    let moved_shape = moved.shape().to_vec();
    // Row r's positions are words r·padded .. r·padded + len: a view, no copy.
    let positions = Array::from_strided(
        &device,
        DType::Int32,
        Strided {
            data: pos,
            layout: Layout {
                shape: vec![rows, len],
                strides: vec![pl as isize, 1],
                offset: 0,
            },
        },
    );
    let positions = positions
        .reshape(&moved_shape.iter().map(|&d| Some(d)).collect::<Vec<_>>())?
        .permute_dims(&inverse)?;
    let sorted = match out {
        Some(data) => Some(
            Array::from_strided(
                &device,
                x.dtype(),
                Strided {
                    data,
                    layout: Layout::contiguous(&moved_shape),
                },
            )
            .permute_dims(&inverse)?,
        ),
        None => None,
    };
    Ok((sorted, positions))
}
