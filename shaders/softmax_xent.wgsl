// Row-wise softmax and fused sparse categorical cross-entropy over logits (rows, cols).
// One invocation per row, classes in order (deterministic; suited to classification heads,
// where cols is small).
//   softmax_forward:  y = softmax(x) (LOG: log_softmax), max-subtracted, finite for |x| ~ 1e4
//   xent_forward:     loss[r] = logsumexp(x[r]) - x[r, label[r]]
//   xent_backward:    dx[r, c] = (softmax(x[r])[c] - [c == label[r]]) * scale   (scale = 1/B),
//                     and, in the same pass, loss[r] (training needs both; it costs nothing)
// Labels are class indices stored as f32 (exact below 2^24); the host checks their range.
// With FROM_PROBS the input is a probability row (the output of a softmax layer): loss is
// -log(max(p[label], 1e-7)) as in Keras, and the backward pass is taken with respect to the
// logits that produced it, which is the same (p - onehot) * scale.
//
// Bindings: x, labels (read-only), outputs (read-write), params.

struct Params {
    rows: u32,
    cols: u32,
    scale: f32,
    at: u32,      // the metrics kernels' block in the accumulator
}

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;
@group(0) @binding(2) var<uniform> p: Params;

@group(0) @binding(1) var<storage, read> labels: array<f32>;
@group(0) @binding(2) var<storage, read_write> loss: array<f32>;
@group(0) @binding(3) var<storage, read_write> grad: array<f32>;
@group(0) @binding(3) var<uniform> p3: Params;
@group(0) @binding(4) var<uniform> p4: Params;

override LOG: bool = false;
override FROM_PROBS: bool = false;

const WG: u32 = 64u;
const NEG_INF: f32 = -3.4028235e38;

fn row_index(gid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return gid.x + gid.y * nwg.x * WG;
}

fn row_max(base: u32, cols: u32) -> f32 {
    var m = x[base];
    for (var c = 1u; c < cols; c++) {
        m = max(m, x[base + c]);
    }
    return m;
}

fn row_sum_exp(base: u32, cols: u32, m: f32) -> f32 {
    var s = 0.0;
    for (var c = 0u; c < cols; c++) {
        s += exp(x[base + c] - m);
    }
    return s;
}

@compute @workgroup_size(64)
fn softmax_forward(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let r = row_index(gid, nwg);
    if (r >= p.rows) {
        return;
    }
    let base = r * p.cols;
    let m = row_max(base, p.cols);
    let s = row_sum_exp(base, p.cols, m);
    let ls = log(s);
    let inv = 1.0 / s;
    for (var c = 0u; c < p.cols; c++) {
        let z = x[base + c] - m;
        y[base + c] = select(exp(z) * inv, z - ls, LOG);
    }
}

// softmax_wide_forward: the same result for wide rows (a language model's vocabulary), one
// work-group of 256 per row: each invocation folds a strided slice, a fixed tree combines the
// slices (deterministic), so an invocation loops about 3·cols/256 times instead of 3·cols.
// That is faster on any adapter once a row is wider than a work-group, and it stays inside
// llvmpipe's loop limit for rows of millions of columns.
const WIDE: u32 = 256u;
var<workgroup> w_part: array<f32, 256>;

// Combines the work-group's partial values with a fixed tree (max when MAX, else sum); every
// invocation gets the result. Call from uniform control flow.
fn wide_tree(li: u32, v: f32, is_max: bool) -> f32 {
    w_part[li] = v;
    workgroupBarrier();
    for (var stride = WIDE / 2u; stride > 0u; stride /= 2u) {
        if (li < stride) {
            let o = w_part[li + stride];
            w_part[li] = select(w_part[li] + o, max(w_part[li], o), is_max);
        }
        workgroupBarrier();
    }
    let total = w_part[0];
    workgroupBarrier();
    return total;
}

@compute @workgroup_size(256)
fn softmax_wide_forward(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) li: u32,
) {
    let r = wid.x + wid.y * nwg.x;
    if (r >= p.rows) {
        return; // uniform across the work-group
    }
    let base = r * p.cols;
    var m = NEG_INF;
    for (var c = li; c < p.cols; c += WIDE) {
        m = max(m, x[base + c]);
    }
    m = wide_tree(li, m, true);
    var s = 0.0;
    for (var c = li; c < p.cols; c += WIDE) {
        s += exp(x[base + c] - m);
    }
    s = wide_tree(li, s, false);
    let ls = log(s);
    let inv = 1.0 / s;
    for (var c = li; c < p.cols; c += WIDE) {
        let z = x[base + c] - m;
        y[base + c] = select(exp(z) * inv, z - ls, LOG);
    }
}

// Writes loss[r] and returns (row max, sum of exp(x - max)) for the gradient.
fn row_loss(r: u32, cols: u32) -> vec2<f32> {
    let base = r * cols;
    let label = u32(labels[r]);
    if (FROM_PROBS) {
        loss[r] = -log(clamp(x[base + label], 1e-7, 1.0));
        return vec2<f32>(0.0, 1.0);
    }
    let m = row_max(base, cols);
    let s = row_sum_exp(base, cols, m);
    loss[r] = log(s) + m - x[base + label];
    return vec2<f32>(m, s);
}

// Bindings: x, labels, loss, params(3).
@compute @workgroup_size(64)
fn xent_forward(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let r = row_index(gid, nwg);
    if (r >= p3.rows) {
        return;
    }
    row_loss(r, p3.cols);
}

// Bindings: x, labels, loss, grad, params(4).
@compute @workgroup_size(64)
fn xent_backward(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let r = row_index(gid, nwg);
    if (r >= p4.rows) {
        return;
    }
    let cols = p4.cols;
    let ms = row_loss(r, cols);
    let base = r * cols;
    let label = u32(labels[r]);
    let inv = 1.0 / ms.y;
    for (var c = 0u; c < cols; c++) {
        let v = x[base + c];
        // From probabilities the row already is the softmax.
        let sm = select(exp(v - ms.x) * inv, v, FROM_PROBS);
        grad[base + c] = (sm - select(0.0, 1.0, c == label)) * p4.scale;
    }
}

// Training metrics, accumulated on the device so no step reads anything back:
//   acc[0] += Σ_r loss[r], acc[1] += #{r : argmax x[r] == label[r]}, acc[2] += rows.
// One work-group of 64: each invocation takes rows i, i+64, …, then a fixed tree adds the
// partial sums (deterministic).
// Bindings: x, labels, loss (read-only), acc (read-write), params(4).
@group(0) @binding(2) var<storage, read> m_loss: array<f32>;
@group(0) @binding(3) var<storage, read_write> m_acc: array<f32>;

var<workgroup> m_part: array<vec2<f32>, 64>;

// Sums the work-group's per-invocation (loss, correct) pairs with a fixed tree (the same bits
// every run); every invocation gets the total. Call from uniform control flow.
fn metrics_tree(li: u32, part: vec2<f32>) -> vec2<f32> {
    m_part[li] = part;
    workgroupBarrier();
    for (var stride = WG / 2u; stride > 0u; stride /= 2u) {
        if (li < stride) {
            m_part[li] += m_part[li + stride];
        }
        workgroupBarrier();
    }
    return m_part[0];
}

@compute @workgroup_size(64)
fn xent_metrics_forward(@builtin(local_invocation_index) li: u32) {
    var part = vec2<f32>(0.0);
    for (var r = li; r < p4.rows; r += WG) {
        let base = r * p4.cols;
        var best = 0u;
        for (var c = 1u; c < p4.cols; c++) {
            if (x[base + c] > x[base + best]) {
                best = c;
            }
        }
        part += vec2<f32>(m_loss[r], select(0.0, 1.0, best == u32(labels[r])));
    }
    let total = metrics_tree(li, part);
    if (li == 0u) {
        m_acc[p4.at] += total.x;
        m_acc[p4.at + 1u] += total.y;
        m_acc[p4.at + 2u] += f32(p4.rows);
    }
}

// Training step's loss end, fused: xent_backward and xent_metrics_forward in one dispatch of
// one work-group (for batches up to a few thousand rows, where a second dispatch costs more
// than the rows): per row the loss and (softmax - onehot)·scale, and the metrics'
// accumulation with the same row partition and tree as xent_metrics_forward, so the results
// are the same bits as the two kernels'.
// Bindings: x, labels (read-only), loss, grad, acc (read-write), params(5).
@group(0) @binding(4) var<storage, read_write> t_acc: array<f32>;
@group(0) @binding(5) var<uniform> p5: Params;

@compute @workgroup_size(64)
fn xent_train_forward(@builtin(local_invocation_index) li: u32) {
    let cols = p5.cols;
    var part = vec2<f32>(0.0);
    for (var r = li; r < p5.rows; r += WG) {
        let ms = row_loss(r, cols);
        let base = r * cols;
        let label = u32(labels[r]);
        let inv = 1.0 / ms.y;
        var best = 0u;
        for (var c = 0u; c < cols; c++) {
            let v = x[base + c];
            let sm = select(exp(v - ms.x) * inv, v, FROM_PROBS);
            grad[base + c] = (sm - select(0.0, 1.0, c == label)) * p5.scale;
            if (v > x[base + best]) {
                best = c;
            }
        }
        part += vec2<f32>(loss[r], select(0.0, 1.0, best == label));
    }
    let total = metrics_tree(li, part);
    if (li == 0u) {
        t_acc[p5.at] += total.x;
        t_acc[p5.at + 1u] += total.y;
        t_acc[p5.at + 2u] += f32(p5.rows);
    }
}
