// Batch gather from a device-resident u8 dataset, scaled to f32:
//   out[b, j] = f32(data[(indices[offset + b]) * row_len + j]) * scale
// `data` is the dataset's bytes packed four to a u32 (little-endian), so 60,000 MNIST images
// stay 47 MB on the device instead of 188 MB as f32. Labels are gathered with row_len = 1 and
// scale = 1. Indices are u32 (an epoch's permutation, uploaded once per epoch).
//
// gather_f32_forward does the same from an f32 dataset (no scaling but `scale`).
//
// Bindings: data, indices (read-only), out (read-write), params.

struct Params {
    batch: u32,
    row_len: u32,
    offset: u32,
    scale: f32,
}

@group(0) @binding(0) var<storage, read> data: array<u32>;
@group(0) @binding(1) var<storage, read> indices: array<u32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;
@group(0) @binding(3) var<uniform> p: Params;


// The grid is 2-D: x covers a row's elements, y the batch rows (no per-element division,
// which llvmpipe runs one lane at a time).
@compute @workgroup_size(256)
fn gather_forward(@builtin(global_invocation_id) gid: vec3<u32>) {
    let j = gid.x;
    let b = gid.y;
    if (j >= p.row_len || b >= p.batch) {
        return;
    }
    let i = b * p.row_len + j;
    let byte_index = indices[p.offset + b] * p.row_len + j;
    let word = data[byte_index / 4u];
    let value = (word >> ((byte_index % 4u) * 8u)) & 0xffu;
    out[i] = f32(value) * p.scale;
}

@group(0) @binding(0) var<storage, read> data_f32: array<f32>;

@compute @workgroup_size(256)
fn gather_f32_forward(@builtin(global_invocation_id) gid: vec3<u32>) {
    let j = gid.x;
    let b = gid.y;
    if (j >= p.row_len || b >= p.batch) {
        return;
    }
    out[b * p.row_len + j] = data_f32[indices[p.offset + b] * p.row_len + j] * p.scale;
}

// Four bytes per invocation when a row is a whole number of u32 words (row_len % 4 == 0, as
// MNIST's 784): one word load and one 16-byte store instead of four of each.
@group(0) @binding(2) var<storage, read_write> out4: array<vec4<f32>>;

@compute @workgroup_size(256)
fn gather_u8x4_forward(@builtin(global_invocation_id) gid: vec3<u32>) {
    let w = gid.x; // word within the row
    let b = gid.y;
    let words = p.row_len / 4u;
    if (w >= words || b >= p.batch) {
        return;
    }
    let word = data[indices[p.offset + b] * words + w];
    let bytes = vec4<u32>(word & 0xffu, (word >> 8u) & 0xffu, (word >> 16u) & 0xffu, word >> 24u);
    out4[b * words + w] = vec4<f32>(bytes) * p.scale;
}

// gather_u8x4_forward and the batch's targets in one dispatch (a training step's gather):
// invocation (w, b) writes word w of row b's pixels when w < row_len / 4, and target w of
// row b when w < target_len (the grid covers the larger of the two).
// Bindings: data, indices, targets (read-only), x (vec4), y (read-write), params.
struct PairParams {
    x: Params,
    target_len: u32,
    _p1: u32,
    _p2: u32,
    _p3: u32,
}

@group(0) @binding(2) var<storage, read> pair_targets: array<f32>;
@group(0) @binding(3) var<storage, read_write> pair_x: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read_write> pair_y: array<f32>;
@group(0) @binding(5) var<uniform> pair_p: PairParams;

@compute @workgroup_size(256)
fn gather_u8x4_pair_forward(@builtin(global_invocation_id) gid: vec3<u32>) {
    let w = gid.x;
    let b = gid.y;
    if (b >= pair_p.x.batch) {
        return;
    }
    let row = indices[pair_p.x.offset + b];
    let words = pair_p.x.row_len / 4u;
    if (w < words) {
        let word = data[row * words + w];
        let bytes = vec4<u32>(word & 0xffu, (word >> 8u) & 0xffu, (word >> 16u) & 0xffu, word >> 24u);
        pair_x[b * words + w] = vec4<f32>(bytes) * pair_p.x.scale;
    }
    let tl = pair_p.target_len;
    if (w < tl) {
        pair_y[b * tl + w] = pair_targets[row * tl + w];
    }
}
