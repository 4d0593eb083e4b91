// float16 rounding on the bits of an f32 word: the array dtype float16 (after every
// operation, prepended to array_prelude.wgsl) and the float16 operands of the matmul and
// convolution kernels under the mixed_float16 policy (half_operands.wgsl) share this one text.
// float16 (held as f32 words): x rounded to the nearest binary16 value, ties to even,
// subnormals kept (down to 2^-24), |x| >= 65520 to infinity, NaN kept, on the bits alone:
// WGSL's quantizeToF16 leaves out-of-range values indeterminate and SPIR-V lets it flush
// subnormals, and float arithmetic here could be flushed by a driver too.
fn f16_round_(x: f32) -> f32 {
    let u = bitcast<u32>(x);
    let s = u & 0x80000000u;
    let a = u & 0x7fffffffu;
    if (a >= 0x7f800000u) { return x; }
    if (a >= 0x477ff000u) { return bitcast<f32>(s | 0x7f800000u); }
    let e = a >> 23u;
    // Bits of the f32 significand below binary16's last place: 13 for normal halves (f32
    // exponent >= 113), 126 - e for subnormal ones (that place is 2^-24); below 2^-25
    // (exponent < 102) everything rounds to zero.
    var sh = 13u;
    if (e < 113u) {
        if (e < 102u) { return bitcast<f32>(s); }
        sh = 126u - e;
    }
    // Normal f32 here, so the implicit bit is added and the exponent kept apart.
    let m = (a & 0x7fffffu) | 0x800000u;
    let hw = 1u << (sh - 1u);
    let low = m & ((1u << sh) - 1u);
    var q = m >> sh;
    if (low > hw || (low == hw && (q & 1u) == 1u)) { q = q + 1u; }
    if (q == 0u) { return bitcast<f32>(s); }
    // q · 2^(sh + e - 150), at least 2^23 · 2^(e - 150) (m >= 2^23 and q was not rounded
    // down to 0): a carry out of the significand is an exact power of two.
    let r = q << sh;
    return bitcast<f32>(s | ((e << 23u) + r - 0x800000u));
}
