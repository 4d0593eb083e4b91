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
