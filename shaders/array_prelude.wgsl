// Functions the generated array kernels call (src/array/ops.rs): the array API
// standard's answers where a WGSL builtin's differ (NaN, infinities, signed zeros), more
// accurate forms of atan, asin, acos and log1p than some drivers' builtins, sin, cos and tan
// with a range reduction good over all of float32, an exact float fmod (remainder and floor
// division), nextafter on the bits, and the integer forms of floor division, remainder,
// power and shifts.
var<private> INF_BITS: u32 = 0x7f800000u;
var<private> NAN_BITS: u32 = 0x7fc00000u;
fn inf_() -> f32 { return bitcast<f32>(INF_BITS); }
fn nan_() -> f32 { return bitcast<f32>(NAN_BITS); }
fn is_nan(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u; }
fn is_inf(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) == 0x7f800000u; }
fn f32_to_i32(x: f32) -> i32 {
    if (is_nan(x)) { return 0i; }
    return i32(clamp(x, -2147483648.0, 2147483520.0));
}
fn f32_to_u32(x: f32) -> u32 {
    if (is_nan(x)) { return 0u; }
    if (x < 0.0) { return bitcast<u32>(f32_to_i32(x)); }
    return u32(min(x, 4294967040.0));
}
fn expm1_(x: f32) -> f32 {
    // Below 0.35 the Taylor polynomial to x^9 (under 1e-9 relative): Kahan's u - 1 scaled
    // by x / log(u) needs an accurate log near 1, and lavapipe's is 1% off at x = -7e-6.
    if (abs(x) < 0.35) {
        return x * (1.0 + x * (0.5 + x * (0.16666666666666666 + x * (0.041666666666666664 + x * (0.008333333333333333 + x * (0.001388888888888889 + x * (0.0001984126984126984 + x * (2.48015873015873e-05 + x * 2.7557319223985893e-06))))))));
    }
    let u = exp(x);
    if (u == 1.0) { return x; }
    let um = u - 1.0;
    if (um == -1.0) { return -1.0; }
    if (is_inf(u)) { return u; }
    // Past 20 the - 1 is below an ulp of e^x, and um·x would overflow before e^x does.
    if (x > 20.0) { return um; }
    return um * x / log(u);
}
fn log1p_(x: f32) -> f32 {
    if (is_nan(x) || x < -1.0) { return nan_(); }
    if (x == -1.0) { return -inf_(); }
    if (abs(x) < 0.5) {
        // 2·atanh(s) with s = x / (2 + x), |s| < 1/3: the series to s^13 (about 1 ulp; the
        // builtin log loses relative accuracy near 1).
        let s = x / (2.0 + x);
        let z = s * s;
        let p = 1.0 + z * (0.33333333333 + z * (0.2 + z * (0.142857142857 + z * (0.111111111111 + z * (0.0909090909091 + z * 0.0769230769231)))));
        return 2.0 * s * p;
    }
    let u = 1.0 + x;
    if (u == 1.0) { return x; }
    if (is_inf(u)) { return u; }
    return log(u) * x / (u - 1.0);
}
fn atan_(v: f32) -> f32 {
    // Cephes' atanf: two reductions and a degree-9 odd polynomial, about 2 ulp (the
    // builtin is several ulp off on some drivers: 2.5e-6 relative on lavapipe).
    if (is_nan(v)) { return v; }
    var x = abs(v);
    var y0 = 0.0;
    if (x > 2.414213562373095) {
        y0 = 1.5707963267948966;
        x = -1.0 / x;
    } else if (x > 0.4142135623730950) {
        y0 = 0.7853981633974483;
        x = (x - 1.0) / (x + 1.0);
    }
    let z = x * x;
    let y = y0 + ((((8.05374449538e-2 * z - 1.38776856032e-1) * z + 1.99777106478e-1) * z - 3.33329491539e-1) * z * x + x);
    return bitcast<f32>(bitcast<u32>(y) | (bitcast<u32>(v) & 0x80000000u));
}
fn atan2_(y: f32, x: f32) -> f32 {
    let pi = 3.14159265358979323846;
    let sy = bitcast<u32>(y) & 0x80000000u;
    let negx = (bitcast<u32>(x) >> 31u) == 1u;
    var r: f32;
    if (is_nan(x) || is_nan(y)) { return x + y; }
    if (y == 0.0) {
        r = select(0.0, pi, negx);
    } else if (is_inf(x) && is_inf(y)) {
        r = select(0.25 * pi, 0.75 * pi, negx);
    } else if (is_inf(x)) {
        r = select(0.0, pi, negx);
    } else if (x == 0.0 || is_inf(y)) {
        r = 0.5 * pi;
    } else {
        let ax = abs(x);
        let ay = abs(y);
        if (ay <= ax) { r = atan_(ay / ax); } else { r = 0.5 * pi - atan_(ax / ay); }
        if (negx) { r = pi - r; }
    }
    return bitcast<f32>(bitcast<u32>(r) | sy);
}
fn asin_(x: f32) -> f32 {
    if (abs(x) > 1.0) { return nan_(); }
    return atan2_(x, sqrt((1.0 - x) * (1.0 + x)));
}
fn acos_(x: f32) -> f32 {
    if (abs(x) > 1.0) { return nan_(); }
    return atan2_(sqrt((1.0 - x) * (1.0 + x)), x);
}
// sin, cos and tan with their own range reduction: WGSL bounds the builtins' error only on
// [-pi, pi], and drivers reduce larger arguments with too few bits of pi (lavapipe's
// cos(1.28e15) is 1.0, the answer -0.454). Below 8192, Cody and Waite's three-part pi/2
// (Cephes' constants: y * P1 and y * P2 are exact); above, Payne and Hanek's reduction with
// 2/pi to 192 bits (ARM's optimized-routines sincosf reduce_large, its 64-bit integer
// products made of 32-bit halves). Then Cephes' sinf, cosf and tanf polynomials on
// [-pi/4, pi/4].
struct TrigArg { r: f32, q: u32 }
fn mul_wide_(a: u32, b: u32) -> vec2<u32> {
    let a0 = a & 0xffffu;
    let a1 = a >> 16u;
    let b0 = b & 0xffffu;
    let b1 = b >> 16u;
    let p00 = a0 * b0;
    let p01 = a0 * b1;
    let p10 = a1 * b0;
    let mid = (p00 >> 16u) + (p01 & 0xffffu) + (p10 & 0xffffu);
    return vec2<u32>((p00 & 0xffffu) | (mid << 16u), a1 * b1 + (p01 >> 16u) + (p10 >> 16u) + (mid >> 16u));
}
fn trig_reduce_(a: f32) -> TrigArg {
    if (a < 8192.0) {
        let y = floor(a * 0.63661977236758134 + 0.5);
        let r = ((a - y * 1.5703125) - y * 4.837512969970703125e-4) - y * 7.54978995489188216e-8;
        return TrigArg(r, u32(y) & 3u);
    }
    // 2/pi in overlapping windows: entry k starts 8k - 24 bits into the fraction.
    var t = array<u32, 24>(
        0xa2u, 0xa2f9u, 0xa2f983u, 0xa2f9836eu, 0xf9836e4eu, 0x836e4e44u, 0x6e4e4415u, 0x4e441529u,
        0x441529fcu, 0x1529fc27u, 0x29fc2757u, 0xfc2757d1u, 0x2757d1f5u, 0x57d1f534u, 0xd1f534ddu, 0xf534ddc0u,
        0x34ddc0dbu, 0xddc0db62u, 0xc0db6295u, 0xdb629599u, 0x6295993cu, 0x95993c43u, 0x993c4390u, 0x3c439041u);
    let xb = bitcast<u32>(a);
    let i = (xb >> 26u) & 15u;
    let m = ((xb & 0xffffffu) | 0x800000u) << ((xb >> 23u) & 7u);
    // The 2.62 fixed-point product m * 2/pi mod 4, as 64 bits (hi, lo).
    let r1 = mul_wide_(m, t[i + 4u]);
    let r2 = mul_wide_(m, t[i + 8u]);
    let lo = r2.y + r1.x;
    var hi = m * t[i] + r1.y + select(0u, 1u, lo < r1.x);
    let n = (hi + 0x20000000u) >> 30u;
    hi = hi - (n << 30u);
    // The signed remainder times pi/2 * 2^-62.
    let v = f32(bitcast<i32>(hi)) * 4294967296.0 + f32(lo);
    return TrigArg((v * 2.168404344971009e-19) * 1.5707963267948966, n & 3u);
}
fn sin_poly_(r: f32) -> f32 {
    let z = r * r;
    return r + r * z * (-1.6666654611e-1 + z * (8.3321608736e-3 + z * -1.9515295891e-4));
}
fn cos_poly_(r: f32) -> f32 {
    let z = r * r;
    return 1.0 - 0.5 * z + z * z * (4.166664568298827e-2 + z * (-1.388731625493765e-3 + z * 2.443315711809948e-5));
}
fn sin_(x: f32) -> f32 {
    if (is_nan(x) || is_inf(x)) { return nan_(); }
    let t = trig_reduce_(abs(x));
    var s = select(sin_poly_(t.r), cos_poly_(t.r), (t.q & 1u) == 1u);
    if (t.q >= 2u) { s = -s; }
    return bitcast<f32>(bitcast<u32>(s) ^ (bitcast<u32>(x) & 0x80000000u));
}
fn cos_(x: f32) -> f32 {
    if (is_nan(x) || is_inf(x)) { return nan_(); }
    let t = trig_reduce_(abs(x));
    var c = select(cos_poly_(t.r), sin_poly_(t.r), (t.q & 1u) == 1u);
    if (t.q == 1u || t.q == 2u) { c = -c; }
    return c;
}
fn tan_(x: f32) -> f32 {
    if (is_nan(x) || is_inf(x)) { return nan_(); }
    let t = trig_reduce_(abs(x));
    let z = t.r * t.r;
    var y = t.r;
    if (abs(t.r) > 1e-4) {
        y = ((((((9.38540185543e-3 * z + 3.11992232697e-3) * z + 2.44301354525e-2) * z + 5.34112807005e-2) * z + 1.33387994085e-1) * z + 3.33331568548e-1) * z * t.r) + t.r;
    }
    if ((t.q & 1u) == 1u) { y = -1.0 / y; }
    return bitcast<f32>(bitcast<u32>(y) ^ (bitcast<u32>(x) & 0x80000000u));
}
// sinh, asinh and atanh keep the sign of zero (and acosh is NaN below 1) (sinh(-0) is -0; the builtins' exp and log
// forms give +0) and their relative accuracy near 0 (expm1 and log1p in place of exp and log).
fn sinh_(x: f32) -> f32 {
    if (is_nan(x)) { return x; }
    let a = abs(x);
    var r: f32;
    if (a < 1.0) {
        let t = expm1_(a);
        r = 0.5 * (t + t / (t + 1.0));
    } else if (a < 88.0) {
        let e = exp(a);
        r = 0.5 * (e - 1.0 / e);
    } else {
        r = exp(a - 0.69314718055994531);
    }
    return bitcast<f32>(bitcast<u32>(r) | (bitcast<u32>(x) & 0x80000000u));
}
// cosh without the builtin's overflow of e^|x| between 88.72 and 89.41, where cosh itself is
// still finite: e^(|x|/2)·(e^(|x|/2)/2), |x|/2 exact.
fn cosh_(x: f32) -> f32 {
    let a = abs(x);
    if (!(a >= 88.0)) { return cosh(x); }
    let h = exp(0.5 * a);
    return (0.5 * h) * h;
}
fn asinh_(x: f32) -> f32 {
    if (is_nan(x)) { return x; }
    let a = abs(x);
    var r: f32;
    if (a > 268435456.0) {
        r = log(a) + 0.69314718055994531;
    } else if (a > 2.0) {
        r = log(2.0 * a + 1.0 / (sqrt(a * a + 1.0) + a));
    } else {
        let z = a * a;
        r = log1p_(a + z / (1.0 + sqrt(1.0 + z)));
    }
    return bitcast<f32>(bitcast<u32>(r) | (bitcast<u32>(x) & 0x80000000u));
}
fn acosh_(x: f32) -> f32 {
    // NaN below 1 (the builtin's log(x + sqrt(x * x - 1)) gives -inf for large negative x).
    if (is_nan(x) || x < 1.0) { return nan_(); }
    if (x > 268435456.0) { return log(x) + 0.69314718055994531; }
    if (x > 2.0) { return log(2.0 * x - 1.0 / (x + sqrt(x * x - 1.0))); }
    let t = x - 1.0;
    return log1p_(t + sqrt(2.0 * t + t * t));
}
fn atanh_(x: f32) -> f32 {
    if (is_nan(x)) { return x; }
    let a = abs(x);
    if (a > 1.0) { return nan_(); }
    var r: f32;
    if (a == 1.0) {
        r = inf_();
    } else if (a < 0.5) {
        r = 0.5 * log1p_(2.0 * a + 2.0 * a * a / (1.0 - a));
    } else {
        r = 0.5 * log1p_(2.0 * a / (1.0 - a));
    }
    return bitcast<f32>(bitcast<u32>(r) | (bitcast<u32>(x) & 0x80000000u));
}
// The next float32 after x toward y, on the bits alone (a driver that flushes subnormals
// would lose nextafter(0, 1) in float arithmetic or comparisons).
fn nextafter_(x: f32, y: f32) -> f32 {
    if (is_nan(x) || is_nan(y)) { return nan_(); }
    let ux = bitcast<u32>(x);
    let uy = bitcast<u32>(y);
    let mx = ux & 0x7fffffffu;
    let my = uy & 0x7fffffffu;
    if (ux == uy || (mx == 0u && my == 0u)) { return y; }
    if (mx == 0u) { return bitcast<f32>((uy & 0x80000000u) | 1u); }
    // The floats' order as integers: the magnitude, negated for a set sign bit.
    let kx = select(i32(mx), -i32(mx), (ux >> 31u) == 1u);
    let ky = select(i32(my), -i32(my), (uy >> 31u) == 1u);
    if ((kx < ky) == ((ux >> 31u) == 0u)) { return bitcast<f32>(ux + 1u); }
    return bitcast<f32>(ux - 1u);
}
fn maximum_f32(a: f32, b: f32) -> f32 {
    if (is_nan(a) || is_nan(b)) { return a + b; }
    return max(a, b);
}
fn minimum_f32(a: f32, b: f32) -> f32 {
    if (is_nan(a) || is_nan(b)) { return a + b; }
    return min(a, b);
}
fn hypot_(a: f32, b: f32) -> f32 {
    if (is_inf(a) || is_inf(b)) { return inf_(); }
    let m = max(abs(a), abs(b));
    if (m == 0.0 || is_nan(m)) { return m + abs(a) + abs(b); }
    let x = a / m;
    let y = b / m;
    return m * sqrt(x * x + y * y);
}
fn logaddexp_(a: f32, b: f32) -> f32 {
    if (a == b) { return a + 0.69314718055994531; }
    let m = maximum_f32(a, b);
    return m + log1p_(exp(-abs(a - b)));
}
// fmod exactly (musl's fmodf: the mantissas' long division in integers): a - b * trunc(a / b)
// in f32 loses the remainder once a / b passes 2^10 or so (remainder(129932, 1.2148438)
// was 0.8125, not 0.81640625). NaN for an infinite a or a zero b.
fn fmod_(x: f32, y: f32) -> f32 {
    var ux = bitcast<u32>(x);
    var uy = bitcast<u32>(y);
    var ex = i32((ux >> 23u) & 0xffu);
    var ey = i32((uy >> 23u) & 0xffu);
    let sx = ux & 0x80000000u;
    if ((uy << 1u) == 0u || is_nan(y) || ex == 0xff) { return nan_(); }
    if ((ux << 1u) <= (uy << 1u)) {
        if ((ux << 1u) == (uy << 1u)) { return bitcast<f32>(sx); }
        return x;
    }
    if (ex == 0) {
        var t = ux << 9u;
        loop { if ((t >> 31u) != 0u) { break; } ex = ex - 1; t = t << 1u; }
        ux = ux << u32(1 - ex);
    } else {
        ux = (ux & 0x7fffffu) | 0x800000u;
    }
    if (ey == 0) {
        var t = uy << 9u;
        loop { if ((t >> 31u) != 0u) { break; } ey = ey - 1; t = t << 1u; }
        uy = uy << u32(1 - ey);
    } else {
        uy = (uy & 0x7fffffu) | 0x800000u;
    }
    loop {
        if (ex <= ey) { break; }
        let d = ux - uy;
        if ((d >> 31u) == 0u) {
            if (d == 0u) { return bitcast<f32>(sx); }
            ux = d;
        }
        ux = ux << 1u;
        ex = ex - 1;
    }
    let d = ux - uy;
    if ((d >> 31u) == 0u) {
        if (d == 0u) { return bitcast<f32>(sx); }
        ux = d;
    }
    loop { if ((ux >> 23u) != 0u) { break; } ux = ux << 1u; ex = ex - 1; }
    if (ex > 0) {
        ux = (ux - 0x800000u) | (u32(ex) << 23u);
    } else {
        ux = ux >> u32(1 - ex);
    }
    return bitcast<f32>(ux | sx);
}
// Floor division and remainder of floats as NumPy's npy_divmod computes them (Python's
// divmod): the exact fmod, moved onto the divisor's sign with the quotient one lower, a
// zero taking the divisor's sign (remainder) or that of a / b (quotient), the quotient
// (a - r) / b snapped to an integer. So 5 // inf is 0 and -5 // inf is -1 (remainder inf);
// an infinite or NaN operand gives NaN, but x // 0 is x / 0 and x % 0 is NaN.
fn divmod_f32(a: f32, b: f32) -> vec2<f32> {
    if (b == 0.0) { return vec2<f32>(a / b, nan_()); }
    if (is_nan(a) || is_nan(b) || is_inf(a)) { return vec2<f32>(nan_(), nan_()); }
    var m = fmod_(a, b);
    var div = (a - m) / b;
    if (m != 0.0) {
        if ((b < 0.0) != (m < 0.0)) {
            m = m + b;
            div = div - 1.0;
        }
    } else {
        m = bitcast<f32>(bitcast<u32>(b) & 0x80000000u);
    }
    if (div == 0.0) {
        return vec2<f32>(bitcast<f32>(bitcast<u32>(a / b) & 0x80000000u), m);
    }
    var q = floor(div);
    if (div - q > 0.5) { q = q + 1.0; }
    return vec2<f32>(q, m);
}
// The array API standard's floor_divide: NumPy's quotient except where one operand is
// infinite and the other finite, which the standard sends to ±inf (an infinite dividend)
// or ±0 (an infinite divisor), signed by the operands' signs (NumPy: NaN, and -1 for
// -5 // inf). `remainder` keeps NumPy's, which the standard's cases agree with.
fn floor_divide_f32(a: f32, b: f32) -> f32 {
    let neg = (bitcast<u32>(a) ^ bitcast<u32>(b)) & 0x80000000u;
    if (is_inf(a) && !is_inf(b) && !is_nan(b)) { return bitcast<f32>(0x7f800000u | neg); }
    if (is_inf(b) && !is_inf(a) && !is_nan(a)) { return bitcast<f32>(neg); }
    return divmod_f32(a, b).x;
}
fn remainder_f32(a: f32, b: f32) -> f32 { return divmod_f32(a, b).y; }
fn pow_f32(a: f32, b: f32) -> f32 {
    if (b == 0.0) { return 1.0; }
    if (a == 1.0) { return 1.0; }
    if (is_nan(a) || is_nan(b)) { return a + b; }
    let ab = abs(a);
    if (is_inf(b)) {
        if (ab == 1.0) { return 1.0; }
        if ((ab > 1.0) == (b > 0.0)) { return inf_(); }
        return 0.0;
    }
    let odd = trunc(b) == b && abs(b) < 16777216.0 && (i32(b) & 1) == 1;
    if (a == 0.0 || is_inf(a)) {
        let big = (a == 0.0) == (b < 0.0);
        let m = select(0.0, inf_(), big);
        if (odd && bitcast<u32>(a) >> 31u == 1u) { return -m; }
        return m;
    }
    if (a < 0.0) {
        if (trunc(b) != b) { return nan_(); }
        let m = exp2(b * log2(ab));
        return select(m, -m, odd);
    }
    return exp2(b * log2(a));
}
// Signed division and remainder from the operands' magnitudes in u32: GLSL leaves `/` and
// `%` of negative integers undefined, and wgpu's GL backend passes them through (floor
// division of int8 gave -5 for -6 there).
fn magnitude(a: i32) -> u32 {
    return select(bitcast<u32>(a), 0u - bitcast<u32>(a), a < 0i);
}
fn floor_divide_i32(a: i32, b: i32) -> i32 {
    if (b == 0i) { return 0i; }
    let ua = magnitude(a);
    let ub = magnitude(b);
    let q = ua / ub;
    if ((a < 0i) == (b < 0i)) { return bitcast<i32>(q); }
    let up = select(0u, 1u, ua - q * ub != 0u);
    return bitcast<i32>(0u - (q + up));
}
fn remainder_i32(a: i32, b: i32) -> i32 {
    if (b == 0i) { return 0i; }
    let rem = magnitude(a) % magnitude(b);
    if (rem == 0u) { return 0i; }
    // The truncated remainder has a's sign; the floored one b's.
    let t = select(bitcast<i32>(rem), 0i - bitcast<i32>(rem), a < 0i);
    if ((a < 0i) != (b < 0i)) { return t + b; }
    return t;
}
fn floor_divide_u32(a: u32, b: u32) -> u32 {
    if (b == 0u) { return 0u; }
    return a / b;
}
fn remainder_u32(a: u32, b: u32) -> u32 {
    if (b == 0u) { return 0u; }
    return a % b;
}
fn pow_i32(a: i32, b: i32) -> i32 {
    if (b < 0i) { return select(0i, select(1i, select(-1i, 1i, (b & 1i) == 0i), a == -1i), a == 1i || a == -1i); }
    var r = 1i;
    var x = a;
    var e = u32(b);
    loop {
        if (e == 0u) { break; }
        if ((e & 1u) == 1u) { r = r * x; }
        x = x * x;
        e = e >> 1u;
    }
    return r;
}
fn pow_u32(a: u32, b: u32) -> u32 {
    var r = 1u;
    var x = a;
    var e = b;
    loop {
        if (e == 0u) { break; }
        if ((e & 1u) == 1u) { r = r * x; }
        x = x * x;
        e = e >> 1u;
    }
    return r;
}
fn shl_i32(a: i32, b: i32, bits: u32) -> i32 {
    if (b < 0i || u32(b) >= bits) { return 0i; }
    return a << u32(b);
}
fn shl_u32(a: u32, b: u32, bits: u32) -> u32 {
    if (b >= bits) { return 0u; }
    return a << b;
}
fn shr_i32(a: i32, b: i32) -> i32 {
    if (b < 0i) { return 0i; }
    return a >> min(u32(b), 31u);
}
fn shr_u32(a: u32, b: u32) -> u32 {
    if (b >= 32u) { return 0u; }
    return a >> b;
}
// f16_round_ (float16 held as f32 words) is shaders/f16_round.wgsl, prepended to this prelude
// and shared with the matmul and convolution kernels' float16 operands.
// The next binary16 value after x (a binary16 value in an f32) toward y: x moved by its
// binary16 ulp, 2^(exponent - 10) and at least 2^-24, half that below a power of two
// (down to the smallest normal 2^-14); exact in f32, and past 65504 the caller's rounding
// gives infinity.
fn nextafter_f16_(x: f32, y: f32) -> f32 {
    if (is_nan(x) || is_nan(y)) { return nan_(); }
    if (x == y) { return y; }
    if (x == 0.0) { return bitcast<f32>((bitcast<u32>(y) & 0x80000000u) | 0x33800000u); }
    let s = bitcast<u32>(x) & 0x80000000u;
    let a = bitcast<u32>(x) & 0x7fffffffu;
    if (a == 0x7f800000u) { return bitcast<f32>(s | 0x477fe000u); }
    let e = a >> 23u;
    let away = (y > x) == (x > 0.0);
    var ulp = max(e, 113u) - 10u;
    if (!away && (a & 0x7fffffu) == 0u && e > 113u) { ulp = ulp - 1u; }
    let step = bitcast<f32>(ulp << 23u);
    let ax = bitcast<f32>(a);
    let r = select(ax - step, ax + step, away);
    return bitcast<f32>(bitcast<u32>(r) | s);
}
