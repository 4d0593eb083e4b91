//! The unfused attention (`attention_unfused`: batched matmuls and the row softmax) against
//! the f64 definition (reference::attention_probs and friends), phase by phase, every output
//! poisoned (NaN) first: tq and tk of 1, 7, 65, 257, heads 1, 3, 4, head sizes 16, 24, 64 and
//! past the fused kernel's 128 (160, 256), dv ≠ dk, causal and not, with and without a
//! padding mask (one query with every key hidden), batch 1 and 5, one packed QKV buffer (and
//! one packed gradient) or three padded buffers. Then the fused kernels and the unfused path
//! agree where both apply, bad shapes are typed errors, and the choice between the paths
//! (attention_tune) is made once per shape class, forced by SUANLI_ATTENTION, and never
//! inside a capture.

mod common;

use common::{assert_rel_l2, random_vec};
use suanli::exec::{Capture, Recorder};
use suanli::internals::kernels::attention::{self, Shape, MAX_HEAD_SIZE};
use suanli::internals::kernels::attention_tune::{self, Path};
use suanli::internals::kernels::attention_unfused::{self as un, General, Operand};
use suanli::internals::reference;
use suanli::{Device, Error, Tensor};

fn nan(dev: &Device, n: usize) -> Tensor {
    Tensor::full(dev, &[n.max(1)], f32::NAN).unwrap()
}

fn up(dev: &Device, v: &[f32]) -> Tensor {
    Tensor::from_slice(dev, v, &[v.len()]).unwrap()
}

/// Head h's columns of a tensor laid out as `op`, dense (batch, rows, heads·width); and
/// whether any other element was written (is not NaN).
fn dense(g: &General, x: &[f32], op: &Operand, rows: usize, width: usize) -> Vec<f32> {
    let e = g.heads * width;
    let mut out = Vec::with_capacity(g.batch * rows * e);
    for r in 0..g.batch * rows {
        out.extend_from_slice(&x[r * op.stride + op.off..r * op.stride + op.off + e]);
    }
    out
}

/// Operands and their widths (heads·head size).
type Cols = Vec<(Operand, usize)>;

/// The elements of a (batch·rows, stride) tensor outside every operand in `ops`.
fn outside(n: usize, ops: &[(Operand, usize)]) -> impl Fn(usize) -> bool + '_ {
    move |i| {
        ops.iter().all(|(op, e)| {
            let c = i % op.stride;
            c < op.off || c >= op.off + e
        }) && i < n
    }
}

/// One case: `packed` puts q, k, v in one buffer (self-attention: tq = tk) and their
/// gradients in another; otherwise three buffers, each row padded.
struct Case {
    batch: usize,
    heads: usize,
    tq: usize,
    tk: usize,
    dk: usize,
    dv: usize,
    causal: bool,
    masked: bool,
    packed: bool,
}

fn general(c: &Case) -> General {
    let (ek, ev) = (c.heads * c.dk, c.heads * c.dv);
    let (q, k, v) = if c.packed {
        let s = 2 * ek + ev + 1;
        (
            Operand {
                stride: s,
                off: ek + ev + 1,
            },
            Operand { stride: s, off: 0 },
            Operand { stride: s, off: ek },
        )
    } else {
        (
            Operand {
                stride: ek + 3,
                off: 2,
            },
            Operand {
                stride: ek + 1,
                off: 1,
            },
            Operand {
                stride: ev + 2,
                off: 0,
            },
        )
    };
    General {
        batch: c.batch,
        heads: c.heads,
        tq: c.tq,
        tk: c.tk,
        dk: c.dk,
        dv: c.dv,
        causal: c.causal,
        masked: c.masked,
        scale: 1.0 / (c.dk as f32).sqrt(),
        q,
        k,
        v,
        o: Operand {
            stride: ev + 2,
            off: 1,
        },
    }
}

fn check(dev: &Device, c: &Case, seed: u64) {
    let g = general(c);
    let what = format!("{g:?}");
    let (nq, nk, nv, no) = (
        g.len_of(&g.q, g.tq),
        g.len_of(&g.k, g.tk),
        g.len_of(&g.v, g.tk),
        g.len_of(&g.o, g.tq),
    );
    let scaled = |n, s| -> Vec<f32> { random_vec(n, s).iter().map(|v| 2.0 * v).collect() };
    let (q, k, v) = (scaled(nq, seed), scaled(nk, seed + 1), scaled(nv, seed + 2));
    let d_o = random_vec(no, seed + 3);
    // A padding mask with about a third hidden, and query 0 of sequence 0 seeing nothing.
    let mask: Vec<f32> = random_vec(g.mask_len(), seed + 4)
        .iter()
        .enumerate()
        .map(|(i, &r)| if i < g.tk || r < -0.33 { 0.0 } else { 1.0 })
        .collect();
    let mask_ref = c.masked.then_some(&mask[..]);
    let p_want = reference::attention_probs(&g, &q, &k, mask_ref);
    let o_want = reference::attention_output(&g, &p_want, &v);
    let (dq_want, dk_want, dv_want) =
        reference::attention_general_backward(&g, &p_want, &q, &k, &v, &d_o);

    // Packed: one buffer holds q, k and v (q's values copied over k's layout: same stride).
    let packed: Vec<f32> = (0..if c.packed { nq } else { 0 })
        .map(|i| {
            let col = i % g.q.stride;
            if col >= g.q.off && col < g.q.off + g.heads * g.dk {
                q[i]
            } else if col >= g.k.off && col < g.k.off + g.heads * g.dk {
                k[i]
            } else {
                v[i]
            }
        })
        .collect();
    let bufs: Vec<Tensor> = if c.packed {
        vec![up(dev, &packed)]
    } else {
        vec![up(dev, &q), up(dev, &k), up(dev, &v)]
    };
    let (qb, kb, vb) = if c.packed {
        (&bufs[0], &bufs[0], &bufs[0])
    } else {
        (&bufs[0], &bufs[1], &bufs[2])
    };
    let grads: Vec<Tensor> = if c.packed {
        vec![nan(dev, nq)]
    } else {
        vec![nan(dev, nq), nan(dev, nk), nan(dev, nv)]
    };
    let (dqb, dkb, dvb) = if c.packed {
        (&grads[0], &grads[0], &grads[0])
    } else {
        (&grads[0], &grads[1], &grads[2])
    };
    let mask_t = up(dev, &mask);
    let (probs, o, dp) = (
        nan(dev, g.probs_len()),
        nan(dev, no),
        nan(dev, g.probs_len()),
    );
    let d_ot = up(dev, &d_o);
    let m = c.masked.then_some(mask_t.buffer());

    let mut rec = Recorder::new(dev);
    un::probs(&mut rec, &g, qb.buffer(), kb.buffer(), m, probs.buffer()).unwrap();
    un::output(&mut rec, &g, probs.buffer(), vb.buffer(), o.buffer()).unwrap();
    rec.submit().unwrap();
    assert_rel_l2(
        &format!("P {what}"),
        &probs.to_vec().unwrap(),
        &p_want,
        1e-5,
    );
    let o_got = o.to_vec().unwrap();
    assert_rel_l2(
        &format!("O {what}"),
        &dense(&g, &o_got, &g.o, g.tq, g.dv),
        &o_want,
        1e-5,
    );
    let ev = g.heads * g.dv;
    let o_cols = [(g.o, ev)];
    let out_o = outside(no, &o_cols);
    assert!(
        (0..no).filter(|&i| out_o(i)).all(|i| o_got[i].is_nan()),
        "{what}: O wrote other columns"
    );

    let mut rec = Recorder::new(dev);
    let (p, vv) = (probs.buffer(), vb.buffer());
    un::backward_v(
        &mut rec,
        &g,
        p,
        vv,
        d_ot.buffer(),
        dvb.buffer(),
        dp.buffer(),
    )
    .unwrap();
    un::backward_qk(
        &mut rec,
        &g,
        p,
        dp.buffer(),
        qb.buffer(),
        kb.buffer(),
        dqb.buffer(),
        dkb.buffer(),
    )
    .unwrap();
    rec.submit().unwrap();
    let (dq, dk, dv) = (
        dqb.to_vec().unwrap(),
        dkb.to_vec().unwrap(),
        dvb.to_vec().unwrap(),
    );
    let tol = 1e-4;
    assert_rel_l2(
        &format!("dQ {what}"),
        &dense(&g, &dq, &g.q, g.tq, g.dk),
        &dq_want,
        tol,
    );
    assert_rel_l2(
        &format!("dK {what}"),
        &dense(&g, &dk, &g.k, g.tk, g.dk),
        &dk_want,
        tol,
    );
    assert_rel_l2(
        &format!("dV {what}"),
        &dense(&g, &dv, &g.v, g.tk, g.dv),
        &dv_want,
        tol,
    );
    // Columns of the gradients' rows that no operand covers stay NaN.
    let ek = g.heads * g.dk;
    let checks: Vec<(&[f32], Cols)> = if c.packed {
        vec![(&dq, vec![(g.q, ek), (g.k, ek), (g.v, ev)])]
    } else {
        vec![
            (&dq, vec![(g.q, ek)]),
            (&dk, vec![(g.k, ek)]),
            (&dv, vec![(g.v, ev)]),
        ]
    };
    for (x, ops) in checks {
        let out = outside(x.len(), &ops);
        assert!(
            (0..x.len()).filter(|&i| out(i)).all(|i| x[i].is_nan()),
            "{what}: a gradient wrote other columns"
        );
    }
}

#[test]
fn unfused_attention_matches_the_f64_definition() {
    let dev = dev_or_skip!();
    let mut seed = 10;
    let cases = [
        // (batch, heads, tq, tk, dk, dv, causal, masked, packed)
        (1, 1, 1, 1, 16, 16, false, false, true),
        (5, 3, 7, 7, 24, 24, true, false, true),
        (1, 4, 65, 65, 64, 64, false, true, true),
        (5, 3, 65, 65, 16, 16, true, true, true),
        (1, 4, 65, 7, 16, 24, false, true, false),
        (5, 1, 7, 65, 64, 16, true, true, false),
        (1, 3, 257, 7, 24, 64, true, false, false),
        (1, 1, 7, 257, 16, 24, false, true, false),
        (1, 1, 257, 257, 16, 16, true, false, true),
        (5, 4, 1, 7, 24, 16, false, false, false),
    ];
    for (batch, heads, tq, tk, dk, dv, causal, masked, packed) in cases {
        seed += 10;
        let c = Case {
            batch,
            heads,
            tq,
            tk,
            dk,
            dv,
            causal,
            masked,
            packed,
        };
        check(&dev, &c, seed);
    }
}

#[test]
fn head_sizes_past_the_fused_limit() {
    let dev = dev_or_skip!();
    let cases = [
        (160, 160, 7, 7, true),
        (256, 24, 7, 33, false),
        (24, 256, 33, 7, false),
    ];
    for (i, (dk, dv, tq, tk, packed)) in cases.into_iter().enumerate() {
        let c = Case {
            batch: 2,
            heads: 2,
            tq,
            tk,
            dk,
            dv,
            causal: i != 1,
            masked: i == 1,
            packed,
        };
        check(&dev, &c, 300 + i as u64);
    }
    // The fused kernels refuse them.
    let s = Shape::packed(1, 7, 2, MAX_HEAD_SIZE + 32, false);
    let x = nan(&dev, s.qkv_len());
    let (o, lse) = (nan(&dev, s.o_len()), nan(&dev, s.lse_len()));
    let mut rec = Recorder::new(&dev);
    let r = attention::forward(&mut rec, &s, x.buffer(), o.buffer(), lse.buffer());
    assert!(matches!(r, Err(Error::InvalidArgument { .. })), "{r:?}");
}

/// The fused kernels and the unfused path on the shapes both take: the same output and
/// gradients within f32 rounding.
#[test]
fn fused_equals_unfused() {
    let dev = dev_or_skip!();
    for (i, &(batch, t, heads, d, causal)) in [
        (2, 33, 2, 32, true),
        (1, 64, 4, 16, false),
        (3, 7, 1, 128, true),
    ]
    .iter()
    .enumerate()
    {
        let s = Shape::packed(batch, t, heads, d, causal);
        let g = General::packed(batch, t, heads, d, causal);
        let qkv = up(&dev, &random_vec(s.qkv_len(), 70 + i as u64));
        let d_o = up(&dev, &random_vec(s.o_len(), 80 + i as u64));
        let (o_f, lse, delta, dqkv_f) = (
            nan(&dev, s.o_len()),
            nan(&dev, s.lse_len()),
            nan(&dev, s.lse_len()),
            nan(&dev, s.qkv_len()),
        );
        let (o_u, dqkv_u) = (nan(&dev, s.o_len()), nan(&dev, s.qkv_len()));
        let (p, dp) = (nan(&dev, g.probs_len()), nan(&dev, g.probs_len()));
        let x = qkv.buffer();
        let mut rec = Recorder::new(&dev);
        attention::forward(&mut rec, &s, x, o_f.buffer(), lse.buffer()).unwrap();
        attention::backward(
            &mut rec,
            &s,
            x,
            o_f.buffer(),
            d_o.buffer(),
            lse.buffer(),
            delta.buffer(),
            dqkv_f.buffer(),
        )
        .unwrap();
        un::probs(&mut rec, &g, x, x, None, p.buffer()).unwrap();
        un::output(&mut rec, &g, p.buffer(), x, o_u.buffer()).unwrap();
        let (dd, gu) = (d_o.buffer(), dqkv_u.buffer());
        un::backward_v(&mut rec, &g, p.buffer(), x, dd, gu, dp.buffer()).unwrap();
        un::backward_qk(&mut rec, &g, p.buffer(), dp.buffer(), x, x, gu, gu).unwrap();
        rec.submit().unwrap();
        let f64s =
            |t: &Tensor| -> Vec<f64> { t.to_vec().unwrap().iter().map(|&v| v as f64).collect() };
        assert_rel_l2(
            &format!("O {s:?}"),
            &o_u.to_vec().unwrap(),
            &f64s(&o_f),
            2e-5,
        );
        assert_rel_l2(
            &format!("dQKV {s:?}"),
            &dqkv_u.to_vec().unwrap(),
            &f64s(&dqkv_f),
            1e-4,
        );
    }
}

#[test]
fn bad_shapes_are_typed_errors() {
    let dev = dev_or_skip!();
    let good = General::packed(2, 7, 2, 16, true);
    let t = nan(&dev, 4096);
    let b = t.buffer();
    let bads = [
        General { tq: 0, ..good },
        General { dv: 0, ..good },
        General {
            q: Operand {
                stride: 60,
                off: 40,
            },
            ..good
        },
        General {
            o: Operand { stride: 31, off: 0 },
            ..good
        },
        General {
            batch: 70_000,
            ..good
        },
    ];
    let mut rec = Recorder::new(&dev);
    for g in bads {
        assert!(
            matches!(g.check(), Err(Error::InvalidArgument { .. })),
            "{g:?}"
        );
        let r = un::probs(&mut rec, &g, b, b, None, b);
        assert!(
            matches!(r, Err(Error::InvalidArgument { .. })),
            "{g:?}: {r:?}"
        );
    }
    // A mask exactly when `masked`.
    let r = un::probs(&mut rec, &good, b, b, Some(b), b);
    assert!(matches!(r, Err(Error::InvalidArgument { .. })), "{r:?}");
    let masked = General {
        masked: true,
        ..good
    };
    let r = un::probs(&mut rec, &masked, b, b, None, b);
    assert!(matches!(r, Err(Error::InvalidArgument { .. })), "{r:?}");
}

/// The path choice: shapes the fused kernels cannot take are unfused without tuning; the
/// others are tuned once (a choice either way, then cached), forced by `SUANLI_ATTENTION`,
/// and never tuned inside a capture.
#[test]
fn the_path_choice() {
    let dev = dev_or_skip!();
    let good = General::packed(1, 7, 2, 16, true);
    let unfusable = [
        General {
            masked: true,
            ..good
        },
        General { tk: 9, ..good },
        General { dv: 8, ..good },
        General::packed(1, 7, 1, MAX_HEAD_SIZE + 32, false),
        General {
            q: Operand {
                stride: 100,
                off: 0,
            },
            ..good
        },
    ];
    for g in unfusable {
        assert!(attention_tune::fused_shape(&g).is_none(), "{g:?}");
        assert_eq!(
            attention_tune::prepare(&dev, &g).unwrap(),
            Path::Unfused,
            "{g:?}"
        );
    }
    // A fresh device (its own tuning cache, in memory): nothing chosen, so a capture refuses.
    let own = common::own_device(None).unwrap();
    let g = General::packed(1, 5, 2, 16, false);
    assert!(attention_tune::chosen(&own, &g).is_none());
    let cap = Capture::new(&own);
    let r = attention_tune::choose(&cap, &g);
    assert!(matches!(r, Err(Error::Internal { .. })), "{r:?}");
    drop(cap);
    let p = attention_tune::prepare(&own, &g).unwrap();
    assert_eq!(attention_tune::chosen(&own, &g), Some(p));
    let cap = Capture::new(&own);
    assert_eq!(attention_tune::choose(&cap, &g).unwrap(), p);
    assert_eq!(
        attention_tune::fused_shape(&g),
        Some(Shape::packed(1, 5, 2, 16, false))
    );
}

#[test]
fn suanli_attention_forces_the_path() {
    let Some(_) = common::device() else { return };
    let spec = std::env::var("SUANLI_TEST_DEVICE").unwrap_or_else(|_| "auto".into());
    for (value, want) in [
        ("unfused", Some(Path::Unfused)),
        ("fused", Some(Path::Fused)),
        ("both", None),
    ] {
        let config = suanli::Config {
            device: Some(spec.parse().unwrap()),
            attention: Some(value.into()),
            cache_dir: None,
            ..suanli::Config::from_env().unwrap()
        };
        let dev = Device::with_config(&config).unwrap();
        let g = General::packed(2, 9, 1, 24, true);
        match want {
            Some(p) => assert_eq!(attention_tune::prepare(&dev, &g).unwrap(), p),
            None => {
                let r = attention_tune::prepare(&dev, &g);
                assert!(matches!(r, Err(Error::Config { .. })), "{r:?}");
            }
        }
    }
}
