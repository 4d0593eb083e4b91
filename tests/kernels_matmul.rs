//! matmul against the f64 reference: every eligible variant, every layout, ragged shapes,
//! fused epilogues, accumulate mode, and a random-shape property test. Outputs are poisoned
//! with NaN first so an unwritten element fails.
//!
//! Tolerance (relative L2 error): `1e-5 · max(1, sqrt(K / 128))`. f32 accumulation error grows
//! like sqrt(K)·ε for random-sign inputs; below K = 128 the bound is the plain 1e-5.

mod common;

use suanli::exec::Recorder;
use suanli::internals::kernels::matmul::{record_with, Epilogue, MatmulArgs};
use suanli::internals::kernels::matmul_tune;
use suanli::internals::kernels::matmul_variant::{candidates, Variant};
use suanli::internals::reference;
use suanli::{Activation, Device, Error, Layout, Tensor};

fn tol(k: usize) -> f64 {
    1e-5 * (k as f64 / 128.0).sqrt().max(1.0)
}

const SHAPES: &[(usize, usize, usize)] = &[
    (1, 1, 1),
    (7, 13, 5),
    (15, 16, 17),
    (63, 64, 65),
    (127, 128, 129),
    (1, 784, 128),
    (32, 784, 128),
    (783, 1, 9),
    (5, 3, 1),
];

fn variants(dev: &Device) -> Vec<Variant> {
    let mut v = vec![Variant::Naive, Variant::Tiled];
    for rows in [16, 32] {
        let s = Variant::Subgroup8 { rows };
        if s.eligible(dev.info()) {
            v.push(s);
        }
    }
    v
}

#[derive(Clone, Copy, PartialEq)]
enum Epi {
    None,
    Bias,
    ColSum,
    Gate(Activation),
}

struct Case {
    m: usize,
    n: usize,
    k: usize,
    layout: Layout,
    act: Activation,
    epi: Epi,
    accumulate: bool,
}

fn check(dev: &Device, variant: Variant, c: &Case, seed: u64) {
    let (m, n, k) = (c.m, c.n, c.k);
    let a = common::random_vec(m * k, seed);
    let b = common::random_vec(k * n, seed + 1);
    let bias = common::random_vec(n, seed + 2);
    let c_old = common::random_vec(m * n, seed + 3);
    // Gate values: outputs of the gate activation, as the previous layer would have produced.
    let gate_act = match c.epi {
        Epi::Gate(g) => g,
        _ => Activation::Linear,
    };
    let gate_y: Vec<f32> = common::random_vec(m * n, seed + 4)
        .iter()
        .map(|&v| reference::activate(gate_act, 2.0 * v as f64) as f32)
        .collect();
    let at = Tensor::from_slice(dev, &a, &[a.len()]).unwrap();
    let bt = Tensor::from_slice(dev, &b, &[b.len()]).unwrap();
    let aux = match c.epi {
        Epi::Bias => Tensor::from_slice(dev, &bias, &[n]).unwrap(),
        Epi::Gate(_) => Tensor::from_slice(dev, &gate_y, &[m * n]).unwrap(),
        _ => Tensor::full(dev, &[n], f32::NAN).unwrap(),
    };
    let ct = if c.accumulate {
        Tensor::from_slice(dev, &c_old, &[m * n]).unwrap()
    } else {
        Tensor::full(dev, &[m * n], f32::NAN).unwrap()
    };
    let args = MatmulArgs {
        a: at.buffer(),
        b: bt.buffer(),
        epilogue: match c.epi {
            Epi::None => Epilogue::None,
            Epi::Bias => Epilogue::Bias(aux.buffer()),
            Epi::ColSum => Epilogue::ColSum(aux.buffer()),
            Epi::Gate(g) => Epilogue::Gate(aux.buffer(), g),
        },
        c: ct.buffer(),
        m: m as u32,
        n: n as u32,
        k: k as u32,
        layout: c.layout,
        act: c.act,
        accumulate: c.accumulate,
    };
    let mut rec = Recorder::new(dev);
    record_with(&mut rec, &args, variant).unwrap();
    rec.submit().unwrap();
    let out = ct.to_vec().unwrap();
    let mut want = reference::matmul(
        &a,
        &b,
        (c.epi == Epi::Bias).then_some(&bias[..]),
        None,
        m,
        n,
        k,
        c.layout,
        c.act,
    );
    if let Epi::Gate(g) = c.epi {
        for (w, &y) in want.iter_mut().zip(&gate_y) {
            *w *= reference::activate_grad_from_output(g, y as f64);
        }
    }
    if c.accumulate {
        for (w, &o) in want.iter_mut().zip(&c_old) {
            *w += o as f64;
        }
    }
    let what = format!(
        "{} {:?} {m}x{n}x{k} act={:?} acc={}",
        variant.name(),
        c.layout,
        c.act,
        c.accumulate
    );
    common::assert_rel_l2(&what, &out, &want, tol(k));
    if c.epi == Epi::ColSum {
        // Σ_k op(B)[k, col].
        let sums: Vec<f64> = (0..n)
            .map(|j| (0..k).map(|kk| if c.layout == Layout::NT { b[j * k + kk] } else { b[kk * n + j] } as f64).sum())
            .collect();
        common::assert_rel_l2(
            &format!("{what} column sums"),
            &aux.to_vec().unwrap(),
            &sums,
            tol(k),
        );
    }
}

#[test]
fn every_variant_every_layout_ragged_shapes() {
    let dev = dev_or_skip!();
    for v in variants(&dev) {
        for (i, &(m, n, k)) in SHAPES.iter().enumerate() {
            for layout in [Layout::NN, Layout::TN, Layout::NT] {
                let case = Case {
                    m,
                    n,
                    k,
                    layout,
                    act: Activation::Linear,
                    epi: Epi::None,
                    accumulate: false,
                };
                check(&dev, v, &case, 1000 + i as u64);
            }
        }
    }
}

#[test]
fn fused_bias_activation_and_accumulate() {
    let dev = dev_or_skip!();
    let acts = [
        Activation::Linear,
        Activation::Relu,
        Activation::LeakyRelu(0.1),
        Activation::Sigmoid,
        Activation::Tanh,
        Activation::GeluTanh,
        Activation::Gelu,
    ];
    // The epilogue is one function shared by every variant; check it on the baseline, the
    // tiled kernel and the device's choice (compiling every combination costs minutes on lavapipe).
    let mut vs = vec![
        Variant::Naive,
        Variant::Tiled,
        matmul_tune::prepare(&dev).unwrap(),
    ];
    vs.dedup();
    for v in vs {
        for (i, act) in acts.iter().enumerate() {
            for &(m, n, k) in &[(33, 65, 47), (20, 12, 64)] {
                let layout = [Layout::NN, Layout::TN, Layout::NT][i % 3];
                let case = Case {
                    m,
                    n,
                    k,
                    layout,
                    act: *act,
                    epi: Epi::Bias,
                    accumulate: false,
                };
                check(&dev, v, &case, 77 + i as u64);
            }
        }
        for layout in [Layout::NN, Layout::TN, Layout::NT] {
            let case = Case {
                m: 29,
                n: 37,
                k: 41,
                layout,
                act: Activation::Linear,
                epi: Epi::None,
                accumulate: true,
            };
            check(&dev, v, &case, 5);
        }
    }
}

#[test]
fn column_sums_and_gates_every_variant() {
    let dev = dev_or_skip!();
    for v in variants(&dev) {
        for (i, &(m, n, k)) in [
            (784usize, 128usize, 32usize),
            (64, 10, 33),
            (13, 7, 70),
            (32, 128, 64),
        ]
        .iter()
        .enumerate()
        {
            for layout in [Layout::NN, Layout::TN, Layout::NT] {
                let case = Case {
                    m,
                    n,
                    k,
                    layout,
                    act: Activation::Linear,
                    epi: Epi::ColSum,
                    accumulate: false,
                };
                check(&dev, v, &case, 40 + i as u64);
            }
            for g in [Activation::Relu, Activation::Tanh] {
                let case = Case {
                    m,
                    n,
                    k,
                    layout: Layout::NT,
                    act: Activation::Linear,
                    epi: Epi::Gate(g),
                    accumulate: false,
                };
                check(&dev, v, &case, 60 + i as u64);
            }
        }
    }
    // A gate whose derivative does not follow from the output is refused.
    let t = Tensor::zeros(&dev, &[4]).unwrap();
    let args = MatmulArgs {
        a: t.buffer(),
        b: t.buffer(),
        epilogue: Epilogue::Gate(t.buffer(), Activation::Gelu),
        c: t.buffer(),
        m: 2,
        n: 2,
        k: 1,
        layout: Layout::NN,
        act: Activation::Linear,
        accumulate: false,
    };
    assert!(record_with(&mut Recorder::new(&dev), &args, Variant::Naive).is_err());
}

#[test]
fn large_square_with_the_chosen_variant() {
    let dev = dev_or_skip!();
    let v = matmul_tune::prepare(&dev).unwrap();
    assert!(candidates(dev.info()).contains(&v) || std::env::var("SUANLI_MATMUL").is_ok());
    let case = Case {
        m: 1000,
        n: 1000,
        k: 1000,
        layout: Layout::NN,
        act: Activation::Linear,
        epi: Epi::None,
        accumulate: false,
    };
    check(&dev, v, &case, 9);
}

#[test]
fn random_shapes_property() {
    let dev = dev_or_skip!();
    let v = matmul_tune::prepare(&dev).unwrap();
    let mut rng = suanli::random::Rng::new(2024);
    for i in 0..24 {
        let m = 1 + rng.below(150) as usize;
        let n = 1 + rng.below(150) as usize;
        let k = 1 + rng.below(300) as usize;
        let layout = [Layout::NN, Layout::TN, Layout::NT][rng.below(3) as usize];
        let case = Case {
            m,
            n,
            k,
            layout,
            act: Activation::Linear,
            epi: [
                Epi::None,
                Epi::Bias,
                Epi::ColSum,
                Epi::Gate(Activation::Relu),
            ][rng.below(4) as usize],
            accumulate: false,
        };
        check(&dev, v, &case, 500 + i);
    }
}

#[test]
fn tensor_api_shapes_and_errors() {
    let dev = dev_or_skip!();
    let a = Tensor::from_slice(&dev, &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]).unwrap();
    let b = Tensor::from_slice(&dev, &[1.0, 0.0, 0.0, 1.0, 1.0, 1.0], &[3, 2]).unwrap();
    let c = a.matmul(&b).unwrap();
    assert_eq!(c.shape(), &[2, 2]);
    assert_eq!(c.to_vec().unwrap(), vec![4.0, 5.0, 10.0, 11.0]);
    // aᵀ·a (3x3) and a·aᵀ (2x2).
    assert_eq!(a.matmul_tn(&a).unwrap().shape(), &[3, 3]);
    let aat = a.matmul_nt(&a).unwrap();
    assert_eq!(aat.to_vec().unwrap(), vec![14.0, 32.0, 32.0, 77.0]);
    let bias = Tensor::from_slice(&dev, &[-10.0, 0.0], &[2]).unwrap();
    let y = a.linear(&b, Some(&bias), Activation::Relu).unwrap();
    assert_eq!(y.to_vec().unwrap(), vec![0.0, 5.0, 0.0, 11.0]);
    assert!(matches!(a.matmul(&a), Err(Error::ShapeMismatch { .. })));
    assert!(matches!(
        a.linear(&b, Some(&a), Activation::Linear),
        Err(Error::ShapeMismatch { .. })
    ));
    let t3 = Tensor::zeros(&dev, &[2, 2, 2]).unwrap();
    assert!(matches!(t3.matmul(&b), Err(Error::ShapeMismatch { .. })));
    let e = Tensor::zeros(&dev, &[0, 3]).unwrap();
    assert!(matches!(e.matmul(&b), Err(Error::InvalidArgument { .. })));
}

/// Relative L2 error of a parameter's change: `(after − before)` against the reference's.
fn delta_err(after: &[f32], before: &[f32], want_after: &[f64]) -> f64 {
    let got: Vec<f32> = after.iter().zip(before).map(|(a, b)| a - b).collect();
    let want: Vec<f64> = want_after
        .iter()
        .zip(before)
        .map(|(w, &b)| w - b as f64)
        .collect();
    common::rel_l2(&got, &want)
}

#[test]
fn fused_optimizer_update_every_variant_every_rule() {
    use suanli::internals::kernels::matmul::Update;
    use suanli::Rule;
    let dev = dev_or_skip!();
    let rules = [
        Rule::Sgd {
            lr: 0.1,
            momentum: 0.0,
            nesterov: false,
            weight_decay: 0.0,
        },
        Rule::Sgd {
            lr: 0.1,
            momentum: 0.9,
            nesterov: true,
            weight_decay: 1e-2,
        },
        Rule::Adam {
            lr: 0.05,
            beta1: 0.9,
            beta2: 0.999,
            eps: 1e-7,
            weight_decay: 1e-2,
            decoupled: false,
        },
        Rule::Adam {
            lr: 0.05,
            beta1: 0.9,
            beta2: 0.999,
            eps: 1e-7,
            weight_decay: 1e-2,
            decoupled: true,
        },
        Rule::RmsProp {
            lr: 0.01,
            rho: 0.9,
            eps: 1e-7,
            weight_decay: 0.0,
        },
    ];
    // The rule arithmetic is one shared function: every rule, with and without the bias, on
    // the naive kernel over ragged and aligned shapes and every layout. The other variants
    // differ in how the epilogue reaches C, the states and the bias (scalar and vec4 stores):
    // each is checked with a two-state rule and the bias and a one-state rule without it, on
    // the MNIST weight-gradient shape (aligned: the vec4 subgroup path) and a ragged one.
    // Each (variant, rule, bias) is its own pipeline, and the unrolled subgroup kernels take
    // seconds each to compile on lavapipe, hence the split.
    let mut cases = Vec::new();
    for &(m, n, k) in &[
        (784usize, 128usize, 32usize),
        (64, 10, 33),
        (13, 7, 70),
        (1, 5, 1),
    ] {
        for layout in [Layout::TN, Layout::NN, Layout::NT] {
            for ri in 0..rules.len() {
                cases.push((Variant::Naive, (m, n, k), layout, ri, (ri + m) % 2 == 0));
            }
        }
    }
    for v in variants(&dev).into_iter().filter(|v| *v != Variant::Naive) {
        for &mnk in &[(784usize, 128usize, 32usize), (13, 7, 70)] {
            cases.push((v, mnk, Layout::TN, 2, true));
            cases.push((v, mnk, Layout::TN, 1, false));
        }
    }
    if Variant::Subgroup8Narrow.eligible(dev.info()) {
        for &mnk in &[(64usize, 10usize, 32usize), (13, 7, 70), (9, 16, 5)] {
            cases.push((Variant::Subgroup8Narrow, mnk, Layout::TN, 2, true));
            cases.push((Variant::Subgroup8Narrow, mnk, Layout::TN, 1, false));
        }
        for &mnk in &[(784usize, 128usize, 16usize), (13, 70, 7)] {
            cases.push((Variant::Subgroup8Shallow, mnk, Layout::TN, 2, true));
            cases.push((Variant::Subgroup8Shallow, mnk, Layout::TN, 1, false));
        }
    }
    let mut seed = 500;
    for (v, (m, n, k), layout, ri, with_bias) in cases {
        let rule = &rules[ri];
        seed += 10;
        let a = common::random_vec(m * k, seed);
        let b = common::random_vec(k * n, seed + 1);
        let w0 = common::random_vec(m * n, seed + 2);
        let b0 = common::random_vec(n, seed + 3);
        let ns = rule.state_count();
        let at = Tensor::from_slice(&dev, &a, &[a.len()]).unwrap();
        let bt = Tensor::from_slice(&dev, &b, &[b.len()]).unwrap();
        let wt = Tensor::from_slice(&dev, &w0, &[m * n]).unwrap();
        let bias = Tensor::from_slice(&dev, &b0, &[n]).unwrap();
        let st: Vec<Tensor> = (0..ns)
            .map(|_| Tensor::zeros(&dev, &[m * n]).unwrap())
            .collect();
        let bst: Vec<Tensor> = (0..ns)
            .map(|_| Tensor::zeros(&dev, &[n]).unwrap())
            .collect();
        let sb: Vec<&wgpu::Buffer> = st.iter().map(|t| t.buffer()).collect();
        let bsb: Vec<&wgpu::Buffer> = bst.iter().map(|t| t.buffer()).collect();
        // The gradient as this variant computes it (a plain product with column
        // sums: the fused kernel runs the same loop), checked against f64; the
        // reference then steps the rule in f64 from it. (Stepping from the f64
        // gradient instead would make the test ill-conditioned: RMSprop and Adam
        // are sign-like where |g| is near its f32 rounding error.)
        let gt = Tensor::full(&dev, &[m * n], f32::NAN).unwrap();
        let cs = Tensor::full(&dev, &[n], f32::NAN).unwrap();
        let run = |epilogue: Epilogue<'_>, c: &Tensor| {
            let args = MatmulArgs {
                a: at.buffer(),
                b: bt.buffer(),
                epilogue,
                c: c.buffer(),
                m: m as u32,
                n: n as u32,
                k: k as u32,
                layout,
                act: Activation::Linear,
                accumulate: false,
            };
            let mut rec = Recorder::new(&dev);
            record_with(&mut rec, &args, v).unwrap();
            rec.submit().unwrap();
        };
        run(Epilogue::ColSum(cs.buffer()), &gt);
        let g32 = gt.to_vec().unwrap();
        let g64 = reference::matmul(&a, &b, None, None, m, n, k, layout, Activation::Linear);
        common::assert_rel_l2("gradient", &g32, &g64, tol(k));
        let g: Vec<f64> = g32.iter().map(|&x| x as f64).collect();
        let op_b: Vec<f64> = cs.to_vec().unwrap().iter().map(|&x| x as f64).collect();
        let mut w_ref: Vec<f64> = w0.iter().map(|&x| x as f64).collect();
        let mut b_ref: Vec<f64> = b0.iter().map(|&x| x as f64).collect();
        let mut s_ref = vec![vec![0.0; m * n]; ns];
        let mut bs_ref = vec![vec![0.0; n]; ns];
        for t in 1..=3 {
            let update = Update {
                rule: *rule,
                step: t,
                state: &sb,
                bias: with_bias.then_some((bias.buffer(), &bsb[..])),
            };
            run(Epilogue::Update(update), &wt);
            reference::optim_step(rule, &g, &mut w_ref, &mut s_ref, t);
            if with_bias {
                reference::optim_step(rule, &op_b, &mut b_ref, &mut bs_ref, t);
            }
        }
        let what = format!("{v:?} {layout:?} {m}x{n}x{k} {rule:?} bias {with_bias}");
        let e = delta_err(&wt.to_vec().unwrap(), &w0, &w_ref);
        assert!(e < tol(k), "{what}: weight change error {e:e}");
        for (s, r) in st.iter().zip(&s_ref) {
            common::assert_rel_l2(&format!("{what}: state"), &s.to_vec().unwrap(), r, tol(k));
        }
        let bias_after = bias.to_vec().unwrap();
        if with_bias {
            let e = delta_err(&bias_after, &b0, &b_ref);
            assert!(e < tol(k), "{what}: bias change error {e:e}");
            for (s, r) in bst.iter().zip(&bs_ref) {
                common::assert_rel_l2(
                    &format!("{what}: bias state"),
                    &s.to_vec().unwrap(),
                    r,
                    tol(k),
                );
            }
        } else {
            assert_eq!(bias_after, b0, "{what}: bias touched without a bias update");
        }
    }
    // Refused, each for its own reason (Adam needs two states: only the last case has one):
    // a non-linear activation, accumulation, the wrong number of states. The accepted case
    // shows the arguments are otherwise right.
    let t = Tensor::zeros(&dev, &[4]).unwrap();
    let s2 = Tensor::zeros(&dev, &[4]).unwrap();
    let (one, two) = ([t.buffer()], [t.buffer(), s2.buffer()]);
    let adam = rules[2];
    for (act, accumulate, state, refused) in [
        (Activation::Relu, false, &two[..], Some("act")),
        (Activation::Linear, true, &two[..], Some("accumulate")),
        (Activation::Linear, false, &one[..], Some("state")),
        (Activation::Linear, false, &two[..], None),
    ] {
        let c = Tensor::zeros(&dev, &[4]).unwrap();
        let args = MatmulArgs {
            a: t.buffer(),
            b: t.buffer(),
            epilogue: Epilogue::Update(Update {
                rule: adam,
                step: 1,
                state,
                bias: None,
            }),
            c: c.buffer(),
            m: 2,
            n: 2,
            k: 1,
            layout: Layout::TN,
            act,
            accumulate,
        };
        let r = record_with(&mut Recorder::new(&dev), &args, Variant::Naive);
        match (refused, r) {
            (None, Ok(())) => {}
            (Some(want), Err(Error::InvalidArgument { name, .. })) => {
                assert_eq!(name, want, "refused for the wrong reason")
            }
            (want, other) => panic!("expected refusal {want:?}, got {other:?}"),
        }
    }
}

#[test]
fn narrow_and_shallow_products_get_their_kernels() {
    let sg = Variant::Subgroup8 { rows: 32 };
    // At most 16 columns: the narrow subgroup kernel, whatever M and K.
    assert_eq!(sg.for_shape(32, 10, 64), Variant::Subgroup8Narrow);
    assert_eq!(sg.for_shape(64, 10, 32), Variant::Subgroup8Narrow);
    assert_eq!(sg.for_shape(128, 10, 64), Variant::Subgroup8Narrow);
    assert_eq!(sg.for_shape(60000, 16, 784), Variant::Subgroup8Narrow);
    // Otherwise K at most 16: the shallow subgroup kernel; neither: unchanged.
    assert_eq!(sg.for_shape(32, 64, 10), Variant::Subgroup8Shallow);
    assert_eq!(sg.for_shape(128, 64, 10), Variant::Subgroup8Shallow);
    assert_eq!(sg.for_shape(128, 784, 16), Variant::Subgroup8Shallow);
    assert_eq!(sg.for_shape(128, 784, 17), sg);
    assert_eq!(sg.for_shape(32, 128, 784), sg);
    assert_eq!(sg.for_shape(784, 128, 32), sg);
    assert_eq!(sg.for_shape(32, 17, 64), sg);
    assert_eq!(Variant::Tiled.for_shape(32, 10, 64), Variant::Tiled);
    let dev = dev_or_skip!();
    // What `record` runs for them is right.
    let chosen = matmul_tune::prepare(&dev).unwrap();
    for (i, &(m, n, k, layout)) in [
        (32usize, 10usize, 64usize, Layout::NN),
        (64, 10, 32, Layout::TN),
        (32, 64, 10, Layout::NT),
    ]
    .iter()
    .enumerate()
    {
        let case = Case {
            m,
            n,
            k,
            layout,
            act: Activation::Linear,
            epi: Epi::ColSum,
            accumulate: false,
        };
        check(
            &dev,
            chosen.for_shape(m as u32, n as u32, k as u32),
            &case,
            90 + i as u64,
        );
    }
    if !Variant::Subgroup8Narrow.eligible(dev.info()) {
        return;
    }
    // The narrow and shallow kernels on their own: ragged M, every N (narrow) or K (shallow)
    // up to 16 (one and two halves of the subgroup), every layout and epilogue.
    let mut seed = 3000;
    let narrow = [
        (1usize, 1usize, 1usize),
        (7, 7, 63),
        (65, 8, 7),
        (63, 9, 65),
        (783, 10, 64),
        (13, 16, 783),
        (128, 10, 1),
    ];
    let shallow = [
        (1usize, 1usize, 1usize),
        (7, 63, 7),
        (65, 17, 8),
        (63, 65, 9),
        (783, 64, 10),
        (33, 783, 16),
        (1, 128, 13),
    ];
    for (v, shapes) in [
        (Variant::Subgroup8Narrow, &narrow),
        (Variant::Subgroup8Shallow, &shallow),
    ] {
        for &(m, n, k) in shapes {
            for layout in [Layout::NN, Layout::TN, Layout::NT] {
                for (epi, act, accumulate) in [
                    (Epi::None, Activation::Linear, false),
                    (Epi::Bias, Activation::Tanh, false),
                    (Epi::ColSum, Activation::Linear, false),
                    (Epi::Gate(Activation::Relu), Activation::Linear, false),
                    (Epi::None, Activation::Linear, true),
                ] {
                    seed += 7;
                    let case = Case {
                        m,
                        n,
                        k,
                        layout,
                        act,
                        epi,
                        accumulate,
                    };
                    check(&dev, v, &case, seed);
                }
            }
        }
    }
    // More than 16 columns (narrow) or a depth beyond 16 (shallow) is refused, not computed
    // wrong.
    let t = Tensor::zeros(&dev, &[64]).unwrap();
    for (v, n, k) in [
        (Variant::Subgroup8Narrow, 17, 1),
        (Variant::Subgroup8Shallow, 1, 17),
    ] {
        let args = MatmulArgs {
            a: t.buffer(),
            b: t.buffer(),
            epilogue: Epilogue::None,
            c: t.buffer(),
            m: 1,
            n,
            k,
            layout: Layout::NN,
            act: Activation::Linear,
            accumulate: false,
        };
        assert!(record_with(&mut Recorder::new(&dev), &args, v).is_err());
    }
}
