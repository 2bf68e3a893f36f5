//! The report `pyoxide verify --json` prints: one object per run, versioned, so an
//! automated agent can act on it. pyoxide/verify.py writes it; its JSON schema
//! (verify-report.schema.json beside this crate) is generated from these types and a
//! Python test validates real reports against it.

use serde::{Deserialize, Serialize};

/// Version of the verify report. Bump on any change a reader could trip over.
/// 2: failures have a kind from [`FailureKind`] (crashes, time-outs, spec errors and
/// interrupts are failures), the original failure beside the shrunk one, spec files that
/// could not be used, `interrupted` and the per-case time limit.
pub const VERIFY_REPORT_VERSION: u32 = 2;

/// How a case failed. verify fails closed: anything that stops a case from being
/// checked (a crash, a time-out, a mistake in the spec, Ctrl-C) is a failure of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub enum FailureKind {
    /// An output differs from the reference by more than the tolerance (or a non-finite
    /// reference element is not matched exactly).
    #[serde(rename = "wrong result")]
    WrongResult,
    /// An output element still holds the poison it was filled with.
    #[serde(rename = "unwritten element")]
    UnwrittenElement,
    /// An input array changed.
    #[serde(rename = "input modified")]
    InputModified,
    /// Memory next to an array changed, or an access hit the guard pages around it.
    #[serde(rename = "out-of-bounds write")]
    OutOfBoundsWrite,
    /// The launch raised: a trap, a refused launch, a CUDA error.
    #[serde(rename = "raised")]
    Raised,
    /// The process running the case died (a signal, an exit) or its device context is
    /// lost; verify goes on in a new one.
    #[serde(rename = "crashed")]
    Crashed,
    /// The case ran past the per-case time limit (a hung kernel); its process was stopped.
    #[serde(rename = "timed out")]
    TimedOut,
    /// The spec itself is wrong (its code raised, or it returned something unusable).
    #[serde(rename = "spec error")]
    SpecError,
    /// Ctrl-C stopped the run during this kernel.
    #[serde(rename = "interrupted")]
    Interrupted,
}

impl FailureKind {
    pub const ALL: [FailureKind; 9] = [
        FailureKind::WrongResult,
        FailureKind::UnwrittenElement,
        FailureKind::InputModified,
        FailureKind::OutOfBoundsWrite,
        FailureKind::Raised,
        FailureKind::Crashed,
        FailureKind::TimedOut,
        FailureKind::SpecError,
        FailureKind::Interrupted,
    ];

    /// The name the report uses (its JSON encoding).
    pub fn name(self) -> &'static str {
        match self {
            FailureKind::WrongResult => "wrong result",
            FailureKind::UnwrittenElement => "unwritten element",
            FailureKind::InputModified => "input modified",
            FailureKind::OutOfBoundsWrite => "out-of-bounds write",
            FailureKind::Raised => "raised",
            FailureKind::Crashed => "crashed",
            FailureKind::TimedOut => "timed out",
            FailureKind::SpecError => "spec error",
            FailureKind::Interrupted => "interrupted",
        }
    }
}

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
    /// Spec files that gave no usable specs (they failed to import, or their `SPECS` is
    /// not a list of `Spec`); any makes `ok` false.
    pub spec_errors: Vec<SpecFileError>,
    /// True when Ctrl-C stopped the run: the kernels listed are those reached (the one
    /// running then failed as "interrupted"); `ok` is false.
    pub interrupted: bool,
    /// The per-case time limit in seconds: a case past it fails as "timed out".
    pub case_timeout: f64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct SpecFileError {
    /// The spec file.
    pub file: String,
    /// What is wrong with it, and the fix.
    pub message: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct KernelVerdict {
    /// The kernel's name (a generic kernel's, for all its instances).
    pub kernel: String,
    /// The spec file that specifies it.
    pub spec_file: Option<String>,
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
    pub what: FailureKind,
    pub message: String,
    /// The output (or input) parameter at fault.
    pub output: Option<String>,
    /// The worst element's index (one entry per dimension); for an out-of-bounds write,
    /// the element written (negative: before the array's start).
    pub index: Option<Vec<i64>>,
    pub got: Option<Number>,
    pub want: Option<Number>,
    pub error: Option<Number>,
    /// The case, or null for a spec error found before any case (its `shapes` failed).
    pub case: Option<CaseId>,
    /// The case's own seed: with `case` it redraws the same data (the run's base seed
    /// when `case` is null).
    pub seed: i64,
    /// One line of shell that reruns the case and raises the same failure (shell-quoted).
    pub reproducer: String,
    /// The first failing case met, when shrinking found a smaller one that fails the
    /// same way (null otherwise).
    pub first: Option<FirstFailure>,
}

/// The failing case verify met before shrinking it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct FirstFailure {
    pub what: FailureKind,
    pub message: String,
    pub case: CaseId,
    pub seed: i64,
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
    crate::schema_json::<VerifyReport>()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failure_kind_names_are_their_json() {
        for kind in FailureKind::ALL {
            let json = serde_json::to_string(&kind).unwrap();
            assert_eq!(json, format!("\"{}\"", kind.name()));
            let back: FailureKind = serde_json::from_str(&json).unwrap();
            assert_eq!(back, kind);
        }
    }
}
