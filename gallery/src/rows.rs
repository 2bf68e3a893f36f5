//! Per-row reductions and scans: one block per row of a row-major matrix.

use oxide_device::prelude::*;

/// The flat index of this thread's block (x fastest), the same in every thread of it.
#[inline(always)]
fn block_index() -> usize {
    let (gx, gy) = (thread::gridDim_x() as usize, thread::gridDim_y() as usize);
    thread::blockIdx_x() as usize
        + gx * (thread::blockIdx_y() as usize + gy * thread::blockIdx_z() as usize)
}

/// This thread's columns of a row: `t, t + blockDim, …` for thread `t` of the block.
#[inline(always)]
fn my_columns(cols: usize) -> core::iter::StepBy<core::ops::Range<usize>> {
    let first = thread::block_thread_index() as usize;
    (first..cols).step_by(thread::block_size() as usize)
}

/// The index of each row's largest element (the first one, when several are equal):
/// `out[r] = argmax_c x[r, c]`, PyTorch's `argmax(x, dim=1)`.
#[kernel]
#[shapes(x[rows, cols], out[rows])]
#[launch(block_per_element(out))]
pub fn argmax_rows(x: Array2<f32>, mut out: DisjointSlice<u32>) {
    static FIRST: SharedArray<u32, 32> = SharedArray::UNINIT;
    let xs = x.row_slice(block_index());
    // This thread's best (value, column), the first of its columns on ties.
    let mut best = (f32::NEG_INFINITY, u32::MAX);
    for c in my_columns(xs.len()) {
        if xs[c] > best.0 || best.1 == u32::MAX {
            best = (xs[c], c as u32);
        }
    }
    let max = warp::block_reduce_max_f32(best.0);
    let mine = if best.0 == max { best.1 } else { u32::MAX };
    let warp_first = warp::reduce(mine, u32::min);
    let (lane, w) = (warp::lane_id() as usize, warp::warp_id() as usize);
    if lane == 0 {
        // SAFETY: one writer per slot (lane 0 of each warp); read after the barrier.
        unsafe { FIRST.write(w, warp_first) };
    }
    thread::sync_threads();
    if let Some(o) = thread::block_leader_index().and_then(|i| out.get_mut(i)) {
        let warps = thread::block_size().div_ceil(32) as usize;
        // SAFETY: written before the barrier.
        *o = (0..warps).map(|w| unsafe { FIRST.read(w) }).min().unwrap_or(0);
    }
}

/// Cross-entropy loss of each row of logits against its class:
/// `loss[r] = log Σ_c exp(logits[r, c]) − logits[r, target[r]]`, PyTorch's
/// `cross_entropy(logits, target, reduction="none")`. A target outside `0..cols` traps.
#[kernel]
#[shapes(logits[rows, cols], target[rows], loss[rows])]
#[launch(block_per_element(loss))]
pub fn cross_entropy_rows(logits: Array2<f32>, target: &[i64], mut loss: DisjointSlice<f32>) {
    let r = block_index();
    let xs = logits.row_slice(r);
    let local_max = my_columns(xs.len()).map(|c| xs[c]).fold(f32::NEG_INFINITY, f32::max);
    let max = warp::block_reduce_max_f32(local_max);
    let local_sum: f32 = my_columns(xs.len()).map(|c| (xs[c] - max).exp()).sum();
    let sum = warp::block_reduce_sum_f32(local_sum);
    if let Some(l) = thread::block_leader_index().and_then(|i| loss.get_mut(i)) {
        *l = max + sum.ln() - xs[target[r] as usize];
    }
}

/// Log-softmax of each row: `out[r, c] = x[r, c] − max_r − log Σ_c exp(x[r, c] − max_r)`,
/// PyTorch's `log_softmax(x, dim=1)`.
#[kernel]
#[shapes(x[rows, cols], out[rows, cols])]
#[launch(block_per_row(out))]
pub fn log_softmax_rows(x: Array2<f32>, mut out: DisjointArray2<f32>) {
    let Some(mut row) = out.block_row_mut() else {
        return;
    };
    let xs = x.row_slice(row.row());
    let local_max = my_columns(xs.len()).map(|c| xs[c]).fold(f32::NEG_INFINITY, f32::max);
    let max = warp::block_reduce_max_f32(local_max);
    let local_sum: f32 = my_columns(xs.len()).map(|c| (xs[c] - max).exp()).sum();
    let shift = max + warp::block_reduce_sum_f32(local_sum).ln();
    for (c, o) in row.iter_mut() {
        *o = xs[c] - shift;
    }
}

/// Inclusive prefix sum of each row: `out[r, c] = Σ_{k ≤ c} x[r, k]`, PyTorch's
/// `cumsum(x, dim=1)`. The block walks the row a block's width at a time: a warp scan,
/// the warps' totals through shared memory, and the running total of the tiles before.
/// The block size must be a multiple of 32.
#[kernel]
#[shapes(x[rows, cols], out[rows, cols])]
#[launch(block_per_row(out))]
pub fn cumsum_rows(x: Array2<f32>, mut out: DisjointArray2<f32>) {
    static WARP_TOTALS: SharedArray<f32, 32> = SharedArray::UNINIT;
    let Some(mut row) = out.block_row_mut() else {
        return;
    };
    let xs = x.row_slice(row.row());
    let (t, width) = (thread::block_thread_index() as usize, thread::block_size() as usize);
    let (lane, w, warps) = (warp::lane_id(), warp::warp_id() as usize, width.div_ceil(32));
    let mut mine = row.iter_mut();
    let mut carry = 0.0f32;
    // Every thread takes every tile: the barriers inside need the whole block.
    for tile in 0..xs.len().div_ceil(width) {
        let c = tile * width + t;
        let v = if c < xs.len() { xs[c] } else { 0.0 };
        let within_warp = warp::inclusive_scan_sum_f32(v);
        if lane == 31 {
            // SAFETY: one writer per slot; read after the barrier.
            unsafe { WARP_TOTALS.write(w, within_warp) };
        }
        thread::sync_threads();
        // SAFETY: written before the barrier, overwritten only after the next one.
        let totals = |range: core::ops::Range<usize>| -> f32 {
            range.map(|k| unsafe { WARP_TOTALS.read(k) }).sum()
        };
        let before = totals(0..w);
        let tile_total = totals(0..warps);
        thread::sync_threads();
        if let Some((_, o)) = mine.next() {
            *o = carry + before + within_warp;
        }
        carry += tile_total;
    }
}
