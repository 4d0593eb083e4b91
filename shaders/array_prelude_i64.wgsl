// The int64/uint64 functions the generated array kernels call (src/array/ops.rs), appended
// to array_prelude.wgsl only in kernels that compute in 64-bit integers (or float64): a
// module declaring i64 or u64 is invalid on an adapter without SHADER_INT64, even where
// unused. They are the 32-bit forms of array_prelude.wgsl at twice the width: NumPy's
// floor division and remainder signs, 0 for division by zero, shifts past the width 0
// (a right shift of a negative value -1), wrapping arithmetic.
// NaN tested on the bits (valid WGSL by itself: no call into array_prelude.wgsl).
fn nan32_(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u; }
fn i64_min_() -> i64 { return bitcast<i64>(0x8000000000000000lu); }
fn i64_max_() -> i64 { return bitcast<i64>(0x7ffffffffffffffflu); }
// A cast of a float32 to int64/uint64: NaN is 0, out-of-range values saturate (NumPy leaves
// them undefined; an unclamped conversion is undefined in SPIR-V too). 2^63 and 2^64 are
// exact in f32.
fn f32_to_i64(x: f32) -> i64 {
    if (nan32_(x)) { return 0li; }
    if (x >= 9223372036854775808.0) { return i64_max_(); }
    if (x < -9223372036854775808.0) { return i64_min_(); }
    return i64(x);
}
fn f32_to_u64(x: f32) -> u64 {
    if (nan32_(x)) { return 0lu; }
    if (x < 0.0) { return bitcast<u64>(f32_to_i64(x)); }
    if (x >= 18446744073709551616.0) { return 0xfffffffffffffffflu; }
    return u64(x);
}
// Signed division from the magnitudes in u64 (as the i32 forms; also well defined for
// i64::MIN // -1, which wraps to i64::MIN as NumPy's does).
fn magnitude64_(a: i64) -> u64 {
    return select(bitcast<u64>(a), 0lu - bitcast<u64>(a), a < 0li);
}
fn floor_divide_i64(a: i64, b: i64) -> i64 {
    if (b == 0li) { return 0li; }
    let ua = magnitude64_(a);
    let ub = magnitude64_(b);
    let q = ua / ub;
    if ((a < 0li) == (b < 0li)) { return bitcast<i64>(q); }
    let up = select(0lu, 1lu, ua - q * ub != 0lu);
    return bitcast<i64>(0lu - (q + up));
}
fn remainder_i64(a: i64, b: i64) -> i64 {
    if (b == 0li) { return 0li; }
    let rem = magnitude64_(a) % magnitude64_(b);
    if (rem == 0lu) { return 0li; }
    let t = select(bitcast<i64>(rem), 0li - bitcast<i64>(rem), a < 0li);
    if ((a < 0li) != (b < 0li)) { return t + b; }
    return t;
}
fn floor_divide_u64(a: u64, b: u64) -> u64 {
    if (b == 0lu) { return 0lu; }
    return a / b;
}
fn remainder_u64(a: u64, b: u64) -> u64 {
    if (b == 0lu) { return 0lu; }
    return a % b;
}
// Wrapping powers by squaring (at most 64 steps). A negative exponent: 1 for a base of 1,
// ±1 for -1, 0 otherwise (NumPy raises there; the int32 form gives the same).
fn pow_i64(a: i64, b: i64) -> i64 {
    if (b < 0li) { return select(0li, select(1li, select(-1li, 1li, (b & 1li) == 0li), a == -1li), a == 1li || a == -1li); }
    var r = 1li;
    var x = a;
    var e = bitcast<u64>(b);
    loop {
        if (e == 0lu) { break; }
        if ((e & 1lu) == 1lu) { r = r * x; }
        x = x * x;
        e = e >> 1u;
    }
    return r;
}
fn pow_u64(a: u64, b: u64) -> u64 {
    var r = 1lu;
    var x = a;
    var e = b;
    loop {
        if (e == 0lu) { break; }
        if ((e & 1lu) == 1lu) { r = r * x; }
        x = x * x;
        e = e >> 1u;
    }
    return r;
}
fn shl_i64(a: i64, b: i64) -> i64 {
    if (b < 0li || b >= 64li) { return 0li; }
    return a << u32(b);
}
fn shl_u64(a: u64, b: u64) -> u64 {
    if (b >= 64lu) { return 0lu; }
    return a << u32(b);
}
fn shr_i64(a: i64, b: i64) -> i64 {
    if (b < 0li) { return 0li; }
    return a >> u32(min(b, 63li));
}
fn shr_u64(a: u64, b: u64) -> u64 {
    if (b >= 64lu) { return 0lu; }
    return a >> u32(b);
}
fn sign_i64(a: i64) -> i64 { return select(select(0li, -1li, a < 0li), 1li, a > 0li); }
fn abs_i64(a: i64) -> i64 { return select(a, 0li - a, a < 0li); }
