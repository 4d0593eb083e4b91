//! The direct forward convolution for tiny K (`kernels::conv2d_direct`) against the f64
//! reference (`reference::conv2d`, scatter loops over outputs and taps): seeded random
//! inputs, outputs poisoned with NaN first, the shapes that break its index arithmetic (odd
//! sizes, batch 1 and 7, stride 2, same and valid, dilation 2, 1, 2 and 3 channels, K from 1
//! to the limit 32, filters past one block of 32 and not a multiple of its columns), every
//! activation with and without a bias; ineligible shapes are a typed error; the device's
//! choice between it and the implicit GEMM is made and kept.

mod common;

use common::matmul::tol;
use common::{assert_rel_l2, random_vec};
use suanli::exec::Recorder;
use suanli::internals::kernels::conv2d::Geometry;
use suanli::internals::kernels::{conv2d_direct, conv2d_tune};
use suanli::internals::reference::{self, ConvShape};
use suanli::{Activation, Device, Error, Padding, Tensor};

/// One convolution: batch, input (h, w, c), filters, kernel, stride, dilation, same padding.
type Case = (
    usize,
    (usize, usize, usize),
    usize,
    (usize, usize),
    usize,
    usize,
    bool,
);

fn shape(&(batch, (h, w, c), oc, (kh, kw), s, d, same): &Case) -> ConvShape {
    ConvShape {
        batch,
        h,
        w,
        c,
        oc,
        kh,
        kw,
        sh: s,
        sw: s,
        dh: d,
        dw: d,
        same,
    }
}

fn geometry(c: &Case) -> Geometry {
    let &(batch, (h, w, ch), oc, k, s, d, same) = c;
    let pad = if same { Padding::Same } else { Padding::Valid };
    let g = Geometry::new(batch, (h, w, ch), oc, k, (s, s), (d, d), pad).unwrap();
    assert_eq!((g.oh, g.ow), shape(c).out(), "{c:?}");
    g
}

fn upload(dev: &Device, v: &[f32]) -> Tensor {
    Tensor::from_slice(dev, v, &[v.len()]).unwrap()
}

/// The direct kernel on `c` with `act` (and a bias when `bias`) against the reference.
fn check(dev: &Device, c: &Case, act: Activation, bias: bool, seed: u64) {
    let g = geometry(c);
    assert!(conv2d_direct::eligible(&g), "{c:?}");
    let (xn, yn, wn) = g.sizes();
    let (x, w, b) = (
        random_vec(xn, seed),
        random_vec(wn, seed + 1),
        random_vec(g.oc, seed + 2),
    );
    let (xt, wt, bt) = (upload(dev, &x), upload(dev, &w), upload(dev, &b));
    // One value past the output, poisoned too: it must stay NaN (no store out of y).
    let y = upload(dev, &vec![f32::NAN; yn + 4]);
    let mut rec = Recorder::new(dev);
    let bias_buf = bias.then(|| bt.buffer());
    conv2d_direct::forward(
        &mut rec,
        &g,
        xt.buffer(),
        wt.buffer(),
        bias_buf,
        y.buffer(),
        act,
    )
    .unwrap_or_else(|e| panic!("direct {c:?}: {e}"));
    rec.submit().unwrap();
    let out = y.to_vec().unwrap();
    let want = reference::conv2d(&x, &w, bias.then_some(&b[..]), act, &shape(c));
    let what = format!("direct {c:?} {act:?} bias {bias}");
    assert_rel_l2(&what, &out[..yn], &want, tol(g.kh * g.kw * g.c));
    // Every value, not only the norm: one wrong pixel or channel fails.
    for (i, (&o, &r)) in out.iter().zip(&want).enumerate() {
        assert!(
            (o as f64 - r).abs() <= 1e-5 * (1.0 + r.abs()),
            "{what}: y[{i}] = {o}, want {r}"
        );
    }
    assert!(out[yn..].iter().all(|v| v.is_nan()), "{what}: wrote past y");
}

const CASES: &[Case] = &[
    // The MNIST convnet's first layer, batch 1 and 3.
    (1, (28, 28, 1), 32, (3, 3), 1, 1, false),
    (3, (28, 28, 1), 32, (3, 3), 1, 1, false),
    // RGB, same padding, odd sizes, batch 7, 12 filters (3 columns of 4).
    (7, (13, 11, 3), 12, (3, 3), 1, 1, true),
    // Stride 2, same and valid.
    (2, (9, 14, 3), 16, (3, 3), 2, 1, true),
    (2, (9, 14, 1), 8, (3, 3), 2, 1, false),
    // Dilation 2.
    (2, (11, 10, 2), 20, (3, 3), 1, 2, true),
    // K = 32 (the limit), 68 filters: three blocks of 6, 6 and 5 columns.
    (2, (7, 9, 2), 68, (4, 4), 1, 1, true),
    // K = 25, 40 filters (two blocks of 5 columns); K = 1, 4 filters.
    (1, (10, 7, 1), 40, (5, 5), 1, 1, true),
    (5, (3, 5, 1), 4, (1, 1), 1, 1, false),
    // A window as large as the input; a 1×3 window.
    (3, (3, 3, 3), 64, (3, 3), 1, 1, false),
    (2, (5, 6, 3), 36, (1, 3), 1, 1, true),
];

#[test]
fn against_the_reference_on_ragged_shapes() {
    let dev = dev_or_skip!();
    for (i, c) in CASES.iter().enumerate() {
        check(&dev, c, Activation::Relu, true, 100 + 10 * i as u64);
    }
}

#[test]
fn every_activation_with_and_without_bias() {
    let dev = dev_or_skip!();
    let c = (2, (9, 8, 3), 12, (3, 3), 1, 1, true);
    let acts = [
        Activation::Linear,
        Activation::Relu,
        Activation::LeakyRelu(0.2),
        Activation::Sigmoid,
        Activation::Tanh,
        Activation::GeluTanh,
        Activation::Gelu,
    ];
    for (i, &act) in acts.iter().enumerate() {
        check(&dev, &c, act, i % 2 == 0, 500 + i as u64);
        check(&dev, &c, act, i % 2 == 1, 600 + i as u64);
    }
}

#[test]
fn ineligible_shapes_are_typed_errors() {
    let dev = dev_or_skip!();
    // K = 36 > 32, and 6 filters (not a multiple of 4).
    for c in [
        (1, (8, 8, 4), 8, (3, 3), 1, 1, true),
        (1, (8, 8, 1), 6, (3, 3), 1, 1, true),
    ] {
        let g = geometry(&c);
        assert!(!conv2d_direct::eligible(&g));
        assert!(!conv2d_tune::direct(&dev, &g, false).unwrap());
        let t = Tensor::zeros(&dev, &[1024]).unwrap();
        let mut rec = Recorder::new(&dev);
        let e = conv2d_direct::forward(
            &mut rec,
            &g,
            t.buffer(),
            t.buffer(),
            None,
            t.buffer(),
            Activation::Linear,
        )
        .unwrap_err();
        assert!(matches!(e, Error::InvalidArgument { .. }), "{e}");
    }
}

#[test]
fn the_devices_choice_is_made_once_and_kept() {
    let dev = dev_or_skip!();
    let g = conv2d_tune::direct_geometry();
    let first = conv2d_tune::direct(&dev, &g, false).unwrap();
    // Inside a capture the kept choice is read, not measured.
    assert_eq!(conv2d_tune::direct(&dev, &g, true).unwrap(), first);
}
