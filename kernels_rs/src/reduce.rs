//! Reductions and scans over a whole array or over each block.

use oxide_device::prelude::*;

/// `out[0] = Σ x`, in one launch: no second pass, no zeroing first, no host step.
///
/// Each thread sums its grid-stride share of `x` (128-bit loads, four in flight per
/// step), each block reduces its threads' sums (warp shuffles, then shared memory), and
/// each block's first thread adds the block's total to its launch's slot of a
/// device-wide table and takes a ticket; the block that takes the last ticket writes the
/// slot's total to `out[0]` and leaves the slot empty for the next launch. A plain call
/// launches 64 blocks of 256 per multiprocessor (fewer for small `x`): on an H200 the
/// best of a sweep from 1 to 64 blocks per multiprocessor and 256 to 1024 threads per
/// block (docs/performance.md). Block size: a multiple of 32.
///
/// Launches that run at the same time (on two streams, or from two host threads on the
/// emulator) keep their sums apart: each launch's slot is found by its `out`, see
/// [`claim_slot`]. (Two launches writing the same `out` at once race on it, as any two
/// kernels writing one array do.)
#[kernel]
#[launch_bounds(1024)]
#[launch(grid_stride(x, per_thread = 64, block = 256, blocks_per_sm = 64))]
pub fn reduce_sum_f32(x: &[f32], out: AtomicSlice<f32>) {
    let block_sum = warp::block_reduce_sum_f32(thread_sum(x));
    // Nothing that only the first thread does comes before the block reduction: with a
    // branch on the thread index before it and the same test after, LLVM duplicated the
    // whole reduction into one copy per side (its barriers included), splitting warp 0
    // between two `bar.sync`s, and the kernel never finished on the GPU.
    if thread::block_thread_index() != 0 {
        return;
    }
    let slot = &SLOTS[claim_slot(&out)];
    slot.total.fetch_add(block_sum, Ordering::Relaxed);
    let blocks = thread::gridDim_x() * thread::gridDim_y() * thread::gridDim_z();
    // Release: this block's addition happens before its ticket. Acquire: the last
    // ticket's holder sees every block's addition (each ticket is released in turn).
    if slot.done.fetch_add(1, Ordering::AcqRel) + 1 == blocks {
        let total = slot.total.swap(0.0, Ordering::Relaxed);
        slot.done.store(0, Ordering::Relaxed);
        // Release: the next owner sees the slot's zeros.
        slot.owner.store(0, Ordering::Release);
        if let Some(o) = out.first() {
            o.store(total, Ordering::Relaxed);
        }
    }
}

/// One launch's accumulator: the block totals' sum and the blocks that added theirs.
/// `owner` is the launch's key (the address of its `out`), 0 while free.
struct Slot {
    owner: atomic::DeviceAtomicU64,
    total: atomic::DeviceAtomicF32,
    done: atomic::DeviceAtomicU32,
}

/// Slots in the table (16 KiB): launches in flight at once share one only when their
/// outputs' addresses hash alike.
const SLOT_COUNT: usize = 1024;

static SLOTS: [Slot; SLOT_COUNT] = [const {
    Slot {
        owner: atomic::DeviceAtomicU64::new(0),
        total: atomic::DeviceAtomicF32::new(0.0),
        done: atomic::DeviceAtomicU32::new(0),
    }
}; SLOT_COUNT];

/// This launch's slot, keyed by the address of `out` (what every block of a launch
/// sees alike, and what two launches running at once differ in unless they race on
/// one output): the slot the address hashes to, taken by the launch's first block to
/// get there (a compare-and-swap from 0) and found by the others (its owner is the
/// key). Every block of a launch computes the same slot, so they never split between
/// two. When another launch still holds it (two outputs hashing alike, both running),
/// the block waits for that launch's last block to free it.
#[inline(always)]
fn claim_slot(out: &AtomicSlice<f32>) -> usize {
    // Never 0: an empty `out` still has an aligned, non-null address.
    let key = out.as_ptr() as u64;
    // Fibonacci hashing: the top 10 bits of key × 2^64/φ spread aligned addresses.
    let home =
        (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - SLOT_COUNT.trailing_zeros())) as usize;
    let owner = &SLOTS[home].owner;
    // Acquire (here and below): the previous owner's zeros are seen before the adds.
    let mut seen = owner.load(Ordering::Acquire);
    while seen != key {
        if seen == 0 {
            match owner.compare_exchange(0, key, Ordering::Acquire, Ordering::Acquire) {
                Ok(_) => break,
                Err(now) => seen = now,
            }
        } else {
            seen = owner.load(Ordering::Acquire);
        }
    }
    home
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
