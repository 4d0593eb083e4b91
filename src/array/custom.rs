//! Kernels of the user's own WGSL over arrays: CuPy's `ElementwiseKernel` and
//! `ReductionKernel`, with WGSL snippets where CuPy takes CUDA C.
//!
//! A kernel is declared once with typed parameters (`"float32 x, T y"`: a dtype name, or a
//! type placeholder bound by the first input that uses it) and a snippet; each call lays its
//! inputs out with the same plan (`codegen::Plan`) the generated kernels use, so an input that is still a
//! lazy expression is computed inside the user's kernel (fused, not written out first), any
//! view is read in place and inputs broadcast together. The snippet is wrapped in a function
//! whose parameters are the declared names, so it sees nothing of the generated code around
//! it; the pipeline cache keys on the whole source, so a kernel compiles once per dtypes
//! and rank.

use std::fmt::Write as _;

use crate::array::array::{Array, Strided};
use crate::array::codegen::{elementwise_kernel, Plan};
use crate::array::dtype::{promote, DType, Kind};
use crate::array::eval::{alloc_words, elementwise_meta, launch, max_leaf_buffers};
use crate::array::layout::{broadcast_shapes, numel, Layout};
use crate::array::reduce::{fold_axes, normalize_axes, Fold};
use crate::error::{Error, Result};

/// A parameter's declared type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ParamType {
    /// A dtype.
    Fixed(DType),
    /// A placeholder (`T`), bound at each call by the first input declared with it.
    Generic(String),
}

/// A declared parameter: its type and name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Param {
    /// The type.
    pub ty: ParamType,
    /// The name the snippet uses.
    pub name: String,
}

/// Placeholders and the dtypes a call bound them to.
type Bound = Vec<(String, DType)>;

/// Each input's variable in a plan's body, and its dtype.
type Vars = Vec<(String, DType)>;

/// Names the wrapper function gives the snippet besides the parameters.
const RESERVED: [&str; 4] = ["i", "n", "a", "b"];

fn is_ident(s: &str) -> bool {
    let mut c = s.chars();
    matches!(c.next(), Some(f) if f.is_ascii_alphabetic())
        && c.all(|ch| ch.is_ascii_alphanumeric() || ch == '_')
}

/// Parses `"float32 x, T y"`; `reserved` are names the snippet's wrapper already uses.
pub fn parse_params(op: &'static str, spec: &str, reserved: &[&str]) -> Result<Vec<Param>> {
    let mut out: Vec<Param> = Vec::new();
    for part in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let words: Vec<&str> = part.split_whitespace().collect();
        let bad = |expected: &str| Error::InvalidArgument {
            op,
            name: "params",
            expected: expected.into(),
            found: format!("{part:?}"),
        };
        let [ty, name] = words[..] else {
            return Err(bad(
                "\"TYPE NAME\" pairs separated by commas (raw parameters are not supported)",
            ));
        };
        if !is_ident(name) || reserved.contains(&name) || out.iter().any(|p| p.name == name) {
            return Err(bad(&format!(
                "a new name (letters, digits, _; not {})",
                reserved.join(", ")
            )));
        }
        let ty = match DType::from_name(ty) {
            Ok(d) if d.words() != 1 => {
                return Err(bad(
                    "a 32-bit real or boolean dtype (not complex64 or float64)",
                ))
            }
            Ok(d) => ParamType::Fixed(d),
            Err(_) if is_ident(ty) && ty.chars().next().is_some_and(|c| c.is_ascii_uppercase()) => {
                ParamType::Generic(ty.to_string())
            }
            Err(_) => return Err(bad("a dtype name or a placeholder starting with a capital")),
        };
        out.push(Param {
            ty,
            name: name.to_string(),
        });
    }
    Ok(out)
}

/// The WGSL type a snippet sees for a dtype: `bool` as WGSL's `bool`, the rest as their word.
fn snippet_type(d: DType) -> &'static str {
    if d == DType::Bool {
        "bool"
    } else {
        d.wgsl()
    }
}

/// A snippet value of dtype `d` as that dtype's device word.
fn to_word(d: DType, v: &str) -> String {
    match d.kind() {
        Kind::Bool => format!("select(0u, 1u, {v})"),
        Kind::Float | Kind::Complex => format!("bitcast<u32>({})", d.wrap(v)),
        Kind::Signed => format!("bitcast<u32>({})", d.wrap(v)),
        Kind::Unsigned => d.wrap(v),
    }
}

/// The inputs converted to their parameters' dtypes, and the placeholders' bindings.
fn bind(op: &'static str, params: &[Param], inputs: &[Array]) -> Result<(Vec<Array>, Bound)> {
    if inputs.len() != params.len() || inputs.is_empty() {
        return Err(Error::InvalidArgument {
            op,
            name: "inputs",
            expected: format!("{} arrays (at least one)", params.len()),
            found: inputs.len().to_string(),
        });
    }
    for x in &inputs[1..] {
        inputs[0].check_device(x, op)?;
    }
    let mut bound: Bound = Vec::new();
    let mut cast = Vec::with_capacity(inputs.len());
    for (p, x) in params.iter().zip(inputs) {
        if x.dtype().words() != 1 {
            return Err(Error::DType {
                op,
                expected: "32-bit real or boolean inputs (snippets see one device word per element; not complex64 or float64)"
                    .into(),
                found: format!("{} for {}", x.dtype(), p.name),
            });
        }
        let (want, exact) = match &p.ty {
            ParamType::Fixed(d) => (*d, false),
            ParamType::Generic(t) => match bound.iter().find(|(n, _)| n == t) {
                Some((_, d)) => (*d, true),
                None => {
                    bound.push((t.clone(), x.dtype()));
                    (x.dtype(), true)
                }
            },
        };
        // A placeholder takes one dtype (as CuPy's do); a declared dtype also takes inputs
        // that convert to it without changing any value.
        if x.dtype() != want && (exact || !converts_exactly(x.dtype(), want)) {
            return Err(Error::DType {
                op,
                expected: format!(
                    "{} for {} (or a dtype that converts to it exactly)",
                    want, p.name
                ),
                found: x.dtype().to_string(),
            });
        }
        cast.push(x.astype(want)?);
    }
    Ok((cast, bound))
}

/// Whether every value of `from` is a value of `to`.
fn converts_exactly(from: DType, to: DType) -> bool {
    match (from.kind(), to.kind()) {
        (Kind::Bool, _) => true,
        // Within the significand: 24 bits for float32, 11 for float16.
        (Kind::Signed | Kind::Unsigned, Kind::Float) => {
            from.bits() < if to == DType::Float16 { 11 } else { 24 }
        }
        (Kind::Float, Kind::Float) => from.bits() <= to.bits(),
        (_, Kind::Float) => false,
        _ => promote(from, to).ok() == Some(to),
    }
}

fn resolve(op: &'static str, p: &Param, bound: &[(String, DType)]) -> Result<DType> {
    match &p.ty {
        ParamType::Fixed(d) => Ok(*d),
        ParamType::Generic(t) => bound
            .iter()
            .find(|(n, _)| n == t)
            .map(|(_, d)| *d)
            .ok_or_else(|| Error::InvalidArgument {
                op,
                name: "params",
                expected: format!("placeholder {t} of {} bound by an input", p.name),
                found: "no input declared with it".into(),
            }),
    }
}

/// Plans the inputs over their broadcast shape, evaluating lazy inputs first if together
/// they would read more buffers than a kernel can bind beside `outputs` outputs.
fn plan_inputs(
    op: &'static str,
    inputs: &[Array],
    outputs: usize,
) -> Result<(Plan, Vars, Vec<usize>)> {
    let shapes: Vec<&[usize]> = inputs.iter().map(|x| x.shape()).collect();
    let full = broadcast_shapes(op, &shapes)?;
    let refs: Vec<&Array> = inputs.iter().collect();
    let (mut plan, mut vars) = Plan::build_many(&refs, &full)?;
    // Storage bindings a kernel may use: the inputs' buffers, the outputs and the metadata.
    let slots = max_leaf_buffers(inputs[0].device()) + 3;
    if outputs + 2 > slots {
        return Err(Error::InvalidArgument {
            op,
            name: "out_params",
            expected: format!("at most {} outputs on this device", slots - 2),
            found: outputs.to_string(),
        });
    }
    let limit = slots - 1 - outputs;
    if plan.buffers.len() > limit {
        for x in inputs {
            x.eval()?;
        }
        (plan, vars) = Plan::build_many(&refs, &full)?;
        if plan.buffers.len() > limit {
            return Err(Error::InvalidArgument {
                op,
                name: "inputs",
                expected: format!("at most {limit} distinct buffers on this device"),
                found: plan.buffers.len().to_string(),
            });
        }
    }
    Ok((plan, vars, full))
}

/// The snippet's arguments: each input's variable as its parameter's WGSL type.
fn arguments(vars: &[(String, DType)]) -> Vec<String> {
    vars.iter()
        .map(|(v, d)| {
            if *d == DType::Bool {
                format!("({v} != 0u)")
            } else {
                v.clone()
            }
        })
        .collect()
}

/// `a, b` → `x: f32, y: i32` for the snippet's wrapper.
fn signature(params: &[Param], dtypes: &[DType]) -> String {
    params
        .iter()
        .zip(dtypes)
        .map(|(p, d)| format!("{}: {}", p.name, snippet_type(*d)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A statement snippet ends with `;` (CuPy's operations may leave it out).
fn statement(s: &str) -> String {
    let t = s.trim();
    if t.ends_with(';') || t.ends_with('}') {
        t.to_string()
    } else {
        format!("{t};")
    }
}

/// CuPy's `ElementwiseKernel`: a WGSL snippet run once per element of the inputs' broadcast
/// shape, assigning the outputs by name.
///
/// ```no_run
/// use suanli::array::{custom::ElementwiseKernel, Array};
/// use suanli::Device;
/// let dev = Device::open("auto")?;
/// let k = ElementwiseKernel::new("T x, T y", "T z", "z = (x - y) * (x - y)", "squared_diff")?;
/// let x = Array::from_f32(&dev, &[1.0, 2.0, 3.0], &[3])?;
/// let z = &k.call(&[x.clone(), x.mul_scalar(2.0)?])?[0];
/// # Ok::<(), suanli::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct ElementwiseKernel {
    name: String,
    inputs: Vec<Param>,
    outputs: Vec<Param>,
    operation: String,
    preamble: String,
}

impl ElementwiseKernel {
    /// Declares a kernel: `operation` is WGSL statements over the input names (read-only),
    /// the output names (variables starting at zero), `i` (the element's position in C order)
    /// and `n` (the number of elements).
    pub fn new(in_params: &str, out_params: &str, operation: &str, name: &str) -> Result<Self> {
        const OP: &str = "ElementwiseKernel";
        let inputs = parse_params(OP, in_params, &RESERVED[..2])?;
        let mut reserved: Vec<&str> = RESERVED[..2].to_vec();
        reserved.extend(inputs.iter().map(|p| p.name.as_str()));
        let outputs = parse_params(OP, out_params, &reserved)?;
        if outputs.is_empty() || !is_ident(name) {
            return Err(Error::InvalidArgument {
                op: OP,
                name: "out_params/name",
                expected: "at least one output, and a name of letters, digits and _".into(),
                found: format!("{out_params:?}, {name:?}"),
            });
        }
        Ok(ElementwiseKernel {
            name: name.to_string(),
            inputs,
            outputs,
            operation: statement(operation),
            preamble: String::new(),
        })
    }

    /// WGSL put before the kernel at module scope (helper functions, constants), as CuPy's
    /// `preamble`.
    pub fn with_preamble(mut self, preamble: &str) -> Self {
        self.preamble = preamble.to_string();
        self
    }

    /// The declared inputs.
    pub fn inputs(&self) -> &[Param] {
        &self.inputs
    }

    /// The declared outputs.
    pub fn outputs(&self) -> &[Param] {
        &self.outputs
    }

    /// Runs the kernel over `inputs` (one per input parameter, broadcast together; an input
    /// of another dtype is converted where that keeps every value): the outputs, new
    /// contiguous arrays of the broadcast shape. The kernel is queued; nothing waits.
    pub fn call(&self, inputs: &[Array]) -> Result<Vec<Array>> {
        const OP: &str = "ElementwiseKernel";
        let (inputs, bound) = bind(OP, &self.inputs, inputs)?;
        let out_dtypes: Vec<DType> = self
            .outputs
            .iter()
            .map(|p| resolve(OP, p, &bound))
            .collect::<Result<_>>()?;
        let device = inputs[0].device().clone();
        let (plan, vars, full) = plan_inputs(OP, &inputs, self.outputs.len())?;
        let in_dtypes: Vec<DType> = inputs.iter().map(Array::dtype).collect();
        let mut f = self.preamble.clone();
        f.push_str("\nstruct Outputs_ {\n");
        for (p, d) in self.outputs.iter().zip(&out_dtypes) {
            let _ = writeln!(f, "    {}: {},", p.name, snippet_type(*d));
        }
        let _ = writeln!(
            f,
            "}}\nfn {}_(i: u32, n: u32, {}) -> Outputs_ {{",
            self.name,
            signature(&self.inputs, &in_dtypes)
        );
        for (p, d) in self.outputs.iter().zip(&out_dtypes) {
            let _ = writeln!(f, "    var {}: {};", p.name, snippet_type(*d));
        }
        let names: Vec<&str> = self.outputs.iter().map(|p| p.name.as_str()).collect();
        let _ = writeln!(
            f,
            "    {}\n    return Outputs_({});\n}}",
            self.operation,
            names.join(", ")
        );
        let tail = format!(
            "    let r_ = {}_(i, prm[0], {});\n",
            self.name,
            arguments(&vars).join(", ")
        );
        let words: Vec<String> = self
            .outputs
            .iter()
            .zip(&out_dtypes)
            .enumerate()
            .map(|(k, (p, d))| {
                format!(
                    "    out{k}[oo] = {};\n",
                    to_word(*d, &format!("r_.{}", p.name))
                )
            })
            .collect();
        let n = numel(&full);
        let outs: Vec<Strided> = (0..words.len())
            .map(|_| {
                Ok(Strided {
                    data: alloc_words(&device, n)?,
                    layout: Layout::contiguous(&full),
                })
            })
            .collect::<Result<_>>()?;
        let (meta, rank) = elementwise_meta(&plan, &outs[0].layout);
        // The snippet computes in float64 only with a float64 parameter.
        let wide = in_dtypes
            .iter()
            .chain(&out_dtypes)
            .any(|&d| d == DType::Float64);
        let source = elementwise_kernel(&plan, rank, &f, &tail, &words, wide);
        let writes: Vec<_> = outs.iter().map(|o| &o.data).collect();
        launch(
            &device,
            &format!("elementwise_kernel:{}", self.name),
            &source,
            &plan.buffers,
            &writes,
            &meta,
            n as u64,
        )?;
        Ok(outs
            .into_iter()
            .zip(out_dtypes)
            .map(|(s, d)| Array::from_strided(&device, d, s))
            .collect())
    }
}

/// CuPy's `ReductionKernel`: each element mapped by a WGSL expression over the inputs, the
/// mapped values combined pairwise by another (`a` and `b`), and each result finished by
/// statements that assign the output from `a`.
#[derive(Clone, Debug)]
pub struct ReductionKernel {
    name: String,
    inputs: Vec<Param>,
    output: Param,
    map_expr: String,
    reduce_expr: String,
    post_map: String,
    identity: String,
    reduce_type: Option<ParamType>,
    preamble: String,
}

impl ReductionKernel {
    /// Declares a reduction: `map_expr` over the input names, `reduce_expr` over `a` and `b`
    /// (associative and commutative: the order of combination is fixed per shape, but
    /// elements are interleaved across chunks, not folded left to right),
    /// `post_map` statements over `a` assigning the output, and `identity` a WGSL expression
    /// that `reduce_expr` leaves any value unchanged with (the result of an empty reduction).
    pub fn new(
        in_params: &str,
        out_params: &str,
        map_expr: &str,
        reduce_expr: &str,
        post_map: &str,
        identity: &str,
        name: &str,
    ) -> Result<Self> {
        const OP: &str = "ReductionKernel";
        let inputs = parse_params(OP, in_params, &RESERVED)?;
        let mut reserved: Vec<&str> = RESERVED.to_vec();
        reserved.extend(inputs.iter().map(|p| p.name.as_str()));
        let outputs = parse_params(OP, out_params, &reserved)?;
        let [output] = &outputs[..] else {
            return Err(Error::InvalidArgument {
                op: OP,
                name: "out_params",
                expected: "exactly one output".into(),
                found: format!("{out_params:?}"),
            });
        };
        if !is_ident(name) || identity.trim().is_empty() {
            return Err(Error::InvalidArgument {
                op: OP,
                name: "name/identity",
                expected: "a name of letters, digits and _, and an identity".into(),
                found: format!("{name:?}, {identity:?}"),
            });
        }
        Ok(ReductionKernel {
            name: name.to_string(),
            inputs,
            output: output.clone(),
            map_expr: map_expr.trim().to_string(),
            reduce_expr: reduce_expr.trim().to_string(),
            post_map: statement(post_map),
            identity: identity.trim().to_string(),
            reduce_type: None,
            preamble: String::new(),
        })
    }

    /// The type the values are mapped to and combined in (a dtype or a bound placeholder;
    /// by default the output's), as CuPy's `reduce_type`.
    pub fn with_reduce_type(mut self, ty: &str) -> Result<Self> {
        let p = parse_params("ReductionKernel", &format!("{ty} reduce_type"), &[])?;
        let [p] = &p[..] else {
            return Err(Error::InvalidArgument {
                op: "ReductionKernel",
                name: "reduce_type",
                expected: "one dtype name or placeholder".into(),
                found: format!("{ty:?}"),
            });
        };
        self.reduce_type = Some(p.ty.clone());
        Ok(self)
    }

    /// WGSL put before the kernel at module scope, as CuPy's `preamble`.
    pub fn with_preamble(mut self, preamble: &str) -> Self {
        self.preamble = preamble.to_string();
        self
    }

    /// The declared inputs.
    pub fn inputs(&self) -> &[Param] {
        &self.inputs
    }

    /// Reduces over `axes` (None: all) of the inputs' broadcast shape, keeping them as
    /// extent 1 when `keepdims`. The combination order depends only on the shape, so a
    /// result is the same every run.
    pub fn call(&self, inputs: &[Array], axes: Option<&[isize]>, keepdims: bool) -> Result<Array> {
        const OP: &str = "ReductionKernel";
        let (inputs, bound) = bind(OP, &self.inputs, inputs)?;
        let out = resolve(OP, &self.output, &bound)?;
        let acc = match &self.reduce_type {
            Some(ty) => resolve(
                OP,
                &Param {
                    ty: ty.clone(),
                    name: "reduce_type".into(),
                },
                &bound,
            )?,
            None => out,
        };
        if acc == DType::Bool {
            return Err(Error::DType {
                op: OP,
                expected: "a numeric reduce type (combine booleans as uint32)".into(),
                found: "bool".into(),
            });
        }
        let device = inputs[0].device().clone();
        // The reduction passes bind two outputs (values, and positions for arg reductions).
        let (plan, vars, full) = plan_inputs(OP, &inputs, 2)?;
        let axes = normalize_axes(OP, full.len(), axes)?;
        let out_shape: Vec<usize> = (0..full.len())
            .filter_map(|a| match (axes.contains(&a), keepdims) {
                (false, _) => Some(full[a]),
                (true, true) => Some(1),
                (true, false) => None,
            })
            .collect();
        let kshape: Vec<usize> = (0..full.len())
            .filter(|a| !axes.contains(a))
            .map(|a| full[a])
            .collect();
        if numel(&kshape) == 0 {
            return Array::empty(&device, &out_shape, out);
        }
        let (r, w, o) = (acc.wgsl(), snippet_type(acc), snippet_type(out));
        let in_dtypes: Vec<DType> = inputs.iter().map(Array::dtype).collect();
        let mut f = self.preamble.clone();
        let _ = writeln!(
            f,
            "\nfn {n}_map({sig}) -> {w} {{ return {w}({m}); }}\nfn {n}_reduce(a: {w}, b: {w}) -> {w} {{ return {w}({red}); }}\nfn {n}_post(a: {w}) -> {o} {{\n    var {y}: {o};\n    {p}\n    return {y};\n}}\nfn {n}_finish(a: {r}) -> {ow} {{ return {word}; }}",
            n = self.name,
            sig = signature(&self.inputs, &in_dtypes),
            m = self.map_expr,
            red = self.reduce_expr,
            y = self.output.name,
            p = self.post_map,
            ow = out.wgsl(),
            word = from_word(out, &to_word(out, &format!("{}_post(a)", self.name))),
        );
        let step = |v: &str, _: &str| format!("    acc = {}_reduce(acc, {v});\n", self.name);
        let fold = Fold {
            acc,
            arg: false,
            functions: f,
            init: format!(
                "    var acc: {r} = {r}({});\n    var comp: {r} = acc;\n    var idx: u32 = 0xffffffffu;\n",
                self.identity
            ),
            step: &step,
            finish: Some((out, format!("{}_finish", self.name))),
        };
        let r_total = numel(&full) / numel(&kshape);
        let data = if r_total == 0 {
            // Nothing to map: each output is the identity finished, folded once over a
            // stand-in axis (identity combined with itself is the identity).
            let mut shape = kshape.clone();
            shape.push(1);
            let empty = Plan::build_many(&[], &shape)?.0;
            let last = [shape.len() - 1];
            fold_axes(
                &device,
                OP,
                &empty,
                &format!("{r}({})", self.identity),
                &shape,
                &last,
                &fold,
            )?
        } else {
            let value = format!("{}_map({})", self.name, arguments(&vars).join(", "));
            fold_axes(&device, OP, &plan, &value, &full, &axes, &fold)?
        };
        Ok(Array::from_strided(
            &device,
            out,
            Strided {
                data,
                layout: Layout::contiguous(&out_shape),
            },
        ))
    }
}

/// A device word back to dtype `d`'s word type (`u32` words stay as they are).
fn from_word(d: DType, w: &str) -> String {
    match d.wgsl() {
        "u32" => w.to_string(),
        t => format!("bitcast<{t}>({w})"),
    }
}
