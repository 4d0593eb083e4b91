//! Autograd: every op's gradient against central finite differences of the GPU forward pass,
//! and a 2-layer model's gradients against finite differences of its loss. Gradient
//! accumulation and zero_grad.
//!
//! Finite differences run the f32 GPU forward with step h = 1e-2 (smaller steps drown in f32
//! rounding), so agreement is checked to a relative L2 error of 2e-3; the kernels themselves
//! are checked to 1e-5 against f64 references in kernels_*.rs.

mod common;

use suanli::autograd::{Tape, Var};
use suanli::{Activation, Device, Labels, Layout, Tensor};

/// Checks d(Σ f(x)⊙r)/dx from the tape against central differences, for the input `which`.
fn check(dev: &Device, name: &str, shapes: &[Vec<usize>], which: usize, f: &dyn Fn(&[Var]) -> Var) {
    let host: Vec<Vec<f32>> = shapes
        .iter()
        .enumerate()
        .map(|(i, s)| {
            // Keep inputs away from 0 so ReLU's kink is not straddled by ±h.
            common::random_vec(s.iter().product(), 10 + i as u64)
                .iter()
                .map(|v| v + 0.3 * v.signum())
                .collect()
        })
        .collect();
    let eval = |vals: &[Vec<f32>]| -> (f64, Tape, Vec<Var>) {
        let tape = Tape::new();
        let vars: Vec<Var> = vals
            .iter()
            .zip(shapes)
            .map(|(v, s)| tape.param(&Tensor::from_slice(dev, v, s).unwrap()))
            .collect();
        let y = f(&vars);
        let n = y.value().numel();
        let r = tape.constant(
            &Tensor::from_slice(dev, &common::random_vec(n, 99), y.value().shape()).unwrap(),
        );
        let mut l = y.mul(&r).unwrap();
        while l.value().numel() > 1 || l.value().shape().len() > 1 {
            l = l.sum(0).unwrap();
        }
        let v = l.value().to_vec().unwrap()[0] as f64;
        tape.backward(&l).unwrap();
        (v, tape, vars)
    };
    let (_, tape, vars) = eval(&host);
    let grad = tape.grad(&vars[which]).unwrap().to_vec().unwrap();
    let h = 1e-2f32;
    let mut fd = Vec::with_capacity(grad.len());
    for i in 0..host[which].len() {
        let mut p = host.clone();
        p[which][i] += h;
        let mut m = host.clone();
        m[which][i] -= h;
        fd.push((eval(&p).0 - eval(&m).0) / (p[which][i] as f64 - m[which][i] as f64));
    }
    common::assert_rel_l2(name, &grad, &fd, 2e-3);
}

#[test]
fn every_op_against_finite_differences() {
    let dev = dev_or_skip!();
    let m = |a: usize, b: usize| vec![a, b];
    check(&dev, "matmul dA", &[m(3, 4), m(4, 5)], 0, &|v| {
        v[0].matmul(&v[1]).unwrap()
    });
    check(&dev, "matmul dB", &[m(3, 4), m(4, 5)], 1, &|v| {
        v[0].matmul(&v[1]).unwrap()
    });
    check(&dev, "matmul TN dA", &[m(4, 3), m(4, 5)], 0, &|v| {
        v[0].matmul_with(&v[1], Layout::TN).unwrap()
    });
    check(&dev, "matmul TN dB", &[m(4, 3), m(4, 5)], 1, &|v| {
        v[0].matmul_with(&v[1], Layout::TN).unwrap()
    });
    check(&dev, "matmul NT dA", &[m(3, 4), m(5, 4)], 0, &|v| {
        v[0].matmul_with(&v[1], Layout::NT).unwrap()
    });
    check(&dev, "matmul NT dB", &[m(3, 4), m(5, 4)], 1, &|v| {
        v[0].matmul_with(&v[1], Layout::NT).unwrap()
    });
    for act in [
        Activation::Relu,
        Activation::Tanh,
        Activation::Sigmoid,
        Activation::Gelu,
        Activation::LeakyRelu(0.1),
    ] {
        check(&dev, &format!("{act:?}"), &[m(3, 5)], 0, &|v| {
            v[0].activation(act).unwrap()
        });
        for which in 0..3 {
            let name = format!("linear {act:?} input {which}");
            check(&dev, &name, &[m(3, 4), m(4, 5), vec![5]], which, &|v| {
                v[0].linear(&v[1], Some(&v[2]), act).unwrap()
            });
        }
    }
    check(&dev, "add_bias dx", &[m(3, 4), vec![4]], 0, &|v| {
        v[0].add_bias(&v[1]).unwrap()
    });
    check(&dev, "add_bias db", &[m(3, 4), vec![4]], 1, &|v| {
        v[0].add_bias(&v[1]).unwrap()
    });
    check(&dev, "add", &[m(2, 3), m(2, 3)], 1, &|v| {
        v[0].add(&v[1]).unwrap()
    });
    check(&dev, "sub", &[m(2, 3), m(2, 3)], 1, &|v| {
        v[0].sub(&v[1]).unwrap()
    });
    check(&dev, "mul", &[m(2, 3), m(2, 3)], 0, &|v| {
        v[0].mul(&v[1]).unwrap()
    });
    check(&dev, "scale", &[m(2, 3)], 0, &|v| v[0].scale(-2.5).unwrap());
    check(&dev, "sum(0)", &[m(3, 4)], 0, &|v| v[0].sum(0).unwrap());
    check(&dev, "sum(1)", &[m(3, 4)], 0, &|v| v[0].sum(1).unwrap());
    check(&dev, "mean(0)", &[m(3, 4)], 0, &|v| v[0].mean(0).unwrap());
    check(&dev, "mean(1)", &[m(3, 4)], 0, &|v| v[0].mean(1).unwrap());
    check(&dev, "softmax", &[m(3, 4)], 0, &|v| v[0].softmax().unwrap());
    let labels = Labels::new(&dev, &[2, 0, 3]).unwrap();
    check(&dev, "softmax xent", &[m(3, 4)], 0, &|v| {
        v[0].softmax_cross_entropy_mean(&labels)
            .unwrap()
            .scale(3.0)
            .unwrap()
    });
}

#[test]
fn two_layer_model_and_accumulation() {
    let dev = dev_or_skip!();
    let labels = Labels::new(&dev, &[0, 1, 2, 1, 0]).unwrap();
    let model = |v: &[Var]| {
        let h = v[0].linear(&v[1], Some(&v[2]), Activation::Tanh).unwrap();
        h.linear(&v[3], Some(&v[4]), Activation::Linear)
            .unwrap()
            .softmax_cross_entropy_mean(&labels)
            .unwrap()
    };
    let shapes = [vec![5, 4], vec![4, 6], vec![6], vec![6, 3], vec![3]];
    for which in 1..5 {
        check(
            &dev,
            &format!("2-layer param {which}"),
            &shapes,
            which,
            &model,
        );
    }
    // Gradients accumulate over two backward passes and zero_grad clears them.
    let tape = Tape::new();
    let vars: Vec<Var> = shapes
        .iter()
        .enumerate()
        .map(|(i, s)| {
            tape.param(
                &Tensor::from_slice(&dev, &common::random_vec(s.iter().product(), i as u64), s)
                    .unwrap(),
            )
        })
        .collect();
    let loss = model(&vars);
    tape.backward(&loss).unwrap();
    let g1 = tape.grad(&vars[1]).unwrap().to_vec().unwrap();
    tape.clear();
    let loss = model(&vars);
    tape.backward(&loss).unwrap();
    let g2 = tape.grad(&vars[1]).unwrap().to_vec().unwrap();
    let twice: Vec<f64> = g1.iter().map(|v| 2.0 * *v as f64).collect();
    common::assert_rel_l2("accumulated", &g2, &twice, 1e-6);
    tape.zero_grad();
    assert!(tape.grad(&vars[1]).is_none());
    // A non-scalar loss is an error.
    assert!(tape.backward(&vars[1]).is_err());
}
