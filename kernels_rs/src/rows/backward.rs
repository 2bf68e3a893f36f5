//! The row kernels' gradients, for autograd (pyoxide.torch pairs each forward kernel
//! with these by parameter name: `grad_<name>` is the gradient of `<name>`).
//!
//! - [`softmax_rows_backward`]: `grad_x = out · (grad_out − Σ_c out · grad_out)`, per row.
//! - [`layernorm_rows_backward`]: `grad_x` per row, and each row's `mean` and `rstd`
//!   for [`layernorm_rows_backward_affine`], which sums `grad_weight` and `grad_bias`
//!   down the columns (one thread a column, rows in order: deterministic, no atomics).
//!
//! One block per row, each thread a strided share of the columns (a warp reads 128
//! contiguous bytes), the statistics recomputed from `x` (the forward keeps none): a
//! few passes over a row, the later ones mostly from L2. Scalar loads throughout: these
//! are correct and coalesced, not tuned to the roofline as the forward kernels are.

use super::access::{Share, block_allreduce, block_rows, check_block};
use oxide_device::ldst::ReadOnlyLoad;
use oxide_device::prelude::*;

/// A row's threads sum `f(column)` over their columns, then over the block.
#[inline(always)]
fn row_sum(s: Share, partials: &SharedArray<f32, 32>, f: impl Fn(usize) -> f32) -> f32 {
    let mut local = 0.0f32;
    let mut col = s.t as usize;
    while col < s.cols as usize {
        local += f(col);
        col += s.threads as usize;
    }
    block_allreduce(local, s, partials, 0.0, |a, b| a + b)
}

/// Gradient of [`softmax_rows`](crate::softmax_rows): with the forward's `out` (`y`)
/// and the gradient of the loss with respect to it, `grad_x = y · (grad_out − Σ_c y ·
/// grad_out)` for each row.
///
/// Launch: one block per row, 256 threads (an explicit block: 32..=512, a multiple of
/// 32). Two reads of each row (the second mostly from L2), one write.
#[kernel]
#[launch_bounds(512)]
#[launch(block_per_row(grad_x, block = 256))]
#[shapes(out[rows, cols], grad_out[rows, cols], grad_x[rows, cols])]
pub fn softmax_rows_backward(
    out: Array2<f32>,
    grad_out: Array2<f32>,
    mut grad_x: DisjointArray2<f32>,
) {
    static DOTS_EVEN: SharedArray<f32, 32> = SharedArray::UNINIT;
    static DOTS_ODD: SharedArray<f32, 32> = SharedArray::UNINIT;
    let (rows, cols) = (out.rows(), out.cols());
    check_block();
    let (y, dy, dx) = (out.as_ptr(), grad_out.as_ptr(), grad_x.as_mut_ptr());
    let s = Share::of_block(cols as u32);
    for (i, row) in block_rows(rows).enumerate() {
        // SAFETY: row < rows; the launcher checked that all three are rows × cols, C order.
        let (y, dy, dx) = unsafe { (y.add(row * cols), dy.add(row * cols), dx.add(row * cols)) };
        // One reduction a row: alternate the buffers (block_allreduce's rule).
        let dots = if i % 2 == 0 { &DOTS_EVEN } else { &DOTS_ODD };
        // SAFETY: c < cols, in the row.
        let dot = row_sum(s, dots, |c| unsafe {
            f32::load_nc(y.add(c)) * f32::load_nc(dy.add(c))
        });
        let mut col = s.t as usize;
        while col < cols {
            // SAFETY: col < cols; this thread's column of a row only this block writes.
            unsafe {
                let y = f32::load_nc(y.add(col));
                dx.add(col).write(y * (f32::load_nc(dy.add(col)) - dot));
            }
            col += s.threads as usize;
        }
    }
}

/// Gradient of [`layernorm_rows`](crate::layernorm_rows) with respect to `x`, per row,
/// from the forward's inputs and `grad_out`: with `x̂ = (x − mean) · rstd` and `g =
/// grad_out · weight`, `grad_x = rstd · (g − mean_c(g) − x̂ · mean_c(g · x̂))`. Also
/// writes each row's `mean` and `rstd = 1 / sqrt(var + eps)` (biased variance, as the
/// forward), which [`layernorm_rows_backward_affine`] reads.
///
/// Launch: as [`softmax_rows_backward`].
#[kernel]
#[launch_bounds(512)]
#[launch(block_per_row(grad_x, block = 256))]
#[shapes(
    x[rows, cols],
    weight[cols],
    grad_out[rows, cols],
    grad_x[rows, cols],
    mean[rows],
    rstd[rows]
)]
pub fn layernorm_rows_backward(
    x: Array2<f32>,
    weight: Array1<f32>,
    grad_out: Array2<f32>,
    mut grad_x: DisjointArray2<f32>,
    mut mean: DisjointArray1<f32>,
    mut rstd: DisjointArray1<f32>,
    eps: f32,
) {
    static SUMS: SharedArray<f32, 32> = SharedArray::UNINIT;
    static SQUARES: SharedArray<f32, 32> = SharedArray::UNINIT;
    let (rows, cols) = (x.rows(), x.cols());
    check_block();
    let (w, dys, dxs) = (weight.as_ptr(), grad_out.as_ptr(), grad_x.as_mut_ptr());
    let (means, rstds) = (mean.as_mut_ptr(), rstd.as_mut_ptr());
    let s = Share::of_block(cols as u32);
    let n = cols as f32;
    for row in block_rows(rows) {
        // SAFETY: row < rows; the launcher checked the shapes (C order).
        let (x, dy, dx) = unsafe {
            let at = row * cols;
            (x.as_ptr().add(at), dys.add(at), dxs.add(at))
        };
        // SAFETY: every call below passes c < cols: in the row, and in weight (cols long).
        let at = |p: *const f32, c: usize| unsafe { f32::load_nc(p.add(c)) };
        // Four reductions, alternating the buffers (block_allreduce's rule).
        let mu = row_sum(s, &SUMS, |c| at(x, c)) / n;
        let var = row_sum(s, &SQUARES, |c| (at(x, c) - mu) * (at(x, c) - mu)) / n;
        let r = (var + eps).rsqrt();
        let mean_g = row_sum(s, &SUMS, |c| at(dy, c) * at(w, c)) / n;
        let mean_gx = row_sum(s, &SQUARES, |c| at(dy, c) * at(w, c) * (at(x, c) - mu) * r) / n;
        let mut col = s.t as usize;
        while col < cols {
            let xhat = (at(x, col) - mu) * r;
            let g = at(dy, col) * at(w, col);
            // SAFETY: this thread's column of a row only this block writes.
            unsafe { dx.add(col).write(r * (g - mean_g - xhat * mean_gx)) };
            col += s.threads as usize;
        }
        if s.t == 0 {
            // SAFETY: row < rows = the length of mean and rstd; one writer (this block's
            // thread 0) per row.
            unsafe {
                means.add(row).write(mu);
                rstds.add(row).write(r);
            }
        }
    }
}

/// Gradients of [`layernorm_rows`](crate::layernorm_rows) with respect to `weight` and
/// `bias`: `grad_weight[c] = Σ_r grad_out[r, c] · x̂[r, c]`, `grad_bias[c] = Σ_r
/// grad_out[r, c]`, with each row's `mean` and `rstd` from [`layernorm_rows_backward`].
///
/// Launch: one thread a column (blocks of 256), each summing its column over the rows
/// in order (a warp reads 128 contiguous bytes of a row at a time).
#[kernel]
#[launch(elementwise(grad_bias))]
#[shapes(
    x[rows, cols],
    grad_out[rows, cols],
    mean[rows],
    rstd[rows],
    grad_weight[cols],
    grad_bias[cols]
)]
pub fn layernorm_rows_backward_affine(
    x: Array2<f32>,
    grad_out: Array2<f32>,
    mean: Array1<f32>,
    rstd: Array1<f32>,
    mut grad_weight: DisjointArray1<f32>,
    mut grad_bias: DisjointArray1<f32>,
) {
    let (rows, cols) = (x.rows(), x.cols());
    let col = thread::index_1d().get();
    if col >= cols {
        return;
    }
    let (xs, dys) = (x.as_ptr(), grad_out.as_ptr());
    let (mut dw, mut db) = (0.0f32, 0.0f32);
    for row in 0..rows {
        // SAFETY: row < rows, col < cols (C order, checked by the launcher).
        let (x, dy) = unsafe {
            let at = row * cols + col;
            (f32::load_nc(xs.add(at)), f32::load_nc(dys.add(at)))
        };
        dw += dy * (x - mean[row]) * rstd[row];
        db += dy;
    }
    // SAFETY: col < cols = their length; this thread's column alone.
    unsafe {
        grad_weight.as_mut_ptr().add(col).write(dw);
        grad_bias.as_mut_ptr().add(col).write(db);
    }
}
