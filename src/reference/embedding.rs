//! Keras's `Embedding`: rows of a table selected by ids, and the table's gradient (every
//! position's `dy` row added into the row its id selects). Ids are f32 as the layer reads
//! them; one outside `[0, rows)` (or NaN) selects nothing, a fractional one is truncated.

/// The row `x` selects in a table of `rows`, if any (`-0` is 0).
pub fn embedding_row(x: f32, rows: usize) -> Option<usize> {
    // NaN fails both comparisons.
    (x >= 0.0 && (x as f64) < rows as f64).then(|| x.trunc() as usize)
}

/// `out[i, e] = table[id_i, e]` (zeros for an id that selects nothing); `table` is
/// (rows, dim).
pub fn embedding(ids: &[f32], table: &[f32], rows: usize, dim: usize) -> Vec<f64> {
    let mut out = vec![0.0; ids.len() * dim];
    for (i, &x) in ids.iter().enumerate() {
        if let Some(v) = embedding_row(x, rows) {
            for e in 0..dim {
                out[i * dim + e] = f64::from(table[v * dim + e]);
            }
        }
    }
    out
}

/// The table's gradient from `dy` (positions, dim): `dtable[v, e] = Σ_{i : id_i = v} dy[i, e]`,
/// (rows, dim), zeros where no id selects a row.
pub fn embedding_backward(ids: &[f32], dy: &[f32], rows: usize, dim: usize) -> Vec<f64> {
    let mut g = vec![0.0; rows * dim];
    for (i, &x) in ids.iter().enumerate() {
        if let Some(v) = embedding_row(x, rows) {
            for e in 0..dim {
                g[v * dim + e] += f64::from(dy[i * dim + e]);
            }
        }
    }
    g
}
