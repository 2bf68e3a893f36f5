//! CUDA's limits that pyoxide checks in more than one place (the `#[kernel]` macro, the
//! emulator), for every architecture pyoxide builds for (sm_75 and later).

/// Threads in a block (`maxThreadsPerBlock`); the most `#[launch_bounds]` may ask for.
pub const MAX_BLOCK_THREADS: u32 = 1024;
/// Block dimensions (x, y, z).
pub const MAX_BLOCK_DIM: [u32; 3] = [1024, 1024, 64];
/// Grid dimensions (x, y, z).
pub const MAX_GRID_DIM: [u32; 3] = [u32::MAX >> 1, 65535, 65535];
/// Dynamic shared memory of one block, in bytes, on the largest part (227 KiB on
/// sm_90); a launch beyond it fails on every GPU.
pub const MAX_DYNAMIC_SHARED_BYTES: u64 = 227 * 1024;
/// Local memory of one thread, in bytes (what ptxas accepts for a stack frame).
pub const MAX_LOCAL_BYTES_PER_THREAD: u64 = 512 * 1024;

/// The oldest architecture pyoxide builds for (`sm_75`, Turing): what the ptxas of
/// CUDA 13 still accepts.
pub const MIN_SM: u32 = 75;
