//! CUDA limits a launch is checked against before it reaches a backend, and the
//! architectures pyoxide builds for. The emulator enforces the same ones, so a launch
//! refused on the GPU is refused on NumPy arrays too.

/// Threads in one block (every architecture pyoxide builds for).
pub const MAX_THREADS_PER_BLOCK: u32 = 1024;
/// Lanes in a warp. A kernel whose code runs a warp collective over the full warp
/// (`KernelDescriptor::whole_warps`) takes only blocks of a multiple of it.
pub const WARP_SIZE: u32 = 32;
/// Largest block dimension, per axis (x, y, z).
pub const MAX_BLOCK_DIM: [u32; 3] = [1024, 1024, 64];
/// Largest grid dimension, per axis (x, y, z).
pub const MAX_GRID_DIM: [u32; 3] = [(1 << 31) - 1, 65535, 65535];
/// Dynamic shared memory a launch may ask for without opting in through
/// `CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES`.
pub const DEFAULT_DYNAMIC_SHARED_BYTES: u32 = 48 * 1024;
/// The most dynamic shared memory one block can have on any architecture pyoxide builds
/// for, after opting in (227 KiB on sm_90 and sm_100; a smaller device refuses more at
/// launch). The emulator gives each block this much.
pub const MAX_DYNAMIC_SHARED_BYTES: u32 = 227 * 1024;
/// Bytes the launch ABI can describe in one slice (its length word is a u64 element
/// count, but device code indexes with isize).
pub const MAX_SLICE_BYTES: u64 = (1 << 63) - 1;
/// The oldest architecture pyoxide builds for: ptxas of CUDA 13 refuses anything older.
pub const MIN_ARCH: u32 = 75;
/// Local memory of one thread, in bytes (what ptxas accepts for a stack frame); the
/// emulator's thread stacks have room for it.
pub const MAX_LOCAL_BYTES_PER_THREAD: u64 = 512 * 1024;
/// Blocks in one thread-block cluster that every sm_90+ device launches (the "portable"
/// cluster size; `#[cluster_launch]` products above it are refused).
pub const MAX_CLUSTER_SIZE: u32 = 8;
/// The oldest architecture with thread-block clusters (`.reqnctapercluster`, `mapa`,
/// `barrier.cluster`): Hopper. LLVM drops the cluster attribute for older targets
/// without a word, so `cargo oxide build` refuses them for cluster kernels.
pub const MIN_CLUSTER_ARCH: u32 = 90;
/// The oldest architecture with programmatic dependent launch (`griddepcontrol`, and the
/// launch attribute that lets a grid start while the one before it runs): Hopper. ptxas
/// refuses `griddepcontrol` for older targets, so `cargo oxide build` refuses them for
/// `#[dependent_launch]` kernels first, with the reason.
pub const MIN_DEPENDENT_LAUNCH_ARCH: u32 = 90;
/// TMA (`cp.async.bulk.tensor`): a tensor map's global address and the bytes between its
/// rows must be multiples of this (`cuTensorMapEncodeTiled` refuses others).
pub const TMA_ALIGN_BYTES: u32 = 16;
/// The most rows (or elements along any box dimension) one TMA box spans.
pub const TMA_MAX_BOX: u32 = 256;
/// Bytes of one encoded tensor map (`CUtensorMap`), 64-byte aligned where it is read.
pub const TENSOR_MAP_BYTES: u32 = 128;
