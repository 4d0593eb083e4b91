//! The float16 rounding of the device (`f16_round_` in shaders/array_prelude.wgsl) against
//! the host's (the `half` crate, checked against its own f64 path) on every binary16 value,
//! every midpoint between neighbours and the floats one f32 ulp either side of it, the
//! overflow threshold 65520, f32 subnormals and extremes, infinities and NaN; through a cast
//! and through arithmetic, into poisoned outputs.

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
    // The same rounding through the arithmetic path: x * 1 in float16 from float32 operands
    // is the cast, then `x + 0` in float16 rounds again (and must change nothing).
    let via_op = bits(
        &host
            .astype(H)
            .unwrap()
            .binary_scalar(Binary::Add, 0.0.into())
            .unwrap(),
    );
    assert_eq!(got.len(), xs.len());
    let mut checked = 0;
    for (i, &x) in xs.iter().enumerate() {
        let want = f16::from_f32(x);
        if x.is_nan() {
            assert!(f16::from_bits(got[i]).is_nan(), "{x}: {:#06x}", got[i]);
            continue;
        }
        assert_eq!(
            want,
            f16::from_f64(x as f64),
            "host references agree at {x:e}"
        );
        // -0 + 0 is +0: compare the sum by value.
        assert_eq!(got[i], want.to_bits(), "{x:e} ({:#010x})", x.to_bits());
        assert_eq!(
            f16::from_bits(via_op[i]).to_f64(),
            want.to_f64() + 0.0,
            "{x:e} + 0"
        );
        checked += 1;
    }
    assert!(checked > 250_000, "{checked}");
}
