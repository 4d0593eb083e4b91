// Functions the generated array kernels call (src/array/ops.rs): the array API
// standard's answers where a WGSL builtin's differ (NaN, infinities, signed zeros), more
// accurate forms of atan, asin, acos and log1p than some drivers' builtins, and the integer
// forms of floor division, remainder, power and shifts.
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
    let u = exp(x);
    if (u == 1.0) { return x; }
    let um = u - 1.0;
    if (um == -1.0) { return -1.0; }
    if (is_inf(u)) { return u; }
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
fn floor_divide_f32(a: f32, b: f32) -> f32 { return floor(a / b); }
fn remainder_f32(a: f32, b: f32) -> f32 {
    if (b == 0.0) { return a - a + nan_(); }
    if (is_inf(b) && !is_inf(a)) {
        if (a == 0.0 || (a < 0.0) == (b < 0.0)) { return a; }
        return b;
    }
    var r = a - b * trunc(a / b);
    if (abs(r) >= abs(b)) { r = r - b * trunc(r / b); }
    if (r != 0.0 && ((r < 0.0) != (b < 0.0))) { r = r + b; }
    if (r == 0.0) { r = bitcast<f32>(bitcast<u32>(b) & 0x80000000u); }
    return r;
}
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
fn floor_divide_i32(a: i32, b: i32) -> i32 {
    if (b == 0i) { return 0i; }
    if (b == -1i) { return 0i - a; }
    var q = a / b;
    if ((a % b != 0i) && ((a < 0i) != (b < 0i))) { q = q - 1i; }
    return q;
}
fn remainder_i32(a: i32, b: i32) -> i32 {
    if (b == 0i || b == -1i) { return 0i; }
    var r = a % b;
    if (r != 0i && ((r < 0i) != (b < 0i))) { r = r + b; }
    return r;
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
