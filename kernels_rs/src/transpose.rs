//! Matrix transpose through shared-memory tiles.

use oxide_device::ldst::{self, ReadOnlyLoad};
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
/// Registers: 32 a thread (`launch_bounds(256, 8)`), so eight blocks fill an SM: each
/// thread has only four loads in flight, and the latency of DRAM is hidden by many
/// threads, not by long ones. Whole tiles take a path with no bounds checks.
///
/// Launch: block `(32, 8)`, grid `(⌈cols / 32⌉, min(⌈rows / 32⌉, 65535))`; blocks
/// stride over tiles, so a smaller grid is correct too. Traps when `x.len()` or
/// `out.len()` is not `rows · cols`, or the block is not `(32, 8)`.
#[kernel(f32, f64, u32)]
#[launch_bounds(256, 8)]
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
    let (tx, ty) = (
        thread::threadIdx_x() as usize,
        thread::threadIdx_y() as usize,
    );
    let tile = T::tile();
    let (src, dst) = (x.as_ptr(), out.as_mut_ptr());
    let (tiles_x, tiles_y) = (cols.div_ceil(TILE), rows.div_ceil(TILE));
    let (gx, gy) = (thread::gridDim_x() as usize, thread::gridDim_y() as usize);
    // This thread's slots: it writes (ty + 8k, tx) of the tile and reads (tx, ty + 8k).
    // SAFETY: both are below TILE · PITCH.
    let (put, get) = unsafe { (tile.add(ty * PITCH + tx), tile.add(tx * PITCH + ty)) };
    let mut tile_row = thread::blockIdx_y() as usize;
    while tile_row < tiles_y {
        let mut tile_col = thread::blockIdx_x() as usize;
        while tile_col < tiles_x {
            // Opaque, so that the tile's addresses are computed from it here, rather
            // than kept as a dozen 64-bit loop variables (which cost occupancy).
            let (r0, c0) = (
                ldst::opaque_usize(tile_row * TILE),
                ldst::opaque_usize(tile_col * TILE),
            );
            if r0 + TILE <= rows && c0 + TILE <= cols {
                // SAFETY: a whole tile inside the matrix.
                unsafe {
                    move_full_tile(
                        src,
                        dst,
                        put,
                        get,
                        rows,
                        cols,
                        (r0 + ty, c0 + tx),
                        (r0 + tx, c0 + ty),
                    )
                };
            } else {
                // SAFETY: a partial tile, checked element by element.
                unsafe { move_edge_tile(src, dst, put, get, rows, cols, (r0, c0), (tx, ty)) };
            }
            tile_col += gx;
        }
        tile_row += gy;
    }
}

/// Move one whole `32 × 32` tile: this thread reads `x[r + 8k, c]` and writes
/// `out[oc + 8k, or]` for k in 0..4, with no bounds checks and constant strides.
///
/// # Safety
/// The tile lies inside the `rows × cols` matrix; `put` and `get` are this thread's
/// slots of the block's tile; every thread of the block calls it (two barriers).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn move_full_tile<T: TileElement>(
    src: *const T,
    dst: *mut T,
    put: *mut T,
    get: *mut T,
    rows: usize,
    cols: usize,
    (r, c): (usize, usize),
    (or, oc): (usize, usize),
) {
    // SAFETY: upheld by the caller: every address is in the tile.
    unsafe {
        let from = src.add(r * cols + c);
        for k in 0..TILE / BLOCK_ROWS {
            put.add(k * BLOCK_ROWS * PITCH)
                .write(T::load_nc(from.add(k * BLOCK_ROWS * cols)));
        }
        thread::sync_threads();
        let to = dst.add(oc * rows + or);
        for k in 0..TILE / BLOCK_ROWS {
            to.add(k * BLOCK_ROWS * rows)
                .write(get.add(k * BLOCK_ROWS).read());
        }
        // The next tile's writes wait until every thread has read this one.
        thread::sync_threads();
    }
}

/// Move a tile that the matrix's right or bottom edge cuts, element by element.
///
/// # Safety
/// As [`move_full_tile`], for the tile at `(r0, c0)` of the matrix.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn move_edge_tile<T: TileElement>(
    src: *const T,
    dst: *mut T,
    put: *mut T,
    get: *mut T,
    rows: usize,
    cols: usize,
    (r0, c0): (usize, usize),
    (tx, ty): (usize, usize),
) {
    for k in 0..TILE / BLOCK_ROWS {
        let (r, c) = (r0 + ty + k * BLOCK_ROWS, c0 + tx);
        if r < rows && c < cols {
            // SAFETY: in bounds of `x`; this thread's slot.
            unsafe {
                put.add(k * BLOCK_ROWS * PITCH)
                    .write(T::load_nc(src.add(r * cols + c)))
            };
        }
    }
    thread::sync_threads();
    for k in 0..TILE / BLOCK_ROWS {
        let (r, c) = (r0 + tx, c0 + ty + k * BLOCK_ROWS);
        if r < rows && c < cols {
            // SAFETY: slot (tx, ty + 8k) was written before the barrier (it is in bounds
            // exactly when this element is); out[c·rows + r] is this thread's alone.
            unsafe { dst.add(c * rows + r).write(get.add(k * BLOCK_ROWS).read()) };
        }
    }
    thread::sync_threads();
}
