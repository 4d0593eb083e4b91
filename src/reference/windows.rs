//! The windows of `shaders/windows.wgsl`, on the host: the same counter-based draw of each
//! window's start (lowbias32, [`crate::reference::hash32`], dropout's hash), the inputs and targets as f64.

use crate::reference::dropout::hash32;

/// The start of row `row`'s window at step `step` of the stream seeded by `seed`, among
/// `starts` valid starts (`n − block` for `n` tokens): the kernel's draw, bit for bit.
pub fn window_start(seed: u64, step: u64, row: u32, starts: u32) -> u32 {
    let k_seed = hash32(seed as u32 ^ hash32((seed >> 32) as u32));
    let k_step = hash32(step as u32 ^ hash32((step >> 32) as u32 ^ k_seed));
    hash32(row ^ hash32(k_step)) % starts
}

/// Rows `row0..row0 + batch` of step `step`'s windows of `block` tokens from `tokens`:
/// (inputs, targets), `batch × block` each, row-major; the targets are the inputs one token
/// on.
pub fn windows(
    tokens: &[u32],
    seed: u64,
    step: u64,
    row0: u32,
    batch: usize,
    block: usize,
) -> (Vec<f64>, Vec<f64>) {
    let starts = (tokens.len() - block) as u32;
    let (mut x, mut y) = (Vec::new(), Vec::new());
    for r in 0..batch as u32 {
        let s = window_start(seed, step, row0 + r, starts) as usize;
        x.extend(tokens[s..s + block].iter().map(|&t| t as f64));
        y.extend(tokens[s + 1..s + block + 1].iter().map(|&t| t as f64));
    }
    (x, y)
}
