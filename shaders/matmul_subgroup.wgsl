// Subgroup-broadcast matmul for adapters whose subgroups have exactly 8 lanes (lavapipe).
// Assembled after activation.wgsl and matmul.wgsl (it uses their Params, bindings, overrides
// and store_c); kept in its own file because subgroup operations make a module unusable on
// adapters without them.
//
// Why (see shared/LAVAPIPE.md): on llvmpipe a storage load whose address differs per lane is
// a scalar loop over the 8 lanes, so loads, not FMAs, set the speed. Here a work-group is one
// subgroup of 8 lanes covering 32 columns (4 per lane, along N) and ROWS rows. For each
// 32-wide block of K, every lane loads one 4-wide slice of A per row and shares it with
// subgroupBroadcast (cheap: a register broadcast), so each A element is loaded once per
// work-group instead of once per lane; each lane then loads its own 4 columns of B for each k.
// The 8 broadcasts need constant lane indices, hence the hand-unrolled blocks.
// The host picks this kernel only when the adapter reports subgroup size 8 (min = max = 8).

override ROWS: u32 = 32u; // rows of C per work-group, at most 64

fn load_b4(kk: u32, bcol: vec4<u32>, bks: u32) -> vec4<f32> {
    let base = kk * bks;
    return vec4<f32>(b[base + bcol.x], b[base + bcol.y], b[base + bcol.z], b[base + bcol.w]);
}

@compute @workgroup_size(8)
fn matmul_sg8_forward(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(subgroup_invocation_id) lane: u32,
) {
    let col0 = wid.x * 32u + lane * 4u;
    let row0 = wid.y * ROWS;
    let klast = p.k - 1u;
    let mlast = p.m - 1u;
    // Strides of the stored layouts: consecutive k, consecutive rows / columns.
    let aks = select(1u, p.m, TRANS_A);
    let ams = select(p.k, 1u, TRANS_A);
    let bks = select(p.n, 1u, TRANS_B);
    let bns = select(1u, p.k, TRANS_B);
    // Columns beyond N are clamped (their results are never stored).
    let cols = min(vec4<u32>(col0) + vec4<u32>(0u, 1u, 2u, 3u), vec4<u32>(p.n - 1u));
    let bcol = cols * bns;
    var acc: array<vec4<f32>, 64>;
    var av: array<vec4<f32>, 64>;
    for (var kb = 0u; kb < p.k; kb += 32u) {
        // This lane's slice of K: ka..ka+3, zero past K (rows past M are clamped, never stored).
        let ka = kb + lane * 4u;
        let kv = vec4<u32>(ka) + vec4<u32>(0u, 1u, 2u, 3u);
        let live = vec4<f32>(kv < vec4<u32>(p.k));
        let kc = min(kv, vec4<u32>(klast)) * aks;
        for (var r = 0u; r < ROWS; r++) {
            let rbase = min(row0 + r, mlast) * ams;
            av[r] = live * vec4<f32>(a[rbase + kc.x], a[rbase + kc.y], a[rbase + kc.z], a[rbase + kc.w]);
        }
        {
            let kk = min(kb + 0u, klast);
            let b0 = load_b4(kk, bcol, bks);
            let b1 = load_b4(min(kk + 1u, klast), bcol, bks);
            let b2 = load_b4(min(kk + 2u, klast), bcol, bks);
            let b3 = load_b4(min(kk + 3u, klast), bcol, bks);
            for (var r = 0u; r < ROWS; r++) {
                let s = subgroupBroadcast(av[r], 0u);
                acc[r] = fma(vec4<f32>(s.w), b3, fma(vec4<f32>(s.z), b2, fma(vec4<f32>(s.y), b1, fma(vec4<f32>(s.x), b0, acc[r]))));
            }
        }
        {
            let kk = min(kb + 4u, klast);
            let b0 = load_b4(kk, bcol, bks);
            let b1 = load_b4(min(kk + 1u, klast), bcol, bks);
            let b2 = load_b4(min(kk + 2u, klast), bcol, bks);
            let b3 = load_b4(min(kk + 3u, klast), bcol, bks);
            for (var r = 0u; r < ROWS; r++) {
                let s = subgroupBroadcast(av[r], 1u);
                acc[r] = fma(vec4<f32>(s.w), b3, fma(vec4<f32>(s.z), b2, fma(vec4<f32>(s.y), b1, fma(vec4<f32>(s.x), b0, acc[r]))));
            }
        }
        {
            let kk = min(kb + 8u, klast);
            let b0 = load_b4(kk, bcol, bks);
            let b1 = load_b4(min(kk + 1u, klast), bcol, bks);
            let b2 = load_b4(min(kk + 2u, klast), bcol, bks);
            let b3 = load_b4(min(kk + 3u, klast), bcol, bks);
            for (var r = 0u; r < ROWS; r++) {
                let s = subgroupBroadcast(av[r], 2u);
                acc[r] = fma(vec4<f32>(s.w), b3, fma(vec4<f32>(s.z), b2, fma(vec4<f32>(s.y), b1, fma(vec4<f32>(s.x), b0, acc[r]))));
            }
        }
        {
            let kk = min(kb + 12u, klast);
            let b0 = load_b4(kk, bcol, bks);
            let b1 = load_b4(min(kk + 1u, klast), bcol, bks);
            let b2 = load_b4(min(kk + 2u, klast), bcol, bks);
            let b3 = load_b4(min(kk + 3u, klast), bcol, bks);
            for (var r = 0u; r < ROWS; r++) {
                let s = subgroupBroadcast(av[r], 3u);
                acc[r] = fma(vec4<f32>(s.w), b3, fma(vec4<f32>(s.z), b2, fma(vec4<f32>(s.y), b1, fma(vec4<f32>(s.x), b0, acc[r]))));
            }
        }
        {
            let kk = min(kb + 16u, klast);
            let b0 = load_b4(kk, bcol, bks);
            let b1 = load_b4(min(kk + 1u, klast), bcol, bks);
            let b2 = load_b4(min(kk + 2u, klast), bcol, bks);
            let b3 = load_b4(min(kk + 3u, klast), bcol, bks);
            for (var r = 0u; r < ROWS; r++) {
                let s = subgroupBroadcast(av[r], 4u);
                acc[r] = fma(vec4<f32>(s.w), b3, fma(vec4<f32>(s.z), b2, fma(vec4<f32>(s.y), b1, fma(vec4<f32>(s.x), b0, acc[r]))));
            }
        }
        {
            let kk = min(kb + 20u, klast);
            let b0 = load_b4(kk, bcol, bks);
            let b1 = load_b4(min(kk + 1u, klast), bcol, bks);
            let b2 = load_b4(min(kk + 2u, klast), bcol, bks);
            let b3 = load_b4(min(kk + 3u, klast), bcol, bks);
            for (var r = 0u; r < ROWS; r++) {
                let s = subgroupBroadcast(av[r], 5u);
                acc[r] = fma(vec4<f32>(s.w), b3, fma(vec4<f32>(s.z), b2, fma(vec4<f32>(s.y), b1, fma(vec4<f32>(s.x), b0, acc[r]))));
            }
        }
        {
            let kk = min(kb + 24u, klast);
            let b0 = load_b4(kk, bcol, bks);
            let b1 = load_b4(min(kk + 1u, klast), bcol, bks);
            let b2 = load_b4(min(kk + 2u, klast), bcol, bks);
            let b3 = load_b4(min(kk + 3u, klast), bcol, bks);
            for (var r = 0u; r < ROWS; r++) {
                let s = subgroupBroadcast(av[r], 6u);
                acc[r] = fma(vec4<f32>(s.w), b3, fma(vec4<f32>(s.z), b2, fma(vec4<f32>(s.y), b1, fma(vec4<f32>(s.x), b0, acc[r]))));
            }
        }
        {
            let kk = min(kb + 28u, klast);
            let b0 = load_b4(kk, bcol, bks);
            let b1 = load_b4(min(kk + 1u, klast), bcol, bks);
            let b2 = load_b4(min(kk + 2u, klast), bcol, bks);
            let b3 = load_b4(min(kk + 3u, klast), bcol, bks);
            for (var r = 0u; r < ROWS; r++) {
                let s = subgroupBroadcast(av[r], 7u);
                acc[r] = fma(vec4<f32>(s.w), b3, fma(vec4<f32>(s.z), b2, fma(vec4<f32>(s.y), b1, fma(vec4<f32>(s.x), b0, acc[r]))));
            }
        }
    }
    for (var r = 0u; r < ROWS; r++) {
        let row = row0 + r;
        store_c(row, col0, acc[r].x);
        store_c(row, col0 + 1u, acc[r].y);
        store_c(row, col0 + 2u, acc[r].z);
        store_c(row, col0 + 3u, acc[r].w);
    }
}
