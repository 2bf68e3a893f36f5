//! Histograms: counting with atomics, privatised per block in shared memory.

use oxide_device::prelude::*;

/// Bins that [`histogram`] can privatise in shared memory.
const SHARED_BINS: usize = 1024;

/// `bins[v] += 1` for every `v` in `x` below `bins.len()` (zero `bins` first); values
/// past the last bin are ignored.
///
/// Each block counts into a private histogram in shared memory with block-scope atomics
/// (cheap, contended only within the block), then adds its nonzero counts to `bins`
/// with device-scope atomics; `x` is read as 128-bit vectors in a grid-stride loop, and a
/// plain call launches a few blocks per multiprocessor, so the per-block flush stays
/// small. More than 1024 bins are counted in global memory directly (as
/// [`histogram_global`]).
#[kernel]
#[launch_bounds(1024)]
#[launch(grid_stride(x, per_thread = vector, block = 512, blocks_per_sm = 4))]
pub fn histogram(x: &[u32], bins: AtomicSlice<u32>) {
    static LOCAL: SharedArray<u32, SHARED_BINS> = SharedArray::UNINIT;
    let (head, body, tail) = x.as_vectors::<4>();
    if bins.len() > SHARED_BINS {
        let count = |v: u32| {
            if let Some(bin) = bins.get(v as usize) {
                bin.fetch_add(1, Ordering::Relaxed);
            }
        };
        for_each_value(head, body, tail, count);
        return;
    }
    let (t, step) = (
        thread::block_thread_index() as usize,
        thread::block_size() as usize,
    );
    for i in (t..bins.len()).step_by(step) {
        // SAFETY: each thread zeroes its own slots; the barrier orders them before use.
        unsafe { LOCAL.write(i, 0) };
    }
    thread::sync_threads();
    // SAFETY: the slots in use were zeroed before the barrier; until the next barrier
    // every access is atomic.
    let local = unsafe { &LOCAL.as_atomics()[..bins.len()] };
    for_each_value(head, body, tail, |v| {
        if let Some(bin) = local.get(v as usize) {
            bin.fetch_add(1, Ordering::Relaxed);
        }
    });
    thread::sync_threads();
    for i in (t..bins.len()).step_by(step) {
        let count = local[i].load(Ordering::Relaxed);
        if count != 0 {
            bins[i].fetch_add(count, Ordering::Relaxed);
        }
    }
}

/// Calls `f` on this thread's share of the values of a slice split by `as_vectors`.
#[inline(always)]
fn for_each_value(head: &[u32], body: &[Vector<u32, 4>], tail: &[u32], mut f: impl FnMut(u32)) {
    for i in thread::grid_stride_range(head.len()) {
        f(head[i]);
    }
    for c in thread::grid_stride_range(body.len()) {
        let [a, b, c, d] = body[c].lanes();
        f(a);
        f(b);
        f(c);
        f(d);
    }
    for i in thread::grid_stride_range(tail.len()) {
        f(tail[i]);
    }
}

/// [`histogram`] without privatisation: every value is one device-scope atomic on
/// `bins` in global memory (the simple version, for comparison and for bin counts
/// too large for shared memory).
#[kernel]
#[launch(grid_stride(x, block = 256, blocks_per_sm = 8))]
pub fn histogram_global(x: &[u32], bins: AtomicSlice<u32>) {
    for i in thread::grid_stride_range(x.len()) {
        if let Some(bin) = bins.get(x[i] as usize) {
            bin.fetch_add(1, Ordering::Relaxed);
        }
    }
}
