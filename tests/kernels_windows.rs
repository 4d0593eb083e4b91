//! The device's text windows (`shaders/windows.wgsl`) against the host's copy of the draw
//! (`reference::windows`), bit for bit, on ragged shapes with the outputs poisoned first;
//! the inputs/targets shift; the starts' distribution (a chi-square bound); determinism;
//! typed errors; and training and evaluation over `Text::device_windows` against the same
//! windows drawn on the host and uploaded as an ordinary dataset.

mod common;

use suanli::data::{Dataset, Split, Text};
use suanli::exec::Recorder;
use suanli::internals::kernels::windows::{self, Draw, Tokens};
use suanli::internals::reference;
use suanli::nn::FitOptions;
use suanli::{Device, Error, Tensor};

/// Draws `draw` from `tokens` on the device into outputs filled with NaN first.
fn draw_on_device(dev: &Device, tokens: &Tokens, draw: &Draw) -> (Vec<f32>, Vec<f32>) {
    let n = draw.batch * draw.block;
    let x = Tensor::full(dev, &[n], f32::NAN).unwrap();
    let y = Tensor::full(dev, &[n], f32::NAN).unwrap();
    let mut rec = Recorder::new(dev);
    windows::windows(&mut rec, tokens, draw, x.buffer(), y.buffer()).unwrap();
    rec.submit().unwrap();
    (x.to_vec().unwrap(), y.to_vec().unwrap())
}

/// Asserts the device's windows are the reference's, bit for bit.
fn check(dev: &Device, ids: &[u32], draw: &Draw) {
    let tokens = Tokens::new(dev, ids).unwrap();
    let (x, y) = draw_on_device(dev, &tokens, draw);
    let (wx, wy) = reference::windows(
        ids,
        draw.seed,
        draw.step,
        draw.row0 as u32,
        draw.batch,
        draw.block,
    );
    for (what, got, want) in [("inputs", &x, &wx), ("targets", &y, &wy)] {
        assert_eq!(got.len(), want.len());
        if let Some(i) = (0..got.len()).find(|&i| got[i].to_bits() != (want[i] as f32).to_bits()) {
            panic!(
                "{what} differ at {i} (row {}, position {}): device {}, host {} ({draw:?}, {} tokens, packed {})",
                i / draw.block,
                i % draw.block,
                got[i],
                want[i],
                ids.len(),
                tokens.is_packed()
            );
        }
    }
}

/// Pseudo-random ids below `vocab`.
fn ids(n: usize, vocab: u32, seed: u64) -> Vec<u32> {
    let mut rng = suanli::random::Rng::new(seed);
    (0..n).map(|_| rng.below(vocab as u64) as u32).collect()
}

#[test]
fn windows_equal_the_host_reference_bit_for_bit() {
    let dev = dev_or_skip!();
    // (tokens, block, batch): block 1, a text just long enough (one start), batches of 1 and
    // 7, a window one past the work-group and a long one, bytes and u32 ids.
    let shapes: &[(usize, usize, usize)] = &[
        (2, 1, 1),
        (2, 1, 7),
        (9, 8, 7),
        (10, 8, 1),
        (1000, 1, 7),
        (1000, 63, 5),
        (1000, 64, 7),
        (1000, 65, 3),
        (5003, 257, 13),
        (100_000, 64, 130),
    ];
    let draws = [
        (0u64, 1u64, 0usize),
        (1337, 2, 7),
        (1337, 3, 7),
        (0xDEAD_BEEF_0000_0001, 1 << 33, 4096),
        (u64::MAX, u64::MAX, 1_000_000),
    ];
    for (k, &(n, block, batch)) in shapes.iter().enumerate() {
        for vocab in [65u32, 70_000] {
            let t = ids(n, vocab, 10 + k as u64);
            for &(seed, step, row0) in &draws {
                check(
                    &dev,
                    &t,
                    &Draw {
                        seed,
                        step,
                        row0,
                        batch,
                        block,
                    },
                );
            }
        }
    }
}

#[test]
fn targets_are_the_inputs_one_token_on() {
    let dev = dev_or_skip!();
    // Token i is i: a window's first input is its start.
    let n = 3001;
    let t: Vec<u32> = (0..n as u32).collect();
    let tokens = Tokens::new(&dev, &t).unwrap();
    for (block, batch) in [(1, 7), (16, 9), (n - 1, 2)] {
        let draw = Draw {
            seed: 5,
            step: 9,
            row0: 3,
            batch,
            block,
        };
        let (x, y) = draw_on_device(&dev, &tokens, &draw);
        for r in 0..batch {
            let s = x[r * block] as usize;
            assert!(
                s + block < n,
                "start {s} leaves no target for block {block}"
            );
            for j in 0..block {
                assert_eq!(x[r * block + j] as usize, s + j);
                assert_eq!(y[r * block + j] as usize, s + j + 1);
            }
        }
    }
}

/// Pearson's statistic of `counts` against a uniform expectation.
fn chi_square(counts: &[usize]) -> f64 {
    let total: usize = counts.iter().sum();
    let e = total as f64 / counts.len() as f64;
    counts.iter().map(|&c| (c as f64 - e).powi(2) / e).sum()
}

#[test]
fn starts_cover_the_range_uniformly() {
    let dev = dev_or_skip!();
    // 101 tokens, block 1: 100 starts, every one a possible window.
    let starts = 100;
    let t: Vec<u32> = (0..=starts as u32).collect();
    let tokens = Tokens::new(&dev, &t).unwrap();
    // Over rows (one step of 20,000 windows) and over steps (200 steps of the same 100 rows).
    let mut by_rows = vec![0usize; starts];
    let (x, _) = draw_on_device(
        &dev,
        &tokens,
        &Draw {
            seed: 1,
            step: 1,
            row0: 0,
            batch: 20_000,
            block: 1,
        },
    );
    for v in x {
        by_rows[v as usize] += 1;
    }
    let mut by_steps = vec![0usize; starts];
    let mut same_as_before = 0;
    let mut before: Option<Vec<f32>> = None;
    for step in 1..=200 {
        let (x, _) = draw_on_device(
            &dev,
            &tokens,
            &Draw {
                seed: 1,
                step,
                row0: 0,
                batch: 100,
                block: 1,
            },
        );
        if let Some(b) = &before {
            same_as_before += b.iter().zip(&x).filter(|(a, b)| a == b).count();
        }
        for &v in &x {
            by_steps[v as usize] += 1;
        }
        before = Some(x);
    }
    // 99 degrees of freedom: mean 99, standard deviation 14; 99 + 6·14 = 183 fails a
    // uniform draw about once in 10^6 runs, and a draw that misses a start (expected 200 each)
    // or favours half the range fails by thousands.
    for (what, counts) in [("rows", &by_rows), ("steps", &by_steps)] {
        let c = chi_square(counts);
        eprintln!("starts over {what}: chi-square {c:.1} (99 degrees of freedom)");
        assert!(
            c < 183.0,
            "starts over {what} are not uniform: chi-square {c:.1}"
        );
        assert!(
            counts.iter().all(|&c| c > 0),
            "a start never drawn over {what}"
        );
    }
    // Consecutive steps draw independently: the same start for a row about 1 time in 100.
    let rate = same_as_before as f64 / (199.0 * 100.0);
    assert!(
        rate < 0.02,
        "consecutive steps repeat {rate:.3} of their starts"
    );
}

#[test]
fn the_same_seed_draws_the_same_windows() {
    let dev = dev_or_skip!();
    let t = ids(5000, 65, 3);
    let tokens = Tokens::new(&dev, &t).unwrap();
    let d = Draw {
        seed: 42,
        step: 7,
        row0: 12,
        batch: 7,
        block: 32,
    };
    let a = draw_on_device(&dev, &tokens, &d);
    assert_eq!(a, draw_on_device(&dev, &tokens, &d));
    for other in [
        Draw { seed: 43, ..d },
        Draw { step: 8, ..d },
        Draw { row0: 19, ..d },
    ] {
        assert_ne!(a.0, draw_on_device(&dev, &tokens, &other).0, "{other:?}");
    }
}

#[test]
fn bad_input_is_a_typed_error() {
    let dev = dev_or_skip!();
    let tokens = Tokens::new(&dev, &[1, 2, 3, 4, 5]).unwrap();
    let ok = Draw {
        seed: 0,
        step: 1,
        row0: 0,
        batch: 2,
        block: 4,
    };
    assert!(windows::params(&tokens, &ok).is_ok());
    for (draw, name) in [
        (Draw { block: 5, ..ok }, "block"),
        (Draw { block: 0, ..ok }, "block"),
        (Draw { batch: 0, ..ok }, "batch"),
    ] {
        let x = Tensor::zeros(&dev, &[8]).unwrap();
        let mut rec = Recorder::new(&dev);
        match windows::windows(&mut rec, &tokens, &draw, x.buffer(), x.buffer()) {
            Err(Error::InvalidArgument { name: n, .. }) => assert_eq!(n, name, "{draw:?}"),
            r => panic!("{draw:?}: {r:?}"),
        }
    }
    assert!(matches!(
        Tokens::new(&dev, &[1 << 24]),
        Err(Error::InvalidArgument { name: "tokens", .. })
    ));
    // The dataset: the validation split of 20 characters holds 2 tokens.
    let text = Text::from_text("abcdefghijabcdefghij").unwrap();
    for (block, samples, name) in [(2, 4, "block"), (0, 4, "block"), (1, 0, "samples")] {
        match text.device_windows(&dev, Split::Validation, samples, block, 0) {
            Err(Error::InvalidArgument { name: n, .. }) => assert_eq!(n, name),
            r => panic!("block {block}, samples {samples}: {r:?}"),
        }
    }
    assert!(text
        .device_windows(&dev, Split::Validation, 4, 1, 0)
        .is_ok());
}

/// The windows a fit of `steps` steps of `batch` from optimizer step `t0` draws, drawn on
/// the host and laid out as an ordinary dataset (with the GPT's positions).
fn host_windows(
    dev: &Device,
    text: &Text,
    seed: u64,
    steps: &[(u64, usize)],
    batch: usize,
) -> Dataset {
    let t = common::gpt::T;
    let tokens = text.tokens(Split::Train);
    let (mut x, mut y) = (Vec::new(), Vec::new());
    for &(step, row0) in steps {
        let (a, b) = reference::windows(tokens, seed, step, row0 as u32, batch, t);
        x.extend(a.iter().map(|&v| v as u32));
        y.extend(b.iter().map(|&v| v as u32));
    }
    let positions: Vec<u32> = (0..x.len() / t).flat_map(|_| 0..t as u32).collect();
    Dataset::from_ids(dev, &x, t, &y, t)
        .unwrap()
        .with_input_ids(&positions, &[t])
        .unwrap()
}

fn with_positions(data: Dataset, rows: usize) -> Dataset {
    let t = common::gpt::T;
    let positions: Vec<u32> = (0..rows).flat_map(|_| 0..t as u32).collect();
    data.with_input_ids(&positions, &[t]).unwrap()
}

/// Training on device-drawn windows gives the weights of training on the same windows drawn
/// on the host (bit for bit: the same inputs in the same order), across two fits (the
/// second continues the step count, so it draws new windows), a shuffled epoch included;
/// evaluation draws the fixed windows of step 0.
#[test]
fn fit_and_evaluate_read_the_device_windows() {
    let dev = dev_or_skip!();
    let text = common::gpt::text();
    let vocab = text.tokenizer().vocab_size();
    let (batch, steps, seed) = (4, 3, 99);
    let device = with_positions(
        text.device_windows(&dev, Split::Train, steps * batch, common::gpt::T, seed)
            .unwrap(),
        steps * batch,
    );
    assert_eq!(device.feature_storage(), "u8 token windows");
    let mut a = common::gpt::gpt(&dev, vocab);
    let mut b = common::gpt::gpt(&dev, vocab);
    for (fit, shuffle) in [(0u64, false), (1, true)] {
        let opts = || FitOptions {
            epochs: 1,
            batch_size: batch,
            shuffle,
            ..Default::default()
        };
        a.fit(&device, opts()).unwrap();
        // Step t of this fit reads rows (s·batch..) of its epoch: the permutation does not
        // change which windows a step draws.
        let t0 = fit * steps as u64;
        let rows: Vec<(u64, usize)> = (0..steps).map(|s| (t0 + s as u64 + 1, s * batch)).collect();
        let host = host_windows(&dev, &text, seed, &rows, batch);
        b.fit(
            &host,
            FitOptions {
                shuffle: false,
                ..opts()
            },
        )
        .unwrap();
    }
    let (wa, wb) = (a.weights(), b.weights());
    for ((name, ta), (_, tb)) in wa.iter().zip(&wb) {
        let (va, vb) = (ta.to_vec().unwrap(), tb.to_vec().unwrap());
        assert!(
            va.iter().zip(&vb).all(|(p, q)| p.to_bits() == q.to_bits()),
            "{name} differs between device and host windows"
        );
    }
    // Evaluation: step 0, rows 0.. of the pass.
    let val = with_positions(
        text.device_windows(&dev, Split::Train, 10, common::gpt::T, seed)
            .unwrap(),
        10,
    );
    let host = host_windows(&dev, &text, seed, &[(0, 0)], 10);
    let (ea, eb) = (a.evaluate(&val, 3).unwrap(), a.evaluate(&host, 3).unwrap());
    assert_eq!(ea.loss.to_bits(), eb.loss.to_bits(), "{ea:?} vs {eb:?}");
}
