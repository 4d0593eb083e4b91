//! int64 and uint64 reductions (sum/prod wrapping in 64 bits, min/max/arg on all 64 bits,
//! any/all on the high word, mean in float64), promotion (uint32 with a signed type is
//! int64), Python scalars beyond 2^53, assignment into a poisoned target, clip, int64
//! positions, sorting and searchsorted, and the typed refusals of what int64 does not take
//! yet, against Rust's i64/u64.
//! Without SHADER_INT64 each test checks the typed refusal instead.

mod common;

use common::arrays::views;
use common::int64::{bools, i64_device, noise, read, up};
use suanli::array::{Array, Binary, DType, Index, Reduce, Scalar};
use suanli::Error;

#[test]
fn promotion_and_python_scalars() {
    let Some(dev) = i64_device() else { return };
    let v = noise(6, 7);
    let a = up(&dev, &v, &[6], DType::Int64);
    let i = Array::from_f64(&dev, &[-3.0, 4.0, 5.0, -6.0, 7.0, 8.0], &[6], DType::Int32).unwrap();
    let s = a.binary(Binary::Add, &i).unwrap();
    assert_eq!(s.dtype(), DType::Int64);
    let want: Vec<i64> = v
        .iter()
        .zip([-3, 4, 5, -6, 7, 8])
        .map(|(&x, y)| x.wrapping_add(y))
        .collect();
    assert_eq!(read(&s), want);
    // uint32 with int8: int64, values past both 32-bit ranges.
    let u = Array::from_f64(&dev, &[4294967295.0, 0.0], &[2], DType::UInt32).unwrap();
    let n = Array::from_f64(&dev, &[-1.0, -128.0], &[2], DType::Int8).unwrap();
    let s = u.binary(Binary::Subtract, &n).unwrap();
    assert_eq!(s.dtype(), DType::Int64);
    assert_eq!(read(&s), [4294967296, 128]);
    let u64a = up(&dev, &v, &[6], DType::UInt64);
    assert!(matches!(
        u64a.binary(Binary::Add, &i),
        Err(Error::DType { .. })
    ));
    assert!(matches!(
        u64a.binary(Binary::Add, &a),
        Err(Error::DType { .. })
    ));
    // Python ints beside int64 keep every bit (2^53 + 1 is not an f64).
    let big = (1i64 << 53) + 1;
    let s = a
        .binary_scalar(Binary::Add, Scalar::Int(big.into()))
        .unwrap();
    let want: Vec<i64> = v.iter().map(|&x| x.wrapping_add(big)).collect();
    assert_eq!(read(&s), want);
    let s = a
        .scalar_binary(Scalar::Int(i64::MIN.into()), Binary::Subtract)
        .unwrap();
    let want: Vec<i64> = v.iter().map(|&x| i64::MIN.wrapping_sub(x)).collect();
    assert_eq!(read(&s), want);
    assert!(u64a.binary_scalar(Binary::Add, Scalar::Int(-1)).is_err());
    // Python ints past i64::MAX beside uint64 (NumPy 2 takes every uint64 value), exact.
    for big in [1u64 << 63, u64::MAX, u64::MAX - 2] {
        let s = u64a.binary_scalar(Binary::Add, Scalar::from(big)).unwrap();
        assert_eq!(s.dtype(), DType::UInt64);
        let want: Vec<i64> = v
            .iter()
            .map(|&x| (x as u64).wrapping_add(big) as i64)
            .collect();
        assert_eq!(read(&s), want, "uint64 + {big}");
        let s = u64a
            .scalar_binary(Scalar::from(big), Binary::Subtract)
            .unwrap();
        let want: Vec<i64> = v
            .iter()
            .map(|&x| big.wrapping_sub(x as u64) as i64)
            .collect();
        assert_eq!(read(&s), want, "{big} - uint64");
    }
    // One past each end is refused, exactly at the boundary (f64 cannot tell these apart).
    let past_u64 = i128::from(u64::MAX) + 1;
    let past_i64 = i128::from(i64::MAX) + 1;
    assert!(matches!(
        u64a.binary_scalar(Binary::Add, Scalar::Int(past_u64)),
        Err(Error::InvalidArgument { name: "scalar", .. })
    ));
    assert!(matches!(
        a.binary_scalar(Binary::Add, Scalar::Int(past_i64)),
        Err(Error::InvalidArgument { name: "scalar", .. })
    ));
    assert!(a
        .binary_scalar(Binary::Add, Scalar::Int(i128::from(i64::MIN) - 1))
        .is_err());
    assert!(a
        .binary_scalar(Binary::Add, Scalar::Int(i64::MAX.into()))
        .is_ok());
    // int64 with float32 is float32 (as int32 with float32 here).
    let f = a
        .binary_scalar(Binary::Multiply, Scalar::Float(0.5))
        .unwrap();
    assert_eq!(f.dtype(), DType::Float32);
    let got = f.to_f64_vec().unwrap();
    let want: Vec<f64> = v.iter().map(|&x| ((x as f32) * 0.5) as f64).collect();
    assert_eq!(got, want);
}

#[test]
fn assignment_writes_only_the_view_of_a_poisoned_target() {
    let Some(dev) = i64_device() else { return };
    let poison = 0x7ff4_dead_beef_0001i64;
    let t = up(&dev, &[poison; 24], &[4, 6], DType::Int64);
    let v = noise(6, 8);
    let step = |start, step| Index::Slice {
        start,
        stop: None,
        step: Some(step),
    };
    let view = t.index(&[step(Some(1), 2), step(None, 2)]).unwrap();
    view.assign(&up(&dev, &v, &[2, 3], DType::Int64)).unwrap();
    for (k, g) in read(&t).iter().enumerate() {
        let (r, c) = (k / 6, k % 6);
        if r % 2 == 1 && c % 2 == 0 {
            assert_eq!(*g, v[(r / 2) * 3 + c / 2], "[{r}, {c}]");
        } else {
            assert_eq!(*g, poison, "[{r}, {c}] overwritten");
        }
    }
    // A fused expression written into the poisoned target.
    let x = up(&dev, &noise(24, 9), &[4, 6], DType::Int64);
    let y = x.binary_scalar(Binary::Multiply, Scalar::Int(3)).unwrap();
    t.assign(&y).unwrap();
    let want: Vec<i64> = noise(24, 9).iter().map(|x| x.wrapping_mul(3)).collect();
    assert_eq!(read(&t), want);
}

#[test]
fn what_int64_does_not_take_yet_is_a_typed_refusal() {
    let Some(dev) = i64_device() else { return };
    let a = up(&dev, &noise(6, 10), &[2, 3], DType::Int64);
    let dtype_err = |r: Result<Array, Error>, what: &str| {
        assert!(matches!(r, Err(Error::DType { .. })), "{what}: {r:?}")
    };
    // matmul computes in int64: tests/array_matmul_exact.rs.
    dtype_err(a.fft(None, -1, suanli::array::fft::Norm::Backward), "fft");
}

#[test]
fn reductions_wrap_and_compare_in_64_bits() {
    let Some(dev) = i64_device() else { return };
    let v = noise(24, 11);
    for d in [DType::Int64, DType::UInt64] {
        let a = up(&dev, &v, &[4, 6], d);
        for (x, xv) in views(&a, &v) {
            let sum = read(&x.reduce(Reduce::Sum, None, false).unwrap());
            let want = xv.iter().fold(0i64, |s, &p| s.wrapping_add(p));
            assert_eq!(sum, [want], "{d} sum {:?}", x.shape());
            let prod = read(&x.reduce(Reduce::Prod, None, false).unwrap());
            let want = xv.iter().fold(1i64, |s, &p| s.wrapping_mul(p));
            assert_eq!(prod, [want], "{d} prod");
            if xv.is_empty() {
                continue;
            }
            let key = |p: i64| {
                if d == DType::Int64 {
                    p as i128
                } else {
                    p as u64 as i128
                }
            };
            let mn = read(&x.reduce(Reduce::Min, None, false).unwrap());
            let mx = read(&x.reduce(Reduce::Max, None, false).unwrap());
            assert_eq!(
                mn,
                [*xv.iter().min_by_key(|&&p| key(p)).unwrap()],
                "{d} min"
            );
            assert_eq!(
                mx,
                [*xv.iter().max_by_key(|&&p| key(p)).unwrap()],
                "{d} max"
            );
            let am = x
                .reduce(Reduce::ArgMax, None, false)
                .unwrap()
                .to_f64_vec()
                .unwrap();
            let best = xv.iter().map(|&p| key(p)).max().unwrap();
            let first = xv.iter().position(|&p| key(p) == best).unwrap();
            assert_eq!(am, [first as f64], "{d} argmax");
        }
        // Along an axis, kept.
        let s = read(&a.reduce(Reduce::Sum, Some(&[1]), true).unwrap());
        let want: Vec<i64> = (0..4)
            .map(|r| {
                v[r * 6..r * 6 + 6]
                    .iter()
                    .fold(0i64, |s, &p| s.wrapping_add(p))
            })
            .collect();
        assert_eq!(s, want, "{d} sum axis 1");
        let any = a.reduce(Reduce::Any, Some(&[0]), false).unwrap();
        assert_eq!(any.dtype(), DType::Bool);
        // Only the high word set: a 32-bit truth test would say false.
        let h = up(&dev, &[1 << 40, 0], &[2], d);
        assert_eq!(bools(&h.reduce(Reduce::Any, None, false).unwrap()), [true]);
        assert_eq!(bools(&h.reduce(Reduce::All, None, false).unwrap()), [false]);
    }
    if dev.info().features.shader_f64 {
        let big: Vec<i64> = (0..5).map(|k| (1i64 << 55) + k).collect();
        let a = up(&dev, &big, &[5], DType::Int64);
        let m = a.mean(None, false).unwrap();
        assert_eq!(m.dtype(), DType::Float64);
        assert_eq!(m.to_f64_vec().unwrap(), [(1i64 << 55) as f64 + 2.0]);
    }
}

#[test]
fn clip_and_int64_positions_stay_in_64_bits() {
    let Some(dev) = i64_device() else { return };
    let v = noise(12, 12);
    let a = up(&dev, &v, &[12], DType::Int64);
    let lim = (1i64 << 40) as f64;
    let got = read(&a.clip(Some(-lim + 0.5), Some(lim)).unwrap());
    let want: Vec<i64> = v
        .iter()
        .map(|&x| x.clamp(-(1 << 40) + 1, 1 << 40))
        .collect();
    assert_eq!(got, want);
    let u = up(&dev, &v, &[12], DType::UInt64);
    let got = read(&u.clip(Some(-5.0), Some(1e30)).unwrap());
    assert_eq!(got, v);
    // Index positions past 2^32 are out of range, not wrapped to a small position.
    let x = Array::from_f32(&dev, &[1.0, 2.0, 3.0], &[3]).unwrap();
    let i = up(&dev, &[2, -3, 0], &[3], DType::Int64);
    let got = x.take(&i, 0).unwrap().to_f64_vec().unwrap();
    assert_eq!(got, [3.0, 1.0, 1.0]);
    let i = up(&dev, &[(1 << 32) + 1], &[1], DType::Int64);
    let r = x.take(&i, 0).and_then(|t| t.to_f64_vec());
    assert!(r.is_err(), "{r:?}");
    let u = up(&dev, &[1, 1 << 32], &[2], DType::UInt64);
    let r = x.take(&u, 0).and_then(|t| t.to_f64_vec());
    assert!(r.is_err(), "{r:?}");
}

#[test]
fn sort_argsort_and_searchsorted_order_all_64_bits() {
    let Some(dev) = i64_device() else { return };
    // Values equal in the high word and differing in the low one, the other way round,
    // both signs, the limits, and ties (stability).
    let mut v = noise(60, 21);
    v.extend([
        5,
        5 + (1 << 32),
        -5,
        -(1 << 32),
        (1 << 32) - 1,
        i64::MIN,
        i64::MAX,
        -1,
        0,
        5,
        -5,
        5,
    ]);
    let len = v.len();
    for d in [DType::Int64, DType::UInt64] {
        let key = |p: i64| -> i128 {
            if d == DType::Int64 {
                p as i128
            } else {
                p as u64 as i128
            }
        };
        let a = up(&dev, &v, &[len], d);
        for descending in [false, true] {
            let mut want: Vec<usize> = (0..len).collect();
            want.sort_by(|&i, &j| {
                let o = key(v[i]).cmp(&key(v[j]));
                if descending {
                    o.reverse()
                } else {
                    o
                }
            });
            let got: Vec<usize> = a
                .argsort(0, descending)
                .unwrap()
                .to_f64_vec()
                .unwrap()
                .into_iter()
                .map(|p| p as usize)
                .collect();
            assert_eq!(got, want, "{d} argsort descending {descending}");
            let sorted = read(&a.sort(0, descending).unwrap());
            assert_eq!(
                sorted,
                want.iter().map(|&i| v[i]).collect::<Vec<_>>(),
                "{d}"
            );
        }
        // searchsorted into the sorted values, left and right, for every value and its
        // neighbours in the low word.
        let mut s = v.clone();
        s.sort_by_key(|&p| key(p));
        let sorted = up(&dev, &s, &[len], d);
        let probes: Vec<i64> = v.iter().flat_map(|&p| [p, p.wrapping_add(1)]).collect();
        let q = up(&dev, &probes, &[probes.len()], d);
        for right in [false, true] {
            let got = sorted
                .searchsorted(&q, right)
                .unwrap()
                .to_f64_vec()
                .unwrap();
            for (&p, g) in probes.iter().zip(got) {
                let want = s
                    .iter()
                    .filter(|&&x| {
                        if right {
                            key(x) <= key(p)
                        } else {
                            key(x) < key(p)
                        }
                    })
                    .count();
                assert_eq!(g as usize, want, "{d} searchsorted({p}, right {right})");
            }
        }
    }
}

#[test]
fn scans_wrap_in_64_bits_over_views_and_long_lines() {
    let Some(dev) = i64_device() else { return };
    // The host scan of each line along `axis` of a row-major (rows, cols) array, wrapping.
    let host = |v: &[i64], rows: usize, cols: usize, axis: usize, prod: bool, init: bool| {
        let (lines, len) = if axis == 1 {
            (rows, cols)
        } else {
            (cols, rows)
        };
        let at = |l: usize, q: usize| {
            if axis == 1 {
                l * cols + q
            } else {
                q * cols + l
            }
        };
        let olen = len + init as usize;
        let mut out = vec![0i64; lines * olen];
        for l in 0..lines {
            let mut acc: i64 = prod as i64;
            if init {
                let o = if axis == 1 { l * olen } else { l };
                out[o] = acc;
            }
            for q in 0..len {
                let x = v[at(l, q)];
                acc = if prod {
                    acc.wrapping_mul(x)
                } else {
                    acc.wrapping_add(x)
                };
                let p = q + init as usize;
                out[if axis == 1 {
                    l * olen + p
                } else {
                    p * lines + l
                }] = acc;
            }
        }
        out
    };
    // (3, 2500): lines of 2500 take the three-pass path (chunks of 1024) along axis 1.
    for (rows, cols) in [(4, 6), (3, 2500), (0, 5)] {
        let v = noise(rows * cols, 31);
        // Small factors for the products (wrapping still happens past 2^63 with 2500 of them).
        let small: Vec<i64> = v.iter().map(|x| x % 7 - 3).collect();
        for d in [DType::Int64, DType::UInt64] {
            for (prod, vals) in [(false, &v), (true, &small)] {
                let a = up(&dev, vals, &[rows, cols], d);
                for axis in [0usize, 1] {
                    for init in [false, true] {
                        let got = if prod {
                            a.cumulative_prod(axis as isize, init)
                        } else {
                            a.cumulative_sum(axis as isize, init)
                        }
                        .unwrap();
                        assert_eq!(got.dtype(), d);
                        let want = host(vals, rows, cols, axis, prod, init);
                        assert_eq!(
                            read(&got),
                            want,
                            "{d} ({rows}, {cols}) prod {prod} axis {axis} init {init}"
                        );
                    }
                }
            }
        }
    }
    // A transposed view and an expression fused into the scan.
    let v = noise(24, 33);
    let a = up(&dev, &v, &[4, 6], DType::Int64);
    let t = a.matrix_transpose().unwrap();
    let tv: Vec<i64> = (0..24).map(|k| v[(k % 4) * 6 + k / 4]).collect();
    let got = read(&t.cumulative_sum(1, false).unwrap());
    assert_eq!(got, host(&tv, 6, 4, 1, false, false));
    let doubled = t.binary(Binary::Add, &t).unwrap();
    let dv: Vec<i64> = tv.iter().map(|x| x.wrapping_add(*x)).collect();
    assert_eq!(
        read(&doubled.cumulative_sum(1, false).unwrap()),
        host(&dv, 6, 4, 1, false, false)
    );
}
