//! Advanced indexing (NumPy's): `x[idx]` and `x[idx] = v` where the index holds integer
//! arrays or boolean masks beside positions, slices, `None` and `...`.
//!
//! A boolean mask over k axes becomes its k coordinate arrays (`nonzero`, which reads the
//! count back: the result's shape depends on the data); a 0-d mask is a new axis of extent
//! 1 indexed by `[0]` (true) or by nothing (false), as in NumPy. The basic entries make a view
//! (each array entry kept as a full axis); the integer arrays broadcast together to a shape
//! B, which replaces the axes they index: in place when the advanced entries (arrays and,
//! beside them, plain positions) are adjacent in the index, in front otherwise (NumPy's
//! rule). The positions are gathered into one buffer, wrapped from the end and
//! bounds-checked by one kernel (a flag read back: out of range is an `IndexError` before
//! anything is read or written), then one kernel gathers (or scatters) through the view.
//!
//! Writes with repeated positions: every repeat writes, in parallel, and which value stays
//! is unspecified (NumPy leaves it unspecified too; on one device and adapter it repeats).

use std::fmt::Write as _;

use crate::array::array::{Array, Strided};
use crate::array::codegen::{coords, dot, moves, WG};
use crate::array::dtype::{DType, Kind};
use crate::array::eval::{alloc_words, launch, word, write_into};
use crate::array::layout::{broadcast_shapes, contiguous_strides, numel, Index, Layout};
use crate::error::{Error, Result};
use crate::tensor::Tensor;

/// One entry of an index that may hold arrays.
#[derive(Clone, Debug)]
pub enum Indexer {
    /// A position, slice, `None` or `...`.
    Basic(Index),
    /// An integer array (positions along one axis) or a boolean mask (over as many axes as
    /// it has).
    Array(Array),
}

impl From<Index> for Indexer {
    fn from(i: Index) -> Indexer {
        Indexer::Basic(i)
    }
}

/// An index entry once `...` and masks are expanded: each consumes at most one axis. An
/// advanced entry indexes an axis of `x`, or (a 0-d mask) a new axis of extent 1.
enum Entry {
    Basic(Index),
    Adv(Array, bool),
}

/// Where an advanced index reads or writes: the basic view, the result's shape and how its
/// axes step through the view, and the checked positions.
struct Resolved {
    view: Strided,
    out_shape: Vec<usize>,
    /// The view's stride along each output axis (0 on the broadcast index axes).
    xs: Vec<isize>,
    /// The position buffer's stride along each output axis (0 off the index axes).
    bs: Vec<isize>,
    /// The view's stride along each indexed axis.
    jstr: Vec<isize>,
    /// `k × nb` positions, wrapped and checked.
    iv: Tensor,
    nb: usize,
}

fn index_error(expected: String, found: String) -> Error {
    Error::IndexOutOfBounds {
        op: "__getitem__",
        expected,
        found,
    }
}

impl Array {
    /// `x[idx]` with NumPy's indexing: basic entries make a view; integer arrays and boolean
    /// masks make a copy (a mask reads its count back to the host).
    pub fn getitem(&self, idx: &[Indexer]) -> Result<Array> {
        let Some(basic) = all_basic(idx) else {
            let r = resolve(self, idx)?;
            let device = self.device().clone();
            let n = numel(&r.out_shape);
            let out = alloc_words(&device, n * self.dtype().words())?;
            if n > 0 {
                run(self, &r, None, &out)?;
            }
            return Ok(Array::from_strided(
                &device,
                self.dtype(),
                Strided {
                    data: out,
                    layout: Layout::contiguous(&r.out_shape),
                },
            ));
        };
        self.index(&basic)
    }

    /// `x[idx] = value` with NumPy's indexing: `value` (converted to this array's dtype)
    /// broadcasts to the shape `x[idx]` would have. With repeated positions, which of their
    /// values stays is unspecified, as in NumPy.
    pub fn setitem(&self, idx: &[Indexer], value: &Array) -> Result<()> {
        self.check_device(value, "__setitem__")?;
        let Some(basic) = all_basic(idx) else {
            let r = resolve(self, idx)?;
            let n = numel(&r.out_shape);
            let v = value.astype(self.dtype())?;
            // A value that is a view of the target's buffer is copied before the writes.
            let v = if v.strided()?.data.storage_id() == r.view.data.storage_id() {
                v.copy()?
            } else {
                v
            };
            let v = v
                .broadcast_to(&r.out_shape)
                .map_err(|_| Error::ShapeMismatch {
                    op: "__setitem__",
                    expected: format!("a value that broadcasts to {:?}", r.out_shape),
                    found: format!("{:?}", value.shape()),
                })?
                .strided()?;
            if n > 0 {
                run(self, &r, Some(&v), &r.view.data.clone())?;
            }
            return Ok(());
        };
        self.index(&basic)?.assign(value)
    }
}

fn all_basic(idx: &[Indexer]) -> Option<Vec<Index>> {
    idx.iter()
        .map(|i| match i {
            Indexer::Basic(b) => Some(*b),
            Indexer::Array(_) => None,
        })
        .collect()
}

/// Positions as int32 (uint32, int64 and uint64 beyond i32's range clamped, so they stay
/// out of range rather than wrap into it).
fn positions_i32(a: &Array) -> Result<Array> {
    match a.dtype() {
        DType::Int32 => Ok(a.clone()),
        DType::UInt32 | DType::UInt64 => a.minimum_scalar(i32::MAX as i64)?.astype(DType::Int32),
        DType::Int64 => a
            .maximum_scalar(i32::MIN as i64)?
            .minimum_scalar(i32::MAX as i64)?
            .astype(DType::Int32),
        _ => a.astype(DType::Int32),
    }
}

fn resolve(x: &Array, idx: &[Indexer]) -> Result<Resolved> {
    let nd = x.ndim();
    let mut consumed = 0;
    let mut ellipses = 0;
    for i in idx {
        match i {
            Indexer::Basic(Index::At(_) | Index::Slice { .. }) => consumed += 1,
            Indexer::Basic(Index::Ellipsis) => ellipses += 1,
            Indexer::Basic(Index::NewAxis) => {}
            Indexer::Array(a) => {
                x.check_device(a, "__getitem__")?;
                match a.dtype().kind() {
                    Kind::Bool => consumed += a.ndim(),
                    Kind::Signed | Kind::Unsigned => consumed += 1,
                    Kind::Float | Kind::Complex => {
                        return Err(Error::DType {
                            op: "__getitem__",
                            expected: "integer or boolean index arrays".into(),
                            found: a.dtype().name().into(),
                        })
                    }
                }
            }
        }
    }
    if ellipses > 1 {
        return Err(index_error(
            "at most one ellipsis".into(),
            ellipses.to_string(),
        ));
    }
    if consumed > nd {
        return Err(index_error(
            format!("at most {nd} indices for shape {:?}", x.shape()),
            consumed.to_string(),
        ));
    }
    // Expand `...` and the masks; each entry now consumes at most one axis.
    let mut full: Vec<Entry> = Vec::new();
    let mut ax = 0;
    for i in idx {
        match i {
            Indexer::Basic(Index::Ellipsis) => {
                for _ in 0..nd - consumed {
                    full.push(Entry::Basic(Index::full()));
                }
                ax += nd - consumed;
            }
            Indexer::Basic(b) => {
                full.push(Entry::Basic(*b));
                ax += (*b != Index::NewAxis) as usize;
            }
            Indexer::Array(a) if a.dtype() == DType::Bool && a.ndim() == 0 => {
                // NumPy's x[True] / x[False]: a new axis, indexed by [0] or by nothing.
                let count = (a.to_f64_vec()?[0] != 0.0) as usize;
                let zeros = Array::zeros(x.device(), &[count], DType::Int32)?;
                full.push(Entry::Adv(zeros, true));
            }
            Indexer::Array(a) if a.dtype() == DType::Bool => {
                let m = a.ndim();
                // NumPy lets a mask axis of length 0 stand against an axis of any length
                // (it selects nothing); every other length must match.
                let fits = a
                    .shape()
                    .iter()
                    .zip(&x.shape()[ax..ax + m])
                    .all(|(&k, &n)| k == n || k == 0);
                if !fits {
                    return Err(index_error(
                        format!(
                            "a boolean mask of shape {:?} (axes {ax}..{} of shape {:?})",
                            &x.shape()[ax..ax + m],
                            ax + m,
                            x.shape()
                        ),
                        format!("shape {:?}", a.shape()),
                    ));
                }
                for c in a.nonzero()? {
                    full.push(Entry::Adv(c, false));
                }
                ax += m;
            }
            Indexer::Array(a) => {
                full.push(Entry::Adv(a.clone(), false));
                ax += 1;
            }
        }
    }
    // The advanced entries (arrays, and positions beside them) adjacent or not.
    let adv_at: Vec<usize> = (0..full.len())
        .filter(|&p| matches!(full[p], Entry::Adv(..) | Entry::Basic(Index::At(_))))
        .collect();
    let (lo, hi) = (adv_at[0], adv_at[adv_at.len() - 1]);
    let adjacent = hi - lo + 1 == adv_at.len();
    // The basic view, and which of its axes the arrays index.
    let basic: Vec<Index> = full
        .iter()
        .map(|e| match e {
            Entry::Basic(b) => *b,
            Entry::Adv(_, true) => Index::NewAxis,
            Entry::Adv(_, false) => Index::full(),
        })
        .collect();
    let view = x.strided()?;
    let layout = view.layout.index(&basic)?;
    let mut vaxis = 0;
    let mut adv: Vec<(Array, usize)> = Vec::new();
    let mut insert_at = 0;
    for (p, e) in full.iter().enumerate() {
        if p == lo && adjacent {
            insert_at = vaxis;
        }
        match e {
            Entry::Basic(Index::At(_)) => {}
            Entry::Basic(_) => vaxis += 1,
            Entry::Adv(a, _) => {
                adv.push((a.clone(), vaxis));
                vaxis += 1;
            }
        }
    }
    if !adjacent {
        insert_at = 0;
    }
    let shapes: Vec<&[usize]> = adv.iter().map(|(a, _)| a.shape()).collect();
    let b = broadcast_shapes("__getitem__", &shapes).map_err(|_| {
        index_error(
            "index arrays that broadcast together".into(),
            format!("shapes {shapes:?}"),
        )
    })?;
    let bstr = contiguous_strides(&b);
    let others: Vec<usize> = (0..layout.ndim())
        .filter(|v| !adv.iter().any(|(_, a)| a == v))
        .collect();
    let (mut out_shape, mut xs, mut bs) = (Vec::new(), Vec::new(), Vec::new());
    for (t, &v) in others.iter().enumerate() {
        if t == insert_at {
            out_shape.extend_from_slice(&b);
            xs.extend(std::iter::repeat_n(0, b.len()));
            bs.extend_from_slice(&bstr);
        }
        out_shape.push(layout.shape[v]);
        xs.push(layout.strides[v]);
        bs.push(0);
    }
    if insert_at == others.len() {
        out_shape.extend_from_slice(&b);
        xs.extend(std::iter::repeat_n(0, b.len()));
        bs.extend_from_slice(&bstr);
    }
    let nb = numel(&b);
    let k = adv.len();
    let device = x.device().clone();
    let iv = alloc_words(&device, k * nb)?;
    let extents: Vec<usize> = adv.iter().map(|&(_, v)| layout.shape[v]).collect();
    if nb > 0 {
        for (j, (a, _)) in adv.iter().enumerate() {
            let target = Strided {
                data: iv.clone(),
                layout: Layout {
                    shape: b.clone(),
                    strides: bstr.clone(),
                    offset: j * nb,
                },
            };
            write_into(&positions_i32(a)?.broadcast_to(&b)?, &target)?;
        }
        check_positions(&device, &iv, nb, &extents)?;
    }
    Ok(Resolved {
        jstr: adv.iter().map(|&(_, v)| layout.strides[v]).collect(),
        view: Strided {
            data: view.data,
            layout,
        },
        out_shape,
        xs,
        bs,
        iv,
        nb,
    })
}

/// Wraps negative positions from the end in place and raises `IndexError` when any is out
/// of range (position j·nb + t is along an axis of extent `extents[j]`).
fn check_positions(
    device: &crate::runtime::Device,
    iv: &Tensor,
    nb: usize,
    extents: &[usize],
) -> Result<()> {
    let total = nb * extents.len();
    let mut meta = vec![total as u32, nb as u32];
    meta.extend(extents.iter().map(|&e| e as u32));
    let src = format!(
        "@group(0) @binding(0) var<storage, read_write> iv: array<u32>;
@group(0) @binding(1) var<storage, read_write> flag: array<atomic<u32>>;
@group(0) @binding(2) var<storage, read> prm: array<u32>;
@compute @workgroup_size({WG})
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {{
    let t = gid.x + gid.y * nwg.x * {WG}u;
    if (t >= prm[0]) {{ return; }}
    let e = i32(prm[2u + t / prm[1]]);
    var q = bitcast<i32>(iv[t]);
    if (q < 0) {{ q = q + e; }}
    if (q < 0 || q >= e) {{ atomicMax(&flag[0], 1u); return; }}
    iv[t] = bitcast<u32>(q);
}}
"
    );
    let flag = alloc_words(device, 1)?;
    device
        .wgpu_queue()
        .write_buffer(flag.buffer(), 0, bytemuck::bytes_of(&0u32));
    launch(
        device,
        "array_index_check",
        &src,
        &[],
        &[iv, &flag],
        &meta,
        total as u64,
    )?;
    if flag.to_vec()?[0].to_bits() != 0 {
        return Err(index_error(
            format!("positions in -e..e along indexed axes of extents {extents:?}"),
            "a position outside that range".into(),
        ));
    }
    Ok(())
}

/// Gathers `x[idx]` into `dst` (value `None`) or scatters `value` into the view (`dst` is
/// the target's buffer).
fn run(x: &Array, r: &Resolved, value: Option<&Strided>, dst: &Tensor) -> Result<()> {
    let rank = r.out_shape.len();
    let n = numel(&r.out_shape);
    let mut meta: Vec<u32> = vec![n as u32];
    meta.extend(r.out_shape.iter().map(|&d| d as u32));
    let xb = meta.len();
    meta.push(r.view.layout.offset as u32);
    meta.extend(r.xs.iter().map(|&s| word(s)));
    let bb = meta.len();
    meta.extend(r.bs.iter().map(|&s| word(s)));
    let vb = meta.len();
    if let Some(v) = value {
        meta.push(v.layout.offset as u32);
        meta.extend(v.layout.strides.iter().map(|&s| word(s)));
    }
    let kb = meta.len();
    meta.push(r.jstr.len() as u32);
    meta.push(r.nb as u32);
    meta.extend(r.jstr.iter().map(|&s| word(s)));
    let mut s = String::new();
    let (src, out) = if value.is_some() {
        ("vv", "xv")
    } else {
        ("xv", "out")
    };
    let _ = writeln!(
        s,
        "@group(0) @binding(0) var<storage, read> {src}: array<u32>;"
    );
    let _ = writeln!(
        s,
        "@group(0) @binding(1) var<storage, read> iv: array<u32>;"
    );
    let _ = writeln!(
        s,
        "@group(0) @binding(2) var<storage, read_write> {out}: array<u32>;"
    );
    let _ = writeln!(
        s,
        "@group(0) @binding(3) var<storage, read> prm: array<u32>;"
    );
    let _ = writeln!(
        s,
        "@compute @workgroup_size({WG})\nfn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {{"
    );
    let _ = writeln!(s, "    let i = gid.x + gid.y * nwg.x * {WG}u;");
    let _ = writeln!(s, "    if (i >= prm[0]) {{ return; }}");
    coords(&mut s, "i", "c", 1, rank);
    let _ = writeln!(s, "    var xo = i32(prm[{xb}u]){};", dot("c", xb + 1, rank));
    let _ = writeln!(s, "    let b = u32(0i{});", dot("c", bb, rank));
    let _ = writeln!(
        s,
        "    let nb = prm[{}u];\n    for (var j: u32 = 0u; j < prm[{kb}u]; j = j + 1u) {{",
        kb + 1
    );
    let _ = writeln!(
        s,
        "        xo = xo + bitcast<i32>(iv[j * nb + b]) * bitcast<i32>(prm[{}u + j]);\n    }}",
        kb + 2
    );
    // Every device word of an element moves (two for the 64-bit dtypes).
    let w = x.dtype().words();
    if value.is_some() {
        let _ = writeln!(
            s,
            "    let vo = u32(i32(prm[{vb}u]){});\n{}}}",
            dot("c", vb + 1, rank),
            moves(w, "xv", "u32(xo)", Some(("vv", "vo")))
        );
    } else {
        let _ = writeln!(s, "{}}}", moves(w, "out", "i", Some(("xv", "u32(xo)"))));
    }
    let read = match value {
        Some(v) => v.data.clone(),
        None => r.view.data.clone(),
    };
    let name = if value.is_some() {
        "array_scatter"
    } else {
        "array_gather_nd"
    };
    launch(
        x.device(),
        name,
        &s,
        &[read, r.iv.clone()],
        &[dst],
        &meta,
        n as u64,
    )
}
