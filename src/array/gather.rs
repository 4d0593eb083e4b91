//! Reading by index: `take` (positions along an axis from an integer array), `take_along_axis`
//! (a position per element, as `argsort`'s output), and `searchsorted` (where values would
//! go in a sorted array). Each is one generated kernel; positions out of range are caught on
//! the device (an atomic flag read back after the kernel) and reported as
//! [`Error::IndexOutOfBounds`], never read as another element.

use std::fmt::Write as _;

use crate::array::array::{Array, Strided};
use crate::array::codegen::{coords, dot, moves, WG};
use crate::array::dtype::{promote, DType, Kind};
use crate::array::eval::{alloc_words, launch, word};
use crate::array::layout::{broadcast_shapes, numel, Layout};
use crate::array::reduce::normalize_axes;
use crate::array::sort::{two_word_key, wide_key_wgsl};
use crate::error::{Error, Result};

/// WGSL reading an index word of `d` as i32.
fn index_load(d: DType, w: &str) -> String {
    match d.kind() {
        Kind::Signed => format!("bitcast<i32>({w})"),
        _ => format!("i32(min({w}, 0x7fffffffu))"),
    }
}

fn check_index_dtype(op: &'static str, d: DType) -> Result<()> {
    if d.is_integer() {
        Ok(())
    } else {
        Err(Error::DType {
            op,
            expected: "an integer index array".into(),
            found: d.name().into(),
        })
    }
}

/// One-word positions: an int64/uint64 index array (two words an element, which the kernels
/// read one word at a time) clamped to int32's range, so that positions past it stay out of
/// range rather than wrap into it; other index arrays as they are.
fn index_words(indices: &Array) -> Result<Array> {
    match indices.dtype() {
        DType::Int64 => indices
            .maximum_scalar(i32::MIN as i64)?
            .minimum_scalar(i32::MAX as i64)?
            .astype(DType::Int32),
        DType::UInt64 => indices
            .minimum_scalar(i32::MAX as i64)?
            .astype(DType::Int32),
        _ => Ok(indices.clone()),
    }
}

/// out[c] = x[x_off + Σ c·XS + q·xs_axis] with q = idx[i_off + Σ c·IS] (negative counts from
/// the end), over the output shape; XS and IS are x's and the index's strides mapped onto
/// the output's axes (0 where an axis is not theirs). Every device word of an element moves
/// (`words()` of them: two for complex64, float64 and any other 64-bit dtype).
fn gather(
    op: &'static str,
    x: &Array,
    idx: &Array,
    out_shape: &[usize],
    xs: &[isize],
    is: &[isize],
    axis: usize,
) -> Result<Array> {
    let device = x.device().clone();
    let n = numel(out_shape);
    let w = x.dtype().words();
    let out = alloc_words(&device, n * w)?;
    if n > 0 {
        let sx = x.strided()?;
        let si = idx.strided()?;
        let r = out_shape.len();
        let mut meta: Vec<u32> = vec![n as u32];
        meta.extend(out_shape.iter().map(|&d| d as u32));
        let xb = meta.len();
        meta.push(sx.layout.offset as u32);
        meta.extend(xs.iter().map(|&s| word(s)));
        let ib = meta.len();
        meta.push(si.layout.offset as u32);
        meta.extend(is.iter().map(|&s| word(s)));
        let tail = meta.len();
        meta.push(word(sx.layout.strides[axis]));
        meta.push(x.shape()[axis] as u32);
        let mut s = String::new();
        let _ = writeln!(
            s,
            "@group(0) @binding(0) var<storage, read> xv: array<u32>;"
        );
        let _ = writeln!(
            s,
            "@group(0) @binding(1) var<storage, read> iv: array<u32>;"
        );
        let _ = writeln!(
            s,
            "@group(0) @binding(2) var<storage, read_write> out: array<u32>;"
        );
        let _ = writeln!(
            s,
            "@group(0) @binding(3) var<storage, read_write> flag: array<atomic<u32>>;"
        );
        let _ = writeln!(
            s,
            "@group(0) @binding(4) var<storage, read> prm: array<u32>;"
        );
        let _ = writeln!(
            s,
            "@compute @workgroup_size({WG})\nfn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {{"
        );
        let _ = writeln!(s, "    let i = gid.x + gid.y * nwg.x * {WG}u;");
        let _ = writeln!(s, "    if (i >= prm[0]) {{ return; }}");
        coords(&mut s, "i", "c", 1, r);
        let _ = writeln!(
            s,
            "    let io = u32(i32(prm[{ib}u]){});",
            dot("c", ib + 1, r)
        );
        let _ = writeln!(s, "    var q = {};", index_load(idx.dtype(), "iv[io]"));
        let _ = writeln!(s, "    let extent = i32(prm[{}u]);", tail + 1);
        let _ = writeln!(s, "    if (q < 0) {{ q = q + extent; }}");
        let _ = writeln!(
            s,
            "    if (q < 0 || q >= extent) {{\n        atomicMax(&flag[0], 1u);\n{}        return;\n    }}",
            moves(w, "out", "i", None)
        );
        let _ = writeln!(
            s,
            "    let xo = u32(i32(prm[{xb}u]){} + q * bitcast<i32>(prm[{tail}u]));",
            dot("c", xb + 1, r)
        );
        let _ = writeln!(s, "{}}}", moves(w, "out", "i", Some(("xv", "xo"))));
        let flag = alloc_words(&device, 1)?;
        device
            .wgpu_queue()
            .write_buffer(flag.buffer(), 0, bytemuck::bytes_of(&0u32));
        launch(
            &device,
            "array_gather",
            &s,
            &[sx.data.clone(), si.data.clone()],
            &[&out, &flag],
            &meta,
            n as u64,
        )?;
        let f = flag.to_vec()?;
        if f[0].to_bits() != 0 {
            return Err(Error::IndexOutOfBounds {
                op,
                expected: format!(
                    "positions in -{e}..{e} along axis {axis} of shape {:?}",
                    x.shape(),
                    e = x.shape()[axis]
                ),
                found: "a position outside that range".into(),
            });
        }
    }
    Ok(Array::from_strided(
        &device,
        x.dtype(),
        Strided {
            data: out,
            layout: Layout::contiguous(out_shape),
        },
    ))
}

impl Array {
    /// The elements at `indices` along `axis` (NumPy's `take`, the standard's for any
    /// index shape): the result's shape is this array's with `axis` replaced by the
    /// indices' shape. Negative positions count from the end.
    pub fn take(&self, indices: &Array, axis: isize) -> Result<Array> {
        self.check_device(indices, "take")?;
        check_index_dtype("take", indices.dtype())?;
        let indices = &index_words(indices)?;
        if self.ndim() == 0 {
            return Err(Error::InvalidArgument {
                op: "take",
                name: "x",
                expected: "an array of at least one axis".into(),
                found: "a 0-d array".into(),
            });
        }
        let axis = normalize_axes("take", self.ndim(), Some(&[axis]))?[0];
        let xl = self.strided()?.layout;
        let il = indices.strided()?.layout;
        let mut shape: Vec<usize> = self.shape()[..axis].to_vec();
        shape.extend_from_slice(indices.shape());
        shape.extend_from_slice(&self.shape()[axis + 1..]);
        let (pre, mid) = (axis, indices.ndim());
        let mut xs: Vec<isize> = xl.strides[..axis].to_vec();
        xs.extend(std::iter::repeat_n(0, mid));
        xs.extend_from_slice(&xl.strides[axis + 1..]);
        let mut is: Vec<isize> = vec![0; pre];
        is.extend_from_slice(&il.strides);
        is.extend(std::iter::repeat_n(0, self.ndim() - axis - 1));
        if self.shape()[axis] == 0 && indices.size() > 0 {
            return Err(Error::IndexOutOfBounds {
                op: "take",
                expected: format!("no positions along axis {axis}, of extent 0"),
                found: format!("{} positions", indices.size()),
            });
        }
        gather("take", self, indices, &shape, &xs, &is, axis)
    }

    /// The element at `indices[c]` along `axis` for each position c (NumPy's
    /// `take_along_axis`): `indices` has this array's number of axes and broadcasts with it
    /// on the others; `x.take_along_axis(&x.argsort(a)?, a)` is `x.sort(a)`.
    pub fn take_along_axis(&self, indices: &Array, axis: isize) -> Result<Array> {
        self.check_device(indices, "take_along_axis")?;
        check_index_dtype("take_along_axis", indices.dtype())?;
        let indices = &index_words(indices)?;
        if indices.ndim() != self.ndim() || self.ndim() == 0 {
            return Err(Error::ShapeMismatch {
                op: "take_along_axis",
                expected: format!("indices with the array's {} axes", self.ndim()),
                found: format!("shape {:?}", indices.shape()),
            });
        }
        let axis = normalize_axes("take_along_axis", self.ndim(), Some(&[axis]))?[0];
        let mut xshape = self.shape().to_vec();
        xshape[axis] = 1;
        let shape = broadcast_shapes("take_along_axis", &[&xshape, indices.shape()])?;
        let mut xb = shape.clone();
        xb[axis] = self.shape()[axis];
        let xl = self.strided()?.layout.broadcast_to(&xb)?;
        let il = indices.strided()?.layout.broadcast_to(&shape)?;
        let mut xs = xl.strides.clone();
        xs[axis] = 0;
        if self.shape()[axis] == 0 && numel(&shape) > 0 {
            return Err(Error::IndexOutOfBounds {
                op: "take_along_axis",
                expected: format!("no positions along axis {axis}, of extent 0"),
                found: format!("{} positions", indices.size()),
            });
        }
        gather(
            "take_along_axis",
            self,
            indices,
            &shape,
            &xs,
            &il.strides,
            axis,
        )
    }

    /// Where each of `values` would be inserted in this sorted 1-D array to keep it sorted
    /// (NumPy's `searchsorted`): the first such position (`right` false) or the last.
    /// Values order as `sort` orders them (NaN last).
    pub fn searchsorted(&self, values: &Array, right: bool) -> Result<Array> {
        self.check_device(values, "searchsorted")?;
        if self.ndim() != 1 {
            return Err(Error::InvalidArgument {
                op: "searchsorted",
                name: "x1",
                expected: "a 1-D sorted array".into(),
                found: format!("shape {:?}", self.shape()),
            });
        }
        let d = promote(self.dtype(), values.dtype())?;
        if !two_word_key(d) {
            d.refuse_wide("searchsorted")?;
        }
        let a = self.astype(d)?.copy()?.strided()?;
        let v = values.astype(d)?.copy()?.strided()?;
        let device = self.device().clone();
        let n = values.size();
        let out = alloc_words(&device, n)?;
        let key = match d.kind() {
            Kind::Float => "if ((w & 0x7fffffffu) > 0x7f800000u) { return 0xffffffffu; } var u = w; if (u == 0x80000000u) { u = 0u; } if ((u >> 31u) == 1u) { return ~u; } return u | 0x80000000u;",
            Kind::Signed => "return w ^ 0x80000000u;",
            _ => "return w;",
        };
        let cmp = if right { "<=" } else { "<" };
        // float64, int64, uint64: the key is (high, low) words as the sort makes them
        // (`wide_key_wgsl`), compared high first (`key` of element k reads words 2k, 2k + 1).
        let (key_fn, kx, kv, before) = if two_word_key(d) {
            (
                format!(
                    "fn key(l0: u32, h0: u32) -> vec2<u32> {{ var l = l0; var h = h0; {} return vec2<u32>(h, l); }}",
                    wide_key_wgsl(d)
                ),
                "key(xs[2u * mid], xs[2u * mid + 1u])",
                "key(vs[2u * i], vs[2u * i + 1u])",
                format!("fn before(a: vec2<u32>, b: vec2<u32>) -> bool {{ return a.x < b.x || (a.x == b.x && a.y {cmp} b.y); }}"),
            )
        } else {
            (
                format!("fn key(w: u32) -> u32 {{ {key} }}"),
                "key(xs[mid])",
                "key(vs[i])",
                format!("fn before(a: u32, b: u32) -> bool {{ return a {cmp} b; }}"),
            )
        };
        let src = format!(
            "@group(0) @binding(0) var<storage, read> xs: array<u32>;
@group(0) @binding(1) var<storage, read> vs: array<u32>;
@group(0) @binding(2) var<storage, read_write> out: array<u32>;
@group(0) @binding(3) var<storage, read> prm: array<u32>;
{key_fn}
{before}
@compute @workgroup_size({WG})
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {{
    let i = gid.x + gid.y * nwg.x * {WG}u;
    if (i >= prm[0]) {{ return; }}
    let k = {kv};
    var lo = 0u;
    var hi = prm[1];
    loop {{
        if (lo >= hi) {{ break; }}
        let mid = lo + (hi - lo) / 2u;
        if (before({kx}, k)) {{ lo = mid + 1u; }} else {{ hi = mid; }}
    }}
    out[i] = lo;
}}
"
        );
        launch(
            &device,
            "array_searchsorted",
            &src,
            &[a.data, v.data],
            &[&out],
            &[n as u32, self.size() as u32],
            n as u64,
        )?;
        Ok(Array::from_strided(
            &device,
            DType::Int32,
            Strided {
                data: out,
                layout: Layout::contiguous(values.shape()),
            },
        ))
    }
}
