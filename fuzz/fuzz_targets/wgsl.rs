//! Custom-kernel WGSL through naga validation and suanli's binding reflection (what
//! `CustomKernel::new` does before a device sees the shader): a typed error or a reflection,
//! never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(src) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok((module, info)) = suanli::services::pipeline::validate_wgsl("fuzz.wgsl", src) {
        for ep in &module.entry_points {
            let _ = suanli::services::pipeline::reflect("fuzz.wgsl", &module, &info, &ep.name);
        }
    }
});
