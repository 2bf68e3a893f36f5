//! The tensor-memory accelerator (TMA, sm_90+): bulk copies of whole tiles between
//! global and shared memory, described by a tensor map and completing on a
//! [`Barrier`](crate::barrier::Barrier). cuda-oxide's names (`cuda_device::tma`).
//!
//! A tensor map (`CUtensorMap`, here [`TmaDescriptor`]) is made on the host by the
//! driver's `cuTensorMapEncodeTiled`: the array's address, extents and row strides, the
//! box one copy moves, and the shared-memory swizzle. Kernels take it from device
//! memory (pyoxide's CuPy backend encodes maps and copies them there:
//! pyoxide/backends/cupy/_tensormap.py) and read it only through these functions.
//! Parts of a box outside the array's extents are filled with zeros.
//!
//! The CPU emulator runs none of these: each stops the kernel with an error that names
//! the instruction.

use crate::arch;
use crate::barrier::Barrier;

/// A `CUtensorMap`: 128 opaque bytes, 64-byte aligned.
#[repr(C, align(64))]
#[derive(Clone, Copy)]
pub struct TmaDescriptor {
    _opaque: [u8; 128],
}

/// `cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes`:
/// copy the box at element coordinates (`coord0` along the contiguous dimension,
/// `coord1` along the other) of the array `tensor_map` describes into shared memory at
/// `dst`, and count its bytes (the whole box, zero-filled parts included) on `barrier`.
///
/// # Safety
/// `tensor_map` points to a valid map in global memory (or a kernel parameter), 64-byte
/// aligned; `dst` is shared memory aligned as the map's swizzle requires (1024 bytes
/// for the 128-byte swizzle) with room for the box; `barrier` is an initialised
/// barrier whose phase expects these bytes
/// ([`mbarrier_arrive_expect_tx`](crate::barrier::mbarrier_arrive_expect_tx)); all
/// three stay valid until the phase completes.
#[inline(always)]
pub unsafe fn cp_async_bulk_tensor_2d_g2s(
    dst: *mut u8,
    tensor_map: *const TmaDescriptor,
    coord0: i32,
    coord1: i32,
    barrier: *mut Barrier,
) {
    // SAFETY: upheld by the caller.
    unsafe {
        arch::cp_async_bulk_tensor_2d_g2s(dst, tensor_map.cast(), coord0, coord1, barrier.cast())
    }
}

/// `cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes
/// .multicast::cluster`: one load of the box at (`coord0`, `coord1`) that lands in the
/// shared memory of every block of the cluster whose rank's bit is set in `cta_mask`
/// (bit `r` for [`block_rank`](crate::cluster::block_rank) `r`), at `dst`'s offset in
/// each, and counts its bytes on the barrier at `barrier`'s offset in each of them. A
/// kernel with `#[cluster_launch]` issues it from one thread of one block per tile,
/// instead of each block loading the same tile (CUTLASS's "TMA multicast"); every
/// destination block expects the bytes on its own barrier
/// ([`mbarrier_arrive_expect_tx`](crate::barrier::mbarrier_arrive_expect_tx)).
///
/// # Safety
/// As [`cp_async_bulk_tensor_2d_g2s`], for `dst` and `barrier` in every block named by
/// `cta_mask` (bits only below [`cluster_size`](crate::cluster::cluster_size)); each
/// of those blocks initialised its barrier before the copy could signal it (an
/// `mbarrier_init`, then
/// [`fence_acq_rel_cluster`](crate::cluster::fence_acq_rel_cluster) and
/// [`cluster_sync`](crate::cluster::cluster_sync)) and does not exit before its
/// barrier's phase completes.
#[inline(always)]
pub unsafe fn cp_async_bulk_tensor_2d_g2s_multicast(
    dst: *mut u8,
    tensor_map: *const TmaDescriptor,
    coord0: i32,
    coord1: i32,
    barrier: *mut Barrier,
    cta_mask: u16,
) {
    // SAFETY: upheld by the caller.
    unsafe {
        arch::cp_async_bulk_tensor_2d_g2s_multicast(
            dst,
            tensor_map.cast(),
            coord0,
            coord1,
            barrier.cast(),
            cta_mask,
        )
    }
}

/// `cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes`:
/// [`cp_async_bulk_tensor_2d_g2s`] for a map of rank 4, the box at element coordinates
/// `coords` (innermost first). Attention moves (batch, sequence, head, d) arrays this
/// way: one map serves every layout whose d is contiguous, the strides in the map.
///
/// # Safety
/// As [`cp_async_bulk_tensor_2d_g2s`].
#[inline(always)]
pub unsafe fn cp_async_bulk_tensor_4d_g2s(
    dst: *mut u8,
    tensor_map: *const TmaDescriptor,
    coords: [i32; 4],
    barrier: *mut Barrier,
) {
    // SAFETY: upheld by the caller.
    unsafe { arch::cp_async_bulk_tensor_4d_g2s(dst, tensor_map.cast(), coords, barrier.cast()) }
}

/// `cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group`: copy the box at
/// element coordinates (`coord0`, `coord1`) of the array `tensor_map` describes from
/// shared memory at `src` out to global memory, laid out in shared memory as the map's
/// swizzle says. Parts of the box outside the array's extents are not written. The
/// copy joins this thread's current bulk group: close it with
/// [`cp_async_bulk_commit_group`], and before `src` is written again wait for it with
/// [`cp_async_bulk_wait_group_read`] (the engine has read the box) or
/// [`cp_async_bulk_wait_group`] (the writes are done).
///
/// # Safety
/// `tensor_map` as for [`cp_async_bulk_tensor_2d_g2s`]; `src` is shared memory aligned
/// as the swizzle requires and holds the box, written by this block's threads, who made
/// their writes visible to the asynchronous proxy
/// ([`fence_proxy_async_shared_cta`](crate::barrier::fence_proxy_async_shared_cta))
/// and synchronised with this thread first; nothing writes `src`, and the block does not
/// exit, until the read is waited for ([`cp_async_bulk_wait_group_read`]; the global
/// writes complete by the kernel's end without a wait).
#[inline(always)]
pub unsafe fn cp_async_bulk_tensor_2d_s2g(
    src: *const u8,
    tensor_map: *const TmaDescriptor,
    coord0: i32,
    coord1: i32,
) {
    // SAFETY: upheld by the caller.
    unsafe { arch::cp_async_bulk_tensor_2d_s2g(src, tensor_map.cast(), coord0, coord1) }
}

/// `cp.async.bulk.tensor.4d.global.shared::cta.tile.bulk_group`:
/// [`cp_async_bulk_tensor_2d_s2g`] for a map of rank 4, the box at element coordinates
/// `coords` (innermost first).
///
/// # Safety
/// As [`cp_async_bulk_tensor_2d_s2g`].
#[inline(always)]
pub unsafe fn cp_async_bulk_tensor_4d_s2g(
    src: *const u8,
    tensor_map: *const TmaDescriptor,
    coords: [i32; 4],
) {
    // SAFETY: upheld by the caller.
    unsafe { arch::cp_async_bulk_tensor_4d_s2g(src, tensor_map.cast(), coords) }
}

/// `prefetch.tensormap`: start fetching the map at `tensor_map` into the cache the TMA
/// unit reads descriptors from, so that the first copy through it does not wait for the
/// map's own load from memory (a kernel's first thread issues it for each of its maps,
/// before setting up its barriers). A hint: nothing waits for it.
///
/// # Safety
/// `tensor_map` points to a map in global memory (as [`cp_async_bulk_tensor_2d_g2s`]).
#[inline(always)]
pub unsafe fn prefetch_tensormap(tensor_map: *const TmaDescriptor) {
    // SAFETY: upheld by the caller.
    unsafe { arch::prefetch_tensormap(tensor_map.cast()) }
}

forward! {
    /// `cp.async.bulk.commit_group`: close this thread's group of bulk copies
    /// ([`cp_async_bulk_tensor_2d_s2g`], [`cp_async_bulk_tensor_4d_s2g`]) so that the
    /// waits below can name it.
    pub fn cp_async_bulk_commit_group() = arch::cp_async_bulk_commit_group;
    /// `cp.async.bulk.wait_group N`: wait until at most `N` of this thread's committed bulk
    /// groups are pending, their global writes done.
    pub fn cp_async_bulk_wait_group<const N: u32>() = arch::cp_async_bulk_wait_group;
    /// `cp.async.bulk.wait_group.read N`: wait until at most `N` of this thread's committed
    /// bulk groups still read their shared-memory sources (their global writes may still
    /// be under way): the point after which the sources may be written again.
    pub fn cp_async_bulk_wait_group_read<const N: u32>() = arch::cp_async_bulk_wait_group_read;
}
