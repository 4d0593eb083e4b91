//! The model-file parser (safetensors framing, architecture JSON: layer specs checked as
//! `Sequential::add` checks them and shapes inferred layer by layer, tensor dtypes and
//! shapes) on arbitrary bytes: a typed error or a consistent model, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let path = std::path::Path::new("fuzz.safetensors");
    if let Ok(m) = suanli::internals::weights_file::parse_model_file(path, data) {
        for (i, l) in m.layers.iter().enumerate() {
            // Each weight holds exactly what its shape says, and the layers chain.
            for (w, v) in &l.weights {
                assert_eq!(v.len(), w.shape.iter().product::<usize>());
            }
            if i > 0 {
                assert_eq!(m.layers[i - 1].output, l.input);
            }
        }
    }
});
