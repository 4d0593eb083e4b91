//! Views, assignment, creation and host round trips of arrays: indexing as Python does it,
//! writes through views (into poisoned targets, overlapping their own source), reshapes that
//! copy only when they must, the creation functions against their definitions, every dtype's
//! bytes in and out, and the typed errors of bad input.

mod common;

use common::arrays::{upload, values};
use suanli::array::{Array, Binary, DType, Index, Unary};
use suanli::{Error, Tensor};

fn sl(start: Option<isize>, stop: Option<isize>, step: Option<isize>) -> Index {
    Index::Slice { start, stop, step }
}

#[test]
fn indexing_and_views_share_the_buffer() {
    let dev = dev_or_skip!();
    let vals: Vec<f64> = (0..24).map(|v| v as f64).collect();
    let x = upload(&dev, DType::Int32, &vals, &[2, 3, 4]);
    // x[1, ::-1, 1::2]
    let v = x
        .index(&[
            Index::At(1),
            sl(None, None, Some(-1)),
            sl(Some(1), None, Some(2)),
        ])
        .unwrap();
    assert_eq!(v.shape(), &[3, 2]);
    assert_eq!(
        v.to_f64_vec().unwrap(),
        vec![21.0, 23.0, 17.0, 19.0, 13.0, 15.0]
    );
    // x[..., None, -1]
    let e = x
        .index(&[Index::Ellipsis, Index::NewAxis, Index::At(-1)])
        .unwrap();
    assert_eq!(e.shape(), &[2, 3, 1]);
    assert_eq!(
        e.to_f64_vec().unwrap(),
        vec![3.0, 7.0, 11.0, 15.0, 19.0, 23.0]
    );
    // permute, broadcast, expand, squeeze
    let p = x.permute_dims(&[2, 0, 1]).unwrap();
    assert_eq!(p.shape(), &[4, 2, 3]);
    assert_eq!(p.to_f64_vec().unwrap()[..4], [0.0, 4.0, 8.0, 12.0]);
    let b = upload(&dev, DType::Float32, &[1.0, 2.0], &[2, 1])
        .broadcast_to(&[3, 2, 4])
        .unwrap();
    assert_eq!(
        b.to_f64_vec().unwrap()[..9],
        [1.0, 1.0, 1.0, 1.0, 2.0, 2.0, 2.0, 2.0, 1.0]
    );
    assert_eq!(x.expand_dims(1).unwrap().shape(), &[2, 1, 3, 4]);
    assert_eq!(e.squeeze(&[2]).unwrap().shape(), &[2, 3]);
    // An empty slice and out-of-range slice bounds clamp as in Python.
    assert_eq!(
        x.index(&[sl(Some(5), Some(9), None)]).unwrap().shape(),
        &[0, 3, 4]
    );
    // Errors: IndexOutOfBounds for positions and too many indices.
    assert!(matches!(
        x.index(&[Index::At(2)]),
        Err(Error::IndexOutOfBounds { .. })
    ));
    assert!(matches!(
        x.index(&[Index::At(0); 4]),
        Err(Error::IndexOutOfBounds { .. })
    ));
    assert!(x.index(&[sl(None, None, Some(0))]).is_err());
    assert!(x.index(&[Index::Ellipsis, Index::Ellipsis]).is_err());
    assert!(x.broadcast_to(&[3, 4]).is_err());
    assert!(x.squeeze(&[0]).is_err());
}

#[test]
fn reshape_copies_only_non_contiguous_views() {
    let dev = dev_or_skip!();
    let vals: Vec<f64> = (0..12).map(|v| v as f64).collect();
    let x = upload(&dev, DType::Float32, &vals, &[3, 4]);
    let r = x.reshape(&[Some(2), None]).unwrap();
    assert_eq!(r.shape(), &[2, 6]);
    let t = x.matrix_transpose().unwrap().reshape(&[Some(12)]).unwrap();
    assert_eq!(
        t.to_f64_vec().unwrap(),
        vec![0.0, 4.0, 8.0, 1.0, 5.0, 9.0, 2.0, 6.0, 10.0, 3.0, 7.0, 11.0]
    );
    // A view reshaped shares the buffer: writing through it is seen by x.
    r.index(&[Index::At(1), Index::At(0)])
        .unwrap()
        .assign(&Array::scalar(&dev, -1.0, DType::Float32))
        .unwrap();
    assert_eq!(x.to_f64_vec().unwrap()[6], -1.0);
    let e = x.reshape(&[Some(5), None]).unwrap_err().to_string();
    assert!(e.contains("12 elements"), "{e}");
    assert!(x.reshape(&[None, None]).is_err());
}

#[test]
fn assignment_through_views_into_poisoned_targets() {
    let dev = dev_or_skip!();
    // Poison the target, write a broadcast row into every other column of a reversed view,
    // and check that exactly those elements changed.
    let poison = vec![f64::NAN; 20];
    let x = upload(&dev, DType::Float32, &poison, &[4, 5]);
    let view = x
        .index(&[sl(None, None, Some(-1)), sl(None, None, Some(2))])
        .unwrap();
    let row = upload(&dev, DType::Float32, &[1.0, 2.0, 3.0], &[3]);
    view.assign(&row).unwrap();
    let got = x.to_f64_vec().unwrap();
    for (i, v) in got.iter().enumerate() {
        let c = i % 5;
        if c % 2 == 0 {
            assert_eq!(*v, (c / 2 + 1) as f64, "element {i}");
        } else {
            assert!(v.is_nan(), "element {i} was written: {v}");
        }
    }
    // x[1:] = x[:-1] reads every element before writing any (NumPy's semantics).
    let y = upload(&dev, DType::Int32, &[0.0, 1.0, 2.0, 3.0, 4.0], &[5]);
    let src = y
        .index(&[sl(None, Some(-1), None)])
        .unwrap()
        .add_scalar(10)
        .unwrap();
    y.index(&[sl(Some(1), None, None)])
        .unwrap()
        .assign(&src)
        .unwrap();
    assert_eq!(y.to_f64_vec().unwrap(), vec![0.0, 10.0, 11.0, 12.0, 13.0]);
    // A float value into an int target is converted; a shape that does not broadcast is an error.
    y.assign(&Array::scalar(&dev, 2.9, DType::Float32)).unwrap();
    assert_eq!(y.to_f64_vec().unwrap(), vec![2.0; 5]);
    assert!(y
        .assign(&upload(&dev, DType::Int32, &[1.0, 2.0], &[2]))
        .is_err());
}

#[test]
fn assignment_into_an_expression_its_value_reads() {
    let dev = dev_or_skip!();
    // `m = isnan(x); m |= (x == 0)`: the value was built while `m` was an expression over
    // `x`; writing into `m` runs it into a buffer of its own, which the value then reads.
    // It is computed into a temporary first (one kernel reading and writing the same buffer
    // is a validation error).
    let x = upload(&dev, DType::Float32, &[f64::NAN, 0.0, 1.0, -0.0], &[4]);
    let m = x.unary(Unary::IsNan).unwrap();
    let z = x.binary_scalar(Binary::Equal, 0.0.into()).unwrap();
    let value = m.binary(Binary::BitwiseOr, &z).unwrap();
    assert!(!m.is_evaluated());
    m.assign(&value).unwrap();
    assert_eq!(m.to_f64_vec().unwrap(), vec![1.0, 1.0, 0.0, 1.0]);
    // `y = x + 1; y[...] = y * 2`, both still expressions when the assignment starts.
    let y = x.binary_scalar(Binary::Add, 1.0.into()).unwrap();
    let v = y.binary_scalar(Binary::Multiply, 2.0.into()).unwrap();
    y.assign(&v).unwrap();
    let got = y.to_f64_vec().unwrap();
    assert!(got[0].is_nan(), "{got:?}");
    assert_eq!(got[1..], [2.0, 4.0, 2.0]);
}

#[test]
fn creation_functions_match_their_definitions() {
    let dev = dev_or_skip!();
    let a = Array::arange(&dev, 2.0, 11.0, 3.0, DType::Int32).unwrap();
    assert_eq!(a.to_f64_vec().unwrap(), vec![2.0, 5.0, 8.0]);
    let f = Array::arange(&dev, 1.0, -1.0, -0.5, DType::Float32).unwrap();
    assert_eq!(f.to_f64_vec().unwrap(), vec![1.0, 0.5, 0.0, -0.5]);
    assert_eq!(
        Array::arange(&dev, 0.0, -3.0, 1.0, DType::Int32)
            .unwrap()
            .shape(),
        &[0]
    );
    assert!(Array::arange(&dev, 0.0, 3.0, 0.0, DType::Int32).is_err());
    let l = Array::linspace(&dev, 0.0, 1.0, 5, true, DType::Float32)
        .unwrap()
        .to_f64_vec()
        .unwrap();
    assert_eq!(l, vec![0.0, 0.25, 0.5, 0.75, 1.0]);
    let l = Array::linspace(&dev, 0.0, 1.0, 4, false, DType::Float32)
        .unwrap()
        .to_f64_vec()
        .unwrap();
    assert_eq!(l, vec![0.0, 0.25, 0.5, 0.75]);
    let e = Array::eye(&dev, 3, 4, -1, DType::Int8)
        .unwrap()
        .to_f64_vec()
        .unwrap();
    let want: Vec<f64> = (0..12)
        .map(|i| ((i / 4) as isize - 1 == (i % 4) as isize) as u8 as f64)
        .collect();
    assert_eq!(e, want);
    let m = upload(
        &dev,
        DType::Float32,
        &(1..=12).map(|v| v as f64).collect::<Vec<_>>(),
        &[3, 4],
    );
    let tl = m.triangle(0, false).unwrap().to_f64_vec().unwrap();
    let tu = m.triangle(1, true).unwrap().to_f64_vec().unwrap();
    for i in 0..12 {
        let (r, c) = (i / 4, i % 4);
        assert_eq!(tl[i], if c <= r { (i + 1) as f64 } else { 0.0 });
        assert_eq!(tu[i], if c > r { (i + 1) as f64 } else { 0.0 });
    }
    let full = Array::full(&dev, &[2, 2], -3.5, DType::Float32).unwrap();
    assert_eq!(full.to_f64_vec().unwrap(), vec![-3.5; 4]);
    assert_eq!(
        Array::ones(&dev, &[], DType::Bool)
            .unwrap()
            .to_f64_vec()
            .unwrap(),
        vec![1.0]
    );
}

#[test]
fn every_dtype_round_trips_through_host_bytes_and_tensors() {
    let dev = dev_or_skip!();
    // complex64 round trips in tests/array_complex.rs (it has two words per element).
    for d in DType::ALL
        .into_iter()
        .filter(|d| !d.is_complex() && d.check_device(&dev, "test").is_ok())
    {
        let (lo, hi) = d.range();
        let (lo, hi) = if d.is_float() { (-1e6, 1e6) } else { (lo, hi) };
        let vals = values(d, 37, 1, lo, hi);
        let a = upload(&dev, d, &vals, &[37]);
        let bytes = a.to_bytes().unwrap();
        assert_eq!(bytes.len(), 37 * d.host_size());
        let b = Array::from_bytes(&dev, d, &bytes, &[37]).unwrap();
        assert_eq!(b.to_f64_vec().unwrap(), vals, "{d}");
        assert_eq!(DType::from_name(d.name()).unwrap(), d);
    }
    assert!(Array::from_bytes(&dev, DType::Int16, &[1, 2, 3], &[1]).is_err());
    assert!(Array::from_bytes(&dev, DType::Int16, &[1, 2, 3, 4], &[3]).is_err());
    // Tensors and arrays share buffers both ways when the layout allows.
    let t = Tensor::from_slice(&dev, &[1.0, 2.0, 3.0, 4.0], &[2, 2]).unwrap();
    let a = Array::from_tensor(&t).unwrap();
    a.index(&[Index::At(0), Index::At(1)])
        .unwrap()
        .assign(&Array::scalar(&dev, 9.0, DType::Float32))
        .unwrap();
    assert_eq!(t.to_vec().unwrap(), vec![1.0, 9.0, 3.0, 4.0]);
    let back = a.to_tensor().unwrap();
    assert!(back.same_buffer(&t));
    let tt = a.matrix_transpose().unwrap().to_tensor().unwrap();
    assert_eq!(tt.to_vec().unwrap(), vec![1.0, 3.0, 9.0, 4.0]);
    assert!(!tt.same_buffer(&t));
}

#[test]
fn arrays_on_two_devices_do_not_mix() {
    let dev = dev_or_skip!();
    let Some(other) = common::own_device(None) else {
        return;
    };
    let a = Array::zeros(&dev, &[2], DType::Float32).unwrap();
    let b = Array::zeros(&other, &[2], DType::Float32).unwrap();
    assert!(matches!(a.add(&b), Err(Error::DeviceMismatch { .. })));
    assert!(matches!(a.assign(&b), Err(Error::DeviceMismatch { .. })));
}

#[test]
fn arrays_larger_than_a_binding_are_refused_before_any_allocation() {
    let dev = dev_or_skip!();
    let max = dev.info().limits.max_storage_binding;
    let too_many = (max / 4 + 1) as usize;
    let err = Array::empty(&dev, &[too_many], DType::Float32).unwrap_err();
    assert!(
        matches!(&err, Error::InvalidArgument { name: "size", .. }),
        "{err}"
    );
    // A broadcast view costs nothing; evaluating it needs a buffer of the whole shape.
    let one = Array::ones(&dev, &[1], DType::Float32).unwrap();
    let wide = one.broadcast_to(&[too_many]).unwrap();
    let err = wide
        .add_scalar(1.0)
        .and_then(|y| y.to_f64_vec())
        .unwrap_err();
    assert!(
        matches!(&err, Error::InvalidArgument { name: "size", .. }),
        "{err}"
    );
    // The limit itself is still allowed (checked where it is small enough to allocate here).
    if max <= 256 << 20 {
        assert!(Array::empty(&dev, &[too_many - 1], DType::Float32).is_ok());
    }
}
