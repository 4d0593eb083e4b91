//! float64 test helpers: the device when it holds float64 (else a check that float64 is a
//! typed refusal), seeded values using all 53 mantissa bits, upload and read back, exact and
//! toleranced comparisons, views of an array beside their host values.

use suanli::array::{Array, Binary, DType, Index, Unary};
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

/// Views of a (4, 6) array and their values: all, transposed, a reversed strided slice, an
/// element (0-d), and an empty slice.
pub fn views(a: &Array, v: &[f64]) -> Vec<(Array, Vec<f64>)> {
    let t = a.matrix_transpose().unwrap();
    let tv: Vec<f64> = (0..24).map(|k| v[(k % 4) * 6 + k / 4]).collect();
    let s = a
        .index(&[
            Index::Slice {
                start: None,
                stop: None,
                step: Some(-2),
            },
            Index::Slice {
                start: Some(1),
                stop: None,
                step: Some(2),
            },
        ])
        .unwrap();
    let sv: Vec<f64> = [3usize, 1]
        .iter()
        .flat_map(|&r| [1usize, 3, 5].map(|c| v[r * 6 + c]))
        .collect();
    let e = a.index(&[Index::At(2), Index::At(-1)]).unwrap();
    let z = a
        .index(&[Index::Slice {
            start: Some(2),
            stop: Some(2),
            step: None,
        }])
        .unwrap();
    vec![
        (a.clone(), v.to_vec()),
        (t, tv),
        (s, sv),
        (e, vec![v[17]]),
        (z, vec![]),
    ]
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
