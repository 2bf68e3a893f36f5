//! Histograms: counting with atomics, in global or in shared memory.

use oxide_device::prelude::*;

/// `bins[v] += 1` for every `v` in `x` below `bins.len()` (zero `bins` first); values
/// past the last bin are ignored. Grid-stride, device-scope atomics.
#[kernel]
pub fn histogram(x: &[u32], bins: AtomicSlice<u32>) {
    let start = thread::index_1d().get();
    for &v in x.iter().skip(start).step_by(thread::grid_stride()) {
        if let Some(bin) = bins.get(v as usize) {
            bin.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// Bins that [`histogram_shared`] can privatise in shared memory.
const SHARED_BINS: usize = 1024;

/// [`histogram`] with a private histogram per block in shared memory: threads count
/// with block-scope atomics (cheap, contended only within the block), then each block
/// adds its nonzero counts to `bins` with device-scope atomics. For up to 1024 bins;
/// more fall back to counting in global memory directly.
#[kernel]
#[launch_bounds(1024)]
pub fn histogram_shared(x: &[u32], bins: AtomicSlice<u32>) {
    static LOCAL: SharedArray<u32, SHARED_BINS> = SharedArray::UNINIT;
    let start = thread::index_1d().get();
    let values = || x.iter().skip(start).step_by(thread::grid_stride());
    if bins.len() > SHARED_BINS {
        for &v in values() {
            if let Some(bin) = bins.get(v as usize) {
                bin.fetch_add(1, Ordering::Relaxed);
            }
        }
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
    for &v in values() {
        if let Some(bin) = local.get(v as usize) {
            bin.fetch_add(1, Ordering::Relaxed);
        }
    }
    thread::sync_threads();
    for i in (t..bins.len()).step_by(step) {
        let count = local[i].load(Ordering::Relaxed);
        if count != 0 {
            bins[i].fetch_add(count, Ordering::Relaxed);
        }
    }
}
