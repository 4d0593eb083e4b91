//! Pooling against the f64 reference (`reference::maxpool` & co., which scatter gradients
//! where the kernels gather them): max (values, where each maximum came from, the gradient
//! routed back through it), average and global average, with and without the previous
//! layer's gate, on windows that do not divide the input, overlapping windows (stride below
//! the window), "same" padding on odd sizes, batches of 1 and 7, 1, 3 and 5 channels.
//! Channel counts that are multiples of 4 take the four-channel kernels. Outputs are
//! poisoned with NaN first.

mod common;

use common::{assert_rel_l2, random_vec};
use suanli::exec::Recorder;
use suanli::internals::kernels::pool2d::{self, Pool, PoolGeometry};
use suanli::internals::reference::{self, PoolShape};
use suanli::{Activation, Device, Error, Padding, Tensor};

fn t(dev: &Device, v: &[f32]) -> Tensor {
    Tensor::from_slice(dev, v, &[v.len()]).unwrap()
}

fn nan(dev: &Device, n: usize) -> Tensor {
    t(dev, &vec![f32::NAN; n])
}

fn run(dev: &Device, f: impl FnOnce(&mut Recorder<'_>)) {
    let mut rec = Recorder::new(dev);
    f(&mut rec);
    rec.submit().unwrap();
}

/// (batch, (h, w, c), window, stride, same)
type Case = (usize, (usize, usize, usize), usize, usize, bool);

fn cases() -> Vec<Case> {
    vec![
        (2, (5, 7, 3), 2, 2, false), // the window does not divide the input
        (7, (6, 6, 1), 2, 2, false),
        (1, (7, 5, 5), 3, 2, false), // overlapping windows
        (3, (7, 9, 2), 3, 1, true),  // stride 1, same padding
        (2, (5, 7, 3), 2, 2, true),  // same padding on odd sizes
        (2, (4, 5, 2), 3, 3, true),
        // Channels in fours: the kernels that take four at a time.
        (2, (5, 7, 4), 2, 2, false),
        (3, (7, 5, 8), 3, 2, false),
        (2, (7, 9, 4), 3, 1, true),
    ]
}

fn shapes(&(batch, (h, w, c), k, s, same): &Case) -> (PoolGeometry, PoolShape) {
    let pad = if same { Padding::Same } else { Padding::Valid };
    let g = PoolGeometry::new(batch, (h, w, c), (k, k), (s, s), pad).unwrap();
    let r = PoolShape {
        batch,
        h,
        w,
        c,
        kh: k,
        kw: k,
        sh: s,
        sw: s,
        same,
    };
    assert_eq!((g.oh, g.ow), r.out(), "{r:?}");
    (g, r)
}

/// Gate outputs in (0.05, 0.95): valid for every activation checked.
fn gate_outputs(n: usize, seed: u64) -> Vec<f32> {
    random_vec(n, seed).iter().map(|v| 0.5 + 0.45 * v).collect()
}

#[test]
fn max_pooling_forward_and_backward() {
    let dev = dev_or_skip!();
    for (i, case) in cases().iter().enumerate() {
        let (g, r) = shapes(case);
        let (xn, yn) = g.sizes();
        let x = random_vec(xn, 10 + i as u64);
        let dy = random_vec(yn, 20 + i as u64);
        let gy = gate_outputs(xn, 30 + i as u64);
        let (xt, y, arg, dyt, gyt) = (
            t(&dev, &x),
            nan(&dev, yn),
            nan(&dev, yn),
            t(&dev, &dy),
            t(&dev, &gy),
        );
        let (dx, dxg) = (nan(&dev, xn), nan(&dev, xn));
        run(&dev, |rec| {
            pool2d::forward(
                rec,
                Pool::Max,
                &g,
                xt.buffer(),
                y.buffer(),
                Some(arg.buffer()),
            )
            .unwrap();
            pool2d::backward(
                rec,
                Pool::Max,
                &g,
                dyt.buffer(),
                Some(arg.buffer()),
                None,
                dx.buffer(),
            )
            .unwrap();
            let gate = Some((Activation::Tanh, gyt.buffer()));
            pool2d::backward(
                rec,
                Pool::Max,
                &g,
                dyt.buffer(),
                Some(arg.buffer()),
                gate,
                dxg.buffer(),
            )
            .unwrap();
        });
        let (want_y, want_arg) = reference::maxpool(&x, &r);
        assert_rel_l2(
            &format!("maxpool {case:?}"),
            &y.to_vec().unwrap(),
            &want_y,
            1e-7,
        );
        let got_arg: Vec<usize> = bytemuck::cast_slice::<f32, u32>(&arg.to_vec().unwrap())
            .iter()
            .map(|&a| a as usize)
            .collect();
        assert_eq!(got_arg, want_arg, "maxpool argmax {case:?}");
        let want_dx = reference::maxpool_backward(&dy, &want_arg, xn);
        assert_rel_l2(
            &format!("maxpool backward {case:?}"),
            &dx.to_vec().unwrap(),
            &want_dx,
            1e-6,
        );
        let gated: Vec<f64> = want_dx
            .iter()
            .zip(&gy)
            .map(|(d, &y)| d * reference::activate_grad_from_output(Activation::Tanh, y as f64))
            .collect();
        assert_rel_l2(
            &format!("maxpool backward gated {case:?}"),
            &dxg.to_vec().unwrap(),
            &gated,
            1e-6,
        );
    }
}

#[test]
fn ties_go_to_the_first_maximum_and_nan_propagates() {
    let dev = dev_or_skip!();
    let g = PoolGeometry::new(1, (2, 2, 1), (2, 2), (2, 2), Padding::Valid).unwrap();
    for (x, want_y, want_arg) in [
        (vec![1.0f32, 1.0, 1.0, 1.0], 1.0f32, 0u32),
        (vec![0.0, 2.0, 2.0, 1.0], 2.0, 1),
        (vec![0.0, 2.0, f32::NAN, 3.0], f32::NAN, 2),
    ] {
        let (xt, y, arg) = (t(&dev, &x), nan(&dev, 1), nan(&dev, 1));
        run(&dev, |rec| {
            pool2d::forward(
                rec,
                Pool::Max,
                &g,
                xt.buffer(),
                y.buffer(),
                Some(arg.buffer()),
            )
            .unwrap()
        });
        let y = y.to_vec().unwrap()[0];
        assert!(y == want_y || (y.is_nan() && want_y.is_nan()), "{x:?}: {y}");
        assert_eq!(arg.to_vec().unwrap()[0].to_bits(), want_arg, "{x:?}");
    }
}

#[test]
fn average_pooling_forward_and_backward() {
    let dev = dev_or_skip!();
    for (i, case) in cases().iter().enumerate() {
        let (g, r) = shapes(case);
        let (xn, yn) = g.sizes();
        let x = random_vec(xn, 40 + i as u64);
        let dy = random_vec(yn, 50 + i as u64);
        let gy = gate_outputs(xn, 60 + i as u64);
        let (xt, y, dyt, gyt, dx) = (
            t(&dev, &x),
            nan(&dev, yn),
            t(&dev, &dy),
            t(&dev, &gy),
            nan(&dev, xn),
        );
        run(&dev, |rec| {
            pool2d::forward(rec, Pool::Average, &g, xt.buffer(), y.buffer(), None).unwrap();
            let gate = Some((Activation::Sigmoid, gyt.buffer()));
            pool2d::backward(
                rec,
                Pool::Average,
                &g,
                dyt.buffer(),
                None,
                gate,
                dx.buffer(),
            )
            .unwrap();
        });
        assert_rel_l2(
            &format!("avgpool {case:?}"),
            &y.to_vec().unwrap(),
            &reference::avgpool(&x, &r),
            1e-6,
        );
        let want: Vec<f64> = reference::avgpool_backward(&dy, &r)
            .iter()
            .zip(&gy)
            .map(|(d, &y)| d * reference::activate_grad_from_output(Activation::Sigmoid, y as f64))
            .collect();
        assert_rel_l2(
            &format!("avgpool backward {case:?}"),
            &dx.to_vec().unwrap(),
            &want,
            1e-6,
        );
    }
}

#[test]
fn global_average_pooling_forward_and_backward() {
    let dev = dev_or_skip!();
    for (i, &(batch, h, w, c)) in [(1, 1, 1, 3), (7, 5, 3, 5), (2, 13, 11, 17), (3, 64, 65, 2)]
        .iter()
        .enumerate()
    {
        let g = PoolGeometry::global(batch, (h, w, c));
        let (xn, yn) = g.sizes();
        assert_eq!(yn, batch * c);
        let x = random_vec(xn, 70 + i as u64);
        let dy = random_vec(yn, 80 + i as u64);
        let (xt, y, dyt, dx) = (t(&dev, &x), nan(&dev, yn), t(&dev, &dy), nan(&dev, xn));
        run(&dev, |rec| {
            pool2d::forward(rec, Pool::GlobalAverage, &g, xt.buffer(), y.buffer(), None).unwrap();
            pool2d::backward(
                rec,
                Pool::GlobalAverage,
                &g,
                dyt.buffer(),
                None,
                None,
                dx.buffer(),
            )
            .unwrap();
        });
        let tol = 1e-6 * ((h * w) as f64).sqrt().max(1.0);
        let what = format!("global avgpool {batch}x{h}x{w}x{c}");
        assert_rel_l2(
            &what,
            &y.to_vec().unwrap(),
            &reference::global_avgpool(&x, batch, h * w, c),
            tol,
        );
        let want = reference::global_avgpool_backward(&dy, batch, h * w, c);
        assert_rel_l2(
            &format!("{what} backward"),
            &dx.to_vec().unwrap(),
            &want,
            1e-6,
        );
    }
}

#[test]
fn bad_windows_are_typed_errors() {
    let e = PoolGeometry::new(1, (3, 3, 1), (4, 4), (1, 1), Padding::Valid).unwrap_err();
    assert!(matches!(e, Error::ShapeMismatch { .. }), "{e}");
    let e = PoolGeometry::new(1, (3, 3, 1), (2, 2), (0, 1), Padding::Valid).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument { .. }), "{e}");
}
