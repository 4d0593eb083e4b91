//! Row-wise reductions, softmax and the sparse cross-entropy, and the per-column
//! normalisation.

/// Keras's Normalization: `(x[r, c] − mean[c]) / max(sqrt(var[c]), 1e-7)`.
pub fn normalize(x: &[f32], mean: &[f32], var: &[f32], cols: usize) -> Vec<f64> {
    x.iter()
        .enumerate()
        .map(|(i, &v)| {
            let c = i % cols;
            (v as f64 - mean[c] as f64) / (var[c] as f64).sqrt().max(1e-7)
        })
        .collect()
}

/// Per-row sums of (rows, cols).
pub fn sum_rows(x: &[f32], rows: usize, cols: usize) -> Vec<f64> {
    (0..rows)
        .map(|r| x[r * cols..(r + 1) * cols].iter().map(|&v| v as f64).sum())
        .collect()
}

/// Per-column sums of (rows, cols).
pub fn sum_cols(x: &[f32], rows: usize, cols: usize) -> Vec<f64> {
    (0..cols)
        .map(|c| (0..rows).map(|r| x[r * cols + c] as f64).sum())
        .collect()
}

/// Per-row max and first argmax.
pub fn max_rows(x: &[f32], rows: usize, cols: usize) -> (Vec<f64>, Vec<usize>) {
    let mut mx = Vec::with_capacity(rows);
    let mut am = Vec::with_capacity(rows);
    for r in 0..rows {
        let row = &x[r * cols..(r + 1) * cols];
        let mut best = 0;
        for (i, &v) in row.iter().enumerate() {
            if v > row[best] {
                best = i;
            }
        }
        mx.push(row[best] as f64);
        am.push(best);
    }
    (mx, am)
}

/// Row-wise softmax (or log-softmax) in f64.
pub fn softmax(x: &[f32], rows: usize, cols: usize, log: bool) -> Vec<f64> {
    let mut out = vec![0.0; rows * cols];
    for r in 0..rows {
        let row = &x[r * cols..(r + 1) * cols];
        let m = row.iter().fold(f64::NEG_INFINITY, |a, &v| a.max(v as f64));
        let s: f64 = row.iter().map(|&v| (v as f64 - m).exp()).sum();
        for c in 0..cols {
            let z = row[c] as f64 - m;
            out[r * cols + c] = if log { z - s.ln() } else { z.exp() / s };
        }
    }
    out
}

/// Sparse categorical cross-entropy from logits: per-row losses and `(softmax − onehot)·scale`.
pub fn xent(
    x: &[f32],
    labels: &[u32],
    rows: usize,
    cols: usize,
    scale: f64,
) -> (Vec<f64>, Vec<f64>) {
    let sm = softmax(x, rows, cols, false);
    let ls = softmax(x, rows, cols, true);
    let mut loss = vec![0.0; rows];
    let mut grad = vec![0.0; rows * cols];
    for r in 0..rows {
        let y = labels[r] as usize;
        loss[r] = -ls[r * cols + y];
        for c in 0..cols {
            grad[r * cols + c] = (sm[r * cols + c] - (c == y) as u8 as f64) * scale;
        }
    }
    (loss, grad)
}
