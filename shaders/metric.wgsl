// Metrics beyond loss and accuracy, accumulated on the device as per-sample sums into
// acc[offset..] (one dispatch per metric, one work-group: deterministic, like loss_metrics).
// x (rows, cols) is what the model's last kernel wrote; the prediction p is x itself (PROB 0),
// sigmoid(x) (PROB 1) or the row's softmax (PROB 2): the loss folds the output layer's
// activation in, and metrics judge what predict would return. Targets t are dense (rows, cols);
// a label is positive where t > 0.5.
//   METRIC 1: acc[o] += Σ_rows mean_c |p − t|                      (mean absolute error)
//   METRIC 2: acc[o] += Σ_rows mean_c (p − t)²                     (mean squared error)
//   METRIC 3: acc[o..o+3] += [TP, FP, FN] over every element at p > threshold
//             (precision = TP / (TP + FP), recall = TP / (TP + FN))
//   METRIC 4: acc[o + b] += positives in bucket b, acc[o + B + b] += negatives in bucket b, for
//             B = p.buckets thresholds spread evenly over [0, 1] as Keras's AUC spreads them:
//             bucket b = max(ceil(clamp(p, 0, 1)·(B − 1)) − 1, 0), so that p exceeds
//             thresholds 0..=b (the first is −ε, the last 1 + ε). Counts are exact integers.
//
// Bindings: x, t (read-only), acc (read-write), params.

struct Params {
    rows: u32,
    cols: u32,
    threshold: f32,
    offset: u32,
    buckets: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> t: array<f32>;
@group(0) @binding(2) var<storage, read_write> acc: array<f32>;
@group(0) @binding(3) var<uniform> p: Params;

override METRIC: u32 = 1u;
override PROB: u32 = 0u;

const WG: u32 = 64u;
// The most AUC thresholds one dispatch histograms (two counters each in work-group memory).
const MAX_BUCKETS: u32 = 1024u;

var<workgroup> part: array<vec3<f32>, 64>;
var<workgroup> hist: array<atomic<u32>, 2048>;

// The prediction at column c of a row starting at base (mx, den: the row's softmax terms).
fn predict(base: u32, c: u32, mx: f32, den: f32) -> f32 {
    let v = x[base + c];
    if (PROB == 1u) {
        return 1.0 / (1.0 + exp(-v));
    }
    if (PROB == 2u) {
        return exp(v - mx) / den;
    }
    return v;
}

@compute @workgroup_size(64)
fn metric_sums(@builtin(local_invocation_index) li: u32) {
    if (METRIC == 4u) {
        for (var i = li; i < 2u * MAX_BUCKETS; i += WG) {
            atomicStore(&hist[i], 0u);
        }
        workgroupBarrier();
    }
    var sum = vec3<f32>(0.0);
    let inv_cols = 1.0 / f32(max(p.cols, 1u));
    for (var r = li; r < p.rows; r += WG) {
        let base = r * p.cols;
        var mx = 0.0;
        var den = 1.0;
        if (PROB == 2u) {
            mx = x[base];
            for (var c = 1u; c < p.cols; c++) {
                mx = max(mx, x[base + c]);
            }
            den = 0.0;
            for (var c = 0u; c < p.cols; c++) {
                den += exp(x[base + c] - mx);
            }
        }
        var row = 0.0;
        for (var c = 0u; c < p.cols; c++) {
            let q = predict(base, c, mx, den);
            let y = t[base + c];
            if (METRIC == 1u) {
                row += abs(q - y);
            } else if (METRIC == 2u) {
                row += (q - y) * (q - y);
            } else if (METRIC == 3u) {
                let pred = q > p.threshold;
                let pos = y > 0.5;
                sum += vec3<f32>(
                    select(0.0, 1.0, pred && pos),
                    select(0.0, 1.0, pred && !pos),
                    select(0.0, 1.0, !pred && pos),
                );
            } else {
                let b = u32(max(ceil(clamp(q, 0.0, 1.0) * f32(p.buckets - 1u)) - 1.0, 0.0));
                let k = min(b, p.buckets - 1u) + select(p.buckets, 0u, y > 0.5);
                atomicAdd(&hist[k], 1u);
            }
        }
        if (METRIC <= 2u) {
            sum.x += row * inv_cols;
        }
    }
    if (METRIC == 4u) {
        workgroupBarrier();
        for (var i = li; i < 2u * p.buckets; i += WG) {
            acc[p.offset + i] += f32(atomicLoad(&hist[i]));
        }
        return;
    }
    part[li] = sum;
    workgroupBarrier();
    for (var stride = WG / 2u; stride > 0u; stride /= 2u) {
        if (li < stride) {
            part[li] += part[li + stride];
        }
        workgroupBarrier();
    }
    if (li == 0u) {
        acc[p.offset] += part[0].x;
        if (METRIC == 3u) {
            acc[p.offset + 1u] += part[0].y;
            acc[p.offset + 2u] += part[0].z;
        }
    }
}
