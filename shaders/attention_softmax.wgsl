// The row softmax of unfused attention (src/kernels/attention_unfused.rs), and its backward.
//
// Scores S (batch·heads, tq, tk) come from a batched matmul S = Q·Kᵀ (unscaled); forward
// turns each row, in place, into P = softmax(scale·S) over the keys the query sees: key j is
// hidden from query i when causal and j > i, or when a mask (batch, tq, tk) holds 0.0 there.
// A hidden key's probability is exactly 0 (so no gradient flows through it); a row with every
// key hidden is all zeros. Backward turns dP, in place, into scale·dS with
// dS = P ⊙ (dP − rowsum(dP ⊙ P)), the softmax's gradient with the scores' multiplier folded
// in, ready for dQ = dS·K and dK = dSᵀ·Q.
//
// A work-group of 64 per row (query i on x, batch·head on y); each invocation strides over
// the keys; maxima and sums through a fixed tree in workgroup memory, so every row is summed
// in one order fixed by the shape. Loops have run-time bounds (GL compiles them quickly).

struct Params {
    tq: u32,
    tk: u32,
    heads: u32,
    causal: u32,
    masked: u32,
    scale: f32,
    _pad0: u32,
    _pad1: u32,
}

// Forward: the mask (a dummy without one); backward: the probabilities P.
@group(0) @binding(0) var<storage, read> aux: array<f32>;
// Forward: S in, P out; backward: dP in, scale·dS out.
@group(0) @binding(1) var<storage, read_write> rows: array<f32>;
@group(0) @binding(2) var<uniform> p: Params;

const WG: u32 = 64u;

var<workgroup> red: array<f32, 64>;

// The tree's maximum (op 0) or sum (op 1) of every invocation's `v`.
fn reduce(v: f32, lid: u32, op: u32) -> f32 {
    red[lid] = v;
    workgroupBarrier();
    for (var w = WG / 2u; w > 0u; w = w / 2u) {
        if (lid < w) {
            if (op == 0u) {
                red[lid] = max(red[lid], red[lid + w]);
            } else {
                red[lid] = red[lid] + red[lid + w];
            }
        }
        workgroupBarrier();
    }
    let r = red[0];
    workgroupBarrier();
    return r;
}

// Whether query i of sequence b does not see key j.
fn hidden(b: u32, i: u32, j: u32) -> bool {
    if (p.causal != 0u && j > i) {
        return true;
    }
    return p.masked != 0u && aux[(b * p.tq + i) * p.tk + j] == 0.0;
}

@compute @workgroup_size(64)
fn attention_softmax_forward(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let i = wid.x;
    let b = wid.y / p.heads;
    let row = (wid.y * p.tq + i) * p.tk;
    var mx = -3.0e38;
    for (var j = lid; j < p.tk; j += WG) {
        if (!hidden(b, i, j)) {
            mx = max(mx, p.scale * rows[row + j]);
        }
    }
    mx = reduce(mx, lid, 0u);
    var sum = 0.0;
    for (var j = lid; j < p.tk; j += WG) {
        if (!hidden(b, i, j)) {
            sum += exp(p.scale * rows[row + j] - mx);
        }
    }
    sum = reduce(sum, lid, 1u);
    // Every key hidden: the sum is 0 and the row all zeros.
    let inv = select(0.0, 1.0 / sum, sum > 0.0);
    for (var j = lid; j < p.tk; j += WG) {
        let e = exp(p.scale * rows[row + j] - mx) * inv;
        rows[row + j] = select(e, 0.0, hidden(b, i, j));
    }
}

@compute @workgroup_size(64)
fn attention_softmax_backward(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let row = (wid.y * p.tq + wid.x) * p.tk;
    var dot = 0.0;
    for (var j = lid; j < p.tk; j += WG) {
        dot += rows[row + j] * aux[row + j];
    }
    dot = reduce(dot, lid, 1u);
    for (var j = lid; j < p.tk; j += WG) {
        rows[row + j] = p.scale * aux[row + j] * (rows[row + j] - dot);
    }
}
