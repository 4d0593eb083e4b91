//! Batched and strided matmul (`matmul_batch`) against the f64 reference: every variant the
//! device can run (wide, narrow, shallow), forced by name, every layout, ragged and aligned
//! shapes, batches of 1, 3 and 5, contiguous and packed (head-strided, as attention reads a
//! QKV tensor) geometries. C's buffer is poisoned with NaN first: every element of a product
//! must be written, and every other element must stay NaN (a product writes only its
//! columns).

mod common;

use common::matmul::{narrow_variants, tol, variants};
use suanli::exec::Recorder;
use suanli::internals::kernels::matmul::{record_batched_with, Epilogue, MatmulArgs};
use suanli::internals::kernels::matmul_batch::{Batch, Strided};
use suanli::internals::kernels::matmul_tune;
use suanli::internals::kernels::matmul_variant::Variant;
use suanli::internals::reference;
use suanli::{Activation, Device, Error, Layout, Tensor};

const LAYOUTS: [Layout; 3] = [Layout::NN, Layout::TN, Layout::NT];

/// How the matrices of a batch lie in their buffers.
#[derive(Clone, Copy, Debug)]
enum Geometry {
    /// One after the other.
    Contiguous,
    /// `heads` matrices side by side in each row of a packed tensor, `pad` floats more per
    /// row, the buffer starting `pad` floats in.
    Packed { heads: u32, pad: u32 },
}

/// The operand strides of a packed geometry for stored (rows, cols) matrices.
fn packed(rows: u32, cols: u32, heads: u32, pad: u32) -> Strided {
    let ld = heads * cols + pad;
    Strided {
        base: pad,
        outer: rows * ld,
        inner: cols,
        ld,
    }
}

fn stored(m: u32, n: u32, k: u32, layout: Layout) -> [(u32, u32); 3] {
    let a = if layout == Layout::TN { (k, m) } else { (m, k) };
    let b = if layout == Layout::NT { (n, k) } else { (k, n) };
    [a, b, (m, n)]
}

fn offset(s: &Strided, heads: u32, z: u32) -> usize {
    (s.base + (z / heads) * s.outer + (z % heads) * s.inner) as usize
}

/// Matrix z of an operand, dense.
fn extract(buf: &[f32], s: &Strided, heads: u32, z: u32, (rows, cols): (u32, u32)) -> Vec<f32> {
    let o = offset(s, heads, z);
    (0..rows as usize)
        .flat_map(|r| {
            let at = o + r * s.ld as usize;
            buf[at..at + cols as usize].to_vec()
        })
        .collect()
}

/// Runs one batch with `variant` (or the tuner's choice with `None`) and checks it.
#[allow(clippy::too_many_arguments)] // a test case spelled out
fn check(
    dev: &Device,
    variant: Option<Variant>,
    (m, n, k): (u32, u32, u32),
    layout: Layout,
    count: u32,
    geo: Geometry,
    act: Activation,
    seed: u64,
) {
    let dims = stored(m, n, k, layout);
    let probe = |a, b, c| MatmulArgs {
        a,
        b,
        epilogue: Epilogue::None,
        c,
        m,
        n,
        k,
        layout,
        act,
        accumulate: false,
        half: false,
    };
    let batch = match geo {
        Geometry::Contiguous => Batch::contiguous(count, m, n, k, layout),
        Geometry::Packed { heads, pad } => {
            let [a, b, c] = dims.map(|(r, cl)| packed(r, cl, heads, pad));
            Batch {
                count,
                heads,
                a,
                b,
                c,
            }
        }
    };
    let heads = batch.heads;
    let len = |s: &Strided, (rows, cols): (u32, u32)| {
        (0..count)
            .map(|z| offset(s, heads, z) + (rows as usize - 1) * s.ld as usize + cols as usize)
            .max()
            .unwrap()
    };
    let a = common::random_vec(len(&batch.a, dims[0]), seed);
    let b = common::random_vec(len(&batch.b, dims[1]), seed + 1);
    let c_len = len(&batch.c, dims[2]);
    let at = Tensor::from_slice(dev, &a, &[a.len()]).unwrap();
    let bt = Tensor::from_slice(dev, &b, &[b.len()]).unwrap();
    let ct = Tensor::full(dev, &[c_len], f32::NAN).unwrap();
    let args = probe(at.buffer(), bt.buffer(), ct.buffer());
    let mut rec = Recorder::new(dev);
    match variant {
        Some(v) => record_batched_with(&mut rec, &args, &batch, v).unwrap(),
        None => matmul_tune::record_batched(&mut rec, &args, &batch).unwrap(),
    }
    rec.submit().unwrap();
    let out = ct.to_vec().unwrap();
    let name = variant.map_or("tuned".into(), |v| v.name());
    let mut written = vec![false; c_len];
    for z in 0..count {
        let az = extract(&a, &batch.a, heads, z, dims[0]);
        let bz = extract(&b, &batch.b, heads, z, dims[1]);
        let want = reference::matmul(
            &az, &bz, None, None, m as usize, n as usize, k as usize, layout, act,
        );
        let got = extract(&out, &batch.c, heads, z, dims[2]);
        let what = format!("{name} {layout:?} {m}x{n}x{k} batch {count} {geo:?} z={z}");
        common::assert_rel_l2(&what, &got, &want, tol(k as usize));
        let o = offset(&batch.c, heads, z);
        for r in 0..m as usize {
            let at = o + r * batch.c.ld as usize;
            written[at..at + n as usize].fill(true);
        }
    }
    let stray = (0..c_len).find(|&i| !written[i] && !out[i].is_nan());
    assert!(
        stray.is_none(),
        "{name} {layout:?} {m}x{n}x{k} batch {count} {geo:?}: wrote outside its matrices at {stray:?}"
    );
}

/// Ragged (the scalar loads) and aligned (the 16-byte loads, with 4-aligned strides).
const SHAPES: [(u32, u32, u32); 2] = [(15, 17, 9), (20, 36, 24)];

#[test]
fn every_variant_every_layout_batches_of_1_3_5() {
    let dev = dev_or_skip!();
    let mut seed = 500;
    for v in variants(&dev) {
        for layout in LAYOUTS {
            for (i, &shape) in SHAPES.iter().enumerate() {
                let pad = if i == 1 { 4 } else { 3 };
                for (count, geo) in [
                    (1, Geometry::Contiguous),
                    (3, Geometry::Contiguous),
                    (5, Geometry::Packed { heads: 2, pad }),
                ] {
                    seed += 3;
                    check(
                        &dev,
                        Some(v),
                        shape,
                        layout,
                        count,
                        geo,
                        Activation::Linear,
                        seed,
                    );
                }
            }
        }
    }
}

#[test]
fn narrow_and_shallow_variants_batched() {
    let dev = dev_or_skip!();
    let (narrow, shallow) = narrow_variants(&dev);
    let mut seed = 900;
    for layout in LAYOUTS {
        for &v in &narrow {
            for shape in [(37, 16, 21), (9, 5, 40)] {
                seed += 3;
                let geo = Geometry::Packed { heads: 3, pad: 1 };
                check(
                    &dev,
                    Some(v),
                    shape,
                    layout,
                    5,
                    geo,
                    Activation::Linear,
                    seed,
                );
            }
        }
        for &v in &shallow {
            for shape in [(37, 21, 16), (9, 40, 3)] {
                seed += 3;
                let geo = Geometry::Packed { heads: 3, pad: 1 };
                check(
                    &dev,
                    Some(v),
                    shape,
                    layout,
                    5,
                    geo,
                    Activation::Linear,
                    seed,
                );
            }
        }
    }
}

/// The attention products' geometries through the tuner's choice: S = Q·Kᵀ (NT) and the
/// backward's dV = Pᵀ·dO (TN), reading a packed QKV tensor, with an activation to show it
/// applies per element.
#[test]
fn tuned_choice_with_activation_and_attention_shapes() {
    let dev = dev_or_skip!();
    for (i, (shape, layout)) in [
        ((65, 65, 16), Layout::NT),
        ((7, 24, 65), Layout::TN),
        ((33, 20, 7), Layout::NN),
    ]
    .into_iter()
    .enumerate()
    {
        let geo = Geometry::Packed { heads: 4, pad: 0 };
        check(
            &dev,
            None,
            shape,
            layout,
            5,
            geo,
            Activation::Relu,
            40 + i as u64,
        );
    }
}

#[test]
fn bad_batches_are_typed_errors() {
    let dev = dev_or_skip!();
    let t = Tensor::zeros(&dev, &[4096]).unwrap();
    let args = MatmulArgs {
        a: t.buffer(),
        b: t.buffer(),
        epilogue: Epilogue::None,
        c: t.buffer(),
        m: 8,
        n: 8,
        k: 8,
        layout: Layout::NN,
        act: Activation::Linear,
        accumulate: false,
        half: false,
    };
    let good = Batch::contiguous(2, 8, 8, 8, Layout::NN);
    let mut rec = Recorder::new(&dev);
    let bias = Tensor::zeros(&dev, &[8]).unwrap();
    let with_bias = MatmulArgs {
        epilogue: Epilogue::Bias(bias.buffer()),
        ..args
    };
    let cases = [
        (with_bias, good),
        (args, Batch { count: 0, ..good }),
        (args, Batch { heads: 0, ..good }),
        (
            args,
            Batch {
                a: Strided { ld: 7, ..good.a },
                ..good
            },
        ),
        (
            args,
            Batch {
                count: 1 << 20,
                ..good
            },
        ),
    ];
    for (a, b) in cases {
        let r = record_batched_with(&mut rec, &a, &b, Variant::Naive);
        assert!(
            matches!(r, Err(Error::InvalidArgument { .. })),
            "{b:?} with {:?}: {r:?}",
            a.epilogue
        );
    }
}
