//! Matrix transpose through shared-memory tiles.

use oxide_device::ldst::{self, ReadOnlyLoad};
use oxide_device::prelude::*;

/// Rows of `x` in the largest of [`transpose`]'s tiles (its tuned `ROWS`, a multiple of
/// 32, is at most this): each block's shared tile has room for it. 64 rows of f64 take
/// 33 KB of the 48 KB a block's static shared memory may have.
pub const TILE_ROWS: usize = 64;
/// Columns of `x` in one tile (a multiple of 32).
pub const TILE_COLS: usize = 64;
/// A tile row in shared memory: one padding element shifts each row by one bank, so
/// the column reads of the write phase hit 32 different banks (4-byte elements; for
/// 8-byte ones, each half-warp phase hits 32 different banks).
const PITCH: usize = TILE_COLS + 1;

/// An element type [`transpose`] takes: each has its own shared tile (a static cannot
/// name the kernel's generic parameter).
pub trait TileElement: ReadOnlyLoad + Default {
    /// This type's `TILE_ROWS × PITCH` shared-memory tile.
    fn tile() -> *mut Self;
}

macro_rules! tile_element {
    ($($t:ty),*) => {$(
        impl TileElement for $t {
            #[inline(always)]
            fn tile() -> *mut $t {
                shared_array!($t, { TILE_ROWS * PITCH }).as_mut_ptr()
            }
        }
    )*};
}

tile_element!(f32, f64, u32);

/// Threads of a [`transpose`] block along x (a warp: a warp reads 32 consecutive
/// elements of a row of `x` and writes 32 consecutive elements of a row of `out`).
pub const BLOCK_COLS: usize = 32;
/// Rows of threads in a [`transpose`] block; each thread moves
/// `ROWS · TILE_COLS / (BLOCK_COLS · BLOCK_ROWS)` elements of a tile.
pub const BLOCK_ROWS: usize = 8;

const _: () = assert!(
    TILE_ROWS.is_multiple_of(BLOCK_COLS)
        && TILE_COLS.is_multiple_of(BLOCK_COLS)
        && BLOCK_COLS.is_multiple_of(BLOCK_ROWS),
    "the tile loops below assume these divide"
);

/// The loads a thread issues for a tile of [`TILE_ROWS`] rows, the most of any `ROWS`.
const MOST_LOADS: usize = TILE_ROWS / BLOCK_ROWS * (TILE_COLS / BLOCK_COLS);

/// `out = xᵀ` for the row-major `rows × cols` matrix `x`; `out` is `cols × rows`.
///
/// Each block moves tiles of `ROWS` rows × 64 columns ([`TILE_COLS`]): it reads a
/// tile's rows (coalesced, through the read-only cache), writes them into a padded
/// shared tile, and writes the tile's columns as rows of `out` (coalesced, and no bank
/// conflicts thanks to the padding). Partial tiles at the right and bottom edges are
/// handled, so any shape works.
///
/// Each thread moves `ROWS / 4` elements of a tile (16 with the hand pick's 64 rows),
/// its loads issued before its first shared-memory store, so that enough bytes are in
/// flight to cover DRAM's latency; whole tiles take a path with no bounds checks and
/// constant strides. `ROWS` is tuned (`pyoxide tune`): 32-row tiles make twice the
/// blocks, each with half the loads in flight.
///
/// Launch: a plain call takes block `(32, 8)`, grid `(⌈cols / 64⌉, ⌈rows / ROWS⌉)`;
/// blocks stride over tiles, so any grid is correct (more than 65535 tile rows need an
/// explicit one, e.g. `(⌈cols / 64⌉, 65535)`). Traps when the block is not `(32, 8)`.
#[kernel(f32, f64, u32)]
#[launch_bounds(256, 4)]
#[tune(ROWS = [64, 32])]
#[launch(tiles(x, block = (32, 8), tile = (64, ROWS)))]
#[shapes(x[rows, cols], out[cols, rows])]
pub fn transpose<T: TileElement, const ROWS: usize>(x: Array2<T>, out: DisjointArray2<T>) {
    const {
        assert!(
            ROWS.is_multiple_of(BLOCK_COLS) && ROWS <= TILE_ROWS,
            "ROWS: a multiple of 32, at most TILE_ROWS"
        )
    };
    // The body works on the flat C-order arrays (the launcher checked the shapes).
    let (rows, cols) = (x.rows(), x.cols());
    let (x, mut out) = (x.as_slice(), out.into_flat());
    gpu_assert!(
        x.len() == rows * cols && out.len() == rows * cols,
        "transpose: x has {} elements, out {}, need rows * cols = {} * {}\n",
        x.len(),
        out.len(),
        rows,
        cols
    );
    gpu_assert!(
        thread::blockDim_x() as usize == BLOCK_COLS
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
    let (tiles_x, tiles_y) = (cols.div_ceil(TILE_COLS), rows.div_ceil(ROWS));
    let (gx, gy) = (thread::gridDim_x() as usize, thread::gridDim_y() as usize);
    // This thread's slots: it writes (ty + 8k, tx + 32h) of the tile and reads
    // (tx + 32h, ty + 8k).
    // SAFETY: both are below TILE_ROWS · PITCH (tx < 32 <= ROWS <= TILE_ROWS, ty < 8).
    let (put, get) = unsafe { (tile.add(ty * PITCH + tx), tile.add(tx * PITCH + ty)) };
    let mover = Mover::<T, ROWS> {
        src,
        dst,
        put,
        get,
        rows,
        cols,
    };
    let mut tile_row = thread::blockIdx_y() as usize;
    while tile_row < tiles_y {
        let mut tile_col = thread::blockIdx_x() as usize;
        while tile_col < tiles_x {
            // Opaque, so that the tile's addresses are computed from it here, rather
            // than kept as a dozen 64-bit loop variables (which cost occupancy).
            let (r0, c0) = (
                ldst::opaque_usize(tile_row * ROWS),
                ldst::opaque_usize(tile_col * TILE_COLS),
            );
            if r0 + ROWS <= rows && c0 + TILE_COLS <= cols {
                // SAFETY: a whole tile inside the matrix.
                unsafe { mover.full_tile((r0 + ty, c0 + tx), (r0 + tx, c0 + ty)) };
            } else {
                // SAFETY: a partial tile, checked element by element.
                unsafe { mover.edge_tile((r0, c0), (tx, ty)) };
            }
            tile_col += gx;
        }
        tile_row += gy;
    }
}

/// What every tile move uses: the `rows × cols` matrix `src`, its transpose `dst`, and
/// this thread's write (`put`) and read (`get`) slots of the block's tile; tiles of
/// `ROWS` rows.
#[derive(Clone, Copy)]
struct Mover<T, const ROWS: usize> {
    src: *const T,
    dst: *mut T,
    put: *mut T,
    get: *mut T,
    rows: usize,
    cols: usize,
}

impl<T: TileElement, const ROWS: usize> Mover<T, ROWS> {
    /// The fields, as locals of a move's body.
    #[inline(always)]
    fn parts(self) -> (*const T, *mut T, *mut T, *mut T, usize, usize) {
        (self.src, self.dst, self.put, self.get, self.rows, self.cols)
    }

    /// Move one whole tile: this thread reads `x[r + 8k, c + 32h]` and writes
    /// `out[oc + 8k, or + 32h]`, with no bounds checks and constant strides.
    ///
    /// # Safety
    /// The tile lies inside the `rows × cols` matrix; `put` and `get` are this thread's
    /// slots of the block's tile; every thread of the block calls it (two barriers).
    #[inline(always)]
    unsafe fn full_tile(self, (r, c): (usize, usize), (or, oc): (usize, usize)) {
        let (src, dst, put, get, rows, cols) = self.parts();
        // A constant once ROWS is: the loops below unroll, and the slots of `v` past
        // `loads` are never touched (an array cannot be sized by a generic expression).
        let loads = ROWS / BLOCK_ROWS * (TILE_COLS / BLOCK_COLS);
        const H: usize = TILE_COLS / BLOCK_COLS;
        // SAFETY: upheld by the caller: every address is in the tile.
        unsafe {
            let from = src.add(r * cols + c);
            // All loads first, then the shared stores: the loads are in flight together.
            let mut v = [T::default(); MOST_LOADS];
            for (i, e) in v.iter_mut().enumerate().take(loads) {
                let (k, h) = (i / H, i % H);
                *e = T::load_nc(from.add(k * BLOCK_ROWS * cols + h * BLOCK_COLS));
            }
            for (i, &e) in v.iter().enumerate().take(loads) {
                let (k, h) = (i / H, i % H);
                put.add(k * BLOCK_ROWS * PITCH + h * BLOCK_COLS).write(e);
            }
            thread::sync_threads();
            let to = dst.add(oc * rows + or);
            for k in 0..TILE_COLS / BLOCK_ROWS {
                for h in 0..ROWS / BLOCK_COLS {
                    to.add(k * BLOCK_ROWS * rows + h * BLOCK_COLS)
                        .write(get.add(h * BLOCK_COLS * PITCH + k * BLOCK_ROWS).read());
                }
            }
            // The next tile's writes wait until every thread has read this one.
            thread::sync_threads();
        }
    }

    /// Move a tile that the matrix's right or bottom edge cuts, element by element.
    ///
    /// # Safety
    /// As [`Mover::full_tile`], for the tile at `(r0, c0)` of the matrix.
    #[inline(always)]
    unsafe fn edge_tile(self, (r0, c0): (usize, usize), (tx, ty): (usize, usize)) {
        let (src, dst, put, get, rows, cols) = self.parts();
        for k in 0..ROWS / BLOCK_ROWS {
            for h in 0..TILE_COLS / BLOCK_COLS {
                let (r, c) = (r0 + ty + k * BLOCK_ROWS, c0 + tx + h * BLOCK_COLS);
                if r < rows && c < cols {
                    // SAFETY: in bounds of `x`; this thread's slot.
                    unsafe {
                        put.add(k * BLOCK_ROWS * PITCH + h * BLOCK_COLS)
                            .write(T::load_nc(src.add(r * cols + c)))
                    };
                }
            }
        }
        thread::sync_threads();
        for k in 0..TILE_COLS / BLOCK_ROWS {
            for h in 0..ROWS / BLOCK_COLS {
                let (r, c) = (r0 + tx + h * BLOCK_COLS, c0 + ty + k * BLOCK_ROWS);
                if r < rows && c < cols {
                    // SAFETY: slot (tx + 32h, ty + 8k) was written before the barrier (it is
                    // in bounds exactly when this element is); out[c·rows + r] is this
                    // thread's alone.
                    unsafe {
                        dst.add(c * rows + r)
                            .write(get.add(h * BLOCK_COLS * PITCH + k * BLOCK_ROWS).read())
                    };
                }
            }
        }
        thread::sync_threads();
    }
}
