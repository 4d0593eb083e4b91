// Attention against a key/value cache, for generation: the new rows of a packed QKV tensor
// (as a MultiHeadAttention's input projection writes it) append their keys and values to
// the cache, then each new query attends to every cached position up to its own (causal).
//
//   kv_append         one per (batch, new row, channel):  kc[b, past + i, c] = k[b, i, c], vc likewise
//   attention_decode  one work-group per (new row, head, batch): scores s_j = scale·q·k_j for
//                     j ≤ past + i into `scores`, their max, p_j = exp(s_j − max) and Σp, then
//                     o = Σ_j p_j·v_j / Σp, one invocation per channel
//
// The cache holds `cap` positions per sequence, each H·D keys (vc: values) wide, so memory
// is linear in the context. Every sum runs in position order inside one invocation, and
// the max and Σp reduce over fixed trees: the same bits every run, no atomics. Scores go
// through a storage buffer (one row of `cap` per query and head) rather than workgroup
// memory, whose size caps what a work-group may hold; `storageBarrier` makes one
// invocation's writes visible to the others of its work-group.
//
// Bindings: read-only inputs, then read-write outputs, then Params.

struct Params {
    batch: u32,  // sequences
    n: u32,      // new rows per sequence
    past: u32,   // positions already in the cache
    heads: u32,  // H
    d: u32,      // head size D
    stride: u32, // floats per row of the QKV tensor (3·H·D)
    cap: u32,    // positions the cache holds per sequence
    scale: f32,  // the scores' multiplier (1/√D)
}

const WG: u32 = 64u;

// ---- kv_append ------------------------------------------------------------------------------
// Bindings: qkv (read-only), kc, vc (read-write), params.
@group(0) @binding(0) var<storage, read> ap_qkv: array<f32>;
@group(0) @binding(1) var<storage, read_write> ap_k: array<f32>;
@group(0) @binding(2) var<storage, read_write> ap_v: array<f32>;
@group(0) @binding(3) var<uniform> ap_p: Params;

@compute @workgroup_size(64)
fn kv_append(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let hd = ap_p.heads * ap_p.d;
    let idx = gid.x + gid.y * nwg.x * WG;
    if (idx >= ap_p.batch * ap_p.n * hd) {
        return;
    }
    let c = idx % hd;
    let row = idx / hd; // b·n + i
    let i = row % ap_p.n;
    let b = row / ap_p.n;
    let src = row * ap_p.stride + c;
    let dst = (b * ap_p.cap + ap_p.past + i) * hd + c;
    ap_k[dst] = ap_qkv[src + hd];
    ap_v[dst] = ap_qkv[src + 2u * hd];
}

// ---- attention_decode -----------------------------------------------------------------------
// Bindings: qkv, kc, vc (read-only), scores, out (read-write), params. `scores` holds
// (batch, heads, n, cap) floats; `out` is (batch, n, H·D), head h at columns h·D.
@group(0) @binding(0) var<storage, read> dc_qkv: array<f32>;
@group(0) @binding(1) var<storage, read> dc_k: array<f32>;
@group(0) @binding(2) var<storage, read> dc_v: array<f32>;
@group(0) @binding(3) var<storage, read_write> dc_s: array<f32>;
@group(0) @binding(4) var<storage, read_write> dc_o: array<f32>;
@group(0) @binding(5) var<uniform> dc_p: Params;

var<workgroup> tree: array<f32, 64>;

// Reduces `tree` to tree[0] with max (op 0) or + (op 1), in a fixed order.
fn reduce_tree(lid: u32, op: u32) {
    for (var w = WG / 2u; w > 0u; w = w / 2u) {
        workgroupBarrier();
        if (lid < w) {
            if (op == 0u) {
                tree[lid] = max(tree[lid], tree[lid + w]);
            } else {
                tree[lid] = tree[lid] + tree[lid + w];
            }
        }
    }
    workgroupBarrier();
}

@compute @workgroup_size(64)
fn attention_decode(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let i = wid.x;
    let h = wid.y;
    let b = wid.z;
    let d = dc_p.d;
    let hd = dc_p.heads * d;
    let keys = dc_p.past + i + 1u;
    let q0 = (b * dc_p.n + i) * dc_p.stride + h * d;
    let s0 = ((b * dc_p.heads + h) * dc_p.n + i) * dc_p.cap;
    let kv0 = b * dc_p.cap * hd + h * d;
    // Scores, and this invocation's max.
    var m = -3.0e38;
    for (var j = lid; j < keys; j = j + WG) {
        var s = 0.0;
        let k0 = kv0 + j * hd;
        for (var c = 0u; c < d; c = c + 1u) {
            s = s + dc_qkv[q0 + c] * dc_k[k0 + c];
        }
        s = s * dc_p.scale;
        dc_s[s0 + j] = s;
        m = max(m, s);
    }
    tree[lid] = m;
    reduce_tree(lid, 0u);
    let mx = tree[0];
    workgroupBarrier();
    // Probabilities (unnormalised) and their sum.
    var sum = 0.0;
    for (var j = lid; j < keys; j = j + WG) {
        let p = exp(dc_s[s0 + j] - mx);
        dc_s[s0 + j] = p;
        sum = sum + p;
    }
    tree[lid] = sum;
    reduce_tree(lid, 1u);
    let total = tree[0];
    storageBarrier();
    // The output, a channel per invocation, keys in order.
    let o0 = (b * dc_p.n + i) * hd + h * d;
    for (var c = lid; c < d; c = c + WG) {
        var acc = 0.0;
        for (var j = 0u; j < keys; j = j + 1u) {
            acc = acc + dc_s[s0 + j] * dc_v[kv0 + j * hd + c];
        }
        dc_o[o0 + c] = acc / total;
    }
}
