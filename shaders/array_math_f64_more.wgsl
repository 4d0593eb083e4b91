// More float64 functions of the array kernels (src/array/ops.rs, names ending `_m64`), after
// array_prelude_f64.wgsl and array_math_f64.wgsl whose exp, expm1, log and log1p they build
// on: the hyperbolic functions and their inverses as musl has them, fdlibm's pow, musl's
// hypot, NumPy's logaddexp and nextafter on the bits. Loops: none.

// ---- sinh, cosh, tanh, asinh, acosh, atanh (musl's, from exp, expm1, log and log1p) ------
// exp(x) * s for x past log(DBL_MAX), without overflowing in between (musl's __expo2).
// The scaling by 2^2042 adds to the exponent's bits: a compiler may fold two constant
// factors into one, 2^2042, which is infinite.
fn expo2_m(x: f64, s: f64) -> f64 {
    let r = bitcast<u64>(exp_m64(x - bitcast<f64>(0x40962066151add8blu)) * s);
    if (((r >> 52u) & 0x7fflu) + 2042lu >= 0x7fflu) { return copysign_f64(inf_m(), s); }
    return bitcast<f64>(r + (2042lu << 52u));
}

fn sinh_m64(x: f64) -> f64 {
    if (is_nan64(x)) { return x; }
    let h = select(0.5lf, -0.5lf, x < 0.0lf);
    let ax = abs(x);
    let w = hw_m(ax);
    if (w < 0x40862e42) {
        let t = expm1_m64(ax);
        if (w < 0x3ff00000) {
            if (w < 0x3e500000) { return x; }
            return h * (2.0lf * t - t * t / (t + 1.0lf));
        }
        return h * (t + t / (t + 1.0lf));
    }
    return expo2_m(ax, 2.0lf * h);
}

fn cosh_m64(x: f64) -> f64 {
    if (is_nan64(x)) { return x; }
    let ax = abs(x);
    let w = hw_m(ax);
    if (w < 0x3fe62e42) {
        if (w < 0x3ff00000 - (26 << 20u)) { return 1.0lf; }
        let t = expm1_m64(ax);
        return 1.0lf + t * t / (2.0lf * (1.0lf + t));
    }
    if (w < 0x40862e42) {
        let t = exp_m64(ax);
        return 0.5lf * (t + 1.0lf / t);
    }
    return expo2_m(ax, 1.0lf);
}

fn tanh_m64(x: f64) -> f64 {
    if (is_nan64(x)) { return x; }
    let ax = abs(x);
    let w = hw_m(ax);
    var t = 0.0lf;
    if (w > 0x3fe193ea) {
        if (w > 0x40340000) {
            t = 1.0lf;
        } else {
            t = expm1_m64(2.0lf * ax);
            t = 1.0lf - 2.0lf / (t + 2.0lf);
        }
    } else if (w > 0x3fd058ae) {
        t = expm1_m64(2.0lf * ax);
        t = t / (t + 2.0lf);
    } else if (w >= 0x00100000) {
        t = expm1_m64(-2.0lf * ax);
        t = -t / (t + 2.0lf);
    } else {
        t = ax;
    }
    return copysign_f64(t, x);
}

fn asinh_m64(x: f64) -> f64 {
    if (is_nan64(x) || is_inf64(x)) { return x; }
    let e = (hw_m(x) >> 20u) & 0x7ff;
    var a = abs(x);
    if (e >= 0x3ff + 26) {
        a = log_m64(a) + 0.693147180559945309417232121458176568lf;
    } else if (e >= 0x3ff + 1) {
        a = log_m64(2.0lf * a + 1.0lf / (sqrt(a * a + 1.0lf) + a));
    } else if (e >= 0x3ff - 26) {
        a = log1p_m64(a + a * a / (sqrt(a * a + 1.0lf) + 1.0lf));
    }
    return copysign_f64(a, x);
}

fn acosh_m64(x: f64) -> f64 {
    if (is_nan64(x)) { return x; }
    if (x < 1.0lf) { return nan64_(); }
    let e = (hw_m(x) >> 20u) & 0x7ff;
    if (e < 0x3ff + 1) {
        let y = x - 1.0lf;
        return log1p_m64(y + sqrt(y * y + 2.0lf * y));
    }
    if (e < 0x3ff + 26) { return log_m64(2.0lf * x - 1.0lf / (x + sqrt(x * x - 1.0lf))); }
    return log_m64(x) + 0.693147180559945309417232121458176568lf;
}

fn atanh_m64(x: f64) -> f64 {
    if (is_nan64(x)) { return x; }
    let e = (hw_m(x) >> 20u) & 0x7ff;
    var y = abs(x);
    if (y > 1.0lf) { return nan64_(); }
    if (e < 0x3ff - 1) {
        if (e >= 0x3ff - 32) { y = 0.5lf * log1p_m64(2.0lf * y + 2.0lf * y * y / (1.0lf - y)); }
    } else {
        y = 0.5lf * log1p_m64(2.0lf * (y / (1.0lf - y)));
    }
    return copysign_f64(y, x);
}

// ---- pow (fdlibm's e_pow.c: log2(x) in two pieces, y * log2(x) split exactly, 2^z) ------
fn pow_m64(x: f64, y: f64) -> f64 {
    let hx = hw_m(x);
    let lx = lw_m(x);
    let hy = hw_m(y);
    let ly = lw_m(y);
    let ix = hx & 0x7fffffff;
    let iy = hy & 0x7fffffff;
    if ((u32(iy) | ly) == 0u) { return 1.0lf; }
    if (x == 1.0lf) { return 1.0lf; }
    if (is_nan64(x) || is_nan64(y)) { return nan64_(); }
    // yisint: 0 y is not an integer, 1 an odd one, 2 an even one (only needed for x < 0).
    var yisint = 0;
    if (hx < 0) {
        if (iy >= 0x43400000) {
            yisint = 2;
        } else if (iy >= 0x3ff00000) {
            let k = (iy >> 20u) - 0x3ff;
            if (k > 20) {
                let j = ly >> u32(52 - k);
                if ((j << u32(52 - k)) == ly) { yisint = 2 - i32(j & 1u); }
            } else if (ly == 0u) {
                let j = iy >> u32(20 - k);
                if ((j << u32(20 - k)) == iy) { yisint = 2 - (j & 1); }
            }
        }
    }
    if (ly == 0u) {
        if (iy == 0x7ff00000) {
            if (abs(x) == 1.0lf) { return 1.0lf; }
            if (ix >= 0x3ff00000) { return select(0.0lf, y, hy >= 0); }
            return select(0.0lf, -y, hy < 0);
        }
        if (iy == 0x3ff00000) {
            if (hy < 0) { return 1.0lf / x; }
            return x;
        }
        if (hy == 0x40000000) { return x * x; }
        if (hy == 0x3fe00000 && hx >= 0) { return sqrt(x); }
    }
    var ax = abs(x);
    if (lx == 0u && (ix == 0x7ff00000 || ix == 0 || ix == 0x3ff00000)) {
        var z = ax;
        if (hy < 0) { z = 1.0lf / z; }
        if (hx < 0) {
            if (ix == 0x3ff00000 && yisint == 0) { return nan64_(); }
            if (yisint == 1) { z = -z; }
        }
        return z;
    }
    if (hx < 0 && yisint == 0) { return nan64_(); }
    var sgn = 1.0lf;
    if (hx < 0 && yisint == 1) { sgn = -1.0lf; }
    var t1 = 0.0lf;
    var t2 = 0.0lf;
    if (iy > 0x41e00000) {
        if (iy > 0x43f00000) {
            if (ix <= 0x3fefffff) { return select(0.0lf, inf_m(), hy < 0); }
            if (ix >= 0x3ff00000) { return select(0.0lf, inf_m(), hy > 0); }
        }
        if (ix < 0x3fefffff) { return copysign_f64(select(0.0lf, inf_m(), hy < 0), sgn); }
        if (ix > 0x3ff00000) { return copysign_f64(select(0.0lf, inf_m(), hy > 0), sgn); }
        let t = ax - 1.0lf;
        let w = (t * t) * (0.5lf - t * (0.3333333333333333333333lf - t * 0.25lf));
        // fdlibm multiplies t by ivln2_h (21 bits) whole, exact only for a t of 32 bits;
        // t's head of 21 bits keeps the product exact for any x near 1.
        let th = lo0_m(t);
        let u = 1.44269502162933349609e+00lf * th;
        let v = (t - th) * 1.44269502162933349609e+00lf + t * 1.92596299112661746887e-08lf
            - w * 1.44269504088896338700e+00lf;
        t1 = lo0_m(u + v);
        t2 = v - (t1 - u);
    } else {
        var n = 0;
        var ixx = ix;
        if (ixx < 0x00100000) {
            ax = ax * 9007199254740992.0lf;
            n = n - 53;
            ixx = hw_m(ax);
        }
        n = n + ((ixx >> 20u) - 0x3ff);
        let j = ixx & 0x000fffff;
        ixx = j | 0x3ff00000;
        var k = 0;
        if (j <= 0x3988E) { k = 0; }
        else if (j < 0xBB67A) { k = 1; }
        else { k = 0; n = n + 1; ixx = ixx - 0x00100000; }
        ax = mk_m(ixx, lw_m(ax));
        let bp = select(1.0lf, 1.5lf, k == 1);
        let dp_h = select(0.0lf, 5.84962487220764160156e-01lf, k == 1);
        let dp_l = select(0.0lf, 1.35003920212974897128e-08lf, k == 1);
        var u = ax - bp;
        var v = 1.0lf / (ax + bp);
        let ss = u * v;
        let s_h = lo0_m(ss);
        var t_h = mk_m(((ixx >> 1u) | 0x20000000) + 0x00080000 + (k << 18u), 0u);
        var t_l = ax - (t_h - bp);
        let s_l = v * ((u - s_h * t_h) - s_h * t_l);
        var s2 = ss * ss;
        var r = s2 * s2 * (5.99999999999994648725e-01lf + s2 * (4.28571428578550184252e-01lf
            + s2 * (3.33333329818377432918e-01lf + s2 * (2.72728123808534006489e-01lf
            + s2 * (2.30660745775561754067e-01lf + s2 * 2.06975017800338417784e-01lf)))));
        r = r + s_l * (s_h + ss);
        s2 = s_h * s_h;
        t_h = lo0_m(3.0lf + s2 + r);
        t_l = r - ((t_h - 3.0lf) - s2);
        u = s_h * t_h;
        v = s_l * t_h + t_l * ss;
        let p_h = lo0_m(u + v);
        let p_l = v - (p_h - u);
        let cp = 9.61796693925975554329e-01lf;
        let cp_h = 9.61796700954437255859e-01lf;
        let cp_l = -7.02846165095275826516e-09lf;
        let z_h = cp_h * p_h;
        let z_l = cp_l * p_h + p_l * cp + dp_l;
        let t = f64(n);
        t1 = lo0_m(((z_h + z_l) + dp_h) + t);
        t2 = z_l - (((t1 - t) - dp_h) - z_h);
    }
    let y1 = lo0_m(y);
    let p_l0 = (y - y1) * t1 + y * t2;
    var p_h = y1 * t1;
    var z = p_l0 + p_h;
    let j = hw_m(z);
    let i = lw_m(z);
    let ovt = 8.0085662595372944372e-17lf;
    if (j >= 0x40900000) {
        if (((j - 0x40900000) | bitcast<i32>(i)) != 0) { return copysign_f64(inf_m(), sgn); }
        if (p_l0 + ovt > z - p_h) { return copysign_f64(inf_m(), sgn); }
    } else if ((j & 0x7fffffff) >= 0x4090cc00) {
        if (((j - bitcast<i32>(0xc090cc00u)) | bitcast<i32>(i)) != 0) { return copysign_f64(0.0lf, sgn); }
        if (p_l0 <= z - p_h) { return copysign_f64(0.0lf, sgn); }
    }
    let ii = j & 0x7fffffff;
    var k = (ii >> 20u) - 0x3ff;
    var n = 0;
    if (ii > 0x3fe00000) {
        n = j + (0x00100000 >> u32(k + 1));
        k = ((n & 0x7fffffff) >> 20u) - 0x3ff;
        let t = mk_m(n & ~(0x000fffff >> u32(k)), 0u);
        n = ((n & 0x000fffff) | 0x00100000) >> u32(20 - k);
        if (j < 0) { n = -n; }
        p_h = p_h - t;
    }
    let t = lo0_m(p_l0 + p_h);
    let u = t * 6.93147182464599609375e-01lf;
    let v = (p_l0 - (t - p_h)) * 6.93147180559945286227e-01lf + t * -1.90465429995776804525e-09lf;
    z = u + v;
    let w = v - (z - u);
    let tt = z * z;
    let tt1 = z - tt * (1.66666666666666019037e-01lf + tt * (-2.77777777770155933842e-03lf
        + tt * (6.61375632143793436117e-05lf + tt * (-1.65339022054652515390e-06lf
        + tt * 4.13813679705723846039e-08lf))));
    let r = (z * tt1) / (tt1 - 2.0lf) - (w + z * w);
    z = 1.0lf - (r - z);
    let jj = hw_m(z) + (n << 20u);
    if ((jj >> 20u) <= 0) { z = scalbn_m(z, n); }
    else { z = mk_m(jj, lw_m(z)); }
    return sgn * z;
}

// ---- hypot, logaddexp, nextafter ---------------------------------------------------------
// a*a as hi + lo exactly (Dekker's product, the split on the bits).
struct Sq_m { hi: f64, lo: f64 }
fn sq_m(a: f64) -> Sq_m {
    let ah = bitcast<f64>(bitcast<u64>(a) & 0xfffffffff8000000lu);
    let al = a - ah;
    let hi = a * a;
    let lo = ((ah * ah - hi) + 2.0lf * ah * al) + al * al;
    return Sq_m(hi, lo);
}
// musl's hypot: scaled out of overflow and underflow, the squares summed exactly-ish.
fn hypot_m64(a: f64, b: f64) -> f64 {
    if (is_inf64(a) || is_inf64(b)) { return inf_m(); }
    if (is_nan64(a) || is_nan64(b)) { return nan64_(); }
    var x = max(abs(a), abs(b));
    var y = min(abs(a), abs(b));
    let ex = (hw_m(x) >> 20u) & 0x7ff;
    let ey = (hw_m(y) >> 20u) & 0x7ff;
    if (ey == 0 && y == 0.0lf) { return x; }
    if (ex - ey > 64) { return x + y; }
    var z = 1.0lf;
    if (ex > 0x3ff + 510) {
        z = pow2_m(700); x = x * pow2_m(-700); y = y * pow2_m(-700);
    } else if (ey < 0x3ff - 450) {
        z = pow2_m(-700); x = x * pow2_m(700); y = y * pow2_m(700);
    }
    let sx = sq_m(x);
    let sy = sq_m(y);
    return z * sqrt(sy.lo + sx.lo + sy.hi + sx.hi);
}

// NumPy's npy_logaddexp: the larger plus log1p(exp(-|a - b|)).
fn logaddexp_m64(a: f64, b: f64) -> f64 {
    if (a == b) { return a + 0.693147180559945309417232121458176568lf; }
    if (is_nan64(a) || is_nan64(b)) { return nan64_(); }
    let d = a - b;
    if (d > 0.0lf) { return a + log1p_m64(exp_m64(-d)); }
    return b + log1p_m64(exp_m64(d));
}

fn nextafter_m64(x: f64, y: f64) -> f64 {
    if (is_nan64(x) || is_nan64(y)) { return nan64_(); }
    let ux = bitcast<u64>(x);
    let uy = bitcast<u64>(y);
    if (ux == uy || (x == 0.0lf && y == 0.0lf)) { return y; }
    if (x == 0.0lf) { return bitcast<f64>((uy & 0x8000000000000000lu) | 1lu); }
    // Away from zero when y is past x on x's side of zero, else toward it.
    if ((x < y) == (x > 0.0lf)) { return bitcast<f64>(ux + 1lu); }
    return bitcast<f64>(ux - 1lu);
}
