//! Scaled dot-product attention over a packed QKV tensor, in f64: the unfused definition
//! (scores, masked softmax, weighted sum) the fused kernels must match, and its gradients.

/// Where the values of an attention live (the kernel's `Shape`, restated for the
/// reference): `batch` sequences of `t` rows, `heads` heads of size `d`, queries, keys and
/// values at `offsets` in rows of `stride`, the output in rows of `o_stride`.
#[derive(Clone, Copy, Debug)]
pub struct AttnShape {
    /// Sequences.
    pub batch: usize,
    /// Rows per sequence.
    pub t: usize,
    /// Heads.
    pub heads: usize,
    /// Head size.
    pub d: usize,
    /// Key j seen by queries i ≥ j only.
    pub causal: bool,
    /// Floats per QKV row.
    pub stride: usize,
    /// Offsets of q, k, v in a row.
    pub offsets: [usize; 3],
    /// Floats per output row.
    pub o_stride: usize,
    /// The scores' multiplier.
    pub scale: f64,
}

impl AttnShape {
    fn at(&self, qkv: &[f32], which: usize, b: usize, t: usize, h: usize, d: usize) -> f64 {
        f64::from(qkv[(b * self.t + t) * self.stride + self.offsets[which] + h * self.d + d])
    }

    /// The probabilities of query i of (b, h): softmax of its visible scores (0 elsewhere).
    fn probs(&self, qkv: &[f32], b: usize, h: usize, i: usize) -> Vec<f64> {
        let seen = |j: usize| !self.causal || j <= i;
        let s: Vec<f64> = (0..self.t)
            .map(|j| {
                (0..self.d)
                    .map(|d| self.at(qkv, 0, b, i, h, d) * self.at(qkv, 1, b, j, h, d))
                    .sum::<f64>()
                    * self.scale
            })
            .collect();
        let m = (0..self.t)
            .filter(|&j| seen(j))
            .map(|j| s[j])
            .fold(f64::MIN, f64::max);
        let e: Vec<f64> = (0..self.t)
            .map(|j| if seen(j) { (s[j] - m).exp() } else { 0.0 })
            .collect();
        let sum: f64 = e.iter().sum();
        e.iter().map(|v| v / sum).collect()
    }
}

/// The output (batch, t, o_stride; columns past heads·d are 0) and the log-sum-exp of each
/// row's scores (batch, heads, t).
pub fn attention(s: &AttnShape, qkv: &[f32]) -> (Vec<f64>, Vec<f64>) {
    let mut o = vec![0.0; s.batch * s.t * s.o_stride];
    let mut lse = vec![0.0; s.batch * s.heads * s.t];
    for b in 0..s.batch {
        for h in 0..s.heads {
            for i in 0..s.t {
                let p = s.probs(qkv, b, h, i);
                for d in 0..s.d {
                    o[(b * s.t + i) * s.o_stride + h * s.d + d] =
                        (0..s.t).map(|j| p[j] * s.at(qkv, 2, b, j, h, d)).sum();
                }
                let sc: Vec<f64> = (0..=if s.causal { i } else { s.t - 1 })
                    .map(|j| {
                        (0..s.d)
                            .map(|d| s.at(qkv, 0, b, i, h, d) * s.at(qkv, 1, b, j, h, d))
                            .sum::<f64>()
                            * s.scale
                    })
                    .collect();
                let m = sc.iter().cloned().fold(f64::MIN, f64::max);
                lse[(b * s.heads + h) * s.t + i] =
                    m + sc.iter().map(|v| (v - m).exp()).sum::<f64>().ln();
            }
        }
    }
    (o, lse)
}

/// The gradient of Σ d_o·O with respect to the QKV tensor (laid out as it; columns no
/// offset covers are 0).
pub fn attention_backward(s: &AttnShape, qkv: &[f32], d_o: &[f32]) -> Vec<f64> {
    let mut g = vec![0.0; s.batch * s.t * s.stride];
    let gi = |b: usize, t: usize, which: usize, h: usize, d: usize| {
        (b * s.t + t) * s.stride + s.offsets[which] + h * s.d + d
    };
    for b in 0..s.batch {
        for h in 0..s.heads {
            for i in 0..s.t {
                let p = s.probs(qkv, b, h, i);
                let go = |d: usize| f64::from(d_o[(b * s.t + i) * s.o_stride + h * s.d + d]);
                // dp_j = dO_i·v_j; ds_j = p_j (dp_j − Σ_k p_k dp_k).
                let dp: Vec<f64> = (0..s.t)
                    .map(|j| (0..s.d).map(|d| go(d) * s.at(qkv, 2, b, j, h, d)).sum())
                    .collect();
                let mean: f64 = (0..s.t).map(|j| p[j] * dp[j]).sum();
                for j in 0..s.t {
                    let ds = p[j] * (dp[j] - mean) * s.scale;
                    for d in 0..s.d {
                        g[gi(b, j, 2, h, d)] += p[j] * go(d);
                        g[gi(b, i, 0, h, d)] += ds * s.at(qkv, 1, b, j, h, d);
                        g[gi(b, j, 1, h, d)] += ds * s.at(qkv, 0, b, i, h, d);
                    }
                }
            }
        }
    }
    g
}
