// The float64 transcendental functions of the array kernels (src/array/ops.rs: every name
// ends `_m64`), appended after array_prelude_f64.wgsl only to kernels that call one: Vulkan's
// GLSL.std.450 exp, log, sin, pow… are defined for 16- and 32-bit floats only, and an f32
// answer in a float64 array would be float32 accuracy. These are Sun's fdlibm as FreeBSD's
// msun and musl carry it (argument reduction, then a minimax polynomial or rational
// function), computed in f64 throughout, the words of a double read and written through
// `bitcast<u64>`. Each stays within a few ulp of the correctly rounded result
// (tests/array_float64_math.rs measures it); docs/ARRAYS.md lists the bounds. Loops: none.
//
// sin, cos and tan reduce by Cody-Waite with pi/2 in three parts, exact for
// |x| < 2^20 * pi/2 (about 1.65e6), beyond by Payne-Hanek (shaders/array_rem_pio2_f64.wgsl).

// The high word as fdlibm's signed int32, the low word, and a double of two words.
fn hw_m(x: f64) -> i32 { return bitcast<i32>(u32(bitcast<u64>(x) >> 32u)); }
fn lw_m(x: f64) -> u32 { return u32(bitcast<u64>(x) & 0xfffffffflu); }
fn mk_m(h: i32, l: u32) -> f64 { return bitcast<f64>((u64(bitcast<u32>(h)) << 32u) | u64(l)); }
// x with its low word zeroed: the head of a head-and-tail split, exact on the bits (a
// compiler cannot reassociate it away, as it may `(c - (c - a))`).
fn lo0_m(x: f64) -> f64 { return bitcast<f64>(bitcast<u64>(x) & 0xffffffff00000000lu); }
fn pow2_m(k: i32) -> f64 { return bitcast<f64>(u64(u32(k + 1023)) << 52u); }
fn inf_m() -> f64 { return bitcast<f64>(0x7ff0000000000000lu); }
// x * 2^n for any n, with a single rounding where the result is subnormal (musl's scalbn).
fn scalbn_m(x: f64, n0: i32) -> f64 {
    var y = x;
    var n = n0;
    if (n > 1023) {
        y = y * pow2_m(1023); n = n - 1023;
        if (n > 1023) { y = y * pow2_m(1023); n = min(n - 1023, 1023); }
    } else if (n < -1022) {
        // 2^-1022 * 2^53: scaling down in two steps rounds once, in the last.
        y = y * pow2_m(-969); n = n + 969;
        if (n < -1022) { y = y * pow2_m(-969); n = max(n + 969, -1022); }
    }
    return y * pow2_m(n);
}

// ---- exp, expm1 --------------------------------------------------------------------------
const LN2_HI_M: f64 = 6.93147180369123816490e-01;
const LN2_LO_M: f64 = 1.90821492927058770002e-10;
const INVLN2_M: f64 = 1.44269504088896338700e+00;

fn exp_m64(x0: f64) -> f64 {
    var x = x0;
    let hx0 = hw_m(x);
    let xsb = (hx0 >> 31u) & 1;
    let hx = hx0 & 0x7fffffff;
    if (hx >= 0x40862E42) {
        if (hx >= 0x7ff00000) {
            if (is_nan64(x)) { return x; }
            return select(x, 0.0lf, xsb == 1);
        }
        if (x > 7.09782712893383973096e+02lf) { return inf_m(); }
        if (x < -7.45133219101941108420e+02lf) { return 0.0lf; }
    }
    var hi = 0.0lf;
    var lo = 0.0lf;
    var k = 0;
    if (hx > 0x3fd62e42) {
        if (hx < 0x3FF0A2B2) {
            let sg = select(1.0lf, -1.0lf, xsb == 1);
            hi = x - sg * LN2_HI_M;
            lo = sg * LN2_LO_M;
            k = 1 - xsb - xsb;
        } else {
            let t = round(INVLN2_M * x);
            k = i32(t);
            hi = x - t * LN2_HI_M;
            lo = t * LN2_LO_M;
        }
        x = hi - lo;
    } else if (hx < 0x3e300000) {
        return 1.0lf + x;
    }
    let t = x * x;
    let c = x - t * (1.66666666666666019037e-01lf + t * (-2.77777777770155933842e-03lf
        + t * (6.61375632143793436117e-05lf + t * (-1.65339022054652515390e-06lf
        + t * 4.13813679705723846039e-08lf))));
    if (k == 0) { return 1.0lf - ((x * c) / (c - 2.0lf) - x); }
    let y = 1.0lf - ((lo - (x * c) / (2.0lf - c)) - hi);
    return scalbn_m(y, k);
}

fn expm1_m64(x0: f64) -> f64 {
    var x = x0;
    let hx0 = hw_m(x);
    let xsb = (hx0 >> 31u) & 1;
    let hx = hx0 & 0x7fffffff;
    if (hx >= 0x4043687A) {
        if (hx >= 0x40862E42) {
            if (hx >= 0x7ff00000) {
                if (is_nan64(x)) { return x; }
                return select(x, -1.0lf, xsb == 1);
            }
            if (x > 7.09782712893383973096e+02lf) { return inf_m(); }
        }
        if (xsb == 1) { return -1.0lf; }
    }
    var k = 0;
    var c = 0.0lf;
    if (hx > 0x3fd62e42) {
        var hi = 0.0lf;
        var lo = 0.0lf;
        if (hx < 0x3FF0A2B2) {
            if (xsb == 0) { hi = x - LN2_HI_M; lo = LN2_LO_M; k = 1; }
            else { hi = x + LN2_HI_M; lo = -LN2_LO_M; k = -1; }
        } else {
            let t = round(INVLN2_M * x);
            k = i32(t);
            hi = x - t * LN2_HI_M;
            lo = t * LN2_LO_M;
        }
        x = hi - lo;
        c = (hi - x) - lo;
    } else if (hx < 0x3c900000) {
        return x;
    }
    let hfx = 0.5lf * x;
    let hxs = x * hfx;
    let r1 = 1.0lf + hxs * (-3.33333333333331316428e-02lf + hxs * (1.58730158725481460165e-03lf
        + hxs * (-7.93650757867487942473e-05lf + hxs * (4.00821782732936239552e-06lf
        + hxs * -2.01099218183624371326e-07lf))));
    var t = 3.0lf - r1 * hfx;
    var e = hxs * ((r1 - t) / (6.0lf - x * t));
    if (k == 0) { return x - (x * e - hxs); }
    e = x * (e - c) - c;
    e = e - hxs;
    if (k == -1) { return 0.5lf * (x - e) - 0.5lf; }
    if (k == 1) {
        if (x < -0.25lf) { return -2.0lf * (e - (x + 0.5lf)); }
        return 1.0lf + 2.0lf * (x - e);
    }
    if (k <= -2 || k > 56) {
        let y = 1.0lf - (e - x);
        return scalbn_m(y, k) - 1.0lf;
    }
    if (k < 20) {
        t = mk_m(0x3ff00000 - (0x200000 >> u32(k)), 0u);
        return (t - (e - x)) * pow2_m(k);
    }
    t = mk_m((0x3ff - k) << 20u, 0u);
    return ((x - (e + t)) + 1.0lf) * pow2_m(k);
}

// ---- log, log2, log10, log1p -------------------------------------------------------------
// log(1+f) - f + f*f/2 for 1+f in [sqrt(2)/2, sqrt(2)] (k_log.h's k_log1p).
fn k_log1p_m(f: f64) -> f64 {
    let s = f / (2.0lf + f);
    let z = s * s;
    let w = z * z;
    let t1 = w * (3.999999999940941908e-01lf + w * (2.222219843214978396e-01lf
        + w * 1.531383769920937332e-01lf));
    let t2 = z * (6.666666666666735130e-01lf + w * (2.857142874366239149e-01lf
        + w * (1.818357216161805012e-01lf + w * 1.479819860511658591e-01lf)));
    let hfsq = 0.5lf * f * f;
    return s * (hfsq + t2 + t1);
}
// x = 2^k (1+f) with 1+f in [sqrt(2)/2, sqrt(2)): (f, k); x finite and positive.
struct Lred_m { f: f64, k: i32 }
fn log_reduce_m(x0: f64) -> Lred_m {
    var x = x0;
    var k = 0;
    var hx = hw_m(x);
    if (hx < 0x00100000) {
        k = -54;
        x = x * 1.80143985094819840000e+16lf;
        hx = hw_m(x);
    }
    k = k + (hx >> 20u) - 1023;
    hx = hx & 0x000fffff;
    let i = (hx + 0x95f64) & 0x100000;
    x = mk_m(hx | (i ^ 0x3ff00000), lw_m(x));
    k = k + (i >> 20u);
    return Lred_m(x - 1.0lf, k);
}
// NaN, -inf and the domain errors shared by the logarithms: `x` itself where it is the
// answer's sign test that decides.
fn log_special_m(x: f64) -> bool {
    return is_nan64(x) || x <= 0.0lf || is_inf64(x);
}
fn log_special_value_m(x: f64) -> f64 {
    if (is_nan64(x)) { return x; }
    if (x == 0.0lf) { return -inf_m(); }
    if (x < 0.0lf) { return nan64_(); }
    return x;
}

fn log_m64(x: f64) -> f64 {
    if (log_special_m(x)) { return log_special_value_m(x); }
    let r = log_reduce_m(x);
    let f = r.f;
    let dk = f64(r.k);
    let hfsq = 0.5lf * f * f;
    let s = k_log1p_m(f);
    return dk * LN2_HI_M - ((hfsq - (s + dk * LN2_LO_M)) - f);
}

// log2 and log10 as FreeBSD's: f - hfsq split into a 32-bit head and a tail, each scaled by
// a head-and-tail 1/ln(b), the exponent added last with its rounding error carried.
fn log2_m64(x: f64) -> f64 {
    if (log_special_m(x)) { return log_special_value_m(x); }
    let r = log_reduce_m(x);
    let f = r.f;
    let hfsq = 0.5lf * f * f;
    let rr = k_log1p_m(f);
    let hi = lo0_m(f - hfsq);
    let lo = (f - hi) - hfsq + rr;
    let ivln2hi = 1.44269504072144627571e+00lf;
    let ivln2lo = 1.67517131648865118353e-10lf;
    var val_hi = hi * ivln2hi;
    var val_lo = (lo + hi) * ivln2lo + lo * ivln2hi;
    let y = f64(r.k);
    let w = y + val_hi;
    val_lo = val_lo + ((y - w) + val_hi);
    val_hi = w;
    return val_lo + val_hi;
}

fn log10_m64(x: f64) -> f64 {
    if (log_special_m(x)) { return log_special_value_m(x); }
    let r = log_reduce_m(x);
    let f = r.f;
    let hfsq = 0.5lf * f * f;
    let rr = k_log1p_m(f);
    let hi = lo0_m(f - hfsq);
    let lo = (f - hi) - hfsq + rr;
    let ivln10hi = 4.34294481878168880939e-01lf;
    let ivln10lo = 2.50829467116452752298e-11lf;
    let log10_2hi = 3.01029995663611771306e-01lf;
    let log10_2lo = 3.69423907715893078616e-13lf;
    let y = f64(r.k);
    var val_hi = hi * ivln10hi;
    let y2 = y * log10_2hi;
    var val_lo = y * log10_2lo + (lo + hi) * ivln10lo + lo * ivln10hi;
    let w = y2 + val_hi;
    val_lo = val_lo + ((y2 - w) + val_hi);
    val_hi = w;
    return val_lo + val_hi;
}

fn log1p_m64(x: f64) -> f64 {
    let hx = hw_m(x);
    let ax = hx & 0x7fffffff;
    var k = 1;
    var f = 0.0lf;
    var c = 0.0lf;
    var hu = 0;
    if (is_nan64(x)) { return x; }
    if (hx < 0x3FDA827A) {
        if (ax >= 0x3ff00000) {
            if (x == -1.0lf) { return -inf_m(); }
            return nan64_();
        }
        if (ax < 0x3e200000) {
            if (ax < 0x3c900000) { return x; }
            return x - x * x * 0.5lf;
        }
        if (hx > 0 || hx <= bitcast<i32>(0xbfd2bec4u)) { k = 0; f = x; hu = 1; }
    }
    if (hx >= 0x7ff00000) { return x; }
    if (k != 0) {
        var u = x;
        if (hx < 0x43400000) {
            u = 1.0lf + x;
            hu = hw_m(u);
            k = (hu >> 20u) - 1023;
            c = select(x - (u - 1.0lf), 1.0lf - (u - x), k > 0);
            c = c / u;
        } else {
            hu = hw_m(u);
            k = (hu >> 20u) - 1023;
            c = 0.0lf;
        }
        hu = hu & 0x000fffff;
        if (hu < 0x6a09e) {
            u = mk_m(hu | 0x3ff00000, lw_m(u));
        } else {
            k = k + 1;
            u = mk_m(hu | 0x3fe00000, lw_m(u));
            hu = (0x00100000 - hu) >> 2u;
        }
        f = u - 1.0lf;
    }
    let hfsq = 0.5lf * f * f;
    let dk = f64(k);
    if (hu == 0) {
        if (f == 0.0lf) {
            if (k == 0) { return 0.0lf; }
            c = c + dk * LN2_LO_M;
            return dk * LN2_HI_M + c;
        }
        let r = hfsq * (1.0lf - 0.66666666666666666lf * f);
        if (k == 0) { return f - r; }
        return dk * LN2_HI_M - ((r - (dk * LN2_LO_M + c)) - f);
    }
    let s = k_log1p_m(f);
    if (k == 0) { return f - (hfsq - s); }
    return dk * LN2_HI_M - ((hfsq - (s + (dk * LN2_LO_M + c))) - f);
}

// ---- sin, cos, tan -----------------------------------------------------------------------
// sin(x + y) on [-pi/4, pi/4], y the tail of x (k_sin.c).
fn ksin_m(x: f64, y: f64, iy: bool) -> f64 {
    let z = x * x;
    let w = z * z;
    let r = 8.33333333332248946124e-03lf + z * (-1.98412698298579493134e-04lf
        + z * 2.75573137070700676789e-06lf) + z * w * (-2.50507602534068634195e-08lf
        + z * 1.58969099521155010221e-10lf);
    let v = z * x;
    let s1 = -1.66666666666666324348e-01lf;
    if (!iy) { return x + v * (s1 + z * r); }
    return x - ((z * (0.5lf * y - v * r) - y) - v * s1);
}
// cos(x + y) on [-pi/4, pi/4] (k_cos.c).
fn kcos_m(x: f64, y: f64) -> f64 {
    let z = x * x;
    let w = z * z;
    let r = z * (4.16666666666666019037e-02lf + z * (-1.38888888888741095749e-03lf
        + z * 2.48015872894767294178e-05lf)) + w * w * (-2.75573143513906633035e-07lf
        + z * (2.08757232129817482790e-09lf + z * -1.13596475577881948265e-11lf));
    let hz = 0.5lf * z;
    let ww = 1.0lf - hz;
    return ww + (((1.0lf - ww) - hz) + (z * r - x * y));
}
// tan(x + y) (odd: 1) or -1/tan(x + y) (odd: -1) on [-pi/4, pi/4] (k_tan.c).
fn ktan_m(x0: f64, y0: f64, iy: i32) -> f64 {
    var x = x0;
    var y = y0;
    let hx = hw_m(x);
    let ix = hx & 0x7fffffff;
    let big = ix >= 0x3FE59428;
    if (big) {
        if (hx < 0) { x = -x; y = -y; }
        let z = 7.85398163397448278999e-01lf - x;
        let w = 3.06161699786838301793e-17lf - y;
        x = z + w;
        y = 0.0lf;
    }
    let z = x * x;
    let w = z * z;
    var r = 1.33333333333201242699e-01lf + w * (2.18694882948595424599e-02lf
        + w * (3.59207910759131235356e-03lf + w * (5.88041240820264096874e-04lf
        + w * (7.81794442939557092300e-05lf + w * -1.85586374855275456654e-05lf))));
    var v = z * (5.39682539762260521377e-02lf + w * (8.86323982359930005737e-03lf
        + w * (1.45620945432529025516e-03lf + w * (2.46463134818469906812e-04lf
        + w * (7.14072491382608190305e-05lf + w * 2.59073051863633712884e-05lf)))));
    let s = z * x;
    r = y + z * (s * (r + v) + y);
    r = r + 3.33333333333334091986e-01lf * s;
    let ww = x + r;
    if (big) {
        v = f64(iy);
        return f64(1 - ((hx >> 30u) & 2)) * (v - 2.0lf * (x - (ww * ww / (ww + v) - r)));
    }
    if (iy == 1) { return ww; }
    let zz = lo0_m(ww);
    v = r - (zz - x);
    let a = -1.0lf / ww;
    let t = lo0_m(a);
    let ss = 1.0lf + t * zz;
    return t + a * (ss + t * v);
}
// x = n * pi/2 + (y0 + y1), |y0 + y1| <= pi/4 (e_rem_pio2.c's medium case, exact for
// |x| < 2^20 * pi/2).
fn rem_pio2_m(x0: f64) -> Rp_m {
    let x = x0;
    if ((hw_m(x) & 0x7fffffff) >= 0x413921fb) {
        // Past the exact range: Payne-Hanek (shaders/array_rem_pio2_f64.wgsl).
        return rem_pio2_big_m(x);
    }
    let pio2_1 = 1.57079632673412561417e+00lf;
    let pio2_1t = 6.07710050650619224932e-11lf;
    let pio2_2 = 6.07710050630396597660e-11lf;
    let pio2_2t = 2.02226624879595063154e-21lf;
    let pio2_3 = 2.02226624871116645580e-21lf;
    let pio2_3t = 8.47842766036889956997e-32lf;
    let ix = hw_m(x) & 0x7fffffff;
    let fnn = round(x * 6.36619772367581382433e-01lf);
    var r = x - fnn * pio2_1;
    var w = fnn * pio2_1t;
    let j = ix >> 20u;
    var y0 = r - w;
    var i = j - ((hw_m(y0) >> 20u) & 0x7ff);
    if (i > 16) {
        var t = r;
        w = fnn * pio2_2;
        r = t - w;
        w = fnn * pio2_2t - ((t - r) - w);
        y0 = r - w;
        i = j - ((hw_m(y0) >> 20u) & 0x7ff);
        if (i > 49) {
            t = r;
            w = fnn * pio2_3;
            r = t - w;
            w = fnn * pio2_3t - ((t - r) - w);
            y0 = r - w;
        }
    }
    return Rp_m(i32(fnn), y0, (r - y0) - w);
}

fn sin_m64(x: f64) -> f64 {
    let ix = hw_m(x) & 0x7fffffff;
    if (ix <= 0x3fe921fb) {
        if (ix < 0x3e500000) { return x; }
        return ksin_m(x, 0.0lf, false);
    }
    if (ix >= 0x7ff00000) { return nan64_(); }
    let r = rem_pio2_m(x);
    switch (r.n & 3) {
        case 0: { return ksin_m(r.y0, r.y1, true); }
        case 1: { return kcos_m(r.y0, r.y1); }
        case 2: { return -ksin_m(r.y0, r.y1, true); }
        default: { return -kcos_m(r.y0, r.y1); }
    }
}

fn cos_m64(x: f64) -> f64 {
    let ix = hw_m(x) & 0x7fffffff;
    if (ix <= 0x3fe921fb) {
        if (ix < 0x3e46a09e) { return 1.0lf; }
        return kcos_m(x, 0.0lf);
    }
    if (ix >= 0x7ff00000) { return nan64_(); }
    let r = rem_pio2_m(x);
    switch (r.n & 3) {
        case 0: { return kcos_m(r.y0, r.y1); }
        case 1: { return -ksin_m(r.y0, r.y1, true); }
        case 2: { return -kcos_m(r.y0, r.y1); }
        default: { return ksin_m(r.y0, r.y1, true); }
    }
}

fn tan_m64(x: f64) -> f64 {
    let ix = hw_m(x) & 0x7fffffff;
    if (ix <= 0x3fe921fb) {
        if (ix < 0x3e400000) { return x; }
        return ktan_m(x, 0.0lf, 1);
    }
    if (ix >= 0x7ff00000) { return nan64_(); }
    let r = rem_pio2_m(x);
    return ktan_m(r.y0, r.y1, 1 - ((r.n & 1) << 1u));
}

// ---- asin, acos, atan, atan2 -------------------------------------------------------------
const PIO2_HI_M: f64 = 1.57079632679489655800e+00;
const PIO2_LO_M: f64 = 6.12323399573676603587e-17;
// (asin(x) - x) / x^3 as a rational function of t = x^2 (e_asin.c's R).
fn asin_r_m(t: f64) -> f64 {
    let p = t * (1.66666666666666657415e-01lf + t * (-3.25565818622400915405e-01lf
        + t * (2.01212532134862925881e-01lf + t * (-4.00555345006794114027e-02lf
        + t * (7.91534994289814532176e-04lf + t * 3.47933107596021167570e-05lf)))));
    let q = 1.0lf + t * (-2.40339491173441421878e+00lf + t * (2.02094576023350569471e+00lf
        + t * (-6.88283971605453293030e-01lf + t * 7.70381505559019352791e-02lf)));
    return p / q;
}

fn asin_m64(x: f64) -> f64 {
    let hx = hw_m(x);
    let ix = hx & 0x7fffffff;
    if (is_nan64(x)) { return x; }
    if (ix >= 0x3ff00000) {
        if (abs(x) == 1.0lf) { return x * PIO2_HI_M + x * PIO2_LO_M; }
        return nan64_();
    }
    if (ix < 0x3fe00000) {
        if (ix < 0x3e400000) { return x; }
        return x + x * asin_r_m(x * x);
    }
    let w = 1.0lf - abs(x);
    let t = w * 0.5lf;
    let s = sqrt(t);
    let r = asin_r_m(t);
    var res = 0.0lf;
    if (ix >= 0x3FEF3333) {
        res = PIO2_HI_M - (2.0lf * (s + s * r) - PIO2_LO_M);
    } else {
        let f = lo0_m(s);
        let c = (t - f * f) / (s + f);
        let p = 2.0lf * s * r - (PIO2_LO_M - 2.0lf * c);
        let q = 7.85398163397448278999e-01lf - 2.0lf * f;
        res = 7.85398163397448278999e-01lf - (p - q);
    }
    return select(res, -res, hx < 0);
}

fn acos_m64(x: f64) -> f64 {
    let hx = hw_m(x);
    let ix = hx & 0x7fffffff;
    if (is_nan64(x)) { return x; }
    if (ix >= 0x3ff00000) {
        if (x == 1.0lf) { return 0.0lf; }
        if (x == -1.0lf) { return 3.14159265358979311600e+00lf + 2.0lf * PIO2_LO_M; }
        return nan64_();
    }
    if (ix < 0x3fe00000) {
        if (ix <= 0x3c600000) { return PIO2_HI_M + PIO2_LO_M; }
        return PIO2_HI_M - (x - (PIO2_LO_M - x * asin_r_m(x * x)));
    }
    if (hx < 0) {
        let z = (1.0lf + x) * 0.5lf;
        let s = sqrt(z);
        let w = asin_r_m(z) * s - PIO2_LO_M;
        return 3.14159265358979311600e+00lf - 2.0lf * (s + w);
    }
    let z = (1.0lf - x) * 0.5lf;
    let s = sqrt(z);
    let df = lo0_m(s);
    let c = (z - df * df) / (s + df);
    let w = asin_r_m(z) * s + c;
    return 2.0lf * (df + w);
}

fn atan_m64(x0: f64) -> f64 {
    var x = x0;
    let hx = hw_m(x);
    let ix = hx & 0x7fffffff;
    if (is_nan64(x)) { return x; }
    if (ix >= 0x44100000) {
        let r = PIO2_HI_M + PIO2_LO_M;
        return select(r, -r, hx < 0);
    }
    var id = -1;
    if (ix < 0x3fdc0000) {
        if (ix < 0x3e200000) { return x; }
    } else {
        x = abs(x);
        if (ix < 0x3ff30000) {
            if (ix < 0x3fe60000) { id = 0; x = (2.0lf * x - 1.0lf) / (2.0lf + x); }
            else { id = 1; x = (x - 1.0lf) / (x + 1.0lf); }
        } else {
            if (ix < 0x40038000) { id = 2; x = (x - 1.5lf) / (1.0lf + 1.5lf * x); }
            else { id = 3; x = -1.0lf / x; }
        }
    }
    let z = x * x;
    let w = z * z;
    let s1 = z * (3.33333333333329318027e-01lf + w * (1.42857142725034663711e-01lf
        + w * (9.09088713343650656196e-02lf + w * (6.66107313738753120669e-02lf
        + w * (4.97687799461593236017e-02lf + w * 1.62858201153657823623e-02lf)))));
    let s2 = w * (-1.99999999998764832476e-01lf + w * (-1.11111104054623557880e-01lf
        + w * (-7.69187620504482999495e-02lf + w * (-5.83357013379057348645e-02lf
        + w * -3.65315727442169155270e-02lf))));
    if (id < 0) { return x - x * (s1 + s2); }
    var hi = 0.0lf;
    var lo = 0.0lf;
    switch (id) {
        case 0: { hi = 4.63647609000806093515e-01lf; lo = 2.26987774529616870924e-17lf; }
        case 1: { hi = 7.85398163397448278999e-01lf; lo = 3.06161699786838301793e-17lf; }
        case 2: { hi = 9.82793723247329054082e-01lf; lo = 1.39033110312309984516e-17lf; }
        default: { hi = PIO2_HI_M; lo = PIO2_LO_M; }
    }
    let r = hi - ((x * (s1 + s2) - lo) - x);
    return select(r, -r, hx < 0);
}

fn atan2_m64(y: f64, x: f64) -> f64 {
    let pi = 3.1415926535897931160e+00lf;
    let pi_lo = 1.2246467991473531772e-16lf;
    if (is_nan64(x) || is_nan64(y)) { return x + y; }
    if (x == 1.0lf) { return atan_m64(y); }
    let hx = hw_m(x);
    let hy = hw_m(y);
    let m = ((hy >> 31u) & 1) | ((hx >> 30u) & 2);
    if (y == 0.0lf) {
        if (m < 2) { return y; }
        return select(pi, -pi, m == 3);
    }
    if (x == 0.0lf) { return select(PIO2_HI_M, -PIO2_HI_M, hy < 0); }
    if (is_inf64(x)) {
        if (is_inf64(y)) {
            switch (m) {
                case 0: { return 7.85398163397448278999e-01lf; }
                case 1: { return -7.85398163397448278999e-01lf; }
                case 2: { return 2.35619449019234492885e+00lf; }
                default: { return -2.35619449019234492885e+00lf; }
            }
        }
        switch (m) {
            case 0: { return 0.0lf; }
            case 1: { return -0.0lf; }
            case 2: { return pi; }
            default: { return -pi; }
        }
    }
    if (is_inf64(y)) { return select(PIO2_HI_M, -PIO2_HI_M, hy < 0); }
    let k = ((hy & 0x7fffffff) >> 20u) - ((hx & 0x7fffffff) >> 20u);
    var z = 0.0lf;
    var mm = m;
    if (k > 60) {
        z = PIO2_HI_M + 0.5lf * pi_lo;
        mm = m & 1;
    } else if (hx < 0 && k < -60) {
        z = 0.0lf;
    } else {
        z = atan_m64(abs(y / x));
    }
    switch (mm) {
        case 0: { return z; }
        case 1: { return -z; }
        case 2: { return pi - (z - pi_lo); }
        default: { return (z - pi_lo) - pi; }
    }
}
