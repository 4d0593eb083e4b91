// Elementwise kernels. Bindings: read-only inputs, read-write outputs, then Params.
// Linear index over a 1-D grid that may spill onto y (see kernel::grid_1d).

struct Params {
    n: u32,
    value: f32,
    _pad0: u32,
    _pad1: u32,
}

@group(0) @binding(0) var<storage, read_write> out: array<f32>;
@group(0) @binding(1) var<uniform> params: Params;

const WG: u32 = 256u;

// out[i] = params.value for i < n.
@compute @workgroup_size(256)
fn fill_forward(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * WG;
    if (i >= params.n) {
        return;
    }
    out[i] = params.value;
}
