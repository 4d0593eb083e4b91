//! The token draw of `shaders/sample.wgsl`, in f64: nanoGPT's rule (temperature, top-k with
//! ties kept, softmax, one draw) with the kernel's uniform.

/// PCG's output hash, as the kernel has it.
fn pcg(v: u32) -> u32 {
    let state = v.wrapping_mul(747796405).wrapping_add(2891336453);
    let word = ((state >> ((state >> 28) + 4)) ^ state).wrapping_mul(277803737);
    (word >> 22) ^ word
}

/// The kernel's uniform in [0, 1) for draw `step` with `seed` (24 bits, exact in f32).
pub fn sample_uniform(seed: u64, step: u32) -> f64 {
    let r = pcg(pcg(pcg(seed as u32) ^ (seed >> 32) as u32) ^ step);
    (r >> 8) as f64 / 16_777_216.0
}

/// What the kernel may draw from `logits` with uniform `u`: the token whose interval of the
/// cumulative distribution (in index order) holds `u`, and that interval, `(token, low,
/// high)` as fractions of the total. Greedy (`temperature` 0 or `top_k` 1): the largest
/// logit, the lowest index on ties, with the interval (0, 1).
pub fn sample_token(
    logits: &[f32],
    temperature: f32,
    top_k: Option<usize>,
    u: f64,
) -> (usize, f64, f64) {
    let mut arg = 0;
    for (i, &x) in logits.iter().enumerate() {
        if x > logits[arg] {
            arg = i;
        }
    }
    let k = top_k.unwrap_or(logits.len()).min(logits.len());
    if temperature <= 0.0 || k == 1 {
        return (arg, 0.0, 1.0);
    }
    let mut sorted: Vec<f32> = logits.to_vec();
    sorted.sort_by(|a, b| b.total_cmp(a));
    let kth = sorted[k - 1];
    let m = logits[arg] as f64;
    let w: Vec<f64> = logits
        .iter()
        .map(|&x| {
            if x >= kth {
                ((x as f64 - m) / temperature as f64).exp()
            } else {
                0.0
            }
        })
        .collect();
    let total: f64 = w.iter().sum();
    let mut acc = 0.0;
    let mut last = arg;
    for (i, &wi) in w.iter().enumerate() {
        if wi == 0.0 {
            continue;
        }
        last = i;
        if (acc + wi) / total > u {
            return (i, acc / total, (acc + wi) / total);
        }
        acc += wi;
    }
    (last, acc / total - w[last] / total, 1.0)
}
