// Drawing the next token from a row of logits, on the device, so generation needs no
// read-back between steps: one work-group picks a token and writes it both to the list of
// generated tokens and, as an f32 id, to where the next step's input reads it.
//
// The rule is nanoGPT's: logits divided by the temperature, only those at least the k-th
// largest kept (ties with it kept too, as `logits < topk(...)[-1]` drops only smaller ones),
// softmax, one draw. Temperature 0 is greedy (the largest logit; the lowest index on ties).
//
//   1. the row's largest logit (its index for greedy), over a tree
//   2. top-k: the k-th largest logit exactly, by bisection over the logits' order-preserving
//      u32 keys (32 rounds of a count over the row, always all 32 so that the barriers stay in uniform
//      control flow; keys compare as the floats do)
//   3. weights w_i = exp((x_i − max)/temperature) for the kept logits, each invocation
//      summing a contiguous chunk in order, invocation 0 the chunks in order
//   4. u from a hash of (seed, step); invocation 0 finds the chunk, then the index, where
//      the running sum first exceeds u·Σw
// Every sum is in a fixed order: the same token every run for the same seed and step.
//
// Bindings: logits (read-only), tokens, next (read-write), params.

struct Params {
    vocab: u32,       // V: the row's logits
    offset: u32,      // the row's first element in `logits`
    top_k: u32,       // logits kept (V: all)
    temperature: f32, // 0: greedy
    seed_lo: u32,
    seed_hi: u32,
    step: u32,        // which token: the draw's counter, and where it goes in `tokens`
    _pad: u32,
}

const WG: u32 = 256u;

@group(0) @binding(0) var<storage, read> logits: array<f32>;
@group(0) @binding(1) var<storage, read_write> tokens: array<u32>;
@group(0) @binding(2) var<storage, read_write> next: array<f32>;
@group(0) @binding(3) var<uniform> p: Params;

var<workgroup> tf: array<f32, 256>;
var<workgroup> tu: array<u32, 256>;

// PCG's output hash (O'Neill), as src/reference/sample.rs has it.
fn pcg(v: u32) -> u32 {
    let state = v * 747796405u + 2891336453u;
    let word = ((state >> ((state >> 28u) + 4u)) ^ state) * 277803737u;
    return (word >> 22u) ^ word;
}

// A u32 whose order is the float order (negative floats reversed below the positive ones).
fn key(x: f32) -> u32 {
    let b = bitcast<u32>(x);
    if ((b & 0x80000000u) != 0u) {
        return ~b;
    }
    return b | 0x80000000u;
}

fn sum_u(lid: u32) {
    for (var w = WG / 2u; w > 0u; w = w / 2u) {
        workgroupBarrier();
        if (lid < w) {
            tu[lid] = tu[lid] + tu[lid + w];
        }
    }
    workgroupBarrier();
}

@compute @workgroup_size(256)
fn sample_token(@builtin(local_invocation_index) lid: u32) {
    let v = p.vocab;
    // 1. The largest logit and its lowest index.
    var m = -3.0e38;
    var mi = 0xffffffffu;
    for (var i = lid; i < v; i = i + WG) {
        let x = logits[p.offset + i];
        if (x > m) {
            m = x;
            mi = i;
        }
    }
    tf[lid] = m;
    tu[lid] = mi;
    for (var w = WG / 2u; w > 0u; w = w / 2u) {
        workgroupBarrier();
        if (lid < w) {
            let a = tf[lid];
            let b = tf[lid + w];
            if (b > a || (b == a && tu[lid + w] < tu[lid])) {
                tf[lid] = b;
                tu[lid] = tu[lid + w];
            }
        }
    }
    workgroupBarrier();
    let mx = tf[0];
    let arg = tu[0];
    workgroupBarrier();
    if (p.temperature <= 0.0 || p.top_k == 1u) {
        if (lid == 0u) {
            tokens[p.step] = arg;
            next[0] = f32(arg);
        }
        return;
    }
    // 2. The k-th largest key: the largest `lo` with at least k keys ≥ lo.
    var lo = 0u;
    var hi = 0xffffffffu;
    if (p.top_k < v) {
        for (var round = 0u; round < 32u; round = round + 1u) {
            let gap = hi - lo;
            let mid = lo + (gap >> 1u) + (gap & 1u);
            var c = 0u;
            for (var i = lid; i < v; i = i + WG) {
                c = c + select(0u, 1u, key(logits[p.offset + i]) >= mid);
            }
            tu[lid] = c;
            sum_u(lid);
            if (tu[0] >= p.top_k) {
                lo = mid;
            } else {
                hi = mid - 1u;
            }
            workgroupBarrier();
        }
    }
    // 3. Each invocation's chunk of weights, summed in order.
    let chunk = (v + WG - 1u) / WG;
    let start = min(lid * chunk, v);
    let end = min(start + chunk, v);
    var s = 0.0;
    for (var i = start; i < end; i = i + 1u) {
        let x = logits[p.offset + i];
        if (key(x) >= lo) {
            s = s + exp((x - mx) / p.temperature);
        }
    }
    tf[lid] = s;
    workgroupBarrier();
    // 4. The draw.
    if (lid == 0u) {
        var total = 0.0;
        for (var t = 0u; t < WG; t = t + 1u) {
            total = total + tf[t];
        }
        let r = pcg(pcg(pcg(p.seed_lo) ^ p.seed_hi) ^ p.step);
        let goal = f32(r >> 8u) * (1.0 / 16777216.0) * total;
        var acc = 0.0;
        var pick = arg;
        var t = 0u;
        loop {
            if (t >= WG) {
                break;
            }
            if (acc + tf[t] > goal) {
                break;
            }
            acc = acc + tf[t];
            t = t + 1u;
        }
        if (t < WG) {
            let a = min(t * chunk, v);
            let b = min(a + chunk, v);
            for (var i = a; i < b; i = i + 1u) {
                let x = logits[p.offset + i];
                if (key(x) >= lo) {
                    pick = i;
                    acc = acc + exp((x - mx) / p.temperature);
                    if (acc > goal) {
                        break;
                    }
                }
            }
        }
        tokens[p.step] = pick;
        next[0] = f32(pick);
    }
}
