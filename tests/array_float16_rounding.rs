//! The float16 rounding of the device (`f16_round_` in shaders/array_prelude.wgsl) against an
//! independent reference (`nearest_f16`: of the two binary16 neighbours of x the nearer by
//! exact comparison in f64, ties to the even mantissa; `half` only lists the candidates) on
//! every binary16 value, every midpoint between neighbours and the floats one f32 ulp either
//! side of it, the overflow threshold 65520, f32 subnormals and extremes, infinities and NaN,
//! through a cast into poisoned outputs; then the arithmetic a + b, a·b and a / b of float16
//! operands against the exact (f64) result rounded by the same reference.

mod common;

use half::f16;
use suanli::array::{Array, Binary, DType};
use suanli::Device;

const H: DType = DType::Float16;

/// Leaves a freed buffer of `words` NaNs in the pool, so an output the kernels fail to write
/// shows as NaN.
fn poison(dev: &Device, words: usize) {
    let p = Array::full(dev, &[words.max(1)], f64::NAN, DType::Float32).unwrap();
    p.eval().unwrap();
    drop(p);
}

/// The binary16 bits each device word of `a` (a float16 array) holds, read as host bytes.
fn bits(a: &Array) -> Vec<u16> {
    a.to_bytes()
        .unwrap()
        .chunks_exact(2)
        .map(|c| u16::from_le_bytes([c[0], c[1]]))
        .collect()
}

#[test]
fn device_rounding_matches_the_host_on_every_value_and_midpoint() {
    let dev = dev_or_skip!();
    let mut xs: Vec<f32> = Vec::new();
    for h in 0..=u16::MAX {
        let v = f16::from_bits(h).to_f32();
        xs.push(v);
        // Between h and the next larger magnitude: the midpoint and one f32 ulp either side.
        if h & 0x7fff < 0x7bff {
            let n = f16::from_bits(h + 1).to_f32();
            let mid = ((v as f64 + n as f64) / 2.0) as f32;
            assert_eq!(mid as f64, (v as f64 + n as f64) / 2.0, "midpoint exact");
            xs.extend([
                mid,
                f32::from_bits(mid.to_bits() - 1),
                f32::from_bits(mid.to_bits() + 1),
            ]);
        }
    }
    for s in [1.0f32, -1.0] {
        let t = 65520.0f32 * s;
        xs.extend([
            t,
            f32::from_bits(t.to_bits() - 1),
            f32::from_bits(t.to_bits() + 1),
            65536.0 * s,
            1e30 * s,
            f32::MAX * s,
            f32::MIN_POSITIVE * s,
            1e-45 * s,
            2f32.powi(-25) * s,
            2f32.powi(-26) * s,
        ]);
    }
    xs.extend([f32::INFINITY, f32::NEG_INFINITY, f32::NAN, -f32::NAN]);
    let host = Array::from_f32(&dev, &xs, &[xs.len()]).unwrap();
    poison(&dev, xs.len());
    let got = bits(&host.astype(H).unwrap());
    assert_eq!(got.len(), xs.len());
    let mut checked = 0;
    for (i, &x) in xs.iter().enumerate() {
        if x.is_nan() {
            assert!(f16::from_bits(got[i]).is_nan(), "{x}: {:#06x}", got[i]);
            continue;
        }
        assert_eq!(
            got[i],
            nearest_f16(x as f64),
            "{x:e} ({:#010x})",
            x.to_bits()
        );
        checked += 1;
    }
    assert!(checked > 250_000, "{checked}");
}

/// The value of binary16 magnitude bits `h` (0..=0x7c00), the infinity counted as 2^16 (the
/// next step of the largest binade, with an even mantissa, so 65520 ties to it).
fn magnitude(h: u16) -> f64 {
    if h >= 0x7c00 {
        65536.0
    } else {
        f16::from_bits(h).to_f64()
    }
}

/// The binary16 nearest the finite `x`, ties to the even mantissa, infinite from 65520 up:
/// x is bracketed by neighbouring magnitudes lo <= |x| < hi (a guess from `half`, walked
/// until it brackets), and 2|x| is compared with lo + hi, both exact in f64 (the distances
/// themselves can need more than 53 bits).
fn nearest_f16(x: f64) -> u16 {
    let sign = if x.is_sign_negative() { 0x8000u16 } else { 0 };
    let a = x.abs();
    if a >= 65536.0 {
        return sign | 0x7c00;
    }
    let mut lo = f16::from_f64(a).to_bits().min(0x7c00);
    while magnitude(lo) > a {
        lo -= 1;
    }
    while magnitude(lo + 1) <= a {
        lo += 1;
    }
    let hi = lo + 1;
    let (l, h) = (magnitude(lo), magnitude(hi));
    let pick = if 2.0 * a < l + h {
        lo
    } else if 2.0 * a > l + h {
        hi
    } else if lo & 1 == 0 {
        lo
    } else {
        hi
    };
    sign | pick
}

/// a + b, a·b and a / b of float16 operands (seeded: every exponent, subnormals, sums near
/// the overflow threshold, signed zeros) round once, to the binary16 nearest the exact
/// result: the f64 sum and product are exact, the f64 quotient rounds twice harmlessly
/// (53 >= 2·11 + 2).
#[test]
fn arithmetic_rounds_to_the_nearest_binary16() {
    let dev = dev_or_skip!();
    let mut s = 0x2545F4914F6CDD1Du64;
    let mut next = move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s
    };
    let mut a = Vec::new();
    let mut b = Vec::new();
    while a.len() < 60_000 {
        let (x, y) = (next() as u16, next() as u16);
        if x & 0x7c00 == 0x7c00 || y & 0x7c00 == 0x7c00 {
            continue; // finite operands only, of every exponent
        }
        let y = if a.len() % 5 == 0 {
            // Close exponents: sums that cancel or carry into the next binade.
            (x & 0xfc00) ^ (y & 0x83ff)
        } else {
            y
        };
        a.push(f16::from_bits(x).to_f64());
        b.push(f16::from_bits(y).to_f64());
    }
    for (x, y) in [(65504.0, 16.0), (65504.0, 15.99), (0.0, -0.0), (-0.0, -0.0)] {
        let y = f16::from_f64(y).to_f64();
        a.push(x);
        b.push(y);
    }
    let n = a.len();
    let x = Array::from_f64(&dev, &a, &[n], H).unwrap();
    let y = Array::from_f64(&dev, &b, &[n], H).unwrap();
    for (op, f) in [
        (Binary::Add, (|p, q| p + q) as fn(f64, f64) -> f64),
        (Binary::Multiply, |p, q| p * q),
        (Binary::Divide, |p, q| p / q),
    ] {
        poison(&dev, n);
        let got = bits(&x.binary(op, &y).unwrap());
        let mut bad = Vec::new();
        for i in 0..n {
            let w = f(a[i], b[i]);
            let want = if w.is_nan() { 0x7e00 } else { nearest_f16(w) };
            let g = got[i];
            let ok = if w.is_nan() {
                f16::from_bits(g).is_nan()
            } else {
                g == want
            };
            if !ok {
                bad.push(format!(
                    "{} {} {}: got {:#06x}, want {want:#06x} ({w:e})",
                    a[i],
                    op.name(),
                    b[i],
                    g
                ));
            }
        }
        assert!(
            bad.is_empty(),
            "{} wrong:\n{}",
            bad.len(),
            bad[..bad.len().min(20)].join("\n")
        );
    }
}
