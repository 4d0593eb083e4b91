//! The fused attention kernels against the f64 unfused definition (reference::attention),
//! with every output poisoned (NaN) first: T not a multiple of any tile (1, 7, 65, 257),
//! heads 1, 3, 4, head sizes 16, 24, 64, causal and not, batch 1 and 5, the packed layout
//! and a padded one with the three blocks in another order; head sizes 1 to 128 across the
//! widths the kernels specialise for (32, 64, 128). The reference's gradient is
//! itself checked by central finite differences; the kernels' results are the same bits
//! every run; shapes they cannot take are typed errors.

mod common;

use common::{assert_rel_l2, random_vec};
use suanli::exec::Recorder;
use suanli::internals::kernels::attention::{self, Shape};
use suanli::internals::reference::{self, AttnShape};
use suanli::{Device, Error, Tensor};

fn nan(dev: &Device, n: usize) -> Tensor {
    Tensor::full(dev, &[n], f32::NAN).unwrap()
}

fn reference_shape(s: &Shape) -> AttnShape {
    AttnShape {
        batch: s.batch,
        t: s.t,
        heads: s.heads,
        d: s.d,
        causal: s.causal,
        stride: s.stride,
        offsets: s.offsets,
        o_stride: s.o_stride,
        scale: f64::from(s.scale),
    }
}

/// Forward and backward of one shape: (O, LSE, dQKV) read back.
fn run(dev: &Device, s: &Shape, qkv: &[f32], d_o: &[f32]) -> (Vec<f32>, Vec<f32>, Vec<f32>) {
    let x = Tensor::from_slice(dev, qkv, &[qkv.len()]).unwrap();
    let g = Tensor::from_slice(dev, d_o, &[d_o.len()]).unwrap();
    let (o, lse) = (nan(dev, s.o_len()), nan(dev, s.lse_len()));
    let (delta, dqkv) = (nan(dev, s.lse_len()), nan(dev, s.qkv_len()));
    let mut rec = Recorder::new(dev);
    attention::forward(&mut rec, s, x.buffer(), o.buffer(), lse.buffer()).unwrap();
    attention::backward(
        &mut rec,
        s,
        x.buffer(),
        o.buffer(),
        g.buffer(),
        lse.buffer(),
        delta.buffer(),
        dqkv.buffer(),
    )
    .unwrap();
    rec.submit().unwrap();
    (
        o.to_vec().unwrap(),
        lse.to_vec().unwrap(),
        dqkv.to_vec().unwrap(),
    )
}

/// Which elements of rows of `stride` a kernel writes: those in a block of `width` from one
/// of the `blocks` offsets (others stay as they were).
fn covered(n: usize, stride: usize, blocks: &[usize], width: usize) -> Vec<bool> {
    (0..n)
        .map(|i| {
            let c = i % stride;
            blocks.iter().any(|&o| c >= o && c < o + width)
        })
        .collect()
}

fn check(dev: &Device, s: &Shape, seed: u64) {
    let qkv: Vec<f32> = random_vec(s.qkv_len(), seed)
        .iter()
        .map(|v| v * 2.0)
        .collect();
    let d_o = random_vec(s.o_len(), seed + 1);
    let r = reference_shape(s);
    let (o_want, lse_want) = reference::attention(&r, &qkv);
    let g_want = reference::attention_backward(&r, &qkv, &d_o);
    let (o, lse, g) = run(dev, s, &qkv, &d_o);
    let e = s.heads * s.d;
    let what = format!("{s:?}");
    let pick = |v: &[f32], w: &[f64], mask: &[bool]| -> (Vec<f32>, Vec<f64>) {
        let cols = (0..v.len()).filter(|&i| mask[i]);
        (
            cols.clone().map(|i| v[i]).collect(),
            cols.map(|i| w[i]).collect(),
        )
    };
    let (a, b) = pick(&o, &o_want, &covered(o.len(), s.o_stride, &[0], e));
    assert_rel_l2(&format!("O {what}"), &a, &b, 1e-5);
    assert_rel_l2(&format!("LSE {what}"), &lse, &lse_want, 1e-5);
    let mask = covered(g.len(), s.stride, &s.offsets, e);
    let (a, b) = pick(&g, &g_want, &mask);
    assert_rel_l2(&format!("dQKV {what}"), &a, &b, 1e-4);
    // Columns no block covers are left as they were (NaN here).
    for (i, v) in g.iter().enumerate().filter(|(i, _)| !mask[*i]) {
        assert!(v.is_nan(), "{what}: column {} written", i % s.stride);
    }
}

#[test]
fn fused_attention_matches_the_f64_definition_on_ragged_shapes() {
    let Some(dev) = common::device() else { return };
    let mut seed = 1;
    for &t in &[1usize, 7, 65] {
        for &(heads, d) in &[(1usize, 16usize), (3, 24), (4, 64)] {
            for causal in [true, false] {
                for batch in [1usize, 5] {
                    check(&dev, &Shape::packed(batch, t, heads, d, causal), seed);
                    seed += 2;
                }
            }
        }
    }
}

#[test]
fn head_sizes_from_1_to_128() {
    let Some(dev) = common::device() else { return };
    let mut seed = 70;
    for &d in &[1usize, 5, 33, 100, 128] {
        for causal in [true, false] {
            check(&dev, &Shape::packed(2, 40, 2, d, causal), seed);
            seed += 2;
        }
    }
}

#[test]
fn long_sequences_and_a_padded_layout_in_another_order() {
    let Some(dev) = common::device() else { return };
    for causal in [true, false] {
        check(&dev, &Shape::packed(2, 257, 3, 16, causal), 50);
        // Rows of 3·E + 5 with the values first, then keys, then queries; output rows padded.
        let (heads, d) = (4, 24);
        let e = heads * d;
        let s = Shape {
            stride: 3 * e + 5,
            offsets: [2 * e + 5, e + 2, 1],
            o_stride: e + 3,
            scale: 0.3,
            ..Shape::packed(3, 65, heads, d, causal)
        };
        check(&dev, &s, 60);
    }
}

#[test]
fn the_reference_gradient_agrees_with_finite_differences() {
    // Σ d_o·O in f64, central differences at every QKV value of a small causal shape.
    let r = AttnShape {
        batch: 2,
        t: 5,
        heads: 2,
        d: 3,
        causal: true,
        stride: 18,
        offsets: [0, 6, 12],
        o_stride: 6,
        scale: 0.5,
    };
    let qkv = random_vec(2 * 5 * 18, 7);
    let d_o = random_vec(2 * 5 * 6, 8);
    let g = reference::attention_backward(&r, &qkv, &d_o);
    let f = |x: &[f32]| -> f64 {
        let (o, _) = reference::attention(&r, x);
        o.iter().zip(&d_o).map(|(a, &b)| a * f64::from(b)).sum()
    };
    let h = 1e-3f32;
    let mut worst: f64 = 0.0;
    for i in 0..qkv.len() {
        let (mut up, mut down) = (qkv.clone(), qkv.clone());
        up[i] += h;
        down[i] -= h;
        let fd = (f(&up) - f(&down)) / (f64::from(up[i]) - f64::from(down[i]));
        worst = worst.max((fd - g[i]).abs());
    }
    assert!(worst < 1e-4, "largest difference {worst:e}");
}

#[test]
fn attention_is_the_same_bits_every_run() {
    let Some(dev) = common::device() else { return };
    let s = Shape::packed(2, 65, 3, 24, true);
    let qkv = random_vec(s.qkv_len(), 3);
    let d_o = random_vec(s.o_len(), 4);
    assert_eq!(run(&dev, &s, &qkv, &d_o), run(&dev, &s, &qkv, &d_o));
}

#[test]
fn shapes_the_kernels_cannot_take_are_typed_errors() {
    let Some(dev) = common::device() else { return };
    let buf = Tensor::zeros(&dev, &[16]).unwrap();
    let mut rec = Recorder::new(&dev);
    let mut go =
        |s: Shape| attention::forward(&mut rec, &s, buf.buffer(), buf.buffer(), buf.buffer());
    match go(Shape::packed(1, 4, 1, 129, true)) {
        Err(Error::InvalidArgument { name, found, .. }) => {
            assert_eq!(name, "head size");
            assert_eq!(found, "129");
        }
        r => panic!("{r:?}"),
    }
    let s = Shape {
        offsets: [0, 8, 20],
        ..Shape::packed(1, 4, 2, 4, true)
    };
    assert!(matches!(
        go(s),
        Err(Error::InvalidArgument {
            name: "offsets",
            ..
        })
    ));
    assert!(matches!(
        go(Shape::packed(1, 0, 1, 4, true)),
        Err(Error::InvalidArgument { .. })
    ));
}
