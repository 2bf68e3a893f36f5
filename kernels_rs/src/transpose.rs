//! Matrix transpose through shared-memory tiles.

use oxide_device::ldst::ReadOnlyLoad;
use oxide_device::prelude::*;

/// Side of the square tiles [`transpose`] stages through shared memory.
pub const TILE: usize = 32;
/// A tile row in shared memory: one padding element shifts each row by one bank, so
/// the column reads of the write phase hit 32 different banks (4-byte elements; for
/// 8-byte ones, each half-warp phase hits 32 different banks).
const PITCH: usize = TILE + 1;

/// An element type [`transpose`] takes: each has its own shared tile (a static cannot
/// name the kernel's generic parameter).
pub trait TileElement: ReadOnlyLoad {
    /// This type's `TILE × PITCH` shared-memory tile.
    fn tile() -> *mut Self;
}

macro_rules! tile_element {
    ($($t:ty),*) => {$(
        impl TileElement for $t {
            #[inline(always)]
            fn tile() -> *mut $t {
                shared_array!($t, { TILE * PITCH }).as_mut_ptr()
            }
        }
    )*};
}

tile_element!(f32, f64, u32);

/// Rows of threads in a [`transpose`] block; each thread moves `TILE / BLOCK_ROWS`
/// elements of a tile.
pub const BLOCK_ROWS: usize = 8;

/// `out = xᵀ` for the row-major `rows × cols` matrix `x`; `out` is `cols × rows`.
///
/// Each block moves `32 × 32` tiles: it reads a tile's rows (coalesced, through the
/// read-only cache), writes them into a padded shared tile, and writes the tile's
/// columns as rows of `out` (coalesced, and no bank conflicts thanks to the padding).
/// Partial tiles at the right and bottom edges are handled, so any shape works.
///
/// Launch: block `(32, 8)`, grid `(⌈cols / 32⌉, min(⌈rows / 32⌉, 65535))`; blocks
/// stride over tiles, so a smaller grid is correct too. Traps when `x.len()` or
/// `out.len()` is not `rows · cols`, or the block is not `(32, 8)`.
#[kernel(f32, f64, u32)]
#[launch_bounds(256)]
pub fn transpose<T: TileElement>(x: &[T], mut out: DisjointSlice<T>, rows: u32, cols: u32) {
    let (rows, cols) = (rows as usize, cols as usize);
    gpu_assert!(
        x.len() == rows * cols && out.len() == rows * cols,
        "transpose: x has {} elements, out {}, need rows * cols = {} * {}\n",
        x.len(),
        out.len(),
        rows,
        cols
    );
    gpu_assert!(
        thread::blockDim_x() as usize == TILE
            && thread::blockDim_y() as usize == BLOCK_ROWS
            && thread::blockDim_z() == 1,
        "transpose needs a block of (32, 8) threads, got ({}, {}, {})\n",
        thread::blockDim_x(),
        thread::blockDim_y(),
        thread::blockDim_z()
    );
    let (tx, ty) = (thread::threadIdx_x() as usize, thread::threadIdx_y() as usize);
    let tile = T::tile();
    let (src, dst) = (x.as_ptr(), out.as_mut_ptr());
    let (tiles_x, tiles_y) = (cols.div_ceil(TILE), rows.div_ceil(TILE));
    let (gx, gy) = (thread::gridDim_x() as usize, thread::gridDim_y() as usize);
    for tile_row in (thread::blockIdx_y() as usize..tiles_y).step_by(gy) {
        for tile_col in (thread::blockIdx_x() as usize..tiles_x).step_by(gx) {
            let (r0, c0) = (tile_row * TILE, tile_col * TILE);
            // Read: thread (tx, ty) takes rows ty, ty + 8, … of the tile at column c.
            let c = c0 + tx;
            for k in 0..TILE / BLOCK_ROWS {
                let i = ty + k * BLOCK_ROWS;
                if r0 + i < rows && c < cols {
                    // SAFETY: in bounds of `x` (checked above); each thread its own slot.
                    unsafe {
                        let v = T::load_nc(src.add((r0 + i) * cols + c));
                        tile.add(i * PITCH + tx).write(v);
                    }
                }
            }
            thread::sync_threads();
            // Write: out row c0 + i, columns r0 + tx: the tile's column i.
            let r = r0 + tx;
            for k in 0..TILE / BLOCK_ROWS {
                let i = ty + k * BLOCK_ROWS;
                if r < rows && c0 + i < cols {
                    // SAFETY: slot (tx, i) was written before the barrier (it is in
                    // bounds exactly when this element is); out[(c0 + i)·rows + r] is
                    // in this block's tile and this thread's alone.
                    unsafe { dst.add((c0 + i) * rows + r).write(tile.add(tx * PITCH + i).read()) };
                }
            }
            // The next tile's writes wait until every thread has read this one.
            thread::sync_threads();
        }
    }
}
