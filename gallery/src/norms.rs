//! Row norms: one block per row of a row-major matrix, the row read once into
//! registers (`cache`), one block reduction, the output written from the registers.

use core::cell::Cell;

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
/// `x`'s row is held in registers; the residual row is read as it is used, twice (the
/// second time mostly from L2): holding both rows needs more than the 64 registers a
/// thread of a 1024-thread block has.
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
    let xs = x.row_slice(r).block_share().cache::<8>();
    let rs = residual.row_slice(r);
    // Σ (x + r)² while the sum row is written: a row's `map` reads a cached row from
    // its registers, a fold does not.
    let sum_sq = Cell::new(0.0f32);
    sum_row.map((&xs, rs), |(a, b)| {
        let h = a + b;
        sum_sq.set(sum_sq.get() + h * h);
        h
    });
    let scale = (block::sum(sum_sq.get()) / out_row.cols() as f32 + eps).rsqrt();
    out_row.map((&xs, rs, weight), |(a, b, w)| (a + b) * scale * w);
}
