//! `sort` and `argsort` along an axis, stable, on the device ([`crate::kernels::sort`]).
//! The axis is moved last and the rows made contiguous (a copy only when they are not);
//! floats sort with NaN last, as NumPy does.

use crate::array::array::{Array, Strided};
use crate::array::codegen::WG;
use crate::array::dtype::{DType, Kind};
use crate::array::eval::{alloc_words, launch};
use crate::array::layout::Layout;
use crate::error::Result;
use crate::exec::recorder::Recorder;
use crate::kernels::sort::{padded, record, KeyKind, SortBuffers};

impl Array {
    /// The values sorted along `axis` (ascending, or descending keeping equal values in
    /// their original order).
    pub fn sort(&self, axis: isize, descending: bool) -> Result<Array> {
        if two_word_key(self.dtype()) {
            let p = argsort_two_words(self, axis, descending)?;
            return self.take_along_axis(&p, axis);
        }
        self.dtype().refuse_wide("sort")?;
        Ok(sort_along(self, axis, descending, true)?
            .0
            .expect("values were asked for"))
    }

    /// The positions (int32) that sort the values along `axis`, stable.
    pub fn argsort(&self, axis: isize, descending: bool) -> Result<Array> {
        if two_word_key(self.dtype()) {
            return argsort_two_words(self, axis, descending);
        }
        self.dtype().refuse_wide("argsort")?;
        Ok(sort_along(self, axis, descending, false)?.1)
    }
}

/// Whether `d` sorts by a two-word key ([`wide_keys`]): float64, int64, uint64 and
/// complex64.
pub(crate) fn two_word_key(d: DType) -> bool {
    d.words() == 2
}

/// WGSL turning an element's words `l` (low) and `h` (high) in place into its 64-bit order key
/// (unsigned, compared high word first): float64's bits made monotone as for float32
/// (negative values inverted, positive ones with the sign bit set, -0 as +0, every NaN the
/// largest key, so NaN sorts last as in NumPy); int64 with the sign bit flipped; uint64 as
/// it is. `searchsorted` uses the same keys.
pub(crate) fn wide_key_wgsl(d: DType) -> &'static str {
    match d {
        DType::Float64 => {
            "let m = h & 0x7fffffffu;
    if (m > 0x7ff00000u || (m == 0x7ff00000u && l != 0u)) {
        h = 0xffffffffu;
        l = 0xffffffffu;
    } else {
        if (m == 0u && l == 0u) { h = 0u; }
        if ((h >> 31u) == 1u) { h = ~h; l = ~l; } else { h = h | 0x80000000u; }
    }"
        }
        DType::Int64 => "h = h ^ 0x80000000u;",
        // NumPy's order: values with neither part NaN by real part, then imaginary (the real
        // part's float32 key in the high word, the imaginary part's in the low one; -0 as
        // +0), then R+nanj by the real part, nan+Rj by the imaginary part, then nan+nanj.
        // The three NaN classes take high words above every number's key (+inf's is
        // 0xff800000).
        DType::Complex64 => {
            "let r0 = select(l, 0u, l == 0x80000000u);
    let i0 = select(h, 0u, h == 0x80000000u);
    let rn = (r0 & 0x7fffffffu) > 0x7f800000u;
    let inan = (i0 & 0x7fffffffu) > 0x7f800000u;
    let rk = select(r0 | 0x80000000u, ~r0, (r0 >> 31u) == 1u);
    let ik = select(i0 | 0x80000000u, ~i0, (i0 >> 31u) == 1u);
    h = select(select(select(rk, 0xff800001u, inan), 0xff800002u, rn), 0xff800003u, rn && inan);
    l = select(select(select(ik, rk, inan), ik, rn), 0u, rn && inan);"
        }
        _ => "",
    }
}

/// The 64-bit order keys of a two-word array as two uint32 arrays (high, low).
fn wide_keys(x: &Array) -> Result<(Array, Array)> {
    let c = x.copy()?;
    let s = c.strided()?;
    let n = x.size();
    let device = x.device().clone();
    let hi = alloc_words(&device, n)?;
    let lo = alloc_words(&device, n)?;
    let key = wide_key_wgsl(x.dtype());
    let src = format!(
        "@group(0) @binding(0) var<storage, read> xs: array<u32>;
@group(0) @binding(1) var<storage, read_write> kh: array<u32>;
@group(0) @binding(2) var<storage, read_write> kl: array<u32>;
@group(0) @binding(3) var<storage, read> prm: array<u32>;
@compute @workgroup_size({WG})
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {{
    let i = gid.x + gid.y * nwg.x * {WG}u;
    if (i >= prm[0]) {{ return; }}
    let o = prm[1] + i;
    var l = xs[2u * o];
    var h = xs[2u * o + 1u];
    {key}
    kh[i] = h;
    kl[i] = l;
}}
"
    );
    launch(
        &device,
        "array_sort_keys64",
        &src,
        std::slice::from_ref(&s.data),
        &[&hi, &lo],
        &[n as u32, s.layout.offset as u32],
        n as u64,
    )?;
    let key = |t| {
        Array::from_strided(
            &device,
            DType::UInt32,
            Strided {
                data: t,
                layout: Layout::contiguous(x.shape()),
            },
        )
    };
    Ok((key(hi), key(lo)))
}

/// A stable argsort on two-word keys as two stable 32-bit passes (least significant digit
/// first): by the low word, then by the high word in that order; equal keys keep their
/// original order, ascending and descending alike.
fn argsort_two_words(x: &Array, axis: isize, descending: bool) -> Result<Array> {
    let (hi, lo) = wide_keys(x)?;
    let p1 = sort_along(&lo, axis, descending, false)?.1;
    let h1 = hi.take_along_axis(&p1, axis)?;
    let p2 = sort_along(&h1, axis, descending, false)?.1;
    p1.take_along_axis(&p2, axis)
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
