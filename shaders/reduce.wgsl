// Reductions over a row-major (rows, cols) matrix.
//   reduce_rows_forward: out[r] = OP over x[r, :]  (one 256-wide work-group per row,
//                        a fixed-shape tree in workgroup memory: same input, same bits)
//   reduce_cols_forward: out[c] = sum over x[:, c] (one invocation per column, rows in order)
// OP: 0 sum, 1 max, 2 argmax (first index of the maximum, written as f32).
// Results of sums are multiplied by params.scale (1 for sum, 1/count for mean).
//
// Bindings: x (read-only), out (read-write), params.

struct Params {
    rows: u32,
    cols: u32,
    scale: f32,
    _pad: u32,
}

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
@group(0) @binding(2) var<uniform> p: Params;

override OP: u32 = 0u;

const WG: u32 = 256u;
const NEG_INF: f32 = -3.402823466e+38;

var<workgroup> s_val: array<f32, 256>;
var<workgroup> s_idx: array<u32, 256>;

// Combines two partial results; for max/argmax ties keep the lower index.
fn combine(va: f32, ia: u32, vb: f32, ib: u32) -> vec2<f32> {
    if (OP == 0u) {
        return vec2<f32>(va + vb, 0.0);
    }
    // (NaN inputs give the driver's answer: Vulkan leaves NaN comparisons undefined.)
    let b_wins = (vb > va) || (vb == va && ib < ia);
    return select(vec2<f32>(va, bitcast<f32>(ia)), vec2<f32>(vb, bitcast<f32>(ib)), b_wins);
}

@compute @workgroup_size(256)
fn reduce_rows_forward(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) li: u32,
) {
    let row = wid.x + wid.y * nwg.x;
    if (row >= p.rows) {
        return; // uniform across the work-group: barriers below stay in uniform control flow
    }
    let base = row * p.cols;
    var v = select(NEG_INF, 0.0, OP == 0u);
    var idx = 0xffffffffu;
    for (var c = li; c < p.cols; c += WG) {
        let r = combine(v, idx, x[base + c], c);
        v = r.x;
        idx = bitcast<u32>(r.y);
    }
    s_val[li] = v;
    s_idx[li] = idx;
    workgroupBarrier();
    for (var stride = WG / 2u; stride > 0u; stride /= 2u) {
        if (li < stride) {
            let r = combine(s_val[li], s_idx[li], s_val[li + stride], s_idx[li + stride]);
            s_val[li] = r.x;
            s_idx[li] = bitcast<u32>(r.y);
        }
        workgroupBarrier();
    }
    if (li == 0u) {
        switch OP {
            case 0u: { out[row] = s_val[0] * p.scale; }
            case 1u: { out[row] = s_val[0]; }
            default: { out[row] = f32(s_idx[0]); }
        }
    }
}

@compute @workgroup_size(256)
fn reduce_cols_forward(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let col = gid.x + gid.y * nwg.x * WG;
    if (col >= p.cols) {
        return;
    }
    // Four rows per iteration (in order, so the sum is the plain sequential one): llvmpipe
    // stops a loop after 65,535 iterations, and this reaches 262,140 rows before it.
    var acc = 0.0;
    let whole = p.rows & ~3u;
    var r = 0u;
    for (; r < whole; r += 4u) {
        let i = r * p.cols + col;
        acc += x[i];
        acc += x[i + p.cols];
        acc += x[i + 2u * p.cols];
        acc += x[i + 3u * p.cols];
    }
    for (; r < p.rows; r++) {
        acc += x[r * p.cols + col];
    }
    out[col] = acc * p.scale;
}
