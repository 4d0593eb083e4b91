//! The dropout mask and inverted dropout.

/// Chris Wellons's "lowbias32" integer hash, as `elementwise.wgsl` computes it.
pub fn hash32(v: u32) -> u32 {
    let mut x = v;
    x ^= x >> 16;
    x = x.wrapping_mul(0x7feb_352d);
    x ^= x >> 15;
    x = x.wrapping_mul(0x846c_a68b);
    x ^= x >> 16;
    x
}

/// Whether dropout with rate `p` and seed `seed` keeps element `i` (the kernel's mask).
pub fn dropout_keep(i: u32, p: f32, seed: u32) -> bool {
    let u = (hash32(i ^ hash32(seed)) >> 8) as f32 * (1.0 / 16_777_216.0);
    u >= p
}

/// Inverted dropout in f64: `x / (1 − p)` where kept, 0 elsewhere.
pub fn dropout(x: &[f64], p: f32, seed: u32) -> Vec<f64> {
    let scale = 1.0 / (1.0 - p) as f64;
    x.iter()
        .enumerate()
        .map(|(i, &v)| {
            if dropout_keep(i as u32, p, seed) {
                v * scale
            } else {
                0.0
            }
        })
        .collect()
}
