//! The IDX reader (raw and gzip) on arbitrary bytes: a typed error or a consistent result,
//! never a panic, and never an allocation of a claimed size (run with -malloc_limit_mb).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(idx) = suanli::data::parse_idx(std::path::Path::new("fuzz.idx"), data) {
        // The product as the reader computes it: a zero dimension makes it 0 even when
        // the others would overflow.
        let n = idx
            .dims
            .iter()
            .fold(1u64, |a, &d| a.saturating_mul(d as u64));
        assert_eq!(n, idx.data.len() as u64, "dims {:?} vs {} bytes", idx.dims, idx.data.len());
    }
});
