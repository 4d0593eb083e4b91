// Convolution kernels besides the GEMMs (whose conv2d_* twins are in the matmul family,
// reading A through implicit im2col): the kernel transpose the backward data pass
// multiplies by, and the reduction of a split-K weight gradient, with the optimizer step
// applied as the partial products are summed. Needs the optim_rule.wgsl prelude.
//
// Bindings: read-only inputs, then read-write outputs, then the uniform.

// ---- transpose: Wᵗ[t, co, ci] = W[t, ci, co], W of shape (taps, CIN, COUT) -----------------
struct TransposeParams {
    taps: u32,
    cin: u32,
    cout: u32,
    _pad: u32,
}

@group(0) @binding(0) var<storage, read> tr_src: array<f32>;
@group(0) @binding(1) var<storage, read_write> tr_dst: array<f32>;
@group(0) @binding(2) var<uniform> tr_p: TransposeParams;

@compute @workgroup_size(256)
fn conv2d_transpose(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * 256u;
    if (i >= tr_p.taps * tr_p.cin * tr_p.cout) {
        return;
    }
    let ci = i % tr_p.cin;
    let r = i / tr_p.cin;
    let co = r % tr_p.cout;
    let t = r / tr_p.cout;
    tr_dst[i] = tr_src[(t * tr_p.cin + ci) * tr_p.cout + co];
}

// ---- reduce: the sum of a split K's partial products, written or applied --------------------
// part holds SPLITS partial (LEN) weight gradients, part_b SPLITS partial (NB) bias gradients
// (the column sums each chunk wrote). Element i < LEN sums part[s·LEN + i] over s in order
// (the same bits every run) into g; with OPT 0 the gradient is written to w[i], otherwise w[i]
// is a parameter updated in place by that rule (states st1, st2). Elements LEN.. do the same
// for the bias (states bst1, bst2) when there is one. The uniform's first 16 bytes are the
// shape, then the optimizer step, as every fused-update kernel's: a training step writes it
// per step into its parameter table.
struct ReduceParams {
    len: u32,
    nb: u32,
    splits: u32,
    _pad: u32,
    q: OptParams,
}

override OPT: u32 = 0u;

@group(0) @binding(0) var<storage, read> part: array<f32>;
@group(0) @binding(1) var<storage, read> part_b: array<f32>;
@group(0) @binding(2) var<storage, read_write> rw: array<f32>;
@group(0) @binding(3) var<storage, read_write> rb: array<f32>;
@group(0) @binding(4) var<storage, read_write> rst1: array<f32>;
@group(0) @binding(5) var<storage, read_write> rst2: array<f32>;
@group(0) @binding(6) var<storage, read_write> rbst1: array<f32>;
@group(0) @binding(7) var<storage, read_write> rbst2: array<f32>;
@group(0) @binding(8) var<uniform> rp: ReduceParams;

@compute @workgroup_size(256)
fn conv2d_reduce_step(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * 256u;
    if (i < rp.len) {
        var g = 0.0;
        for (var s = 0u; s < rp.splits; s++) {
            g += part[s * rp.len + i];
        }
        if (OPT == OPT_NONE) {
            rw[i] = g;
            return;
        }
        var s1 = 0.0;
        var s2 = 0.0;
        if (opt_uses_s1(OPT, rp.q)) {
            s1 = rst1[i];
        }
        if (opt_uses_s2(OPT)) {
            s2 = rst2[i];
        }
        let o = opt_apply(OPT, rp.q, vec4<f32>(rw[i]), vec4<f32>(g), vec4<f32>(s1), vec4<f32>(s2));
        if (opt_uses_s1(OPT, rp.q)) {
            rst1[i] = o.s1.x;
        }
        if (opt_uses_s2(OPT)) {
            rst2[i] = o.s2.x;
        }
        rw[i] = o.theta.x;
        return;
    }
    let j = i - rp.len;
    if (j >= rp.nb) {
        return;
    }
    var g = 0.0;
    for (var s = 0u; s < rp.splits; s++) {
        g += part_b[s * rp.nb + j];
    }
    if (OPT == OPT_NONE) {
        rb[j] = g;
        return;
    }
    var s1 = 0.0;
    var s2 = 0.0;
    if (opt_uses_s1(OPT, rp.q)) {
        s1 = rbst1[j];
    }
    if (opt_uses_s2(OPT)) {
        s2 = rbst2[j];
    }
    let o = opt_apply(OPT, rp.q, vec4<f32>(rb[j]), vec4<f32>(g), vec4<f32>(s1), vec4<f32>(s2));
    if (opt_uses_s1(OPT, rp.q)) {
        rbst1[j] = o.s1.x;
    }
    if (opt_uses_s2(OPT)) {
        rbst2[j] = o.s2.x;
    }
    rb[j] = o.theta.x;
}
