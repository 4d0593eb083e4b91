//! The model-file parser (safetensors framing, architecture JSON, tensor dtypes and shapes)
//! on arbitrary bytes: a typed error or a consistent model, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let path = std::path::Path::new("fuzz.safetensors");
    if let Ok(m) = suanli::nn::weights_file::parse_model_file(path, data) {
        for (i, l) in m.layers.iter().enumerate() {
            assert_eq!(l.kernel.len(), l.input_dim * l.units);
            assert_eq!(l.bias.as_ref().map(Vec::len), l.use_bias.then_some(l.units));
            if i > 0 {
                assert_eq!(m.layers[i - 1].units, l.input_dim);
            }
        }
    }
});
