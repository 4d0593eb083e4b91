//! The IDX reader (raw and gzip) on arbitrary bytes: a typed error or a consistent result,
//! never a panic, and never an allocation of a claimed size (run with -malloc_limit_mb).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(idx) = suanli::data::parse_idx(std::path::Path::new("fuzz.idx"), data) {
        let n: usize = idx.dims.iter().product();
        assert_eq!(n, idx.data.len(), "dims {:?} vs {} bytes", idx.dims, idx.data.len());
    }
});
