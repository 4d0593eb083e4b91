//! Every WGSL file in shaders/ passes naga validation, and every built-in kernel's Rust
//! binding declaration matches what its WGSL entry point uses, the matmul kernels generated
//! at run time included (each in its module as a device would compile it). Runs on the CPU,
//! no GPU.

use suanli::exec::{reflect, validate_wgsl, Access, KernelSpec, Shader};
use suanli::internals::kernels::{jacobi, matmul_gen, qr};
use suanli::internals::kernels::{KERNELS, SHADERS};

fn all_shaders() -> Vec<Shader> {
    SHADERS.to_vec()
}

fn all_kernels() -> Vec<KernelSpec> {
    let mut all: Vec<KernelSpec> = KERNELS.iter().flat_map(|k| k.iter().copied()).collect();
    all.extend(matmul_gen::all_specs().into_iter().copied());
    // The tensor-core kernels (validated with every capability on, as no adapter here runs
    // them).
    all.extend(matmul_gen::coop_specs().into_iter().copied());
    // The float64 twins of the Jacobi and Householder kernels (validated here on any adapter;
    // only adapters with SHADER_F64 run them).
    all.push(*jacobi::round_f64().unwrap());
    all.push(*qr::step_f64().unwrap());
    all
}

#[test]
fn every_shader_is_valid_and_every_file_is_used() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/shaders");
    let shaders = all_shaders();
    for sh in &shaders {
        if let Err(e) = validate_wgsl(sh.name, sh.source) {
            panic!("shaders/{}.wgsl (as assembled): {e}", sh.name);
        }
    }
    let mut on_disk = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "wgsl") {
            on_disk += 1;
            let stem = path.file_stem().unwrap().to_str().unwrap().to_string();
            assert!(
                shaders.iter().any(|s| s.name == stem),
                "shaders/{stem}.wgsl is not in kernels::SHADERS"
            );
            // The file's text is exactly what the crate embeds (after any preludes).
            let text = std::fs::read_to_string(&path).unwrap();
            let sh = shaders.iter().find(|s| s.name == stem).unwrap();
            assert!(
                sh.source.ends_with(&text),
                "{stem}: embedded source is stale"
            );
        }
    }
    assert_eq!(on_disk, shaders.len());
}

#[test]
fn kernel_declarations_match_wgsl() {
    for k in all_kernels() {
        let (module, info) = validate_wgsl(k.shader.name, k.shader.source).unwrap();
        let refl = reflect(k.shader.name, &module, &info, k.entry)
            .unwrap_or_else(|e| panic!("{}::{}: {e}", k.shader.name, k.entry));
        let found: Vec<(u32, Access)> = refl
            .bindings
            .iter()
            .map(|b| (b.binding, b.access))
            .collect();
        let declared: Vec<(u32, Access)> = k
            .bindings
            .iter()
            .enumerate()
            .map(|(i, a)| (i as u32, *a))
            .collect();
        assert_eq!(found, declared, "{}::{}", k.shader.name, k.entry);
        // House convention: read-only inputs, then read-write outputs, then the uniform.
        let rank = |a: &Access| match a {
            Access::ReadOnly => 0,
            Access::ReadWrite => 1,
            Access::Uniform => 2,
        };
        assert!(
            k.bindings.windows(2).all(|w| rank(&w[0]) <= rank(&w[1])),
            "{}::{} bindings out of convention order: {:?}",
            k.shader.name,
            k.entry,
            k.bindings
        );
    }
}

/// Every generated matmul entry point exists once, and so does its convolution twin: 55 of
/// each (the narrow kernel without subgroups; 3 register blocks and 3 tiles, scalar and vec4;
/// for each of 6 subgroup sizes narrow, shallow, and 3 row counts (sizes 4, 8, 16) or 2,
/// scalar and vec4).
#[test]
fn every_generated_matmul_kernel_is_declared() {
    let specs = matmul_gen::all_specs();
    assert_eq!(specs.len(), 2 * (1 + 6 + 6 + 3 * 8 + 3 * 6));
    let mut entries: Vec<&str> = specs.iter().map(|k| k.entry).collect();
    entries.sort();
    entries.dedup();
    assert_eq!(entries.len(), specs.len(), "duplicate entry points");
}

#[test]
fn invalid_wgsl_reports_location() {
    let src = "fn main() {\n  let x: f32 = ;\n}\n";
    match validate_wgsl("broken", src) {
        Err(suanli::Error::Shader {
            file,
            line,
            column,
            message,
        }) => {
            assert_eq!(file, "broken");
            assert_eq!(line, 2);
            assert!(column > 1, "column {column}");
            assert!(!message.is_empty());
        }
        other => panic!("expected Error::Shader, got {other:?}"),
    }
    // A type error caught by the validator (not the parser) also carries a location.
    let src = "@compute @workgroup_size(1)\nfn main() {\n  var x: u32 = 1u;\n  x = x + 1.5;\n}\n";
    match validate_wgsl("typed", src) {
        Err(suanli::Error::Shader { line, .. }) => assert_eq!(line, 4),
        other => panic!("expected Error::Shader, got {other:?}"),
    }
}
