//! Reductions over any set of axes: `sum`, `prod`, `min`, `max`, `any`, `all`, `argmin`,
//! `argmax`, and `mean`, `var`, `std` built on them.
//!
//! The operand's expression is evaluated inside the reduction's loop (CuPy's reduction
//! kernels do the same), so `sum((x - m) ** 2)` reads `x` once and writes nothing else. Each
//! output is reduced by one invocation in a fixed order; when there are few outputs and
//! many elements each, the elements are split into chunks reduced in parallel and the
//! chunks' results combined in chunk order by a second kernel. The order depends only on
//! the shape, so a result is the same every run. Float sums are compensated (Kahan), so a
//! long serial run does not lose what pairwise summation would keep.

use std::fmt::Write as _;

use crate::array::array::{Array, Strided};
use crate::array::codegen::{
    compensated_add, compensated_add_f64, coords, dot, join64, prelude, store64, store_f64, Plan,
    WG,
};
use crate::array::complex_fold;
use crate::array::dtype::{DType, Kind};
use crate::array::eval::{alloc_words, launch, word};
use crate::array::layout::{coalesce, numel, Layout};
use crate::array::ops::{convert, Binary, Unary};
use crate::error::{Error, Result};
use crate::runtime::Device;
use crate::tensor::Tensor;

/// A reduction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Reduce {
    /// Σ.
    Sum,
    /// Π.
    Prod,
    /// The smallest (NaN if any is NaN).
    Min,
    /// The largest (NaN if any is NaN).
    Max,
    /// Whether any is nonzero.
    Any,
    /// Whether all are nonzero.
    All,
    /// The position of the first smallest (of the first NaN).
    ArgMin,
    /// The position of the first largest (of the first NaN).
    ArgMax,
}

impl Reduce {
    fn name(self) -> &'static str {
        match self {
            Reduce::Sum => "sum",
            Reduce::Prod => "prod",
            Reduce::Min => "min",
            Reduce::Max => "max",
            Reduce::Any => "any",
            Reduce::All => "all",
            Reduce::ArgMin => "argmin",
            Reduce::ArgMax => "argmax",
        }
    }

    fn is_arg(self) -> bool {
        matches!(self, Reduce::ArgMin | Reduce::ArgMax)
    }

    /// The dtype accumulated in (for arg reductions: of the value compared).
    fn acc_dtype(self, x: DType) -> DType {
        match self {
            // int64/uint64 in themselves (wrapping, as NumPy); narrower integers in 32 bits.
            Reduce::Sum | Reduce::Prod if x.is_wide_int() => x,
            Reduce::Sum | Reduce::Prod => match x.kind() {
                Kind::Bool | Kind::Signed => DType::Int32,
                Kind::Unsigned => DType::UInt32,
                Kind::Float | Kind::Complex => x,
            },
            Reduce::Any | Reduce::All => DType::Bool,
            _ => x,
        }
    }

    /// WGSL declaring the accumulator (`acc`, with `comp` and `idx` where used).
    fn init(self, t: DType) -> String {
        let w = t.wgsl();
        let (one, zero) = match t.kind() {
            _ if t == DType::Int64 => ("1li", "0li"),
            _ if t == DType::UInt64 => ("1lu", "0lu"),
            Kind::Float => ("1.0", "0.0"),
            Kind::Signed => ("1i", "0i"),
            _ => ("1u", "0u"),
        };
        let v = match self {
            Reduce::Sum | Reduce::Any => zero,
            Reduce::Prod | Reduce::All => one,
            _ => zero,
        };
        format!("    var acc: {w} = {v};\n    var comp: {w} = {zero};\n    var idx: u32 = 0xffffffffu;\n")
    }

    /// WGSL folding value `v` at position `r` into the accumulator (`idx` holds the best
    /// position so far, 0xffffffff before the first value); float sums are compensated
    /// ([`compensated_add`]).
    fn step(self, t: DType, v: &str, r: &str) -> String {
        let float = t.kind() == Kind::Float;
        let f64 = t == DType::Float64;
        let sfx = t.wgsl();
        let is_nan = if f64 { "is_nan64" } else { "is_nan" };
        match self {
            Reduce::Sum if f64 => compensated_add_f64(v),
            Reduce::Sum if float => compensated_add(v),
            Reduce::Sum => format!("    acc = {};\n", t.wrap(&format!("acc + {v}"))),
            Reduce::Prod => format!("    acc = acc * {v};\n"),
            Reduce::Min if float => format!(
                "    acc = select(minimum_{sfx}(acc, {v}), {v}, idx == 0xffffffffu); idx = 0u;\n"
            ),
            Reduce::Max if float => format!(
                "    acc = select(maximum_{sfx}(acc, {v}), {v}, idx == 0xffffffffu); idx = 0u;\n"
            ),
            Reduce::Min | Reduce::Max if t.is_wide_int() => {
                let keep = if self == Reduce::Min { "<" } else { ">" };
                format!(
                    "    acc = select({v}, acc, acc {keep} {v} && idx != 0xffffffffu); idx = 0u;\n"
                )
            }
            Reduce::Min => {
                format!("    acc = select(min(acc, {v}), {v}, idx == 0xffffffffu); idx = 0u;\n")
            }
            Reduce::Max => {
                format!("    acc = select(max(acc, {v}), {v}, idx == 0xffffffffu); idx = 0u;\n")
            }
            Reduce::Any => format!("    acc = acc | {v};\n"),
            Reduce::All => format!("    acc = acc & {v};\n"),
            Reduce::ArgMin | Reduce::ArgMax => {
                // Ties (and a second NaN) go to the smaller position: within a chunk
                // positions rise, but chunks interleave, so combining them needs the test.
                let better = if self == Reduce::ArgMax { ">" } else { "<" };
                let nan = if float {
                    format!("(({is_nan}({v}) && (!{is_nan}(acc) || {r} < idx)) || (!{is_nan}(acc) && !{is_nan}({v}) && ({v} {better} acc || ({v} == acc && {r} < idx))))")
                } else {
                    format!("({v} {better} acc || ({v} == acc && {r} < idx))")
                };
                format!("    if (idx == 0xffffffffu || {nan}) {{ acc = {v}; idx = {r}; }}\n")
            }
        }
    }
}

/// How a reduction of `r` elements per output is cut: (chunks, elements per chunk). At most
/// `CHUNK` elements per invocation, whatever the number of outputs: enough invocations to
/// fill a device when there are few outputs, and short loops everywhere, which llvmpipe
/// requires (it stops an invocation's loops after 65,535 iterations in all, counting the
/// loops of the functions an element calls, such as an integer power's, and carries on).
fn chunking(r: usize) -> (usize, usize) {
    let chunks = r.div_ceil(CHUNK).max(1);
    let len = r.div_ceil(chunks).max(1);
    (r.div_ceil(len).max(1), len)
}

/// Elements one reduction invocation folds at most.
const CHUNK: usize = 1024;

/// The axes a reduction names, checked and sorted (None: every axis).
pub(crate) fn normalize_axes(
    op: &'static str,
    ndim: usize,
    axes: Option<&[isize]>,
) -> Result<Vec<usize>> {
    let Some(axes) = axes else {
        return Ok((0..ndim).collect());
    };
    let mut out: Vec<usize> = Vec::new();
    for &a in axes {
        let b = if a < 0 { a + ndim as isize } else { a };
        if b < 0 || b >= ndim as isize {
            return Err(Error::IndexOutOfBounds {
                op,
                expected: format!("an axis in -{ndim}..{ndim}"),
                found: a.to_string(),
            });
        }
        if out.contains(&(b as usize)) {
            return Err(Error::InvalidArgument {
                op,
                name: "axis",
                expected: "each axis at most once".into(),
                found: format!("{axes:?}"),
            });
        }
        out.push(b as usize);
    }
    out.sort_unstable();
    Ok(out)
}

impl Array {
    /// Reduces over `axes` (None: all), keeping them as extent 1 when `keepdims`.
    pub fn reduce(&self, op: Reduce, axes: Option<&[isize]>, keepdims: bool) -> Result<Array> {
        let name = op.name();
        if self.dtype().is_complex() {
            if matches!(op, Reduce::Any | Reduce::All) {
                return self.astype(DType::Bool)?.reduce(op, axes, keepdims);
            }
            if op == Reduce::Prod {
                let axes = normalize_axes(name, self.ndim(), axes)?;
                return complex_fold::prod(self, &axes, keepdims);
            }
            if op != Reduce::Sum {
                return self.dtype().refuse_wide(name).map(|_| self.clone());
            }
            // Σ(re) + j·Σ(im): two float32 reductions, each compensated.
            let re = self.unary(Unary::Real)?.sum(axes, keepdims)?;
            let im = self.unary(Unary::Imag)?.sum(axes, keepdims)?;
            return complex_fold::compose(&re, &im);
        }
        if self.dtype() == DType::Float16 && matches!(op, Reduce::Sum | Reduce::Prod) {
            // Accumulated in float32 and rounded once at the end, as NumPy sums float16.
            return self
                .astype(DType::Float32)?
                .reduce(op, axes, keepdims)?
                .astype(DType::Float16);
        }
        let axes = normalize_axes(name, self.ndim(), axes)?;
        if op.is_arg() && axes.len() > 1 && axes.len() != self.ndim() {
            return Err(Error::InvalidArgument {
                op: name,
                name: "axis",
                expected: "one axis, or none (the flattened array)".into(),
                found: format!("{axes:?}"),
            });
        }
        let x = if op == Reduce::Any || op == Reduce::All {
            self.astype(DType::Bool)?
        } else {
            self.clone()
        };
        let shape = x.shape().to_vec();
        let kept: Vec<usize> = (0..shape.len()).filter(|a| !axes.contains(a)).collect();
        let kshape: Vec<usize> = kept.iter().map(|&a| shape[a]).collect();
        let rshape: Vec<usize> = axes.iter().map(|&a| shape[a]).collect();
        let out_shape: Vec<usize> = if keepdims {
            (0..shape.len())
                .map(|a| if axes.contains(&a) { 1 } else { shape[a] })
                .collect()
        } else {
            kshape.clone()
        };
        let n_out = numel(&kshape);
        let r = numel(&rshape);
        let acc = op.acc_dtype(x.dtype());
        let out_dtype = if op.is_arg() { DType::Int32 } else { acc };
        if r == 0 && n_out > 0 {
            return match op {
                Reduce::Sum | Reduce::Any => Array::zeros(x.device(), &out_shape, out_dtype),
                Reduce::Prod | Reduce::All => Array::ones(x.device(), &out_shape, out_dtype),
                _ => Err(Error::InvalidArgument {
                    op: name,
                    name: "x",
                    expected: "a reduction over at least one element (it has no identity)".into(),
                    found: format!("shape {:?} over axes {axes:?}", self.shape()),
                }),
            };
        }
        let device = x.device().clone();
        if n_out == 0 {
            return Array::empty(&device, &out_shape, out_dtype);
        }
        let plan = Plan::build(&x, &shape)?;
        let (v, vd) = &plan.root;
        let fold = Fold {
            acc,
            arg: op.is_arg(),
            functions: String::new(),
            init: op.init(acc),
            step: &|v, r| op.step(acc, v, r),
            finish: None,
        };
        let data = fold_axes(
            &device,
            name,
            &plan,
            &convert(*vd, acc, v),
            &shape,
            &axes,
            &fold,
        )?;
        Ok(Array::from_strided(
            &device,
            out_dtype,
            Strided {
                data,
                layout: Layout::contiguous(&out_shape),
            },
        ))
    }

    /// Σ over `axes`.
    pub fn sum(&self, axes: Option<&[isize]>, keepdims: bool) -> Result<Array> {
        self.reduce(Reduce::Sum, axes, keepdims)
    }

    /// The mean over `axes` (integers are averaged as float32, float64 as float64; float16
    /// in float32, rounded once at the end, as NumPy does).
    pub fn mean(&self, axes: Option<&[isize]>, keepdims: bool) -> Result<Array> {
        if self.dtype() == DType::Float16 {
            return self
                .astype(DType::Float32)?
                .mean(axes, keepdims)?
                .astype(DType::Float16);
        }
        let ax = normalize_axes("mean", self.ndim(), axes)?;
        let count: usize = ax.iter().map(|&a| self.shape()[a]).product();
        if self.dtype().is_complex() {
            return self
                .sum(axes, keepdims)?
                .binary_scalar(Binary::Divide, (count as f64).into());
        }
        let x = self.astype(float_of(self))?;
        x.sum(axes, keepdims)?
            .binary_scalar(Binary::Divide, (count as f64).into())
    }

    /// The variance over `axes`, dividing by `N - correction`: the corrected two-pass
    /// algorithm (Chan, Golub and LeVeque), `(Σd² - (Σd)²/N) / (N - correction)` with
    /// `d = x - mean`, each sum fused with `d` into its reduction's loop. The second term
    /// takes out the float32 mean's rounding, which alone made the deviation of equal values
    /// an ulp of the mean (std of three 682.6986 was 6.1e-5, not 0).
    pub fn var(&self, axes: Option<&[isize]>, correction: f64, keepdims: bool) -> Result<Array> {
        if self.dtype() == DType::Float16 {
            return self
                .astype(DType::Float32)?
                .var(axes, correction, keepdims)?
                .astype(DType::Float16);
        }
        if self.dtype().is_complex() {
            // NumPy's: the mean of |z - mean(z)|², a real float32, which is the variance of
            // the real parts plus that of the imaginary parts.
            let re = self.unary(Unary::Real)?.var(axes, correction, keepdims)?;
            let im = self.unary(Unary::Imag)?.var(axes, correction, keepdims)?;
            return re.binary(Binary::Add, &im);
        }
        let ax = normalize_axes("var", self.ndim(), axes)?;
        let count: usize = ax.iter().map(|&a| self.shape()[a]).product();
        let x = self.astype(float_of(self))?;
        let m = x.mean(axes, true)?;
        m.eval()?;
        let d = x.binary(Binary::Subtract, &m)?;
        let squares = d.binary(Binary::Multiply, &d)?.sum(axes, keepdims)?;
        let s = d.sum(axes, keepdims)?;
        let shift = s
            .binary(Binary::Multiply, &s)?
            .binary_scalar(Binary::Divide, (count as f64).into())?;
        squares
            .binary(Binary::Subtract, &shift)?
            .binary_scalar(Binary::Maximum, 0.0.into())?
            .binary_scalar(Binary::Divide, (count as f64 - correction).into())
    }

    /// The standard deviation over `axes`.
    pub fn std(&self, axes: Option<&[isize]>, correction: f64, keepdims: bool) -> Result<Array> {
        if self.dtype() == DType::Float16 {
            // The root of the float32 variance, rounded once.
            return self
                .astype(DType::Float32)?
                .std(axes, correction, keepdims)?
                .astype(DType::Float16);
        }
        self.var(axes, correction, keepdims)?.unary(Unary::Sqrt)
    }
}

/// The float dtype `mean` and `var` compute in: float64 for float64, and for int64/uint64
/// where the device holds float64 (as NumPy; float32 would round their values past 2^24),
/// float32 otherwise.
fn float_of(x: &Array) -> DType {
    let d = x.dtype();
    let f = x.device().info().features;
    if d == DType::Float64 || (d.is_wide_int() && f.shader_f64) {
        DType::Float64
    } else {
        DType::Float32
    }
}

/// How the values of a reduction fold into an accumulator, for the built-in reductions and
/// the user's `ReductionKernel`s alike.
pub(crate) struct Fold<'a> {
    /// The accumulator's dtype (for arg reductions: of the value compared).
    pub acc: DType,
    /// Whether the result is the position (`idx`) rather than the accumulator.
    pub arg: bool,
    /// Module-scope WGSL the steps call (a custom kernel's functions).
    pub functions: String,
    /// WGSL declaring `acc`, `comp` and `idx`.
    pub init: String,
    /// WGSL folding a value (first argument) at a position (second) into `acc`.
    pub step: &'a dyn Fn(&str, &str) -> String,
    /// The result's dtype and the WGSL function of `acc` that makes it, applied once per
    /// output after the last fold (a custom kernel's post-map).
    pub finish: Option<(DType, String)>,
}

impl Fold<'_> {
    /// The statement storing this output's result at `t` of `sv` (and `si`).
    fn store(&self, last: bool) -> String {
        let (d, v) = match (&self.finish, last) {
            (Some((d, f)), true) => (*d, format!("{f}(acc)")),
            _ => (self.acc, "acc".to_string()),
        };
        if d == DType::Float64 {
            return format!("{}    si[t] = idx;\n}}\n", store_f64("sv", "t", &v));
        }
        if d.is_wide_int() {
            let w = format!("bitcast<u64>({v})");
            return format!("{}    si[t] = idx;\n}}\n", store64("sv", "t", &w));
        }
        // A float16 result (a custom fold's) is rounded; the built-in ones are exact here.
        let v = if d == DType::Float16 { d.wrap(&v) } else { v };
        let w = if d.wgsl() == "u32" {
            v
        } else {
            format!("bitcast<u32>({v})")
        };
        format!("    sv[t] = {w};\n    si[t] = idx;\n}}\n")
    }
}

/// Reduces `value` (WGSL over `plan`'s loads, of the fold's accumulator dtype) over `axes` of
/// `shape`, one result per position of the other axes in C order: the words of the results
/// (the positions for an arg fold). `shape` must hold at least one element per output.
pub(crate) fn fold_axes(
    device: &Device,
    name: &'static str,
    plan: &Plan,
    value: &str,
    shape: &[usize],
    axes: &[usize],
    fold: &Fold,
) -> Result<Tensor> {
    let kept: Vec<usize> = (0..shape.len()).filter(|a| !axes.contains(a)).collect();
    let kshape: Vec<usize> = kept.iter().map(|&a| shape[a]).collect();
    let rshape: Vec<usize> = axes.iter().map(|&a| shape[a]).collect();
    let n_out = numel(&kshape);
    let r = numel(&rshape);
    let kstr: Vec<Vec<isize>> = plan
        .leaves
        .iter()
        .map(|l| kept.iter().map(|&a| l.layout.strides[a]).collect())
        .collect();
    let rstr: Vec<Vec<isize>> = plan
        .leaves
        .iter()
        .map(|l| axes.iter().map(|&a| l.layout.strides[a]).collect())
        .collect();
    let (ck, ckstr) = coalesce(&kshape, &kstr);
    let (cr, crstr) = coalesce(&rshape, &rstr);
    let (chunks, len) = chunking(r);
    if let Some(limit) = device.info().limits.max_loop_iterations {
        // The second pass loops over the chunks.
        if chunks > limit as usize {
            return Err(Error::InvalidArgument {
                op: name,
                name: "x",
                expected: format!(
                    "at most {} elements per output on {} (it stops longer loops)",
                    limit as usize * CHUNK,
                    device.name()
                ),
                found: r.to_string(),
            });
        }
    }
    let (rk, rr) = (ck.len(), cr.len());
    let mut meta: Vec<u32> = vec![
        (n_out * chunks) as u32,
        chunks as u32,
        len as u32,
        r as u32,
        0,
    ];
    let kbase = meta.len();
    meta.extend(ck.iter().map(|&d| d as u32));
    let rbase = meta.len();
    meta.extend(cr.iter().map(|&d| d as u32));
    let mut leaf_bases = Vec::new();
    for ((leaf, ks), rs) in plan.leaves.iter().zip(&ckstr).zip(&crstr) {
        leaf_bases.push(meta.len());
        meta.push(leaf.layout.offset as u32);
        meta.extend(ks.iter().map(|&s| word(s)));
        meta.extend(rs.iter().map(|&s| word(s)));
    }
    let sb = meta.len();
    meta.extend(&plan.scalars);

    let mut s = plan.bindings(&[("sv", "read_write"), ("si", "read_write")]);
    let _ = writeln!(s, "const SB: u32 = {sb}u;");
    s.push_str(&plan.prelude(fold.acc == DType::Float64));
    s.push_str(&fold.functions);
    let _ = writeln!(s, "var<private> ZERO: u32;");
    let _ = writeln!(
        s,
        "@compute @workgroup_size({WG})\nfn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {{"
    );
    let _ = writeln!(s, "    let t = gid.x + gid.y * nwg.x * {WG}u;");
    let _ = writeln!(s, "    if (t >= prm[0]) {{ return; }}\n    ZERO = prm[4];");
    let _ = writeln!(s, "    let o = t / prm[1];\n    let ch = t % prm[1];");
    coords(&mut s, "o", "k", kbase, rk);
    for (j, &b) in leaf_bases.iter().enumerate() {
        let _ = writeln!(s, "    let bo{j} = i32(prm[{b}u]){};", dot("k", b + 1, rk));
    }
    s.push_str(&fold.init);
    // Chunk `ch` takes elements ch, ch + chunks, ch + 2·chunks, …: neighbouring
    // invocations read neighbouring elements at every step (coalesced loads on a GPU,
    // vector loads on lavapipe), and each chunk still meets its elements in order.
    let _ = writeln!(
        s,
        "    for (var j: u32 = 0u; j < prm[2]; j = j + 1u) {{\n    let rr = ch + j * prm[1];\n    if (rr >= prm[3]) {{ break; }}"
    );
    coords(&mut s, "rr", "q", rbase, rr);
    for (j, &b) in leaf_bases.iter().enumerate() {
        let _ = writeln!(s, "    let o{j} = u32(bo{j}{});", dot("q", b + 1 + rk, rr));
    }
    s.push_str(&plan.body);
    s.push_str(&(fold.step)(value, "rr"));
    let _ = writeln!(s, "    }}");
    s.push_str(&fold.store(chunks == 1));

    let sv = alloc_words(device, n_out * chunks * fold.acc.words())?;
    let si = alloc_words(device, if fold.arg { n_out * chunks } else { 1 })?;
    launch(
        device,
        "array_reduce",
        &s,
        &plan.buffers,
        &[&sv, &si],
        &meta,
        (n_out * chunks) as u64,
    )?;
    let (sv, si) = if chunks > 1 {
        combine(device, fold, &sv, &si, n_out, chunks)?
    } else {
        (sv, si)
    };
    Ok(if fold.arg { si } else { sv })
}

/// The second pass: each output's chunk results combined in chunk order.
fn combine(
    device: &Device,
    fold: &Fold,
    sv: &Tensor,
    si: &Tensor,
    n_out: usize,
    chunks: usize,
) -> Result<(Tensor, Tensor)> {
    let w = fold.acc.wgsl();
    let load = if fold.acc.words() == 2 {
        join64(fold.acc, "pv[2u * p]", "pv[2u * p + 1u]")
    } else if w == "u32" {
        "pv[p]".to_string()
    } else {
        format!("bitcast<{w}>(pv[p])")
    };
    let mut s = String::new();
    // The chunks' indices are read only by arg reductions (an unused binding is an error).
    let arg = fold.arg;
    let reads: Vec<Tensor> = if arg {
        vec![sv.clone(), si.clone()]
    } else {
        vec![sv.clone()]
    };
    let mut b = 0;
    for (name, access) in [
        ("pv", "read"),
        ("pi", "read"),
        ("sv", "read_write"),
        ("si", "read_write"),
        ("prm", "read"),
    ] {
        if name == "pi" && !arg {
            continue;
        }
        let _ = writeln!(
            s,
            "@group(0) @binding({b}) var<storage, {access}> {name}: array<u32>;"
        );
        b += 1;
    }
    s.push_str(&prelude(fold.acc == DType::Float64));
    s.push_str(&fold.functions);
    let _ = writeln!(s, "var<private> ZERO: u32;");
    let _ = writeln!(
        s,
        "@compute @workgroup_size({WG})\nfn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {{"
    );
    let _ = writeln!(s, "    let t = gid.x + gid.y * nwg.x * {WG}u;");
    let _ = writeln!(s, "    if (t >= prm[0]) {{ return; }}\n    ZERO = prm[2];");
    s.push_str(&fold.init);
    let _ = writeln!(s, "    for (var c: u32 = 0u; c < prm[1]; c = c + 1u) {{");
    let _ = writeln!(s, "    let p = t * prm[1] + c;");
    // A chunk's sum or minimum folds in like a value; an arg chunk brings its index.
    s.push_str(&(fold.step)(&load, if arg { "pi[p]" } else { "c" }));
    let _ = writeln!(s, "    }}");
    s.push_str(&fold.store(true));
    let rv = alloc_words(device, n_out * fold.acc.words())?;
    let ri = alloc_words(device, if arg { n_out } else { 1 })?;
    let meta = [n_out as u32, chunks as u32, 0];
    launch(
        device,
        "array_reduce_combine",
        &s,
        &reads,
        &[&rv, &ri],
        &meta,
        n_out as u64,
    )?;
    Ok((rv, ri))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_stay_short_and_cover_every_element() {
        for r in [0usize, 1, 1023, 1024, 1025, 70_000, 300_001, 1 << 26] {
            let (c, len) = chunking(r);
            assert!(len <= CHUNK, "{r}: {len}");
            assert!(c * len >= r && (c - 1) * len < r.max(1), "{r}: {c} x {len}");
        }
    }
}
