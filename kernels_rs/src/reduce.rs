//! Reductions and scans over a whole array or over each block.

use oxide_device::prelude::*;

/// `out[0] = Σ x`, in one launch: no second pass, no zeroing first.
///
/// Each thread sums its grid-stride share of `x` (128-bit loads, four in flight per
/// step), each block reduces its threads' sums (warp shuffles, then shared memory), and
/// each block's first thread adds the block's total to a device-wide accumulator and
/// takes a ticket; the block that takes the last ticket reads the total into `out[0]`
/// and leaves the accumulator and the counter at zero for the next launch. A plain call
/// launches 64 blocks of 256 per multiprocessor (fewer for small `x`): on an H200 the
/// best of a sweep from 1 to 64 blocks per multiprocessor and 256 to 1024 threads per
/// block (docs/performance.md). Block size: a multiple of 32.
///
/// The accumulator is one per loaded module and device: launches of this kernel that
/// run at the same time (on two streams, or from two host threads on the emulator)
/// would mix their sums. Launches on one stream never overlap.
#[kernel]
#[launch_bounds(1024)]
#[launch(grid_stride(x, per_thread = 64, block = 256, blocks_per_sm = 64))]
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

/// This thread's share of `Σ x` in a 1-D grid-stride loop: the 16-byte-aligned middle of
/// `x` as vectors of four, four vectors per step (independent loads keep 64 bytes in
/// flight per thread), and the unaligned ends one element at a time.
#[inline(always)]
fn thread_sum(x: &[f32]) -> f32 {
    let (head, body, tail) = x.as_vectors::<4>();
    let add = |acc: [f32; 4], v: Vector<f32, 4>| {
        let v = v.lanes();
        [acc[0] + v[0], acc[1] + v[1], acc[2] + v[2], acc[3] + v[3]]
    };
    let mut acc = [0.0f32; 4];
    let stride = thread::grid_stride();
    let mut c = thread::index_1d().get();
    while c + 3 * stride < body.len() {
        let (v0, v1, v2, v3) = (
            body[c],
            body[c + stride],
            body[c + 2 * stride],
            body[c + 3 * stride],
        );
        acc = add(add(add(add(acc, v0), v1), v2), v3);
        c += 4 * stride;
    }
    while c < body.len() {
        acc = add(acc, body[c]);
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
/// thread writing through its block witness. Block size: a multiple of 32.
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
/// multiple of 32 (checked: a wrong launch traps with a message).
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
