//! WGSL generation for array expressions: one kernel per expression shape.
//!
//! A [`Plan`] walks an expression once: each operation becomes a `let` in the kernel body,
//! each array with data a load through its strides (a distinct buffer bound once, however
//! many views of it the expression reads), each scalar a word of the kernel's metadata. The
//! source depends on the operations, the dtypes, how many buffers and views are read and the
//! number of axes, never on extents, strides, offsets or scalar values, which all travel in
//! the metadata buffer: `x * 2` and `y * 3` of any shape of one rank share one compiled
//! pipeline (the device's pipeline cache keys on the source).

use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::Arc;

use crate::array::array::{Array, Expr};
use crate::array::dtype::DType;
use crate::array::layout::Layout;
use crate::array::ops::{convert, zero, PRELUDE, PRELUDE_F64, PRELUDE_F64_MATH, PRELUDE_I64};
use crate::error::Result;
use crate::tensor::Tensor;

/// Invocations per work-group of the generated kernels.
pub(crate) const WG: u32 = 256;

/// One read of a buffer through a view (or a position: its offset is the value).
pub(crate) struct Leaf {
    /// The view, broadcast to the iteration's full shape.
    pub layout: Layout,
}

/// An expression laid out for a kernel.
pub(crate) struct Plan {
    /// The distinct buffers read, in binding order.
    pub buffers: Vec<Tensor>,
    buffer_ids: Vec<usize>,
    /// The views read; `o{j}` is view j's element offset in the kernel.
    pub leaves: Vec<Leaf>,
    /// Scalar words, read from the metadata at `SB + k`.
    pub scalars: Vec<u32>,
    /// The body: one `let` per operation and load.
    pub body: String,
    names: HashMap<usize, (String, DType)>,
    full: Vec<usize>,
    /// The root's variable and dtype.
    pub root: (String, DType),
    /// Set where a float64 value is loaded, made or computed with (`visit` sees every node,
    /// and a float64 operand or compute type is the only way f64 enters the body).
    f64: bool,
}

/// A dtype's result made to fit it: narrow integers wrapped back into range, float16 rounded.
fn fit(d: DType, x: String) -> String {
    match d {
        DType::Int8 | DType::Int16 | DType::UInt8 | DType::UInt16 | DType::Float16 => d.wrap(&x),
        _ => x,
    }
}

impl Plan {
    /// Lays out `root`'s expression, iterated over `full` (the root's shape, or for a
    /// reduction its operand's).
    pub fn build(root: &Array, full: &[usize]) -> Result<Plan> {
        Ok(Plan::build_many(&[root], full)?.0)
    }

    /// Lays out several expressions read by one kernel (each broadcast to `full`), sharing
    /// their buffers and common operations; returns each root's variable and dtype (the
    /// plan's own root is the first).
    pub fn build_many(roots: &[&Array], full: &[usize]) -> Result<(Plan, Vec<(String, DType)>)> {
        let first = roots.first().map_or(DType::Float32, |r| r.dtype());
        let mut p = Plan {
            buffers: Vec::new(),
            buffer_ids: Vec::new(),
            leaves: Vec::new(),
            scalars: Vec::new(),
            body: String::new(),
            names: HashMap::new(),
            full: full.to_vec(),
            root: (String::new(), first),
            f64: false,
        };
        let mut vars = Vec::with_capacity(roots.len());
        for r in roots {
            vars.push(p.visit(r)?);
        }
        if let Some(v) = vars.first() {
            p.root = v.clone();
        }
        Ok((p, vars))
    }

    fn fresh(&self) -> String {
        format!("v{}", self.names.len())
    }

    fn visit(&mut self, a: &Array) -> Result<(String, DType)> {
        let key = Arc::as_ptr(&a.node) as usize;
        if let Some(v) = self.names.get(&key) {
            return Ok(v.clone());
        }
        let d = a.dtype();
        let t = d.wgsl();
        self.f64 |= d == DType::Float64;
        let value = match a.expr() {
            None => {
                let s = a.strided()?;
                let id = s.data.storage_id();
                let binding = match self.buffer_ids.iter().position(|&b| b == id) {
                    Some(b) => b,
                    None => {
                        self.buffer_ids.push(id);
                        self.buffers.push(s.data.clone());
                        self.buffers.len() - 1
                    }
                };
                let j = self.leaves.len();
                self.leaves.push(Leaf {
                    layout: s.layout.broadcast_to(&self.full)?,
                });
                if d.is_complex() {
                    format!(
                        "vec2<f32>(bitcast<f32>(b{binding}[2u * o{j}]), bitcast<f32>(b{binding}[2u * o{j} + 1u]))"
                    )
                } else if d.words() == 2 {
                    join64(
                        d,
                        &format!("b{binding}[2u * o{j}]"),
                        &format!("b{binding}[2u * o{j} + 1u]"),
                    )
                } else if t == "u32" {
                    format!("b{binding}[o{j}]")
                } else {
                    format!("bitcast<{t}>(b{binding}[o{j}])")
                }
            }
            Some(Expr::Iota(axis)) => {
                // A view whose offset is the position: stride 1 along `axis`, 0 elsewhere.
                let mut strides = vec![0isize; a.ndim()];
                strides[axis] = 1;
                let layout = Layout {
                    shape: a.shape().to_vec(),
                    strides,
                    offset: 0,
                };
                let j = self.leaves.len();
                self.leaves.push(Leaf {
                    layout: layout.broadcast_to(&self.full)?,
                });
                format!("i32(o{j})")
            }
            Some(Expr::Scalar(w, im)) => {
                self.scalars.push(w);
                let k = self.scalars.len() - 1;
                if d.is_complex() {
                    self.scalars.push(im);
                    format!(
                        "vec2<f32>(bitcast<f32>(prm[SB + {k}u]), bitcast<f32>(prm[SB + {}u]))",
                        k + 1
                    )
                } else if d.words() == 2 {
                    self.scalars.push(im);
                    join64(
                        d,
                        &format!("prm[SB + {k}u]"),
                        &format!("prm[SB + {}u]", k + 1),
                    )
                } else {
                    format!("bitcast<{t}>(prm[SB + {k}u])")
                }
            }
            Some(Expr::Unary(op, ct, x)) => {
                self.f64 |= ct == DType::Float64;
                let (vx, dx) = self.visit(&x)?;
                fit(d, op.wgsl(ct, &convert(dx, ct, &vx)))
            }
            Some(Expr::Binary(op, ct, x, y)) => {
                self.f64 |= ct == DType::Float64;
                let (vx, dx) = self.visit(&x)?;
                let (vy, dy) = self.visit(&y)?;
                fit(d, op.wgsl(ct, &convert(dx, ct, &vx), &convert(dy, ct, &vy)))
            }
            Some(Expr::Where(c, x, y)) => {
                let (vc, dc) = self.visit(&c)?;
                let (vx, dx) = self.visit(&x)?;
                let (vy, dy) = self.visit(&y)?;
                let cond = if dc.is_complex() {
                    format!("{} != 0u", convert(dc, DType::Bool, &vc))
                } else {
                    format!("{vc} != {}", zero(dc))
                };
                format!(
                    "select({}, {}, {cond})",
                    convert(dy, d, &vy),
                    convert(dx, d, &vx),
                )
            }
            Some(Expr::Cast(x)) => {
                let (vx, dx) = self.visit(&x)?;
                convert(dx, d, &vx)
            }
        };
        let name = self.fresh();
        let _ = writeln!(self.body, "    let {name}: {t} = {value};");
        self.names.insert(key, (name.clone(), d));
        Ok((name, d))
    }

    /// The storage declarations: the read buffers, then `extra` (name, access) in order,
    /// then the metadata.
    pub fn bindings(&self, extra: &[(&str, &str)]) -> String {
        let mut s = String::new();
        for b in 0..self.buffers.len() {
            let _ = writeln!(
                s,
                "@group(0) @binding({b}) var<storage, read> b{b}: array<u32>;"
            );
        }
        let mut n = self.buffers.len();
        for (name, access) in extra {
            let _ = writeln!(
                s,
                "@group(0) @binding({n}) var<storage, {access}> {name}: array<u32>;"
            );
            n += 1;
        }
        let _ = writeln!(
            s,
            "@group(0) @binding({n}) var<storage, read> prm: array<u32>;"
        );
        s
    }

    /// Whether the kernel computes in float64 anywhere (it then needs [`PRELUDE_F64`], which
    /// is only valid WGSL on adapters with f64 and i64).
    pub fn uses_f64(&self) -> bool {
        self.f64 || self.root.1 == DType::Float64
    }

    /// Whether the kernel computes in int64 or uint64 anywhere (it then needs
    /// [`PRELUDE_I64`], valid WGSL only on adapters with i64).
    pub fn uses_i64(&self) -> bool {
        self.root.1.is_wide_int() || uses_i64(&self.body)
    }

    /// The prelude this plan's kernel needs: [`PRELUDE`], [`PRELUDE_I64`] when it computes
    /// in 64-bit integers, and [`PRELUDE_F64`] when it computes in float64 (or `also` says
    /// the caller's code does).
    pub fn prelude(&self, also: bool) -> String {
        if self.body.contains("_m64(") {
            // A float64 transcendental function: shaders/array_math_f64*.wgsl as well (they
            // bring the float64 prelude with them).
            return format!("{PRELUDE}{PRELUDE_I64}{PRELUDE_F64_MATH}");
        }
        prelude_for(self.uses_i64(), self.uses_f64() || also)
    }

    /// Statements storing the root's value at element `o` of the buffer `buf` (two words
    /// for complex64 and float64).
    pub fn store_root(&self, buf: &str, o: &str) -> String {
        let (v, d) = &self.root;
        if *d == DType::Float64 {
            return store_f64(buf, o, v);
        }
        if d.is_wide_int() {
            return store64(buf, o, &format!("bitcast<u64>({v})"));
        }
        if d.is_complex() {
            format!(
                "    {buf}[2u * {o}] = bitcast<u32>({v}.x);\n    {buf}[2u * {o} + 1u] = bitcast<u32>({v}.y);\n"
            )
        } else {
            format!("    {buf}[{o}] = {};\n", self.root_word())
        }
    }

    /// The root's value as a device word (one-word dtypes: `store_root` writes complex
    /// roots itself).
    fn root_word(&self) -> String {
        let (v, d) = &self.root;
        if d.wgsl() == "u32" {
            v.clone()
        } else {
            format!("bitcast<u32>({v})")
        }
    }
}

/// WGSL for the f64 of two words (WGSL u32 expressions): the low half and the high half.
/// naga's `bitcast` keeps the width, so the halves are joined in a u64 first.
pub(crate) fn join_f64(lo: &str, hi: &str) -> String {
    format!("bitcast<f64>((u64({hi}) << 32u) | u64({lo}))")
}

/// WGSL for the value of a two-word real dtype (`float64`, `int64`, `uint64`) from its low
/// and high words.
pub(crate) fn join64(d: DType, lo: &str, hi: &str) -> String {
    match d {
        DType::Float64 => join_f64(lo, hi),
        DType::Int64 => format!("bitcast<i64>((u64({hi}) << 32u) | u64({lo}))"),
        _ => format!("((u64({hi}) << 32u) | u64({lo}))"),
    }
}

/// Statements storing the f64 `v` as words `2·o` (low half) and `2·o + 1` of `buf`.
pub(crate) fn store_f64(buf: &str, o: &str, v: &str) -> String {
    store64(buf, o, &format!("bitcast<u64>({v})"))
}

/// Statements storing the u64 `w` as words `2·o` (low half) and `2·o + 1` of `buf`.
pub(crate) fn store64(buf: &str, o: &str, w: &str) -> String {
    format!(
        "    {{ let w = {w}; {buf}[2u * {o}] = u32(w & 0xfffffffflu); {buf}[2u * {o} + 1u] = u32(w >> 32u); }}\n"
    )
}

/// Whether WGSL source names a 64-bit integer type.
pub(crate) fn uses_i64(src: &str) -> bool {
    src.contains("i64") || src.contains("u64")
}

/// [`PRELUDE`], followed by [`PRELUDE_I64`] and [`PRELUDE_F64`] when `f64` (a kernel
/// computing in float64; the adapters holding it hold i64 too).
pub(crate) fn prelude(f64: bool) -> String {
    prelude_for(f64, f64)
}

/// [`PRELUDE`], then [`PRELUDE_I64`] when `i64` (a kernel computing in int64 or uint64) or
/// `f64`, then [`PRELUDE_F64`] when `f64`: each is valid WGSL only on adapters with the
/// types it declares, even where unused.
pub(crate) fn prelude_for(i64: bool, f64: bool) -> String {
    let mut s = PRELUDE.to_string();
    if i64 || f64 {
        s.push_str(PRELUDE_I64);
    }
    if f64 {
        s.push_str(PRELUDE_F64);
    }
    s
}

/// WGSL adding `v` to the f32 accumulator `acc` with Kahan's compensation `comp`, for the
/// reductions and scans alike. The partial sum is read back through an XOR with `ZERO`, a
/// private word the kernel loads from its metadata (always 0): shader compilers may treat
/// float arithmetic as associative (Mesa's NIR rewrites `(a + b) - a` to `b`) and would
/// otherwise erase the compensation. Infinities and NaN end it rather than poison it.
pub(crate) fn compensated_add(v: &str) -> String {
    format!(
        "    {{ let y = {v} - comp; let s = acc + y; if (is_inf(s) || is_nan(s)) {{ acc = s; comp = 0.0; }} else {{ comp = (bitcast<f32>(bitcast<u32>(s) ^ ZERO) - acc) - y; acc = s; }} }}\n"
    )
}

/// [`compensated_add`] for an f64 accumulator: the XOR with `ZERO` on the u64 bits.
pub(crate) fn compensated_add_f64(v: &str) -> String {
    format!(
        "    {{ let y = {v} - comp; let s = acc + y; if (is_inf64(s) || is_nan64(s)) {{ acc = s; comp = 0.0lf; }} else {{ comp = (bitcast<f64>(bitcast<u64>(s) ^ u64(ZERO)) - acc) - y; acc = s; }} }}\n"
    )
}

/// `let c{d} = …` for each axis of a `rank`-axis shape whose extents are at `prm[base..]`,
/// from the linear index `idx`, with variable prefix `c`.
pub(crate) fn coords(out: &mut String, idx: &str, c: &str, base: usize, rank: usize) {
    if rank == 0 {
        return;
    }
    let _ = writeln!(out, "    var {c}rem = {idx};");
    for d in (1..rank).rev() {
        let _ = writeln!(
            out,
            "    let {c}{d} = {c}rem % prm[{}u]; {c}rem = {c}rem / prm[{}u];",
            base + d,
            base + d
        );
    }
    let _ = writeln!(out, "    let {c}0 = {c}rem;");
}

/// `Σ c{d} · stride` over axes whose strides are at `prm[base..]`, as an i32 expression.
pub(crate) fn dot(c: &str, base: usize, rank: usize) -> String {
    let mut s = String::new();
    for d in 0..rank {
        let _ = write!(s, " + i32({c}{d}) * bitcast<i32>(prm[{}u])", base + d);
    }
    s
}

/// The elementwise kernel: one invocation per element of the (coalesced, `rank`-axis)
/// iteration shape, writing the root into `out0` through its own strides.
///
/// Metadata: `[n, shape[rank], out offset, out strides[rank], per view: offset,
/// strides[rank], scalars…]`.
pub(crate) fn elementwise_source(plan: &Plan, rank: usize) -> String {
    elementwise_kernel(plan, rank, "", "", &[plan.store_root("out0", "oo")], false)
}

/// An elementwise kernel writing several results: `functions` at module scope, `tail` after
/// the plan's body, then `stores[k]`, the statements writing output `out{k}` at element
/// offset `oo` (every output shares one layout, the metadata's); `f64` says the caller's code
/// computes in float64 (the plan knows its own).
pub(crate) fn elementwise_kernel(
    plan: &Plan,
    rank: usize,
    functions: &str,
    tail: &str,
    stores: &[String],
    f64: bool,
) -> String {
    let per = 1 + rank;
    let out_base = 1 + rank;
    let leaf_base = |j: usize| out_base + per * (1 + j);
    let sb = leaf_base(plan.leaves.len());
    let names: Vec<String> = (0..stores.len()).map(|k| format!("out{k}")).collect();
    let extra: Vec<(&str, &str)> = names.iter().map(|n| (n.as_str(), "read_write")).collect();
    let mut s = plan.bindings(&extra);
    let _ = writeln!(s, "const SB: u32 = {sb}u;");
    s.push_str(&plan.prelude(f64));
    s.push_str(functions);
    let _ = writeln!(
        s,
        "@compute @workgroup_size({WG})\nfn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {{"
    );
    let _ = writeln!(s, "    let i = gid.x + gid.y * nwg.x * {WG}u;");
    let _ = writeln!(s, "    if (i >= prm[0]) {{ return; }}");
    coords(&mut s, "i", "c", 1, rank);
    let _ = writeln!(
        s,
        "    let oo = u32(i32(prm[{out_base}u]){});",
        dot("c", out_base + 1, rank)
    );
    for j in 0..plan.leaves.len() {
        let b = leaf_base(j);
        let _ = writeln!(
            s,
            "    let o{j} = u32(i32(prm[{b}u]){});",
            dot("c", b + 1, rank)
        );
    }
    s.push_str(&plan.body);
    s.push_str(tail);
    for store in stores {
        s.push_str(store);
    }
    s.push_str("}\n");
    s
}

/// WGSL statements moving the `w` device words of one element: `dst[w·d + k] =
/// src[w·o + k]` for `from` = (src, o), or zeros where `from` is None.
pub(crate) fn moves(w: usize, dst: &str, d: &str, from: Option<(&str, &str)>) -> String {
    let mut s = String::new();
    for k in 0..w {
        let value = match from {
            Some((src, o)) => format!("{src}[{w}u * ({o}) + {k}u]"),
            None => "0u".to_string(),
        };
        let _ = writeln!(s, "        {dst}[{w}u * ({d}) + {k}u] = {value};");
    }
    s
}
