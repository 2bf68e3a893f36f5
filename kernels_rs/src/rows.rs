//! Row kernels: one block per row of a row-major matrix.

use oxide_device::prelude::*;

/// Row-wise softmax of a row-major matrix: launch one block per row (the grid size is
/// the number of rows; `x.len()` must be a multiple of it), 32·w threads a block.
/// Subtracting the row's maximum keeps `exp` from overflowing.
#[kernel]
#[launch_bounds(1024)]
pub fn softmax_rows(x: &[f32], mut out: DisjointSlice<f32>) {
    let Some(mut row) = out.block_row_mut() else {
        return;
    };
    let cols = row.cols();
    let start = cols * thread::blockIdx_x() as usize;
    let first = thread::block_thread_index() as usize;
    let step = thread::block_size() as usize;
    let mine = || x[start..start + cols].iter().skip(first).step_by(step);
    let max = warp::block_reduce_max_f32(mine().fold(f32::NEG_INFINITY, |m, &v| m.max(v)));
    let sum = warp::block_reduce_sum_f32(mine().map(|&v| (v - max).exp()).sum());
    for (col, y) in row.iter_mut() {
        *y = (x[start + col] - max).exp() / sum;
    }
}
