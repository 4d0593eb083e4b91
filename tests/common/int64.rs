//! int64/uint64 test helpers: the device when it holds them (else a check that they are
//! typed refusals), seeded values using all 64 bits with the limits among them, upload and
//! read back as i64 bits, views of an array beside their host values.

use suanli::array::{Array, Binary, DType, Index};
use suanli::{Device, Error};

/// The test device when it computes in int64; otherwise checks the typed refusals.
pub fn i64_device() -> Option<Device> {
    let dev = super::device()?;
    if dev.info().features.shader_int64 {
        return Some(dev);
    }
    for d in [DType::Int64, DType::UInt64] {
        match Array::from_bytes(&dev, d, &[0; 8], &[1]) {
            Err(Error::DType { expected, .. }) => {
                assert!(expected.contains("SHADER_INT64"), "{expected}")
            }
            other => panic!("{d} without SHADER_INT64: {other:?}"),
        }
        assert!(matches!(
            Array::zeros(&dev, &[2], d),
            Err(Error::DType { .. })
        ));
        let x = Array::from_f32(&dev, &[1.0], &[1]).unwrap();
        assert!(matches!(x.astype(d), Err(Error::DType { .. })));
    }
    // uint32 with a signed type computes in int64: refused too, not done in 32 bits.
    let u = Array::from_f64(&dev, &[1.0], &[1], DType::UInt32).unwrap();
    let s = Array::from_f64(&dev, &[1.0], &[1], DType::Int8).unwrap();
    assert!(matches!(
        u.binary(Binary::Equal, &s),
        Err(Error::DType { .. })
    ));
    eprintln!("NOTICE: {} has no i64: int64 refusals checked", dev.name());
    None
}

/// `n` seeded values using all 64 bits, with i64::MIN/MAX, ±1, 0 and ±2^32 among them.
pub fn noise(n: usize, seed: u64) -> Vec<i64> {
    let mut s = seed.wrapping_mul(0x9E3779B97F4A7C15) | 1;
    let special = [
        i64::MIN,
        i64::MAX,
        -1,
        0,
        1,
        1 << 32,
        -(1 << 32),
        i64::MIN + 1,
    ];
    (0..n)
        .map(|k| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            match k % 5 {
                0 => special[(s % special.len() as u64) as usize],
                1 => (s as i64) >> 40, // small, so products and shifts stay interesting
                _ => s as i64,
            }
        })
        .collect()
}

pub fn up(dev: &Device, v: &[i64], shape: &[usize], d: DType) -> Array {
    let b: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
    Array::from_bytes(dev, d, &b, shape).unwrap()
}

/// The elements' bits as i64 (uint64 reinterpreted).
pub fn read(a: &Array) -> Vec<i64> {
    assert!(
        matches!(a.dtype(), DType::Int64 | DType::UInt64),
        "{}",
        a.dtype()
    );
    a.to_bytes()
        .unwrap()
        .chunks_exact(8)
        .map(|c| i64::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

pub fn bools(a: &Array) -> Vec<bool> {
    assert_eq!(a.dtype(), DType::Bool);
    a.to_f64_vec().unwrap().iter().map(|&x| x != 0.0).collect()
}

/// Views of a (4, 6) array and their values: all, transposed, a reversed strided slice, an
/// element (0-d), and an empty slice.
pub fn views(a: &Array, v: &[i64]) -> Vec<(Array, Vec<i64>)> {
    let t = a.matrix_transpose().unwrap();
    let tv: Vec<i64> = (0..24).map(|k| v[(k % 4) * 6 + k / 4]).collect();
    let step = |start, step| Index::Slice {
        start,
        stop: None,
        step: Some(step),
    };
    let s = a.index(&[step(None, -2), step(Some(1), 2)]).unwrap();
    let sv: Vec<i64> = [3usize, 1]
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
