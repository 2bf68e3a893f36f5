//! Row-wise scans: one block per row of a row-major matrix.
//!
//! The block walks its row in the layout every row operation uses (`oxide_device::row`):
//! the elements before the output row's first 16-byte boundary (the head, one a
//! thread), then steps of one 4-element vector a thread (thread `t` has vector
//! `t + k·blockDim` in step `k`: the step is contiguous, in thread order), then the
//! tail. Each part is scanned across the block and carries its total to the next, and
//! every thread writes its elements through `iter_mut`, which yields them in that order.

use oxide_device::prelude::*;

/// Inclusive prefix sum of each row: `out[r, c] = Σ_{k ≤ c} x[r, k]`, PyTorch's
/// `cumsum(x, dim=1)`.
#[kernel]
#[launch_bounds(1024)]
#[shapes(x[rows, cols], out[rows, cols])]
#[launch(block_per_row(out, block = 1024))]
pub fn cumsum_rows(x: Array2<f32>, mut out: DisjointArray2<f32>) {
    static WARP_TOTALS: SharedArray<f32, 32> = SharedArray::UNINIT;
    let cols = out.cols();
    let base = out.as_mut_ptr() as usize;
    let Some(mut row) = out.block_row_mut() else {
        return;
    };
    let r = row.row();
    let xs = x.row_slice(r);
    // The layout of this output row: `head` elements up to its first 16-byte boundary.
    let head = ((4 - (base / 4 + r * cols) % 4) % 4).min(cols);
    let vectors = (cols - head) / 4;
    let tail = cols - head - 4 * vectors;
    let (t, threads) = (
        thread::block_thread_index() as usize,
        thread::block_size() as usize,
    );
    let (_, x_vectors, _) = xs.as_vectors::<4>();
    let x_in_phase = xs.as_ptr() as usize % 16 == (base + 4 * r * cols) % 16;
    let mut mine = row.iter_mut();
    let mut put = |col: usize, value: f32| {
        let (c, o) = mine
            .next()
            .expect("the row layout gives this thread this column");
        assert!(c == col, "the row layout gives this thread this column");
        *o = value;
    };
    let mut carry = 0.0f32;
    // The head: one element each for threads 0..head.
    let v = if t < head { xs[t] } else { 0.0 };
    let (before, total) = block_scan(v, &WARP_TOTALS);
    if t < head {
        put(t, carry + before + v);
    }
    carry += total;
    // Whole vectors, blockDim of them a step; as 128-bit loads when x's row has the
    // output row's offset from a 16-byte boundary (x's head is then `head` long too).
    let steps = Steps {
        head,
        vectors,
        t,
        threads,
    };
    carry = if x_in_phase {
        steps.scan(|v| x_vectors[v].lanes(), &mut put, carry, &WARP_TOTALS)
    } else {
        let at = |v: usize| head + 4 * v;
        let fetch = |v: usize| [xs[at(v)], xs[at(v) + 1], xs[at(v) + 2], xs[at(v) + 3]];
        steps.scan(fetch, &mut put, carry, &WARP_TOTALS)
    };
    // The tail: one element each for threads 0..tail.
    let col = head + 4 * vectors + t;
    let v = if t < tail { xs[col] } else { 0.0 };
    let (before, _) = block_scan(v, &WARP_TOTALS);
    if t < tail {
        put(col, carry + before + v);
    }
}

/// The whole vectors of a row, `threads` of them a step (thread `t` has vector
/// `t + k·threads` in step `k`).
#[derive(Clone, Copy)]
struct Steps {
    head: usize,
    vectors: usize,
    t: usize,
    threads: usize,
}

impl Steps {
    /// Scans the vectors after `carry`, writing each element through `put`; returns the
    /// carry past the last. Each vector is loaded two steps before its scan (the loads
    /// wait on no barrier; past the row's end the last vector again, unused).
    #[inline(always)]
    fn scan(
        &self,
        fetch: impl Fn(usize) -> [f32; 4],
        put: &mut impl FnMut(usize, f32),
        mut carry: f32,
        warp_totals: &SharedArray<f32, 32>,
    ) -> f32 {
        let Steps {
            head,
            vectors,
            t,
            threads,
        } = *self;
        let steps = vectors.div_ceil(threads);
        if steps == 0 {
            return carry;
        }
        let fetch_step = |step: usize| fetch((step * threads + t).min(vectors - 1));
        let (mut next, mut after) = (fetch_step(0), fetch_step(1));
        for step in 0..steps {
            let vector = step * threads + t;
            let v = if vector < vectors { next } else { [0.0; 4] };
            (next, after) = (after, fetch_step(step + 2));
            let within = [
                v[0],
                v[0] + v[1],
                v[0] + v[1] + v[2],
                v[0] + v[1] + v[2] + v[3],
            ];
            let (before, total) = block_scan(within[3], warp_totals);
            if vector < vectors {
                for (k, w) in within.iter().enumerate() {
                    put(head + 4 * vector + k, carry + before + w);
                }
            }
            carry += total;
        }
        carry
    }
}

/// `(Σ of the values of the threads before this one, Σ of the whole block)`: a warp
/// scan, the warps' totals through shared memory. Every thread of the block calls it.
#[inline(always)]
fn block_scan(value: f32, warp_totals: &SharedArray<f32, 32>) -> (f32, f32) {
    let (lane, w) = (warp::lane_id(), warp::warp_id() as usize);
    let warps = thread::block_size().div_ceil(32) as usize;
    let inclusive = warp::inclusive_scan(value, |a, b| a + b);
    // A barrier before the write: the previous call's readers are done with the slots.
    thread::sync_threads();
    if lane == 31 {
        // SAFETY: one writer per slot (the warp's last lane: blocks are whole warps, which
        // the launcher enforces for kernels that shuffle); read after the barrier.
        unsafe { warp_totals.write(w, inclusive) };
    }
    thread::sync_threads();
    // SAFETY: slots below `warps` were written before the barrier.
    let total_of = |k: usize| unsafe { warp_totals.read(k) };
    let earlier: f32 = (0..w).map(total_of).sum();
    let total: f32 = earlier + (w..warps).map(total_of).sum::<f32>();
    (earlier + inclusive - value, total)
}
