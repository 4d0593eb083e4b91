// Row reductions with subgroup operations, for adapters that have them. Assembled after
// reduce.wgsl (its bindings, Params, OP, combine and workgroup arrays); a file of its own
// because subgroup operations make a module unusable on adapters without them.
//
// Each invocation folds a strided slice of the row, each subgroup combines its lanes with
// subgroupAdd / subgroupMax (and subgroupMin over indices for argmax: the first maximum),
// and invocation 0 combines the subgroups' results in subgroup order. The subgroup step's
// order is the driver's, fixed for a given adapter: the same input gives the same bits.

const NO_INDEX: u32 = 0xffffffffu;

@compute @workgroup_size(256)
fn reduce_rows_sg_forward(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) li: u32,
    @builtin(subgroup_invocation_id) lane: u32,
    @builtin(subgroup_id) sid: u32,
    @builtin(num_subgroups) nsg: u32,
) {
    let row = wid.x + wid.y * nwg.x;
    if (row >= p.rows) {
        return; // uniform across the work-group
    }
    let base = row * p.cols;
    var v = select(NEG_INF, 0.0, OP == 0u);
    var idx = NO_INDEX;
    for (var c = li; c < p.cols; c += WG) {
        let r = combine(v, idx, x[base + c], c);
        v = r.x;
        idx = bitcast<u32>(r.y);
    }
    if (OP == 0u) {
        v = subgroupAdd(v);
    } else {
        let m = subgroupMax(v);
        idx = subgroupMin(select(NO_INDEX, idx, v == m));
        v = m;
    }
    if (lane == 0u) {
        s_val[sid] = v;
        s_idx[sid] = idx;
    }
    workgroupBarrier();
    if (li == 0u) {
        var tv = s_val[0];
        var ti = s_idx[0];
        for (var s = 1u; s < nsg; s++) {
            let r = combine(tv, ti, s_val[s], s_idx[s]);
            tv = r.x;
            ti = bitcast<u32>(r.y);
        }
        switch OP {
            case 0u: { out[row] = tv * p.scale; }
            case 1u: { out[row] = tv; }
            default: { out[row] = f32(ti); }
        }
    }
}
