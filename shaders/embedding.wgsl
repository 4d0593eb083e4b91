// Keras's Embedding: rows of a table (rows V × columns E) selected by ids, and the table's
// gradient as a deterministic scatter-add.
//
// Ids arrive as f32: the engine's layers read floats, and integer dataset columns are
// gathered as exact f32 values (below 2^24). An id is valid when 0 <= id < V, tested on its
// bits, since WGSL lets a compiler assume floats are never NaN: for x >= 0 the bits order as
// the values do, a negative's sign bit and a NaN's exponent put them above f32(V)'s bits, so
// `bits < bits(f32(V))` holds exactly for 0 <= x < V (-0 is taken as 0). A fractional id is
// truncated, as Keras's cast to int is. An invalid id reads nothing: its output row is zeros
// and it adds to no row's gradient.
//
// The backward pass uses no float atomics, so its result never depends on thread timing: a
// counting sort lists each row's positions in position order, then one invocation per
// (row, column) sums its positions' dy in that order.
//   embedding_count_backward  one per row v:        counts[v] = #{i : id_i = v}        V·N
//   embedding_scan_backward   one work-group:       starts = exclusive prefix of counts, starts[V] = total
//   embedding_fill_backward   one per row v:        positions[starts[v]..starts[v+1]] = those i, ascending   V·N
//   embedding_backward        one per (v, e):       dtable[v, e] = Σ dy[positions[k], e], k ascending       N·E
// Every row's gradient is written (a row no id selects gets 0).
//
// Grids are 1-D and may spill onto y (exec::grid_1d): the linear index is
// gid.x + gid.y * nwg.x * WG, guarded by the count. Bindings: read-only inputs, then
// read-write outputs, then Params.

struct Params {
    positions: u32, // N: ids in the batch (batch × ids per sample)
    rows: u32,      // V: the table's rows (input_dim)
    dim: u32,       // E: the table's columns (output_dim); the kernels use DIM
    limit: u32,     // the bits of f32(V): a valid id's bits are below them
}

// E as a pipeline constant: the divisions by it compile to multiplications.
override DIM: u32 = 1u;

const WG: u32 = 256u;
const NONE: u32 = 0xffffffffu;

fn linear_index(gid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return gid.x + gid.y * nwg.x * WG;
}

// The row an id selects, or NONE (see the top of the file).
fn row_of(x: f32, limit: u32) -> u32 {
    var bits = bitcast<u32>(x);
    if (bits == 0x80000000u) {
        bits = 0u;
    }
    if (bits >= limit) {
        return NONE;
    }
    return u32(abs(x));
}

// ---- forward: out[i, e] = table[id_i, e], or 0 for an invalid id ---------------------------
// Bindings: ids, table (read-only), out (read-write), params.
@group(0) @binding(0) var<storage, read> fw_ids: array<f32>;
@group(0) @binding(1) var<storage, read> fw_table: array<f32>;
@group(0) @binding(2) var<storage, read_write> fw_out: array<f32>;
@group(0) @binding(3) var<uniform> fw_p: Params;

@compute @workgroup_size(256)
fn embedding_forward(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_index(gid, nwg);
    if (i >= fw_p.positions * DIM) {
        return;
    }
    let n = i / DIM;
    let e = i - n * DIM;
    let v = row_of(fw_ids[n], fw_p.limit);
    var y = 0.0;
    if (v != NONE) {
        y = fw_table[v * DIM + e];
    }
    fw_out[i] = y;
}

// ---- count: counts[v] = how many ids select row v ------------------------------------------
// Bindings: ids (read-only), counts (read-write, u32), params.
@group(0) @binding(0) var<storage, read> ct_ids: array<f32>;
@group(0) @binding(1) var<storage, read_write> ct_counts: array<u32>;
@group(0) @binding(2) var<uniform> ct_p: Params;

@compute @workgroup_size(256)
fn embedding_count_backward(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let v = linear_index(gid, nwg);
    if (v >= ct_p.rows) {
        return;
    }
    var c = 0u;
    for (var i = 0u; i < ct_p.positions; i++) {
        if (row_of(ct_ids[i], ct_p.limit) == v) {
            c++;
        }
    }
    ct_counts[v] = c;
}

// ---- scan: starts[v] = Σ_{u<v} counts[u], starts[V] = the total ----------------------------
// One work-group: invocation t owns a contiguous run of ceil(V / 256) rows; the runs' sums are
// prefixed by invocation 0, then each invocation writes its run's starts. Integers: exact.
// Bindings: counts (read-only), starts (read-write, V + 1 u32), params.
@group(0) @binding(0) var<storage, read> sc_counts: array<u32>;
@group(0) @binding(1) var<storage, read_write> sc_starts: array<u32>;
@group(0) @binding(2) var<uniform> sc_p: Params;

var<workgroup> run_sums: array<u32, 256>;

@compute @workgroup_size(256)
fn embedding_scan_backward(@builtin(local_invocation_index) t: u32) {
    let per = (sc_p.rows + WG - 1u) / WG;
    let lo = min(t * per, sc_p.rows);
    let hi = min(lo + per, sc_p.rows);
    var s = 0u;
    for (var v = lo; v < hi; v++) {
        s += sc_counts[v];
    }
    run_sums[t] = s;
    workgroupBarrier();
    if (t == 0u) {
        var total = 0u;
        for (var k = 0u; k < WG; k++) {
            let c = run_sums[k];
            run_sums[k] = total;
            total += c;
        }
        sc_starts[sc_p.rows] = total;
    }
    workgroupBarrier();
    var at = run_sums[t];
    for (var v = lo; v < hi; v++) {
        sc_starts[v] = at;
        at += sc_counts[v];
    }
}

// ---- fill: row v's positions, ascending, at positions[starts[v]..] -------------------------
// Bindings: ids, starts (read-only), positions (read-write, N u32), params.
@group(0) @binding(0) var<storage, read> fl_ids: array<f32>;
@group(0) @binding(1) var<storage, read> fl_starts: array<u32>;
@group(0) @binding(2) var<storage, read_write> fl_positions: array<u32>;
@group(0) @binding(3) var<uniform> fl_p: Params;

@compute @workgroup_size(256)
fn embedding_fill_backward(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let v = linear_index(gid, nwg);
    if (v >= fl_p.rows) {
        return;
    }
    var k = fl_starts[v];
    for (var i = 0u; i < fl_p.positions; i++) {
        if (row_of(fl_ids[i], fl_p.limit) == v) {
            fl_positions[k] = i;
            k++;
        }
    }
}

// ---- sum: dtable[v, e] = Σ_k dy[positions[k], e] over row v's positions, in order ----------
// Bindings: dy, starts, positions (read-only), dtable (read-write), params.
@group(0) @binding(0) var<storage, read> sm_dy: array<f32>;
@group(0) @binding(1) var<storage, read> sm_starts: array<u32>;
@group(0) @binding(2) var<storage, read> sm_positions: array<u32>;
@group(0) @binding(3) var<storage, read_write> sm_dtable: array<f32>;
@group(0) @binding(4) var<uniform> sm_p: Params;

@compute @workgroup_size(256)
fn embedding_backward(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_index(gid, nwg);
    if (i >= sm_p.rows * DIM) {
        return;
    }
    let v = i / DIM;
    let e = i - v * DIM;
    let end = sm_starts[v + 1u];
    var acc = 0.0;
    for (var k = sm_starts[v]; k < end; k++) {
        acc += sm_dy[sm_positions[k] * DIM + e];
    }
    sm_dtable[i] = acc;
}
