//! Shapes that take a kernel's loops past llvmpipe's limit (it stops every loop of an
//! invocation after 65,535 iterations in all and carries on with a truncated result): each is
//! either computed right, against the f64 reference with outputs poisoned first, or refused
//! with an error that names the limit. Before these checks a softmax over 70,001 classes
//! summed only part of each row and a column sum over 70,000 rows added 65,535 of them.

mod common;

use common::{assert_rel_l2, random_vec};
use suanli::internals::reference;
use suanli::{Error, Tensor};

fn poison(dev: &suanli::Device, n: usize) {
    for _ in 0..2 {
        drop(Tensor::full(dev, &[n], f32::NAN).unwrap());
    }
}

#[test]
fn wide_softmax_rows_are_whole() {
    let dev = dev_or_skip!();
    // 256 columns is the last lane-per-row shape, 257 the first work-group-per-row one.
    for (i, &(r, c)) in [(5usize, 256usize), (5, 257), (2, 30_000), (3, 70_001)]
        .iter()
        .enumerate()
    {
        let x: Vec<f32> = random_vec(r * c, 60 + i as u64)
            .iter()
            .map(|v| 6.0 * v)
            .collect();
        let xt = Tensor::from_slice(&dev, &x, &[r, c]).unwrap();
        for log in [false, true] {
            poison(&dev, r * c);
            let y = if log {
                xt.log_softmax(1)
            } else {
                xt.softmax(1)
            };
            assert_rel_l2(
                &format!("softmax log={log} {r}x{c}"),
                &y.unwrap().to_vec().unwrap(),
                &reference::softmax(&x, r, c, log),
                1e-5,
            );
        }
    }
}

#[test]
fn column_sums_over_many_rows_add_every_row() {
    let dev = dev_or_skip!();
    for (i, &(r, c)) in [(70_000usize, 3usize), (70_003, 1)].iter().enumerate() {
        let x = random_vec(r * c, 80 + i as u64);
        let xt = Tensor::from_slice(&dev, &x, &[r, c]).unwrap();
        poison(&dev, c);
        assert_rel_l2(
            &format!("sum(0) {r}x{c}"),
            &xt.sum(0).unwrap().to_vec().unwrap(),
            &reference::sum_cols(&x, r, c),
            1e-5,
        );
    }
}

/// Where the adapter has a limit, a shape beyond every kernel's reach is refused and the error
/// says why; elsewhere the same shape is computed.
#[test]
fn shapes_beyond_the_loop_limit_are_refused_not_truncated() {
    let dev = dev_or_skip!();
    let limit = dev.info().limits.max_loop_iterations;
    // Column sums reach 4 rows per iteration.
    let rows = limit.map_or(300_000, |l| 4 * l as usize + 64);
    let x = random_vec(rows * 2, 90);
    let xt = Tensor::from_slice(&dev, &x, &[rows, 2]).unwrap();
    match (limit, xt.sum(0)) {
        (
            Some(l),
            Err(Error::InvalidArgument {
                expected, found, ..
            }),
        ) => {
            assert!(expected.contains(&l.to_string()), "{expected}");
            assert!(found.contains(&rows.to_string()), "{found}");
        }
        (Some(_), other) => panic!("{rows} rows past the limit: {other:?}"),
        (None, got) => assert_rel_l2(
            "sum(0)",
            &got.unwrap().to_vec().unwrap(),
            &reference::sum_cols(&x, rows, 2),
            1e-5,
        ),
    }
    // Cross-entropy runs a lane per row over three passes of its classes.
    let classes = limit.map_or(30_000, |l| l as usize / 3 + 8);
    let logits = Tensor::from_slice(&dev, &random_vec(classes, 91), &[1, classes]).unwrap();
    let labels = suanli::Labels::new(&dev, &[3u32]).unwrap();
    let got = logits.softmax_cross_entropy_backward(&labels);
    match limit {
        Some(_) => assert!(
            matches!(&got, Err(Error::InvalidArgument { expected, .. }) if expected.contains("loop")),
            "{got:?}"
        ),
        None => {
            got.unwrap();
        }
    }
}
