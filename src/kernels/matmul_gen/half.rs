//! Float16 operands (Keras's `mixed_float16` policy) in every generated kernel: [`wrap_loads`]
//! wraps each load of an operand in the templates' text, `a[..]` and `b[..]` in `h16(..)`,
//! `a4[..]` and `b4[..]` in `h16v(..)` (`shaders/half_operands.wgsl`). With the `HALF`
//! override those round the loaded value to binary16 (`f16_round_`); without it they return it
//! unchanged and the branch folds away when the pipeline is created, so one module serves both
//! and only the pipeline (keyed by its constants) differs.
//!
//! One rewrite instead of an edit of every template: the templates keep writing plain loads,
//! and a load a template adds later is rounded too (`tests.rs` checks that no unwrapped load is
//! left in any generated kernel). The prelude's own load helpers (`load_a`, `load_b`,
//! `sg_load_b4`, `conv_a*`, `dx_strided_a`) call `h16` themselves. Works on text the templates
//! control: an operand's name not preceded by a word character or a dot, then a bracketed
//! index whose brackets balance.

/// The operand buffers and the function that rounds a value loaded from each.
const OPERANDS: [(&str, &str); 4] = [
    ("a4[", "h16v"),
    ("b4[", "h16v"),
    ("a[", "h16"),
    ("b[", "h16"),
];

fn is_word(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// The byte index just past the `]` that closes the `[` at `open`, if the brackets balance.
fn close_of(text: &[u8], open: usize) -> Option<usize> {
    let mut depth = 0usize;
    for (i, &c) in text.iter().enumerate().skip(open) {
        match c {
            b'[' => depth += 1,
            b']' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i + 1);
                }
            }
            _ => {}
        }
    }
    None
}

/// Which operand load starts at byte `i` of `text`, if one does.
fn load_at(text: &[u8], i: usize) -> Option<(&'static str, &'static str)> {
    if i > 0 && (is_word(text[i - 1]) || text[i - 1] == b'.') {
        return None;
    }
    OPERANDS
        .into_iter()
        .find(|(name, _)| text[i..].starts_with(name.as_bytes()))
}

/// `text` with every operand load wrapped in its rounding function (see the module docs).
/// Loads nested inside an index (none today) are left as they are.
pub fn wrap_loads(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len() + text.len() / 8);
    let mut i = 0;
    let mut copied = 0;
    while i < bytes.len() {
        if let Some((name, f)) = load_at(bytes, i) {
            if let Some(end) = close_of(bytes, i + name.len() - 1) {
                out.push_str(&text[copied..i]);
                out.push_str(f);
                out.push('(');
                out.push_str(&text[i..end]);
                out.push(')');
                i = end;
                copied = end;
                continue;
            }
        }
        i += 1;
    }
    out.push_str(&text[copied..]);
    out
}

/// The operand loads in `text` not wrapped by [`wrap_loads`] (for tests: none in a generated
/// kernel).
pub fn bare_loads(text: &str) -> usize {
    let bytes = text.as_bytes();
    (0..bytes.len())
        .filter(|&i| load_at(bytes, i).is_some())
        .filter(|&i| !(text[..i].ends_with("h16(") || text[..i].ends_with("h16v(")))
        .count()
}
