//! Convolutions against the f64 reference (`reference::conv2d*`, written as scatter loops
//! over outputs and taps, independent of the kernels' GEMM form): every kernel variant the
//! device can run forced by name on every pass (forward with bias and activation, backward
//! data with and without the previous layer's gate, backward weights direct and split into
//! chunks), ragged and channel-aligned shapes (the scalar and 16-byte paths), then the shapes
//! that break index arithmetic (odd sizes, stride 2, same and valid, dilation 2, 1, 3 and 5
//! channels, filters not a multiple of 4, batches of 1 and 7, a window as large as the padded
//! input) with the device's own choice, the optimizer fused into the weight gradient, and a
//! weight gradient whose K is past lavapipe's loop limit. Outputs are poisoned with NaN first.

mod common;

use common::matmul::{narrow_variants, tol, variants};
use common::{assert_rel_l2, random_vec};
use suanli::exec::Recorder;
use suanli::internals::kernels::conv2d::{self, Geometry, Op, WeightsOut, WeightsPlan};
use suanli::internals::kernels::matmul::Update;
use suanli::internals::kernels::matmul_variant::Variant;
use suanli::internals::kernels::{conv2d_strided, conv2d_tune};
use suanli::internals::reference::{self, ConvShape};
use suanli::{Activation, Device, Error, Padding, Rule, Tensor};

/// One convolution to check.
#[derive(Clone, Copy, Debug)]
struct Case {
    batch: usize,
    h: usize,
    w: usize,
    c: usize,
    oc: usize,
    k: (usize, usize),
    s: (usize, usize),
    d: (usize, usize),
    same: bool,
}

impl Case {
    fn new(batch: usize, (h, w, c): (usize, usize, usize), oc: usize, k: usize) -> Case {
        Case {
            batch,
            h,
            w,
            c,
            oc,
            k: (k, k),
            s: (1, 1),
            d: (1, 1),
            same: false,
        }
    }

    fn same(mut self) -> Case {
        self.same = true;
        self
    }

    fn stride(mut self, s: usize) -> Case {
        self.s = (s, s);
        self
    }

    fn dilation(mut self, d: usize) -> Case {
        self.d = (d, d);
        self
    }

    fn geometry(&self) -> Geometry {
        let pad = if self.same {
            Padding::Same
        } else {
            Padding::Valid
        };
        let g = Geometry::new(
            self.batch,
            (self.h, self.w, self.c),
            self.oc,
            self.k,
            self.s,
            self.d,
            pad,
        )
        .unwrap();
        // The crate's window arithmetic agrees with the reference's own.
        assert_eq!((g.oh, g.ow), self.shape().out(), "{self:?}");
        g
    }

    fn shape(&self) -> ConvShape {
        ConvShape {
            batch: self.batch,
            h: self.h,
            w: self.w,
            c: self.c,
            oc: self.oc,
            kh: self.k.0,
            kw: self.k.1,
            sh: self.s.0,
            sw: self.s.1,
            dh: self.d.0,
            dw: self.d.1,
            same: self.same,
        }
    }
}

fn poisoned(dev: &Device, n: usize) -> Tensor {
    Tensor::from_slice(dev, &vec![f32::NAN; n.max(1)], &[n.max(1)]).unwrap()
}

fn upload(dev: &Device, v: &[f32]) -> Tensor {
    Tensor::from_slice(dev, v, &[v.len()]).unwrap()
}

fn run(dev: &Device, f: impl FnOnce(&mut Recorder<'_>)) {
    let mut rec = Recorder::new(dev);
    f(&mut rec);
    rec.submit().unwrap();
}

/// The forward pass with bias and `act` against the reference.
fn check_forward(dev: &Device, v: Variant, c: &Case, act: Activation, seed: u64) {
    let g = c.geometry();
    let (xn, yn, wn) = g.sizes();
    let (x, w, b) = (
        random_vec(xn, seed),
        random_vec(wn, seed + 1),
        random_vec(c.oc, seed + 2),
    );
    let (xt, wt, bt, y) = (
        upload(dev, &x),
        upload(dev, &w),
        upload(dev, &b),
        poisoned(dev, yn),
    );
    run(dev, |rec| {
        conv2d::forward(
            rec,
            &g,
            xt.buffer(),
            wt.buffer(),
            Some(bt.buffer()),
            y.buffer(),
            act,
            v,
        )
        .unwrap_or_else(|e| panic!("{} forward {c:?}: {e}", v.name()))
    });
    let want = reference::conv2d(&x, &w, Some(&b), act, &c.shape());
    let k = c.k.0 * c.k.1 * c.c;
    assert_rel_l2(
        &format!("{} forward {c:?} {act:?}", v.name()),
        &y.to_vec().unwrap()[..yn],
        &want,
        tol(k),
    );
}

/// The backward data pass (through the transposed kernel), times `gate`'s derivative from
/// a random output when given, against the reference.
fn check_backward_data(dev: &Device, v: Variant, c: &Case, gate: Option<Activation>, seed: u64) {
    let g = c.geometry();
    let (xn, yn, wn) = g.sizes();
    let (dy, w) = (random_vec(yn, seed), random_vec(wn, seed + 1));
    // Outputs of the gate's activation: (0, 1) suits every one of them.
    let gy: Vec<f32> = random_vec(xn, seed + 2)
        .iter()
        .map(|v| 0.5 + 0.45 * v)
        .collect();
    let (dyt, w_t, wtt, gyt, dx) = (
        upload(dev, &dy),
        upload(dev, &w),
        poisoned(dev, wn),
        upload(dev, &gy),
        poisoned(dev, xn),
    );
    run(dev, |rec| {
        conv2d::transpose(rec, &g, w_t.buffer(), wtt.buffer()).unwrap();
        let gate = gate.map(|a| (a, gyt.buffer()));
        conv2d::backward_data(rec, &g, dyt.buffer(), wtt.buffer(), gate, dx.buffer(), v)
            .unwrap_or_else(|e| panic!("{} backward data {c:?}: {e}", v.name()))
    });
    let mut want = reference::conv2d_backward_data(&dy, &w, &c.shape());
    if let Some(a) = gate {
        for (d, &y) in want.iter_mut().zip(&gy) {
            *d *= reference::activate_grad_from_output(a, y as f64);
        }
    }
    let k = c.k.0 * c.k.1 * c.oc;
    assert_rel_l2(
        &format!("{} backward data {c:?} gate {gate:?}", v.name()),
        &dx.to_vec().unwrap()[..xn],
        &want,
        tol(k),
    );
}

/// The backward data pass adding into what `dx` holds (a fan-out's sum): the old values plus
/// the reference.
fn check_backward_data_adding(dev: &Device, v: Variant, c: &Case, seed: u64) {
    let g = c.geometry();
    let (xn, _, wn) = g.sizes();
    let (dy, w, old) = (
        random_vec(g.sizes().1, seed),
        random_vec(wn, seed + 1),
        random_vec(xn, seed + 2),
    );
    let (dyt, w_t, wtt, dx) = (
        upload(dev, &dy),
        upload(dev, &w),
        poisoned(dev, wn),
        upload(dev, &old),
    );
    run(dev, |rec| {
        conv2d::transpose(rec, &g, w_t.buffer(), wtt.buffer()).unwrap();
        conv2d::backward_data_adding(rec, &g, dyt.buffer(), wtt.buffer(), dx.buffer(), v)
            .unwrap_or_else(|e| panic!("{} backward data adding {c:?}: {e}", v.name()))
    });
    let want: Vec<f64> = reference::conv2d_backward_data(&dy, &w, &c.shape())
        .iter()
        .zip(&old)
        .map(|(r, &o)| r + o as f64)
        .collect();
    let k = c.k.0 * c.k.1 * c.oc;
    assert_rel_l2(
        &format!("{} backward data adding {c:?}", v.name()),
        &dx.to_vec().unwrap()[..xn],
        &want,
        tol(k),
    );
}

/// The weight and bias gradients, in one GEMM (`plan` None) or split into `plan`'s chunks
/// and reduced, against the reference.
fn check_backward_weights(
    dev: &Device,
    v: Variant,
    c: &Case,
    plan: Option<WeightsPlan>,
    seed: u64,
) {
    let g = c.geometry();
    let (xn, yn, wn) = g.sizes();
    let (x, dy) = (random_vec(xn, seed), random_vec(yn, seed + 1));
    let (xt, dyt, dw, db) = (
        upload(dev, &x),
        upload(dev, &dy),
        poisoned(dev, wn),
        poisoned(dev, c.oc),
    );
    let splits = plan.map_or(1, |p| p.splits as usize);
    let (part, part_b) = (poisoned(dev, wn * splits), poisoned(dev, c.oc * splits));
    run(dev, |rec| {
        let out = WeightsOut::Grad {
            dw: dw.buffer(),
            db: Some(db.buffer()),
        };
        let r = match plan {
            None => conv2d::weights_direct(rec, &g, xt.buffer(), dyt.buffer(), out, v),
            Some(p) => conv2d::weights_partial(
                rec,
                &g,
                xt.buffer(),
                dyt.buffer(),
                part.buffer(),
                Some(part_b.buffer()),
                p,
                v,
            )
            .and_then(|_| conv2d::reduce(rec, &g, part.buffer(), Some(part_b.buffer()), p, out)),
        };
        r.unwrap_or_else(|e| panic!("{} backward weights {c:?} {plan:?}: {e}", v.name()))
    });
    let (want_w, want_b) = reference::conv2d_backward_weights(&x, &dy, &c.shape());
    let k = yn / c.oc;
    let what = format!("{} backward weights {c:?} {plan:?}", v.name());
    assert_rel_l2(&what, &dw.to_vec().unwrap()[..wn], &want_w, tol(k));
    assert_rel_l2(
        &format!("{what} (bias)"),
        &db.to_vec().unwrap()[..c.oc],
        &want_b,
        tol(k),
    );
}

/// A ragged case (3 channels: the scalar loads) and an aligned one (the 16-byte loads), with
/// more than 16 filters and taps so the wide kernels run them.
fn wide_cases() -> [Case; 2] {
    [
        Case::new(2, (7, 5, 3), 20, 3).same(),
        Case::new(2, (6, 7, 8), 20, 3),
    ]
}

#[test]
fn every_variant_every_pass_ragged_and_aligned() {
    let dev = dev_or_skip!();
    let mut seed = 1;
    for v in variants(&dev) {
        for c in wide_cases() {
            seed += 10;
            check_forward(&dev, v, &c, Activation::Relu, seed);
            check_backward_data(&dev, v, &c, None, seed + 3);
            check_backward_data_adding(&dev, v, &c, seed + 4);
            check_backward_weights(&dev, v, &c, None, seed + 5);
            let g = c.geometry();
            check_backward_weights(&dev, v, &c, Some(conv2d::plan_with_chunk(&g, 64)), seed + 7);
        }
    }
}

#[test]
fn narrow_and_shallow_kernels() {
    let dev = dev_or_skip!();
    let (narrow, shallow) = narrow_variants(&dev);
    // Few filters (N ≤ 16): the narrow kernels, every pass whose N is small.
    let few = Case::new(3, (6, 5, 2), 5, 3).same();
    for &v in &narrow {
        check_forward(&dev, v, &few, Activation::Tanh, 300);
        check_backward_data(&dev, v, &few, Some(Activation::Relu), 301);
        check_backward_weights(&dev, v, &few, None, 302);
        let p = conv2d::plan_with_chunk(&few.geometry(), 64);
        check_backward_weights(&dev, v, &few, Some(p), 303);
    }
    // A first layer (one channel, 3×3: K = 9): the shallow kernels, MNIST's conv1.
    let first = Case::new(3, (9, 8, 1), 20, 3);
    for &v in &shallow {
        check_forward(&dev, v, &first, Activation::Relu, 310);
    }
}

/// The shapes that break index arithmetic, each run with the device's choice for every pass
/// (as training routes them).
fn hard_cases() -> Vec<Case> {
    vec![
        Case::new(1, (5, 7, 1), 3, 3),
        Case::new(7, (13, 11, 3), 17, 3).same(),
        Case::new(2, (7, 7, 5), 4, 2).same(), // an even window: padding split low-first
        Case::new(2, (9, 8, 3), 6, 3).stride(2),
        Case::new(3, (9, 7, 4), 8, 3).stride(2).same(),
        // Strided backward data is a gather of the taps that land (conv2d_strided): stride
        // 3 with a window of 2 (rows no tap reaches), stride 2 with dilation 2, a layer as
        // issue 35's CNN has (even input, `same`, 64 filters).
        Case::new(2, (10, 11, 3), 5, 2).stride(3),
        Case::new(2, (11, 10, 3), 7, 3).stride(2).dilation(2).same(),
        Case::new(3, (14, 14, 32), 64, 3).stride(2).same(),
        Case::new(2, (9, 8, 4), 12, 3).stride(2), // four channels at a time, valid
        Case::new(2, (7, 9, 8), 4, 4).stride(3).dilation(2).same(),
        // Four pixels of a phase per invocation: rows whose phases hold 7 and 6 pixels (a
        // short last block), stride 3 over 10 columns, a row narrower than one block.
        Case::new(2, (9, 13, 8), 8, 3).stride(2).same(),
        Case::new(2, (6, 10, 4), 4, 3).stride(3),
        Case::new(3, (5, 3, 4), 8, 2).stride(2).same(),
        Case::new(2, (11, 9, 5), 3, 3).dilation(2),
        Case::new(2, (8, 9, 2), 5, 3).dilation(2).same(),
        Case::new(2, (4, 5, 3), 2, 5).same(), // a window larger than the input, padded
        Case::new(2, (4, 5, 3), 2, 4).dilation(1), // a window as large as the input
        Case::new(1, (6, 6, 1), 1, 1),        // 1×1: a plain matmul
    ]
}

#[test]
fn hard_shapes_with_the_devices_choice() {
    let dev = dev_or_skip!();
    conv2d_tune::prepare(&dev).unwrap();
    let mut seed = 500;
    for mut c in hard_cases() {
        if c.k.0 > c.h && !c.same {
            c.same = true;
        }
        seed += 10;
        let g = c.geometry();
        let pick = |op| conv2d_tune::pick(&dev, &g, op, false).unwrap();
        check_forward(&dev, pick(Op::Forward), &c, Activation::Relu, seed);
        check_backward_data(&dev, pick(Op::BackwardData), &c, None, seed + 1);
        check_backward_data_adding(&dev, pick(Op::BackwardData), &c, seed + 2);
        check_backward_data(
            &dev,
            pick(Op::BackwardData),
            &c,
            Some(Activation::Sigmoid),
            seed + 2,
        );
        let v = pick(Op::BackwardWeights);
        check_backward_weights(&dev, v, &c, None, seed + 3);
        let plan = conv2d::plan_weights(&g, v, dev.info().limits.max_loop_iterations);
        if plan.splits > 1 {
            check_backward_weights(&dev, v, &c, Some(plan), seed + 4);
        }
        // Naive, the direct kernel of last resort, on the same shapes.
        check_forward(&dev, Variant::Naive, &c, Activation::Linear, seed + 5);
        check_backward_weights(&dev, Variant::Naive, &c, None, seed + 6);
    }
}

/// Adam fused into the weight gradient, direct and after a split-K reduction, against the
/// reference gradient stepped by the reference optimizer.
#[test]
fn the_optimizer_fused_into_the_weight_gradient() {
    let dev = dev_or_skip!();
    let rule = Rule::Adam {
        lr: 0.01,
        beta1: 0.9,
        beta2: 0.999,
        eps: 1e-7,
        weight_decay: 0.0,
        decoupled: false,
    };
    let c = Case::new(4, (9, 7, 4), 12, 3).same();
    let g = c.geometry();
    let (xn, yn, wn) = g.sizes();
    let v = conv2d_tune::pick(&dev, &g, Op::BackwardWeights, false).unwrap();
    for plan in [None, Some(conv2d::plan_with_chunk(&g, 64))] {
        let (x, dy) = (random_vec(xn, 70), random_vec(yn, 71));
        let (w0, b0) = (random_vec(wn, 72), random_vec(c.oc, 73));
        let (m0, v0) = (random_vec(wn, 74), random_vec(wn, 75));
        let v0: Vec<f32> = v0.iter().map(|v| v.abs()).collect();
        let (bm0, bv0) = (random_vec(c.oc, 76), vec![0.25f32; c.oc]);
        let t = |v: &[f32]| upload(&dev, v);
        let (xt, dyt, w, b) = (t(&x), t(&dy), t(&w0), t(&b0));
        let (wm, wv, bm, bv) = (t(&m0), t(&v0), t(&bm0), t(&bv0));
        let splits = plan.map_or(1, |p: WeightsPlan| p.splits as usize);
        let (part, part_b) = (poisoned(&dev, wn * splits), poisoned(&dev, c.oc * splits));
        run(&dev, |rec| {
            let (ws, bs) = ([wm.buffer(), wv.buffer()], [bm.buffer(), bv.buffer()]);
            let out = WeightsOut::Update {
                w: w.buffer(),
                update: Update {
                    rule,
                    step: 3,
                    state: &ws,
                    bias: Some((b.buffer(), &bs)),
                },
            };
            match plan {
                None => conv2d::weights_direct(rec, &g, xt.buffer(), dyt.buffer(), out, v).unwrap(),
                Some(p) => {
                    conv2d::weights_partial(
                        rec,
                        &g,
                        xt.buffer(),
                        dyt.buffer(),
                        part.buffer(),
                        Some(part_b.buffer()),
                        p,
                        v,
                    )
                    .unwrap();
                    conv2d::reduce(rec, &g, part.buffer(), Some(part_b.buffer()), p, out).unwrap();
                }
            }
        });
        let (gw, gb) = reference::conv2d_backward_weights(&x, &dy, &c.shape());
        let f = |v: &[f32]| v.iter().map(|&x| x as f64).collect::<Vec<f64>>();
        let (mut pw, mut sw) = (f(&w0), vec![f(&m0), f(&v0)]);
        reference::optim_step(&rule, &gw, &mut pw, &mut sw, 3);
        let (mut pb, mut sb) = (f(&b0), vec![f(&bm0), f(&bv0)]);
        reference::optim_step(&rule, &gb, &mut pb, &mut sb, 3);
        let what = format!("Adam in the weight gradient, {plan:?}");
        assert_rel_l2(&what, &w.to_vec().unwrap(), &pw, 1e-5);
        assert_rel_l2(&format!("{what}: m"), &wm.to_vec().unwrap(), &sw[0], 1e-5);
        assert_rel_l2(&format!("{what}: v"), &wv.to_vec().unwrap(), &sw[1], 1e-5);
        assert_rel_l2(&format!("{what}: bias"), &b.to_vec().unwrap(), &pb, 1e-5);
        assert_rel_l2(
            &format!("{what}: bias m"),
            &bm.to_vec().unwrap(),
            &sb[0],
            1e-5,
        );
    }
}

/// MNIST's first layer at batch 128: the weight gradient sums 86,528 products per weight,
/// more than llvmpipe lets one invocation loop; the plan splits it and the sum is whole.
#[test]
fn a_weight_gradient_deeper_than_the_loop_limit() {
    let dev = dev_or_skip!();
    let c = Case::new(128, (28, 28, 1), 32, 3);
    let g = c.geometry();
    assert_eq!(g.gemm(Op::BackwardWeights).2, 86_528);
    let v = conv2d_tune::pick(&dev, &g, Op::BackwardWeights, false).unwrap();
    let plan = conv2d::plan_weights(&g, v, dev.info().limits.max_loop_iterations);
    assert!(plan.splits > 1, "{plan:?}");
    check_backward_weights(&dev, v, &c, Some(plan), 900);
}

/// A strided layer whose gather would loop past llvmpipe's limit (4 landing taps of 17,000
/// filters) goes to the naive kernel's dividing loader, and is whole either way.
#[test]
fn a_strided_backward_data_past_the_loop_limit() {
    let dev = dev_or_skip!();
    let c = Case::new(1, (4, 3, 2), 17_000, 3).stride(2).same();
    let g = c.geometry();
    let limit = dev.info().limits.max_loop_iterations;
    if limit.is_some() {
        assert!(!conv2d_strided::fits(&g.strided(), limit), "{g:?}");
    }
    check_backward_data(&dev, Variant::Naive, &c, Some(Activation::Relu), 950);
}

/// Stride 2 and dilation 2 on one input channel (the scalar gather): every tap lands on
/// the inputs whose padded row and column are even, 9 of them for each of 10,000 filters,
/// 90,012 loop iterations, past llvmpipe's limit; counting ceil(K / S) = 2 taps per axis
/// (40,012) let the gather run and stop early. The estimate counts them, and dx is whole.
#[test]
fn a_strided_dilated_backward_data_at_the_loop_limit() {
    let dev = dev_or_skip!();
    let c = Case::new(1, (9, 9, 1), 10_000, 3)
        .stride(2)
        .dilation(2)
        .same();
    let g = c.geometry();
    assert_eq!(conv2d_strided::loops(&g.strided()), 90_012);
    check_backward_data(&dev, Variant::Naive, &c, None, 960);
}

/// A gate whose derivative does not follow from its output (GELU) is refused on the strided
/// gather as on the GEMM, not applied as 1.
#[test]
fn a_strided_backward_data_with_an_unsupported_gate_is_an_error() {
    let dev = dev_or_skip!();
    let g = Case::new(2, (7, 6, 4), 8, 3).stride(2).same().geometry();
    assert!(!g.dx_as_gemm());
    let (xn, yn, wn) = g.sizes();
    let (dy, wt, gy, dx) = (
        poisoned(&dev, yn),
        poisoned(&dev, wn),
        poisoned(&dev, xn),
        poisoned(&dev, xn),
    );
    for act in [Activation::Gelu, Activation::GeluTanh] {
        let mut rec = Recorder::new(&dev);
        let gate = Some((act, gy.buffer()));
        let e = conv2d::backward_data(
            &mut rec,
            &g,
            dy.buffer(),
            wt.buffer(),
            gate,
            dx.buffer(),
            Variant::Naive,
        )
        .unwrap_err();
        assert!(matches!(e, Error::InvalidArgument { .. }), "{e}");
        assert!(e.to_string().contains(&format!("{act:?}")), "{e}");
    }
}

#[test]
fn bad_geometry_is_a_typed_error() {
    // A window larger than the unpadded input.
    let e = Geometry::new(1, (4, 4, 1), 2, (5, 5), (1, 1), (1, 1), Padding::Valid).unwrap_err();
    assert!(matches!(e, Error::ShapeMismatch { .. }), "{e}");
    assert!(e.to_string().contains("(4, 4, 1)"), "{e}");
    // A zero stride.
    let e = Geometry::new(1, (4, 4, 1), 2, (3, 3), (0, 1), (1, 1), Padding::Same).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument { .. }), "{e}");
}
