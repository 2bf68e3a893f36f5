//! Whole-array reductions.

use oxide_device::prelude::*;

/// The dot product, added to `out[0]` (start it at zero): `out[0] += Σ x[i]·y[i]`,
/// PyTorch's `dot(x, y)`. Each thread sums its grid-stride share, each block reduces
/// its threads' sums and adds the total atomically.
#[kernel]
#[shapes(x[n], y[n], out[1])]
#[launch(grid_stride(x, per_thread = 16, blocks_per_sm = 8))]
pub fn dot(x: &[f32], y: &[f32], out: AtomicSlice<f32>) {
    let mut acc = 0.0f32;
    for i in thread::grid_stride_range(x.len()) {
        acc += x[i] * y[i];
    }
    let total = warp::block_reduce_sum_f32(acc);
    if thread::block_thread_index() == 0 {
        out[0].fetch_add(total, Ordering::Relaxed);
    }
}
