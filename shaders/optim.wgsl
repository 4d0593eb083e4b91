// Fused single-pass optimizer updates over a flat parameter tensor, one entry point per rule.
// The rules themselves (formulas and codes) are in the optim_rule.wgsl prelude, shared with
// the matmul epilogue that updates a weight as its gradient is computed.
//
// Each invocation updates four consecutive elements as one vec4 (on llvmpipe a 16-byte load
// costs about what a 4-byte one does). Buffers are bound rounded up to 16 bytes: the last
// vec4 may run past n into the buffer's padding, which belongs to the same tensor and is
// never read as data.
//
// Bindings: grad (read-only), param, then state buffers (read-write), params.

@group(0) @binding(0) var<storage, read> grad: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> param: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> state1: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read_write> state2: array<vec4<f32>>;
@group(0) @binding(3) var<uniform> p3: OptParams;
@group(0) @binding(4) var<uniform> p4: OptParams;

const WG: u32 = 256u;

fn index(gid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return gid.x + gid.y * nwg.x * WG;
}

// One update of element group i by a rule with one state (SGD, RMSprop): state1 only, so the
// entry point does not use binding 3 as storage (it is their uniform).
fn update1(rule: u32, q: OptParams, i: u32) {
    var s1 = vec4<f32>(0.0);
    if (opt_uses_s1(rule, q)) {
        s1 = state1[i];
    }
    let o = opt_apply(rule, q, param[i], grad[i], s1, vec4<f32>(0.0));
    if (opt_uses_s1(rule, q)) {
        state1[i] = o.s1;
    }
    param[i] = o.theta;
}

// One update of element group i by a rule with two states (Adam, AdamW).
fn update2(rule: u32, q: OptParams, i: u32) {
    let o = opt_apply(rule, q, param[i], grad[i], state1[i], state2[i]);
    state1[i] = o.s1;
    state2[i] = o.s2;
    param[i] = o.theta;
}

// Gradient accumulation over several batches: acc = a·acc + b·grad, `a` 0 on a cycle's first
// batch (so nothing needs clearing) and 1 after, `b` = 1 / batches (the optimizer then sees
// their mean). Bindings: grad (read-only), acc (as param), params(2).
struct AccParams {
    n: u32,
    a: f32,
    b: f32,
    _pad: u32,
}
@group(0) @binding(2) var<uniform> pa: AccParams;

@compute @workgroup_size(256)
fn accumulate_step(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = index(gid, nwg);
    if (i * 4u >= pa.n) {
        return;
    }
    param[i] = pa.a * param[i] + pa.b * grad[i];
}

// Bindings: grad, param, velocity, params(3).
@compute @workgroup_size(256)
fn sgd_step(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = index(gid, nwg);
    if (i * 4u >= p3.n) {
        return;
    }
    update1(OPT_SGD, p3, i);
}

// Bindings: grad, param, m, v, params(4).
@compute @workgroup_size(256)
fn adam_step(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = index(gid, nwg);
    if (i * 4u >= p4.n) {
        return;
    }
    update2(OPT_ADAM, p4, i);
}

// Bindings: grad, param, m, v, params(4).
@compute @workgroup_size(256)
fn adamw_step(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = index(gid, nwg);
    if (i * 4u >= p4.n) {
        return;
    }
    update2(OPT_ADAMW, p4, i);
}

// Bindings: grad, param, v (mean square), params(3).
@compute @workgroup_size(256)
fn rmsprop_step(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = index(gid, nwg);
    if (i * 4u >= p3.n) {
        return;
    }
    update1(OPT_RMSPROP, p3, i);
}

// ---- guarded steps, for dynamic loss scaling ----------------------------------------------
// The same updates behind a skip word (word 2 of the loss-scale state, loss_scale.wgsl): on
// a step whose gradients were not finite, neither the parameter nor its state changes. The
// guard is bound before the uniform: binding 3 (one-state rules) or 4 (two-state rules),
// declared read_write to keep the bindings' order (read-only inputs, read-write buffers, the
// uniform; the one read-only input, the gradient, comes first), though it is only read.
@group(0) @binding(3) var<storage, read_write> guard3: array<u32>;
@group(0) @binding(4) var<storage, read_write> guard4: array<u32>;
@group(0) @binding(5) var<uniform> p5: OptParams;

const SKIP_WORD: u32 = 2u; // = kernels::loss_scale::SKIP_WORD (a unit test there checks it)

// Bindings: grad, param, velocity, guard, params(4).
@compute @workgroup_size(256)
fn sgd_step_guarded(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = index(gid, nwg);
    if (i * 4u >= p4.n || guard3[SKIP_WORD] != 0u) {
        return;
    }
    update1(OPT_SGD, p4, i);
}

// Bindings: grad, param, m, v, guard, params(5).
@compute @workgroup_size(256)
fn adam_step_guarded(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = index(gid, nwg);
    if (i * 4u >= p5.n || guard4[SKIP_WORD] != 0u) {
        return;
    }
    update2(OPT_ADAM, p5, i);
}

// Bindings: grad, param, m, v, guard, params(5).
@compute @workgroup_size(256)
fn adamw_step_guarded(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = index(gid, nwg);
    if (i * 4u >= p5.n || guard4[SKIP_WORD] != 0u) {
        return;
    }
    update2(OPT_ADAMW, p5, i);
}

// Bindings: grad, param, v (mean square), guard, params(4).
@compute @workgroup_size(256)
fn rmsprop_step_guarded(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = index(gid, nwg);
    if (i * 4u >= p4.n || guard3[SKIP_WORD] != 0u) {
        return;
    }
    update1(OPT_RMSPROP, p4, i);
}
