//! The batched-and-strided rewrite of a generated matmul entry point (see "Batches and
//! strides" in `shaders/matmul.wgsl`).
//!
//! The templates write each kernel for one dense (M, K)·(K, N) product, which keeps them
//! readable; [`batched`] then
//! - starts the entry point with `batch_begin(z)` (work-group z is the batch index; the
//!   convolution twins, whose z is a K chunk, are left alone),
//! - reads the stored row strides from `a_ld()` / `b_ld()` (through `a_ks`, `a_ms`, `b_ks`,
//!   `b_ns` for the scalar loads; `lda4` / `ldb4` for the vec4 ones) instead of the row
//!   lengths, which the vec4 kernels also use as bounds (`kv4`, `mv`, `nv`), and
//! - adds the batch offsets to every load of A and B (C's stores add theirs in `store_c`).
//!
//! Without the `BATCHED` override the helpers return the row lengths and zero offsets, so the
//! pipelines compile to the dense kernels they were. The rewrite works line by line on text
//! the templates control, so plain string matching suffices (no regex dependency).

/// The layout selections the scalar kernels compute strides with, and their batched helpers.
const STRIDES: [(&str, &str); 4] = [
    ("select(1u, p.m, TRANS_A)", "a_ks()"),
    ("select(p.k, 1u, TRANS_A)", "a_ms()"),
    ("select(p.n, 1u, TRANS_B)", "b_ks()"),
    ("select(1u, p.k, TRANS_B)", "b_ns()"),
];

/// Lines where `* kv4` strides A's rows (NN) rather than B's (NT).
const KV4_A: [&str; 2] = ["let ra", "min(row0 + rr, mlast) * kv4"];

fn is_word(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Replaces `pat` by `with` where it is not preceded by a word character or a dot (an
/// indexing of the buffer named `pat`, not of `xa[` or `p.a[`).
fn replace_index(line: &str, pat: &str, with: &str) -> String {
    let mut out = String::with_capacity(line.len() + 16);
    let mut rest = line;
    let mut prev: Option<char> = None;
    while let Some(i) = rest.find(pat) {
        let before = rest[..i].chars().next_back().or(prev);
        out.push_str(&rest[..i]);
        if before.is_some_and(|c| is_word(c) || c == '.') {
            out.push_str(pat);
        } else {
            out.push_str(with);
        }
        prev = pat.chars().next_back();
        rest = &rest[i + pat.len()..];
    }
    out.push_str(rest);
    out
}

/// Replaces `pat` by `with` where the next character is not a word character.
fn replace_word_end(line: &str, pat: &str, with: &str) -> String {
    let mut out = String::with_capacity(line.len() + 16);
    let mut rest = line;
    while let Some(i) = rest.find(pat) {
        let after = rest[i + pat.len()..].chars().next();
        out.push_str(&rest[..i]);
        out.push_str(if after.is_some_and(is_word) {
            pat
        } else {
            with
        });
        rest = &rest[i + pat.len()..];
    }
    out.push_str(rest);
    out
}

fn rewrite_line(line: &str) -> String {
    let mut line = line.to_string();
    for (old, new) in STRIDES {
        line = line.replace(old, new);
    }
    if line.contains("* kv4") {
        let a_side = KV4_A.iter().any(|m| line.contains(m));
        line = line.replace("* kv4", if a_side { "* lda4" } else { "* ldb4" });
    }
    line = replace_word_end(&line, "* mv", "* lda4");
    line = replace_word_end(&line, "* nv", "* ldb4");
    line = replace_index(&line, "a[", "a[a_off + ");
    line = replace_index(&line, "a4[", "a4[a_off4 + ");
    line = replace_index(&line, "b[", "b[b_off + ");
    replace_index(&line, "b4[", "b4[b_off4 + ")
}

/// `text`: one or more matmul entry points; `z`: the expression of the work-group's z
/// (`wid.z`, or `gid.z` where the work-group is one deep).
pub fn batched(text: &str, z: &str) -> String {
    let mut out: Vec<String> = Vec::new();
    for line in text.split('\n') {
        out.push(rewrite_line(line));
        if line.starts_with(") {") || (line.starts_with("fn matmul_") && line.ends_with('{')) {
            out.push(format!("    batch_begin({z});"));
        }
        if line.trim().starts_with("let kv4 = p.k / 4u;") {
            out.push("    let lda4 = a_ld() / 4u;".into());
            out.push("    let ldb4 = b_ld() / 4u;".into());
        }
    }
    out.join("\n")
}
