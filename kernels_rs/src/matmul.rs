//! Matrix products.

use oxide_device::prelude::*;

/// Side of the square tiles of [`matmul_tiled`]; its blocks are `TILE × TILE` threads.
const TILE: usize = 16;

/// `c = a · b` for row-major `a` (m×k), `b` (k×n), `c` (m×n), in 16×16 tiles staged
/// through shared memory. Launch with block (16, 16) and grid (⌈n/16⌉, ⌈m/16⌉).
#[kernel]
#[launch_bounds(256)]
pub fn matmul_tiled(a: &[f32], b: &[f32], mut c: DisjointSlice<f32>, m: u32, n: u32, k: u32) {
    static A_TILE: SharedArray<f32, { TILE * TILE }> = SharedArray::UNINIT;
    static B_TILE: SharedArray<f32, { TILE * TILE }> = SharedArray::UNINIT;
    let (m, n, k) = (m as usize, n as usize, k as usize);
    let (tx, ty) = (
        thread::threadIdx_x() as usize,
        thread::threadIdx_y() as usize,
    );
    let (row, col) = (thread::index_2d_row(), thread::index_2d_col());
    let mut acc = 0.0f32;
    for t in 0..k.div_ceil(TILE) {
        let (a_col, b_row) = (t * TILE + tx, t * TILE + ty);
        let a_val = if row < m && a_col < k {
            a[row * k + a_col]
        } else {
            0.0
        };
        let b_val = if b_row < k && col < n {
            b[b_row * n + col]
        } else {
            0.0
        };
        // SAFETY: each thread writes its own slot; the barriers separate the writes
        // from the reads of the same tile and from the next tile's writes.
        unsafe {
            A_TILE.write(ty * TILE + tx, a_val);
            B_TILE.write(ty * TILE + tx, b_val);
        }
        thread::sync_threads();
        for i in 0..TILE {
            // SAFETY: written by this block before the barrier above.
            acc += unsafe { A_TILE.read(ty * TILE + i) * B_TILE.read(i * TILE + tx) };
        }
        thread::sync_threads();
    }
    // SAFETY: `n` is a kernel argument, the same in every thread.
    let idx = unsafe { thread::index_2d_runtime(n) };
    if let Some(c_ij) = c.get_mut(idx) {
        *c_ij = acc;
    }
}
