//! The report `pyoxide verify --json` prints: one object per run, versioned, so an
//! automated agent can act on it. pyoxide/verify.py writes it; its JSON schema
//! (verify-report.schema.json beside this crate) is generated from these types and a
//! Python test validates real reports against it.

use serde::{Deserialize, Serialize};

/// Version of the verify report. Bump on any change a reader could trip over.
pub const VERIFY_REPORT_VERSION: u32 = 1;

/// A JSON number, or a string for the values JSON lacks (`"nan"`, `"inf"`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(untagged)]
pub enum Number {
    Finite(f64),
    NonFinite(String),
}

/// The whole report.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct VerifyReport {
    /// [`VERIFY_REPORT_VERSION`].
    pub version: u32,
    /// The crate's library name.
    #[serde(rename = "crate")]
    pub krate: String,
    /// The base seed; each case's own seed is in its failure.
    pub seed: i64,
    /// The backends run: `emu` (the CPU emulator) and/or `cupy` (the GPU).
    pub backends: Vec<String>,
    /// True when every kernel passed every case (and the sanitizer, when run, found nothing).
    pub ok: bool,
    /// One entry per kernel and backend.
    pub kernels: Vec<KernelVerdict>,
    /// Kernels of the crate that have no spec (not verified).
    pub unspecified: Vec<String>,
    /// The compute-sanitizer runs (`--sanitize`), or null when not asked for.
    pub sanitizer: Option<SanitizerReport>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct KernelVerdict {
    /// The kernel's name (a generic kernel's, for all its instances).
    pub kernel: String,
    pub backend: String,
    pub ok: bool,
    /// Cases run (verify stops a kernel at its first failing case).
    pub cases: u32,
    pub passed: u32,
    /// The largest relative error among the passing cases.
    pub worst_error: f64,
    pub seconds: f64,
    /// The smallest failing case found, or null.
    pub failure: Option<CaseFailure>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct CaseFailure {
    /// "wrong result", "unwritten element", "input modified", "raised" or "spec error".
    pub what: String,
    pub message: String,
    /// The output (or input) parameter at fault.
    pub output: Option<String>,
    /// The worst element's index (one entry per dimension); for an out-of-bounds write,
    /// the element written (negative: before the array's start).
    pub index: Option<Vec<i64>>,
    pub got: Option<Number>,
    pub want: Option<Number>,
    pub error: Option<Number>,
    pub case: CaseId,
    /// The case's own seed: with `case` it redraws the same data.
    pub seed: i64,
    /// One line of shell that reruns the case and raises the same failure.
    pub reproducer: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct CaseId {
    pub shape: Vec<u64>,
    pub dtype: String,
    /// 1: every array was a view starting one element into its buffer.
    pub offset: u32,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct SanitizerReport {
    /// False when compute-sanitizer was not found (`message` says where it was looked for).
    pub available: bool,
    pub message: String,
    /// One entry per tool run (memcheck, racecheck, synccheck).
    pub tools: Vec<SanitizerTool>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct SanitizerTool {
    pub tool: String,
    /// The errors compute-sanitizer counted ("ERROR SUMMARY").
    pub errors: u64,
    /// Errors by kernel (entry symbol), where the sanitizer's report names one.
    pub by_kernel: std::collections::BTreeMap<String, u64>,
    /// The first error's text, or null.
    pub first_error: Option<String>,
}

/// The report's JSON schema (checked in as verify-report.schema.json).
#[cfg(feature = "schema")]
pub fn json_schema() -> String {
    let schema = schemars::schema_for!(VerifyReport);
    let mut s = serde_json::to_string_pretty(&schema).expect("schema serializes");
    s.push('\n');
    s
}
