//! Tuning: what `#[tune(...)]` declares (in each kernel descriptor), the choices
//! `pyoxide tune` keeps (in its cache and, with `pyoxide build --tuned`, in the
//! manifest) and the report `pyoxide tune --json` prints.
//!
//! A tuned kernel has a *hand pick* (the first value of each tuned const generic, the
//! `#[launch]` policy's value of each tuned launch parameter), which every call runs
//! unless a choice says otherwise, and candidates: each combination of tuned const values
//! is an instance of the kernel (its own entry point, as generic instances are), run with
//! each combination of tuned launch values. A choice holds for one kernel, one GPU model
//! and architecture, and one *shape bucket*: per key extent of the kernel, the power of
//! two at or above it (0 for 0); a call whose extents `e` satisfy `bucket / 2 < e <=
//! bucket` (`e == 0` for a bucket of 0) is in it. The key extents are the scalar
//! parameters `#[tune(key = [...])]` names ([`Tune::key`]), each one's value (a bool is 0
//! or 1, so false and true never share a bucket), when the kernel declares them: a kernel
//! whose arrays are flat slices (attention's) has its shape in scalars. Else they are its
//! `#[shapes]` names in order of first appearance, else the length of its launch's
//! `over`. pyoxide/_launch/tune_space.py computes buckets and candidates; this module
//! holds the data.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Version of the tune report (`pyoxide tune --json`). Bump on any change a reader could
/// trip over.
pub const TUNE_REPORT_VERSION: u32 = 2;

/// Version of the tuned-choices file `pyoxide tune` keeps in the cache (and of a crate's
/// shipped `tuned.json`).
pub const TUNED_FILE_VERSION: u32 = 1;

/// Candidates one tuned kernel (one instance of its untuned generic parameters) may have:
/// tuned const combinations times tuned launch combinations. Each is verified and timed,
/// so the product stays small.
pub const MAX_TUNE_CANDIDATES: u32 = 64;

/// The device name and architecture of choices made on the CPU emulator.
pub const EMULATOR_DEVICE: &str = "emulator";
pub const EMULATOR_ARCH: &str = "emu";

/// A launch parameter `#[tune(...)]` may list candidates for, and the launch policies
/// (`LaunchPolicy` kinds) that have it.
pub struct TunableLaunch {
    pub name: &'static str,
    pub policies: &'static [&'static str],
    pub doc: &'static str,
}

/// Every tunable launch parameter.
pub const TUNABLE_LAUNCH: [TunableLaunch; 3] = [
    TunableLaunch {
        name: "block",
        policies: &[
            "elementwise",
            "grid_stride",
            "block_per_element",
            "block_per_row",
        ],
        doc: "threads per block (block_per_row: the block of every call in the bucket)",
    },
    TunableLaunch {
        name: "per_thread",
        policies: &["elementwise", "grid_stride"],
        doc: "elements per thread that size the grid",
    },
    TunableLaunch {
        name: "blocks_per_sm",
        policies: &["grid_stride", "persistent_tiles", "block_per_row"],
        doc: "blocks per multiprocessor at most (block_per_row: 0 is one block per row)",
    },
];

/// `#[tune(...)]` of a kernel (schema 9; `key`, schema 11), the same in each of its
/// instances. Each list may be absent (empty).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default, deny_unknown_fields)]
pub struct Tune {
    /// Tuned const generic parameters, in declaration order; the first value of each is
    /// the hand pick. Each instance binds one value of each (its `instance`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub consts: Vec<TuneConst>,
    /// Tuned launch parameters ([`TUNABLE_LAUNCH`]); the `#[launch]` policy's value of
    /// each, which the list holds, is the hand pick.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub launch: Vec<TuneLaunch>,
    /// `key = [...]`: the scalar parameters (integers or bools) whose values place a call
    /// in a bucket, in the order written; empty: its array extents do (module docs).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub key: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct TuneConst {
    pub param: String,
    /// As written (`64`, `-1`), as the instance's generic arguments are.
    pub values: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct TuneLaunch {
    pub param: String,
    pub values: Vec<u32>,
}

/// One tuned choice: for plain calls of `kernel` on a `device` of `arch` whose extents
/// fall in `bucket`, run `entry` with the launch parameters `launch`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct TunedChoice {
    /// The entry a plain call names: the hand-picked instance of a tuned kernel.
    pub kernel: String,
    /// The GPU model as the driver names it (`NVIDIA H200`), or [`EMULATOR_DEVICE`].
    pub device: String,
    /// The device's architecture (`sm_90`), or [`EMULATOR_ARCH`].
    pub arch: String,
    /// The shape bucket (see the module documentation).
    pub bucket: Vec<u64>,
    /// What runs: the kernel's entry or a tuned instance's ...
    pub entry: String,
    /// ... with these tuned launch parameters (the others as the policy has them).
    pub launch: BTreeMap<String, u32>,
    /// Why: the median time of the choice and of the hand pick at the tuned shape, in
    /// microseconds, the shape (the spec's), and the candidates timed and refused.
    pub time_us: f64,
    pub hand_us: f64,
    pub shape: Vec<u64>,
    pub candidates: u32,
    pub rejected: u32,
}

/// The tuned-choices file in the cache (`<cache>/tuned/<crate>-<key>.json`), and the
/// choices a crate ships in its source tree (`tuned.json` beside its Cargo.toml, written by
/// scripts/ship_tuned), whose `key` names the build that measured them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct TunedFile {
    /// [`TUNED_FILE_VERSION`].
    pub version: u32,
    #[serde(rename = "crate")]
    pub krate: String,
    /// The build the choices were measured on (pyoxide/_launch/tune_store.py's key).
    pub key: String,
    pub choices: Vec<TunedChoice>,
}

/// `pyoxide tune --json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct TuneReport {
    /// [`TUNE_REPORT_VERSION`].
    pub version: u32,
    #[serde(rename = "crate")]
    pub krate: String,
    pub key: String,
    /// `cupy` (the GPU) or `emu` (the emulator: timings meaningless, choices kept apart
    /// under [`EMULATOR_DEVICE`]).
    pub backend: String,
    pub device: String,
    pub arch: String,
    /// The file the choices were written to.
    pub saved: Option<String>,
    pub seconds: f64,
    pub kernels: Vec<KernelTuning>,
}

/// One kernel at one shape.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct KernelTuning {
    /// The hand-picked entry.
    pub kernel: String,
    /// The spec's shape and the bucket it falls in.
    pub shape: Vec<u64>,
    pub bucket: Vec<u64>,
    /// The shapes every candidate was verified on (version 2): the tuned shape and one
    /// more in its bucket, or, where the spec's `verify_shape` says the tuned shape is too
    /// large for its reference, the smaller shape it gives.
    pub verified: Vec<Vec<u64>>,
    pub seconds: f64,
    pub candidates: Vec<CandidateResult>,
    /// The chosen candidate (the hand pick unless another was faster by the margin), or
    /// null when none passed.
    pub choice: Option<usize>,
    /// choice's time over the hand pick's (< 1: faster).
    pub ratio: Option<f64>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct CandidateResult {
    pub entry: String,
    pub launch: BTreeMap<String, u32>,
    pub hand_pick: bool,
    /// `passed` (verified, then timed), `failed` (refused: wrong result, a trap, a refused
    /// launch) or `skipped` (its launch does not fit this shape).
    pub verdict: String,
    /// Median microseconds a call (passed only): CUDA events, the L2 flushed between
    /// calls, or, for a spec marked `sustained` (GEMMs), samples of at least 200 ms of
    /// back-to-back calls (pyoxide/bench/tune.py).
    pub time_us: Option<f64>,
    /// Why it failed or was skipped.
    pub message: Option<String>,
}

/// The report's JSON schema (checked in as tune-report.schema.json).
#[cfg(feature = "schema")]
pub fn json_schema() -> String {
    crate::schema_json::<TuneReport>()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tunable_launch_parameters_name_real_policy_fields() {
        // Each policy listed has the field (its JSON form after `kind`).
        let fields: BTreeMap<&str, &[&str]> = [
            ("elementwise", &["per_thread", "block"][..]),
            ("grid_stride", &["per_thread", "block", "blocks_per_sm"][..]),
            ("block_per_element", &["block"][..]),
            ("block_per_row", &["block", "blocks_per_sm"][..]),
            ("persistent_tiles", &["blocks_per_sm"][..]),
        ]
        .into_iter()
        .collect();
        for t in TUNABLE_LAUNCH {
            for p in t.policies {
                assert!(fields[p].contains(&t.name), "{} on {p}", t.name);
            }
        }
    }

    #[test]
    fn choices_round_trip() {
        let c = TunedChoice {
            kernel: "k_64".into(),
            device: "NVIDIA H200".into(),
            arch: "sm_90".into(),
            bucket: vec![1024, 4096],
            entry: "k_128".into(),
            launch: [("block".to_string(), 512)].into_iter().collect(),
            time_us: 10.5,
            hand_us: 12.0,
            shape: vec![1000, 4000],
            candidates: 6,
            rejected: 1,
        };
        let file = TunedFile {
            version: TUNED_FILE_VERSION,
            krate: "k".into(),
            key: "abc".into(),
            choices: vec![c],
        };
        let text = serde_json::to_string(&file).unwrap();
        assert_eq!(serde_json::from_str::<TunedFile>(&text).unwrap(), file);
    }
}
