//! Row norms: one block per row of a row-major matrix.

use oxide_device::prelude::*;

/// RMS norm of each row: `out[r, c] = x[r, c] / sqrt(mean_c(x[r, c]²) + eps) · weight[c]`
/// (PyTorch's `rms_norm` over the last dimension).
#[kernel]
#[shapes(x[rows, cols], weight[cols], out[rows, cols])]
#[launch(block_per_row(out))]
pub fn rms_norm(x: Array2<f32>, weight: &[f32], eps: f32, mut out: DisjointArray2<f32>) {
    let Some(mut row) = out.block_row_mut() else {
        return;
    };
    let xs = x.row_slice(row.row());
    let first = thread::block_thread_index() as usize;
    let step = thread::block_size() as usize;
    let sum_sq: f32 = (first..xs.len()).step_by(step).map(|c| xs[c] * xs[c]).sum();
    let total = warp::block_reduce_sum_f32(sum_sq);
    let scale = (total / xs.len() as f32 + eps).rsqrt();
    for (c, o) in row.iter_mut() {
        *o = xs[c] * scale * weight[c];
    }
}

/// A transformer layer's residual add fused with its RMS norm: `sum = x + residual`
/// (the next layer's residual stream) and `out = rms_norm(sum) · weight`, one read of
/// each input and one write of each output.
#[kernel]
#[shapes(x[rows, cols], residual[rows, cols], weight[cols], sum[rows, cols], out[rows, cols])]
#[launch(block_per_row(out))]
pub fn add_rms_norm(
    x: Array2<f32>,
    residual: Array2<f32>,
    weight: &[f32],
    eps: f32,
    mut sum: DisjointArray2<f32>,
    mut out: DisjointArray2<f32>,
) {
    let (Some(mut sum_row), Some(mut out_row)) = (sum.block_row_mut(), out.block_row_mut()) else {
        return;
    };
    let r = out_row.row();
    let (xs, rs) = (x.row_slice(r), residual.row_slice(r));
    let mut sum_sq = 0.0f32;
    for (c, s) in sum_row.iter_mut() {
        let h = xs[c] + rs[c];
        *s = h;
        sum_sq += h * h;
    }
    let total = warp::block_reduce_sum_f32(sum_sq);
    let scale = (total / xs.len() as f32 + eps).rsqrt();
    for (c, o) in out_row.iter_mut() {
        *o = (xs[c] + rs[c]) * scale * weight[c];
    }
}
