// One step of the bitonic network of src/kernels/sort.rs (shaders/array_sort.wgsl makes the
// keys and gathers the values): compare-exchange of (key, position) pairs `j` apart, in
// ascending or descending order by bitonic block `k`. Positions break ties, so the result
// is the stable order.

struct Params {
    rows: u32,
    len: u32,
    padded: u32,
    j: u32,
    k: u32,
    descending: u32,
    _pad0: u32,
    _pad1: u32,
}

@group(0) @binding(0) var<storage, read_write> keys: array<u32>;
@group(0) @binding(1) var<storage, read_write> pos: array<u32>;
@group(0) @binding(2) var<uniform> p: Params;

@compute @workgroup_size(256)
fn sort_step(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let e = gid.x + gid.y * nwg.x * 256u;
    if (e >= p.rows * p.padded) { return; }
    let l = e % p.padded;
    let partner = l ^ p.j;
    if (partner <= l) { return; }
    let a = e;
    let b = e - l + partner;
    let ka = keys[a];
    let kb = keys[b];
    let pa = pos[a];
    let pb = pos[b];
    let a_after_b = ka > kb || (ka == kb && pa > pb);
    let up = (l & p.k) == 0u;
    if (a_after_b == up) {
        keys[a] = kb;
        keys[b] = ka;
        pos[a] = pb;
        pos[b] = pa;
    }
}

