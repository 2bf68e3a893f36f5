//! Whole-array reductions.

use oxide_device::prelude::*;

/// The dot product, added to `out[0]` (start it at zero): `out[0] += Σ x[i]·y[i]`,
/// PyTorch's `dot(x, y)`. Each thread folds its grid-stride share (128-bit loads, four
/// in flight), each block sums its threads' and adds the total atomically.
#[kernel]
#[shapes(x[n], y[n], out[1])]
#[launch(grid_stride(x))]
pub fn dot(x: &[f32], y: &[f32], out: AtomicSlice<f32>) {
    let mine = vector::grid_fold((x, y), 0.0, |acc, (a, b)| acc + a * b);
    let total = block::sum(mine);
    if thread::block_thread_index() == 0 {
        out[0].fetch_add(total, Ordering::Relaxed);
    }
}
