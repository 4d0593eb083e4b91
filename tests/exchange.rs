//! The exchange's rules without MPI: what ranks must agree on, how sums are ordered, and how
//! a model's gradients are cut into buckets. A made-up exchange stands in for several ranks
//! (it answers `all_gather` with the messages the "other ranks" would send).

mod common;

use suanli::internals::buckets;
use suanli::multi::exchange::{self, Combined, Exchange, ExchangeStats, HostExchange};
use suanli::nn::{Dense, Loss, Optimizer, Sequential};
use suanli::Error;

/// What rank `r` sends when this rank sends `mine`.
type Others = Box<dyn Fn(usize, &[u8]) -> Vec<u8>>;

/// Rank `rank` of a run whose other ranks say what `others` returns for a message.
struct FakeRanks {
    rank: usize,
    ranks: usize,
    others: Others,
}

impl Exchange for FakeRanks {
    fn rank(&self) -> usize {
        self.rank
    }
    fn ranks(&self) -> usize {
        self.ranks
    }
    fn start(&mut self, _: usize, _: Vec<Vec<f32>>) -> suanli::Result<()> {
        unimplemented!("not used here")
    }
    fn finish(&mut self, _: usize) -> suanli::Result<Combined> {
        unimplemented!("not used here")
    }
    fn all_gather(&mut self, bytes: Vec<u8>) -> suanli::Result<Vec<Vec<u8>>> {
        Ok((0..self.ranks)
            .map(|r| {
                if r == self.rank {
                    bytes.clone()
                } else {
                    (self.others)(r, &bytes)
                }
            })
            .collect())
    }
    fn fail(&mut self, _: &str) {}
    fn take_stats(&mut self) -> ExchangeStats {
        ExchangeStats::default()
    }
}

fn fields(batch: &str) -> Vec<(&'static str, String)> {
    vec![
        ("the model", "dense 784-128-10".into()),
        ("the batch size", batch.into()),
        ("the seed", "0".into()),
    ]
}

#[test]
fn a_rank_started_differently_is_named_with_both_values() {
    // Rank 2 of 3 was started with batch 64; everyone else with 128.
    // What a rank started with batch 64 sends.
    let encode = |batch: &str| {
        let mut sent = Vec::new();
        exchange::check_same(&mut Capture(&mut sent), &fields(batch)).unwrap();
        sent
    };
    let odd = encode("64");
    let mut ex = FakeRanks {
        rank: 1,
        ranks: 3,
        others: Box::new(move |r, mine| if r == 2 { odd.clone() } else { mine.to_vec() }),
    };
    match exchange::check_same(&mut ex, &fields("128")) {
        Err(Error::RankMismatch {
            what,
            rank,
            expected,
            found,
        }) => {
            assert_eq!((what.as_str(), rank), ("the batch size", 2));
            assert_eq!((expected.as_str(), found.as_str()), ("128", "64"));
        }
        other => panic!("expected a mismatch naming rank 2, got {other:?}"),
    }
    // Alike everywhere: no error.
    let mut same = FakeRanks {
        rank: 1,
        ranks: 3,
        others: Box::new(|_, mine| mine.to_vec()),
    };
    exchange::check_same(&mut same, &fields("128")).unwrap();
    // A rank that sends something else entirely (another build) is refused too.
    let mut garbage = FakeRanks {
        rank: 0,
        ranks: 2,
        others: Box::new(|_, _| b"not json".to_vec()),
    };
    assert!(matches!(
        exchange::check_same(&mut garbage, &fields("128")),
        Err(Error::RankMismatch { rank: 1, .. })
    ));
}

/// A one-rank exchange that keeps what it was asked to send.
struct Capture<'a>(&'a mut Vec<u8>);

impl Exchange for Capture<'_> {
    fn rank(&self) -> usize {
        0
    }
    fn ranks(&self) -> usize {
        1
    }
    fn start(&mut self, _: usize, _: Vec<Vec<f32>>) -> suanli::Result<()> {
        unimplemented!("not used here")
    }
    fn finish(&mut self, _: usize) -> suanli::Result<Combined> {
        unimplemented!("not used here")
    }
    fn all_gather(&mut self, bytes: Vec<u8>) -> suanli::Result<Vec<Vec<u8>>> {
        *self.0 = bytes.clone();
        Ok(vec![bytes])
    }
    fn fail(&mut self, _: &str) {}
    fn take_stats(&mut self) -> ExchangeStats {
        ExchangeStats::default()
    }
}

#[test]
fn sums_and_decisions_are_the_same_on_every_rank() {
    // Rank r contributes [r + 0.1, 1e16]: summed in rank order on every rank.
    let mk = |rank: usize| FakeRanks {
        rank,
        ranks: 3,
        others: Box::new(|r, _| {
            [r as f64 + 0.1, 1e16]
                .iter()
                .flat_map(|v| v.to_le_bytes())
                .collect()
        }),
    };
    let want = [(0.1f64 + 1.1) + 2.1, (1e16f64 + 1e16) + 1e16];
    for rank in 0..3 {
        let mine = [rank as f64 + 0.1, 1e16];
        let got = exchange::sum_f64(&mut mk(rank), &mine).unwrap();
        assert_eq!(got, want, "rank {rank}");
    }
    // One rank saying yes makes it yes everywhere.
    let mut ex = FakeRanks {
        rank: 0,
        ranks: 2,
        others: Box::new(|_, _| vec![1]),
    };
    assert!(exchange::any(&mut ex, false).unwrap());
    let mut ex = FakeRanks {
        rank: 0,
        ranks: 2,
        others: Box::new(|_, _| vec![0]),
    };
    assert!(!exchange::any(&mut ex, false).unwrap());
    // A single process sums its devices' parts in device order.
    let mut h = HostExchange::new();
    h.start(0, vec![vec![1e8, 1.0], vec![1.0, 1e8], vec![-1e8, -1e8]])
        .unwrap();
    assert_eq!(
        h.finish(0).unwrap().data,
        vec![(1e8f32 + 1.0) - 1e8, (1.0f32 + 1e8) - 1e8]
    );
}

#[test]
fn buckets_follow_the_layers_in_reverse() {
    let dev = dev_or_skip!();
    let mut m = Sequential::new(&dev);
    m.add(Dense::new(128, "relu").input_dim(784)).unwrap();
    m.add(Dense::new(64, "relu")).unwrap();
    m.add(Dense::new(10, "softmax").use_bias(false)).unwrap();
    m.compile(Optimizer::adam(), Loss::SparseCategoricalCrossentropy)
        .unwrap();
    // Parameters (optimizer order): w0 b0 w1 b1 w2 → 100352 128 8192 64 640 values.
    let one = buckets(&m, 25 << 20);
    assert_eq!(one.len(), 1);
    assert_eq!((one[0].layers.clone(), one[0].params.clone()), (0..3, 0..5));
    assert_eq!(one[0].len, 109_376);
    // 32 KB: the last two layers (8,896 values) reach it, the first layer is its own.
    let two = buckets(&m, 32 << 10);
    assert_eq!(two.len(), 2, "{two:?}");
    assert_eq!((two[0].layers.clone(), two[0].params.clone()), (1..3, 2..5));
    assert_eq!(two[0].len, 8192 + 64 + 640);
    assert_eq!((two[1].layers.clone(), two[1].params.clone()), (0..1, 0..2));
    // One byte: a bucket per layer, last layer first.
    let each = buckets(&m, 1);
    let layers: Vec<_> = each.iter().map(|b| b.layers.clone()).collect();
    assert_eq!(layers, vec![2..3, 1..2, 0..1]);
    assert_eq!(each.iter().map(|b| b.len).sum::<usize>(), 109_376);
}
