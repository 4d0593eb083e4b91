//! Elementwise, reduction, softmax/cross-entropy, optimizer and gather kernels against the f64
//! references, on ragged sizes, with outputs poisoned first; activation derivatives against
//! central finite differences.

mod common;

use common::{assert_rel_l2, random_vec};
use suanli::exec::Recorder;
use suanli::internals::kernels::gather;
use suanli::internals::kernels::gather::Lookup;
use suanli::internals::kernels::optim;
use suanli::internals::reference;
use suanli::tensor::{ByteBuffer, IndexBuffer};
use suanli::{Activation, Device, Labels, Rule, Tensor};

const SIZES: &[usize] = &[1, 7, 63, 64, 65, 257, 783, 1000, 65_537];
const ACTS: &[Activation] = &[
    Activation::Linear,
    Activation::Relu,
    Activation::LeakyRelu(0.2),
    Activation::Sigmoid,
    Activation::Tanh,
    Activation::GeluTanh,
    Activation::Gelu,
];

/// Takes a pooled buffer of `n` floats, fills it with NaN and returns it to the pool, so the
/// next allocation of that size gets poisoned memory.
fn poison(dev: &Device, n: usize) {
    for _ in 0..2 {
        drop(Tensor::full(dev, &[n], f32::NAN).unwrap());
    }
    dev.synchronize().unwrap();
}

fn scaled(v: &[f32], s: f32) -> Vec<f32> {
    v.iter().map(|x| x * s).collect()
}

#[test]
fn activations_forward_and_backward() {
    let dev = dev_or_skip!();
    for (i, &n) in SIZES.iter().enumerate() {
        // Spread over [-4, 4) to exercise saturation.
        let x = scaled(&random_vec(n, 40 + i as u64), 4.0);
        let dy = random_vec(n, 80 + i as u64);
        let xt = Tensor::from_slice(&dev, &x, &[n]).unwrap();
        let dyt = Tensor::from_slice(&dev, &dy, &[n]).unwrap();
        for &act in ACTS {
            poison(&dev, n);
            let y = xt.activation(act).unwrap().to_vec().unwrap();
            let want: Vec<f64> = x
                .iter()
                .map(|&v| reference::activate(act, v as f64))
                .collect();
            assert_rel_l2(&format!("{act:?} forward n={n}"), &y, &want, 1e-5);
            poison(&dev, n);
            let dx = xt.activation_backward(act, &dyt).unwrap().to_vec().unwrap();
            let want: Vec<f64> = x
                .iter()
                .zip(&dy)
                .map(|(&v, &d)| d as f64 * reference::activate_grad(act, v as f64))
                .collect();
            assert_rel_l2(&format!("{act:?} backward n={n}"), &dx, &want, 1e-5);
        }
    }
}

#[test]
fn backward_from_output_matches_backward_from_input() {
    use suanli::internals::kernels::elementwise::activation_output_backward;
    let dev = dev_or_skip!();
    for &n in &[1usize, 65, 1000] {
        let x = scaled(&random_vec(n, 1), 4.0);
        let dy = random_vec(n, 2);
        let xt = Tensor::from_slice(&dev, &x, &[n]).unwrap();
        let dyt = Tensor::from_slice(&dev, &dy, &[n]).unwrap();
        for &act in ACTS.iter().filter(|a| a.derivative_from_output()) {
            let y = xt.activation(act).unwrap();
            let dx = Tensor::full(&dev, &[n], f32::NAN).unwrap();
            let mut rec = Recorder::new(&dev);
            activation_output_backward(&mut rec, act, y.buffer(), dyt.buffer(), dx.buffer(), n)
                .unwrap();
            rec.submit().unwrap();
            let want: Vec<f64> = x
                .iter()
                .zip(&dy)
                .map(|(&v, &d)| d as f64 * reference::activate_grad(act, v as f64))
                .collect();
            assert_rel_l2(
                &format!("{act:?} from output n={n}"),
                &dx.to_vec().unwrap(),
                &want,
                1e-5,
            );
        }
    }
    let mut rec = Recorder::new(&dev);
    let t = Tensor::zeros(&dev, &[4]).unwrap();
    assert!(activation_output_backward(
        &mut rec,
        Activation::Gelu,
        t.buffer(),
        t.buffer(),
        t.buffer(),
        4
    )
    .is_err());
}

#[test]
fn activation_gradients_match_finite_differences() {
    // CPU reference derivative against central differences in f64, away from ReLU's kink.
    let mut rng = suanli::random::Rng::new(5);
    for &act in ACTS {
        for _ in 0..200 {
            let x = rng.uniform(-5.0, 5.0);
            if x.abs() < 1e-3 {
                continue;
            }
            let h = 1e-6;
            let fd =
                (reference::activate(act, x + h) - reference::activate(act, x - h)) / (2.0 * h);
            let an = reference::activate_grad(act, x);
            assert!(
                (fd - an).abs() < 1e-6 * (1.0 + an.abs()),
                "{act:?} at {x}: fd {fd} vs analytic {an}"
            );
        }
    }
    // Hand-derived: sigmoid'(0) = 1/4, tanh'(0) = 1, gelu'(0) = 1/2, relu'(2) = 1, leaky'(-1) = a.
    assert_eq!(reference::activate_grad(Activation::Sigmoid, 0.0), 0.25);
    assert_eq!(reference::activate_grad(Activation::Tanh, 0.0), 1.0);
    assert!((reference::activate_grad(Activation::Gelu, 0.0) - 0.5).abs() < 1e-15);
    assert!((reference::activate_grad(Activation::GeluTanh, 0.0) - 0.5).abs() < 1e-15);
    assert_eq!(
        reference::activate_grad(Activation::LeakyRelu(0.25), -1.0),
        0.25
    );
    assert!((reference::erf(1.0) - 0.842_700_792_949_714_9).abs() < 1e-14);
    assert!((reference::erf(-3.5) + 0.999_999_256_901_627_7).abs() < 1e-14);
}

#[test]
fn gpu_activation_backward_matches_gpu_finite_differences() {
    // Finite differences of the GPU forward (f32, so a loose step) against the GPU backward.
    let dev = dev_or_skip!();
    let n = 257;
    let x: Vec<f32> = scaled(&random_vec(n, 3), 3.0)
        .into_iter()
        .map(|v| if v.abs() < 0.05 { 0.5 } else { v })
        .collect();
    let h = 1e-2f32;
    let xp: Vec<f32> = x.iter().map(|v| v + h).collect();
    let xm: Vec<f32> = x.iter().map(|v| v - h).collect();
    let ones = Tensor::full(&dev, &[n], 1.0).unwrap();
    for &act in ACTS {
        let yp = Tensor::from_slice(&dev, &xp, &[n])
            .unwrap()
            .activation(act)
            .unwrap()
            .to_vec()
            .unwrap();
        let ym = Tensor::from_slice(&dev, &xm, &[n])
            .unwrap()
            .activation(act)
            .unwrap()
            .to_vec()
            .unwrap();
        let g = Tensor::from_slice(&dev, &x, &[n])
            .unwrap()
            .activation_backward(act, &ones)
            .unwrap()
            .to_vec()
            .unwrap();
        let fd: Vec<f64> = yp
            .iter()
            .zip(&ym)
            .map(|(a, b)| (*a as f64 - *b as f64) / (2.0 * h as f64))
            .collect();
        // Central differences with h = 1e-2 are accurate to O(h²·f''') ≈ 1e-4 relative here.
        assert_rel_l2(&format!("{act:?} gpu fd"), &g, &fd, 1e-3);
    }
}

#[test]
fn binary_scale_fill_bias() {
    let dev = dev_or_skip!();
    for (i, &n) in SIZES.iter().enumerate() {
        let a = random_vec(n, i as u64);
        let b: Vec<f32> = random_vec(n, 100 + i as u64)
            .iter()
            .map(|v| v + 2.0)
            .collect(); // no division by ~0
        let at = Tensor::from_slice(&dev, &a, &[n]).unwrap();
        let bt = Tensor::from_slice(&dev, &b, &[n]).unwrap();
        type Op = fn(&Tensor, &Tensor) -> suanli::Result<Tensor>;
        type Ref = fn(f64, f64) -> f64;
        let ops: [(&str, Op, Ref); 4] = [
            ("add", Tensor::add, |x, y| x + y),
            ("sub", Tensor::sub, |x, y| x - y),
            ("mul", Tensor::mul, |x, y| x * y),
            ("div", Tensor::div, |x, y| x / y),
        ];
        for (name, op, f) in ops {
            poison(&dev, n);
            let out = op(&at, &bt).unwrap().to_vec().unwrap();
            let want: Vec<f64> = a
                .iter()
                .zip(&b)
                .map(|(&x, &y)| f(x as f64, y as f64))
                .collect();
            assert_rel_l2(&format!("{name} n={n}"), &out, &want, 1e-6);
        }
        poison(&dev, n);
        let out = at.scale(-3.5).unwrap().to_vec().unwrap();
        let want: Vec<f64> = a.iter().map(|&x| -3.5 * x as f64).collect();
        assert_rel_l2("scale", &out, &want, 1e-7);
    }
    for &(r, c) in &[(1, 1), (7, 13), (33, 10), (128, 65)] {
        let x = random_vec(r * c, 9);
        let bias = random_vec(c, 10);
        let xt = Tensor::from_slice(&dev, &x, &[r, c]).unwrap();
        let bt = Tensor::from_slice(&dev, &bias, &[c]).unwrap();
        poison(&dev, r * c);
        let out = xt.add_bias(&bt).unwrap().to_vec().unwrap();
        let want: Vec<f64> = (0..r * c)
            .map(|i| x[i] as f64 + bias[i % c] as f64)
            .collect();
        assert_rel_l2("bias_add", &out, &want, 1e-7);
    }
    assert!(Tensor::from_slice(&dev, &[1.0], &[1])
        .unwrap()
        .add(&Tensor::zeros(&dev, &[2]).unwrap())
        .is_err());
}

const MATS: &[(usize, usize)] = &[
    (1, 1),
    (1, 7),
    (7, 1),
    (15, 17),
    (63, 65),
    (128, 129),
    (3, 783),
    (1000, 10),
    (2, 5000),
];

#[test]
fn reductions_rows_cols_max_argmax() {
    let dev = dev_or_skip!();
    for (i, &(r, c)) in MATS.iter().enumerate() {
        let x = random_vec(r * c, 300 + i as u64);
        let xt = Tensor::from_slice(&dev, &x, &[r, c]).unwrap();
        poison(&dev, c);
        poison(&dev, r);
        assert_rel_l2(
            "sum(0)",
            &xt.sum(0).unwrap().to_vec().unwrap(),
            &reference::sum_cols(&x, r, c),
            1e-5,
        );
        assert_rel_l2(
            "sum(1)",
            &xt.sum(1).unwrap().to_vec().unwrap(),
            &reference::sum_rows(&x, r, c),
            1e-5,
        );
        let mean1: Vec<f64> = reference::sum_rows(&x, r, c)
            .iter()
            .map(|s| s / c as f64)
            .collect();
        assert_rel_l2(
            "mean(1)",
            &xt.mean(1).unwrap().to_vec().unwrap(),
            &mean1,
            1e-5,
        );
        let mean0: Vec<f64> = reference::sum_cols(&x, r, c)
            .iter()
            .map(|s| s / r as f64)
            .collect();
        assert_rel_l2(
            "mean(0)",
            &xt.mean(0).unwrap().to_vec().unwrap(),
            &mean0,
            1e-5,
        );
        let (mx, am) = reference::max_rows(&x, r, c);
        assert_eq!(
            xt.max_rows().unwrap().to_vec().unwrap(),
            mx.iter().map(|&v| v as f32).collect::<Vec<_>>()
        );
        assert_eq!(
            xt.argmax_rows().unwrap().to_vec().unwrap(),
            am.iter().map(|&v| v as f32).collect::<Vec<_>>()
        );
    }
    // Ties go to the first index; a 1-D tensor sums to one value.
    let t = Tensor::from_slice(&dev, &[1.0, 3.0, 3.0, 0.0], &[1, 4]).unwrap();
    assert_eq!(t.argmax_rows().unwrap().to_vec().unwrap(), vec![1.0]);
    let v = Tensor::from_slice(&dev, &[1.0, 2.0, 3.5], &[3]).unwrap();
    assert_eq!(v.sum(0).unwrap().to_vec().unwrap(), vec![6.5]);
    assert!(v.sum(1).is_err());
    assert!(Tensor::zeros(&dev, &[0, 3]).unwrap().sum(0).is_err());
}

#[test]
fn row_reductions_plain_and_subgroup_paths() {
    use suanli::internals::kernels::reduce::{rows_with, RowOp};
    let dev = dev_or_skip!();
    let mut paths = vec![false];
    if dev.info().features.subgroups {
        paths.push(true);
    }
    for &sg in &paths {
        for (i, &(r, c)) in MATS.iter().chain(&[(3, 257), (2, 100_003)]).enumerate() {
            // (No NaN inputs: Vulkan leaves NaN comparisons to the driver, and llvmpipe folds them.)
            let x = random_vec(r * c, 400 + i as u64);
            let xt = Tensor::from_slice(&dev, &x, &[r, c]).unwrap();
            let run = |op: RowOp, scale: f32| {
                let out = Tensor::full(&dev, &[r], f32::NAN).unwrap();
                let mut rec = Recorder::new(&dev);
                rows_with(&mut rec, op, xt.buffer(), out.buffer(), r, c, scale, sg).unwrap();
                rec.submit().unwrap();
                out.to_vec().unwrap()
            };
            let (mx, am) = reference::max_rows(&x, r, c);
            let sums = run(RowOp::Sum, 0.5);
            let maxes = run(RowOp::Max, 1.0);
            let args = run(RowOp::ArgMax, 1.0);
            for row in 0..r {
                let slice = &x[row * c..(row + 1) * c];
                let want = 0.5 * slice.iter().map(|&v| v as f64).sum::<f64>();
                let tol = 1e-6 * slice.iter().map(|v| v.abs() as f64).sum::<f64>().max(1.0);
                assert!(
                    (sums[row] as f64 - want).abs() <= tol,
                    "subgroups={sg} {r}x{c} sum row {row}: {} vs {want}",
                    sums[row]
                );
                assert_eq!(
                    maxes[row], mx[row] as f32,
                    "subgroups={sg} {r}x{c} max row {row}"
                );
                assert_eq!(
                    args[row], am[row] as f32,
                    "subgroups={sg} {r}x{c} argmax row {row}"
                );
            }
        }
    }
}

#[test]
fn reductions_are_deterministic() {
    let dev = dev_or_skip!();
    let (r, c) = (37, 100_003);
    let x = random_vec(r * c, 1);
    let xt = Tensor::from_slice(&dev, &x, &[r, c]).unwrap();
    let first: Vec<u32> = xt
        .sum(1)
        .unwrap()
        .to_vec()
        .unwrap()
        .iter()
        .map(|v| v.to_bits())
        .collect();
    let cols: Vec<u32> = xt
        .sum(0)
        .unwrap()
        .to_vec()
        .unwrap()
        .iter()
        .map(|v| v.to_bits())
        .collect();
    for _ in 0..3 {
        let again: Vec<u32> = xt
            .sum(1)
            .unwrap()
            .to_vec()
            .unwrap()
            .iter()
            .map(|v| v.to_bits())
            .collect();
        assert_eq!(first, again);
        let again: Vec<u32> = xt
            .sum(0)
            .unwrap()
            .to_vec()
            .unwrap()
            .iter()
            .map(|v| v.to_bits())
            .collect();
        assert_eq!(cols, again);
    }
}

#[test]
fn softmax_and_log_softmax() {
    let dev = dev_or_skip!();
    for (i, &(r, c)) in MATS.iter().enumerate() {
        let x = scaled(&random_vec(r * c, 700 + i as u64), 5.0);
        let xt = Tensor::from_slice(&dev, &x, &[r, c]).unwrap();
        poison(&dev, r * c);
        assert_rel_l2(
            "softmax",
            &xt.softmax(1).unwrap().to_vec().unwrap(),
            &reference::softmax(&x, r, c, false),
            1e-5,
        );
        poison(&dev, r * c);
        assert_rel_l2(
            "log_softmax",
            &xt.log_softmax(1).unwrap().to_vec().unwrap(),
            &reference::softmax(&x, r, c, true),
            1e-5,
        );
    }
    // Large magnitudes stay finite and correct.
    let x = vec![1e4f32, -1e4, 0.0, 9999.0, -5e3, 1e4];
    let xt = Tensor::from_slice(&dev, &x, &[2, 3]).unwrap();
    let y = xt.softmax(1).unwrap().to_vec().unwrap();
    assert!(y.iter().all(|v| v.is_finite()), "{y:?}");
    assert_rel_l2(
        "softmax ±1e4",
        &y,
        &reference::softmax(&x, 2, 3, false),
        1e-6,
    );
    let ly = xt.log_softmax(1).unwrap().to_vec().unwrap();
    assert!(ly.iter().all(|v| v.is_finite()), "{ly:?}");
    assert!(xt.softmax(0).is_err());
}

#[test]
fn cross_entropy_forward_backward() {
    let dev = dev_or_skip!();
    let mut rng = suanli::random::Rng::new(11);
    for (i, &(r, c)) in MATS.iter().enumerate() {
        let x = scaled(&random_vec(r * c, 900 + i as u64), 4.0);
        let labels: Vec<u32> = (0..r).map(|_| rng.below(c as u64) as u32).collect();
        let xt = Tensor::from_slice(&dev, &x, &[r, c]).unwrap();
        let lt = Labels::new(&dev, &labels).unwrap();
        let (want_loss, want_grad) = reference::xent(&x, &labels, r, c, 1.0 / r as f64);
        poison(&dev, r);
        let loss = xt.softmax_cross_entropy(&lt).unwrap();
        assert_rel_l2("xent loss", &loss.to_vec().unwrap(), &want_loss, 1e-5);
        let mean = loss.mean(0).unwrap().to_vec().unwrap();
        let want_mean = want_loss.iter().sum::<f64>() / r as f64;
        assert_rel_l2("xent mean", &mean, &[want_mean], 1e-5);
        poison(&dev, r * c);
        let (grad, loss2) = xt.softmax_cross_entropy_backward(&lt).unwrap();
        assert_rel_l2("xent grad", &grad.to_vec().unwrap(), &want_grad, 1e-5);
        assert_rel_l2(
            "xent loss (backward pass)",
            &loss2.to_vec().unwrap(),
            &want_loss,
            1e-5,
        );
    }
    // Finite differences of the f64 reference loss against its gradient (mean over rows).
    let (r, c) = (3, 5);
    let x = random_vec(r * c, 1);
    let labels = [4u32, 0, 2];
    let (_, g) = reference::xent(&x, &labels, r, c, 1.0 / r as f64);
    for i in 0..r * c {
        let h = 1e-3f32;
        let mut xp = x.clone();
        xp[i] += h;
        let mut xm = x.clone();
        xm[i] -= h;
        let lp: f64 = reference::xent(&xp, &labels, r, c, 1.0)
            .0
            .iter()
            .sum::<f64>()
            / r as f64;
        let lm: f64 = reference::xent(&xm, &labels, r, c, 1.0)
            .0
            .iter()
            .sum::<f64>()
            / r as f64;
        // The step actually taken in f32, so rounding of x ± h does not count as error.
        let fd = (lp - lm) / (xp[i] as f64 - xm[i] as f64);
        assert!((fd - g[i]).abs() < 1e-6, "xent fd {fd} vs {}", g[i]);
    }
    // Labels out of range are a host-side error.
    let xt = Tensor::zeros(&dev, &[2, 3]).unwrap();
    let bad = Labels::new(&dev, &[0, 3]).unwrap();
    assert!(matches!(
        xt.softmax_cross_entropy(&bad),
        Err(suanli::Error::InvalidArgument { .. })
    ));
    let short = Labels::new(&dev, &[0]).unwrap();
    assert!(matches!(
        xt.softmax_cross_entropy(&short),
        Err(suanli::Error::ShapeMismatch { .. })
    ));
}

#[test]
fn dense_target_losses() {
    use suanli::internals::kernels::loss;
    use suanli::DenseLoss;
    let dev = dev_or_skip!();
    for kind in [
        DenseLoss::CategoricalFromLogits,
        DenseLoss::BinaryFromLogits,
        DenseLoss::MeanSquared,
        DenseLoss::MeanAbsolute,
        DenseLoss::Huber,
    ] {
        for (i, &(r, c)) in MATS.iter().enumerate() {
            let x = scaled(&random_vec(r * c, 50 + i as u64), 4.0);
            // Targets: one-hot rows for categorical, probabilities in [0, 1] otherwise.
            let t: Vec<f32> = match kind {
                DenseLoss::CategoricalFromLogits => (0..r * c)
                    .map(|j| ((j % c) == (j / c) % c) as u8 as f32)
                    .collect(),
                _ => random_vec(r * c, 70 + i as u64)
                    .iter()
                    .map(|v| 0.5 + 0.5 * v)
                    .collect(),
            };
            let xt = Tensor::from_slice(&dev, &x, &[r, c]).unwrap();
            let tt = Tensor::from_slice(&dev, &t, &[r, c]).unwrap();
            let lt = Tensor::full(&dev, &[r], f32::NAN).unwrap();
            let gt = Tensor::full(&dev, &[r * c], f32::NAN).unwrap();
            let scale = 1.0 / r as f32;
            let mut rec = Recorder::new(&dev);
            loss::backward(
                &mut rec,
                kind,
                xt.buffer(),
                tt.buffer(),
                lt.buffer(),
                gt.buffer(),
                r,
                c,
                scale,
            )
            .unwrap();
            rec.submit().unwrap();
            let (wl, wg) = reference::dense_loss(kind, &x, &t, r, c, scale as f64);
            assert_rel_l2(
                &format!("{kind:?} loss {r}x{c}"),
                &lt.to_vec().unwrap(),
                &wl,
                1e-5,
            );
            assert_rel_l2(
                &format!("{kind:?} grad {r}x{c}"),
                &gt.to_vec().unwrap(),
                &wg,
                1e-5,
            );
        }
    }
    // Finite differences of the f64 reference losses against their gradients.
    let (r, c) = (2, 3);
    let x = random_vec(r * c, 5);
    let t = [0.0f32, 1.0, 0.0, 0.3, 0.2, 0.5];
    for kind in [
        DenseLoss::CategoricalFromLogits,
        DenseLoss::BinaryFromLogits,
        DenseLoss::MeanSquared,
        DenseLoss::MeanAbsolute,
        DenseLoss::Huber,
    ] {
        let (_, g) = reference::dense_loss(kind, &x, &t, r, c, 1.0 / r as f64);
        for i in 0..r * c {
            let mut xp = x.clone();
            xp[i] += 1e-3;
            let mut xm = x.clone();
            xm[i] -= 1e-3;
            let f = |v: &[f32]| {
                reference::dense_loss(kind, v, &t, r, c, 1.0)
                    .0
                    .iter()
                    .sum::<f64>()
                    / r as f64
            };
            let fd = (f(&xp) - f(&xm)) / (xp[i] as f64 - xm[i] as f64);
            assert!((fd - g[i]).abs() < 1e-6, "{kind:?} fd {fd} vs {}", g[i]);
        }
    }
}

#[test]
fn optimizers_match_reference_over_five_steps() {
    let dev = dev_or_skip!();
    let rules = [
        Rule::Sgd {
            lr: 0.1,
            momentum: 0.0,
            nesterov: false,
            weight_decay: 0.0,
        },
        Rule::Sgd {
            lr: 0.05,
            momentum: 0.9,
            nesterov: false,
            weight_decay: 1e-3,
        },
        Rule::Sgd {
            lr: 0.05,
            momentum: 0.9,
            nesterov: true,
            weight_decay: 0.0,
        },
        Rule::Adam {
            lr: 1e-3,
            beta1: 0.9,
            beta2: 0.999,
            eps: 1e-7,
            weight_decay: 0.0,
            decoupled: false,
        },
        Rule::Adam {
            lr: 1e-2,
            beta1: 0.8,
            beta2: 0.99,
            eps: 1e-8,
            weight_decay: 0.01,
            decoupled: false,
        },
        Rule::Adam {
            lr: 1e-3,
            beta1: 0.9,
            beta2: 0.999,
            eps: 1e-8,
            weight_decay: 0.01,
            decoupled: true,
        },
        Rule::RmsProp {
            lr: 1e-3,
            rho: 0.9,
            eps: 1e-7,
            weight_decay: 0.0,
        },
    ];
    for (ri, rule) in rules.iter().enumerate() {
        for &n in &[1usize, 7, 65, 1000] {
            let p0 = random_vec(n, 10 + ri as u64);
            let param = Tensor::from_slice(&dev, &p0, &[n]).unwrap();
            let state: Vec<Tensor> = (0..rule.state_count())
                .map(|_| Tensor::zeros(&dev, &[n]).unwrap())
                .collect();
            let mut ref_p: Vec<f64> = p0.iter().map(|&v| v as f64).collect();
            let mut ref_s = vec![vec![0.0f64; n]; rule.state_count()];
            for t in 1..=5u64 {
                let g = random_vec(n, 1000 * t + ri as u64);
                let gt = Tensor::from_slice(&dev, &g, &[n]).unwrap();
                let mut rec = Recorder::new(&dev);
                let sb: Vec<&wgpu::Buffer> = state.iter().map(|s| s.buffer()).collect();
                optim::step(&mut rec, rule, gt.buffer(), param.buffer(), &sb, n, t).unwrap();
                rec.submit().unwrap();
                let g64: Vec<f64> = g.iter().map(|&v| v as f64).collect();
                reference::optim_step(rule, &g64, &mut ref_p, &mut ref_s, t);
            }
            // Compare the change from the start, which is what the update rule computes.
            let got: Vec<f32> = param
                .to_vec()
                .unwrap()
                .iter()
                .zip(&p0)
                .map(|(a, b)| a - b)
                .collect();
            let want: Vec<f64> = ref_p.iter().zip(&p0).map(|(a, &b)| a - b as f64).collect();
            assert_rel_l2(&format!("{rule:?} n={n}"), &got, &want, 1e-4);
            let got = param.to_vec().unwrap();
            assert_rel_l2(&format!("{rule:?} n={n} params"), &got, &ref_p, 1e-6);
        }
    }
}

#[test]
fn gather_rows_from_u8_dataset() {
    let dev = dev_or_skip!();
    let mut rng = suanli::random::Rng::new(3);
    for &(rows, row_len, batch) in &[
        (10usize, 784usize, 7usize),
        (1, 1, 1),
        (100, 3, 64),
        (50, 1, 33),
    ] {
        let data: Vec<u8> = (0..rows * row_len).map(|_| rng.below(256) as u8).collect();
        let idx: Vec<u32> = (0..batch + 5)
            .map(|_| rng.below(rows as u64) as u32)
            .collect();
        // A random palette: a byte looked up at the wrong index, or scaled instead of looked
        // up, shows; the lookup must reproduce the palette's bits.
        let palette = random_vec(gather::PALETTE_LEN, 70 + rows as u64);
        let db = ByteBuffer::new(&dev, &data).unwrap();
        let pt = Tensor::from_slice(&dev, &palette, &[gather::PALETTE_LEN]).unwrap();
        let ib = IndexBuffer::new(&dev, &idx).unwrap();
        let sel = gather::Rows {
            indices: &ib,
            offset: 5,
            batch,
            row_len,
            scale: 1.0,
        };
        // Every way a byte becomes a float: through the palette and by a multiply (both
        // exact), and by a divide (WGSL allows 2.5 ULP; datasets use it only where the
        // device was checked to be exact).
        for lookup in [
            Lookup::Palette,
            Lookup::Multiply(1.0 / 255.0),
            Lookup::Divide(255.0),
        ] {
            let out = Tensor::full(&dev, &[batch * row_len], f32::NAN).unwrap();
            let mut rec = Recorder::new(&dev);
            gather::gather(&mut rec, &db, &pt, lookup, sel, out.buffer()).unwrap();
            rec.submit().unwrap();
            let got = out.to_vec().unwrap();
            let want: Vec<f32> = (0..batch * row_len)
                .map(|i| {
                    let b = data[idx[5 + i / row_len] as usize * row_len + i % row_len];
                    lookup.value(b, &palette)
                })
                .collect();
            let ulps = got
                .iter()
                .zip(&want)
                .map(|(g, w)| (g.to_bits() as i64 - w.to_bits() as i64).unsigned_abs())
                .max()
                .unwrap();
            let allowed = if matches!(lookup, Lookup::Divide(_)) {
                3
            } else {
                0
            };
            assert!(
                ulps <= allowed,
                "gather {rows}x{row_len} batch {batch} {lookup:?}: {ulps} ULP off"
            );
        }
    }
    // The scaled palette is the f32 product k·scale, the same bits the kernel used to compute.
    let pal = gather::scaled_palette(1.0 / 255.0);
    assert_eq!(pal.len(), 256);
    assert!(pal
        .iter()
        .enumerate()
        .all(|(k, v)| *v == k as f32 * (1.0 / 255.0)));
    // A palette of the wrong length is refused before anything is recorded.
    let db = ByteBuffer::new(&dev, &[1, 2, 3, 4]).unwrap();
    let short = Tensor::zeros(&dev, &[255]).unwrap();
    let ib = IndexBuffer::new(&dev, &[0]).unwrap();
    let out = Tensor::empty(&dev, &[4]).unwrap();
    let sel = gather::Rows {
        indices: &ib,
        offset: 0,
        batch: 1,
        row_len: 4,
        scale: 1.0,
    };
    let mut rec = Recorder::new(&dev);
    let err =
        gather::gather(&mut rec, &db, &short, Lookup::Palette, sel, out.buffer()).unwrap_err();
    assert!(err.to_string().contains("palette of 256"), "{err}");
}

#[test]
fn dropout_matches_reference_mask_and_rate() {
    use suanli::internals::kernels::elementwise;
    let dev = dev_or_skip!();
    for &n in &[1usize, 7, 63, 65, 783, 4099] {
        for &p in &[0.0f32, 0.2, 0.5, 0.9] {
            let x = random_vec(n, 300 + n as u64);
            let xt = Tensor::from_slice(&dev, &x, &[n]).unwrap();
            let y = Tensor::full(&dev, &[n], f32::NAN).unwrap();
            let mut rec = Recorder::new(&dev);
            elementwise::dropout(&mut rec, xt.buffer(), y.buffer(), n, p, 1234).unwrap();
            rec.submit().unwrap();
            let got = y.to_vec().unwrap();
            let x64: Vec<f64> = x.iter().map(|&v| v as f64).collect();
            let want = reference::dropout(&x64, p, 1234);
            assert_rel_l2(&format!("dropout n={n} p={p}"), &got, &want, 1e-6);
            for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                assert_eq!(*g == 0.0, *w == 0.0, "n={n} p={p}: mask differs at {i}");
            }
        }
    }
    // The kept share is 1 − p, and another seed gives another mask.
    let n = 200_000;
    let ones = Tensor::full(&dev, &[n], 1.0).unwrap();
    let count = |seed: u32| {
        let y = Tensor::empty(&dev, &[n]).unwrap();
        let mut rec = Recorder::new(&dev);
        elementwise::dropout(&mut rec, ones.buffer(), y.buffer(), n, 0.3, seed).unwrap();
        rec.submit().unwrap();
        y.to_vec().unwrap()
    };
    let (a, b) = (count(1), count(2));
    let kept = a.iter().filter(|v| **v != 0.0).count() as f64 / n as f64;
    assert!((kept - 0.7).abs() < 0.005, "kept share {kept}");
    let same = a
        .iter()
        .zip(&b)
        .filter(|(x, y)| (**x == 0.0) == (**y == 0.0))
        .count();
    assert!(same < n * 62 / 100, "seeds 1 and 2 agree on {same} of {n}");
    // Rates outside [0, 1) are refused.
    let mut rec = Recorder::new(&dev);
    for bad in [1.0f32, -0.1, f32::NAN] {
        assert!(elementwise::dropout(&mut rec, ones.buffer(), ones.buffer(), n, bad, 0).is_err());
    }
}

#[test]
fn dropout_backward_is_the_mask_by_finite_differences() {
    use suanli::internals::kernels::elementwise;
    let dev = dev_or_skip!();
    // f(x) = Σ w·dropout(x): df/dx = dropout(w) (the same kernel on the upstream gradient).
    let n = 65;
    let (p, seed) = (0.4f32, 77u32);
    let x: Vec<f64> = random_vec(n, 5).iter().map(|&v| v as f64).collect();
    let w = random_vec(n, 6);
    let f = |x: &[f64]| -> f64 {
        reference::dropout(x, p, seed)
            .iter()
            .zip(&w)
            .map(|(a, &b)| a * b as f64)
            .sum()
    };
    let wt = Tensor::from_slice(&dev, &w, &[n]).unwrap();
    let g = Tensor::full(&dev, &[n], f32::NAN).unwrap();
    let mut rec = Recorder::new(&dev);
    elementwise::dropout(&mut rec, wt.buffer(), g.buffer(), n, p, seed).unwrap();
    rec.submit().unwrap();
    let g = g.to_vec().unwrap();
    let h = 1e-6;
    for i in 0..n {
        let (mut up, mut dn) = (x.clone(), x.clone());
        up[i] += h;
        dn[i] -= h;
        let fd = (f(&up) - f(&dn)) / (2.0 * h);
        assert!(
            (fd - g[i] as f64).abs() < 1e-5 * (1.0 + fd.abs()),
            "i={i}: fd {fd} vs {}",
            g[i]
        );
    }
}

#[test]
fn fused_training_xent_matches_the_two_kernels_and_the_reference() {
    use suanli::internals::kernels::softmax_xent;
    let dev = dev_or_skip!();
    let mut rng = suanli::random::Rng::new(17);
    for &(r, c) in &[
        (1usize, 10usize),
        (7, 1),
        (63, 17),
        (65, 10),
        (783, 10),
        (130, 3),
        // On llvmpipe the fused kernel's one work-group would loop past the driver's limit
        // here (64 rows of 300 classes per invocation), so the two kernels run instead.
        (4096, 300),
    ] {
        let x: Vec<f32> = random_vec(r * c, (r * 31 + c) as u64)
            .iter()
            .map(|v| 4.0 * v)
            .collect();
        let labels: Vec<u32> = (0..r).map(|_| rng.below(c as u64) as u32).collect();
        let lab_f: Vec<f32> = labels.iter().map(|&l| l as f32).collect();
        let xt = Tensor::from_slice(&dev, &x, &[r, c]).unwrap();
        let lt = Tensor::from_slice(&dev, &lab_f, &[r]).unwrap();
        let run = |fused: bool| {
            let loss = Tensor::full(&dev, &[r], f32::NAN).unwrap();
            let grad = Tensor::full(&dev, &[r, c], f32::NAN).unwrap();
            let acc = Tensor::zeros(&dev, &[4]).unwrap();
            let mut rec = Recorder::new(&dev);
            let (xb, lb) = (xt.buffer(), lt.buffer());
            let scale = 1.0 / r as f32;
            if fused {
                softmax_xent::xent_train(
                    &mut rec,
                    xb,
                    lb,
                    loss.buffer(),
                    grad.buffer(),
                    acc.buffer(),
                    r,
                    c,
                    scale,
                    false,
                )
                .unwrap();
            } else {
                softmax_xent::xent(
                    &mut rec,
                    xb,
                    lb,
                    loss.buffer(),
                    Some(grad.buffer()),
                    r,
                    c,
                    scale,
                    false,
                )
                .unwrap();
                softmax_xent::metrics(&mut rec, xb, lb, loss.buffer(), acc.buffer(), r, c).unwrap();
            }
            rec.submit().unwrap();
            (
                loss.to_vec().unwrap(),
                grad.to_vec().unwrap(),
                acc.to_vec().unwrap(),
            )
        };
        let (fl, fg, fa) = run(true);
        let (sl, sg, sa) = run(false);
        assert_eq!(
            (&fl, &fg, &fa[..3]),
            (&sl, &sg, &sa[..3]),
            "r={r} c={c}: fused differs"
        );
        // Against the f64 reference.
        let (want_loss, want_grad) = reference::xent(&x, &labels, r, c, 1.0 / r as f64);
        assert_rel_l2(&format!("loss r={r} c={c}"), &fl, &want_loss, 1e-5);
        assert_rel_l2(&format!("grad r={r} c={c}"), &fg, &want_grad, 1e-5);
        let correct = (0..r)
            .filter(|&i| {
                let row = &x[i * c..(i + 1) * c];
                let best = (0..c).fold(0, |b, j| if row[j] > row[b] { j } else { b });
                best == labels[i] as usize
            })
            .count();
        assert_eq!(fa[1] as usize, correct, "r={r} c={c}");
        assert_eq!(fa[2] as usize, r);
        let total: f64 = want_loss.iter().sum();
        assert!(
            (fa[0] as f64 - total).abs() <= 1e-5 * total.abs().max(1.0),
            "{} vs {total}",
            fa[0]
        );
    }
}

#[test]
fn pair_gather_matches_pixels_and_targets_of_the_same_rows() {
    let dev = dev_or_skip!();
    let mut rng = suanli::random::Rng::new(8);
    // (rows, row_len, batch, targets per row): MNIST-like, tiny, targets wider than the row.
    for &(rows, row_len, batch, tl) in &[
        (10usize, 784usize, 7usize, 1usize),
        (3, 4, 1, 1),
        (100, 12, 65, 10),
        (40, 8, 33, 700),
    ] {
        let data: Vec<u8> = (0..rows * row_len).map(|_| rng.below(256) as u8).collect();
        let targets: Vec<f32> = random_vec(rows * tl, 44 + rows as u64);
        let idx: Vec<u32> = (0..batch + 3)
            .map(|_| rng.below(rows as u64) as u32)
            .collect();
        let palette = random_vec(gather::PALETTE_LEN, 90 + rows as u64);
        let pt = Tensor::from_slice(&dev, &palette, &[gather::PALETTE_LEN]).unwrap();
        let db = ByteBuffer::new(&dev, &data).unwrap();
        let tt = Tensor::from_slice(&dev, &targets, &[rows * tl]).unwrap();
        let ib = IndexBuffer::new(&dev, &idx).unwrap();
        let x = Tensor::full(&dev, &[batch * row_len], f32::NAN).unwrap();
        let y = Tensor::full(&dev, &[batch * tl], f32::NAN).unwrap();
        let sel = gather::Rows {
            indices: &ib,
            offset: 3,
            batch,
            row_len,
            scale: 1.0,
        };
        let mut rec = Recorder::new(&dev);
        gather::gather_pair(
            &mut rec,
            &db,
            &pt,
            Lookup::Palette,
            &tt,
            sel,
            tl,
            x.buffer(),
            y.buffer(),
        )
        .unwrap();
        rec.submit().unwrap();
        let want_x: Vec<f64> = (0..batch * row_len)
            .map(|i| {
                palette[data[idx[3 + i / row_len] as usize * row_len + i % row_len] as usize] as f64
            })
            .collect();
        let want_y: Vec<f64> = (0..batch * tl)
            .map(|i| targets[idx[3 + i / tl] as usize * tl + i % tl] as f64)
            .collect();
        let got_x = x.to_vec().unwrap();
        assert!(
            got_x.iter().zip(&want_x).all(|(g, w)| *g as f64 == *w),
            "pixels must be the palette's entries exactly"
        );
        let got_y = y.to_vec().unwrap();
        assert!(
            got_y.iter().zip(&want_y).all(|(g, w)| *g as f64 == *w),
            "targets must be copied exactly"
        );
    }
    // Rows that are not whole words are refused (the two-dispatch path takes them).
    let db = ByteBuffer::new(&dev, &[1, 2, 3]).unwrap();
    let pt = Tensor::zeros(&dev, &[gather::PALETTE_LEN]).unwrap();
    let tt = Tensor::zeros(&dev, &[1]).unwrap();
    let ib = IndexBuffer::new(&dev, &[0]).unwrap();
    let x = Tensor::empty(&dev, &[3]).unwrap();
    let sel = gather::Rows {
        indices: &ib,
        offset: 0,
        batch: 1,
        row_len: 3,
        scale: 1.0,
    };
    let mut rec = Recorder::new(&dev);
    assert!(gather::gather_pair(
        &mut rec,
        &db,
        &pt,
        Lookup::Palette,
        &tt,
        sel,
        1,
        x.buffer(),
        tt.buffer()
    )
    .is_err());
}
