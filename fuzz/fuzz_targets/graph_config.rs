//! The functional-config parser (a graph model's architecture) on arbitrary JSON: a typed
//! error or a graph in a topological order that ends at its output, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use suanli::nn::graph_config;

fuzz_target!(|data: &[u8]| {
    let Ok(v) = serde_json::from_slice::<serde_json::Value>(data) else {
        return;
    };
    if let Ok(g) = graph_config::parse(&v) {
        assert!(!g.inputs.is_empty() && g.inputs.iter().all(|(_, s)| !s.is_empty()));
        let n = g.layers.len();
        let mut read = vec![false; n];
        let mut input_read = vec![false; g.inputs.len()];
        for (i, (_, reads)) in g.layers.iter().enumerate() {
            assert!(!reads.is_empty());
            for r in reads {
                match *r {
                    graph_config::Ref::Layer(j) => {
                        assert!(j < i, "layer {i} reads a later layer {j}");
                        read[j] = true;
                    }
                    graph_config::Ref::Input(k) => input_read[k] = true,
                }
            }
        }
        // Every input is read.
        assert!(input_read.iter().all(|&r| r));
        // Every layer is read by another or is an output; the last is an output.
        assert!((0..n).all(|j| read[j] || g.outputs.contains(&j)));
        assert!(g.outputs.contains(&(n - 1)));
        // Written back and parsed again, the same graph.
        let name = g.name.clone().unwrap_or_default();
        assert!(!g.outputs.is_empty() && g.outputs.iter().all(|&j| j < n));
        let again = graph_config::write(&name, &g.inputs, &g.layers, &g.outputs);
        let g2 = graph_config::parse(&again).expect("a written config parses");
        assert_eq!(g2.layers.len(), n);
    }
});
