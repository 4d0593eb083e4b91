//! Per-device measured choices: which variant of a kernel family is fastest on this adapter.
//!
//! A choice is keyed by a kernel family (`"matmul"`) and a shape class (`"default"`, or a
//! bucket of shapes), as cubecl's autotune keys its results, and it is a short text the family
//! itself parses: the device knows no kernel. Choices live in memory for the device's life
//! and on disk (the configured cache folder), keyed by the adapter, its driver, the crate's
//! version and a version string of the family (a hash of its kernel sources), so a new driver
//! or an edited kernel measures again and nothing else does.
//!
//! Measuring takes a lock per key: two threads asking at once measure once.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use crate::device::adapter::AdapterDesc;
use crate::error::Result;

type Entry = Arc<Mutex<Option<String>>>;

/// The measured choices of one device (see the module docs).
pub struct TuneCache {
    dir: Option<PathBuf>,
    adapter_key: String,
    entries: Mutex<HashMap<(String, String), Entry>>,
}

impl TuneCache {
    /// An empty cache for `desc`, persisted under `dir` (not persisted with `None`).
    pub fn new(desc: &AdapterDesc, dir: Option<PathBuf>) -> TuneCache {
        TuneCache {
            dir,
            adapter_key: format!(
                "{}|{}|{}|{:?}|{}",
                desc.name,
                desc.driver_info,
                desc.backend,
                desc.limits.subgroup_size,
                env!("CARGO_PKG_VERSION")
            ),
            entries: Mutex::new(HashMap::new()),
        }
    }

    fn entry(&self, family: &str, class: &str) -> Entry {
        let mut map = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        map.entry((family.to_string(), class.to_string()))
            .or_default()
            .clone()
    }

    /// The choice for (`family`, `class`) if one was made (or loaded) in this process.
    pub fn get(&self, family: &str, class: &str) -> Option<String> {
        let e = self.entry(family, class);
        let v = e.lock().unwrap_or_else(|p| p.into_inner()).clone();
        v
    }

    /// Every choice made (or loaded) in this process as (family, class, choice), sorted: what
    /// `--profile` reports, so a user sees which kernel each shape class ran with.
    pub fn choices(&self) -> Vec<(String, String, String)> {
        let map = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        let mut out: Vec<_> = map
            .iter()
            .filter_map(|((f, c), e)| {
                let v = e.lock().unwrap_or_else(|p| p.into_inner()).clone();
                v.map(|v| (f.clone(), c.clone(), v))
            })
            .collect();
        out.sort();
        out
    }

    /// Sets the choice in memory only (a forced choice from the configuration).
    pub fn set(&self, family: &str, class: &str, value: &str) {
        let e = self.entry(family, class);
        *e.lock().unwrap_or_else(|p| p.into_inner()) = Some(value.to_string());
    }

    /// The choice for (`family`, `class`): from memory, else from disk if `accept` takes it,
    /// else measured now by `measure` and stored in both. `version` identifies the family's
    /// kernels (a changed kernel must be measured again).
    pub fn choose(
        &self,
        family: &str,
        class: &str,
        version: &str,
        accept: impl Fn(&str) -> bool,
        measure: impl FnOnce() -> Result<String>,
    ) -> Result<String> {
        let e = self.entry(family, class);
        let mut slot = e.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(v) = slot.as_ref() {
            return Ok(v.clone());
        }
        let file = self.file(family, class, version);
        let cached = file
            .as_ref()
            .and_then(|f| std::fs::read_to_string(f).ok())
            .map(|s| s.trim().to_string())
            .filter(|s| accept(s));
        let v = match cached {
            Some(v) => v,
            None => {
                let v = measure()?;
                if let Some(f) = &file {
                    if let Err(e) = crate::io::write_atomic(f, v.as_bytes()) {
                        log::warn!(
                            "could not cache the {family} choice in {}: {e}",
                            f.display()
                        );
                    }
                }
                v
            }
        };
        *slot = Some(v.clone());
        Ok(v)
    }

    /// The cache file of a key, under the configured folder.
    fn file(&self, family: &str, class: &str, version: &str) -> Option<PathBuf> {
        let dir = self.dir.as_ref()?;
        let mut h = std::collections::hash_map::DefaultHasher::new();
        (&self.adapter_key, family, class, version).hash(&mut h);
        let safe = |s: &str| -> String {
            s.chars()
                .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
                .collect()
        };
        Some(dir.join(format!(
            "{}-{}-{:016x}.txt",
            safe(family),
            safe(class),
            h.finish()
        )))
    }
}
