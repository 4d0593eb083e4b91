//! The WGSL of a cast between dtypes, for `astype` and for the conversions an operation
//! makes before computing (to its computing dtype) and after (to its result's): integers wrap
//! to the target's width as NumPy's casts do, floats to integers truncate (NaN 0,
//! out-of-range values saturating), complex to real takes the real part (only where
//! `astype` allows it). The 64-bit integers have their own table, [`convert64`], because no
//! WGSL conversion there may change signedness and width at once.

use crate::array::dtype::{DType, Kind};

/// WGSL converting `a`, a word of dtype `from`, to a word of dtype `to` (wrapped to range).
pub(crate) fn convert(from: DType, to: DType, a: &str) -> String {
    if from == to {
        return a.to_string();
    }
    if from.is_wide_int() || to.is_wide_int() {
        return convert64(from, to, a);
    }
    let raw = match (from.kind(), to.kind()) {
        // NaN in either part is true, tested on the bits as below.
        (Kind::Complex, Kind::Bool) => {
            format!("u32(any((bitcast<vec2<u32>>({a}) & vec2<u32>(0x7fffffffu)) != vec2<u32>(0u)))")
        }
        // Only reached through explicit requests that `astype` vets: the real part.
        (Kind::Complex, Kind::Float) => format!("{a}.x"),
        (Kind::Complex, _) => return convert(DType::Float32, to, &format!("{a}.x")),
        (Kind::Float, Kind::Complex) if from == DType::Float64 => {
            format!("vec2<f32>(f32({a}), 0.0)")
        }
        (Kind::Float, Kind::Complex) => format!("vec2<f32>({a}, 0.0)"),
        (_, Kind::Complex) => format!("vec2<f32>(f32({a}), 0.0)"),
        (Kind::Float, Kind::Bool) if from == DType::Float64 => format!("u32({})", truth(from, a)),
        (Kind::Float, Kind::Signed) if from == DType::Float64 => format!("f64_to_i32({a})"),
        (Kind::Float, Kind::Unsigned) if from == DType::Float64 => format!("f64_to_u32({a})"),
        (Kind::Float, Kind::Float) if from == DType::Float64 && to == DType::Float16 => {
            format!("f64_to_f32_odd({a})")
        }
        // NaN is true, as in NumPy: test the bits, not `!= 0.0` (compilers may assume no NaN).
        (Kind::Float, Kind::Bool) => format!("u32((bitcast<u32>({a}) & 0x7fffffffu) != 0u)"),
        (_, Kind::Bool) => format!("u32({a} != {})", zero(from)),
        (Kind::Float, Kind::Signed) => format!("f32_to_i32({a})"),
        (Kind::Float, Kind::Unsigned) => format!("f32_to_u32({a})"),
        _ => format!("{}({a})", to.wgsl()),
    };
    if to == DType::Bool {
        raw
    } else {
        to.wrap(&raw)
    }
}

/// [`convert`] where either side is `int64` or `uint64`. Integers wrap to the target's
/// width (NumPy's casts between integers), through the bits so that no conversion mixes
/// signedness and width at once; to float32/float64 one rounding (the integer-to-float
/// conversion rounds to nearest); floats to int64 truncate, NaN 0, saturating.
fn convert64(from: DType, to: DType, a: &str) -> String {
    // `from` as a u64 holding its bits (sign-extended for signed types).
    let bits = |a: &str| -> String {
        match from {
            DType::Int64 => format!("bitcast<u64>({a})"),
            DType::UInt64 => a.to_string(),
            // Sign-extended by bits, not by `i64(…)`: lavapipe (Mesa 22.3, LLVM 15) miscompiles
            // comparisons of an OpSConvert-widened value with constants (`i64(-3) < 5li` was
            // false), which broke every 64-bit helper fed a narrower signed operand.
            d if d.kind() == Kind::Signed => {
                format!("((u64(bitcast<u32>({a})) ^ 0x80000000lu) - 0x80000000lu)")
            }
            _ => format!("u64({a})"),
        }
    };
    match (from.kind(), to) {
        (Kind::Float, DType::Int64) if from == DType::Float64 => format!("f64_to_i64({a})"),
        (Kind::Float, DType::UInt64) if from == DType::Float64 => format!("f64_to_u64({a})"),
        (Kind::Float, DType::Int64) => format!("f32_to_i64({a})"),
        (Kind::Float, DType::UInt64) => format!("f32_to_u64({a})"),
        (Kind::Complex, _) => convert(DType::Float32, to, &format!("{a}.x")),
        (_, DType::Int64) => format!("bitcast<i64>({})", bits(a)),
        (_, DType::UInt64) => bits(a),
        // From int64/uint64 on.
        (_, DType::Bool) => format!("u32({a} != {})", zero(from)),
        (_, DType::Float32) => format!("f32({a})"),
        (_, DType::Float64) => format!("f64({a})"),
        // Exact below 2^24, and every larger integer rounds to infinity in binary16.
        (_, DType::Float16) => DType::Float16.wrap(&format!("f32({a})")),
        (_, DType::Complex64) => format!("vec2<f32>(f32({a}), 0.0)"),
        (_, d) => {
            let low = format!("u32({} & 0xfffffffflu)", bits(a));
            let w = if d.kind() == Kind::Signed {
                format!("bitcast<i32>({low})")
            } else {
                low
            };
            d.wrap(&w)
        }
    }
}

/// WGSL for "`a` is not zero" (NaN is true, -0.0 false: the bits are tested for floats).
pub(crate) fn truth(t: DType, a: &str) -> String {
    if t == DType::Float64 {
        return format!("((bitcast<u64>({a}) & 0x7ffffffffffffffflu) != 0lu)");
    }
    match t.kind() {
        Kind::Float => format!("((bitcast<u32>({a}) & 0x7fffffffu) != 0u)"),
        _ => format!("({a} != {})", zero(t)),
    }
}

/// WGSL's zero of a dtype's word type.
pub(crate) fn zero(t: DType) -> &'static str {
    match t {
        DType::Int64 => return "0li",
        DType::UInt64 => return "0lu",
        _ => {}
    }
    match t.kind() {
        Kind::Float => "0.0",
        Kind::Complex => "vec2<f32>(0.0)",
        Kind::Signed => "0i",
        _ => "0u",
    }
}
