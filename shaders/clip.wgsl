// Gradient clipping for the unfused optimizer path: the sum of squares of a gradient into its
// slot of a norms buffer (one work-group per tensor), then every gradient scaled so that the
// norm over a range of slots (its own for clipnorm, all of them for global_clipnorm) is at
// most `limit`, and clamped to ±`value` (clipvalue), as Keras's optimizers clip.
//
// Bindings: read-only inputs, then read-write outputs, then Params.

struct Params {
    n: u32,      // elements of the gradient
    first: u32,  // sumsq: the slot written; scale: the first slot summed
    count: u32,  // scale: slots summed
    pad: u32,
    limit: f32,  // scale: the largest norm (0: no norm clipping)
    value: f32,  // scale: the largest magnitude (0: no value clipping)
    pad1: f32,
    pad2: f32,
}

const WG: u32 = 256u;

// ---- sumsq: norms[first] = Σ x², one work-group --------------------------------------------
@group(0) @binding(0) var<storage, read> sq_x: array<f32>;
@group(0) @binding(1) var<storage, read_write> sq_norms: array<f32>;
@group(0) @binding(2) var<uniform> sq_p: Params;

var<workgroup> sq_part: array<f32, 256>;

@compute @workgroup_size(256)
fn sumsq_forward(@builtin(local_invocation_id) lid: vec3<u32>) {
    var acc = 0.0;
    var i = lid.x;
    loop {
        if (i >= sq_p.n) {
            break;
        }
        let v = sq_x[i];
        acc = acc + v * v;
        i = i + WG;
    }
    sq_part[lid.x] = acc;
    workgroupBarrier();
    var stride = WG / 2u;
    loop {
        if (stride == 0u) {
            break;
        }
        if (lid.x < stride) {
            sq_part[lid.x] = sq_part[lid.x] + sq_part[lid.x + stride];
        }
        workgroupBarrier();
        stride = stride / 2u;
    }
    if (lid.x == 0u) {
        sq_norms[sq_p.first] = sq_part[0];
    }
}

// ---- scale: g *= min(1, limit / sqrt(Σ norms[first..first+count])); g = clamp(g, ±value) ----
@group(0) @binding(0) var<storage, read> cs_norms: array<f32>;
@group(0) @binding(1) var<storage, read_write> cs_g: array<f32>;
@group(0) @binding(2) var<uniform> cs_p: Params;

var<workgroup> cs_scale: f32;

// The factor is computed once per work-group (invocation 0 sums the slots, in order), not
// once per element: with a global norm over every parameter's slot, each element summing
// them made this pass cost as much as the rest of the optimizer.
@compute @workgroup_size(256)
fn scale_forward(
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) li: u32,
) {
    if (li == 0u) {
        var s = 1.0;
        if (cs_p.limit > 0.0) {
            var t = 0.0;
            for (var k = 0u; k < cs_p.count; k = k + 1u) {
                t = t + cs_norms[cs_p.first + k];
            }
            let norm = sqrt(t);
            if (norm > cs_p.limit) {
                s = cs_p.limit / norm;
            }
        }
        cs_scale = s;
    }
    workgroupBarrier();
    let i = gid.x + gid.y * nwg.x * WG;
    if (i >= cs_p.n) {
        return;
    }
    var g = cs_g[i] * cs_scale;
    if (cs_p.value > 0.0) {
        g = clamp(g, -cs_p.value, cs_p.value);
    }
    cs_g[i] = g;
}
