//! The templates' own invariants (tests/shaders.rs validates every generated module with
//! naga and checks its bindings).

use super::batched::batched;
use super::*;

#[test]
fn entry_names_match_text() {
    for k in Kernel::all() {
        for conv in [false, true] {
            let name = k.entry(conv);
            assert!(k.text(conv).contains(&format!("fn {name}(")), "{name}");
        }
    }
}

#[test]
fn specs_are_generated_once() {
    let k = Kernel::Blocked {
        tm: 8,
        tn: 4,
        v4: false,
    };
    let (a, b) = (k.spec(false), k.spec(false));
    assert!(std::ptr::eq(a, b));
    assert!(a.shader.source.starts_with(PRELUDE.source));
    // One entry point per module: nothing of the other kernels.
    assert_eq!(
        a.shader.source.matches("@compute").count(),
        PRELUDE.source.matches("@compute").count() + 1
    );
}

#[test]
fn batched_rewrites_loads_and_strides() {
    let text = "fn matmul_x() {\n    let kv4 = p.k / 4u;\n    let v = a[i] + xa[j] + p.a[0] + b4[k * nv] + a4[q * mv];\n    let s = select(1u, p.m, TRANS_A);";
    let out = batched(text, "wid.z");
    assert_eq!(
        out,
        "fn matmul_x() {\n    batch_begin(wid.z);\n    let kv4 = p.k / 4u;\n    let lda4 = a_ld() / 4u;\n    let ldb4 = b_ld() / 4u;\n    let v = a[a_off + i] + xa[j] + p.a[0] + b4[b_off4 + k * ldb4] + a4[a_off4 + q * lda4];\n    let s = a_ks();"
    );
}

/// Every tensor-core module validates with naga with the capabilities on (what wgpu enables
/// on an adapter with `EXPERIMENTAL_COOPERATIVE_MATRIX` and `SHADER_F16`), and fails
/// without the cooperative-matrix capability: these kernels are checked where no adapter
/// runs them. (tests/shaders.rs checks their bindings as a device would compile them.)
#[test]
fn coop_modules_validate_with_the_capability() {
    use naga::valid::{Capabilities, ValidationFlags, Validator};
    let kernels = coop_kernels();
    // Fragments of 8 and 16, f16 and f32 operands, and more than one J each.
    assert!(kernels.len() >= 8, "{}", kernels.len());
    for k in kernels {
        let Kernel::Coop(c) = k else {
            panic!("{k:?} is not a tensor-core kernel")
        };
        let spec = k.spec(false);
        let src = spec.shader.source;
        assert!(src.starts_with(c.enables()), "{}", spec.entry);
        let module = naga::front::wgsl::parse_str(src)
            .unwrap_or_else(|e| panic!("{}: {}", spec.entry, e.emit_to_string(src)));
        let caps = Capabilities::COOPERATIVE_MATRIX
            | Capabilities::SHADER_FLOAT16
            | Capabilities::SUBGROUP
            | Capabilities::SHADER_FLOAT16_IN_FLOAT32;
        if let Err(e) = Validator::new(ValidationFlags::all(), caps).validate(&module) {
            panic!("{}: {}", spec.entry, e.emit_to_string(src));
        }
        let without = caps - Capabilities::COOPERATIVE_MATRIX;
        assert!(
            Validator::new(ValidationFlags::all(), without)
                .validate(&module)
                .is_err(),
            "{} validated without the cooperative-matrix capability",
            spec.entry
        );
        // One entry point of its own, multiplying the operands' type into f32 accumulators.
        let e = if c.half { "f16" } else { "f32" };
        assert!(src.contains(&format!("coop_mat{}x{}<{e}, A>", c.s, c.s)));
        assert!(src.contains(&format!("coop_mat{}x{}<f32, C>", c.s, c.s)));
        assert_eq!(
            src.matches("@compute").count(),
            PRELUDE.source.matches("@compute").count() + 1
        );
    }
}

/// J covers every warp tile with the fewest subgroups the widest lanes leave.
#[test]
fn coop_subgroups_cover_every_warp_tile() {
    for s in [8, 16] {
        for lanes in [4, 8, 16, 32, 64, 128, 0] {
            let j = coop::j_for(s, lanes);
            let lanes = if lanes == 0 { 128 } else { lanes };
            let subgroups = (coop::invocations(s) / lanes).max(1);
            assert!(j * subgroups >= coop::warp_tiles(s), "s={s} lanes={lanes}");
            assert!(
                (j - 1) * subgroups < coop::warp_tiles(s),
                "s={s} lanes={lanes}"
            );
        }
    }
    // NVIDIA's 32 lanes: one warp tile per subgroup.
    assert_eq!(coop::j_for(16, 32), 1);
}

/// The tensor-core modules also translate to SPIR-V (what wgpu's Vulkan backend hands the
/// driver), with the capabilities such an adapter enables. Linux only: naga's SPIR-V writer
/// is there through wgpu's Vulkan backend.
#[cfg(target_os = "linux")]
#[test]
fn coop_modules_translate_to_spirv() {
    use naga::valid::{Capabilities, ValidationFlags, Validator};
    for k in coop_kernels() {
        let spec = k.spec(false);
        let module = naga::front::wgsl::parse_str(spec.shader.source).unwrap();
        let info = Validator::new(ValidationFlags::all(), Capabilities::all())
            .validate(&module)
            .unwrap();
        // A biased, batched layout's constants, as a dense layer's forward sets them.
        let constants = [
            ("EPI", 1.0),
            ("ACT", 1.0),
            ("TRANS_B", 1.0),
            ("BATCHED", 1.0),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        let (module, info) = naga::back::pipeline_constants::process_overrides(
            &module,
            &info,
            Some((naga::ShaderStage::Compute, spec.entry)),
            &constants,
        )
        .unwrap_or_else(|e| panic!("{}: {e}", spec.entry));
        let opts = naga::back::spv::Options {
            lang_version: (1, 6),
            ..Default::default()
        };
        let pipe = naga::back::spv::PipelineOptions {
            shader_stage: naga::ShaderStage::Compute,
            entry_point: spec.entry.to_string(),
        };
        let words = naga::back::spv::write_vec(&module, &info, &opts, Some(&pipe))
            .unwrap_or_else(|e| panic!("{}: {e}", spec.entry));
        assert!(words.len() > 100, "{}", spec.entry);
    }
}

#[test]
fn half_wraps_every_operand_load() {
    let text = "let v = a[a_off + i[j]] + xa[j] + p.a[0] + b4[b_off4 + k];\nlet w = select(0.0, b[min(r, q) * bks], ok) + a4[x];";
    assert_eq!(
        half::wrap_loads(text),
        "let v = h16(a[a_off + i[j]]) + xa[j] + p.a[0] + h16v(b4[b_off4 + k]);\nlet w = select(0.0, h16(b[min(r, q) * bks]), ok) + h16v(a4[x]);"
    );
    assert_eq!(half::bare_loads(text), 4);
    // Every generated kernel, matmul and convolution twins and tensor-core ones: no operand
    // load escapes the rounding (the prelude's helpers call h16 themselves).
    let kernels = Kernel::all().into_iter().chain(coop_kernels());
    for k in kernels {
        for conv in [false, true] {
            let t = k.text(conv);
            assert_eq!(half::bare_loads(&t), 0, "{}", k.entry(conv));
            assert!(
                t.contains("h16(")
                    || t.contains("h16v(")
                    || t.contains("load_a")
                    || t.contains("conv_"),
                "{}: no operand loads at all?",
                k.entry(conv)
            );
        }
    }
    let prelude = PRELUDE.source;
    let own = &prelude[prelude.find("// Matrix multiplication C = op(A)").unwrap()..];
    // Its gathers of four build a vec4 rounded whole: `h16v(vec4<f32>(a[..], ..))`.
    let own: Vec<&str> = own
        .lines()
        .filter(|l| !l.contains("h16v(vec4<f32>("))
        .collect();
    assert_eq!(
        half::bare_loads(&own.join("\n")),
        0,
        "matmul.wgsl's own loads"
    );
}
