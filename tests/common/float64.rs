//! float64 test helpers: the device when it holds float64 (else a check that float64 is a
//! typed refusal), seeded values using all 53 mantissa bits, upload and read back, exact and
//! toleranced comparisons.

use suanli::array::{Array, Binary, DType, Unary};
use suanli::{Device, Error};

/// The test device when it computes in float64; otherwise checks that float64 is refused
/// with a typed error naming the missing feature, and gives None.
pub fn f64_device() -> Option<Device> {
    let dev = super::device()?;
    let f = dev.info().features;
    if f.shader_f64 && f.shader_int64 {
        return Some(dev);
    }
    match Array::from_f64(&dev, &[1.0], &[1], DType::Float64) {
        Err(Error::DType { expected, .. }) => {
            assert!(expected.contains("SHADER_F64"), "{expected}")
        }
        other => panic!("float64 on {} without f64: {other:?}", dev.name()),
    }
    let x = Array::from_f32(&dev, &[1.0], &[1]).unwrap();
    assert!(matches!(x.astype(DType::Float64), Err(Error::DType { .. })));
    assert!(matches!(
        Array::zeros(&dev, &[2], DType::Float64),
        Err(Error::DType { .. })
    ));
    let s = Array::scalar(&dev, 1.0, DType::Float64);
    assert!(matches!(
        x.binary(Binary::Add, &s),
        Err(Error::DType { .. })
    ));
    assert!(matches!(s.to_f64_vec(), Err(Error::DType { .. })));
    eprintln!(
        "NOTICE: {} has no f64: float64 refusals checked",
        dev.name()
    );
    None
}

/// `n` values with all 53 bits of mantissa in use (none is a float32), in about ±`scale`.
pub fn noise(n: usize, seed: u64, scale: f64) -> Vec<f64> {
    let mut s = seed.wrapping_mul(0x9E3779B97F4A7C15) | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            ((s >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0) * scale
        })
        .collect()
}

/// A binary operation and its f64 reference.
pub type BinRef = (Binary, fn(f64, f64) -> f64);
/// A binary predicate and its f64 reference.
pub type CmpRef = (Binary, fn(f64, f64) -> bool);
/// A unary operation and its f64 reference.
pub type UnRef = (Unary, fn(f64) -> f64);
/// A unary predicate and its f64 reference.
pub type FlagRef = (Unary, fn(f64) -> bool);

pub fn up(dev: &Device, v: &[f64], shape: &[usize]) -> Array {
    Array::from_f64(dev, v, shape, DType::Float64).unwrap()
}

pub fn read(a: &Array) -> Vec<f64> {
    assert_eq!(a.dtype(), DType::Float64);
    a.to_f64_vec().unwrap()
}

/// Bit-exact equality (any NaN equals any NaN; +0 and -0 differ).
pub fn exact(what: &str, got: &[f64], want: &[f64]) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        let same = (g.is_nan() && w.is_nan()) || g.to_bits() == w.to_bits();
        assert!(same, "{what}[{i}]: got {g:e}, want {w:e}");
    }
}

pub fn close(what: &str, got: &[f64], want: &[f64], tol: &[f64]) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for i in 0..got.len() {
        let (g, w) = (got[i], want[i]);
        if g == w || (g.is_nan() && w.is_nan()) {
            continue;
        }
        assert!(
            (g - w).abs() <= tol[i],
            "{what}[{i}]: got {g:e}, want {w:e}"
        );
    }
}
