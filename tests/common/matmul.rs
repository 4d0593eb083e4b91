//! Shared helpers of the matmul tests: the variants a device can run, and one checked product
//! against the f64 reference, outputs poisoned with NaN first so an unwritten element fails.

use suanli::exec::Recorder;
use suanli::internals::kernels::matmul::{record_with, Epilogue, MatmulArgs};
use suanli::internals::kernels::matmul_variant::{Block, Tile, Variant, SUBGROUP_SIZES};
use suanli::internals::reference;
use suanli::{Activation, Device, Layout, Tensor};

/// Tolerance (relative L2 error): `1e-5 · max(1, sqrt(K / 128))`. f32 accumulation error grows
/// like sqrt(K)·ε for random-sign inputs; below K = 128 the bound is the plain 1e-5.
pub fn tol(k: usize) -> f64 {
    1e-5 * (k as f64 / 128.0).sqrt().max(1.0)
}

/// f16's unit roundoff (round to nearest, 10 stored mantissa bits): 2⁻¹¹.
pub const U16: f64 = 1.0 / 2048.0;

/// Relative L2 tolerance of a product whose operands are rounded to f16 and whose sum is
/// accumulated in f32, K deep (the tensor-core kernels; tests/matmul_coop.rs derives it and
/// checks it by simulation): 3·2⁻¹¹ plus the f32 kernels' own ([`tol`]).
pub fn tol_f16(k: usize) -> f64 {
    3.0 * U16 + tol(k)
}

/// The tolerance of `variant`'s products: [`tol_f16`] for f16 operands, else [`tol`].
pub fn tol_for(variant: Variant, k: usize) -> f64 {
    if variant.is_reduced_precision() {
        tol_f16(k)
    } else {
        tol(k)
    }
}

/// Ragged shapes (1, tile±1, primes, 783) and aligned ones (the vec4 paths).
pub const SHAPES: &[(usize, usize, usize)] = &[
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

/// Every wide variant the device can run: naive, the shared-memory tiles, the register
/// blocks, and the subgroup kernels of its subgroup size.
pub fn variants(dev: &Device) -> Vec<Variant> {
    let mut v = vec![Variant::Naive];
    v.extend(Tile::ALL.iter().map(|t| Variant::Tiled(*t)));
    v.extend(Block::ALL.iter().map(|b| Variant::Blocked(*b)));
    for size in SUBGROUP_SIZES {
        for rows in [16, 32, 64] {
            v.push(Variant::Subgroup { size, rows });
        }
    }
    v.retain(|x| x.eligible(dev.info()));
    v
}

/// The narrow (N ≤ 16) and shallow (K ≤ 16) variants the device can run.
pub fn narrow_variants(dev: &Device) -> (Vec<Variant>, Vec<Variant>) {
    let mut narrow = vec![Variant::BlockedNarrow];
    let mut shallow = Vec::new();
    for size in SUBGROUP_SIZES {
        narrow.push(Variant::SubgroupNarrow { size });
        shallow.push(Variant::SubgroupShallow { size });
    }
    narrow.retain(|x| x.eligible(dev.info()));
    shallow.retain(|x| x.eligible(dev.info()));
    (narrow, shallow)
}

/// The epilogue of a checked product.
#[derive(Clone, Copy, PartialEq, Debug)]
pub enum Epi {
    /// Nothing.
    None,
    /// `+ bias`.
    Bias,
    /// Column sums of op(B).
    ColSum,
    /// `⊙ act'(y)`.
    Gate(Activation),
}

/// One product to check.
pub struct Case {
    pub m: usize,
    pub n: usize,
    pub k: usize,
    pub layout: Layout,
    pub act: Activation,
    pub epi: Epi,
    pub accumulate: bool,
}

impl Case {
    /// A plain product.
    pub fn plain(m: usize, n: usize, k: usize, layout: Layout) -> Case {
        Case {
            m,
            n,
            k,
            layout,
            act: Activation::Linear,
            epi: Epi::None,
            accumulate: false,
        }
    }
}

/// Runs `c` with `variant` (outputs poisoned with NaN first) and compares it with the f64
/// reference.
pub fn check(dev: &Device, variant: Variant, c: &Case, seed: u64) {
    check_within(dev, variant, c, seed, tol_for(variant, c.k));
}

/// [`check`] with the product's tolerance given (relative L2; the column sums keep the f32
/// one): the tensor-core kernels' f16 operands (tests/matmul_coop.rs).
pub fn check_within(dev: &Device, variant: Variant, c: &Case, seed: u64, product_tol: f64) {
    let (m, n, k) = (c.m, c.n, c.k);
    let a = super::random_vec(m * k, seed);
    let b = super::random_vec(k * n, seed + 1);
    let bias = super::random_vec(n, seed + 2);
    let c_old = super::random_vec(m * n, seed + 3);
    // Gate values: outputs of the gate activation, as the previous layer would have produced.
    let gate_act = match c.epi {
        Epi::Gate(g) => g,
        _ => Activation::Linear,
    };
    let gate_y: Vec<f32> = super::random_vec(m * n, seed + 4)
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
        half: false,
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
        "{} {:?} {m}x{n}x{k} epi={:?} act={:?} acc={}",
        variant.name(),
        c.layout,
        c.epi,
        c.act,
        c.accumulate
    );
    super::assert_rel_l2(&what, &out, &want, product_tol);
    if c.epi == Epi::ColSum {
        // Σ_k op(B)[k, col].
        let sums: Vec<f64> = (0..n)
            .map(|j| (0..k).map(|kk| if c.layout == Layout::NT { b[j * k + kk] } else { b[kk * n + j] } as f64).sum())
            .collect();
        super::assert_rel_l2(
            &format!("{what} column sums"),
            &aux.to_vec().unwrap(),
            &sums,
            tol(k),
        );
    }
}
