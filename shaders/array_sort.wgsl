// Sorting rows of an array on the device (src/kernels/sort.rs): keys that order as the
// values do, a bitonic network over (key, position) pairs, and a gather of the values.
//
// Every pair is compared on (key, position), so equal keys keep their original order: the
// network, unstable by itself, gives the stable order NumPy's `kind="stable"` and the array
// API standard's `stable=True` promise. Rows are padded to a power of two with the largest
// key and positions past the row's end, which sort after every real element.

struct Params {
    rows: u32,
    len: u32,      // elements per row
    padded: u32,   // the power of two a row is padded to
    j: u32,        // the compare distance of this step
    k: u32,        // the bitonic block size of this step
    descending: u32,
    _pad0: u32,
    _pad1: u32,
}

@group(0) @binding(0) var<storage, read> src: array<u32>;
@group(0) @binding(1) var<storage, read_write> keys: array<u32>;
@group(0) @binding(2) var<storage, read_write> pos: array<u32>;
@group(0) @binding(3) var<uniform> p: Params;

// 0: float32 words; 1: signed integer words; 2: unsigned and bool words.
override KIND: u32 = 0u;

fn order_key(w: u32) -> u32 {
    if (KIND == 0u) {
        // NaN (any payload, either sign) is the largest: it sorts last, as in NumPy.
        if ((w & 0x7fffffffu) > 0x7f800000u) { return 0xffffffffu; }
        // -0.0 and 0.0 are equal, as comparisons say.
        var v = w;
        if (v == 0x80000000u) { v = 0u; }
        if ((v >> 31u) == 1u) { return ~v; }
        return v | 0x80000000u;
    }
    if (KIND == 1u) { return w ^ 0x80000000u; }
    return w;
}

fn linear(gid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return gid.x + gid.y * nwg.x * 256u;
}

@compute @workgroup_size(256)
fn sort_init(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let e = linear(gid, nwg);
    if (e >= p.rows * p.padded) { return; }
    let row = e / p.padded;
    let l = e % p.padded;
    pos[e] = l;
    if (l < p.len) {
        let key = order_key(src[row * p.len + l]);
        keys[e] = select(key, ~key, p.descending == 1u);
    } else {
        keys[e] = 0xffffffffu;
    }
}

// The sorted values: row r's element l is the source's element at position pos[r, l].
@compute @workgroup_size(256)
fn sort_gather(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let e = linear(gid, nwg);
    if (e >= p.rows * p.len) { return; }
    let row = e / p.len;
    let l = e % p.len;
    keys[e] = src[row * p.len + pos[row * p.padded + l]];
}
