//! The reports `cargo oxide` prints on stdout for pyoxide: the build report (`build
//! --json`) and the build key (`key`). pyoxide reads them (pyoxide/_build/cargo.py) with the
//! key lists generated from here.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BuildReport {
    /// The manifest written (absolute path).
    pub manifest: PathBuf,
    /// The crate's library name (the manifest's `crate.name`).
    #[serde(rename = "crate")]
    pub krate: String,
    /// One PTX per architecture (absolute paths).
    pub artifacts: Vec<PathBuf>,
    /// The CPU emulator library, or null when it was not built.
    pub emulator: Option<PathBuf>,
}

/// The report's keys, in order: every one is always present.
pub const BUILD_REPORT_KEYS: [&str; 4] = ["manifest", "crate", "artifacts", "emulator"];

/// What `cargo oxide key` prints: the build key of a command line and an environment,
/// and the cache folder, so that pyoxide's cache and cargo-oxide's agree on both.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyReport {
    /// sha256 (hex) of every input that changes the artifacts of `cargo oxide build` with
    /// the same options: the resolved toolchain, the options, the variables whose
    /// [`crate::inputs::Effect`] is not `None`, the cargo config files.
    pub key: String,
    /// The cache folder (created when missing).
    pub cache_dir: PathBuf,
    /// Why the cache folder cannot be used (another user's, writable by others, not a
    /// folder), or null. cargo-oxide's own builds refuse it too.
    pub cache_error: Option<String>,
    /// The inputs, by name, as hashed (for people: what changed between two keys).
    pub inputs: std::collections::BTreeMap<String, String>,
}

/// The key report's keys, in order: every one is always present.
pub const KEY_REPORT_KEYS: [&str; 4] = ["key", "cache_dir", "cache_error", "inputs"];

impl KeyReport {
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("a key report always serializes")
    }
}

impl BuildReport {
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("a build report always serializes")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_the_serialized_fields() {
        let r = BuildReport {
            manifest: "/m.json".into(),
            krate: "k".into(),
            artifacts: vec![],
            emulator: None,
        };
        let v: serde_json::Value = serde_json::from_str(&r.to_json()).unwrap();
        let keys: Vec<&str> = v.as_object().unwrap().keys().map(|k| k.as_str()).collect();
        let mut want = BUILD_REPORT_KEYS.to_vec();
        want.sort_unstable();
        let mut got = keys.clone();
        got.sort_unstable();
        assert_eq!(got, want);
    }
}
