//! Reductions and scans over a whole array or over each block.

use oxide_device::prelude::*;

/// `out[0] += Σ x` (zero `out[0]` first). Each thread sums a grid-stride slice of `x`;
/// a warp sums its lanes with shuffles, lane 0 of each warp leaves its partial in
/// shared memory, warp 0 sums the partials, and thread 0 adds the block's total with
/// one atomic. Block size: a multiple of 32, at most 1024.
#[kernel]
#[launch_bounds(1024)]
pub fn reduce_sum_f32(x: &[f32], out: AtomicSlice<f32>) {
    static PARTIALS: SharedArray<f32, 32> = SharedArray::UNINIT;
    let start = thread::index_1d().get();
    let sum: f32 = x.iter().skip(start).step_by(thread::grid_stride()).sum();
    let warp_sum = warp::reduce_sum_f32(sum);
    let (lane, warp_id) = (warp::lane_id() as usize, warp::warp_id() as usize);
    if lane == 0 {
        // SAFETY: one writer per slot; read only after the barrier.
        unsafe { PARTIALS.write(warp_id, warp_sum) };
    }
    thread::sync_threads();
    if warp_id == 0 {
        let warps = thread::block_size().div_ceil(warp::WARP_SIZE) as usize;
        // SAFETY: slots below `warps` were written before the barrier.
        let partial = if lane < warps {
            unsafe { PARTIALS.read(lane) }
        } else {
            0.0
        };
        let block_sum = warp::reduce_sum_f32(partial);
        if let (0, Some(total)) = (lane, out.first()) {
            total.fetch_add(block_sum, Ordering::Relaxed);
        }
    }
}

/// One partial sum of `x` per block into `partial` (one element per block; its length
/// is the grid size), with no atomics: a grid-stride sum per thread, a block reduction,
/// and the block's first thread writing through its block witness. Sum `partial` on
/// the host or with a second launch. Block size: a multiple of 32.
#[kernel]
#[launch_bounds(1024)]
pub fn reduce_blocks_f32(x: &[f32], mut partial: DisjointSlice<f32>) {
    let start = thread::index_1d().get();
    let sum: f32 = x.iter().skip(start).step_by(thread::grid_stride()).sum();
    let block_sum = warp::block_reduce_sum_f32(sum);
    if let Some(p) = thread::block_leader_index().and_then(|b| partial.get_mut(b)) {
        *p = block_sum;
    }
}

/// Inclusive prefix sum (wrapping) of each block's `blockDim.x` elements of `x`: a
/// segmented scan, the building block of a full scan. Warps scan with `shfl.sync.up`;
/// the warps' totals go through dynamic shared memory (launch with
/// `4 * blockDim.x / 32` bytes of it), where warp 0 scans them in turn. Block size: a
/// multiple of 32 (checked: a wrong launch traps with a message).
#[kernel]
#[launch_bounds(1024)]
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
