// A language model's batch drawn on the device from a text resident there: `batch` random
// windows of `block + 1` tokens, the first `block` as inputs and the last `block` as targets
// (the next token at every position), both written as f32 ids, as the model's inputs and the
// sparse cross-entropy's labels read them.
//
//   k_seed = hash32(seed_lo ^ hash32(seed_hi))
//   k_step = hash32(step_lo ^ hash32(step_hi ^ k_seed))
//   start(r) = hash32((row0 + r) ^ hash32(k_step)) % starts          (starts = n − block)
//   x[r, j] = tokens[start(r) + j],  y[r, j] = tokens[start(r) + j + 1]
//
// A counter-based generator: the window of row r at step s is a pure function of (seed, s,
// row0 + r), so nothing is uploaded per step but the uniform, a resumed run draws the same
// windows, and the slices of a batch that other devices or processes train draw their own
// rows. hash32 is Chris Wellons's "lowbias32", elementwise.wgsl's dropout hash, a bijection of
// u32: distinct steps of one seed give distinct stream keys. The modulo's bias is below
// starts / 2^32 (2.6e-4 of a draw's probability for Tiny Shakespeare's million starts).
// `src/reference/windows.rs` is the host's copy, bit for bit.
//
// Tokens are u32 words: four bytes each (little-endian) when `packed` is 1 (a vocabulary
// below 256), one id each otherwise. One invocation per (row, position): x over positions,
// y over rows.
//
// Bindings: tokens (read-only), x, y (read-write), params.

struct Params {
    seed_lo: u32,
    seed_hi: u32,
    step_lo: u32,
    step_hi: u32,
    // The first row's number (the batch's offset in the epoch).
    row0: u32,
    batch: u32,
    block: u32,
    // Valid window starts: n − block, at least 1.
    starts: u32,
    packed: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

@group(0) @binding(0) var<storage, read> tokens: array<u32>;
@group(0) @binding(1) var<storage, read_write> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;
@group(0) @binding(3) var<uniform> p: Params;

fn hash32(v: u32) -> u32 {
    var h = v;
    h = h ^ (h >> 16u);
    h = h * 0x7feb352du;
    h = h ^ (h >> 15u);
    h = h * 0x846ca68bu;
    h = h ^ (h >> 16u);
    return h;
}

fn token(i: u32) -> u32 {
    if (p.packed == 1u) {
        return (tokens[i >> 2u] >> ((i & 3u) * 8u)) & 0xffu;
    }
    return tokens[i];
}

@compute @workgroup_size(64)
fn windows_forward(@builtin(global_invocation_id) gid: vec3<u32>) {
    let j = gid.x;
    let r = gid.y;
    if (j >= p.block || r >= p.batch) {
        return;
    }
    let k_seed = hash32(p.seed_lo ^ hash32(p.seed_hi));
    let k_step = hash32(p.step_lo ^ hash32(p.step_hi ^ k_seed));
    let start = hash32((p.row0 + r) ^ hash32(k_step)) % p.starts;
    let at = r * p.block + j;
    x[at] = f32(token(start + j));
    y[at] = f32(token(start + j + 1u));
}
