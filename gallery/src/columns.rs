//! Column (axis-0) reductions of a row-major matrix.

use oxide_device::prelude::*;

/// The sum of each column: `out[c] = Σ_r x[r, c]`, PyTorch's `sum(x, dim=0)`. The
/// `columns` policy gives each block strips of columns to walk down, as 128-bit
/// vectors (`DisjointSlice::reduce_columns`).
#[kernel]
#[shapes(x[rows, cols], out[cols])]
#[launch(columns(out))]
pub fn col_sum(x: Array2<f32>, mut out: DisjointSlice<f32>) {
    out.reduce_columns(x, 0.0, |a, b| a + b, |s| s);
}
