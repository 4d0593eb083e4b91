//! int64 and uint64 arrays against Rust's i64/u64: host bytes both ways, creation, casts to
//! and from every dtype, the elementwise operations (wrapping, exactly equal: a kernel that
//! computed in 32 bits anywhere fails them, the values span all 64 bits and sit near
//! i64::MIN/MAX), on contiguous arrays, transposed and strided views, 0-d and empty shapes,
//! and broadcast. On an adapter without SHADER_INT64 (WGPU_BACKEND=gl) every test checks
//! instead that int64 is a typed `Error::DType`. Reductions, promotion, Python scalars,
//! assignment and refusals: `tests/array_int64_reduce.rs`.

mod common;

use common::arrays::views;
use common::int64::{bools, i64_device, noise, read, up};
use suanli::array::{Array, Binary, DType, Index, Unary};

fn floor_div(a: i64, b: i64) -> i64 {
    if b == 0 {
        return 0;
    }
    let q = a.wrapping_div(b);
    if a.wrapping_rem(b) != 0 && ((a < 0) != (b < 0)) {
        q - 1
    } else {
        q
    }
}

fn rem(a: i64, b: i64) -> i64 {
    if b == 0 {
        return 0;
    }
    let r = a.wrapping_rem(b);
    if r != 0 && ((r < 0) != (b < 0)) {
        r + b
    } else {
        r
    }
}

fn pow(a: i64, b: i64) -> i64 {
    if b < 0 {
        return match a {
            1 => 1,
            -1 => 1 - 2 * (b & 1),
            _ => 0,
        };
    }
    upow(a, b)
}

/// `a^b` wrapping, by squaring over every bit of the exponent.
fn upow(a: i64, b: i64) -> i64 {
    let (mut r, mut x, mut e) = (1u64, a as u64, b as u64);
    while e > 0 {
        if e & 1 == 1 {
            r = r.wrapping_mul(x);
        }
        x = x.wrapping_mul(x);
        e >>= 1;
    }
    r as i64
}

type I64Ref = (Binary, fn(i64, i64) -> i64);
/// A comparison and its signed and unsigned references.
type CmpRef = (Binary, fn(i64, i64) -> bool, fn(u64, u64) -> bool);
/// A unary operation and its reference.
type UnRef = (Unary, fn(i64) -> i64);
/// A cast and its reference (the value the target dtype holds, as f64).
type CastRef = (DType, fn(i64) -> f64);

const SIGNED: [I64Ref; 14] = [
    (Binary::Add, i64::wrapping_add),
    (Binary::Subtract, i64::wrapping_sub),
    (Binary::Multiply, i64::wrapping_mul),
    (Binary::FloorDivide, floor_div),
    (Binary::Remainder, rem),
    (Binary::Maximum, |a, b| a.max(b)),
    (Binary::Minimum, |a, b| a.min(b)),
    (Binary::BitwiseAnd, |a, b| a & b),
    (Binary::BitwiseOr, |a, b| a | b),
    (Binary::BitwiseXor, |a, b| a ^ b),
    (Binary::BitwiseLeftShift, |a, b| {
        if (0..64).contains(&b) {
            a << b
        } else {
            0
        }
    }),
    (Binary::BitwiseRightShift, |a, b| {
        if b < 0 {
            0
        } else {
            a >> b.min(63)
        }
    }),
    (Binary::Pow, pow),
    (Binary::Subtract, |a, b| a.wrapping_sub(b)),
];

const UNSIGNED: [I64Ref; 9] = [
    (Binary::Add, |a, b| (a as u64).wrapping_add(b as u64) as i64),
    (Binary::Multiply, |a, b| {
        (a as u64).wrapping_mul(b as u64) as i64
    }),
    (Binary::FloorDivide, |a, b| {
        (a as u64).checked_div(b as u64).unwrap_or(0) as i64
    }),
    (Binary::Remainder, |a, b| {
        (a as u64).checked_rem(b as u64).unwrap_or(0) as i64
    }),
    (Binary::Maximum, |a, b| (a as u64).max(b as u64) as i64),
    (Binary::Minimum, |a, b| (a as u64).min(b as u64) as i64),
    (Binary::BitwiseRightShift, |a, b| {
        (a as u64)
            .checked_shr((b as u64).min(64) as u32)
            .unwrap_or(0) as i64
    }),
    (Binary::BitwiseLeftShift, |a, b| {
        (a as u64)
            .checked_shl((b as u64).min(64) as u32)
            .unwrap_or(0) as i64
    }),
    (Binary::Pow, upow),
];

#[test]
fn bytes_round_trip_views_and_creation() {
    let Some(dev) = i64_device() else { return };
    let v = noise(24, 1);
    for d in [DType::Int64, DType::UInt64] {
        assert_eq!(d.host_size(), 8);
        assert_eq!(DType::from_name(d.name()).unwrap(), d);
        let a = up(&dev, &v, &[4, 6], d);
        assert_eq!(read(&a), v);
        for (k, (x, want)) in views(&a, &v).into_iter().enumerate() {
            assert_eq!(read(&x), want, "{d} view {k}");
            assert_eq!(read(&x.copy().unwrap()), want, "{d} copy {k}");
        }
        let f = Array::full(&dev, &[2, 3], -7.9, d).unwrap();
        // -7 for int64; uint64 wraps it to 2^64 - 7, the same bits.
        assert_eq!(read(&f), [-7; 6], "{d} full");
        assert!(read(&Array::ones(&dev, &[0, 3], d).unwrap()).is_empty());
        assert_eq!(read(&Array::ones(&dev, &[], d).unwrap()), [1]);
        let e = Array::eye(&dev, 3, 4, 1, d).unwrap();
        let want: Vec<i64> = (0..12).map(|k| (k % 4 == k / 4 + 1) as i64).collect();
        assert_eq!(read(&e), want, "{d} eye");
    }
    let big = (1i64 << 40) as f64;
    let r = Array::arange(&dev, big, big + 10.0, 3.0, DType::Int64).unwrap();
    assert_eq!(read(&r), [0, 3, 6, 9].map(|k| (1i64 << 40) + k));
    let r = Array::arange(&dev, 5.0, 0.0, -2.0, DType::UInt64).unwrap();
    assert_eq!(read(&r), [5, 3, 1]);
    let s = Array::scalar_int(&dev, (i64::MAX - 2).into(), DType::Int64);
    assert_eq!(read(&s), [i64::MAX - 2]);
}

#[test]
fn signed_and_unsigned_binary_operations_wrap_as_rust() {
    let Some(dev) = i64_device() else { return };
    let va = noise(24, 2);
    // Shift counts and exponents: mostly small, some past the width and negative.
    let mut vb = noise(24, 3);
    for (k, b) in vb.iter_mut().enumerate() {
        if k % 3 == 0 {
            *b = (k as i64 * 7) % 70 - 3;
        }
    }
    for (d, ops) in [(DType::Int64, &SIGNED[..]), (DType::UInt64, &UNSIGNED[..])] {
        let a = up(&dev, &va, &[4, 6], d);
        let b = up(&dev, &vb, &[4, 6], d);
        let xs = views(&a, &va);
        let ys = views(&b, &vb);
        for &(op, f) in ops {
            for ((x, xv), (y, yv)) in xs.iter().zip(&ys) {
                let got = read(&x.binary(op, y).unwrap());
                let want: Vec<i64> = xv.iter().zip(yv).map(|(&p, &q)| f(p, q)).collect();
                assert_eq!(got, want, "{d} {op:?} {:?}", x.shape());
            }
            // Broadcast: a row against the matrix.
            let row = b.index(&[Index::At(1)]).unwrap();
            let got = read(&a.binary(op, &row).unwrap());
            let want: Vec<i64> = (0..24).map(|k| f(va[k], vb[6 + k % 6])).collect();
            assert_eq!(got, want, "{d} {op:?} broadcast");
        }
    }
}

#[test]
fn comparisons_logic_unary_and_where() {
    let Some(dev) = i64_device() else { return };
    let va = noise(24, 4);
    let mut vb = noise(24, 5);
    vb[3] = va[3];
    // Equal high words, different low words, and the reverse: a 32-bit compare fails.
    vb[4] = va[4] ^ 1;
    vb[5] = va[5] ^ (1 << 40);
    for d in [DType::Int64, DType::UInt64] {
        let a = up(&dev, &va, &[4, 6], d);
        let b = up(&dev, &vb, &[4, 6], d);
        let cmp: [CmpRef; 6] = [
            (Binary::Equal, |a, b| a == b, |a, b| a == b),
            (Binary::NotEqual, |a, b| a != b, |a, b| a != b),
            (Binary::Less, |a, b| a < b, |a, b| a < b),
            (Binary::LessEqual, |a, b| a <= b, |a, b| a <= b),
            (Binary::Greater, |a, b| a > b, |a, b| a > b),
            (Binary::GreaterEqual, |a, b| a >= b, |a, b| a >= b),
        ];
        for (op, fs, fu) in cmp {
            let got = bools(
                &a.binary(
                    op,
                    &b.matrix_transpose().unwrap().matrix_transpose().unwrap(),
                )
                .unwrap(),
            );
            let want: Vec<bool> = (0..24)
                .map(|k| {
                    if d == DType::Int64 {
                        fs(va[k], vb[k])
                    } else {
                        fu(va[k] as u64, vb[k] as u64)
                    }
                })
                .collect();
            assert_eq!(got, want, "{d} {op:?}");
        }
        let got = bools(&a.binary(Binary::LogicalAnd, &b).unwrap());
        let want: Vec<bool> = (0..24).map(|k| va[k] != 0 && vb[k] != 0).collect();
        assert_eq!(got, want, "{d} logical_and");
        let got = bools(&a.unary(Unary::LogicalNot).unwrap());
        assert_eq!(got, va.iter().map(|&x| x == 0).collect::<Vec<_>>());
        let c = a.binary(Binary::Less, &b).unwrap();
        let got = read(&Array::where_(&c, &a, &b).unwrap());
        let want: Vec<i64> = (0..24)
            .map(|k| {
                let less = if d == DType::Int64 {
                    va[k] < vb[k]
                } else {
                    (va[k] as u64) < vb[k] as u64
                };
                if less {
                    va[k]
                } else {
                    vb[k]
                }
            })
            .collect();
        assert_eq!(got, want, "{d} where");
    }
    let a = up(&dev, &va, &[4, 6], DType::Int64);
    let un: [UnRef; 6] = [
        (Unary::Negative, i64::wrapping_neg),
        (Unary::Abs, i64::wrapping_abs),
        (Unary::Sign, i64::signum),
        (Unary::BitwiseInvert, |x| !x),
        (Unary::Square, |x| x.wrapping_mul(x)),
        (Unary::Floor, |x| x),
    ];
    for (op, f) in un {
        for (x, xv) in views(&a, &va) {
            let want: Vec<i64> = xv.iter().map(|&p| f(p)).collect();
            assert_eq!(read(&x.unary(op).unwrap()), want, "{op:?}");
        }
    }
    let u = up(&dev, &va, &[24], DType::UInt64);
    let got = read(&u.unary(Unary::Negative).unwrap());
    assert_eq!(
        got,
        va.iter().map(|&x| x.wrapping_neg()).collect::<Vec<_>>()
    );
    let got = read(&u.unary(Unary::Sign).unwrap());
    assert_eq!(got, va.iter().map(|&x| (x != 0) as i64).collect::<Vec<_>>());
}

#[test]
fn casts_to_and_from_every_dtype() {
    let Some(dev) = i64_device() else { return };
    let v = noise(24, 6);
    let a = up(&dev, &v, &[24], DType::Int64);
    // To the narrow integers: wrapped, as NumPy's astype.
    let narrow: [CastRef; 7] = [
        (DType::Bool, |x| (x != 0) as u8 as f64),
        (DType::Int8, |x| x as i8 as f64),
        (DType::Int16, |x| x as i16 as f64),
        (DType::Int32, |x| x as i32 as f64),
        (DType::UInt8, |x| x as u8 as f64),
        (DType::UInt16, |x| x as u16 as f64),
        (DType::UInt32, |x| x as u32 as f64),
    ];
    for (d, f) in narrow {
        let got = a.astype(d).unwrap().to_f64_vec().unwrap();
        assert_eq!(got, v.iter().map(|&x| f(x)).collect::<Vec<_>>(), "to {d}");
    }
    // To floats: rounded once (Rust's `as` rounds to nearest, ties to even).
    let got = a.astype(DType::Float32).unwrap().to_f64_vec().unwrap();
    assert_eq!(got, v.iter().map(|&x| x as f32 as f64).collect::<Vec<_>>());
    let u = up(&dev, &v, &[24], DType::UInt64);
    let got = u.astype(DType::Float32).unwrap().to_f64_vec().unwrap();
    assert_eq!(
        got,
        v.iter()
            .map(|&x| x as u64 as f32 as f64)
            .collect::<Vec<_>>()
    );
    assert_eq!(read(&a.astype(DType::UInt64).unwrap()), v);
    assert_eq!(read(&u.astype(DType::Int64).unwrap()), v);
    if dev.info().features.shader_f64 {
        let got = a.astype(DType::Float64).unwrap().to_f64_vec().unwrap();
        assert_eq!(got, v.iter().map(|&x| x as f64).collect::<Vec<_>>());
        let got = u.astype(DType::Float64).unwrap().to_f64_vec().unwrap();
        assert_eq!(got, v.iter().map(|&x| x as u64 as f64).collect::<Vec<_>>());
        // float64 -> int64 truncates; NaN 0; out of range saturates (undefined in NumPy).
        let f = [
            2.5e15 + 0.75,
            -3.99,
            f64::NAN,
            1e30,
            -1e30,
            -0.5,
            9.007199254740993e15,
        ];
        let x = Array::from_f64(&dev, &f, &[7], DType::Float64).unwrap();
        let got = read(&x.astype(DType::Int64).unwrap());
        assert_eq!(got, f.map(|x| x as i64));
    }
    // From the 32-bit dtypes: sign- or zero-extended.
    let w: Vec<f64> = [-5.0, 7.0, -2147483648.0, 2147483647.0].to_vec();
    let i = Array::from_f64(&dev, &w, &[4], DType::Int32).unwrap();
    assert_eq!(
        read(&i.astype(DType::Int64).unwrap()),
        [-5, 7, i32::MIN as i64, i32::MAX as i64]
    );
    assert_eq!(
        read(&i.astype(DType::UInt64).unwrap()),
        [-5, 7, i32::MIN as i64, i32::MAX as i64]
    );
    let ui = Array::from_f64(&dev, &[4294967295.0, 3.0], &[2], DType::UInt32).unwrap();
    assert_eq!(
        read(&ui.astype(DType::Int64).unwrap()),
        [u32::MAX as i64, 3]
    );
    let f = [3.9f32, -3.9, 1e10, -1e10, f32::NAN, 1e30, -1e30];
    let x = Array::from_f32(&dev, &f, &[7]).unwrap();
    assert_eq!(read(&x.astype(DType::Int64).unwrap()), f.map(|x| x as i64));
    let h = x
        .astype(DType::Float16)
        .unwrap()
        .astype(DType::Int64)
        .unwrap();
    // Through binary16 (1e10 and 1e30 become inf): Rust's `as` saturates and sends NaN to 0,
    // as the device's cast does.
    assert_eq!(read(&h), f.map(|x| half::f16::from_f32(x).to_f32() as i64));
    let b = Array::from_f64(&dev, &[0.0, 1.0], &[2], DType::Bool).unwrap();
    assert_eq!(read(&b.astype(DType::Int64).unwrap()), [0, 1]);
}
