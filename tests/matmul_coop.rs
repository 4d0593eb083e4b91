//! The tensor-core matmul kernels (cooperative matrices, `matmul_gen::coop`) against the f64
//! reference, with the tolerance their f16 operands need, derived here and checked on the
//! host by simulating their arithmetic (f16-rounded operands, f32 accumulation).
//!
//! The device tests run only where the adapter reports a configuration they use (no CPU
//! adapter does: on lavapipe they check nothing and say so on stderr); the first GPU session
//! runs them. Their WGSL is validated by naga in CI (`matmul_gen::tests`, tests/shaders.rs).

mod common;

use common::matmul::{check_within, tol, tol_f16, tol_for, Case, Epi, SHAPES, U16};
use suanli::internals::kernels::matmul_variant::{Variant, COOP};
use suanli::{Activation, Device, Layout};

const LAYOUTS: [Layout; 3] = [Layout::NN, Layout::TN, Layout::NT];

// The derivation of the f16 tolerance ([`tol_f16`], in tests/common/matmul.rs):
//
// Each product `a·b` becomes `a·b·(1 + δa)(1 + δb)`, |δ| ≤ u = 2⁻¹¹; the error of a sum of K
// products with random signs has variance `K·E[(ab·(δa + δb))²]` against the sum's
// `K·E[(ab)²]`, a relative L2 error of order u whatever K is. With δ uniform on ±u that is
// 0.82·u; rounding errors of uniformly drawn values are smaller relative to the value (the
// relative error shrinks as the mantissa grows), and the simulation below measures 0.53-0.60·u
// on its shapes (about 3·10⁻⁴). The tolerance, 3u plus the f32 kernels' own ([`tol`]), leaves
// a margin of about 5×.

/// The tensor-core variants this device can run (none on lavapipe).
fn coop_variants(dev: &Device) -> Vec<Variant> {
    let v: Vec<Variant> = COOP
        .iter()
        .copied()
        .filter(|v| v.eligible(dev.info()))
        .collect();
    if v.is_empty() {
        eprintln!(
            "NOTICE: {} reports no cooperative-matrix configuration the tensor-core kernels use; their device tests check nothing here",
            dev.name()
        );
    }
    v
}

/// The host's simulation of the kernels' arithmetic: operands rounded to f16, products
/// summed in f32 in K order. Its error against the f64 reference stays inside
/// [`tol_f16`] and above the f32 kernels' tolerance (so the looser bound is needed, and a
/// kernel that did not round would still pass it).
#[test]
fn f16_products_with_f32_sums_stay_within_the_derived_tolerance() {
    let f16 = |x: f32| half::f16::from_f32(x).to_f32();
    for (i, &(m, n, k)) in [(64usize, 64usize, 64usize), (33, 65, 513), (16, 16, 4096)]
        .iter()
        .enumerate()
    {
        let a = common::random_vec(m * k, 40 + i as u64);
        let b = common::random_vec(k * n, 50 + i as u64);
        let mut sim = vec![0f32; m * n];
        let mut want = vec![0f64; m * n];
        for r in 0..m {
            for c in 0..n {
                let (mut s, mut w) = (0f32, 0f64);
                for kk in 0..k {
                    let (x, y) = (a[r * k + kk], b[kk * n + c]);
                    s += f16(x) * f16(y);
                    w += x as f64 * y as f64;
                }
                sim[r * n + c] = s;
                want[r * n + c] = w;
            }
        }
        let err = common::rel_l2(&sim, &want);
        assert!(err < tol_f16(k), "{m}x{n}x{k}: {err:e} ≥ {:e}", tol_f16(k));
        assert!(
            err > tol(k),
            "{m}x{n}x{k}: {err:e} within the f32 tolerance"
        );
        // Of order u (0.53-0.60·u measured on these shapes; other seeds give 0.49·u).
        assert!(err > 0.35 * U16 && err < 1.2 * U16, "{m}x{n}x{k}: {err:e}");
    }
}

#[test]
fn coop_every_layout_ragged_and_aligned_shapes() {
    let dev = dev_or_skip!();
    for v in coop_variants(&dev) {
        let mut shapes = SHAPES.to_vec();
        // Past one 128×128 work-group tile and one K stage, ragged, and a deep K.
        shapes.extend([
            (129, 257, 33),
            (200, 130, 1000),
            (256, 256, 256),
            (64, 64, 4099),
        ]);
        for (i, &(m, n, k)) in shapes.iter().enumerate() {
            for layout in LAYOUTS {
                let case = Case::plain(m, n, k, layout);
                check_within(&dev, v, &case, 3000 + i as u64, tol_for(v, k));
            }
        }
    }
}

#[test]
fn coop_every_epilogue() {
    let dev = dev_or_skip!();
    let epilogues = [
        (Epi::Bias, Activation::Relu, false),
        (Epi::Bias, Activation::Gelu, false),
        (Epi::None, Activation::Linear, true),
        (Epi::ColSum, Activation::Linear, false),
        (Epi::Gate(Activation::Relu), Activation::Linear, false),
        (Epi::Gate(Activation::Tanh), Activation::Linear, false),
    ];
    let mut seed = 4000;
    for v in coop_variants(&dev) {
        for (i, &(epi, act, accumulate)) in epilogues.iter().enumerate() {
            for &(m, n, k) in &[(33usize, 65usize, 47usize), (130, 260, 96)] {
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
                check_within(&dev, v, &case, seed, tol_for(v, k));
            }
        }
    }
}
