//! Cumulative sums and products along an axis (`cumulative_sum`, `cumulative_prod`), with
//! the operand's expression fused into the scan's loop as reductions fuse theirs.
//!
//! A line is cut into chunks of `CHUNK` elements. Lines of one chunk are scanned in order by
//! one invocation each. Longer lines take three passes: each chunk's total, the exclusive
//! running total of the chunks (in order, per line), and each chunk's scan from its start.
//! Float sums are compensated within a chunk, as `sum`'s are. Every order is fixed by the
//! shape, so results repeat bit for bit. float64, int64 and uint64 accumulate in themselves
//! (two words per running total between the passes). The chunking also keeps each invocation's loop
//! short: llvmpipe stops an invocation's loops after 65,535 iterations in all and carries on
//! with what it has (a line of 100,000 came back zero past that point before this).

use std::fmt::Write as _;

use crate::array::array::{Array, Strided};
use crate::array::codegen::{
    compensated_add, compensated_add_f64, coords, dot, join64, store64, Plan, WG,
};
use crate::array::complex_fold;
use crate::array::dtype::{DType, Kind};
use crate::array::eval::{alloc_words, launch, word};
use crate::array::layout::{coalesce, numel, Layout};
use crate::array::ops::convert;
use crate::array::reduce::normalize_axes;
use crate::error::{Error, Result};
use crate::tensor::Tensor;

/// Elements one invocation scans.
const CHUNK: usize = 1024;

impl Array {
    /// Running sums along `axis` (the standard's `cumulative_sum`; integers accumulate in
    /// int32/uint32 as `sum` does). With `include_initial` the result starts with 0 and has
    /// one more element along the axis.
    pub fn cumulative_sum(&self, axis: isize, include_initial: bool) -> Result<Array> {
        scan(self, axis, include_initial, false)
    }

    /// Running products along `axis` (starting with 1 when `include_initial`).
    pub fn cumulative_prod(&self, axis: isize, include_initial: bool) -> Result<Array> {
        scan(self, axis, include_initial, true)
    }
}

fn scan(x: &Array, axis: isize, include_initial: bool, product: bool) -> Result<Array> {
    let op = if product {
        "cumulative_prod"
    } else {
        "cumulative_sum"
    };
    if x.dtype() == DType::Float16 && x.ndim() > 0 {
        // Accumulated in float32, each output rounded once to float16.
        return scan(&x.astype(DType::Float32)?, axis, include_initial, product)?
            .astype(DType::Float16);
    }
    if x.ndim() == 0 {
        return Err(Error::InvalidArgument {
            op,
            name: "x",
            expected: "an array of at least one axis".into(),
            found: "a 0-d array".into(),
        });
    }
    let axis = normalize_axes(op, x.ndim(), Some(&[axis]))?[0];
    if x.dtype().is_complex() {
        return complex_fold::cumulative(x, axis, include_initial, product);
    }
    let acc = match x.dtype() {
        DType::Int64 | DType::UInt64 => x.dtype(),
        d => match d.kind() {
            Kind::Bool | Kind::Signed => DType::Int32,
            Kind::Unsigned => DType::UInt32,
            Kind::Float | Kind::Complex => d,
        },
    };
    let words = acc.words();
    let shape = x.shape().to_vec();
    let mut out_shape = shape.clone();
    out_shape[axis] += include_initial as usize;
    let device = x.device().clone();
    let out = alloc_words(&device, numel(&out_shape) * words)?;
    let len = shape[axis];
    let kept: Vec<usize> = (0..shape.len()).filter(|&a| a != axis).collect();
    let kshape: Vec<usize> = kept.iter().map(|&a| shape[a]).collect();
    let lines = numel(&kshape);
    if lines > 0 && numel(&out_shape) > 0 {
        let chunks = len.div_ceil(CHUNK).max(1);
        if chunks > 65_535 {
            return Err(Error::InvalidArgument {
                op,
                name: "x",
                expected: format!("at most {} elements along the axis", 65_535 * CHUNK),
                found: len.to_string(),
            });
        }
        let kernel = |mode: Mode| -> Result<(String, Vec<u32>, Vec<Tensor>)> {
            source(
                x,
                &shape,
                axis,
                &kept,
                &kshape,
                &out_shape,
                acc,
                product,
                include_initial,
                mode,
                lines,
                chunks,
            )
        };
        if chunks == 1 {
            let (s, meta, reads) = kernel(Mode::Scan)?;
            launch(
                &device,
                "array_scan",
                &s,
                &reads,
                &[&out],
                &meta,
                lines as u64,
            )?;
        } else {
            // The chunks' totals, their exclusive running totals, then each chunk's scan.
            let totals = alloc_words(&device, lines * chunks * words)?;
            let (s, meta, reads) = kernel(Mode::Totals)?;
            launch(
                &device,
                "array_scan",
                &s,
                &reads,
                &[&totals],
                &meta,
                (lines * chunks) as u64,
            )?;
            let starts = alloc_words(&device, lines * chunks * words)?;
            let (w, init) = (acc.wgsl(), identity(acc, product));
            let (put, get) = (store(acc, "st", "p", "acc"), load(acc, "tot", "p"));
            let combine = if product { "acc * v" } else { "acc + v" };
            let prefix = format!(
                "@group(0) @binding(0) var<storage, read> tot: array<u32>;
@group(0) @binding(1) var<storage, read_write> st: array<u32>;
@group(0) @binding(2) var<storage, read> prm: array<u32>;
@compute @workgroup_size({WG})
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {{
    let line = gid.x + gid.y * nwg.x * {WG}u;
    if (line >= prm[0]) {{ return; }}
    var acc: {w} = {init};
    for (var c: u32 = 0u; c < prm[1]; c = c + 1u) {{
        let p = line * prm[1] + c;
{put}        let v = {get};
        acc = {};
    }}
}}
",
                acc.wrap(combine)
            );
            launch(
                &device,
                "array_scan_prefix",
                &prefix,
                &[totals],
                &[&starts],
                &[lines as u32, chunks as u32],
                lines as u64,
            )?;
            let (s, meta, mut reads) = kernel(Mode::FromStarts)?;
            reads.push(starts);
            launch(
                &device,
                "array_scan",
                &s,
                &reads,
                &[&out],
                &meta,
                (lines * chunks) as u64,
            )?;
        }
    }
    Ok(Array::from_strided(
        &device,
        acc,
        Strided {
            data: out,
            layout: Layout::contiguous(&out_shape),
        },
    ))
}

/// Which pass a generated scan kernel is.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Lines of one chunk: scan from the identity.
    Scan,
    /// Each chunk's total, into `out[line · chunks + chunk]`.
    Totals,
    /// Each chunk's scan from its start (`starts[line · chunks + chunk]`).
    FromStarts,
}

/// A statement storing the `acc`-typed value `v` at element `i` of the word buffer `buf`
/// (two words for the 64-bit dtypes).
fn store(acc: DType, buf: &str, i: &str, v: &str) -> String {
    match acc {
        DType::UInt64 => store64(buf, i, v),
        DType::Int64 | DType::Float64 => store64(buf, i, &format!("bitcast<u64>({v})")),
        DType::UInt32 => format!("    {buf}[{i}] = {v};\n"),
        _ => format!("    {buf}[{i}] = bitcast<u32>({v});\n"),
    }
}

/// WGSL for the `acc`-typed value at element `i` of the word buffer `buf`.
fn load(acc: DType, buf: &str, i: &str) -> String {
    if acc.words() == 2 {
        join64(
            acc,
            &format!("{buf}[2u * {i}]"),
            &format!("{buf}[2u * {i} + 1u]"),
        )
    } else {
        format!("bitcast<{}>({buf}[{i}])", acc.wgsl())
    }
}

/// WGSL's identity of the sum or product in `acc`.
fn identity(acc: DType, product: bool) -> &'static str {
    match acc {
        DType::Float64 => return if product { "1.0lf" } else { "0.0lf" },
        DType::Int64 => return if product { "1li" } else { "0li" },
        DType::UInt64 => return if product { "1lu" } else { "0lu" },
        _ => {}
    }
    match (acc.kind(), product) {
        (Kind::Float, false) => "0.0",
        (Kind::Float, true) => "1.0",
        (Kind::Signed, false) => "0i",
        (Kind::Signed, true) => "1i",
        (_, false) => "0u",
        (_, true) => "1u",
    }
}

/// A scan kernel's source, metadata and read buffers: invocation t is chunk `t % chunks` of
/// line `t / chunks`.
#[allow(clippy::too_many_arguments)]
fn source(
    x: &Array,
    shape: &[usize],
    axis: usize,
    kept: &[usize],
    kshape: &[usize],
    out_shape: &[usize],
    acc: DType,
    product: bool,
    include_initial: bool,
    mode: Mode,
    lines: usize,
    chunks: usize,
) -> Result<(String, Vec<u32>, Vec<Tensor>)> {
    let plan = Plan::build(x, shape)?;
    let ostr = Layout::contiguous(out_shape).strides;
    let mut kstr: Vec<Vec<isize>> = vec![kept.iter().map(|&a| ostr[a]).collect()];
    kstr.extend(
        plan.leaves
            .iter()
            .map(|l| kept.iter().map(|&a| l.layout.strides[a]).collect()),
    );
    let (ck, cs) = coalesce(kshape, &kstr);
    let rk = ck.len();
    let mut meta: Vec<u32> = vec![
        (lines * chunks) as u32,
        shape[axis] as u32,
        0,
        word(ostr[axis]),
        CHUNK as u32,
        chunks as u32,
    ];
    let kbase = meta.len();
    meta.extend(ck.iter().map(|&d| d as u32));
    let obase = meta.len();
    meta.extend(cs[0].iter().map(|&s| word(s)));
    let mut leaf_bases = Vec::new();
    for (leaf, ks) in plan.leaves.iter().zip(&cs[1..]) {
        leaf_bases.push(meta.len());
        meta.push(leaf.layout.offset as u32);
        meta.extend(ks.iter().map(|&s| word(s)));
        meta.push(word(leaf.layout.strides[axis]));
    }
    let sb = meta.len();
    meta.extend(&plan.scalars);
    let w = acc.wgsl();
    let zero = identity(acc, false);
    let extra: &[(&str, &str)] = if mode == Mode::FromStarts {
        &[("starts", "read"), ("out", "read_write")]
    } else {
        &[("out", "read_write")]
    };
    let mut s = plan.bindings(extra);
    let _ = writeln!(s, "const SB: u32 = {sb}u;");
    s.push_str(&plan.prelude(acc == DType::Float64));
    let _ = writeln!(s, "var<private> ZERO: u32;");
    let _ = writeln!(
        s,
        "@compute @workgroup_size({WG})\nfn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {{"
    );
    let _ = writeln!(s, "    let t = gid.x + gid.y * nwg.x * {WG}u;");
    let _ = writeln!(s, "    if (t >= prm[0]) {{ return; }}\n    ZERO = prm[2];");
    let _ = writeln!(s, "    let line = t / prm[5];\n    let ch = t % prm[5];");
    coords(&mut s, "line", "k", kbase, rk);
    let _ = writeln!(s, "    let ob = i32(0){};", dot("k", obase, rk));
    let _ = writeln!(s, "    let os = bitcast<i32>(prm[3u]);");
    for (j, &b) in leaf_bases.iter().enumerate() {
        let _ = writeln!(s, "    let bo{j} = i32(prm[{b}u]){};", dot("k", b + 1, rk));
    }
    let init = match mode {
        Mode::FromStarts => load(acc, "starts", "t"),
        _ => identity(acc, product).to_string(),
    };
    let _ = writeln!(s, "    var acc: {w} = {init};\n    var comp: {w} = {zero};");
    let shift = include_initial as u32;
    if include_initial && mode != Mode::Totals {
        let _ = writeln!(
            s,
            "    if (ch == 0u) {{\n    let oi = u32(ob);\n{}    }}",
            store(acc, "out", "oi", "acc")
        );
    }
    let _ = writeln!(
        s,
        "    let q0 = ch * prm[4];\n    let q1 = min(q0 + prm[4], prm[1]);\n    for (var q: u32 = q0; q < q1; q = q + 1u) {{"
    );
    for (j, &b) in leaf_bases.iter().enumerate() {
        let _ = writeln!(
            s,
            "    let o{j} = u32(bo{j} + i32(q) * bitcast<i32>(prm[{}u]));",
            b + 1 + rk
        );
    }
    s.push_str(&plan.body);
    let (v, vd) = &plan.root;
    let v = convert(*vd, acc, v);
    let step = if product {
        format!("    acc = {};\n", acc.wrap(&format!("acc * {v}")))
    } else if acc == DType::Float64 {
        compensated_add_f64(&v)
    } else if acc.is_float() {
        compensated_add(&v)
    } else {
        format!("    acc = {};\n", acc.wrap(&format!("acc + {v}")))
    };
    s.push_str(&step);
    if mode == Mode::Totals {
        let _ = writeln!(s, "    }}\n{}}}", store(acc, "out", "t", "acc"));
    } else {
        let _ = writeln!(
            s,
            "    let oi = u32(ob + (i32(q) + {shift}) * os);\n{}    }}\n}}",
            store(acc, "out", "oi", "acc")
        );
    }
    Ok((s, meta, plan.buffers))
}
