// The attention kernels' shared part, the prelude of attention.wgsl (the forward pass) and
// attention_backward.wgsl: fused scaled dot-product attention in the FlashAttention manner over
// a packed QKV tensor (batch, T, stride) whose row t holds query, key and value of every head
// at q_off, k_off and v_off (head h's d-th value at off + h*D + d): what one projection of
// width 3E gives.
//
// Each kernel is two or three small matrix products per tile, blocked like a GEMM. A workgroup
// of 64 invocations (an 8×8 grid) takes 32 rows of one (batch, head); invocation (tr, tc) owns
// rows 4tr..4tr+3 and holds them in registers, 32 columns at a time, as eight transposed 4×4
// blocks (a Chunk; staged through workgroup memory once, each value loaded by one invocation,
// when DW is 32; for wider heads, reloaded from storage per tile, a chunk at a time). Keys (or
// queries) stream through workgroup memory as vec4s in tiles of BK rows × DW columns (DW: the
// head size rounded up to 32, 64 or 128, an override the host sets; BK = 1024 / DW, a tile is 4
// KiB whatever the head size; at most 24 queries in dkv). Scores: the invocation dots its 4
// rows with keys tc, tc+8, … of the tile, a block × vec4 product per 4 columns, so each vec4
// loaded feeds 16 multiply-adds (a load per multiply-add is what made the earlier
// one-query-per-invocation design slow, on lavapipe above all, where every workgroup or storage
// load is a loop over the SIMD lanes). Probabilities go to workgroup memory as vec4s of 4 rows;
// then the invocation accumulates its 4 rows × columns 32n+4tc..+3 (n < DW/32) of the output in
// 4×4 blocks, an outer product of two vec4 loads per key.
//
// Forward (attention_forward): online softmax, a running maximum m per row (the 8 partial
// maxima of a row meet in workgroup memory) and per-invocation partial sums l, rescaled once
// per tile; a causal mask skips every tile past the workgroup's last query. Writes O (batch,
// T, o_stride, head h at h*D) and the log-sum-exp of each row's scores (batch, head, T), all
// backward needs: memory grows linearly with T, the T×T matrix is never stored.
//
// Backward recomputes the probabilities from the LSE: p = exp(s − lse). With
// delta_i = Σ_d dO_i·O_i (computed by attention_backward_dq and stored for the second pass),
// dp_ij = dO_i·v_j, ds_ij = p_ij (dp_ij − delta_i):
//   attention_backward_dq  (32 queries per workgroup, keys tiled):  dq_i = scale Σ_j ds_ij k_j
//   attention_backward_dkv (32 keys per workgroup, queries tiled):  dk_j = scale Σ_i ds_ij q_i,
//                                                                    dv_j = Σ_i p_ij dO_i
// Every sum has one order fixed by the shapes (over d, over keys in index order, a row's 8
// partial sums in tc order): no atomics, the same bits every run. Workgroup memory: 13 KiB
// (forward), 12 KiB (dq), 15 KiB (dkv, whose query tiles are 24 rows when DW is 32), below
// wgpu's downlevel limit of 16352 bytes. Loops over a tile's keys and a chunk's blocks have
// run-time bounds so that they stay loops: unrolled, this code took the compilers many seconds
// (half a minute through GL, more than wgpu's GL context waits for).

struct Params {
    t: u32,         // sequence length (queries and keys)
    heads: u32,     // heads
    d: u32,         // head size
    causal: u32,    // 1: key j is seen by queries i >= j only
    stride: u32,    // floats per row of the QKV tensor (and of its gradient)
    q_off: u32,     // where the queries start in a row
    k_off: u32,     // keys
    v_off: u32,     // values
    o_stride: u32,  // floats per row of O and dO
    scale: f32,     // the scores' multiplier, 1/sqrt(d) by default
    _pad0: u32,
    _pad1: u32,
}

override DW: u32 = 32u;    // the head size rounded up to 32, 64 or 128
const BQ: u32 = 32u;       // rows per workgroup: 8 groups of 4
const TILE4: u32 = 256u;   // vec4s per staged tile: BK rows of DW / 4
const NONE: f32 = -3.0e38; // a masked score

// Workgroup memory, under names the kernels share: a staged tile of keys (forward, dq) or
// queries (dkv) [row][column / 4] in wa, their values (dO in dkv) in wb, probabilities (ds in
// dq) [row][tr] in wc; before the tiles, wa..wc stage the workgroup's own rows 32 columns at a
// time ([row][column / 4], 8 vec4s a row) so that each value is loaded once, not by 8 threads.
var<workgroup> wa: array<vec4<f32>, TILE4>;
var<workgroup> wb: array<vec4<f32>, TILE4>;
var<workgroup> wc: array<vec4<f32>, TILE4>;

// 32 columns of 4 rows: m_i's column j holds the rows' values at column 4i + j.
struct Chunk {
    m0: mat4x4<f32>, m1: mat4x4<f32>, m2: mat4x4<f32>, m3: mat4x4<f32>,
    m4: mat4x4<f32>, m5: mat4x4<f32>, m6: mat4x4<f32>, m7: mat4x4<f32>,
}

// The invocation's own rows, 32 columns: queries in own0 (forward, dq) and dO in own1 (dq);
// keys in own0 and values in own1 (dkv). Private globals, not arguments: the GL path compiles
// a Chunk passed by value as copies, many seconds of compiling.
var<private> own0: Chunk;
var<private> own1: Chunk;

// own0's 4 rows dotted with staged row x's 32 columns in wa.
fn dots_a(x: u32) -> vec4<f32> {
    return own0.m0 * wa[x] + own0.m1 * wa[x + 1u] + own0.m2 * wa[x + 2u] + own0.m3 * wa[x + 3u]
        + own0.m4 * wa[x + 4u] + own0.m5 * wa[x + 5u] + own0.m6 * wa[x + 6u] + own0.m7 * wa[x + 7u];
}

// own1's 4 rows dotted with staged row x's 32 columns in wb.
fn dots_b(x: u32) -> vec4<f32> {
    return own1.m0 * wb[x] + own1.m1 * wb[x + 1u] + own1.m2 * wb[x + 2u] + own1.m3 * wb[x + 3u]
        + own1.m4 * wb[x + 4u] + own1.m5 * wb[x + 5u] + own1.m6 * wb[x + 6u] + own1.m7 * wb[x + 7u];
}

// Rows x/8 .. x/8+3 of a staged chunk (wa, wb or wc by `src`), column block x%8, transposed.
fn staged_blk(src: u32, x: u32) -> mat4x4<f32> {
    if (src == 0u) {
        return transpose(mat4x4<f32>(wa[x], wa[x + 8u], wa[x + 16u], wa[x + 24u]));
    }
    if (src == 1u) {
        return transpose(mat4x4<f32>(wb[x], wb[x + 8u], wb[x + 16u], wb[x + 24u]));
    }
    return transpose(mat4x4<f32>(wc[x], wc[x + 8u], wc[x + 16u], wc[x + 24u]));
}

// Block i of own1 (`second`) or own0 := x.
fn set_own(second: bool, i: u32, x: mat4x4<f32>) {
    var c = own0;
    if (second) {
        c = own1;
    }
    switch i {
        case 0u: { c.m0 = x; }
        case 1u: { c.m1 = x; }
        case 2u: { c.m2 = x; }
        case 3u: { c.m3 = x; }
        case 4u: { c.m4 = x; }
        case 5u: { c.m5 = x; }
        case 6u: { c.m6 = x; }
        default: { c.m7 = x; }
    }
    if (second) {
        own1 = c;
    } else {
        own0 = c;
    }
}

// own1 (`second`) or own0 := rows 4tr..4tr+3 of a staged chunk (its blocks below column d;
// the others stay 0).
fn stage_own(second: bool, src: u32, tr: u32, d: u32) {
    for (var i = 0u; i < min(8u, d); i++) {
        set_own(second, i, staged_blk(src, 32u * tr + i));
    }
}

// A 4×4 output block's update: column r (a row) += w[r] · x (4 of its columns).
fn outer(x: vec4<f32>, w: vec4<f32>) -> mat4x4<f32> {
    return mat4x4<f32>(x * w.x, x * w.y, x * w.z, x * w.w);
}

// Column r (a row) of a 4×4 output block times c[r].
fn scale_rows(a: mat4x4<f32>, c: vec4<f32>) -> mat4x4<f32> {
    return mat4x4<f32>(a[0] * c.x, a[1] * c.y, a[2] * c.z, a[3] * c.w);
}

// Where the invocation's 4 rows start in a tensor of `stride` floats per row (clamped to the
// last row: rows past T compute on its values and are never stored).
fn bases(b: u32, r0: u32, stride: u32, off: u32, p: Params) -> vec4<u32> {
    let r = min(vec4<u32>(r0) + vec4<u32>(0u, 1u, 2u, 3u), vec4<u32>(p.t - 1u));
    return (vec4<u32>(b * p.t) + r) * stride + vec4<u32>(off);
}

// The scores of the 4 rows against key (or query) j, masked: scaled where seen, else NONE.
// `keys_own`: the rows are keys, j a query (seen when row <= j under the causal mask).
fn masked(s: vec4<f32>, rows: vec4<u32>, j: u32, keys_own: bool, p: Params) -> vec4<f32> {
    var ok = vec4<bool>(p.causal == 0u);
    if (keys_own) {
        ok = ok | (rows <= vec4<u32>(j));
    } else {
        ok = ok | (rows >= vec4<u32>(j));
    }
    ok = ok & vec4<bool>(j < p.t);
    return select(vec4<f32>(NONE), s * p.scale, ok);
}

