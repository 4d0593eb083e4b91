//! matmul against the f64 reference: every variant the device can run (naive, the
//! shared-memory tiles, the register blocks, the subgroup kernels of its size, forced one by
//! one exactly as `SUANLI_MATMUL` would force them), every layout, ragged and aligned shapes
//! (the scalar and the 16-byte-load paths), every epilogue, a K deeper than lavapipe's loop
//! limit, and a random-shape property test. Outputs are poisoned with NaN first so an
//! unwritten element fails. The fused optimizer update has its own file
//! (tests/matmul_update.rs); routing and the tuner's candidates are pure
//! (tests/matmul_variants.rs).

mod common;

use common::matmul::{check, narrow_variants, variants, Case, Epi, SHAPES};
use suanli::exec::Recorder;
use suanli::internals::kernels::matmul::{record_with, Epilogue, MatmulArgs};
use suanli::internals::kernels::matmul_tune;
use suanli::internals::kernels::matmul_variant::{candidates_with, Variant};
use suanli::{Activation, Error, Layout, Tensor};

const LAYOUTS: [Layout; 3] = [Layout::NN, Layout::TN, Layout::NT];

#[test]
fn every_variant_every_layout_ragged_and_aligned_shapes() {
    let dev = dev_or_skip!();
    for v in variants(&dev) {
        for (i, &(m, n, k)) in SHAPES.iter().enumerate() {
            for layout in LAYOUTS {
                check(&dev, v, &Case::plain(m, n, k, layout), 1000 + i as u64);
            }
        }
    }
}

/// The epilogues every variant is checked with, each on a ragged shape (scalar stores) and an
/// aligned one (the 16-byte stores of the vec4 paths), the layout rotating.
fn epilogues() -> Vec<(Epi, Activation, bool)> {
    vec![
        (Epi::Bias, Activation::Relu, false),
        (Epi::Bias, Activation::Gelu, false),
        (Epi::None, Activation::Linear, true),
        (Epi::ColSum, Activation::Linear, false),
        (Epi::Gate(Activation::Relu), Activation::Linear, false),
        (Epi::Gate(Activation::Tanh), Activation::Linear, false),
    ]
}

#[test]
fn every_epilogue_every_variant() {
    let dev = dev_or_skip!();
    let mut seed = 77;
    for v in variants(&dev) {
        for (i, &(epi, act, accumulate)) in epilogues().iter().enumerate() {
            for &(m, n, k) in &[(33usize, 65usize, 47usize), (64, 128, 96)] {
                seed += 1;
                let case = Case {
                    m,
                    n,
                    k,
                    layout: LAYOUTS[i % 3],
                    act,
                    epi,
                    accumulate,
                };
                check(&dev, v, &case, seed);
            }
        }
    }
}

#[test]
fn every_activation_in_both_store_paths() {
    let dev = dev_or_skip!();
    // The activation is applied by the two store helpers every kernel shares (store_c for
    // scalar stores, store_c4 for 16-byte ones): every activation through each, on the naive
    // kernel and on the device's choice with an aligned shape.
    let acts = [
        Activation::Linear,
        Activation::Relu,
        Activation::LeakyRelu(0.1),
        Activation::Sigmoid,
        Activation::Tanh,
        Activation::GeluTanh,
        Activation::Gelu,
    ];
    let chosen = matmul_tune::prepare(&dev).unwrap();
    for (i, act) in acts.iter().enumerate() {
        for (v, (m, n, k)) in [(Variant::Naive, (20, 12, 64)), (chosen, (32, 64, 128))] {
            let case = Case {
                m,
                n,
                k,
                layout: LAYOUTS[i % 3],
                act: *act,
                epi: Epi::Bias,
                accumulate: false,
            };
            check(&dev, v, &case, 300 + i as u64);
        }
    }
}

/// The narrow kernels put rows on grid x alone, and a grid dimension holds 65,535
/// work-groups: a product taller than that many work-groups (262,141 rows at 4 lanes; a
/// 16-filter convolution of 26×26 images at batch 500 has 338,000) must fold the rest into y
/// and still compute every row, column sums once.
#[test]
fn narrow_kernels_taller_than_one_grid_dimension() {
    let dev = dev_or_skip!();
    let (narrow, _) = narrow_variants(&dev);
    for (i, v) in narrow.into_iter().enumerate() {
        let per_group = match v {
            Variant::SubgroupNarrow { size } => size as usize,
            _ => 64,
        };
        let m = 65_535 * per_group + 37;
        for (j, (layout, epi, act)) in [
            (Layout::NN, Epi::ColSum, Activation::Linear),
            (Layout::TN, Epi::Bias, Activation::Relu),
        ]
        .into_iter()
        .enumerate()
        {
            let case = Case {
                m,
                n: 5,
                k: 3,
                layout,
                act,
                epi,
                accumulate: false,
            };
            check(&dev, v, &case, 9000 + 10 * i as u64 + j as u64);
        }
    }
}

#[test]
fn narrow_and_shallow_kernels_every_layout_and_epilogue() {
    let dev = dev_or_skip!();
    let (narrow, shallow) = narrow_variants(&dev);
    assert!(
        !narrow.is_empty(),
        "the register-blocked narrow kernel runs everywhere"
    );
    // Ragged M, every N (narrow) or K (shallow) up to 16 (one and several registers of a
    // subgroup), every layout and epilogue.
    let narrow_shapes = [
        (1usize, 1usize, 1usize),
        (7, 7, 63),
        (65, 8, 7),
        (63, 9, 65),
        (783, 10, 64),
        (13, 16, 783),
        (128, 10, 1),
    ];
    let shallow_shapes = [
        (1usize, 1usize, 1usize),
        (7, 63, 7),
        (65, 17, 8),
        (63, 65, 9),
        (783, 64, 10),
        (33, 783, 16),
        (1, 128, 13),
    ];
    let mut seed = 3000;
    let groups = narrow
        .iter()
        .map(|v| (*v, &narrow_shapes))
        .chain(shallow.iter().map(|v| (*v, &shallow_shapes)));
    for (v, shapes) in groups {
        for (i, &(m, n, k)) in shapes.iter().enumerate() {
            for layout in LAYOUTS {
                let (epi, act, accumulate) = [
                    (Epi::None, Activation::Linear, false),
                    (Epi::Bias, Activation::Tanh, false),
                    (Epi::ColSum, Activation::Linear, false),
                    (Epi::Gate(Activation::Relu), Activation::Linear, false),
                    (Epi::None, Activation::Linear, true),
                ][(i + layout as usize) % 5];
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
    // More than 16 columns (narrow) or a depth beyond 16 (shallow) is refused, not computed
    // wrong.
    let t = Tensor::zeros(&dev, &[64]).unwrap();
    for v in narrow.iter().chain(&shallow) {
        let (n, k) = if shallow.contains(v) {
            (1, 17)
        } else {
            (17, 1)
        };
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
            half: false,
        };
        assert!(matches!(
            record_with(&mut Recorder::new(&dev), &args, *v),
            Err(Error::InvalidArgument { .. })
        ));
    }
}

#[test]
fn a_k_deeper_than_the_loop_limit_is_computed_or_refused() {
    let dev = dev_or_skip!();
    // 70,000 > 65,535: llvmpipe stops a loop there, so a kernel advancing K by one per
    // iteration would sum only the first 65,535 products. Every kernel advances by at least 4.
    let (narrow, _) = narrow_variants(&dev);
    for v in variants(&dev).into_iter().chain(narrow) {
        check(&dev, v, &Case::plain(3, 5, 70_000, Layout::NN), 41);
    }
    // Where the adapter has a loop limit, a K beyond what a kernel reaches is refused.
    let Some(limit) = dev.info().limits.max_loop_iterations else {
        return;
    };
    let k = limit as u64 * 4 + 4;
    let a = Tensor::zeros(&dev, &[k as usize]).unwrap();
    let c = Tensor::zeros(&dev, &[1]).unwrap();
    let args = MatmulArgs {
        a: a.buffer(),
        b: a.buffer(),
        epilogue: Epilogue::None,
        c: c.buffer(),
        m: 1,
        n: 1,
        k: k as u32,
        layout: Layout::NN,
        act: Activation::Linear,
        accumulate: false,
        half: false,
    };
    match record_with(&mut Recorder::new(&dev), &args, Variant::Naive) {
        Err(Error::InvalidArgument { name, expected, .. }) => {
            assert_eq!(name, "shape");
            assert!(expected.contains("K at most"), "{expected}");
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[test]
fn gates_whose_derivative_needs_the_input_are_refused() {
    let dev = dev_or_skip!();
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
        half: false,
    };
    assert!(record_with(&mut Recorder::new(&dev), &args, Variant::Naive).is_err());
}

#[test]
fn large_square_with_the_chosen_variant() {
    let dev = dev_or_skip!();
    let v = matmul_tune::prepare(&dev).unwrap();
    assert!(
        candidates_with(dev.info(), dev.config().matmul_precision).contains(&v)
            || dev.config().matmul.is_some()
    );
    check(&dev, v, &Case::plain(1000, 1000, 1000, Layout::NN), 9);
}

#[test]
fn the_large_class_is_tuned_apart_from_the_default() {
    let dev = dev_or_skip!();
    let default = matmul_tune::prepare(&dev).unwrap();
    // A large product's pick is its own class's choice, tuned at its first use.
    let large = matmul_tune::pick_for(&dev, 4096, 4096, 4096).unwrap();
    assert_eq!(
        matmul_tune::chosen_class(&dev, matmul_tune::Class::Large),
        Some(large)
    );
    assert!(large.eligible(dev.info()));
    if dev.config().matmul.is_none()
        && candidates_with(dev.info(), dev.config().matmul_precision).len() > 1
    {
        assert_ne!(
            large,
            Variant::Naive,
            "the naive kernel is no large candidate"
        );
    }
    let choices = dev.tuned_choices();
    // The cache key is the class's name (with a suffix under SUANLI_MATMUL_PRECISION=medium).
    for (class, v) in [("default", default), ("large", large)] {
        assert!(
            choices
                .iter()
                .any(|(f, c, x)| f == "matmul" && c.starts_with(class) && *x == v.name()),
            "{choices:?} lacks matmul {class} {}",
            v.name()
        );
    }
    // Small products keep the default class's choice.
    assert_eq!(
        matmul_tune::pick_for(&dev, 256, 512, 512).unwrap(),
        default.for_shape_on(256, 512, 512, dev.info())
    );
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
        let case = Case {
            m,
            n,
            k,
            layout: LAYOUTS[rng.below(3) as usize],
            act: Activation::Linear,
            epi: [
                Epi::None,
                Epi::Bias,
                Epi::ColSum,
                Epi::Gate(Activation::Relu),
            ][rng.below(4) as usize],
            accumulate: false,
        };
        check(
            &dev,
            v.for_shape(m as u32, n as u32, k as u32),
            &case,
            500 + i,
        );
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
