//! The model-file parser (safetensors framing, architecture JSON: layer specs checked as
//! `Sequential::add` checks them and shapes inferred layer by layer, a chain's list or a
//! graph's functional config, tensor dtypes and shapes) on arbitrary bytes: a typed error or a consistent model, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use suanli::nn::graph_config;

fuzz_target!(|data: &[u8]| {
    let path = std::path::Path::new("fuzz.safetensors");
    if let Ok(m) = suanli::internals::weights_file::parse_model_file(path, data) {
        for (i, l) in m.layers.iter().enumerate() {
            // Each weight holds exactly what its shape says, and the layers chain.
            for (w, v) in &l.weights {
                assert_eq!(v.len(), w.shape.iter().product::<usize>());
            }
            // Each input is the model's or an earlier layer's output, of the shape it reads.
            assert_eq!(l.inbound.len(), l.inputs.len());
            assert_eq!(l.inputs[0], l.input);
            for (src, shape) in l.inbound.iter().zip(&l.inputs) {
                match *src {
                    graph_config::Ref::Layer(j) => {
                        assert!(j < i);
                        assert_eq!(&m.layers[j].output, shape);
                    }
                    graph_config::Ref::Input(k) => {
                        if let Some(g) = &m.graph {
                            assert_eq!(&g.inputs[k].1, shape);
                        } else {
                            assert_eq!(k, 0);
                        }
                    }
                }
            }
        }
    }
});
