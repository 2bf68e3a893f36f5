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
