//! Per-row reductions and scans: one block per row of a row-major matrix.

use oxide_device::prelude::*;

/// The index of each row's largest element (`np.argmax`: the first of the largest, a
/// NaN above every number): `out[r] = argmax_c x[r, c]`, PyTorch's `argmax(x, dim=1)`.
///
/// One block per row of `x` with the row kernels' block (a warp per 4 KiB of row, so
/// each thread folds 32 elements: the per-row setup and the block reduction are spread
/// over as many elements as `cache::<8>` holds).
#[kernel]
#[launch_bounds(1024)]
#[shapes(x[rows, cols], out[rows])]
#[launch(block_per_row(x, block = 1024))]
pub fn argmax_rows(x: Array2<f32>, mut out: DisjointSlice<u32>) {
    let mine = x.row_slice(thread::block_index()).block_share().arg_max();
    let (_, col) = block::reduce(mine, combine::arg_max);
    if let Some(o) = thread::block_leader_index().and_then(|b| out.get_mut(b)) {
        *o = col;
    }
}

/// `(m, s)` pairs, `s = Σ exp(x − m)` over some of a row: the log-sum-exp of the row
/// is `m + ln s` once every part is combined.
#[inline(always)]
fn log_sum_exp(a: (f32, f32), b: (f32, f32)) -> (f32, f32) {
    let m = a.0.max(b.0);
    if m == f32::NEG_INFINITY {
        return (m, 0.0);
    }
    (m, a.1 * (a.0 - m).exp() + b.1 * (b.0 - m).exp())
}

/// This thread's `(m, s)` of its cached share of a row.
#[inline(always)]
fn my_log_sum_exp<const S: usize>(xs: &row::Cached<'_, f32, S>) -> (f32, f32) {
    let m = xs.map_reduce(f32::NEG_INFINITY, |v| v, f32::max);
    if m == f32::NEG_INFINITY {
        return (m, 0.0); // no elements (or all -inf): nothing to add
    }
    (m, xs.map_reduce(0.0, |v| (v - m).exp(), |a, b| a + b))
}

/// Cross-entropy loss of each row of logits against its class:
/// `loss[r] = log Σ_c exp(logits[r, c]) − logits[r, target[r]]`, PyTorch's
/// `cross_entropy(logits, target, reduction="none")`. A target outside `0..cols` traps.
///
/// One block per row of `logits` with the row kernels' block (a warp per 4 KiB of row):
/// each thread's `cache::<8>` is full, so no thread loads or exponentiates slots past
/// its share of the row.
#[kernel]
#[launch_bounds(1024)]
#[shapes(logits[rows, cols], target[rows], loss[rows])]
#[launch(block_per_row(logits, block = 1024))]
pub fn cross_entropy_rows(logits: Array2<f32>, target: &[i64], mut loss: DisjointSlice<f32>) {
    let r = thread::block_index();
    let xs = logits.row_slice(r);
    let (m, s) = block::reduce(my_log_sum_exp(&xs.block_share().cache::<8>()), log_sum_exp);
    if let Some(l) = thread::block_leader_index().and_then(|i| loss.get_mut(i)) {
        *l = m + s.ln() - xs[target[r] as usize];
    }
}

/// Log-softmax of each row: `out[r, c] = x[r, c] − log Σ_c exp(x[r, c])`, PyTorch's
/// `log_softmax(x, dim=1)`. The row read once into registers, one block reduction of
/// `(max, Σ exp(x − max))` pairs, the output written from the registers.
#[kernel]
#[launch_bounds(1024)]
#[shapes(x[rows, cols], out[rows, cols])]
#[launch(block_per_row(out, block = 1024))]
pub fn log_softmax_rows(x: Array2<f32>, mut out: DisjointArray2<f32>) {
    let Some(mut row) = out.block_row_mut() else {
        return;
    };
    let xs = x.row_slice(row.row()).block_share().cache::<8>();
    let (m, s) = block::reduce(my_log_sum_exp(&xs), log_sum_exp);
    let shift = m + s.ln();
    row.map(&xs, |v| v - shift);
}
