//! The optimizer step fused into the matmul epilogue (`Epilogue::Update`), checked against the
//! f64 reference for three steps: every rule with and without the bias on the naive kernel
//! over ragged and aligned shapes and every layout, and every other variant the device can
//! run (scalar and 16-byte store paths) with a two-state rule and the bias and a one-state
//! rule without it. Refusals are checked for their own reasons.

mod common;

use common::matmul::{narrow_variants, tol, variants};
use suanli::exec::Recorder;
use suanli::internals::kernels::matmul::{record_with, Epilogue, MatmulArgs, Update};
use suanli::internals::kernels::matmul_variant::Variant;
use suanli::internals::reference;
use suanli::{Activation, Error, Layout, Rule, Tensor};

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
    let (narrow, shallow) = narrow_variants(&dev);
    for v in narrow {
        for &mnk in &[(64usize, 10usize, 32usize), (13, 7, 70), (9, 16, 5)] {
            cases.push((v, mnk, Layout::TN, 2, true));
            cases.push((v, mnk, Layout::TN, 1, false));
        }
    }
    for v in shallow {
        for &mnk in &[(784usize, 128usize, 16usize), (13, 70, 7)] {
            cases.push((v, mnk, Layout::TN, 2, true));
            cases.push((v, mnk, Layout::TN, 1, false));
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
                half: false,
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
            half: false,
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
