// float64 sin, cos and tan's reduction of large arguments (|x| >= 2^20 * pi/2, where
// shaders/array_math_f64.wgsl's Cody-Waite reduction is no longer exact): Payne and
// Hanek's, x's 53-bit mantissa times the 216 bits of 2/pi that matter for its exponent,
// exactly, in 24-bit limbs held in u64 (fdlibm's k_rem_pio2.c table and limb size); the
// product's integer part mod 8 is the quadrant, its fraction (125 bits, enough for the worst
// cancellation a double meets, about 2^-61) times pi/2 the reduced argument in two doubles.
// Loops: 27 products and 12 carries per call.

// 2/pi's bits after the point, 24 to an entry (entry i is bits 24i+1 to 24i+24).
var<private> IPIO2_M: array<u32, 66> = array<u32, 66>(
    0xA2F983u, 0x6E4E44u, 0x1529FCu, 0x2757D1u, 0xF534DDu, 0xC0DB62u, 0x95993Cu, 0x439041u,
    0xFE5163u, 0xABDEBBu, 0xC561B7u, 0x246E3Au, 0x424DD2u, 0xE00649u, 0x2EEA09u, 0xD1921Cu,
    0xFE1DEBu, 0x1CB129u, 0xA73EE8u, 0x8235F5u, 0x2EBB44u, 0x84E99Cu, 0x7026B4u, 0x5F7E41u,
    0x3991D6u, 0x398353u, 0x39F49Cu, 0x845F8Bu, 0xBDF928u, 0x3B1FF8u, 0x97FFDEu, 0x05980Fu,
    0xEF2F11u, 0x8B5A0Au, 0x6D1F6Du, 0x367ECFu, 0x27CB09u, 0xB74F46u, 0x3F669Eu, 0x5FEA2Du,
    0x7527BAu, 0xC7EBE5u, 0xF17B3Du, 0x0739F7u, 0x8A5292u, 0xEA6BFBu, 0x5FB11Fu, 0x8D5D08u,
    0x560330u, 0x46FC7Bu, 0x6BABF0u, 0xCFBC20u, 0x9AF436u, 0x1DA9E3u, 0x91615Eu, 0xE61B08u,
    0x659985u, 0x5F14A0u, 0x68408Du, 0xFFD880u, 0x4D7327u, 0x310606u, 0x1556CAu, 0x73A8C9u,
    0x60E27Bu, 0xC08C6Bu,
);

struct Rp_m { n: i32, y0: f64, y1: f64 }

// 64 bits of the limbs `acc` (24 bits each, little-endian) from bit `pos` up.
fn limbs64_m(acc: ptr<function, array<u64, 12>>, pos: i32) -> u64 {
    let a = pos / 24;
    let off = u32(pos % 24);
    var r = ((*acc)[a] >> off) | ((*acc)[a + 1] << (24u - off)) | ((*acc)[a + 2] << (48u - off));
    if (off > 8u) { r = r | ((*acc)[a + 3] << (72u - off)); }
    return r;
}

// The product a * b as p + e exactly (Dekker's, each split on the bits so no compiler can
// reassociate it away).
fn mul_err_m(a: f64, b: f64, p: f64) -> f64 {
    let ah = bitcast<f64>(bitcast<u64>(a) & 0xfffffffff8000000lu);
    let al = a - ah;
    let bh = bitcast<f64>(bitcast<u64>(b) & 0xfffffffff8000000lu);
    let bl = b - bh;
    return ((ah * bh - p) + ah * bl + al * bh) + al * bl;
}

// x = n * pi/2 + (y0 + y1), |y0 + y1| <= pi/4, for finite |x| >= 2^20 * pi/2.
fn rem_pio2_big_m(x: f64) -> Rp_m {
    let bits = bitcast<u64>(x);
    let e = i32((bits >> 52u) & 0x7fflu) - 1075;
    let m = (bits & 0x000ffffffffffffflu) | 0x0010000000000000lu;
    // x = m * 2^e. Chunks before k0 contribute multiples of 8 (dropped); the 9 from k0
    // leave an error below 2^-130.
    var k0 = 0;
    if (e >= 27) { k0 = (e - 3) / 24; }
    let q = e - 24 * (k0 + 1);
    var mc = array<u64, 3>(m & 0xfffffflu, (m >> 24u) & 0xfffffflu, m >> 48u);
    var acc: array<u64, 12>;
    for (var j = 0; j < 9; j = j + 1) {
        let c = u64(IPIO2_M[k0 + j]);
        for (var i = 0; i < 3; i = i + 1) {
            acc[8 - j + i] = acc[8 - j + i] + mc[i] * c;
        }
    }
    var carry = 0lu;
    for (var l = 0; l < 12; l = l + 1) {
        let t = acc[l] + carry;
        acc[l] = t & 0xfffffflu;
        carry = t >> 24u;
    }
    // The product is acc * 2^(q - 192): bit 192 - q has weight 1.
    let p = 192 - q;
    let hi = limbs64_m(&acc, p - 61);
    var flo = limbs64_m(&acc, p - 125);
    var n = i32(hi >> 61u);
    var fhi = hi & 0x1ffffffffffffffflu;
    if ((fhi >> 60u) == 1lu) {
        // A fraction of a half or more: the next quadrant, the fraction minus one.
        n = n + 1;
        let borrow = select(0lu, 1lu, flo != 0lu);
        flo = 0lu - flo;
        fhi = (0x2000000000000000lu - fhi - borrow) & 0x1ffffffffffffffflu;
    }
    let neg_frac = ((hi >> 60u) & 1lu) == 1lu;
    // The fraction (fhi . flo, 125 bits) as s + t; each part is an exact double.
    let v1 = f64(fhi >> 8u) * 1.1102230246251565404e-16lf;
    let v2 = f64(((fhi & 0xfflu) << 45u) | (flo >> 19u)) * 1.2325951644078309459e-32lf;
    let v3 = f64(flo & 0x7fffflu) * 2.3509887016445750160e-38lf;
    let w = v2 + v3;
    let s = v1 + w;
    let t = w - (s - v1);
    let pio2_hi = 1.57079632679489655800e+00lf;
    let pio2_lo = 6.12323399573676603587e-17lf;
    let ph = s * pio2_hi;
    let lo = mul_err_m(s, pio2_hi, ph) + s * pio2_lo + t * pio2_hi;
    var y0 = ph + lo;
    var y1 = lo - (y0 - ph);
    if (neg_frac) { y0 = -y0; y1 = -y1; }
    if (x < 0.0lf) { return Rp_m(-n, -y0, -y1); }
    return Rp_m(n, y0, y1);
}
