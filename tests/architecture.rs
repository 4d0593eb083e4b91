//! The crate's layers import one way.
//!
//! Reads every file in `src/`, finds what each module refers to (`use` items, `crate::…`,
//! `super::…` and `self::…` paths in code, and `impl` blocks for another module's types),
//! resolves names re-exported by `lib.rs` or a `mod.rs` to the module that defines them, and
//! fails when a module refers to a layer above its own, when modules refer to each other in
//! a cycle, when a module is missing from the table, or when code inside `src/` imports
//! through a re-export instead of from the defining module. Comments and string literals are
//! blanked first, so a doc link is not an import.
//!
//! The table below is the layer order (bottom first); `docs/ARCHITECTURE.md` explains it.
//! The checker itself is tested on planted faults (an upward import, a cycle, a re-export
//! import, an upward `impl`), so a passing run means something.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;

/// Layers, bottom first. A module may refer to modules of its own layer or below.
/// `x::*` matches every module under `x`.
const LAYERS: &[(&str, &[&str])] = &[
    ("base", &["error", "io", "random"]),
    (
        "configuration and vocabulary",
        &["config", "config::*", "vocab"],
    ),
    (
        "device",
        &[
            "device",
            "device::adapter",
            "device::coop",
            "device::core",
            "device::tune",
        ],
    ),
    ("memory", &["memory"]),
    ("execution services", &["services", "services::*"]),
    ("device handle", &["runtime"]),
    ("recording", &["exec", "exec::*"]),
    ("tensors", &["tensor"]),
    (
        "kernels",
        &["kernels", "kernels::*", "reference", "reference::*"],
    ),
    ("ops", &["ops", "custom"]),
    ("arrays", &["array", "array::*"]),
    ("observation", &["telemetry", "telemetry::*"]),
    ("data", &["data", "data::*"]),
    ("training", &["nn", "nn::*"]),
    ("several devices", &["multi", "multi::*"]),
    ("crate root", &[""]),
];

fn layer_of(module: &str) -> Option<(usize, &'static str)> {
    for (i, (name, mods)) in LAYERS.iter().enumerate() {
        for m in mods.iter() {
            let hit = match m.strip_suffix("::*") {
                Some(prefix) => module.starts_with(&format!("{prefix}::")),
                None => module == *m,
            };
            if hit {
                return Some((i, name));
            }
        }
    }
    None
}

/// Blanks comments, string and char literals (keeping newlines), so only code remains.
fn strip(src: &str) -> String {
    let c: Vec<char> = src.chars().collect();
    let mut out = String::with_capacity(src.len());
    let mut i = 0;
    let blank = |ch: char| if ch == '\n' { '\n' } else { ' ' };
    while i < c.len() {
        if c[i] == '/' && c.get(i + 1) == Some(&'/') {
            while i < c.len() && c[i] != '\n' {
                out.push(' ');
                i += 1;
            }
        } else if c[i] == '/' && c.get(i + 1) == Some(&'*') {
            let mut depth = 0;
            while i < c.len() {
                if c[i] == '/' && c.get(i + 1) == Some(&'*') {
                    depth += 1;
                    out.push_str("  ");
                    i += 2;
                } else if c[i] == '*' && c.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    out.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    out.push(blank(c[i]));
                    i += 1;
                }
            }
        } else if c[i] == 'r'
            && (c.get(i + 1) == Some(&'"') || c.get(i + 1) == Some(&'#'))
            && (i == 0 || !(c[i - 1].is_alphanumeric() || c[i - 1] == '_'))
        {
            // Raw string r#"…"#.
            let mut j = i + 1;
            let mut hashes = 0;
            while c.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if c.get(j) != Some(&'"') {
                out.push(c[i]);
                i += 1;
                continue;
            }
            j += 1;
            loop {
                if j >= c.len() {
                    break;
                }
                if c[j] == '"' && (0..hashes).all(|h| c.get(j + 1 + h) == Some(&'#')) {
                    j += 1 + hashes;
                    break;
                }
                j += 1;
            }
            for &ch in &c[i..j.min(c.len())] {
                out.push(blank(ch));
            }
            i = j;
        } else if c[i] == '"' {
            out.push(' ');
            i += 1;
            while i < c.len() && c[i] != '"' {
                if c[i] == '\\' {
                    out.push(' ');
                    i += 1;
                }
                if i < c.len() {
                    out.push(blank(c[i]));
                    i += 1;
                }
            }
            out.push(' ');
            i += 1;
        } else if c[i] == '\'' {
            // A char literal ('x', '\n', '\u{..}'), not a lifetime ('a).
            let end = if c.get(i + 1) == Some(&'\\') {
                (i + 2..c.len()).find(|&j| c[j] == '\'')
            } else if c.get(i + 2) == Some(&'\'') {
                Some(i + 2)
            } else {
                None
            };
            match end {
                Some(e) => {
                    for _ in i..=e {
                        out.push(' ');
                    }
                    i = e + 1;
                }
                None => {
                    out.push('\'');
                    i += 1;
                }
            }
        } else {
            out.push(c[i]);
            i += 1;
        }
    }
    out
}

fn is_ident(ch: char) -> bool {
    ch.is_alphanumeric() || ch == '_'
}

/// Splits a `use` tree (`crate::a::{b, c::{d as e}, self}`) into full paths with aliases.
fn expand_use(tree: &str) -> Vec<(String, String)> {
    fn go(prefix: &str, t: &str, out: &mut Vec<(String, String)>) {
        let t = t.trim();
        if t.is_empty() {
            return;
        }
        if let Some(open) = t.find('{') {
            let head = t[..open].trim().trim_end_matches("::");
            let inner = &t[open + 1..t.rfind('}').unwrap_or(t.len())];
            let base = join(prefix, head);
            let mut depth = 0;
            let mut start = 0;
            for (i, ch) in inner.char_indices() {
                match ch {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        go(&base, &inner[start..i], out);
                        start = i + 1;
                    }
                    _ => {}
                }
            }
            go(&base, &inner[start..], out);
            return;
        }
        let (path, alias) = match t.split_once(" as ") {
            Some((p, a)) => (p.trim(), a.trim().to_string()),
            None => (t, t.rsplit("::").next().unwrap_or(t).trim().to_string()),
        };
        if path == "self" {
            let last = prefix.rsplit("::").next().unwrap_or(prefix).to_string();
            out.push((
                prefix.to_string(),
                if alias == "self" { last } else { alias },
            ));
        } else {
            out.push((join(prefix, path), alias));
        }
    }
    fn join(a: &str, b: &str) -> String {
        match (a.is_empty(), b.is_empty()) {
            (true, _) => b.to_string(),
            (_, true) => a.to_string(),
            _ => format!("{a}::{b}"),
        }
    }
    let mut out = Vec::new();
    let compact: String = tree.split_whitespace().collect::<Vec<_>>().join(" ");
    go("", &compact, &mut out);
    out
}

/// One file's module path from its place under `src/`.
fn module_of(rel: &str) -> String {
    let rel = rel.trim_end_matches(".rs");
    let rel = rel.strip_suffix("/mod").unwrap_or(rel);
    if rel == "lib" {
        String::new()
    } else {
        rel.replace('/', "::")
    }
}

/// What one file declares and refers to.
#[derive(Default)]
struct FileFacts {
    /// `pub use` items: (exported name, target path), for re-export resolution.
    reexports: Vec<(String, String)>,
    /// (line, inline module path, referenced path, how).
    refs: Vec<(usize, String, String, &'static str)>,
}

fn facts(module: &str, is_reexporter: bool, src: &str, known: &BTreeSet<String>) -> FileFacts {
    let code = strip(src);
    let mut f = FileFacts::default();
    let chars: Vec<char> = code.chars().collect();
    let line_of = |pos: usize| chars[..pos].iter().filter(|&&c| c == '\n').count() + 1;
    // Inline modules (`mod tests { … }`) by brace depth.
    let mut stack: Vec<(String, i32)> = Vec::new();
    let mut depth = 0i32;
    let mut uses: HashMap<String, String> = HashMap::new();
    let mut i = 0;
    let word_at = |i: usize, w: &str| -> bool {
        let wl: Vec<char> = w.chars().collect();
        i + wl.len() <= chars.len()
            && chars[i..i + wl.len()] == wl[..]
            && (i == 0 || !is_ident(chars[i - 1]))
            && chars.get(i + wl.len()).is_none_or(|c| !is_ident(*c))
    };
    let current = |stack: &Vec<(String, i32)>| -> String {
        let mut m = module.to_string();
        for (name, _) in stack {
            m = if m.is_empty() {
                name.clone()
            } else {
                format!("{m}::{name}")
            };
        }
        m
    };
    while i < chars.len() {
        let ch = chars[i];
        if ch == '{' {
            depth += 1;
        } else if ch == '}' {
            depth -= 1;
            if stack.last().is_some_and(|(_, d)| *d == depth) {
                stack.pop();
            }
        }
        if word_at(i, "mod") {
            // `mod name {` opens an inline module; `mod name;` declares a file.
            let rest: String = chars[i + 3..(i + 80).min(chars.len())].iter().collect();
            let name: String = rest
                .trim_start()
                .chars()
                .take_while(|c| is_ident(*c))
                .collect();
            let after = rest.trim_start()[name.len()..].trim_start();
            if !name.is_empty() && after.starts_with('{') {
                stack.push((name, depth));
            }
        }
        if word_at(i, "use") {
            let end = (i..chars.len())
                .find(|&j| chars[j] == ';')
                .unwrap_or(chars.len());
            let tree: String = chars[i + 3..end].iter().collect();
            let before: String = chars[i.saturating_sub(12)..i].iter().collect();
            let public = before.trim_end().ends_with("pub") || before.contains("pub(crate)");
            let here = current(&stack);
            for (path, alias) in expand_use(&tree) {
                // 2018-edition `use child::X` names a module of the current one.
                let first = path.split("::").next().unwrap_or("");
                let local = if here.is_empty() {
                    first.to_string()
                } else {
                    format!("{here}::{first}")
                };
                let path = if known.contains(&local) {
                    format!("self::{path}")
                } else {
                    path
                };
                let full = absolute(&here, &path);
                let Some(full) = full else { continue };
                uses.insert(alias.clone(), full.clone());
                if public && is_reexporter && stack.is_empty() {
                    f.reexports.push((alias, full));
                } else {
                    f.refs.push((line_of(i), here.clone(), full, "use"));
                }
            }
            i = end;
            continue;
        }
        // Paths in code: crate::…, super::…, self::….
        for root in ["crate", "super", "self"] {
            if word_at(i, root) && chars.get(i + root.len()) == Some(&':') {
                let mut j = i;
                while j < chars.len() && (is_ident(chars[j]) || chars[j] == ':') {
                    j += 1;
                }
                let path: String = chars[i..j].iter().collect();
                let here = current(&stack);
                if let Some(full) = absolute(&here, path.trim_end_matches(':')) {
                    f.refs.push((line_of(i), here, full, "path"));
                }
                i = j;
                break;
            }
        }
        // A child module named in code (`elementwise::SHADER` inside kernels/mod.rs).
        if i < chars.len()
            && is_ident(chars[i])
            && (i == 0 || !(is_ident(chars[i - 1]) || chars[i - 1] == ':'))
        {
            let mut j = i;
            while j < chars.len() && is_ident(chars[j]) {
                j += 1;
            }
            if chars.get(j) == Some(&':') && chars.get(j + 1) == Some(&':') {
                let name: String = chars[i..j].iter().collect();
                let here = current(&stack);
                let child = if here.is_empty() {
                    name.clone()
                } else {
                    format!("{here}::{name}")
                };
                if known.contains(&child) && !uses.contains_key(&name) {
                    f.refs.push((line_of(i), here, child, "path"));
                }
            }
        }
        if i < chars.len() && word_at(i, "impl") {
            // impl<…> [Trait for] Type: the self type, resolved through the imports.
            let mut j = i + 4;
            let skip_ws = |j: &mut usize| {
                while *j < chars.len() && chars[*j].is_whitespace() {
                    *j += 1;
                }
            };
            skip_ws(&mut j);
            if chars.get(j) == Some(&'<') {
                let mut d = 0;
                while j < chars.len() {
                    if chars[j] == '<' {
                        d += 1;
                    } else if chars[j] == '>' {
                        d -= 1;
                        if d == 0 {
                            j += 1;
                            break;
                        }
                    }
                    j += 1;
                }
            }
            let read_path = |j: &mut usize| -> String {
                skip_ws(j);
                let s = *j;
                while *j < chars.len() && (is_ident(chars[*j]) || chars[*j] == ':') {
                    *j += 1;
                }
                chars[s..*j].iter().collect()
            };
            let first = read_path(&mut j);
            let mut k = j;
            while k < chars.len() && chars[k] != '{' && chars[k] != ';' {
                k += 1;
            }
            let header: String = chars[j..k].iter().collect();
            let self_ty = match header.find(" for ") {
                Some(p) => {
                    let mut jj = j + p + 5;
                    read_path(&mut jj)
                }
                None => first,
            };
            let head = self_ty.split("::").next().unwrap_or("").to_string();
            let resolved = if head == "crate" || head == "super" || head == "self" {
                absolute(&current(&stack), &self_ty)
            } else {
                uses.get(&head).cloned()
            };
            if let Some(full) = resolved {
                f.refs.push((line_of(i), current(&stack), full, "impl"));
            }
        }
        i += 1;
    }
    f
}

/// `crate::a::b` → `a::b`; `super::x` and `self::x` relative to `here`; others → None
/// (external crates, std).
fn absolute(here: &str, path: &str) -> Option<String> {
    let mut parts: Vec<&str> = path.split("::").filter(|s| !s.is_empty()).collect();
    let mut base: Vec<String> = if here.is_empty() {
        Vec::new()
    } else {
        here.split("::").map(String::from).collect()
    };
    match parts.first().copied() {
        Some("crate") => {
            base.clear();
            parts.remove(0);
        }
        Some("super") | Some("self") => {
            while let Some(&p) = parts.first() {
                match p {
                    "super" => {
                        base.pop();
                    }
                    "self" => {}
                    _ => break,
                }
                parts.remove(0);
            }
        }
        _ => return None,
    }
    base.extend(parts.iter().map(|s| s.to_string()));
    Some(base.join("::"))
}

struct Crate {
    /// Module path → facts (file modules only).
    files: BTreeMap<String, FileFacts>,
}

impl Crate {
    fn new(files: &[(String, String)]) -> Crate {
        let known: BTreeSet<String> = files.iter().map(|(rel, _)| module_of(rel)).collect();
        let mut out = BTreeMap::new();
        for (rel, src) in files {
            let m = module_of(rel);
            let reexporter = rel == "lib.rs" || rel.ends_with("/mod.rs");
            out.insert(m.clone(), facts(&m, reexporter, src, &known));
        }
        Crate { files: out }
    }

    /// The file module a path refers to, following re-exports; and whether it went through
    /// one.
    fn resolve(&self, path: &str, hops: usize) -> (String, bool) {
        let segs: Vec<&str> = if path.is_empty() {
            Vec::new()
        } else {
            path.split("::").collect()
        };
        // Longest prefix that is a file module.
        let mut n = segs.len();
        while n > 0 && !self.files.contains_key(&segs[..n].join("::")) {
            n -= 1;
        }
        let module = segs[..n].join("::");
        if hops < 8 {
            if let (Some(f), Some(name)) = (self.files.get(&module), segs.get(n)) {
                if let Some((_, target)) = f.reexports.iter().find(|(a, _)| a == name) {
                    let rest = segs[n + 1..].join("::");
                    let t = if rest.is_empty() {
                        target.clone()
                    } else {
                        format!("{target}::{rest}")
                    };
                    return (self.resolve(&t, hops + 1).0, true);
                }
                // A `#[macro_export]` macro lives at the crate root, whichever file defines
                // it: `crate::name!` reaches up to the root, so kernels that used one would be
                // flagged. Macros get a home in a module (`pub(crate) use name;`) instead.
            }
        }
        (module, false)
    }

    /// Every violation of the layer rule.
    fn check(&self) -> Vec<String> {
        let mut problems = Vec::new();
        let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for m in self.files.keys() {
            if layer_of(m).is_none() {
                problems.push(format!(
                    "module `{m}` has no layer in tests/architecture.rs's table"
                ));
            }
        }
        for (m, f) in &self.files {
            for (line, _inline, path, how) in &f.refs {
                let (target, via_reexport) = self.resolve(path, 0);
                if target == *m || target.is_empty() && path.is_empty() {
                    continue;
                }
                // A module's own children and parent are still other modules; only the
                // module itself is exempt.
                if via_reexport {
                    problems.push(format!(
                        "{m}:{line}: `{path}` is imported through a re-export; import it from `{target}`"
                    ));
                }
                let (Some((la, na)), Some((lb, nb))) = (layer_of(m), layer_of(&target)) else {
                    continue;
                };
                if lb > la {
                    problems.push(format!(
                        "{m}:{line}: {how} of `{path}` reaches up from layer \"{na}\" to `{target}` in layer \"{nb}\""
                    ));
                }
                edges.entry(m.clone()).or_default().insert(target);
            }
        }
        for cycle in cycles(&edges) {
            problems.push(format!(
                "modules refer to each other in a cycle: {}",
                cycle.join(" → ")
            ));
        }
        problems
    }
}

/// Strongly connected components of more than one module (Tarjan).
fn cycles(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct T<'a> {
        edges: &'a BTreeMap<String, BTreeSet<String>>,
        index: HashMap<String, usize>,
        low: HashMap<String, usize>,
        on: BTreeSet<String>,
        stack: Vec<String>,
        next: usize,
        out: Vec<Vec<String>>,
    }
    fn visit(t: &mut T<'_>, v: &str) {
        t.index.insert(v.to_string(), t.next);
        t.low.insert(v.to_string(), t.next);
        t.next += 1;
        t.stack.push(v.to_string());
        t.on.insert(v.to_string());
        let succ: Vec<String> = t
            .edges
            .get(v)
            .map(|s| s.iter().cloned().collect())
            .unwrap_or_default();
        for w in succ {
            if !t.index.contains_key(&w) {
                visit(t, &w);
                let lw = t.low[&w];
                let lv = t.low.get_mut(v).unwrap();
                *lv = (*lv).min(lw);
            } else if t.on.contains(&w) {
                let iw = t.index[&w];
                let lv = t.low.get_mut(v).unwrap();
                *lv = (*lv).min(iw);
            }
        }
        if t.low[v] == t.index[v] {
            let mut comp = Vec::new();
            while let Some(w) = t.stack.pop() {
                t.on.remove(&w);
                let done = w == v;
                comp.push(w);
                if done {
                    break;
                }
            }
            if comp.len() > 1 {
                comp.sort();
                t.out.push(comp);
            }
        }
    }
    let mut t = T {
        edges,
        index: HashMap::new(),
        low: HashMap::new(),
        on: BTreeSet::new(),
        stack: Vec::new(),
        next: 0,
        out: Vec::new(),
    };
    let nodes: Vec<String> = edges.keys().cloned().collect();
    for v in nodes {
        if !t.index.contains_key(&v) {
            visit(&mut t, &v);
        }
    }
    t.out
}

fn read_tree(dir: &Path, base: &Path, out: &mut Vec<(String, String)>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir).unwrap().flatten().collect();
    entries.sort_by_key(|e| e.path());
    for e in entries {
        let p = e.path();
        if p.is_dir() {
            read_tree(&p, base, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            let rel = p
                .strip_prefix(base)
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/");
            out.push((rel, std::fs::read_to_string(&p).unwrap()));
        }
    }
}

fn src_files() -> Vec<(String, String)> {
    let base = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    read_tree(&base, &base, &mut files);
    files
}

#[test]
fn layers_import_one_way_and_without_cycles() {
    let files = src_files();
    assert!(files.len() > 30, "src/ not found");
    let problems = Crate::new(&files).check();
    assert!(
        problems.is_empty(),
        "the layer rule is broken:\n  {}",
        problems.join("\n  ")
    );
}

#[test]
fn every_file_is_small() {
    for (rel, src) in src_files() {
        let lines = src.lines().count();
        assert!(
            lines <= 700,
            "src/{rel} has {lines} lines (keep files under ~600, one job each)"
        );
    }
}

/// A tiny crate with the layer table's shape, for planting faults.
fn toy(extra: &[(&str, &str)]) -> Vec<String> {
    let mut files: Vec<(String, String)> = vec![
        ("lib.rs".into(), "pub mod error;\npub mod tensor;\npub mod nn;\npub use tensor::Tensor;\n".into()),
        ("error.rs".into(), "pub enum Error {}\n".into()),
        ("tensor.rs".into(), "use crate::error::Error;\npub struct Tensor;\n".into()),
        ("nn/mod.rs".into(), "pub mod model;\npub mod fit;\n".into()),
        ("nn/model.rs".into(), "use crate::tensor::Tensor;\n/// [`crate::nn::fit`] in a doc link is not an import.\npub struct Sequential(Tensor);\n".into()),
        ("nn/fit.rs".into(), "use crate::nn::model::Sequential;\nimpl Sequential { pub fn fit(&self) {} }\n".into()),
    ];
    for (rel, src) in extra {
        if let Some(f) = files.iter_mut().find(|(r, _)| r == rel) {
            f.1.push_str(src);
        } else {
            files.push((rel.to_string(), src.to_string()));
        }
    }
    Crate::new(&files).check()
}

#[test]
fn the_checker_passes_a_clean_crate() {
    assert_eq!(toy(&[]), Vec::<String>::new());
}

#[test]
fn the_checker_catches_an_upward_import() {
    let p = toy(&[("tensor.rs", "use crate::nn::model::Sequential;\n")]);
    assert!(
        p.iter()
            .any(|m| m.contains("tensor:") && m.contains("reaches up") && m.contains("nn::model")),
        "{p:?}"
    );
    // Also when written as a path in code rather than a `use`.
    let p = toy(&[(
        "tensor.rs",
        "fn f() -> Option<crate::nn::model::Sequential> { None }\n",
    )]);
    assert!(p.iter().any(|m| m.contains("reaches up")), "{p:?}");
}

#[test]
fn the_checker_catches_a_cycle() {
    let p = toy(&[
        ("nn/model.rs", "fn g() { crate::nn::fit::helper(); }\n"),
        ("nn/fit.rs", "pub fn helper() {}\n"),
    ]);
    assert!(
        p.iter()
            .any(|m| m.contains("cycle") && m.contains("nn::fit") && m.contains("nn::model")),
        "{p:?}"
    );
}

#[test]
fn the_checker_catches_reexport_imports_and_upward_impls() {
    let p = toy(&[("nn/model.rs", "use crate::Tensor as T2;\n")]);
    assert!(p.iter().any(|m| m.contains("through a re-export")), "{p:?}");
    // An impl block for a type of a higher layer is an upward reference.
    let p = toy(&[(
        "tensor.rs",
        "impl super::nn::model::Sequential { fn h(&self) {} }\n",
    )]);
    assert!(
        p.iter()
            .any(|m| m.contains("impl of") && m.contains("reaches up")),
        "{p:?}"
    );
    // A macro exported at the crate root and used from below is an upward reference, even
    // when its file sits low (src/ has none: `shader!` lives in services::pipeline).
    let p = toy(&[
        (
            "error.rs",
            "#[macro_export]\nmacro_rules! boom { () => {} }\n",
        ),
        ("tensor.rs", "fn f() { crate::boom!(); }\n"),
    ]);
    assert!(
        p.iter()
            .any(|m| m.contains("tensor:") && m.contains("reaches up")),
        "{p:?}"
    );
    // A module missing from the table is reported.
    let p = toy(&[
        ("lib.rs", "pub mod stray;\n"),
        ("stray.rs", "pub fn s() {}\n"),
    ]);
    assert!(
        p.iter().any(|m| m.contains("`stray` has no layer")),
        "{p:?}"
    );
}

#[test]
fn use_trees_expand() {
    let got = expand_use("crate::a::{b, c::{d as e, self}, f::*}");
    assert_eq!(
        got,
        vec![
            ("crate::a::b".to_string(), "b".to_string()),
            ("crate::a::c::d".to_string(), "e".to_string()),
            ("crate::a::c".to_string(), "c".to_string()),
            ("crate::a::f::*".to_string(), "*".to_string()),
        ]
    );
}
