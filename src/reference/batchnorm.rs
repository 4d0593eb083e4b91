//! Batch normalisation over the channels (last axis) of a (rows, c) tensor, in f64 with the
//! two-pass variance: training (batch statistics, biased variance as Keras normalises with),
//! inference (moving statistics), and the gradients.

/// Per-channel mean and biased variance.
pub fn moments(x: &[f32], rows: usize, c: usize) -> (Vec<f64>, Vec<f64>) {
    let mut mean = vec![0.0; c];
    for r in 0..rows {
        for ch in 0..c {
            mean[ch] += x[r * c + ch] as f64 / rows as f64;
        }
    }
    let mut var = vec![0.0; c];
    for r in 0..rows {
        for ch in 0..c {
            let d = x[r * c + ch] as f64 - mean[ch];
            var[ch] += d * d / rows as f64;
        }
    }
    (mean, var)
}

/// `γ·(x − mean)/√(var + ε) + β` with the given statistics (γ = 1, β = 0 when absent).
pub fn batchnorm(
    x: &[f32],
    c: usize,
    gamma: Option<&[f32]>,
    beta: Option<&[f32]>,
    mean: &[f64],
    var: &[f64],
    eps: f64,
) -> Vec<f64> {
    x.iter()
        .enumerate()
        .map(|(i, &v)| {
            let ch = i % c;
            let g = gamma.map_or(1.0, |g| g[ch] as f64);
            let b = beta.map_or(0.0, |b| b[ch] as f64);
            g * (v as f64 - mean[ch]) / (var[ch] + eps).sqrt() + b
        })
        .collect()
}

/// The training pass's gradients: `(dx, dγ, dβ)` from `dy`, with the batch's statistics.
pub fn batchnorm_backward(
    dy: &[f32],
    x: &[f32],
    rows: usize,
    c: usize,
    gamma: Option<&[f32]>,
    eps: f64,
) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let (mean, var) = moments(x, rows, c);
    let xhat = |i: usize| (x[i] as f64 - mean[i % c]) / (var[i % c] + eps).sqrt();
    let (mut dgamma, mut dbeta) = (vec![0.0; c], vec![0.0; c]);
    for i in 0..rows * c {
        dgamma[i % c] += dy[i] as f64 * xhat(i);
        dbeta[i % c] += dy[i] as f64;
    }
    let m = rows as f64;
    let dx = (0..rows * c)
        .map(|i| {
            let ch = i % c;
            let g = gamma.map_or(1.0, |g| g[ch] as f64);
            g / (var[ch] + eps).sqrt() / m * (m * dy[i] as f64 - dbeta[ch] - xhat(i) * dgamma[ch])
        })
        .collect();
    (dx, dgamma, dbeta)
}
