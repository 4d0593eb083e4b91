//! The layer-level gradient check: any layer, its backward pass against central finite
//! differences of `L(x, θ) = Σ dy ⊙ forward(x, θ)` computed by running the layer's own forward
//! pass on the device (so it holds for every layer type with no reference of its own), at a
//! sample of coordinates of the input and of every trainable parameter.

use suanli::internals::LayerProbe;
use suanli::nn::IntoLayers;
use suanli::Device;

use super::random_vec;

/// `Σ dy ⊙ forward(x)` in f64.
fn objective(p: &LayerProbe, x: &[f32], batch: usize, dy: &[f32]) -> f64 {
    let y = p.forward(x, batch).unwrap();
    y.iter().zip(dy).map(|(&a, &b)| a as f64 * b as f64).sum()
}

/// Checks `layer` on samples of `input_shape`: `x` of `batch` samples (random when `None`),
/// a random `dy`, up to `coords` coordinates of the input and of each parameter, step `h`.
/// The error measure over the sampled coordinates is the relative L2 norm, below `tol`.
#[allow(clippy::too_many_arguments)] // a check's knobs, spelled out
pub fn check_layer(
    dev: &Device,
    what: &str,
    layer: impl IntoLayers,
    input_shape: &[usize],
    batch: usize,
    x: Option<Vec<f32>>,
    h: f32,
    tol: f64,
) {
    let p = LayerProbe::new(dev, layer, input_shape, 3).unwrap();
    let n_in: usize = batch * input_shape.iter().product::<usize>();
    let n_out: usize = batch * p.output_shape().iter().product::<usize>();
    let x = x.unwrap_or_else(|| random_vec(n_in, 11));
    let dy = random_vec(n_out, 12);
    let an = p.backward(&x, batch, &dy).unwrap();
    assert_eq!(an.dx.len(), n_in, "{what}: dx length");
    let coords = 24;
    // The input.
    let idx = sample(n_in, coords, 13);
    let fd: Vec<f64> = idx
        .iter()
        .map(|&i| {
            let (mut xp, mut xm) = (x.clone(), x.clone());
            xp[i] += h;
            xm[i] -= h;
            (objective(&p, &xp, batch, &dy) - objective(&p, &xm, batch, &dy)) / (2.0 * h as f64)
        })
        .collect();
    let got: Vec<f32> = idx.iter().map(|&i| an.dx[i]).collect();
    super::assert_rel_l2(&format!("{what}: dx vs finite differences"), &got, &fd, tol);
    // Every trainable parameter.
    let params = p.params().unwrap();
    for (k, theta) in params.iter().enumerate() {
        let idx = sample(theta.len(), coords, 14 + k as u64);
        let fd: Vec<f64> = idx
            .iter()
            .map(|&i| {
                let at = |d: f32| {
                    let mut q = params.clone();
                    q[k][i] += d;
                    p.set_params(&q).unwrap();
                    objective(&p, &x, batch, &dy)
                };
                let (lp, lm) = (at(h), at(-h));
                (lp - lm) / (2.0 * h as f64)
            })
            .collect();
        p.set_params(&params).unwrap();
        let got: Vec<f32> = idx.iter().map(|&i| an.params[k][i]).collect();
        super::assert_rel_l2(
            &format!("{what}: parameter {k} vs finite differences"),
            &got,
            &fd,
            tol,
        );
    }
}

/// Up to `k` distinct indices below `n`, seeded (all of them when `n ≤ k`).
fn sample(n: usize, k: usize, seed: u64) -> Vec<usize> {
    if n <= k {
        return (0..n).collect();
    }
    let mut rng = suanli::random::Rng::new(seed);
    let mut all: Vec<usize> = (0..n).collect();
    rng.shuffle(&mut all);
    all.truncate(k);
    all.sort_unstable();
    all
}
