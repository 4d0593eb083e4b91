//! The embedding family against the f64 reference: the lookup (rows copied bit for bit,
//! zeros for ids outside `[0, rows)`: negative, too large, NaN; fractional ids truncated) and
//! the table's gradient, a scatter-add of every position's `dy` row into the row its id
//! selects (every row written, zeros where no id selects it), for tables of 1, 7, 65 and 1000
//! rows of 1, 3, 24 and 128 columns and batches of 1, 5 and 768 ids drawn from a few rows (many
//! repeats) or from all of them. Outputs and the backward pass's scratch are poisoned with NaN
//! first. The gradient is the same bits on every run (no float atomics), the grid spills
//! past 65,535 work-groups correctly, and a batch whose loops llvmpipe would cut short is
//! refused.

mod common;

use common::{assert_rel_l2, random_vec, rel_l2};
use suanli::exec::Recorder;
use suanli::internals::kernels::embedding::{self, EmbShape, Scratch};
use suanli::internals::reference;
use suanli::{Device, Error, Tensor};

fn nan(dev: &Device, n: usize) -> Tensor {
    Tensor::full(dev, &[n], f32::NAN).unwrap()
}

fn t(dev: &Device, v: &[f32]) -> Tensor {
    Tensor::from_slice(dev, v, &[v.len()]).unwrap()
}

/// `n` ids for a table of `rows`: with `few`, drawn from three rows (so each repeats about
/// n/3 times); else from all of them. Every 11th is out of range (−1, `rows`, `rows + 3`,
/// NaN, −7.5), every 13th fractional (`v + 0.75`, which selects v), and -0.0 (row 0) once.
fn ids(n: usize, rows: usize, few: bool, seed: u64) -> Vec<f32> {
    let mut rng = suanli::random::Rng::new(seed);
    let bad = [-1.0, rows as f32, rows as f32 + 3.0, f32::NAN, -7.5];
    (0..n)
        .map(|i| {
            let pick = if few {
                [0, rows / 2, rows - 1][rng.below(3) as usize]
            } else {
                rng.below(rows as u64) as usize
            };
            match i {
                _ if i % 11 == 10 => bad[(i / 11) % bad.len()],
                _ if i % 13 == 12 => pick as f32 + 0.75,
                3 => -0.0,
                _ => pick as f32,
            }
        })
        .collect()
}

/// The gradient and the scratch, poisoned, for one run of the backward pass.
struct Run {
    counts: Tensor,
    starts: Tensor,
    positions: Tensor,
    dtable: Tensor,
}

impl Run {
    fn new(dev: &Device, s: &EmbShape) -> Run {
        let [a, b, c] = s.scratch_words();
        Run {
            counts: nan(dev, a),
            starts: nan(dev, b),
            positions: nan(dev, c),
            dtable: nan(dev, s.rows * s.dim),
        }
    }

    fn backward(&self, dev: &Device, s: &EmbShape, ids: &Tensor, dy: &Tensor) -> Vec<f32> {
        let scratch = Scratch {
            counts: self.counts.buffer(),
            starts: self.starts.buffer(),
            positions: self.positions.buffer(),
        };
        let mut rec = Recorder::new(dev);
        embedding::backward(
            &mut rec,
            s,
            ids.buffer(),
            dy.buffer(),
            scratch,
            self.dtable.buffer(),
        )
        .unwrap();
        rec.submit().unwrap();
        self.dtable.to_vec().unwrap()
    }
}

/// The largest number of positions any row's gradient sums (its reduction length).
fn most_repeats(ids: &[f32], rows: usize) -> usize {
    let mut c = vec![0usize; rows];
    for &x in ids {
        if let Some(v) = reference::embedding_row(x, rows) {
            c[v] += 1;
        }
    }
    c.into_iter().max().unwrap_or(0)
}

#[test]
fn lookup_and_scatter_add_match_the_reference() {
    let dev = dev_or_skip!();
    let mut seed = 100;
    let (mut worst_fw, mut worst_bw) = (0.0f64, 0.0f64);
    for &rows in &[1usize, 7, 65, 1000] {
        for &dim in &[1usize, 3, 24, 128] {
            for &n in &[1usize, 5, 768] {
                for few in [true, false] {
                    seed += 1;
                    let s = EmbShape {
                        positions: n,
                        rows,
                        dim,
                    };
                    let what = format!("V={rows} E={dim} N={n} few={few}");
                    let x = ids(n, rows, few, seed);
                    let table = random_vec(rows * dim, seed + 1);
                    let dy = random_vec(n * dim, seed + 2);
                    let (xt, tt, dyt) = (t(&dev, &x), t(&dev, &table), t(&dev, &dy));

                    let out = nan(&dev, n * dim);
                    let mut rec = Recorder::new(&dev);
                    embedding::forward(&mut rec, &s, xt.buffer(), tt.buffer(), out.buffer())
                        .unwrap();
                    rec.submit().unwrap();
                    let got = out.to_vec().unwrap();
                    let want = reference::embedding(&x, &table, rows, dim);
                    // A copy: every element exactly (zeros included, NaN never).
                    for (i, (&g, &w)) in got.iter().zip(&want).enumerate() {
                        let err = (g as f64 - w).abs();
                        assert!(err == 0.0, "{what}: out[{i}] = {g}, expected {w}");
                        worst_fw = worst_fw.max(err);
                    }

                    let got = Run::new(&dev, &s).backward(&dev, &s, &xt, &dyt);
                    let want = reference::embedding_backward(&x, &dy, rows, dim);
                    // An f32 sum of k terms in order: relative error grows like √k·2⁻²⁴
                    // (k·2⁻²⁴ at worst); 1e-6·√k + 1e-7 leaves room for the worst row.
                    let k = most_repeats(&x, rows) as f64;
                    let tol = 1e-6 * k.sqrt() + 1e-7;
                    assert_rel_l2(&format!("dtable {what}"), &got, &want, tol);
                    worst_bw = worst_bw.max(rel_l2(&got, &want));
                    // Rows no id selects are exactly zero.
                    for v in 0..rows {
                        if want[v * dim..(v + 1) * dim].iter().all(|&w| w == 0.0) {
                            let row = &got[v * dim..(v + 1) * dim];
                            assert!(row.iter().all(|&g| g == 0.0), "{what}: row {v} {row:?}");
                        }
                    }
                }
            }
        }
    }
    eprintln!("forward: max |error| {worst_fw:e}; backward: max relative L2 error {worst_bw:.3e}");
}

#[test]
fn the_gradient_is_the_same_bits_every_run() {
    let dev = dev_or_skip!();
    // Three rows share 768 positions: each sums about 256 gradients, where an order that
    // followed thread timing would show in the low bits.
    for &(rows, dim, few) in &[(7usize, 128usize, true), (1000, 24, false)] {
        let s = EmbShape {
            positions: 768,
            rows,
            dim,
        };
        let x = ids(768, rows, few, 7);
        let dy: Vec<f32> = random_vec(768 * dim, 8).iter().map(|v| v * 1e3).collect();
        let (xt, dyt) = (t(&dev, &x), t(&dev, &dy));
        let first = Run::new(&dev, &s).backward(&dev, &s, &xt, &dyt);
        for _ in 0..3 {
            let again = Run::new(&dev, &s).backward(&dev, &s, &xt, &dyt);
            let same = first
                .iter()
                .zip(&again)
                .all(|(a, b)| a.to_bits() == b.to_bits());
            assert!(same, "V={rows} E={dim}: two runs differ");
        }
    }
}

#[test]
fn a_table_past_65535_work_groups_is_whole() {
    let dev = dev_or_skip!();
    // 65,537 × 256 values: 65,537 work-groups of 256, one past a dimension's limit.
    let (rows, dim, n) = (65_537usize, 256usize, 5usize);
    let s = EmbShape {
        positions: n,
        rows,
        dim,
    };
    let x = vec![65_536.0, 0.0, 65_536.0, 40_000.0, 70_000.0];
    let table = random_vec(rows * dim, 3);
    let dy = random_vec(n * dim, 4);
    let (xt, tt, dyt) = (t(&dev, &x), t(&dev, &table), t(&dev, &dy));
    let out = nan(&dev, n * dim);
    let mut rec = Recorder::new(&dev);
    embedding::forward(&mut rec, &s, xt.buffer(), tt.buffer(), out.buffer()).unwrap();
    rec.submit().unwrap();
    let want = reference::embedding(&x, &table, rows, dim);
    assert_rel_l2("forward", &out.to_vec().unwrap(), &want, 1e-7);
    let got = Run::new(&dev, &s).backward(&dev, &s, &xt, &dyt);
    let want = reference::embedding_backward(&x, &dy, rows, dim);
    assert_rel_l2("dtable", &got, &want, 1e-6);
    assert!(got.iter().all(|v| v.is_finite()), "a row was not written");
}

#[test]
fn a_batch_too_long_for_llvmpipe_loops_is_refused_or_right() {
    let dev = dev_or_skip!();
    let (rows, dim, n) = (3usize, 2usize, 70_000usize);
    let s = EmbShape {
        positions: n,
        rows,
        dim,
    };
    let x = ids(n, rows, false, 9);
    let dy = random_vec(n * dim, 10);
    let (xt, dyt) = (t(&dev, &x), t(&dev, &dy));
    let run = Run::new(&dev, &s);
    let scratch = Scratch {
        counts: run.counts.buffer(),
        starts: run.starts.buffer(),
        positions: run.positions.buffer(),
    };
    let mut rec = Recorder::new(&dev);
    let r = embedding::backward(
        &mut rec,
        &s,
        xt.buffer(),
        dyt.buffer(),
        scratch,
        run.dtable.buffer(),
    );
    match (dev.info().limits.max_loop_iterations, r) {
        (Some(_), Err(Error::InvalidArgument { expected, .. })) => {
            assert!(expected.contains("loop iterations"), "{expected}")
        }
        (None, Ok(())) => {
            rec.submit().unwrap();
            let want = reference::embedding_backward(&x, &dy, rows, dim);
            assert_rel_l2("dtable", &run.dtable.to_vec().unwrap(), &want, 1e-4);
        }
        (limit, r) => panic!("loop limit {limit:?}: {r:?}"),
    }
}

#[test]
fn bad_shapes_are_refused_with_numbers() {
    let dev = dev_or_skip!();
    let buf = t(&dev, &[0.0; 4]);
    for (s, name) in [
        (
            EmbShape {
                positions: 1,
                rows: 0,
                dim: 1,
            },
            "rows",
        ),
        (
            EmbShape {
                positions: 1,
                rows: (1 << 24) + 1,
                dim: 1,
            },
            "rows",
        ),
        (
            EmbShape {
                positions: 1,
                rows: 1,
                dim: 0,
            },
            "dim",
        ),
        (
            EmbShape {
                positions: 0,
                rows: 1,
                dim: 1,
            },
            "positions",
        ),
    ] {
        let mut rec = Recorder::new(&dev);
        match embedding::forward(&mut rec, &s, buf.buffer(), buf.buffer(), buf.buffer()) {
            Err(Error::InvalidArgument { name: n, .. }) => assert_eq!(n, name, "{s:?}"),
            other => panic!("{s:?}: {other:?}"),
        }
    }
}
