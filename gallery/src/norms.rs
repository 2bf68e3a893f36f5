//! Row norms: one block per row of a row-major matrix, the row read once into
//! registers (`cache`), one block reduction, the output written from the registers.

use oxide_device::prelude::*;

/// RMS norm of each row: `out[r, c] = x[r, c] / sqrt(mean_c(x[r, c]²) + eps) · weight[c]`
/// (PyTorch's `rms_norm` over the last dimension).
///
/// A plain call gives each row a block of one warp per 1024 columns (128 to 1024
/// threads), so a thread holds 8 vectors of 4 (`cache::<8>`) of rows up to 32768 columns.
#[kernel]
#[launch_bounds(1024)]
#[shapes(x[rows, cols], weight[cols], out[rows, cols])]
#[launch(block_per_row(out, block = 1024))]
pub fn rms_norm(x: Array2<f32>, weight: &[f32], eps: f32, mut out: DisjointArray2<f32>) {
    let Some(mut row) = out.block_row_mut() else {
        return;
    };
    let xs = x.row_slice(row.row()).block_share().cache::<8>();
    let sum_sq = block::sum(xs.map_reduce(0.0, |v| v * v, |a, b| a + b));
    let scale = (sum_sq / row.cols() as f32 + eps).rsqrt();
    row.map((&xs, weight), |(v, w)| v * scale * w);
}

/// A transformer layer's residual add fused with its RMS norm: `sum = x + residual`
/// (the next layer's residual stream) and `out = rms_norm(sum) · weight`, one read of
/// each input from memory and one write of each output.
///
/// The sum row is computed once into registers (`cache_map`: 8 vectors a thread, as
/// `rms_norm` holds its row), then written, reduced and normalised from there.
#[kernel]
#[launch_bounds(1024)]
#[shapes(x[rows, cols], residual[rows, cols], weight[cols], sum[rows, cols], out[rows, cols])]
#[launch(block_per_row(out, block = 1024))]
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
    let inputs = row::block_share((x.row_slice(r), residual.row_slice(r)));
    let hs = inputs.cache_map::<8, f32>(|(a, b)| a + b);
    sum_row.map(&hs, |h| h);
    let sum_sq = block::sum(hs.map_reduce(0.0, |h| h * h, |a, b| a + b));
    let scale = (sum_sq / out_row.cols() as f32 + eps).rsqrt();
    out_row.map((&hs, weight), |(h, w)| h * scale * w);
}
