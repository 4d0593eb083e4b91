// Losses with dense targets t (rows, cols), one invocation per row, columns in order.
//   LOSS 1: categorical cross-entropy from logits x (softmax folded in):
//           loss = logsumexp(x) − Σ t·x (for Σt = 1), dx = (softmax(x)·Σt − t)·scale
//   LOSS 2: binary cross-entropy from logits x (sigmoid folded in), mean over columns:
//           loss = mean_c [max(x,0) − x·t + log(1 + e^−|x|)], dx = (sigmoid(x) − t)·scale/cols
//   LOSS 3: mean squared error on outputs x: loss = mean_c (x − t)², dx = 2(x − t)·scale/cols
//   LOSS 4: mean absolute error: loss = mean_c |x − t|, dx = sign(x − t)·scale/cols (0 at 0)
//   LOSS 5: Huber, δ = 1: loss = mean_c (½d² if |d| ≤ 1 else |d| − ½), d = x − t,
//           dx = clamp(d, −1, 1)·scale/cols
// scale is 1/B for a batch mean.
// loss_metrics_forward accumulates acc += [Σ loss, Σ correct, count]: correct is argmax(x) ==
// argmax(t) per row for LOSS 1, and the fraction of columns with (x > 0) == (t > 0.5) for
// LOSS 2 (count is rows either way); the regression losses (3-5) count nothing correct.
//
// Bindings: x, t (read-only), loss, grad (read-write), params.

struct Params {
    rows: u32,
    cols: u32,
    scale: f32,
    at: u32,      // the metrics kernel's block in the accumulator
}

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> t: array<f32>;
@group(0) @binding(2) var<storage, read_write> loss: array<f32>;
@group(0) @binding(3) var<storage, read_write> grad: array<f32>;
@group(0) @binding(4) var<uniform> p: Params;

@group(0) @binding(2) var<storage, read> m_loss: array<f32>;
@group(0) @binding(3) var<storage, read_write> m_acc: array<f32>;

override LOSS: u32 = 1u;

const WG: u32 = 64u;

@compute @workgroup_size(64)
fn loss_backward(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let r = gid.x + gid.y * nwg.x * WG;
    if (r >= p.rows) {
        return;
    }
    let base = r * p.cols;
    let inv_cols = 1.0 / f32(p.cols);
    if (LOSS == 1u) {
        var m = x[base];
        for (var c = 1u; c < p.cols; c++) {
            m = max(m, x[base + c]);
        }
        var s = 0.0;
        var tsum = 0.0;
        var tx = 0.0;
        for (var c = 0u; c < p.cols; c++) {
            s += exp(x[base + c] - m);
            tsum += t[base + c];
            tx += t[base + c] * x[base + c];
        }
        loss[r] = (log(s) + m) * tsum - tx;
        let inv = 1.0 / s;
        for (var c = 0u; c < p.cols; c++) {
            grad[base + c] = (exp(x[base + c] - m) * inv * tsum - t[base + c]) * p.scale;
        }
    } else if (LOSS == 2u) {
        var total = 0.0;
        for (var c = 0u; c < p.cols; c++) {
            let z = x[base + c];
            let y = t[base + c];
            total += max(z, 0.0) - z * y + log(1.0 + exp(-abs(z)));
            let e = exp(-abs(z));
            let sig = select(e / (1.0 + e), 1.0 / (1.0 + e), z >= 0.0);
            grad[base + c] = (sig - y) * p.scale * inv_cols;
        }
        loss[r] = total * inv_cols;
    } else if (LOSS == 3u) {
        var total = 0.0;
        for (var c = 0u; c < p.cols; c++) {
            let d = x[base + c] - t[base + c];
            total += d * d;
            grad[base + c] = 2.0 * d * p.scale * inv_cols;
        }
        loss[r] = total * inv_cols;
    } else if (LOSS == 4u) {
        var total = 0.0;
        for (var c = 0u; c < p.cols; c++) {
            let d = x[base + c] - t[base + c];
            total += abs(d);
            grad[base + c] = sign(d) * p.scale * inv_cols;
        }
        loss[r] = total * inv_cols;
    } else {
        var total = 0.0;
        for (var c = 0u; c < p.cols; c++) {
            let d = x[base + c] - t[base + c];
            let a = abs(d);
            total += select(a - 0.5, 0.5 * d * d, a <= 1.0);
            grad[base + c] = clamp(d, -1.0, 1.0) * p.scale * inv_cols;
        }
        loss[r] = total * inv_cols;
    }
}

var<workgroup> m_part: array<vec2<f32>, 64>;

// One work-group of 64: rows i, i+64, … per invocation, then a fixed tree (deterministic).
@compute @workgroup_size(64)
fn loss_metrics_forward(@builtin(local_invocation_index) li: u32) {
    var part = vec2<f32>(0.0);
    for (var r = li; r < p.rows; r += WG) {
        let base = r * p.cols;
        var correct = 0.0;
        if (LOSS == 1u) {
            var bx = 0u;
            var bt = 0u;
            for (var c = 1u; c < p.cols; c++) {
                if (x[base + c] > x[base + bx]) {
                    bx = c;
                }
                if (t[base + c] > t[base + bt]) {
                    bt = c;
                }
            }
            correct = select(0.0, 1.0, bx == bt);
        } else if (LOSS == 2u) {
            var hits = 0.0;
            for (var c = 0u; c < p.cols; c++) {
                hits += select(0.0, 1.0, (x[base + c] > 0.0) == (t[base + c] > 0.5));
            }
            correct = hits / f32(p.cols);
        }
        part += vec2<f32>(m_loss[r], correct);
    }
    m_part[li] = part;
    workgroupBarrier();
    for (var stride = WG / 2u; stride > 0u; stride /= 2u) {
        if (li < stride) {
            m_part[li] += m_part[li + stride];
        }
        workgroupBarrier();
    }
    if (li == 0u) {
        m_acc[p.at] += m_part[0].x;
        m_acc[p.at + 1u] += m_part[0].y;
        m_acc[p.at + 2u] += f32(p.rows);
    }
}
