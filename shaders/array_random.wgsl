// Counter-based random numbers for arrays (src/array/random.rs): Philox4x32-10 (Salmon et
// al., "Parallel random numbers: as easy as 1, 2, 3", SC 2011). Invocation b computes block
// b of the call: counter (base + b as 64 bits, stream as 64 bits) under the generator's key,
// four 32-bit words, turned into values by `KIND`: 0 raw words, 1 uniform float32 in
// [lo, hi), 2 normal float32 (Box-Muller on word pairs), 3 integers in [lo, lo + range).

struct Params {
    n: u32,        // values wanted (the last block may be partial)
    base_lo: u32,  // the call's first block, 64 bits
    base_hi: u32,
    stream_lo: u32,
    stream_hi: u32,
    key0: u32,
    key1: u32,
    range: u32,    // KIND 3: high - low as u32 words
    lo: f32,       // KIND 1: low; KIND 2: mean
    hi: f32,       // KIND 1: high; KIND 2: standard deviation
    ilo: u32,      // KIND 3: low, as the dtype's word
    _pad: u32,
}

@group(0) @binding(0) var<storage, read_write> out: array<u32>;
@group(0) @binding(1) var<uniform> p: Params;

override KIND: u32 = 0u;

// The high and low words of a 32×32-bit product, from 16-bit halves (WGSL has no 64-bit
// integers without an extension).
fn mulhilo(a: u32, b: u32) -> vec2<u32> {
    let a0 = a & 0xffffu;
    let a1 = a >> 16u;
    let b0 = b & 0xffffu;
    let b1 = b >> 16u;
    let p00 = a0 * b0;
    let p01 = a0 * b1;
    let p10 = a1 * b0;
    let p11 = a1 * b1;
    let mid = (p00 >> 16u) + (p01 & 0xffffu) + (p10 & 0xffffu);
    let hi = p11 + (p01 >> 16u) + (p10 >> 16u) + (mid >> 16u);
    return vec2<u32>(hi, a * b);
}

fn philox(ctr: vec4<u32>, key: vec2<u32>) -> vec4<u32> {
    var c = ctr;
    var k = key;
    for (var r = 0u; r < 10u; r = r + 1u) {
        let m0 = mulhilo(0xD2511F53u, c.x);
        let m1 = mulhilo(0xCD9E8D57u, c.z);
        c = vec4<u32>(m1.x ^ c.y ^ k.x, m1.y, m0.x ^ c.w ^ k.y, m0.y);
        k = k + vec2<u32>(0x9E3779B9u, 0xBB67AE85u);
    }
    return c;
}

// (0, 1] from a word's top 24 bits: never 0, so its logarithm is finite.
fn open_unit(w: u32) -> f32 {
    return f32((w >> 8u) + 1u) * 5.9604644775390625e-8;
}

// [0, 1) from a word's top 24 bits (NumPy's float32 random takes 24 bits the same way).
fn unit(w: u32) -> f32 {
    return f32(w >> 8u) * 5.9604644775390625e-8;
}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let b = gid.x + gid.y * nwg.x * 64u;
    let first = b * 4u;
    if (first >= p.n) {
        return;
    }
    let lo = p.base_lo + b;
    let carry = select(0u, 1u, lo < b);
    let w = philox(vec4<u32>(lo, p.base_hi + carry, p.stream_lo, p.stream_hi), vec2<u32>(p.key0, p.key1));
    var v = w;
    if (KIND == 1u) {
        for (var i = 0u; i < 4u; i = i + 1u) {
            v[i] = bitcast<u32>(p.lo + (p.hi - p.lo) * unit(w[i]));
        }
    } else if (KIND == 2u) {
        let two_pi = 6.283185307179586;
        let r0 = sqrt(-2.0 * log(open_unit(w.x)));
        let r1 = sqrt(-2.0 * log(open_unit(w.z)));
        v = vec4<u32>(
            bitcast<u32>(p.lo + p.hi * r0 * cos(two_pi * unit(w.y))),
            bitcast<u32>(p.lo + p.hi * r0 * sin(two_pi * unit(w.y))),
            bitcast<u32>(p.lo + p.hi * r1 * cos(two_pi * unit(w.w))),
            bitcast<u32>(p.lo + p.hi * r1 * sin(two_pi * unit(w.w))),
        );
    } else if (KIND == 3u) {
        for (var i = 0u; i < 4u; i = i + 1u) {
            // floor(w · range / 2^32): the multiply-shift map, bias at most range / 2^32.
            v[i] = p.ilo + mulhilo(w[i], p.range).x;
        }
    }
    for (var i = 0u; i < 4u; i = i + 1u) {
        if (first + i < p.n) {
            out[first + i] = v[i];
        }
    }
}
