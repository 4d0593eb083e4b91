// The passes of a Stockham autosort FFT over rows of complex64 values (src/kernels/fft.rs
// records radix-4 passes and, when log2(n) is odd, one radix-2 pass, ping-ponging between two
// buffers; src/array/fft.rs builds every transform on them). A radix-2 pass `log_s` combines
// pairs of sub-transforms `s = 2^log_s` apart:
//     y[q + s·2p] = a + b,  y[q + s·(2p+1)] = (a - b)·w^p   with a = x[q + s·p],
//     b = x[q + s·(p + n/2s)], w = exp(∓2πi·s/n),
// so the output is in natural order after the last pass with no bit reversal. Each
// invocation does one butterfly (no loops, which llvmpipe caps). The twiddles come from a
// table computed on the host in f64 (`tw[k] = exp(-2πi·k/n)`, rounded once to f32) rather
// than by repeated multiplication, so the error does not grow with n.

struct Params {
    rows: u32,
    log_n: u32,
    log_s: u32,
    inverse: u32,
}

@group(0) @binding(0) var<storage, read> src: array<vec2<f32>>;
@group(0) @binding(1) var<storage, read> tw: array<vec2<f32>>;
@group(0) @binding(2) var<storage, read_write> dst: array<vec2<f32>>;
@group(0) @binding(3) var<uniform> p: Params;

@compute @workgroup_size(256)
fn fft_radix2(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let g = gid.x + gid.y * nwg.x * 256u;
    let log_half = p.log_n - 1u;
    let half = 1u << log_half;
    if (g >= p.rows * half) { return; }
    let base = (g >> log_half) << p.log_n;
    let t = g & (half - 1u);
    let s = 1u << p.log_s;
    let q = t & (s - 1u);
    let j = t >> p.log_s;
    let m2 = half >> p.log_s;
    var w = tw[j * s];
    if (p.inverse != 0u) { w.y = -w.y; }
    let a = src[base + q + s * j];
    let b = src[base + q + s * (j + m2)];
    let d = a - b;
    dst[base + q + s * (2u * j)] = a + b;
    dst[base + q + s * (2u * j + 1u)] = vec2<f32>(d.x * w.x - d.y * w.y, d.x * w.y + d.y * w.x);
}

fn twiddle(k: u32, half: u32) -> vec2<f32> {
    // exp(-2πi·k/n) for k < n from the table's first half: w^(k + n/2) = -w^k.
    var w: vec2<f32>;
    if (k < half) { w = tw[k]; } else { w = -tw[k - half]; }
    if (p.inverse != 0u) { w.y = -w.y; }
    return w;
}

fn cmul(a: vec2<f32>, w: vec2<f32>) -> vec2<f32> {
    return vec2<f32>(a.x * w.x - a.y * w.y, a.x * w.y + a.y * w.x);
}

// One radix-4 pass (half the passes and memory traffic of radix-2): pass `log_s` combines
// four sub-transforms `s` apart into y[q + s·(4j + r)] = w^(r·j) · Σ_k a_k (∓i)^(r·k),
// a_k = x[q + s·(j + k·n/4s)].
@compute @workgroup_size(256)
fn fft_radix4(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let g = gid.x + gid.y * nwg.x * 256u;
    let log_quarter = p.log_n - 2u;
    let quarter = 1u << log_quarter;
    if (g >= p.rows * quarter) { return; }
    let base = (g >> log_quarter) << p.log_n;
    let t = g & (quarter - 1u);
    let s = 1u << p.log_s;
    let q = t & (s - 1u);
    let j = t >> p.log_s;
    let m4 = quarter >> p.log_s;
    let i0 = base + q + s * j;
    let a0 = src[i0];
    let a1 = src[i0 + s * m4];
    let a2 = src[i0 + 2u * s * m4];
    let a3 = src[i0 + 3u * s * m4];
    let b0 = a0 + a2;
    let b1 = a0 - a2;
    let b2 = a1 + a3;
    let d = a1 - a3;
    // (a1 - a3)·(-i) forward, ·(+i) inverse.
    var b3 = vec2<f32>(d.y, -d.x);
    if (p.inverse != 0u) { b3 = -b3; }
    let half = quarter * 2u;
    let o = base + q + s * (4u * j);
    dst[o] = b0 + b2;
    dst[o + s] = cmul(b1 + b3, twiddle(j * s, half));
    dst[o + 2u * s] = cmul(b0 - b2, twiddle(2u * j * s, half));
    dst[o + 3u * s] = cmul(b1 - b3, twiddle(3u * j * s, half));
}
