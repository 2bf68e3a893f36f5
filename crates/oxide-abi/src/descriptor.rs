//! The kernel descriptor: what `#[kernel]` knows about a kernel, embedded in the
//! compiled artifact (one global per kernel in [`crate::names::DESCRIPTOR_SECTION`])
//! and pulled out by the link step after linking, as wasm-bindgen does. Nothing
//! re-parses Rust source.
//!
//! Encoding: the bytes of the global are the UTF-8 JSON of [`KernelDescriptor`].
//! JSON keeps the artifact inspectable (`strings` shows it) and the macro simple; its
//! `version` field guards against a macro and a link step built from different ABIs.

use serde::{Deserialize, Serialize};

use crate::types::{ParamKind, ScalarType};

/// One kernel, or one instance of a generic kernel.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct KernelDescriptor {
    /// Encoding version ([`crate::DESCRIPTOR_VERSION`]).
    pub version: u32,
    /// The Rust function's name (shared by all instances of a generic kernel).
    pub name: String,
    /// The PTX `.entry` symbol (and, prefixed, the emulator's host symbol).
    pub entry: String,
    /// Generic arguments of this instance, in declaration order; empty when the kernel
    /// is not generic. Python dispatches generic kernels on these.
    #[serde(default)]
    pub instance: Vec<GenericArg>,
    /// Parameters in declaration order.
    pub params: Vec<ParamDescriptor>,
    /// Declared `unsafe fn` (may take `&mut [T]` and raw pointers).
    #[serde(default)]
    pub is_unsafe: bool,
    /// `#[launch_bounds(max_threads, min_blocks)]`, if given.
    #[serde(default)]
    pub launch_bounds: Option<LaunchBounds>,
    /// `#[cluster_launch(x, y, z)]`: blocks per thread-block cluster along x, y and z
    /// (sm_90+; PTX `.reqnctapercluster`). A launch's grid must be a multiple of it per
    /// axis. Absent for kernels without the attribute (an older reader ignores the key;
    /// the driver still enforces the PTX's cluster shape).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster: Option<[u32; 3]>,
    /// `#[launch(...)]`: how a call without `[grid, block]` sizes its launch, and which
    /// explicit grids are refused. None: one thread per element of the first
    /// `DisjointSlice`/`&mut [T]` output, blocks of 256 (or the launch bounds).
    #[serde(default)]
    pub launch: Option<LaunchPolicy>,
    /// `#[variant_of(name)]` (schema 7): a faster kernel for some calls of the kernel
    /// `name` of another crate (a `#[kernel]` with the same parameters a caller passes),
    /// which a plain call of `name` runs instead when this one takes its arguments and
    /// its code runs on the device. Absent for other kernels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variant_of: Option<String>,
    /// `#[launch(..., shared = N)]` (schema 7): the bytes of dynamic shared memory a
    /// launch without an explicit size gives the kernel. Absent: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shared_bytes: Option<u32>,
    /// `#[tensor_maps(maps, a(rows = R), ...)]` (schema 7): TMA tensor maps of some of
    /// the kernel's arrays, which the launcher makes and passes in the last parameter
    /// (no caller passes it). Absent for kernels without TMA.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tensor_maps: Option<TensorMaps>,
    /// `#[tune(...)]` (schema 9): the kernel's tuned const generics and launch
    /// parameters with their candidates (crate::tune). Absent for kernels without it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tune: Option<crate::tune::Tune>,
    /// `#[dependent_launch]` (schema 12; a reader that ignores it launches the kernel as an
    /// ordinary one, which is correct): the kernel waits for the grid before it on the
    /// stream itself (`griddepcontrol.wait` before its first global-memory access), so a
    /// launcher may start it while that grid is finishing (the driver's
    /// programmatic-stream-serialisation launch attribute). Absent: false.
    #[serde(default, skip_serializing_if = "is_false")]
    pub dependent_launch: bool,
    /// Set by the link step, not the macro (schema 8): the first warp collective over
    /// the full warp that the kernel's optimised code reaches through its calls
    /// (`shfl.sync.bfly`, `redux.sync.add`, `vote.ballot.sync`, `mma.sync.aligned`, …;
    /// `warp::reduce` and `block::reduce` are made of them). Such a kernel needs whole
    /// warps: the launcher refuses a block whose thread count is not a multiple of 32
    /// before launch (its last warp's shuffles would read lanes that do not exist).
    /// Absent when the kernel has none, or was built without optimisation (its masks
    /// are not constants there).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub whole_warps: Option<String>,
    /// Where the kernel is defined, for messages.
    pub source: SourceLocation,
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// The tensor maps a kernel reads or writes arrays through (TMA), made by the launcher:
/// `param` is the kernel's last parameter, a `&[u8]` that receives
/// [`crate::limits::TENSOR_MAP_BYTES`] per map, in order, 64-byte aligned. Each mapped
/// array is a C-layout 2-D array parameter whose address and row bytes are multiples of
/// [`crate::limits::TMA_ALIGN_BYTES`] and whose extents are not zero; a call that
/// breaks one is refused before launch.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct TensorMaps {
    pub param: String,
    pub maps: Vec<TensorMap>,
}

/// One 2-D tensor map: the array parameter `array` (outer dimension its rows), copied in
/// boxes of `box_rows` rows of `box_bytes` bytes, swizzled over `swizzle_bytes` in shared
/// memory (0, 32, 64 or 128; 0: not swizzled).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct TensorMap {
    pub array: String,
    pub box_rows: u32,
    pub box_bytes: u32,
    pub swizzle_bytes: u32,
}

/// A generic parameter bound to a concrete type or const value in one instance.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct GenericArg {
    /// The generic parameter's name (`T`, `N`).
    pub param: String,
    /// The argument as written (`f32`, `16`).
    pub value: String,
}

/// One kernel parameter.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ParamDescriptor {
    pub name: String,
    pub kind: ParamKind,
    /// Scalar type, or element type for slices and pointers.
    #[serde(rename = "type")]
    pub ty: ScalarType,
    /// The kernel may write through it (`DisjointSlice`, `AtomicSlice`, `&mut [T]`, `*mut T`).
    pub mutable: bool,
    /// Shaped arrays (`array`, `disjoint_array`) only: layout and dimension names
    /// (schema 3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub array: Option<crate::shape::ArrayShape>,
    /// Slices (`&[T]`, `DisjointSlice<T>`, `&mut [T]`, `AtomicSlice<T>`) only: the
    /// length `#[shapes(x[n], out[n])]` gives them, a name shared with other
    /// parameters' lengths and dimensions (equal extents) or a decimal length (schema
    /// 5). The launcher refuses a call that breaks it before launch, so the kernel's
    /// entry assumes it (the bounds check of `x[i]` folds into `out`'s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub length: Option<String>,
    /// When the value (kind `value`) or element type is not a scalar (a struct, enum,
    /// union, tuple, `[T; N]`, `DeviceAtomicU64`, …): its layout. `ty` is then the
    /// scalar it is made of where there is one (`f32` for `[f32; 7]`, `u64` for
    /// `DeviceAtomicU64`), else `u8` (its bytes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub record: Option<RecordLayout>,
}

impl ParamDescriptor {
    /// A parameter of scalar (or element) type `ty` with no shape, length or record.
    pub fn new(name: &str, kind: ParamKind, ty: ScalarType, mutable: bool) -> Self {
        ParamDescriptor {
            name: name.into(),
            kind,
            ty,
            mutable,
            array: None,
            length: None,
            record: None,
        }
    }
}

/// One `#[constant]` static (cuda-oxide's `ConstantMemory<T>`): the host sets its
/// value by name before launching (`module.set_<name>(value)` in Python). Encoded in
/// the same section as the kernels' descriptors; the `constant` key tells them apart.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ConstantDescriptor {
    /// Encoding version ([`crate::DESCRIPTOR_VERSION`]).
    pub version: u32,
    /// The static's name, which is also its symbol in the PTX and the emulator library.
    pub constant: String,
    /// The value's scalar type, or the scalar a record is made of (else `u8`).
    #[serde(rename = "type")]
    pub ty: ScalarType,
    /// The value's layout when it is not a scalar (`[f32; 4]`, a struct).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub record: Option<RecordLayout>,
}

impl ConstantDescriptor {
    /// Whether a descriptor section entry is a constant's (else a kernel's).
    pub fn is_constant(bytes: &[u8]) -> bool {
        serde_json::from_slice::<serde_json::Value>(bytes)
            .is_ok_and(|v| v.get("constant").is_some())
    }

    pub fn decode(bytes: &[u8]) -> Result<ConstantDescriptor, DecodeError> {
        decode_versioned(bytes)
    }
}

/// A non-scalar `Copy` type crossing the launch ABI, as `core::mem` sees it on the
/// device (the macro fills size and alignment in at compile time).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct RecordLayout {
    /// The type as written in the kernel's signature (generic arguments bound).
    pub rust_type: String,
    /// `size_of`, bytes.
    pub size: u64,
    /// `align_of`, bytes.
    pub align: u64,
}

/// Launch bounds: the kernel is compiled for at most `max_threads` threads per block
/// (PTX `.maxntid`) and at least `min_blocks` resident blocks per SM (`.minnctapersm`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct LaunchBounds {
    pub max_threads: u32,
    #[serde(default)]
    pub min_blocks: Option<u32>,
}

/// Threads per block of a plain call when `#[launch]` gives no `block`, and for kernels
/// without a policy (generated into pyoxide/_manifest/abi.py).
pub const DEFAULT_BLOCK: u32 = 256;

/// The most blocks per multiprocessor a policy's `blocks_per_sm`, or a `#[tune]`
/// candidate of it, may ask for.
pub const MAX_BLOCKS_PER_SM: u32 = 64;

/// The launch policies whose `blocks_per_sm` may be 0: one block per row, so the kernel
/// need not walk rows (`block_per_row`'s default). Every other policy's is at least 1.
pub const BLOCKS_PER_SM_ZERO_KINDS: [&str; 1] = ["block_per_row"];

/// The least `blocks_per_sm` a policy of `kind` takes (0 or 1).
pub fn least_blocks_per_sm(kind: &str) -> u32 {
    u32::from(!BLOCKS_PER_SM_ZERO_KINDS.contains(&kind))
}

/// A kernel's launch policy, declared with `#[launch(...)]` and applied by the Python
/// launcher (one function, `pyoxide/_launch/policy.py`). `over` names a slice parameter, whose
/// length `n` sizes the launch; `block` is the threads per block of a plain call (an
/// explicit block may differ, within the launch bounds).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum LaunchPolicy {
    /// Thread `t` handles `per_thread` contiguous elements of `over` (the kernel
    /// grid-strides past them, so any explicit grid is accepted). Plain call:
    /// `ceil(n / (per_thread · block))` blocks.
    Elementwise {
        over: String,
        per_thread: u32,
        block: u32,
    },
    /// A grid-stride loop over `over` that wants the device full, not one thread per
    /// element (reductions, histograms). Plain call: `min(ceil(n / (per_thread ·
    /// block)), blocks_per_sm · multiprocessors)` blocks, at least one.
    GridStride {
        over: String,
        per_thread: u32,
        block: u32,
        blocks_per_sm: u32,
    },
    /// One block per element of `over` (per-block results). Plain call: `n` blocks;
    /// an explicit grid of any other size is refused.
    BlockPerElement { over: String, block: u32 },
    /// One block per row of `over`, a row-major matrix whose row length is the integer
    /// scalar parameter `cols`. Plain call: `n / cols` blocks; `n` not a multiple of
    /// `cols`, or an explicit grid other than `n / cols` blocks, is refused. Without
    /// `cols` (schema 3), `over` is a 2-D shaped array and its rows are its first extent.
    /// With `blocks_per_sm` K > 0 (schema 10; 0, the default, leaves it out) the kernel
    /// walks rows `blockIdx.x`, `+ gridDim.x`, … itself: a plain call launches
    /// `min(rows, K · multiprocessors)` blocks (short rows: fewer, longer-lived blocks
    /// instead of one launch-bound block per row), and any explicit grid is taken.
    BlockPerRow {
        over: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cols: Option<String>,
        block: u32,
        #[serde(default, skip_serializing_if = "is_zero")]
        blocks_per_sm: u32,
    },
    /// Each block handles `blockDim.x` consecutive elements of `over`, so the block
    /// size is part of the result: a call must give the block; the grid is
    /// `ceil(n / block)` and an explicit grid of any other size is refused.
    Segments { over: String },
    /// Column reductions (schema 8): each block reduces strips of [`COLUMN_STRIP_BYTES`]
    /// of columns of a matrix into `over` (one element per column), its warps
    /// splitting the rows. Plain call: `ceil(n / per_block)` blocks, `per_block` the
    /// columns of one strip (128 bytes of `over`'s element); the kernel strides over
    /// strips, so any explicit 1-D grid is accepted.
    Columns {
        over: String,
        per_block: u32,
        block: u32,
    },
    /// Blocks of `block` threads, each covering a `tile` of the shaped array `over`'s
    /// extents (x over its last dimension, y over the one before, z over the first of
    /// three): plain call grid `ceil(extent / tile)` per axis (schema 3). The kernel
    /// answers for the rest of the mapping (an explicit grid is taken as given).
    Tiles {
        over: String,
        block: [u32; 3],
        tile: [u32; 3],
    },
    /// Persistent blocks over `tile`s of the shaped array `over` (schema 7): a plain call
    /// launches `min(tiles, blocks_per_sm · multiprocessors)` blocks of `block` threads
    /// on x, and each walks tiles `blockIdx.x`, `+ gridDim.x`, … itself (the kernel
    /// answers for the order). An explicit grid is taken as given.
    PersistentTiles {
        over: String,
        block: [u32; 3],
        tile: [u32; 3],
        blocks_per_sm: u32,
    },
}

/// The policies whose launches are 1-D: all but `tiles` and `persistent_tiles` (whose
/// blocks are 2-D or 3-D). The launcher refuses a grid
/// or block with a y or z extent other than 1, so the kernel's entry assumes a 1-D
/// launch: `thread::index_1d()`'s check folds away, and the block whose row or element
/// a `block_per_*` kernel handles is `blockIdx.x` however it reads it (a 2-D grid of
/// the right block count would repeat `blockIdx.x` along y: wrong rows, no error).
pub const ONE_D_POLICIES: [&str; 6] = [
    "elementwise",
    "grid_stride",
    "block_per_element",
    "block_per_row",
    "segments",
    "columns",
];

/// Bytes of a row that one block of a `columns` policy reduces per strip: a cache line,
/// eight 16-byte vectors (32 `f32` columns; `oxide_device`'s `DisjointSlice::
/// reduce_columns`).
pub const COLUMN_STRIP_BYTES: u32 = 128;

/// serde's test for a `blocks_per_sm` of 0 (`block_per_row`'s default: left out).
fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl LaunchPolicy {
    /// Whether launches of this policy are 1-D only (one of [`ONE_D_POLICIES`]).
    pub fn is_one_d(&self) -> bool {
        !matches!(
            self,
            LaunchPolicy::Tiles { .. } | LaunchPolicy::PersistentTiles { .. }
        )
    }

    /// The parameter whose length sizes the launch.
    pub fn over(&self) -> &str {
        match self {
            LaunchPolicy::Elementwise { over, .. }
            | LaunchPolicy::GridStride { over, .. }
            | LaunchPolicy::BlockPerElement { over, .. }
            | LaunchPolicy::BlockPerRow { over, .. }
            | LaunchPolicy::Segments { over }
            | LaunchPolicy::Columns { over, .. }
            | LaunchPolicy::Tiles { over, .. }
            | LaunchPolicy::PersistentTiles { over, .. } => over,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct SourceLocation {
    pub module: String,
    pub file: String,
    pub line: u32,
}

impl KernelDescriptor {
    /// A non-generic kernel `name` (its entry too) taking `params`, declared at `source`,
    /// safe, with none of the optional attributes: what a bare `#[kernel] fn` records.
    pub fn new(name: &str, params: Vec<ParamDescriptor>, source: SourceLocation) -> Self {
        KernelDescriptor {
            version: crate::DESCRIPTOR_VERSION,
            name: name.into(),
            entry: name.into(),
            instance: vec![],
            params,
            is_unsafe: false,
            launch_bounds: None,
            cluster: None,
            launch: None,
            variant_of: None,
            shared_bytes: None,
            tensor_maps: None,
            tune: None,
            dependent_launch: false,
            whole_warps: None,
            source,
        }
    }

    /// Decode one descriptor global's bytes.
    pub fn decode(bytes: &[u8]) -> Result<KernelDescriptor, DecodeError> {
        decode_versioned(bytes)
    }

    /// Encode, as the macro does (the descriptor's module path, file and line are
    /// filled in by the compiler there; see the macro's expansion).
    pub fn encode(&self) -> String {
        serde_json::to_string(self).expect("a descriptor always serializes")
    }
}

#[derive(Debug, PartialEq, Eq)]
pub enum DecodeError {
    Version { found: Option<u64> },
    Malformed(String),
}

impl std::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DecodeError::Version { found } => write!(
                f,
                "kernel descriptor version {} but this cargo-oxide reads version {}; \
                 rebuild with matching oxide-device and cargo-oxide versions",
                found.map_or("missing".to_string(), |v| v.to_string()),
                crate::DESCRIPTOR_VERSION
            ),
            DecodeError::Malformed(e) => write!(f, "malformed kernel descriptor: {e}"),
        }
    }
}

impl std::error::Error for DecodeError {}

/// One descriptor section entry (a kernel's or a constant's) decoded, after checking
/// that it was encoded at [`crate::DESCRIPTOR_VERSION`].
fn decode_versioned<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Result<T, DecodeError> {
    let value: serde_json::Value =
        serde_json::from_slice(bytes).map_err(|e| DecodeError::Malformed(e.to_string()))?;
    let version = value.get("version").and_then(|v| v.as_u64());
    if version != Some(u64::from(crate::DESCRIPTOR_VERSION)) {
        return Err(DecodeError::Version { found: version });
    }
    serde_json::from_value(value).map_err(|e| DecodeError::Malformed(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> KernelDescriptor {
        KernelDescriptor {
            version: crate::DESCRIPTOR_VERSION,
            name: "saxpy".into(),
            entry: "saxpy".into(),
            instance: vec![],
            params: vec![
                ParamDescriptor::new("a", ParamKind::Scalar, ScalarType::F32, false),
                ParamDescriptor::new("y", ParamKind::DisjointSlice, ScalarType::F32, true),
            ],
            is_unsafe: false,
            launch_bounds: None,
            cluster: Some([2, 1, 1]),
            launch: Some(LaunchPolicy::Elementwise {
                over: "y".into(),
                per_thread: 4,
                block: 256,
            }),
            variant_of: Some("saxpy_plain".into()),
            shared_bytes: Some(4096),
            tensor_maps: None,
            tune: Some(crate::tune::Tune {
                consts: vec![crate::tune::TuneConst {
                    param: "N".into(),
                    values: vec!["4".into(), "8".into()],
                }],
                launch: vec![crate::tune::TuneLaunch {
                    param: "block".into(),
                    values: vec![128, 256],
                }],
                key: vec!["n".into()],
            }),
            dependent_launch: false,
            whole_warps: Some("shfl.sync.bfly".into()),
            source: SourceLocation {
                module: "k".into(),
                file: "src/lib.rs".into(),
                line: 3,
            },
        }
    }

    #[test]
    fn round_trips() {
        let d = sample();
        assert_eq!(KernelDescriptor::decode(d.encode().as_bytes()), Ok(d));
    }

    #[test]
    fn refuses_other_versions() {
        let mut d = sample();
        d.version = 99;
        let err = KernelDescriptor::decode(d.encode().as_bytes()).unwrap_err();
        assert_eq!(err, DecodeError::Version { found: Some(99) });
        assert!(err.to_string().contains("rebuild"));
    }

    #[test]
    fn refuses_garbage() {
        assert!(matches!(
            KernelDescriptor::decode(b"{not json"),
            Err(DecodeError::Malformed(_))
        ));
    }

    #[test]
    fn one_d_policies_are_named_by_their_kind() {
        let over = || "x".to_string();
        let all = [
            LaunchPolicy::Elementwise {
                over: over(),
                per_thread: 1,
                block: 256,
            },
            LaunchPolicy::GridStride {
                over: over(),
                per_thread: 1,
                block: 256,
                blocks_per_sm: 8,
            },
            LaunchPolicy::BlockPerElement {
                over: over(),
                block: 256,
            },
            LaunchPolicy::BlockPerRow {
                over: over(),
                cols: None,
                block: 256,
                blocks_per_sm: 16,
            },
            LaunchPolicy::Segments { over: over() },
            LaunchPolicy::Columns {
                over: over(),
                per_block: 32,
                block: 256,
            },
            LaunchPolicy::Tiles {
                over: over(),
                block: [16, 16, 1],
                tile: [16, 16, 1],
            },
            LaunchPolicy::PersistentTiles {
                over: over(),
                block: [384, 1, 1],
                tile: [256, 128, 1],
                blocks_per_sm: 1,
            },
        ];
        for p in all {
            let kind = serde_json::to_value(&p).unwrap()["kind"]
                .as_str()
                .unwrap()
                .to_string();
            assert_eq!(
                p.is_one_d(),
                ONE_D_POLICIES.contains(&kind.as_str()),
                "{kind}"
            );
        }
    }
}
