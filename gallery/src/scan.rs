//! Row-wise scans: one block per row of a row-major matrix.

use oxide_device::prelude::*;

/// Inclusive prefix sum of each row: `out[r, c] = Σ_{k ≤ c} x[r, k]`, PyTorch's
/// `cumsum(x, dim=1)`. The row's `scan` reads it once into registers (each warp a
/// contiguous part, as 128-bit vectors), scans it with shuffles and one block-wide scan
/// of the warps' totals, and writes it once.
#[kernel]
#[launch_bounds(1024)]
#[shapes(x[rows, cols], out[rows, cols])]
#[launch(block_per_row(out, block = 1024))]
pub fn cumsum_rows(x: Array2<f32>, mut out: DisjointArray2<f32>) {
    let Some(row) = out.block_row_mut() else {
        return;
    };
    let xs = x.row_slice(row.row());
    row.scan(xs, 0.0, |a, b| a + b);
}
