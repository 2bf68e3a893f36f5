//! Column (axis-0) reductions of a row-major matrix.

use oxide_device::prelude::*;

/// The sum of each column: `out[c] = Σ_r x[r, c]`, PyTorch's `sum(x, dim=0)`. One thread
/// per column walks down it (neighbouring threads read neighbouring columns, so each
/// row's read is coalesced).
#[kernel]
#[shapes(x[rows, cols], out[cols])]
#[launch(elementwise(out))]
pub fn col_sum(x: Array2<f32>, mut out: DisjointSlice<f32>) {
    let idx = thread::index_1d();
    let c = idx.get();
    if let Some(o) = out.get_mut(idx) {
        *o = (0..x.rows()).map(|r| x[[r, c]]).sum();
    }
}
