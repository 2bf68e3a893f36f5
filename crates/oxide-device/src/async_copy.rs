//! `cp.async` (sm_80+) under NVIDIA cuda-oxide's names (`cuda_device::async_copy`): a
//! kernel written against that module ports by changing its `use` line.
//!
//! Each copy moves 4, 8 or 16 bytes from global to shared memory without passing
//! through registers; it joins the thread's open group, [`cp_async_commit_group`]
//! closes the group, and [`cp_async_wait_group`] / [`cp_async_wait_all`] wait for
//! groups to land. The `zfill` forms read only `src_size` bytes (0 to the copy's size)
//! and fill the rest with zeros (PTX's `src-size` operand), the way to load a tile's
//! ragged edge. These are [`mma`](crate::mma)'s `cp_async_*` with cuda-oxide's
//! signatures (`*mut u32` destinations, byte sources for the `zfill` forms); the
//! emulator runs them the same way (a copy lands when its group is waited for).
//!
//! The `cp_async_mbarrier_arrive*` forms make an [`mbarrier`](crate::barrier) phase
//! also wait for this thread's earlier copies; the emulator refuses them by name, as it
//! does every `mbarrier` instruction.

use crate::arch;
use crate::barrier::Barrier;

macro_rules! copies {
    ($($(#[$doc:meta])* $name:ident: $cg:literal, $bytes:literal;)*) => {$(
        $(#[$doc])*
        ///
        /// # Safety
        /// `shared_dst` points into shared memory and `global_src` into global memory,
        /// both aligned to the copy's size and valid for it; nothing reads or writes
        /// the destination until the copy's group has been waited for.
        #[inline(always)]
        pub unsafe fn $name(shared_dst: *mut u32, global_src: *const u32) {
            // SAFETY: upheld by the caller.
            unsafe { arch::cp_async::<$cg>(shared_dst.cast(), global_src.cast(), $bytes, $bytes) }
        }
    )*};
}

macro_rules! zfill_copies {
    ($($(#[$doc:meta])* $name:ident: $cg:literal, $bytes:literal;)*) => {$(
        $(#[$doc])*
        ///
        /// # Safety
        /// As the plain form, with `global_src` valid for `src_size` bytes (any
        /// pointer into the array when `src_size` is 0) and `src_size` at most the
        /// copy's size.
        #[inline(always)]
        pub unsafe fn $name(shared_dst: *mut u32, global_src: *const u8, src_size: u32) {
            // SAFETY: upheld by the caller.
            unsafe { arch::cp_async::<$cg>(shared_dst.cast(), global_src, $bytes, src_size) }
        }
    )*};
}

copies! {
    /// `cp.async.ca.shared.global [dst], [src], 4`: one 4-byte word, cached in L1 and L2.
    cp_async_ca_4: false, 4;
    /// `cp.async.ca.shared.global [dst], [src], 8`.
    cp_async_ca_8: false, 8;
    /// `cp.async.ca.shared.global [dst], [src], 16`.
    cp_async_ca_16: false, 16;
    /// `cp.async.cg.shared.global [dst], [src], 16`: cached in L2 only.
    cp_async_cg_16: true, 16;
}

zfill_copies! {
    /// `cp.async.ca.shared.global [dst], [src], 4, src_size`: the first `src_size`
    /// bytes from `src`, zeros after them.
    cp_async_ca_zfill_4: false, 4;
    /// `cp.async.ca.shared.global [dst], [src], 8, src_size`.
    cp_async_ca_zfill_8: false, 8;
    /// `cp.async.ca.shared.global [dst], [src], 16, src_size`.
    cp_async_ca_zfill_16: false, 16;
    /// `cp.async.cg.shared.global [dst], [src], 16, src_size`.
    cp_async_cg_zfill_16: true, 16;
}

/// `cp.async.commit_group`: close this thread's open group of copies (an empty group
/// is fine). Safe: it has no preconditions (cuda-oxide declares it `unsafe`, and its
/// callers' `unsafe` blocks still compile).
#[inline(always)]
pub fn cp_async_commit_group() {
    arch::cp_async_commit_group()
}

/// `cp.async.wait_all`: commit the open group and wait for all of this thread's
/// copies. [`sync_threads`](crate::thread::sync_threads) then shows every thread's
/// copies to the block.
#[inline(always)]
pub fn cp_async_wait_all() {
    crate::mma::cp_async_wait_all()
}

/// `cp.async.wait_group n`: wait until at most `max_pending` of this thread's committed
/// groups are still in flight (the oldest land first). PTX takes the count as an
/// immediate, so 0 to 7 pick that instruction and a larger count waits as 7 does
/// (a stronger wait, never a weaker one).
#[inline(always)]
pub fn cp_async_wait_group(max_pending: u32) {
    match max_pending {
        0 => arch::cp_async_wait_group::<0>(),
        1 => arch::cp_async_wait_group::<1>(),
        2 => arch::cp_async_wait_group::<2>(),
        3 => arch::cp_async_wait_group::<3>(),
        4 => arch::cp_async_wait_group::<4>(),
        5 => arch::cp_async_wait_group::<5>(),
        6 => arch::cp_async_wait_group::<6>(),
        _ => arch::cp_async_wait_group::<7>(),
    }
}

macro_rules! mbarrier_bridges {
    ($($(#[$doc:meta])* $name:ident: $noinc:literal, $shared:literal;)*) => {$(
        $(#[$doc])*
        ///
        /// # Safety
        /// `barrier` is an initialised [`Barrier`] in shared memory whose current phase
        /// expects this arrival (the `noinc` forms: whose expected count already
        /// includes it).
        #[inline(always)]
        pub unsafe fn $name(barrier: *mut Barrier) {
            // SAFETY: upheld by the caller.
            unsafe { arch::cp_async_mbarrier_arrive::<$noinc, $shared>(barrier.cast()) }
        }
    )*};
}

mbarrier_bridges! {
    /// `cp.async.mbarrier.arrive.b64 [bar]`: once this thread's earlier copies have
    /// landed, count an arrival on `barrier` (the barrier's expected count goes up by
    /// one for this phase, so the arrival is extra).
    cp_async_mbarrier_arrive: false, false;
    /// `cp.async.mbarrier.arrive.noinc.b64 [bar]`: as [`cp_async_mbarrier_arrive`],
    /// counted against the arrivals the barrier was initialised to expect.
    cp_async_mbarrier_arrive_noinc: true, false;
    /// `cp.async.mbarrier.arrive.shared.b64 [bar]`: [`cp_async_mbarrier_arrive`] with
    /// a shared-state-space address.
    cp_async_mbarrier_arrive_shared: false, true;
    /// `cp.async.mbarrier.arrive.noinc.shared.b64 [bar]`.
    cp_async_mbarrier_arrive_noinc_shared: true, true;
}
