//! Reductions and scans over a whole array or over each block.

use oxide_device::prelude::*;

/// `out[0] = Σ x`, in one launch: no second pass, no zeroing first.
///
/// Each thread sums its grid-stride share of `x` (128-bit loads, four in flight per
/// step), each block reduces its threads' sums (warp shuffles, then shared memory), and
/// each block's first thread adds the block's total to a device-wide accumulator and
/// takes a ticket; the block that takes the last ticket reads the total into `out[0]`
/// and leaves the accumulator and the counter at zero for the next launch. A plain call
/// launches 8 blocks of 256 per multiprocessor (one wave that fills the device; fewer
/// blocks for small `x`): on an H200 this reads 2^28 floats within 0.5 % of the best
/// of a sweep from 2 to 128 blocks per multiprocessor and 256 to 1024 threads per
/// block, and above cupy.sum and torch.sum (docs/performance.md). Block size: a
/// multiple of 32 (its block reduction shuffles over whole warps; the launcher refuses
/// other blocks).
///
/// The accumulator is one per loaded module and device: launches of this kernel that
/// run at the same time (on two streams) would mix their sums. Launches on one stream
/// never overlap, nor do launches of one library on the emulator (docs/guide/emulator.md).
#[kernel]
#[launch_bounds(1024)]
#[launch(grid_stride(x, per_thread = 64, block = 256, blocks_per_sm = 8))]
#[tune(block = [128, 256, 512, 1024], per_thread = [16, 64, 256], blocks_per_sm = [4, 8, 16])]
pub fn reduce_sum_f32(x: &[f32], out: AtomicSlice<f32>) {
    static TOTAL: atomic::DeviceAtomicF32 = atomic::DeviceAtomicF32::new(0.0);
    static BLOCKS_DONE: atomic::DeviceAtomicU32 = atomic::DeviceAtomicU32::new(0);
    let block_sum = warp::block_reduce_sum_f32(thread_sum(x));
    if thread::block_thread_index() != 0 {
        return;
    }
    TOTAL.fetch_add(block_sum, Ordering::Relaxed);
    let blocks = thread::gridDim_x() * thread::gridDim_y() * thread::gridDim_z();
    // Release: this block's addition happens before its ticket. Acquire: the last
    // ticket's holder sees every block's addition (each ticket is released in turn).
    if BLOCKS_DONE.fetch_add(1, Ordering::AcqRel) + 1 == blocks {
        let total = TOTAL.swap(0.0, Ordering::Relaxed);
        BLOCKS_DONE.store(0, Ordering::Relaxed);
        if let Some(o) = out.first() {
            o.store(total, Ordering::Relaxed);
        }
    }
}

/// Vectors each thread loads before it adds any of them (64 bytes in flight per thread).
const STEP: usize = 4;

/// This thread's share of `Σ x` in a 1-D grid-stride loop: the 16-byte-aligned middle of
/// `x` as vectors of four, and the unaligned ends one element at a time.
///
/// The main loop runs over whole steps of `STEP` vectors per thread (the number of whole
/// steps is computed once), so its loads need no bounds check: with a check between two
/// loads ptxas issues the second only after the first has returned (one or two loads in
/// flight, SASS of the earlier version), without one it issues all four back to back.
/// The part of the middle after the last whole step (fewer than `STEP` vectors per
/// thread) is a checked grid-stride loop.
#[inline(always)]
fn thread_sum(x: &[f32]) -> f32 {
    let (head, body, tail) = x.as_vectors::<4>();
    let add =
        |acc: [f32; 4], v: [f32; 4]| [acc[0] + v[0], acc[1] + v[1], acc[2] + v[2], acc[3] + v[3]];
    let stride = thread::grid_stride();
    let step = STEP * stride;
    let mut acc = [0.0f32; 4];
    let mut c = thread::index_1d().get();
    for _ in 0..body.len() / step {
        let mut v = [[0.0f32; 4]; STEP];
        for (k, v) in v.iter_mut().enumerate() {
            // SAFETY: c = s * step + t for this thread's t < stride and the whole step
            // s < body.len() / step, so c + k * stride < (s + 1) * step <= body.len().
            *v = unsafe { body.get_unchecked(c + k * stride) }.lanes();
        }
        for v in v {
            acc = add(acc, v);
        }
        c += step;
    }
    while c < body.len() {
        acc = add(acc, body[c].lanes());
        c += stride;
    }
    let mut sum = (acc[0] + acc[1]) + (acc[2] + acc[3]);
    for i in thread::grid_stride_range(head.len()) {
        sum += head[i];
    }
    for i in thread::grid_stride_range(tail.len()) {
        sum += tail[i];
    }
    sum
}

/// One partial sum of `x` per block into `partial` (one element per block: a plain call
/// launches `partial.len()` blocks, and a grid of another size is refused), with no
/// atomics: a grid-stride sum per thread, a block reduction, and the block's first
/// thread writing through its block witness. Block size: a multiple of 32 (refused
/// otherwise, before launch); the grid is 1-D (a 2-D one is refused: the grid-stride
/// share of `x` is counted along x).
#[kernel]
#[launch_bounds(1024)]
#[launch(block_per_element(partial, block = 256))]
pub fn reduce_blocks_f32(x: &[f32], mut partial: DisjointSlice<f32>) {
    let block_sum = warp::block_reduce_sum_f32(thread_sum(x));
    if let Some(p) = thread::block_leader_index().and_then(|b| partial.get_mut(b)) {
        *p = block_sum;
    }
}

/// Inclusive prefix sum (wrapping) of each block's `blockDim.x` elements of `x`: a
/// segmented scan, the building block of a full scan. The block size is the segment
/// length, so a call must give it (`.launch(x, out, block=256, shared_mem=32)`); the
/// grid follows from `out`'s length. Warps scan with `shfl.sync.up`;
/// the warps' totals go through dynamic shared memory (launch with
/// `4 * blockDim.x / 32` bytes of it), where warp 0 scans them in turn. Block size: a
/// multiple of 32 (its scans shuffle over whole warps: the launcher refuses other
/// blocks; the kernel also traps with a message on one).
#[kernel]
#[launch_bounds(1024)]
#[launch(segments(out))]
pub fn scan_blocks_u32(x: &[u32], mut out: DisjointSlice<u32>) {
    gpu_assert!(thread::blockDim_x().is_multiple_of(warp::WARP_SIZE));
    // One u32 per warp of dynamic shared memory: launch with shared_mem >= 4 * warps.
    let warps = (thread::blockDim_x() / warp::WARP_SIZE) as usize;
    gpu_assert!(DynamicSharedArray::<u32>::len() >= warps);
    let totals = DynamicSharedArray::<u32>::get();
    let idx = thread::index_1d();
    let value = x.get(idx.get()).copied().unwrap_or(0);
    let in_warp = warp::inclusive_scan_sum_u32(value);
    let (lane, warp_id) = (warp::lane_id(), warp::warp_id() as usize);
    if lane == warp::WARP_SIZE - 1 {
        // SAFETY: one writer per warp slot, inside the launch's dynamic shared memory
        // (4 bytes per warp); read after the barrier.
        unsafe { totals.add(warp_id).write(in_warp) };
    }
    thread::sync_threads();
    if warp_id == 0 {
        // SAFETY: slots below `warps` were written before the barrier.
        let total = if (lane as usize) < warps {
            unsafe { totals.add(lane as usize).read() }
        } else {
            0
        };
        let scanned = warp::inclusive_scan_sum_u32(total);
        if (lane as usize) < warps {
            // SAFETY: each lane rewrites its own slot; other warps wait at the barrier.
            unsafe { totals.add(lane as usize).write(scanned) };
        }
    }
    thread::sync_threads();
    // SAFETY: written by warp 0 before the barrier.
    let before = if warp_id > 0 {
        unsafe { totals.add(warp_id - 1).read() }
    } else {
        0
    };
    if let Some(o) = out.get_mut(idx) {
        *o = in_warp.wrapping_add(before);
    }
}
