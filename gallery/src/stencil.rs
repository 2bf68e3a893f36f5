//! Stencils over a 2-D grid.

use oxide_device::prelude::*;

/// The 5-point Laplacian with zeros outside the grid: `out[i, j] = x[i−1, j] + x[i+1, j]
/// + x[i, j−1] + x[i, j+1] − 4·x[i, j]` (PyTorch: `conv2d` with the 3×3 Laplacian kernel
/// and `padding=1`). One block per row: the rows above, at and below are read as 128-bit
/// vectors (the neighbouring blocks read the same rows, mostly from L2), the left and
/// right neighbours one element at a time (from L1).
#[kernel]
#[launch_bounds(1024)]
#[shapes(x[rows, cols], out[rows, cols])]
#[launch(block_per_row(out, block = 1024))]
pub fn laplacian_2d(x: Array2<f32>, mut out: DisjointArray2<f32>) {
    let Some(mut row) = out.block_row_mut() else {
        return;
    };
    let (i, rows) = (row.row(), x.rows());
    let mid = x.row_slice(i);
    // The rows above and below, or this row again where there is none (then unused).
    let up = x.row_slice(if i > 0 { i - 1 } else { i });
    let down = x.row_slice(if i + 1 < rows { i + 1 } else { i });
    let (has_up, has_down) = (i > 0, i + 1 < rows);
    row.map_indexed((up, mid, down), |j, (u, m, d)| {
        // Zeros outside the grid: `get` is the bounds check and the edge in one.
        let left = mid.get(j.wrapping_sub(1)).copied().unwrap_or(0.0);
        let right = mid.get(j + 1).copied().unwrap_or(0.0);
        let vertical = (if has_up { u } else { 0.0 }) + (if has_down { d } else { 0.0 });
        vertical + left + right - 4.0 * m
    });
}
