//! int64/uint64 test helpers: the device when it holds them (else a check that they are
//! typed refusals), seeded values using all 64 bits with the limits among them, upload and
//! read back as i64 bits.

use suanli::array::{Array, Binary, DType};
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
