//! The manifest: `<crate>.manifest.json`, written by `cargo oxide build` next to the
//! artifacts, read by Python. Python reads only this file and the files it names.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::descriptor::{ConstantDescriptor, KernelDescriptor};

/// File name of a crate's manifest.
pub fn manifest_file_name(crate_name: &str) -> String {
    format!("{crate_name}.manifest.json")
}

/// File name of a crate's PTX for one architecture.
pub fn ptx_file_name(crate_name: &str, arch: &str) -> String {
    format!("{crate_name}.{arch}.ptx")
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// [`crate::MANIFEST_SCHEMA_VERSION`]; readers refuse newer schemas.
    pub schema: u32,
    #[serde(rename = "crate")]
    pub krate: CrateInfo,
    /// Cargo profile the artifacts were built with (`release` or `dev`).
    pub profile: String,
    pub toolchain: Toolchain,
    /// Source files the device build read (from rustc's dep-info), with their hashes,
    /// so a loader can tell whether the artifacts are stale without running cargo.
    pub sources: Vec<SourceFile>,
    /// One PTX per requested architecture.
    pub artifacts: Vec<PtxArtifact>,
    /// The host (CPU emulator) library, when it was built.
    pub emulator: Option<FileArtifact>,
    pub kernels: Vec<KernelDescriptor>,
    /// `#[constant]` statics the host sets before launching (schema 3).
    #[serde(default)]
    pub constants: Vec<ConstantDescriptor>,
    /// How the PTX was generated from the crate (schema 6; absent in older manifests,
    /// whose builds kept every multiply and add apart).
    #[serde(default)]
    pub codegen: Codegen,
    /// Tuned choices (schema 9): what plain calls run on the GPUs and shapes they were
    /// tuned for (`pyoxide build --tuned` puts them here from `pyoxide tune`'s cache;
    /// crate::tune). cargo-oxide writes none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tuned: Vec<crate::tune::TunedChoice>,
}

/// Code-generation choices of a build that change what a kernel computes, not only how
/// fast: a reader comparing GPU results with the emulator's needs them.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Codegen {
    /// Whether `llc` contracted a multiply followed by an add or subtract into one fused
    /// multiply-add (`fma.rn`, rounded once), as nvcc's default `--fmad=true` and
    /// cuda-oxide's default do. `cargo oxide build --no-fmad` turns it off; the CPU
    /// emulator always rounds the two apart.
    pub fmad: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct CrateInfo {
    pub name: String,
    pub version: String,
    /// Absolute path of the crate's Cargo.toml at build time.
    pub manifest_path: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Toolchain {
    /// `rustc -V` of the device compiler.
    pub rustc: String,
    /// LLVM version inside that rustc.
    pub llvm: String,
    /// Version of the llvm-link / opt / llc used by the link step.
    pub llvm_tools: String,
    /// `ptxas --version` build line, when ptxas verified the PTX.
    pub ptxas: Option<String>,
    /// sha256 of the libdevice bitcode linked in, when one was found.
    pub libdevice_sha256: Option<String>,
    /// Version of cargo-oxide that wrote this manifest.
    pub cargo_oxide: String,
    /// sha256 over every field above: the toolchain part of the cache key.
    pub hash: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct SourceFile {
    pub path: String,
    pub sha256: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct FileArtifact {
    /// Path relative to the manifest's folder.
    pub path: String,
    pub sha256: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct PtxArtifact {
    /// `sm_80`, `sm_90`, …
    pub arch: String,
    /// PTX file, relative to the manifest's folder.
    pub path: String,
    pub sha256: String,
    /// The PTX ISA version the file declares (`.version`).
    pub ptx_version: String,
    /// ptxas's report per entry symbol; absent when ptxas was not available.
    pub ptxas: Option<BTreeMap<String, KernelResources>>,
    /// ptxas's diagnostics that name no entry of this PTX: a device function's, or the
    /// module's (`'setmaxnreg' ignored`). Schema 12; an entry's own are in its report.
    #[serde(default)]
    pub ptxas_diagnostics: Vec<PtxasDiagnostic>,
}

/// What ptxas reported for one kernel on one architecture.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct KernelResources {
    pub registers: u32,
    pub shared_bytes: u64,
    pub stack_frame_bytes: u64,
    pub spill_store_bytes: u64,
    pub spill_load_bytes: u64,
    pub barriers: u32,
    /// ptxas's diagnostics that name this entry, in ptxas's order (schema 12; older
    /// manifests recorded none, so their absence there says nothing).
    #[serde(default)]
    pub diagnostics: Vec<PtxasDiagnostic>,
}

/// A line of ptxas's advice or warning: `ptxas warning : …`, or `ptxas info : (Cnnnn) …`
/// (its performance advice carries a code; its plain info lines are the report itself).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct PtxasDiagnostic {
    /// How ptxas labelled the line.
    pub level: PtxasLevel,
    /// ptxas's code (`C7512`), when the line has one.
    pub code: Option<String>,
    /// The text after the code, as ptxas printed it.
    pub message: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum PtxasLevel {
    Info,
    Warning,
}

impl PtxasLevel {
    pub const ALL: [PtxasLevel; 2] = [PtxasLevel::Info, PtxasLevel::Warning];

    /// As ptxas labels its line (`ptxas info`, `ptxas warning`), and as the manifest does.
    pub fn name(self) -> &'static str {
        match self {
            PtxasLevel::Info => "info",
            PtxasLevel::Warning => "warning",
        }
    }
}

/// What every ptxas diagnostic of a serialised wgmma pipeline says, whatever its cause
/// and code (C7509 an extern call, C7512 too few registers, C7514 an accumulator read
/// before its wait, C7519 a divergent path, …): the kernel is correct, but each `wgmma`
/// waits for the one before.
pub const PTXAS_WGMMA_SERIALIZED: &str = "wgmma.mma_async instructions are serialized";

impl PtxasDiagnostic {
    /// Whether ptxas serialised the wgmmas of the function this diagnostic names.
    pub fn serializes_wgmma(&self) -> bool {
        self.message.contains(PTXAS_WGMMA_SERIALIZED)
    }
}

impl std::fmt::Display for PtxasDiagnostic {
    /// As ptxas printed it, less its prefix: `(C7512) Potential Performance Loss: …`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.code {
            Some(code) => write!(f, "({code}) {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

impl Manifest {
    pub fn to_json(&self) -> String {
        let mut s = serde_json::to_string_pretty(self).expect("a manifest always serializes");
        s.push('\n');
        s
    }

    pub fn from_json(text: &str) -> Result<Manifest, String> {
        let value: serde_json::Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
        match value.get("schema").and_then(|v| v.as_u64()) {
            Some(v) if v > u64::from(crate::MANIFEST_SCHEMA_VERSION) => {
                return Err(format!(
                    "manifest schema {v} is newer than this reader's {}; upgrade pyoxide",
                    crate::MANIFEST_SCHEMA_VERSION
                ));
            }
            None => return Err("not a pyoxide manifest: no `schema` field".into()),
            _ => {}
        }
        serde_json::from_value(value).map_err(|e| e.to_string())
    }

    pub fn kernel(&self, name_or_entry: &str) -> impl Iterator<Item = &KernelDescriptor> {
        self.kernels
            .iter()
            .filter(move |k| k.name == name_or_entry || k.entry == name_or_entry)
    }
}

/// The file an artifact path of a manifest in `dir` names, which must lie inside `dir`
/// (after symbolic links): a manifest is data, and one that names `/usr/lib/x.so` or
/// `../x.ptx` must not make a reader open a file it did not ship with.
pub fn artifact_file(dir: &std::path::Path, path: &str) -> Result<std::path::PathBuf, String> {
    use std::path::{Component, Path};
    let plain = !path.is_empty()
        && Path::new(path)
            .components()
            .all(|c| matches!(c, Component::Normal(_)));
    let refused = |why: &str| {
        Err(format!(
            "the artifact path {path:?} {why}: artifacts must lie inside the manifest's \
             folder {}. Fix: rebuild with `pyoxide build`, or load a manifest that was not \
             edited",
            dir.display()
        ))
    };
    if !plain {
        return refused("is absolute or leaves its folder");
    }
    let file = dir.join(path);
    if let (Ok(real_dir), Ok(real)) = (dir.canonicalize(), file.canonicalize())
        && !real.starts_with(&real_dir)
    {
        return refused(&format!("resolves to {}", real.display()));
    }
    Ok(file)
}

#[cfg(feature = "schema")]
/// The JSON schema of the manifest, as checked in at `crates/oxide-abi/manifest.schema.json`.
pub fn json_schema() -> String {
    crate::schema_json::<Manifest>()
}

#[cfg(test)]
mod artifact_tests {
    use super::artifact_file;

    #[test]
    fn artifacts_must_lie_inside_the_manifests_folder() {
        let dir = std::env::temp_dir();
        assert_eq!(
            artifact_file(&dir, "k.sm_80.ptx").unwrap(),
            dir.join("k.sm_80.ptx")
        );
        for bad in ["/etc/passwd", "../k.ptx", "a/../../k.ptx", "", "./k.ptx"] {
            let e = artifact_file(&dir, bad).unwrap_err();
            assert!(e.contains("inside the manifest's folder"), "{bad}: {e}");
        }
    }
}
