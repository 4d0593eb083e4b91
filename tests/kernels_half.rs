//! Float16 operands (`MatmulArgs::half`, `conv2d::Geometry::half`: Keras's `mixed_float16`
//! policy) in every matmul and convolution kernel this adapter can run, against an f64 host
//! reference computed from operands rounded to binary16 on the host (the `half` crate, from
//! the f32 values: no double rounding). Products of two halves are exact in f32, so the
//! tolerance is the f32 kernels' own (accumulation over K). Outputs are poisoned with NaN
//! first. The random operands carry bits below f16's precision, so a kernel that skipped the
//! rounding would miss the reference by about 2⁻¹², far past the tolerance; a test shows the
//! flag changes results that way, and that an operand past f16's range gives infinity.
//! The layer level (a model's prediction, Dense's and Conv2D's gradients under
//! `Precision::MixedFloat16`) is tests/layers_half.rs.

mod common;

use common::matmul::{narrow_variants, tol, variants};
use common::{assert_rel_l2, random_vec, rel_l2};
use suanli::config::MatmulPrecision;
use suanli::exec::Recorder;
use suanli::internals::kernels::conv2d::{self, Geometry, Op, WeightsOut};
use suanli::internals::kernels::matmul::{record_batched_with, record_with, Epilogue, MatmulArgs};
use suanli::internals::kernels::matmul_batch::Batch;
use suanli::internals::kernels::matmul_variant::{candidates_with, Variant};
use suanli::internals::kernels::{conv2d_direct, conv2d_strided, conv2d_tune};
use suanli::internals::reference::{self, ConvShape};
use suanli::{Activation, Device, Layout, Padding, Tensor};

fn r16(x: f32) -> f32 {
    half::f16::from_f32(x).to_f32()
}

fn r16s(v: &[f32]) -> Vec<f32> {
    v.iter().map(|&x| r16(x)).collect()
}

fn upload(dev: &Device, v: &[f32]) -> Tensor {
    Tensor::from_slice(dev, v, &[v.len().max(1)]).unwrap()
}

fn poisoned(dev: &Device, n: usize) -> Tensor {
    Tensor::full(dev, &[n.max(1)], f32::NAN).unwrap()
}

/// Every variant the tuner or the shape routing can give a product on this adapter: the
/// wide ones, narrow and shallow, and the f16 tensor-core ones (which the tuner runs under
/// `SUANLI_MATMUL_PRECISION=medium` only, for every product, flag or not).
fn all_variants(dev: &Device) -> Vec<Variant> {
    let mut v = variants(dev);
    for c in candidates_with(dev.info(), MatmulPrecision::Medium) {
        if !v.contains(&c) {
            v.push(c);
        }
    }
    v
}

/// A product's output, its f16 and f32 references, and with column sums those and theirs.
type Product = (Vec<f32>, Vec<f64>, Vec<f64>, Option<(Vec<f32>, Vec<f64>)>);

/// A recorded forward pass writing its output into the buffer given.
type Pass = Box<dyn Fn(&mut Recorder<'_>, &wgpu::Buffer)>;

#[derive(Clone, Copy, Debug, PartialEq)]
enum Epi {
    None,
    BiasRelu,
    ColSum,
    Gate,
    Accumulate,
}

/// One product with the flag on (or off with `half` false), `count` of them batched when
/// `count` > 1; returns (output, f16 reference, f32 reference).
#[allow(clippy::too_many_arguments)]
fn product(
    dev: &Device,
    v: Variant,
    (m, n, k): (usize, usize, usize),
    layout: Layout,
    epi: Epi,
    count: usize,
    half: bool,
    a: &[f32],
    seed: u64,
) -> Product {
    let b = random_vec(count * k * n, seed + 1);
    let bias = random_vec(n, seed + 2);
    let c_old = random_vec(count * m * n, seed + 3);
    let gate_y: Vec<f32> = random_vec(m * n, seed + 4)
        .iter()
        .map(|&y| 0.5 + 0.45 * y)
        .collect();
    let (at, bt) = (upload(dev, a), upload(dev, &b));
    let aux = match epi {
        Epi::BiasRelu => upload(dev, &bias),
        Epi::Gate => upload(dev, &gate_y),
        _ => poisoned(dev, n),
    };
    let ct = if epi == Epi::Accumulate {
        upload(dev, &c_old)
    } else {
        poisoned(dev, count * m * n)
    };
    let args = MatmulArgs {
        a: at.buffer(),
        b: bt.buffer(),
        epilogue: match epi {
            Epi::BiasRelu => Epilogue::Bias(aux.buffer()),
            Epi::ColSum => Epilogue::ColSum(aux.buffer()),
            Epi::Gate => Epilogue::Gate(aux.buffer(), Activation::Sigmoid),
            _ => Epilogue::None,
        },
        c: ct.buffer(),
        m: m as u32,
        n: n as u32,
        k: k as u32,
        layout,
        act: if epi == Epi::BiasRelu {
            Activation::Relu
        } else {
            Activation::Linear
        },
        accumulate: epi == Epi::Accumulate,
        half,
    };
    let mut rec = Recorder::new(dev);
    if count > 1 {
        let batch = Batch::contiguous(count as u32, m as u32, n as u32, k as u32, layout);
        record_batched_with(&mut rec, &args, &batch, v)
    } else {
        record_with(&mut rec, &args, v)
    }
    .unwrap_or_else(|e| panic!("{} {layout:?} {m}x{n}x{k} {epi:?}: {e}", v.name()));
    rec.submit().unwrap();
    let out = ct.to_vec().unwrap();
    let reference = |a: &[f32], b: &[f32]| -> Vec<f64> {
        let mut want = Vec::new();
        for z in 0..count {
            let mut w = reference::matmul(
                &a[z * m * k..(z + 1) * m * k],
                &b[z * k * n..(z + 1) * k * n],
                (epi == Epi::BiasRelu).then_some(&bias[..]),
                None,
                m,
                n,
                k,
                layout,
                args.act,
            );
            if epi == Epi::Gate {
                for (w, &y) in w.iter_mut().zip(&gate_y) {
                    *w *= reference::activate_grad_from_output(Activation::Sigmoid, y as f64);
                }
            }
            if epi == Epi::Accumulate {
                for (w, &o) in w.iter_mut().zip(&c_old[z * m * n..]) {
                    *w += o as f64;
                }
            }
            want.extend(w);
        }
        want
    };
    let (a16, b16) = (r16s(a), r16s(&b));
    let want16 = reference(&a16, &b16);
    let want32 = reference(a, &b);
    let sums = (epi == Epi::ColSum).then(|| {
        let bb = if half { &b16 } else { &b };
        let s: Vec<f64> = (0..n)
            .map(|j| {
                (0..k)
                    .map(|kk| {
                        let i = if layout == Layout::NT {
                            j * k + kk
                        } else {
                            kk * n + j
                        };
                        bb[i] as f64
                    })
                    .sum()
            })
            .collect();
        (aux.to_vec().unwrap(), s)
    });
    (out, want16, want32, sums)
}

fn check(
    dev: &Device,
    v: Variant,
    mnk: (usize, usize, usize),
    layout: Layout,
    epi: Epi,
    count: usize,
    seed: u64,
) {
    let a = random_vec(count * mnk.0 * mnk.2, seed);
    let (out, want, _, sums) = product(dev, v, mnk, layout, epi, count, true, &a, seed);
    let what = format!("half {} {layout:?} {mnk:?} {epi:?} x{count}", v.name());
    assert_rel_l2(&what, &out, &want, tol(mnk.2));
    if let Some((got, s)) = sums {
        assert_rel_l2(
            &format!("{what} column sums"),
            &got[..mnk.1],
            &s,
            tol(mnk.2),
        );
    }
}

const LAYOUTS: [Layout; 3] = [Layout::NN, Layout::TN, Layout::NT];

#[test]
fn every_variant_every_layout_ragged_and_aligned() {
    let Some(dev) = common::device() else { return };
    let mut seed = 100;
    for v in all_variants(&dev) {
        for layout in LAYOUTS {
            for mnk in [(7, 13, 5), (32, 36, 68)] {
                seed += 10;
                check(&dev, v, mnk, layout, Epi::None, 1, seed);
            }
        }
    }
}

#[test]
fn every_epilogue_and_batches() {
    let Some(dev) = common::device() else { return };
    let mut seed = 5000;
    for v in all_variants(&dev) {
        for epi in [Epi::BiasRelu, Epi::ColSum, Epi::Gate, Epi::Accumulate] {
            seed += 10;
            check(&dev, v, (19, 24, 37), Layout::NN, epi, 1, seed);
        }
        for layout in LAYOUTS {
            seed += 10;
            check(&dev, v, (17, 12, 33), layout, Epi::None, 3, seed);
        }
    }
}

#[test]
fn narrow_and_shallow_kernels() {
    let Some(dev) = common::device() else { return };
    let (narrow, shallow) = narrow_variants(&dev);
    let mut seed = 9000;
    for layout in LAYOUTS {
        for &v in &narrow {
            for epi in [Epi::None, Epi::BiasRelu, Epi::ColSum, Epi::Accumulate] {
                seed += 10;
                check(&dev, v, (37, 9, 23), layout, epi, 1, seed);
            }
        }
        for &v in &shallow {
            for epi in [Epi::None, Epi::BiasRelu, Epi::Gate] {
                seed += 10;
                check(&dev, v, (37, 29, 11), layout, epi, 1, seed);
            }
        }
    }
}

/// The flag is what makes the difference: with it the product is the f16-rounded reference
/// and misses the f32 one by far more than the tolerance; without it, the reverse. The f16
/// tensor-core kernels (`is_reduced_precision`) convert their operands to f16 whatever the
/// flag says, so they give the f16 result both ways.
#[test]
fn the_flag_changes_results() {
    let Some(dev) = common::device() else { return };
    let mnk = (31, 40, 96);
    let tol = tol(mnk.2);
    for v in all_variants(&dev) {
        let a = random_vec(mnk.0 * mnk.2, 7);
        let (on, want16, want32, _) = product(&dev, v, mnk, Layout::NN, Epi::None, 1, true, &a, 7);
        let (off, ..) = product(&dev, v, mnk, Layout::NN, Epi::None, 1, false, &a, 7);
        let f16_anyway = v.is_reduced_precision();
        let (want_off, other_off) = if f16_anyway {
            (&want16, &want32)
        } else {
            (&want32, &want16)
        };
        assert_rel_l2(&format!("{} on", v.name()), &on, &want16, tol);
        assert_rel_l2(&format!("{} off", v.name()), &off, want_off, tol);
        assert!(
            rel_l2(&on, &want32) > 10.0 * tol,
            "{}: flag on matches f32",
            v.name()
        );
        assert!(
            rel_l2(&off, other_off) > 10.0 * tol,
            "{}: flag off matches the other reference (f16 kernel: {f16_anyway})",
            v.name()
        );
    }
}

/// An operand of 70,000 is infinity in f16: its row of C is infinite (loss scaling sees it),
/// where f32 operands give a finite product; 65,519 rounds down to 65,504 and stays finite.
/// The f16 tensor-core kernels round their operands with the flag off too.
#[test]
fn an_operand_past_the_f16_range_gives_infinity() {
    let Some(dev) = common::device() else { return };
    let (m, n, k) = (9, 8, 12);
    for v in all_variants(&dev) {
        for (big, inf) in [(70_000.0f32, true), (65_519.0, false)] {
            let mut a: Vec<f32> = random_vec(m * k, 3).iter().map(|x| x.abs()).collect();
            a[2 * k + 5] = big;
            let (on, ..) = product(&dev, v, (m, n, k), Layout::NN, Epi::None, 1, true, &a, 3);
            let (off, ..) = product(&dev, v, (m, n, k), Layout::NN, Epi::None, 1, false, &a, 3);
            let b = random_vec(k * n, 4);
            let off_inf = inf && v.is_reduced_precision();
            for j in 0..n {
                for (got, inf, flag) in
                    [(on[2 * n + j], inf, "on"), (off[2 * n + j], off_inf, "off")]
                {
                    if inf {
                        assert!(got.is_infinite(), "{} {flag} col {j}: {got}", v.name());
                        assert_eq!(got.signum(), b[5 * n + j].signum(), "{} col {j}", v.name());
                    } else {
                        assert!(got.is_finite(), "{} {flag} col {j}: {got}", v.name());
                    }
                }
            }
            assert!(on[..2 * n]
                .iter()
                .chain(&on[3 * n..])
                .all(|x| x.is_finite()));
        }
    }
}

fn conv_shape(g: &Geometry, same: bool) -> ConvShape {
    ConvShape {
        batch: g.batch,
        h: g.h,
        w: g.w,
        c: g.c,
        oc: g.oc,
        kh: g.kh,
        kw: g.kw,
        sh: g.sh,
        sw: g.sw,
        dh: g.dh,
        dw: g.dw,
        same,
    }
}

/// The kernels a convolution pass runs with here: the tuner's pick for the shape and the
/// naive kernel of last resort (the matmul tests cover every variant's template; the
/// convolution twins share it with its A loads through the prelude's `conv_a*`).
fn conv_variants(dev: &Device, g: &Geometry, op: Op) -> Vec<Variant> {
    let v = conv2d_tune::pick(dev, g, op, false).unwrap();
    if v == Variant::Naive {
        vec![v]
    } else {
        vec![v, Variant::Naive]
    }
}

fn run(dev: &Device, f: impl FnOnce(&mut Recorder<'_>)) {
    let mut rec = Recorder::new(dev);
    f(&mut rec);
    rec.submit().unwrap();
}

/// Forward (implicit GEMM with each wide variant, the direct kernel), backward data (the GEMM
/// at stride 1, the strided gather scalar and by four at stride 2) and the weight gradient
/// (one GEMM, split K), each against the reference from f16-rounded operands, and each
/// missing the f32 one.
#[test]
fn convolutions_forward_backward_data_and_weights() {
    let Some(dev) = common::device() else { return };
    let cases = [
        // (batch, (h, w, c), oc, k, stride, same)
        (2, (9, 7, 3), 8, 3, 1, true),
        (3, (8, 9, 4), 12, 3, 2, true),
        // Rows of 17 and 18 same-phase pixels at stride 2: all eight pixels of the strided
        // gather's groups of four channels, and second and third groups in a row.
        (2, (6, 35, 4), 8, 3, 2, true),
        (2, (9, 9, 5), 6, 3, 2, false),
        (1, (10, 8, 1), 16, 3, 1, false),
    ];
    let mut seed = 300;
    for &(batch, hwc, oc, k, s, same) in &cases {
        seed += 100;
        let pad = if same { Padding::Same } else { Padding::Valid };
        let g = Geometry::new(batch, hwc, oc, (k, k), (s, s), (1, 1), pad)
            .unwrap()
            .with_half(true);
        let sh = conv_shape(&g, same);
        let (xn, yn, wn) = g.sizes();
        let (x, w, bias, dy) = (
            random_vec(xn, seed),
            random_vec(wn, seed + 1),
            random_vec(oc, seed + 2),
            random_vec(yn, seed + 3),
        );
        let (xt, wt, bt, dyt) = (
            upload(&dev, &x),
            upload(&dev, &w),
            upload(&dev, &bias),
            upload(&dev, &dy),
        );
        let what = format!("{batch} {hwc:?} {oc} k{k} s{s} same={same}");
        let far = |out: &[f32], want32: &[f64], what: &str, tol: f64| {
            assert!(
                rel_l2(out, want32) > 10.0 * tol,
                "{what}: matches the f32 reference"
            );
        };
        // Forward.
        let want16 = reference::conv2d(&r16s(&x), &r16s(&w), Some(&bias), Activation::Linear, &sh);
        let want32 = reference::conv2d(&x, &w, Some(&bias), Activation::Linear, &sh);
        let kf = k * k * hwc.2;
        let mut fwd: Vec<(String, Pass)> = Vec::new();
        for v in conv_variants(&dev, &g, Op::Forward) {
            let (xt, wt, bt, g) = (xt.clone(), wt.clone(), bt.clone(), g);
            fwd.push((
                format!("forward {}", v.name()),
                Box::new(move |rec, y| {
                    conv2d::forward(
                        rec,
                        &g,
                        xt.buffer(),
                        wt.buffer(),
                        Some(bt.buffer()),
                        y,
                        Activation::Linear,
                        v,
                    )
                    .unwrap()
                }),
            ));
        }
        if conv2d_direct::eligible(&g) {
            let (xt, wt, bt, g) = (xt.clone(), wt.clone(), bt.clone(), g);
            fwd.push((
                "forward direct".into(),
                Box::new(move |rec, y| {
                    conv2d_direct::forward(
                        rec,
                        &g,
                        xt.buffer(),
                        wt.buffer(),
                        Some(bt.buffer()),
                        y,
                        Activation::Linear,
                    )
                    .unwrap()
                }),
            ));
        }
        for (name, f) in &fwd {
            let y = poisoned(&dev, yn);
            run(&dev, |rec| f(rec, y.buffer()));
            let out = y.to_vec().unwrap();
            let what = format!("{name} {what}");
            assert_rel_l2(&what, &out[..yn], &want16, tol(kf));
            far(&out[..yn], &want32, &what, tol(kf));
        }
        // Backward data: the GEMM at stride 1, the strided gather at stride 2.
        let kd = k * k * oc;
        let want16 = reference::conv2d_backward_data(&r16s(&dy), &r16s(&w), &sh);
        let want32 = reference::conv2d_backward_data(&dy, &w, &sh);
        assert_eq!(g.dx_as_gemm(), s == 1);
        if s > 1 {
            let max = dev.info().limits.max_loop_iterations;
            assert!(conv2d_strided::fits(&g.strided(), max), "{what}");
        }
        let dx_variants = if s == 1 {
            conv_variants(&dev, &g, Op::BackwardData)
        } else {
            vec![Variant::Naive] // unused: the strided gather runs
        };
        for v in dx_variants {
            let (wtt, dx) = (poisoned(&dev, wn), poisoned(&dev, xn));
            run(&dev, |rec| {
                conv2d::transpose(rec, &g, wt.buffer(), wtt.buffer()).unwrap();
                conv2d::backward_data(rec, &g, dyt.buffer(), wtt.buffer(), None, dx.buffer(), v)
                    .unwrap()
            });
            let out = dx.to_vec().unwrap();
            let kernel = if s == 1 {
                v.name()
            } else {
                "strided gather".into()
            };
            let what = format!("backward data {kernel} {what}");
            assert_rel_l2(&what, &out[..xn], &want16, tol(kd));
            far(&out[..xn], &want32, &what, tol(kd));
        }
        // The weight gradient, in one GEMM and split.
        let kw_ = yn / oc;
        let (w16, b16) = reference::conv2d_backward_weights(&r16s(&x), &r16s(&dy), &sh);
        let (w32, _) = reference::conv2d_backward_weights(&x, &dy, &sh);
        for v in conv_variants(&dev, &g, Op::BackwardWeights) {
            for split in [false, true] {
                let (dw, db) = (poisoned(&dev, wn), poisoned(&dev, oc));
                let plan = conv2d::plan_with_chunk(&g, 64);
                if split && plan.splits < 2 {
                    continue;
                }
                let (part, part_b) = (
                    poisoned(&dev, wn * plan.splits as usize),
                    poisoned(&dev, oc * plan.splits as usize),
                );
                run(&dev, |rec| {
                    let out = WeightsOut::Grad {
                        dw: dw.buffer(),
                        db: Some(db.buffer()),
                    };
                    if split {
                        conv2d::weights_partial(
                            rec,
                            &g,
                            xt.buffer(),
                            dyt.buffer(),
                            part.buffer(),
                            Some(part_b.buffer()),
                            plan,
                            v,
                        )
                        .unwrap();
                        conv2d::reduce(rec, &g, part.buffer(), Some(part_b.buffer()), plan, out)
                            .unwrap();
                    } else {
                        conv2d::weights_direct(rec, &g, xt.buffer(), dyt.buffer(), out, v).unwrap();
                    }
                });
                let what = format!("weights {} split={split} {what}", v.name());
                let out = dw.to_vec().unwrap();
                assert_rel_l2(&what, &out[..wn], &w16, tol(kw_));
                far(&out[..wn], &w32, &what, tol(kw_));
                assert_rel_l2(
                    &format!("{what} (bias)"),
                    &db.to_vec().unwrap()[..oc],
                    &b16,
                    tol(kw_),
                );
            }
        }
    }
}
