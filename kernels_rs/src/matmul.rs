//! Matrix products.

use oxide_device::prelude::*;

/// Side of the square tiles of [`matmul_tiled`]; its blocks are `TILE × TILE` threads.
const TILE: usize = 16;

/// `c = a · b` for `a` (m×k), `b` (k×n), `c` (m×n), in 16×16 tiles staged through
/// shared memory. `a` and `c` are C-contiguous; `b` may have any strides (a transposed
/// view `w.T` goes in as it is). The shapes come with the arrays, and the launcher
/// checks that the `k`s (and `m`s, `n`s) agree. A plain call launches blocks of
/// (16, 16) over `c`: grid (⌈n/16⌉, ⌈m/16⌉); an explicit block must be (16, 16) too.
#[kernel]
#[launch_bounds(256)]
#[launch(tiles(c, block = (16, 16), tile = (16, 16)))]
#[shapes(a[m, k], b[k, n], c[m, n])]
pub fn matmul_tiled(a: Array2<f32>, b: Array2<f32, Strided>, mut c: DisjointArray2<f32>) {
    static A_TILE: SharedArray<f32, { TILE * TILE }> = SharedArray::UNINIT;
    static B_TILE: SharedArray<f32, { TILE * TILE }> = SharedArray::UNINIT;
    let k = a.cols();
    let (tx, ty) = (
        thread::threadIdx_x() as usize,
        thread::threadIdx_y() as usize,
    );
    let (row, col) = (thread::index_2d_row(), thread::index_2d_col());
    let mut acc = 0.0f32;
    for t in 0..k.div_ceil(TILE) {
        let (a_col, b_row) = (t * TILE + tx, t * TILE + ty);
        // Out of bounds (the ragged edges of the last tiles) reads as 0.
        let a_val = a.get([row, a_col]).copied().unwrap_or(0.0);
        let b_val = b.get([b_row, col]).copied().unwrap_or(0.0);
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
    if let Some(c_ij) = index_nd::<2>().and_then(|idx| c.get_mut(idx)) {
        *c_ij = acc;
    }
}
