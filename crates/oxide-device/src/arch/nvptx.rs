//! GPU backend: PTX special registers and barriers through `core::arch::nvptx`.

use core::arch::nvptx;

macro_rules! special_registers {
    ($($name:ident => $intrinsic:ident,)*) => {$(
        #[inline(always)]
        pub(crate) fn $name() -> u32 {
            // SAFETY: reading a special register has no preconditions inside a kernel.
            unsafe { nvptx::$intrinsic() }
        }
    )*};
}

special_registers! {
    thread_idx_x => _thread_idx_x, thread_idx_y => _thread_idx_y, thread_idx_z => _thread_idx_z,
    block_idx_x => _block_idx_x, block_idx_y => _block_idx_y, block_idx_z => _block_idx_z,
    block_dim_x => _block_dim_x, block_dim_y => _block_dim_y, block_dim_z => _block_dim_z,
    grid_dim_x => _grid_dim_x, grid_dim_y => _grid_dim_y, grid_dim_z => _grid_dim_z,
}

#[inline(always)]
pub(crate) fn sync_threads() {
    // SAFETY: `bar.sync 0`; every thread of the block must reach it (CUDA's rule for
    // `__syncthreads`, documented on `thread::sync_threads`).
    unsafe { nvptx::_syncthreads() }
}
