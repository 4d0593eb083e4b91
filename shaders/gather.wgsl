// Batch gather from a device-resident u8 dataset, each byte v turned into a float:
//   out[b, j] = value(data[(indices[offset + b]) * row_len + j])
// `data` is the dataset's bytes packed four to a u32 (little-endian), so 60,000 MNIST images
// stay 47 MB on the device instead of 188 MB as f32. Indices are u32 (an epoch's permutation,
// uploaded once per epoch). How a byte becomes a float is the override MODE:
//   0: f32(v) * scale (pixels scaled by 1/255; WGSL's f32 multiply is correctly rounded),
//   1: f32(v) / scale (an f32 dataset of k / 255 values; used only where the device has been
//      checked to divide all 256 bytes bit for bit as the host does),
//   2: palette[v] (any other f32 dataset with at most 256 distinct values).
// Modes 0 and 1 cost what a multiply costs; on lavapipe the palette's four dynamic loads per
// word make the batch gather 40-75% slower, so the palette is the last resort.
//
// gather_f32_forward gathers from an f32 dataset (times `scale`); labels and dense targets
// are gathered by it with scale = 1.
//
// Bindings: data, indices, palette (u8 entries) (read-only), out (read-write), params.

override MODE: u32 = 0u;

struct Params {
    batch: u32,
    row_len: u32,
    offset: u32,
    scale: f32,
}

@group(0) @binding(0) var<storage, read> data: array<u32>;
@group(0) @binding(1) var<storage, read> indices: array<u32>;
@group(0) @binding(2) var<storage, read> palette: array<f32, 256>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;
@group(0) @binding(4) var<uniform> p: Params;

fn byte_value(v: u32, scale: f32) -> f32 {
    if (MODE == 2u) {
        return palette[v];
    }
    if (MODE == 1u) {
        return f32(v) / scale;
    }
    return f32(v) * scale;
}

fn unpack(word: u32) -> vec4<u32> {
    return vec4<u32>(word & 0xffu, (word >> 8u) & 0xffu, (word >> 16u) & 0xffu, word >> 24u);
}

fn bytes_value(word: u32, scale: f32) -> vec4<f32> {
    let v = unpack(word);
    if (MODE == 2u) {
        return vec4<f32>(palette[v.x], palette[v.y], palette[v.z], palette[v.w]);
    }
    if (MODE == 1u) {
        return vec4<f32>(v) / scale;
    }
    return vec4<f32>(v) * scale;
}

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
    out[i] = byte_value(value, p.scale);
}

// Four bytes per invocation when a row is a whole number of u32 words (row_len % 4 == 0, as
// MNIST's 784): one word load and one 16-byte store instead of four of each.
@group(0) @binding(3) var<storage, read_write> out4: array<vec4<f32>>;

@compute @workgroup_size(256)
fn gather_u8x4_forward(@builtin(global_invocation_id) gid: vec3<u32>) {
    let w = gid.x; // word within the row
    let b = gid.y;
    let words = p.row_len / 4u;
    if (w >= words || b >= p.batch) {
        return;
    }
    let word = data[indices[p.offset + b] * words + w];
    out4[b * words + w] = bytes_value(word, p.scale);
}

// The f32 dataset's gather. Bindings: data, indices (read-only), out (read-write), params.
@group(0) @binding(0) var<storage, read> data_f32: array<f32>;
@group(0) @binding(2) var<storage, read_write> out_f32: array<f32>;
@group(0) @binding(3) var<uniform> p_f32: Params;

@compute @workgroup_size(256)
fn gather_f32_forward(@builtin(global_invocation_id) gid: vec3<u32>) {
    let j = gid.x;
    let b = gid.y;
    if (j >= p_f32.row_len || b >= p_f32.batch) {
        return;
    }
    out_f32[b * p_f32.row_len + j] = data_f32[indices[p_f32.offset + b] * p_f32.row_len + j] * p_f32.scale;
}

// Integer ids (token or class ids, stored as u32) gathered as floats, exact below 2^24:
// out[b, j] = f32(data[idx[offset + b]·row_len + j]). Bindings as gather_f32_forward's.
@compute @workgroup_size(256)
fn gather_ids_forward(@builtin(global_invocation_id) gid: vec3<u32>) {
    let j = gid.x;
    let b = gid.y;
    if (j >= p_f32.row_len || b >= p_f32.batch) {
        return;
    }
    out_f32[b * p_f32.row_len + j] = f32(data[indices[p_f32.offset + b] * p_f32.row_len + j]);
}

// gather_u8x4_forward and the batch's targets in one dispatch (a training step's gather):
// invocation (w, b) writes word w of row b's pixels when w < row_len / 4, and target w of
// row b when w < target_len (the grid covers the larger of the two).
// Bindings: data, indices, palette, targets (read-only), x (vec4), y (read-write), params:
// the palette at the same binding as in the other byte kernels, so they share bytes_value.
struct PairParams {
    x: Params,
    target_len: u32,
    _p1: u32,
    _p2: u32,
    _p3: u32,
}

@group(0) @binding(3) var<storage, read> pair_targets: array<f32>;
@group(0) @binding(4) var<storage, read_write> pair_x: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read_write> pair_y: array<f32>;
@group(0) @binding(6) var<uniform> pair_p: PairParams;

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
        pair_x[b * words + w] = bytes_value(word, pair_p.x.scale);
    }
    let tl = pair_p.target_len;
    if (w < tl) {
        pair_y[b * tl + w] = pair_targets[row * tl + w];
    }
}
