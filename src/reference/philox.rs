//! Philox4x32-10 on the host: the words `shaders/array_random.wgsl` must produce.

/// One Philox4x32-10 block: four words for counter `ctr` under `key`.
pub fn philox4x32_10(ctr: [u32; 4], key: [u32; 2]) -> [u32; 4] {
    let (mut c, mut k) = (ctr, key);
    for _ in 0..10 {
        let p0 = 0xD251_1F53u64 * c[0] as u64;
        let p1 = 0xCD9E_8D57u64 * c[2] as u64;
        c = [
            (p1 >> 32) as u32 ^ c[1] ^ k[0],
            p1 as u32,
            (p0 >> 32) as u32 ^ c[3] ^ k[1],
            p0 as u32,
        ];
        k = [
            k[0].wrapping_add(0x9E37_79B9),
            k[1].wrapping_add(0xBB67_AE85),
        ];
    }
    c
}

/// Word i of a draw starting at counter block `block` of `stream` under `key`.
pub fn word(key: u64, stream: u64, block: u64, i: usize) -> u32 {
    let b = block.wrapping_add((i / 4) as u64);
    let w = philox4x32_10(
        [
            b as u32,
            (b >> 32) as u32,
            stream as u32,
            (stream >> 32) as u32,
        ],
        [key as u32, (key >> 32) as u32],
    );
    w[i % 4]
}
