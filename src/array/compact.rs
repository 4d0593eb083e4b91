//! Stream compaction: the positions of an array's nonzero elements (`nonzero`,
//! [`Array::flat_nonzero`]), built on the chunked `cumulative_sum`.
//!
//! The flags (`x != 0`, fused into the scan's loop) are scanned with an initial 0, so
//! `s[i]` is where element i's position goes and `s[n]` is how many there are. That count
//! decides the result's shape, so it is read back to the host (one word; CuPy's `nonzero`
//! waits for its count too). A second kernel then writes each flagged element's position to
//! `out[s[i]]`, reading only the scan: element i was flagged exactly when `s[i + 1] != s[i]`.
//! Positions come out in C order, as NumPy's `nonzero` gives them.

use crate::array::array::{Array, Strided};
use crate::array::codegen::WG;
use crate::array::dtype::DType;
use crate::array::eval::{alloc_words, launch};
use crate::array::layout::{Index, Layout};
use crate::error::{Error, Result};

/// The largest element count compaction handles: positions and counts are int32.
const MAX_ELEMENTS: usize = i32::MAX as usize - 1;

impl Array {
    /// The C-order flat positions (int32, 1-D) of the elements that are not zero (`True`
    /// for bool, NaN counts as nonzero as in NumPy, `-0.0` as zero). Reads the count back
    /// to the host: the result's length depends on the data.
    pub fn flat_nonzero(&self) -> Result<Array> {
        let n = self.size();
        if n > MAX_ELEMENTS {
            return Err(Error::InvalidArgument {
                op: "nonzero",
                name: "x",
                expected: format!("at most {MAX_ELEMENTS} elements"),
                found: n.to_string(),
            });
        }
        let device = self.device().clone();
        if n == 0 {
            return empty_positions(&device);
        }
        let flags = self.reshape(&[Some(n)])?.astype(DType::Bool)?;
        let scan = flags.cumulative_sum(0, true)?;
        // A one-word copy, so that only that word travels back.
        let count = scan.index(&[Index::At(n as isize)])?.copy()?.to_words()?[0] as usize;
        let s = scan.strided()?;
        let out = alloc_words(&device, count)?;
        if count > 0 {
            let src = format!(
                "@group(0) @binding(0) var<storage, read> s: array<u32>;
@group(0) @binding(1) var<storage, read_write> out: array<u32>;
@group(0) @binding(2) var<storage, read> prm: array<u32>;
@compute @workgroup_size({WG})
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {{
    let i = gid.x + gid.y * nwg.x * {WG}u;
    if (i >= prm[0]) {{ return; }}
    let at = s[prm[1] + i];
    if (s[prm[1] + i + 1u] != at) {{ out[at] = i; }}
}}
"
            );
            launch(
                &device,
                "array_compact",
                &src,
                &[s.data],
                &[&out],
                &[n as u32, s.layout.offset as u32],
                n as u64,
            )?;
        }
        Ok(Array::from_strided(
            &device,
            DType::Int32,
            Strided {
                data: out,
                layout: Layout::contiguous(&[count]),
            },
        ))
    }

    /// The indices of the nonzero elements, one int32 array per axis (the standard's
    /// `nonzero`), in C order. Reads the count back to the host (see [`Array::flat_nonzero`]).
    /// A 0-d array is refused, as the standard asks.
    pub fn nonzero(&self) -> Result<Vec<Array>> {
        if self.ndim() == 0 {
            return Err(Error::InvalidArgument {
                op: "nonzero",
                name: "x",
                expected: "an array of at least one axis (use atleast_1d)".into(),
                found: "a 0-d array".into(),
            });
        }
        let flat = self.flat_nonzero()?;
        unravel(&flat, self.shape())
    }
}

/// An empty int32 position array.
fn empty_positions(device: &crate::runtime::Device) -> Result<Array> {
    Ok(Array::from_strided(
        device,
        DType::Int32,
        Strided {
            data: alloc_words(device, 0)?,
            layout: Layout::contiguous(&[0]),
        },
    ))
}

/// Flat C-order positions into `shape` as one coordinate array per axis: `(p / stride) %
/// extent`, elementwise (positions are never negative).
pub(crate) fn unravel(flat: &Array, shape: &[usize]) -> Result<Vec<Array>> {
    flat.eval()?;
    let strides = Layout::contiguous(shape).strides;
    let mut out = Vec::with_capacity(shape.len());
    for (a, (&d, &st)) in shape.iter().zip(&strides).enumerate() {
        let mut c = flat.clone();
        if st != 1 {
            c = c.floor_divide_scalar(st as i64)?;
        }
        if a > 0 {
            c = c.remainder_scalar(d as i64)?;
        }
        c.eval()?;
        out.push(c);
    }
    Ok(out)
}
