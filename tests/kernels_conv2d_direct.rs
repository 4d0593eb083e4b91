//! The direct forward convolution for tiny K (`kernels::conv2d_direct`) against the f64
//! reference (`reference::conv2d`, scatter loops over outputs and taps): seeded random
//! inputs, outputs poisoned with NaN first, the shapes that break its index arithmetic (odd
//! sizes, batch 1 and 7, stride 2, same and valid, dilation 2, 1, 2 and 3 channels, K from 1
//! to the limit 32, filters past one block of 16 (4 vec4 columns) and not a multiple of it),
//! every activation with and without a bias; ineligible shapes are a typed error; the
//! device's choice between it and the implicit GEMM is made and kept, and a Conv2D layer
//! runs on it when the choice is forced.

mod common;

use common::matmul::tol;
use common::{assert_rel_l2, random_vec};
use suanli::exec::Recorder;
use suanli::internals::kernels::conv2d::Geometry;
use suanli::internals::kernels::{conv2d_direct, conv2d_tune};
use suanli::internals::reference::{self, ConvShape};
use suanli::internals::LayerProbe;
use suanli::nn::Conv2D;
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
    // K = 32 (the limit), 68 filters: blocks of 4, 4, 4, 4 and 1 vec4 columns.
    (2, (7, 9, 2), 68, (4, 4), 1, 1, true),
    // K = 25, 40 filters (blocks of 4, 4 and 2 vec4 columns); K = 1, 4 filters.
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

/// A Conv2D layer (a first layer: 3 channels, 2×2, same, ReLU) with the direct kernel's
/// choice forced on, on a device of its own (the choice is per device and the shared one's
/// is the timed choice's test): its forward pass against the reference, whatever the timing
/// picks on this machine.
#[test]
fn a_conv2d_layer_on_the_forced_direct_path() {
    let _ = dev_or_skip!();
    let spec = std::env::var("SUANLI_TEST_DEVICE").unwrap_or_else(|_| "auto".into());
    let dev = Device::open(&spec).unwrap();
    let c: Case = (3, (9, 7, 3), 12, (2, 2), 1, 1, true);
    let g = geometry(&c);
    assert!(conv2d_tune::direct_candidate(&g), "{c:?}");
    conv2d_tune::force_direct(&dev, true);
    assert!(conv2d_tune::direct(&dev, &g, false).unwrap());
    let layer = Conv2D::new(12, 2).padding("same").activation("relu");
    let p = LayerProbe::new(&dev, layer, &[9, 7, 3], 7).unwrap();
    let params = p.params().unwrap();
    // A random bias (the layer starts with zeros), so a dropped bias fails.
    let bias = random_vec(12, 41);
    p.set_params(&[params[0].clone(), bias.clone()]).unwrap();
    let x = random_vec(3 * 9 * 7 * 3, 42);
    let y = p.forward(&x, 3).unwrap();
    let want = reference::conv2d(&x, &params[0], Some(&bias), Activation::Relu, &shape(&c));
    assert_rel_l2("Conv2D layer, direct", &y, &want, tol(12));
}

/// The timed choice (on a C = 1, K = 9 layer) decides only first layers like it (C ≤ 4,
/// K ≤ 16): with it forced on, 1×1 convolutions over 5 and 16 channels and an RGB 3×3 one
/// (K = 27) still run on the GEMM, though the kernel could run them.
#[test]
fn only_first_layers_take_the_timed_choice() {
    let _ = dev_or_skip!();
    let spec = std::env::var("SUANLI_TEST_DEVICE").unwrap_or_else(|_| "auto".into());
    let dev = Device::open(&spec).unwrap();
    conv2d_tune::force_direct(&dev, true);
    for (c, first) in [
        ((2, (9, 7, 1), 32, (3, 3), 1, 1, false), true),
        ((2, (9, 7, 4), 8, (2, 2), 1, 1, true), true),
        ((2, (9, 7, 16), 8, (1, 1), 1, 1, true), false),
        ((2, (8, 8, 5), 8, (1, 1), 1, 1, true), false),
        ((2, (8, 8, 4), 8, (2, 2), 2, 1, false), true),
        ((2, (9, 7, 3), 8, (3, 3), 1, 1, true), false),
    ] {
        let g = geometry(&c);
        assert!(conv2d_direct::eligible(&g), "{c:?}");
        assert_eq!(conv2d_tune::direct_candidate(&g), first, "{c:?}");
        assert_eq!(
            conv2d_tune::direct(&dev, &g, false).unwrap(),
            first,
            "{c:?}"
        );
    }
}
