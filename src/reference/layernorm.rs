//! Layer normalisation over the last axis of a (rows, cols) tensor, in f64 with the
//! two-pass variance (biased, as Keras normalises with), and its gradients written out term
//! by term from the chain rule rather than from the kernel's folded formula.

/// Each row's mean and `1/√(σ² + ε)`.
pub fn layernorm_stats(x: &[f32], cols: usize, eps: f64) -> (Vec<f64>, Vec<f64>) {
    x.chunks(cols)
        .map(|row| {
            let n = cols as f64;
            let mean = row.iter().map(|&v| v as f64).sum::<f64>() / n;
            let var = row
                .iter()
                .map(|&v| (v as f64 - mean) * (v as f64 - mean))
                .sum::<f64>()
                / n;
            (mean, 1.0 / (var + eps).sqrt())
        })
        .unzip()
}

/// `γ·(x − μ)/√(σ² + ε) + β` per row (γ = 1, β = 0 when absent).
pub fn layernorm(
    x: &[f32],
    cols: usize,
    gamma: Option<&[f32]>,
    beta: Option<&[f32]>,
    eps: f64,
) -> Vec<f64> {
    let (mean, rstd) = layernorm_stats(x, cols, eps);
    x.iter()
        .enumerate()
        .map(|(i, &v)| {
            let (r, c) = (i / cols, i % cols);
            let g = gamma.map_or(1.0, |g| g[c] as f64);
            let b = beta.map_or(0.0, |b| b[c] as f64);
            g * (v as f64 - mean[r]) * rstd[r] + b
        })
        .collect()
}

/// The gradients `(dx, dγ, dβ)` from `dy`.
///
/// With `g = γ·dy`, `x̂ = (x − μ)·s` and `s = (σ² + ε)^(-1/2)`, a row's output depends on
/// `x_j` directly and through μ and σ²: `∂μ/∂x_j = 1/n`, `∂σ²/∂x_j = 2(x_j − μ)/n`, so
/// `dσ² = Σ_k g_k (x_k − μ)·(−s³/2)` and `dμ = −s·Σ_k g_k` (the term through σ² vanishes,
/// `Σ_k (x_k − μ) = 0`), and `dx_j = g_j·s + dσ²·2(x_j − μ)/n + dμ/n`.
pub fn layernorm_backward(
    dy: &[f32],
    x: &[f32],
    cols: usize,
    gamma: Option<&[f32]>,
    eps: f64,
) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let (mean, rstd) = layernorm_stats(x, cols, eps);
    let n = cols as f64;
    let (mut dgamma, mut dbeta) = (vec![0.0; cols], vec![0.0; cols]);
    let mut dx = vec![0.0; x.len()];
    for (r, (mu, s)) in mean.iter().zip(&rstd).enumerate() {
        let row = r * cols..(r + 1) * cols;
        let g = |j: usize| dy[j] as f64 * gamma.map_or(1.0, |g| g[j % cols] as f64);
        let dvar: f64 = row
            .clone()
            .map(|j| g(j) * (x[j] as f64 - mu) * -0.5 * s * s * s)
            .sum();
        let dmean: f64 = row.clone().map(|j| -s * g(j)).sum();
        for j in row {
            let d = x[j] as f64 - mu;
            dx[j] = g(j) * s + dvar * 2.0 * d / n + dmean / n;
            dgamma[j % cols] += dy[j] as f64 * d * s;
            dbeta[j % cols] += dy[j] as f64;
        }
    }
    (dx, dgamma, dbeta)
}
