// The float64 functions the generated array kernels call (src/array/ops.rs), appended to
// array_prelude.wgsl only in kernels that compute in float64: a module declaring f64 or u64
// is invalid on an adapter without SHADER_F64 and SHADER_INT64, even where unused. NaN and
// infinity are tested on the bits (a compiler may assume no NaN in float compares); only
// operations that IEEE rounds exactly or that are exact on the bits are here: Vulkan's
// GLSL.std.450 exp, log, sin, pow… are defined for 16- and 32-bit floats only.
fn bits64_(x: f64) -> u64 { return bitcast<u64>(x); }
fn nan64_() -> f64 { return bitcast<f64>(0x7ff8000000000000lu); }
fn is_nan64(x: f64) -> bool { return (bits64_(x) & 0x7ffffffffffffffflu) > 0x7ff0000000000000lu; }
fn is_inf64(x: f64) -> bool { return (bits64_(x) & 0x7ffffffffffffffflu) == 0x7ff0000000000000lu; }
// A cast to int32/uint32 as the float32 forms: NaN is 0, out-of-range values saturate.
fn f64_to_i32(x: f64) -> i32 {
    if (is_nan64(x)) { return 0i; }
    return i32(clamp(x, -2147483648.0lf, 2147483647.0lf));
}
fn f64_to_u32(x: f64) -> u32 {
    if (is_nan64(x)) { return 0u; }
    if (x < 0.0lf) { return bitcast<u32>(f64_to_i32(x)); }
    return u32(min(x, 4294967295.0lf));
}
// x as f32 rounded to odd (an inexact result gets an odd last bit, the neighbour on x's
// side), for the cast to float16: rounding f64 -> f32 -> f16 to nearest twice could land
// exactly on a float16 midpoint and tie the wrong way; with the f32 step rounded to odd
// (29 more bits than binary16) the second rounding is the correct one.
fn f64_to_f32_odd(x: f64) -> f32 {
    let f = f32(x);
    let b = bitcast<u32>(f);
    if (is_nan64(x) || f64(f) == x || (b & 1u) == 1u) { return f; }
    // |f| and |x| compare as the magnitudes the bits encode (the sign bit is shared).
    return bitcast<f32>(select(b - 1u, b + 1u, abs(x) > abs(f64(f))));
}
fn maximum_f64(a: f64, b: f64) -> f64 {
    if (is_nan64(a) || is_nan64(b)) { return a + b; }
    return max(a, b);
}
fn minimum_f64(a: f64, b: f64) -> f64 {
    if (is_nan64(a) || is_nan64(b)) { return a + b; }
    return min(a, b);
}
fn copysign_f64(a: f64, b: f64) -> f64 {
    return bitcast<f64>((bits64_(a) & 0x7ffffffffffffffflu) | (bits64_(b) & 0x8000000000000000lu));
}
// On the bits: Mesa folds the comparisons into its FSign, which gives -0 for -0 (the
// standard's sign(-0) is +0).
fn sign_f64(a: f64) -> f64 {
    let b = bits64_(a);
    if (is_nan64(a)) { return a; }
    if ((b << 1u) == 0lu) { return bitcast<f64>(0lu); }
    return bitcast<f64>((b & 0x8000000000000000lu) | 0x3ff0000000000000lu);
}
// Floor division and remainder as NumPy's divmod: the remainder from an exact fmod (the
// mantissas' long division in integers, musl's fmod), taking the divisor's sign; the
// quotient (a - r) / b snapped to an integer.
fn fmod_f64(x: f64, y: f64) -> f64 {
    var ux = bits64_(x);
    var uy = bits64_(y);
    var ex = i32((ux >> 52u) & 0x7fflu);
    var ey = i32((uy >> 52u) & 0x7fflu);
    let sx = ux & 0x8000000000000000lu;
    if ((uy << 1u) == 0lu || is_nan64(y) || ex == 0x7ff) { return nan64_(); }
    if ((ux << 1u) <= (uy << 1u)) {
        if ((ux << 1u) == (uy << 1u)) { return bitcast<f64>(sx); }
        return x;
    }
    if (ex == 0) {
        var i = ux << 12u;
        ex = 0;
        while ((i >> 63u) == 0lu) { ex = ex - 1; i = i << 1u; }
        ux = ux << u32(1 - ex);
    } else {
        ux = (ux & 0x000ffffffffffffflu) | 0x0010000000000000lu;
    }
    if (ey == 0) {
        var i = uy << 12u;
        ey = 0;
        while ((i >> 63u) == 0lu) { ey = ey - 1; i = i << 1u; }
        uy = uy << u32(1 - ey);
    } else {
        uy = (uy & 0x000ffffffffffffflu) | 0x0010000000000000lu;
    }
    while (ex > ey) {
        let i = ux - uy;
        if ((i >> 63u) == 0lu) {
            if (i == 0lu) { return bitcast<f64>(sx); }
            ux = i;
        }
        ux = ux << 1u;
        ex = ex - 1;
    }
    let i = ux - uy;
    if ((i >> 63u) == 0lu) {
        if (i == 0lu) { return bitcast<f64>(sx); }
        ux = i;
    }
    while ((ux >> 52u) == 0lu) { ux = ux << 1u; ex = ex - 1; }
    if (ex > 0) {
        ux = (ux - 0x0010000000000000lu) | (u64(u32(ex)) << 52u);
    } else {
        ux = ux >> u32(1 - ex);
    }
    return bitcast<f64>(ux | sx);
}
// npy_divmod, as divmod_f32 in array_prelude.wgsl.
fn divmod_f64(a: f64, b: f64) -> array<f64, 2> {
    if (b == 0.0lf) { return array<f64, 2>(a / b, nan64_()); }
    if (is_nan64(a) || is_nan64(b) || is_inf64(a)) { return array<f64, 2>(nan64_(), nan64_()); }
    var m = fmod_f64(a, b);
    var div = (a - m) / b;
    if (m != 0.0lf) {
        if ((b < 0.0lf) != (m < 0.0lf)) {
            m = m + b;
            div = div - 1.0lf;
        }
    } else {
        m = bitcast<f64>(bits64_(b) & 0x8000000000000000lu);
    }
    if (div == 0.0lf) {
        return array<f64, 2>(bitcast<f64>(bits64_(a / b) & 0x8000000000000000lu), m);
    }
    var q = floor(div);
    if (div - q > 0.5lf) { q = q + 1.0lf; }
    return array<f64, 2>(q, m);
}
fn remainder_f64(a: f64, b: f64) -> f64 { return divmod_f64(a, b)[1]; }
// The standard's floor_divide with infinities, as floor_divide_f32 in array_prelude.wgsl.
fn floor_divide_f64(a: f64, b: f64) -> f64 {
    let neg = (bitcast<u64>(a) ^ bitcast<u64>(b)) & 0x8000000000000000lu;
    if (is_inf64(a) && !is_inf64(b) && !is_nan64(b)) { return bitcast<f64>(0x7ff0000000000000lu | neg); }
    if (is_inf64(b) && !is_inf64(a) && !is_nan64(a)) { return bitcast<f64>(neg); }
    return divmod_f64(a, b)[0];
}
// A cast to int64/uint64: NaN is 0, out-of-range values saturate (2^63, 2^64 exact in f64).
fn f64_to_i64(x: f64) -> i64 {
    if (is_nan64(x)) { return 0li; }
    if (x >= 9223372036854775808.0lf) { return bitcast<i64>(0x7ffffffffffffffflu); }
    if (x < -9223372036854775808.0lf) { return bitcast<i64>(0x8000000000000000lu); }
    return i64(x);
}
fn f64_to_u64(x: f64) -> u64 {
    if (is_nan64(x)) { return 0lu; }
    if (x < 0.0lf) { return bitcast<u64>(f64_to_i64(x)); }
    if (x >= 18446744073709551616.0lf) { return 0xfffffffffffffffflu; }
    return u64(x);
}
