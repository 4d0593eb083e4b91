// complex64 (vec2<f32>: real, imaginary) for the generated array kernels, after
// array_prelude.wgsl (src/array/ops.rs names each as `c` + the standard's name + `_`).
// Every function gives the array API standard's special cases (C99 Annex G's) for signed
// zeros, infinities and NaN, and keeps its accuracy where the textbook formula loses it:
// log|z| scaled like hypot (no overflow, log1p near |z| = 1), expm1 and log1p accurate near
// 0, asin, acos and acosh by Kahan's formulas ("Branch cuts for complex elementary
// functions", 1987: square roots of 1 - z and 1 + z, no cancellation near the branch
// points), atanh as log1p of a ratio, tanh by Kahan's form, and large |z| by the
// asymptotic log 2z (the squares would overflow). The trigonometric functions are the
// hyperbolic ones of iz, as the standard defines them.
fn csgn_(m: f32, s: f32) -> f32 {
    return bitcast<f32>((bitcast<u32>(m) & 0x7fffffffu) | (bitcast<u32>(s) & 0x80000000u));
}
fn cfinite_(x: f32) -> bool { return !is_nan(x) && !is_inf(x); }
fn cnan2_() -> vec2<f32> { return vec2<f32>(nan_(), nan_()); }
// i·z and -i·z.
fn ctimes_i_(z: vec2<f32>) -> vec2<f32> { return vec2<f32>(-z.y, z.x); }
fn ctimes_mi_(z: vec2<f32>) -> vec2<f32> { return vec2<f32>(z.y, -z.x); }
// Products and quotients as NumPy computes them (the quotient by Smith's scaling, so |b|
// near the float range does not overflow).
fn cmul_(a: vec2<f32>, b: vec2<f32>) -> vec2<f32> {
    return vec2<f32>(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x);
}
fn cdiv_(a: vec2<f32>, b: vec2<f32>) -> vec2<f32> {
    // By |b.x|, as NumPy: (1+1j)/(-0-0j) is inf+inf j.
    if (b.x == 0.0 && b.y == 0.0) { return vec2<f32>(a.x / abs(b.x), a.y / abs(b.x)); }
    if (abs(b.x) >= abs(b.y)) {
        let r = b.y / b.x;
        let d = b.x + b.y * r;
        return vec2<f32>((a.x + a.y * r) / d, (a.y - a.x * r) / d);
    }
    let r = b.x / b.y;
    let d = b.x * r + b.y;
    return vec2<f32>((a.x * r + a.y) / d, (a.y * r - a.x) / d);
}
// e^x·(cos y, sin y); e^x in halves above 88 (e^x overflows where the product may not).
fn cexp_finite_(x: f32, y: f32) -> vec2<f32> {
    let c = cos_(y);
    let s = sin_(y);
    if (x > 88.0) {
        let h = exp(0.5 * x);
        return vec2<f32>(h * c * h, h * s * h);
    }
    let e = exp(x);
    return vec2<f32>(e * c, e * s);
}
fn cexp_(z: vec2<f32>) -> vec2<f32> {
    let x = z.x;
    let y = z.y;
    if (is_nan(x)) {
        if (y == 0.0) { return z; }
        return cnan2_();
    }
    if (is_inf(x)) {
        if (x > 0.0) {
            if (y == 0.0) { return z; }
            if (!cfinite_(y)) { return vec2<f32>(x, nan_()); }
            return vec2<f32>(x * cos_(y), x * sin_(y));
        }
        if (!cfinite_(y)) { return vec2<f32>(0.0, 0.0); }
        return vec2<f32>(0.0 * cos_(y), 0.0 * sin_(y));
    }
    if (y == 0.0) { return vec2<f32>(exp(x), y); }
    if (!cfinite_(y)) { return cnan2_(); }
    return cexp_finite_(x, y);
}
// e^z - 1 = (expm1(x)·cos y - 2 sin²(y/2)) + i e^x sin y: no cancellation near 0.
fn cexpm1_(z: vec2<f32>) -> vec2<f32> {
    let x = z.x;
    let y = z.y;
    if (is_nan(x)) {
        if (y == 0.0) { return z; }
        return cnan2_();
    }
    if (is_inf(x)) {
        if (x > 0.0) { return cexp_(z); }
        if (!cfinite_(y)) { return vec2<f32>(-1.0, 0.0); }
        return vec2<f32>(-1.0, 0.0 * sin_(y));
    }
    // The standard: expm1(±0 + 0j) is +0 + 0j.
    if (y == 0.0) { return vec2<f32>(select(expm1_(x), 0.0, x == 0.0), y); }
    if (!cfinite_(y)) { return cnan2_(); }
    let h = sin_(0.5 * y);
    let e = cexp_finite_(x, y);
    // Past 80 the - 1 is below an ulp of e^x·cos y (but expm1(x)·x / log would overflow).
    if (x > 80.0) { return vec2<f32>(e.x - 1.0, e.y); }
    return vec2<f32>(expm1_(x) * cos_(y) - 2.0 * h * h, e.y);
}
// log|z|: scaled as hypot, through log1p where |z| is near 1, and tiny |z| scaled up first
// (a driver may flush subnormals).
fn clogabs_(x0: f32, y0: f32) -> f32 {
    if (is_inf(x0) || is_inf(y0)) { return inf_(); }
    if (is_nan(x0) || is_nan(y0)) { return nan_(); }
    var m = max(abs(x0), abs(y0));
    var s = min(abs(x0), abs(y0));
    if (m == 0.0) { return -inf_(); }
    var k = 0.0;
    if (m < 1e-30) {
        m = m * 1152921504606846976.0;
        s = s * 1152921504606846976.0;
        k = -60.0;
    }
    if (m > 0.5 && m < 2.0) {
        return 0.5 * log1p_((m - 1.0) * (m + 1.0) + s * s);
    }
    let r = s / m;
    return log(m) + 0.5 * log1p_(r * r) + k * 0.69314718055994531;
}
fn clog_(z: vec2<f32>) -> vec2<f32> {
    return vec2<f32>(clogabs_(z.x, z.y), atan2_(z.y, z.x));
}
fn clog2_(z: vec2<f32>) -> vec2<f32> { return clog_(z) * 1.4426950408889634; }
fn clog10_(z: vec2<f32>) -> vec2<f32> { return clog_(z) * 0.43429448190325183; }
// log(1 + z): log|1 + z| = log1p(2x + x² + y²) / 2 near 0.
fn clog1p_(z: vec2<f32>) -> vec2<f32> {
    let x = z.x;
    let y = z.y;
    if (!cfinite_(x) || !cfinite_(y)) { return clog_(vec2<f32>(x + 1.0, y)); }
    let im = atan2_(y, 1.0 + x);
    if (abs(x) < 0.5 && abs(y) < 0.5) {
        return vec2<f32>(0.5 * log1p_(x * (2.0 + x) + y * y), im);
    }
    return vec2<f32>(clogabs_(1.0 + x, y), im);
}
fn csqrt_(z: vec2<f32>) -> vec2<f32> {
    if (is_inf(z.y)) { return vec2<f32>(inf_(), z.y); }
    if (z.x == 0.0 && z.y == 0.0) { return vec2<f32>(0.0, z.y); }
    if (is_inf(z.x) && z.x < 0.0 && !is_nan(z.y)) {
        return vec2<f32>(0.0, csgn_(inf_(), z.y));
    }
    // |x| + |z| overflows above about 1.7e38: the root of z/4, doubled.
    var w = z;
    var f = 1.0;
    if (max(abs(z.x), abs(z.y)) > 1e37) {
        w = z * 0.25;
        f = 2.0;
    }
    let t = sqrt((abs(w.x) + hypot_(w.x, w.y)) * 0.5);
    if (w.x >= 0.0) { return vec2<f32>(t, w.y / (2.0 * t)) * f; }
    return vec2<f32>(abs(w.y) / (2.0 * t), csgn_(t, w.y)) * f;
}
// e^|x|/2 · (c, s), the sinh x and cosh x of |x| > 88 (where they differ by under an ulp):
// e^|x| overflows float32 past 88.7 while the products may not (c or s small), so e^|x|/2
// is applied in two halves, (e^(|x|/2)·c/2)·e^(|x|/2), as cexp_finite_ does; an overflow
// left is an infinity with the product's sign (C99 Annex G).
fn chalf_exp_(x: f32, c: f32, s: f32) -> vec2<f32> {
    let h = exp(0.5 * abs(x));
    return vec2<f32>(h * (0.5 * c) * h, h * (0.5 * s) * h);
}
// A zero whose sign is the product of the signs of a and b.
fn czero_sign_(a: f32, b: f32) -> f32 {
    return bitcast<f32>((bitcast<u32>(a) ^ bitcast<u32>(b)) & 0x80000000u);
}
fn csinh_(z: vec2<f32>) -> vec2<f32> {
    let x = z.x;
    let y = z.y;
    if (y == 0.0) { return vec2<f32>(sinh_(x), y); }
    if ((x == 0.0 || is_inf(x)) && !cfinite_(y)) { return vec2<f32>(x, nan_()); }
    if (abs(x) > 88.0) {
        let c = chalf_exp_(x, cos_(y), sin_(y));
        return vec2<f32>(csgn_(1.0, x) * c.x, c.y);
    }
    return vec2<f32>(sinh_(x) * cos_(y), cosh(x) * sin_(y));
}
fn ccosh_(z: vec2<f32>) -> vec2<f32> {
    let x = z.x;
    let y = z.y;
    if (y == 0.0) {
        if (is_nan(x)) { return vec2<f32>(x, 0.0); }
        return vec2<f32>(cosh_(x), czero_sign_(x, y));
    }
    if (x == 0.0 && !cfinite_(y)) { return vec2<f32>(nan_(), 0.0); }
    if (is_inf(x) && !cfinite_(y)) { return vec2<f32>(inf_(), nan_()); }
    if (abs(x) > 88.0) {
        let c = chalf_exp_(x, cos_(y), sin_(y));
        return vec2<f32>(c.x, csgn_(1.0, x) * c.y);
    }
    return vec2<f32>(cosh(x) * cos_(y), sinh_(x) * sin_(y));
}
// Real tanh with its relative accuracy near 0 and ±1 beyond 10 (no inf / inf).
fn ctanh_real_(x: f32) -> f32 {
    if (abs(x) > 10.0) { return csgn_(1.0, x); }
    let e = expm1_(2.0 * abs(x));
    return csgn_(e / (e + 2.0), x);
}
// Kahan's form: with t = tan y, b = 1 + t², s = sinh x: (b·s·√(1 + s²), t) / (1 + b·s²).
fn ctanh_(z: vec2<f32>) -> vec2<f32> {
    let x = z.x;
    let y = z.y;
    if (is_nan(x)) {
        if (y == 0.0) { return z; }
        return cnan2_();
    }
    if (is_inf(x)) {
        // The standard: ±1 + 0j, the zero taking y's sign (C99's sign of sin 2y aside).
        var im = 0.0;
        if (cfinite_(y)) { im = csgn_(0.0, y); }
        return vec2<f32>(csgn_(1.0, x), im);
    }
    if (!cfinite_(y)) {
        if (x == 0.0) { return vec2<f32>(x, nan_()); }
        return cnan2_();
    }
    if (y == 0.0) { return vec2<f32>(ctanh_real_(x), y); }
    if (abs(x) > 10.0) {
        return vec2<f32>(csgn_(1.0, x), 4.0 * sin_(y) * cos_(y) * exp(-2.0 * abs(x)));
    }
    let t = tan_(y);
    let b = 1.0 + t * t;
    let s = sinh_(x);
    let d = 1.0 + b * s * s;
    return vec2<f32>(b * s * sqrt(1.0 + s * s) / d, t / d);
}
fn csin_(z: vec2<f32>) -> vec2<f32> { return ctimes_mi_(csinh_(ctimes_i_(z))); }
fn ccos_(z: vec2<f32>) -> vec2<f32> { return ccosh_(ctimes_i_(z)); }
fn ctan_(z: vec2<f32>) -> vec2<f32> { return ctimes_mi_(ctanh_(ctimes_i_(z))); }
// log|z| + log 2, the real part of asinh, acosh and acos for large |z| (z² would overflow).
fn clog2abs_(z: vec2<f32>) -> f32 { return clogabs_(z.x, z.y) + 0.69314718055994531; }
fn cbig_(z: vec2<f32>) -> bool { return max(abs(z.x), abs(z.y)) > 1e18; }
// Kahan's asin for finite z: atan(x / Re(√(1-z)·√(1+z))) + i asinh(Im(conj(√(1-z))·√(1+z))).
fn casin_kahan_(z: vec2<f32>) -> vec2<f32> {
    let a = csqrt_(vec2<f32>(1.0 - z.x, -z.y));
    let b = csqrt_(vec2<f32>(1.0 + z.x, z.y));
    return vec2<f32>(atan2_(z.x, a.x * b.x - a.y * b.y), asinh_(a.x * b.y - a.y * b.x));
}
fn casinh_(z: vec2<f32>) -> vec2<f32> {
    let x = z.x;
    let y = z.y;
    if (is_nan(x) || is_nan(y)) {
        if (is_inf(x)) { return vec2<f32>(x, nan_()); }
        if (is_inf(y)) { return vec2<f32>(inf_(), nan_()); }
        if (y == 0.0) { return vec2<f32>(nan_(), y); }
        return cnan2_();
    }
    if (cbig_(z)) { return vec2<f32>(csgn_(clog2abs_(z), x), atan2_(y, abs(x))); }
    // asinh z = i·asin(-i·z).
    return ctimes_i_(casin_kahan_(ctimes_mi_(z)));
}
fn casin_(z: vec2<f32>) -> vec2<f32> { return ctimes_mi_(casinh_(ctimes_i_(z))); }
fn cacos_(z: vec2<f32>) -> vec2<f32> {
    let x = z.x;
    let y = z.y;
    if (is_nan(x) || is_nan(y)) {
        if (is_inf(x)) { return vec2<f32>(nan_(), inf_()); }
        if (is_inf(y)) { return vec2<f32>(nan_(), -y); }
        if (x == 0.0) { return vec2<f32>(1.5707963267948966, nan_()); }
        return cnan2_();
    }
    if (cbig_(z)) { return vec2<f32>(atan2_(abs(y), x), -csgn_(clog2abs_(z), y)); }
    // 2·atan(Re √(1-z) / Re √(1+z)) + i asinh(Im(conj(√(1+z))·√(1-z))).
    let a = csqrt_(vec2<f32>(1.0 - x, -y));
    let b = csqrt_(vec2<f32>(1.0 + x, y));
    return vec2<f32>(2.0 * atan2_(a.x, b.x), asinh_(b.x * a.y - b.y * a.x));
}
// acosh z = ±i·acos z, the sign making the real part non-negative (FreeBSD's cacoshf).
fn cacosh_(z: vec2<f32>) -> vec2<f32> {
    if (z.x == 0.0 && is_nan(z.y)) { return vec2<f32>(nan_(), 1.5707963267948966); }
    let w = cacos_(z);
    if (is_nan(w.x) && is_nan(w.y)) { return w; }
    if (is_nan(w.x)) { return vec2<f32>(abs(w.y), w.x); }
    if (is_nan(w.y)) { return vec2<f32>(w.y, w.y); }
    return vec2<f32>(abs(w.y), csgn_(w.x, z.y));
}
// atanh z = log1p(4x / ((1-x)² + y²)) / 4 + i atan2(2y, (1-x)(1+x) - y²) / 2 for x >= 0;
// 1/z ± iπ/2 for large |z|.
fn catanh_(z: vec2<f32>) -> vec2<f32> {
    let x = z.x;
    let y = z.y;
    let h = 1.5707963267948966;
    if (is_nan(x) || is_nan(y)) {
        if (is_inf(x)) { return vec2<f32>(csgn_(0.0, x), nan_()); }
        if (is_inf(y)) { return vec2<f32>(0.0, csgn_(h, y)); }
        if (x == 0.0) { return vec2<f32>(x, nan_()); }
        return cnan2_();
    }
    if (is_inf(x) || is_inf(y)) { return vec2<f32>(csgn_(0.0, x), csgn_(h, y)); }
    if (max(abs(x), abs(y)) > 1e15) {
        return vec2<f32>(cdiv_(vec2<f32>(1.0, 0.0), z).x, csgn_(h, y));
    }
    // On x >= 0 (atanh is odd), so that the ratio is never near -1.
    let f = csgn_(1.0, x);
    let ax = abs(x);
    let ay = f * y;
    let u = 1.0 - ax;
    // At |x| = 1 with |y| below epsilon, (1-|x|)² + y² underflows (or is flushed): the real
    // part is log(4/y²)/4 = (log 2 - log|y|)/2 and the imaginary atan2(2, -|y|)/2, as C99's
    // catanh in musl and FreeBSD take them.
    if (ax == 1.0 && ay != 0.0 && abs(ay) < 1.1920929e-7) {
        // clogabs_ scales a subnormal |y| up first: lavapipe's log is wrong on subnormals.
        let re = 0.5 * (0.69314718055994531 - clogabs_(ay, 0.0));
        return f * vec2<f32>(re, csgn_(0.5 * atan2_(2.0, -abs(ay)), ay));
    }
    let re = 0.25 * log1p_(4.0 * ax / (u * u + ay * ay));
    return f * vec2<f32>(re, 0.5 * atan2_(2.0 * ay, u * (1.0 + ax) - ay * ay));
}
fn catan_(z: vec2<f32>) -> vec2<f32> { return ctimes_mi_(catanh_(ctimes_i_(z))); }
// z/|z|, 0 for 0; one infinite part counts as ±1 beside the finite one's 0 (the limit),
// two are NaN, as NumPy gives.
fn csign_(z: vec2<f32>) -> vec2<f32> {
    if (is_nan(z.x) || is_nan(z.y) || (is_inf(z.x) && is_inf(z.y))) { return cnan2_(); }
    if (z.x == 0.0 && z.y == 0.0) { return vec2<f32>(0.0, 0.0); }
    var w = z;
    if (is_inf(z.x) || is_inf(z.y)) {
        w = vec2<f32>(select(csgn_(0.0, z.x), csgn_(1.0, z.x), is_inf(z.x)), select(csgn_(0.0, z.y), csgn_(1.0, z.y), is_inf(z.y)));
    }
    return w / hypot_(w.x, w.y);
}
fn cround_(z: vec2<f32>) -> vec2<f32> { return round(z); }
// a^b as NumPy computes it: 1 for b = 0; 0^b is 0 where Re b > 0, else NaN; an integer b
// with |b| < 100 by repeated squaring (exact for small powers, as NumPy); else exp(b·log a).
fn cpow_(a: vec2<f32>, b: vec2<f32>) -> vec2<f32> {
    if (b.x == 0.0 && b.y == 0.0) { return vec2<f32>(1.0, 0.0); }
    if (a.x == 0.0 && a.y == 0.0) {
        if (b.x > 0.0) { return vec2<f32>(0.0, 0.0); }
        return cnan2_();
    }
    if (b.y == 0.0 && trunc(b.x) == b.x && abs(b.x) < 100.0) {
        var n = u32(abs(b.x));
        var r = vec2<f32>(1.0, 0.0);
        var p = a;
        for (var k = 0u; k < 8u; k++) {
            if ((n & 1u) == 1u) { r = cmul_(r, p); }
            n = n >> 1u;
            if (n == 0u) { break; }
            p = cmul_(p, p);
        }
        if (b.x < 0.0) { return cdiv_(vec2<f32>(1.0, 0.0), r); }
        return r;
    }
    return cexp_(cmul_(b, clog_(a)));
}
