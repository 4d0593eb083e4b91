//! The merge layers of graph models: element-wise maximum with its gradient (ties go to the
//! earliest input), and concatenation along an axis with its gradient.

/// `max(a, b)` element by element.
pub fn maximum(a: &[f32], b: &[f32]) -> Vec<f64> {
    a.iter()
        .zip(b)
        .map(|(&x, &y)| f64::from(if x >= y { x } else { y }))
        .collect()
}

/// The gradients of `y = max(x₀, x₁, …)` (folded left to right) from `dy`: each element's
/// gradient goes to the earliest input that holds the maximum.
pub fn maximum_backward(xs: &[&[f32]], dy: &[f32]) -> Vec<Vec<f64>> {
    let n = dy.len();
    let mut out = vec![vec![0.0; n]; xs.len()];
    for i in 0..n {
        let mut best = 0;
        for (k, x) in xs.iter().enumerate() {
            if x[i] > xs[best][i] {
                best = k;
            }
        }
        out[best][i] = f64::from(dy[i]);
    }
    out
}

/// Concatenates tensors of shapes `shapes` (each with the batch first) along `axis`.
pub fn concatenate(xs: &[&[f32]], shapes: &[Vec<usize>], axis: usize) -> Vec<f64> {
    let blocks: usize = shapes[0][..axis].iter().product();
    let inner: Vec<usize> = shapes.iter().map(|s| s[axis..].iter().product()).collect();
    let mut out = Vec::new();
    for o in 0..blocks {
        for (x, &w) in xs.iter().zip(&inner) {
            out.extend(x[o * w..(o + 1) * w].iter().map(|&v| f64::from(v)));
        }
    }
    out
}

/// The gradients of [`concatenate`] from `dy`: each input's part of it.
pub fn concatenate_backward(dy: &[f32], shapes: &[Vec<usize>], axis: usize) -> Vec<Vec<f64>> {
    let blocks: usize = shapes[0][..axis].iter().product();
    let inner: Vec<usize> = shapes.iter().map(|s| s[axis..].iter().product()).collect();
    let outer: usize = inner.iter().sum();
    let mut out: Vec<Vec<f64>> = inner
        .iter()
        .map(|&w| Vec::with_capacity(blocks * w))
        .collect();
    for o in 0..blocks {
        let mut at = o * outer;
        for (k, &w) in inner.iter().enumerate() {
            out[k].extend(dy[at..at + w].iter().map(|&v| f64::from(v)));
            at += w;
        }
    }
    out
}
