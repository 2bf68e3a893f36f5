//! Host backend: the "special registers" of the emulated thread that runs on the
//! current OS thread. The CPU emulator sets them through `__private::emu` before it
//! calls a kernel; code that never sets them (a plain host test calling a kernel
//! function) sees thread 0 of a 1×1 launch.

use core::cell::Cell;

/// Coordinates of one emulated GPU thread, as CUDA's `threadIdx`, `blockIdx`,
/// `blockDim` and `gridDim` (x, y, z).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ThreadCoords {
    pub thread_idx: [u32; 3],
    pub block_idx: [u32; 3],
    pub block_dim: [u32; 3],
    pub grid_dim: [u32; 3],
}

impl ThreadCoords {
    /// Thread 0 of a launch with one block of one thread.
    pub const SINGLE: ThreadCoords = ThreadCoords {
        thread_idx: [0; 3],
        block_idx: [0; 3],
        block_dim: [1; 3],
        grid_dim: [1; 3],
    };
}

impl Default for ThreadCoords {
    fn default() -> Self {
        ThreadCoords::SINGLE
    }
}

std::thread_local! {
    static CURRENT: Cell<ThreadCoords> = const { Cell::new(ThreadCoords::SINGLE) };
}

/// Make `coords` the current thread's coordinates; returns the previous ones so a
/// caller can restore them.
pub fn set_thread_coords(coords: ThreadCoords) -> ThreadCoords {
    CURRENT.with(|c| c.replace(coords))
}

/// The current thread's coordinates.
pub fn thread_coords() -> ThreadCoords {
    CURRENT.with(Cell::get)
}

macro_rules! special_registers {
    ($($name:ident => $field:ident[$axis:literal],)*) => {$(
        #[inline]
        pub(crate) fn $name() -> u32 {
            thread_coords().$field[$axis]
        }
    )*};
}

special_registers! {
    thread_idx_x => thread_idx[0], thread_idx_y => thread_idx[1], thread_idx_z => thread_idx[2],
    block_idx_x => block_idx[0], block_idx_y => block_idx[1], block_idx_z => block_idx[2],
    block_dim_x => block_dim[0], block_dim_y => block_dim[1], block_dim_z => block_dim[2],
    grid_dim_x => grid_dim[0], grid_dim_y => grid_dim[1], grid_dim_z => grid_dim[2],
}

/// A block of one thread needs no barrier. The emulator, which runs a block's threads
/// concurrently, will install a real block barrier here.
#[inline]
pub(crate) fn sync_threads() {}
