//! The elementwise operations: which dtypes each takes, the dtype it gives, and its WGSL.
//!
//! An operation's WGSL is an expression over its operands' device words (already converted
//! to the type it computes in). Narrow integers are wrapped back into range afterwards
//! (`DType::wrap`). Where WGSL's builtin differs from the standard's special cases (NaN in
//! `maximum`, `pow` of a negative base, division by zero for integers), a prelude function
//! gives the standard's answer; `docs/ARRAYS.md` lists what remains different.

use crate::array::cast::truth;
pub(crate) use crate::array::cast::{convert, zero};
use crate::array::dtype::{promote, DType, Kind};
use crate::error::{Error, Result};
use crate::kernels::prelude::{
    ARRAY_COMPLEX, ARRAY_MATH_F64_MORE, ARRAY_PRELUDE_F64, ARRAY_PRELUDE_I64,
};

/// Operations of one array.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[allow(missing_docs)] // the standard's names say what each is
pub enum Unary {
    Negative,
    Positive,
    Abs,
    Sign,
    Square,
    Sqrt,
    Exp,
    Expm1,
    Log,
    Log1p,
    Log2,
    Log10,
    Sin,
    Cos,
    Tan,
    Asin,
    Acos,
    Atan,
    Sinh,
    Cosh,
    Tanh,
    Asinh,
    Acosh,
    Atanh,
    Floor,
    Ceil,
    Round,
    Trunc,
    IsNan,
    IsInf,
    IsFinite,
    Signbit,
    LogicalNot,
    BitwiseInvert,
    Conj,
    Real,
    Imag,
}

/// Operations of two arrays (broadcast against each other).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[allow(missing_docs)]
pub enum Binary {
    Add,
    Subtract,
    Multiply,
    Divide,
    FloorDivide,
    Remainder,
    Pow,
    Maximum,
    Minimum,
    Equal,
    NotEqual,
    Less,
    LessEqual,
    Greater,
    GreaterEqual,
    LogicalAnd,
    LogicalOr,
    LogicalXor,
    BitwiseAnd,
    BitwiseOr,
    BitwiseXor,
    BitwiseLeftShift,
    BitwiseRightShift,
    Atan2,
    Copysign,
    Hypot,
    Logaddexp,
    Nextafter,
    /// `re + i·im` of two real operands, each part exactly as given (internal: not in
    /// [`Binary::ALL`]; `re + im·1j` would turn an infinite `im` into a NaN real part).
    Complex,
}

impl Unary {
    /// The standard's name.
    pub fn name(self) -> &'static str {
        use Unary::*;
        match self {
            Negative => "negative",
            Positive => "positive",
            Abs => "abs",
            Sign => "sign",
            Square => "square",
            Sqrt => "sqrt",
            Exp => "exp",
            Expm1 => "expm1",
            Log => "log",
            Log1p => "log1p",
            Log2 => "log2",
            Log10 => "log10",
            Sin => "sin",
            Cos => "cos",
            Tan => "tan",
            Asin => "asin",
            Acos => "acos",
            Atan => "atan",
            Sinh => "sinh",
            Cosh => "cosh",
            Tanh => "tanh",
            Asinh => "asinh",
            Acosh => "acosh",
            Atanh => "atanh",
            Floor => "floor",
            Ceil => "ceil",
            Round => "round",
            Trunc => "trunc",
            IsNan => "isnan",
            IsInf => "isinf",
            IsFinite => "isfinite",
            Signbit => "signbit",
            LogicalNot => "logical_not",
            BitwiseInvert => "bitwise_invert",
            Conj => "conj",
            Real => "real",
            Imag => "imag",
        }
    }

    /// The operation of a standard name.
    pub fn from_name(name: &str) -> Option<Unary> {
        Unary::ALL.into_iter().find(|u| u.name() == name)
    }

    /// Every unary operation.
    pub const ALL: [Unary; 37] = {
        use Unary::*;
        [
            Negative,
            Positive,
            Abs,
            Sign,
            Square,
            Sqrt,
            Exp,
            Expm1,
            Log,
            Log1p,
            Log2,
            Log10,
            Sin,
            Cos,
            Tan,
            Asin,
            Acos,
            Atan,
            Sinh,
            Cosh,
            Tanh,
            Asinh,
            Acosh,
            Atanh,
            Floor,
            Ceil,
            Round,
            Trunc,
            IsNan,
            IsInf,
            IsFinite,
            Signbit,
            LogicalNot,
            BitwiseInvert,
            Conj,
            Real,
            Imag,
        ]
    };

    fn transcendental(self) -> bool {
        use Unary::*;
        matches!(
            self,
            Sqrt | Exp
                | Expm1
                | Log
                | Log1p
                | Log2
                | Log10
                | Sin
                | Cos
                | Tan
                | Asin
                | Acos
                | Atan
                | Sinh
                | Cosh
                | Tanh
                | Asinh
                | Acosh
                | Atanh
        )
    }

    /// The dtype the operand is converted to before the operation, and the result's dtype.
    pub fn dtypes(self, x: DType) -> Result<(DType, DType)> {
        use Unary::*;
        let refuse = |expected: &str| {
            Err(Error::DType {
                op: self.name(),
                expected: expected.into(),
                found: x.name().into(),
            })
        };
        if x.is_complex() {
            // Only these have complex forms here; every other is refused, never computed on
            // a real part.
            return Ok(match self {
                Negative | Positive | Square | Conj | Sign | Round => (x, x),
                _ if self.transcendental() => (x, x),
                Abs | Real | Imag => (x, DType::Float32),
                IsNan | IsInf | IsFinite | LogicalNot => (x, DType::Bool),
                _ => return refuse("a real dtype (the standard defines it for real numbers only)"),
            });
        }
        Ok(match self {
            // float64 in f64 throughout: shaders/array_math_f64.wgsl (fdlibm's methods).
            _ if self.transcendental() && x == DType::Float64 => (x, x),
            Conj | Real if x == DType::Bool => return refuse("a numeric dtype"),
            Conj | Real => (x, x),
            Imag if x == DType::Bool => return refuse("a numeric dtype"),
            Imag => (x, x),
            // float16 is computed in f32 and rounded once (the result's `wrap`), as NumPy
            // does; integers and bool go to float32, as elsewhere in this library.
            _ if self.transcendental() && x == DType::Float16 => (x, x),
            _ if self.transcendental() => (DType::Float32, DType::Float32),
            Negative | Abs | Sign | Square | Positive | Floor | Ceil | Round | Trunc
                if x == DType::Bool =>
            {
                return refuse("a numeric dtype")
            }
            Negative | Positive | Abs | Sign | Square | Floor | Ceil | Round | Trunc => (x, x),
            IsNan | IsInf | IsFinite => (x, DType::Bool),
            Signbit if x.is_float() => (x, DType::Bool),
            Signbit => return refuse("a floating-point dtype"),
            LogicalNot => (x, DType::Bool),
            BitwiseInvert if x.is_float() => return refuse("an integer or boolean dtype"),
            BitwiseInvert => (x, x),
            _ => unreachable!("every case above"),
        })
    }

    /// WGSL for the operation on `a` (a word of the computing dtype `t`).
    pub(crate) fn wgsl(self, t: DType, a: &str) -> String {
        use Unary::*;
        let k = t.kind();
        if k == Kind::Complex {
            return match self {
                Negative => format!("(-{a})"),
                Positive => a.to_string(),
                Conj => format!("({a} * vec2<f32>(1.0, -1.0))"),
                Square => format!("cmul_({a}, {a})"),
                // shaders/array_complex.wgsl: `c` + the standard's name + `_`.
                Sign | Round => format!("c{}_({a})", self.name()),
                _ if self.transcendental() => format!("c{}_({a})", self.name()),
                Abs => format!("hypot_({a}.x, {a}.y)"),
                Real => format!("{a}.x"),
                Imag => format!("{a}.y"),
                IsNan => format!("u32(is_nan({a}.x) || is_nan({a}.y))"),
                IsInf => format!("u32(is_inf({a}.x) || is_inf({a}.y))"),
                IsFinite => format!(
                    "u32(!(is_nan({a}.x) || is_inf({a}.x) || is_nan({a}.y) || is_inf({a}.y)))"
                ),
                LogicalNot => format!("(1u - {})", convert(t, DType::Bool, a)),
                _ => unreachable!("refused by dtypes"),
            };
        }
        match self {
            Conj | Real => a.to_string(),
            Imag => zero(t).to_string(),
            Negative if k == Kind::Unsigned => format!("({} - {a})", zero(t)),
            Negative => format!("(-{a})"),
            Positive => a.to_string(),
            Abs if k == Kind::Unsigned => a.to_string(),
            Abs if t == DType::Int64 => format!("abs_i64({a})"),
            Abs => format!("abs({a})"),
            Sign if t == DType::Float64 => format!("sign_f64({a})"),
            Sign if t == DType::Int64 => format!("sign_i64({a})"),
            Sign if t == DType::UInt64 => format!("select(0lu, 1lu, {a} > 0lu)"),
            Sign => match k {
                Kind::Float => format!("select(sign({a}), {a}, is_nan({a}))"),
                Kind::Signed => format!("sign({a})"),
                _ => format!("select(0u, 1u, {a} > 0u)"),
            },
            Square => format!("({a} * {a})"),
            Sqrt => format!("sqrt({a})"),
            // shaders/array_math_f64.wgsl: the standard's name + `_m64` (the suffix tells
            // codegen to include that file).
            _ if t == DType::Float64 && self.transcendental() => {
                format!("{}_m64({a})", self.name())
            }
            Exp => format!("exp({a})"),
            Expm1 => format!("expm1_({a})"),
            Log => format!("log({a})"),
            Log1p => format!("log1p_({a})"),
            Log2 => format!("log2({a})"),
            Log10 => format!("(log2({a}) * 0.30102999566398120)"),
            Sin => format!("sin_({a})"),
            Cos => format!("cos_({a})"),
            Tan => format!("tan_({a})"),
            Asin => format!("asin_({a})"),
            Acos => format!("acos_({a})"),
            Atan => format!("atan_({a})"),
            Sinh => format!("sinh_({a})"),
            Cosh => format!("cosh_({a})"),
            // NaN kept: GLSL's tanh (wgpu's GL backend) gave -1 for NaN on llvmpipe.
            Tanh => format!("select(tanh({a}), {a}, is_nan({a}))"),
            Asinh => format!("asinh_({a})"),
            Acosh => format!("acosh_({a})"),
            Atanh => format!("atanh_({a})"),
            Floor | Ceil | Round | Trunc if k != Kind::Float => a.to_string(),
            Floor => format!("floor({a})"),
            Ceil => format!("ceil({a})"),
            Round => format!("round({a})"),
            Trunc => format!("trunc({a})"),
            IsNan if t == DType::Float64 => format!("u32(is_nan64({a}))"),
            IsInf if t == DType::Float64 => format!("u32(is_inf64({a}))"),
            IsFinite if t == DType::Float64 => format!("u32(!is_nan64({a}) && !is_inf64({a}))"),
            IsNan if k == Kind::Float => format!("u32(is_nan({a}))"),
            IsInf if k == Kind::Float => format!("u32(is_inf({a}))"),
            IsFinite if k == Kind::Float => format!("u32(!is_nan({a}) && !is_inf({a}))"),
            IsNan | IsInf => "0u".into(),
            IsFinite => "1u".into(),
            Signbit if t == DType::Float64 => format!("u32(bitcast<u64>({a}) >> 63u)"),
            Signbit => format!("(bitcast<u32>({a}) >> 31u)"),
            LogicalNot => format!("u32({a} == {})", zero(t)),
            BitwiseInvert if t == DType::Bool => format!("(1u - {a})"),
            BitwiseInvert => format!("(~{a})"),
        }
    }
}

impl Binary {
    /// The standard's name.
    pub fn name(self) -> &'static str {
        use Binary::*;
        match self {
            Add => "add",
            Subtract => "subtract",
            Multiply => "multiply",
            Divide => "divide",
            FloorDivide => "floor_divide",
            Remainder => "remainder",
            Pow => "pow",
            Maximum => "maximum",
            Minimum => "minimum",
            Equal => "equal",
            NotEqual => "not_equal",
            Less => "less",
            LessEqual => "less_equal",
            Greater => "greater",
            GreaterEqual => "greater_equal",
            LogicalAnd => "logical_and",
            LogicalOr => "logical_or",
            LogicalXor => "logical_xor",
            BitwiseAnd => "bitwise_and",
            BitwiseOr => "bitwise_or",
            BitwiseXor => "bitwise_xor",
            BitwiseLeftShift => "bitwise_left_shift",
            BitwiseRightShift => "bitwise_right_shift",
            Atan2 => "atan2",
            Copysign => "copysign",
            Hypot => "hypot",
            Logaddexp => "logaddexp",
            Nextafter => "nextafter",
            Complex => "complex",
        }
    }

    /// Every binary operation.
    pub const ALL: [Binary; 28] = {
        use Binary::*;
        [
            Add,
            Subtract,
            Multiply,
            Divide,
            FloorDivide,
            Remainder,
            Pow,
            Maximum,
            Minimum,
            Equal,
            NotEqual,
            Less,
            LessEqual,
            Greater,
            GreaterEqual,
            LogicalAnd,
            LogicalOr,
            LogicalXor,
            BitwiseAnd,
            BitwiseOr,
            BitwiseXor,
            BitwiseLeftShift,
            BitwiseRightShift,
            Atan2,
            Copysign,
            Hypot,
            Logaddexp,
            Nextafter,
        ]
    };

    /// The operation of a standard name.
    pub fn from_name(name: &str) -> Option<Binary> {
        Binary::ALL.into_iter().find(|b| b.name() == name)
    }

    /// The dtype both operands are converted to, and the result's dtype.
    pub fn dtypes(self, a: DType, b: DType) -> Result<(DType, DType)> {
        use Binary::*;
        let refuse = |expected: &str| {
            Err(Error::DType {
                op: self.name(),
                expected: expected.into(),
                found: format!("{a} and {b}"),
            })
        };
        if self == Complex {
            if a.is_complex() || b.is_complex() || a == DType::Float64 || b == DType::Float64 {
                return refuse("real parts that fit float32");
            }
            return Ok((DType::Float32, DType::Complex64));
        }
        let p = promote(a, b)?;
        if p.is_complex() {
            return match self {
                Add | Subtract | Multiply | Divide | Pow => Ok((p, p)),
                Equal | NotEqual => Ok((p, DType::Bool)),
                _ => refuse("real dtypes (complex64 takes add, subtract, multiply, divide, pow, equal, not_equal)"),
            };
        }
        if p == DType::Float64 {
            match self {
                // shaders/array_math_f64.wgsl computes them in f64.
                Pow | Atan2 | Hypot | Logaddexp | Nextafter | Divide | Copysign => {
                    return Ok((p, p))
                }
                _ => {}
            }
        }
        Ok(match self {
            Add | Subtract | Multiply | FloorDivide | Remainder | Pow | Maximum | Minimum
                if p == DType::Bool =>
            {
                return refuse("numeric dtypes")
            }
            Add | Subtract | Multiply | FloorDivide | Remainder | Pow | Maximum | Minimum => (p, p),
            Divide | Atan2 | Copysign | Hypot | Logaddexp | Nextafter if p == DType::Float16 => {
                (p, p)
            }
            Divide | Atan2 | Copysign | Hypot | Logaddexp | Nextafter => {
                (DType::Float32, DType::Float32)
            }
            Equal | NotEqual | Less | LessEqual | Greater | GreaterEqual => (p, DType::Bool),
            LogicalAnd | LogicalOr | LogicalXor => (p, DType::Bool),
            BitwiseAnd | BitwiseOr | BitwiseXor if p.is_float() => {
                return refuse("integer or boolean dtypes")
            }
            BitwiseAnd | BitwiseOr | BitwiseXor => (p, p),
            BitwiseLeftShift | BitwiseRightShift if !p.is_integer() => {
                return refuse("integer dtypes")
            }
            BitwiseLeftShift | BitwiseRightShift => (p, p),
            Complex => (DType::Float32, DType::Complex64), // returned above
        })
    }

    /// WGSL for the operation on `a` and `b` (words of the computing dtype `t`).
    pub(crate) fn wgsl(self, t: DType, a: &str, b: &str) -> String {
        use Binary::*;
        let k = t.kind();
        let s = wgsl_suffix(t);
        if k == Kind::Complex {
            return match self {
                Add => format!("({a} + {b})"),
                Subtract => format!("({a} - {b})"),
                Multiply => format!("cmul_({a}, {b})"),
                Divide => format!("cdiv_({a}, {b})"),
                Pow => format!("cpow_({a}, {b})"),
                Equal => format!("u32(all({a} == {b}))"),
                // NaN in either part differs from everything (see the real case below).
                NotEqual => format!(
                    "u32(any({a} != {b}) || is_nan({a}.x) || is_nan({a}.y) || is_nan({b}.x) || is_nan({b}.y))"
                ),
                _ => unreachable!("refused by dtypes"),
            };
        }
        match self {
            Add => format!("({a} + {b})"),
            Subtract => format!("({a} - {b})"),
            Multiply => format!("({a} * {b})"),
            Divide => format!("({a} / {b})"),
            FloorDivide => format!("floor_divide_{s}({a}, {b})"),
            Remainder => format!("remainder_{s}({a}, {b})"),
            Pow | Atan2 | Hypot | Logaddexp | Nextafter if t == DType::Float64 => {
                format!("{}_m64({a}, {b})", self.name())
            }
            Pow => format!("pow_{s}({a}, {b})"),
            Maximum if k == Kind::Float => format!("maximum_{s}({a}, {b})"),
            Minimum if k == Kind::Float => format!("minimum_{s}({a}, {b})"),
            Maximum if t.is_wide_int() => format!("select({b}, {a}, {a} > {b})"),
            Minimum if t.is_wide_int() => format!("select({b}, {a}, {a} < {b})"),
            Maximum => format!("max({a}, {b})"),
            Minimum => format!("min({a}, {b})"),
            Equal => format!("u32({a} == {b})"),
            // NaN differs from everything: the bits are tested, as a compiler may lower
            // `!=` to an ordered comparison (lavapipe does: `NaN != 0.0` came out false).
            NotEqual if t == DType::Float64 => {
                format!("u32({a} != {b} || is_nan64({a}) || is_nan64({b}))")
            }
            NotEqual if k == Kind::Float => {
                format!("u32({a} != {b} || is_nan({a}) || is_nan({b}))")
            }
            NotEqual => format!("u32({a} != {b})"),
            Less => format!("u32({a} < {b})"),
            LessEqual => format!("u32({a} <= {b})"),
            Greater => format!("u32({a} > {b})"),
            GreaterEqual => format!("u32({a} >= {b})"),
            LogicalAnd => format!("u32({} && {})", truth(t, a), truth(t, b)),
            LogicalOr => format!("u32({} || {})", truth(t, a), truth(t, b)),
            LogicalXor => format!("u32({} != {})", truth(t, a), truth(t, b)),
            BitwiseAnd => format!("({a} & {b})"),
            BitwiseOr => format!("({a} | {b})"),
            BitwiseXor => format!("({a} ^ {b})"),
            // The 64-bit forms need no width: nothing narrower wraps through them.
            BitwiseLeftShift if t.is_wide_int() => format!("shl_{s}({a}, {b})"),
            BitwiseLeftShift => format!("shl_{s}({a}, {b}, {}u)", t.bits()),
            BitwiseRightShift => format!("shr_{s}({a}, {b})"),
            Atan2 => format!("atan2_({a}, {b})"),
            Copysign if t == DType::Float64 => format!("copysign_f64({a}, {b})"),
            Copysign => format!(
                "bitcast<f32>((bitcast<u32>({a}) & 0x7fffffffu) | (bitcast<u32>({b}) & 0x80000000u))"
            ),
            Hypot => format!("hypot_({a}, {b})"),
            Logaddexp => format!("logaddexp_({a}, {b})"),
            // float16's neighbours, not float32's (which would round back to `a`).
            Nextafter if t == DType::Float16 => format!("nextafter_f16_({a}, {b})"),
            Nextafter => format!("nextafter_({a}, {b})"),
            Complex => format!("vec2<f32>({a}, {b})"),
        }
    }
}

fn wgsl_suffix(t: DType) -> &'static str {
    t.wgsl()
}

/// Functions the generated kernels call (`shaders/array_prelude.wgsl`): the standard's
/// answers where a WGSL builtin's differ, and the integer forms of floor division,
/// remainder, power and shifts; then the complex64 functions (`shaders/array_complex.wgsl`).
pub(crate) const PRELUDE: &str = ARRAY_COMPLEX.source;

/// The float64 functions (`shaders/array_prelude_f64.wgsl`), appended to [`PRELUDE`] only in
/// kernels that compute in float64 ([`crate::array::codegen::prelude`]).
pub(crate) const PRELUDE_F64: &str = ARRAY_PRELUDE_F64.source;

/// [`PRELUDE_F64`] followed by the float64 transcendental functions
/// (`shaders/array_math_f64.wgsl`, `shaders/array_math_f64_more.wgsl`), used instead of it only in kernels that call one (a
/// `…_m64(` in their source): the functions are long, and every other kernel would compile
/// them for nothing.
pub(crate) const PRELUDE_F64_MATH: &str = ARRAY_MATH_F64_MORE.source;
/// The int64/uint64 functions (`shaders/array_prelude_i64.wgsl`), appended to [`PRELUDE`]
/// only in kernels that compute in 64-bit integers or float64.
pub(crate) const PRELUDE_I64: &str = ARRAY_PRELUDE_I64.source;
