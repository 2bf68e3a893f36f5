//! Asynchronous barriers in shared memory (`mbarrier`, sm_80+; transaction counts for
//! TMA copies, sm_90+), under NVIDIA cuda-oxide's names: a kernel written against
//! `cuda_device::barrier` ports by changing its `use` line.
//!
//! A [`Barrier`] counts arrivals (and, with [`mbarrier_arrive_expect_tx`], bytes of
//! asynchronous copies still to land) per phase; a phase completes when both reach
//! zero, and the barrier moves on to the next phase with the counts reloaded. Threads
//! wait for a phase by its token ([`mbarrier_wait`]) or by its parity
//! ([`mbarrier_try_wait_parity`]: 0 for phases 0, 2, …; a freshly initialised
//! barrier's "previous" phase, parity 1, counts as complete).
//!
//! ```ignore
//! static BAR: SharedArray<Barrier, 1> = SharedArray::UNINIT;
//! let bar = BAR.as_mut_ptr();
//! if thread::threadIdx_x() == 0 {
//!     unsafe { mbarrier_init(bar, thread::blockDim_x()) };
//!     fence_proxy_async_shared_cta();
//! }
//! thread::sync_threads();
//! let token = unsafe { mbarrier_arrive(bar) };
//! unsafe { mbarrier_wait(bar, token) };
//! ```
//!
//! The CPU emulator runs none of these: each stops the kernel with an error that names
//! the instruction (`mbarrier` phases exist to meet the asynchronous engines that the
//! emulator does not model).

use crate::arch;

/// An `mbarrier` object: 8 bytes of shared memory that only the `mbarrier_*`
/// functions read or write.
#[repr(C, align(8))]
#[derive(Clone, Copy)]
pub struct Barrier {
    _state: u64,
}

impl Barrier {
    /// The value of a `static` barrier before [`mbarrier_init`].
    pub const UNINIT: Barrier = Barrier { _state: 0 };
}

/// `mbarrier.init.shared.b64`: expect `expected_count` arrivals (1..=2^20 - 1) per
/// phase.
///
/// # Safety
/// `bar` points to a [`Barrier`] in shared memory that one thread initialises while no
/// thread uses it; the others use it only after a `sync_threads` that follows.
#[inline(always)]
pub unsafe fn mbarrier_init(bar: *mut Barrier, expected_count: u32) {
    // SAFETY: upheld by the caller.
    unsafe { arch::mbarrier_init(bar.cast(), expected_count) }
}

/// `mbarrier.inval.shared.b64`: end the barrier's life, so that its 8 bytes can
/// be reused as ordinary shared memory.
///
/// # Safety
/// An initialised barrier that no thread or copy uses any more; one thread.
#[inline(always)]
pub unsafe fn mbarrier_inval(bar: *mut Barrier) {
    // SAFETY: upheld by the caller.
    unsafe { arch::mbarrier_inval(bar.cast()) }
}

/// `mbarrier.arrive.shared.b64`: count this thread's arrival in the current
/// phase; returns the phase's token for [`mbarrier_wait`].
///
/// # Safety
/// `bar` is an initialised barrier whose phase expects this arrival.
#[must_use]
#[inline(always)]
pub unsafe fn mbarrier_arrive(bar: *const Barrier) -> u64 {
    // SAFETY: upheld by the caller.
    unsafe { arch::mbarrier_arrive(bar.cast_mut().cast()) }
}

/// `mbarrier.arrive.expect_tx.shared::cta.b64`: arrive, and make the phase also wait
/// for `bytes` bytes of asynchronous copies (TMA) to land on this barrier. `tx_count`
/// is not used: cuda-oxide's signature has it, and ports pass it.
///
/// # Safety
/// As [`mbarrier_arrive`]; the copies that complete on this barrier bring exactly
/// `bytes` bytes in this phase.
#[inline(always)]
pub unsafe fn mbarrier_arrive_expect_tx(bar: *const Barrier, tx_count: u32, bytes: u32) -> u64 {
    let _ = tx_count;
    // SAFETY: upheld by the caller.
    unsafe { arch::mbarrier_arrive_expect_tx(bar.cast_mut().cast(), bytes) }
}

/// `mbarrier.test_wait.shared.b64`: whether the phase of `token` has completed
/// (without waiting).
///
/// # Safety
/// `bar` is an initialised barrier; `token` came from one of its arrivals.
#[must_use]
#[inline(always)]
pub unsafe fn mbarrier_test_wait(bar: *const Barrier, token: u64) -> bool {
    // SAFETY: upheld by the caller.
    unsafe { arch::mbarrier_test_wait(bar.cast_mut().cast(), token) }
}

/// `mbarrier.try_wait.shared::cta.b64`: as [`mbarrier_test_wait`], but the hardware may
/// suspend the thread for a while before answering false.
///
/// # Safety
/// As [`mbarrier_test_wait`].
#[must_use]
#[inline(always)]
pub unsafe fn mbarrier_try_wait(bar: *const Barrier, token: u64) -> bool {
    // SAFETY: upheld by the caller.
    unsafe { arch::mbarrier_try_wait(bar.cast_mut().cast(), token) }
}

/// `mbarrier.try_wait.parity.shared::cta.b64`: whether the phase with `parity` (0 or 1)
/// has completed; loop on it to wait.
///
/// # Safety
/// `bar` is an initialised barrier.
#[must_use]
#[inline(always)]
pub unsafe fn mbarrier_try_wait_parity(bar: *const Barrier, parity: u32) -> bool {
    // SAFETY: upheld by the caller.
    unsafe { arch::mbarrier_try_wait_parity(bar.cast_mut().cast(), parity) }
}

/// Wait until the phase of `token` has completed: a loop on [`mbarrier_test_wait`], as
/// cuda-oxide's `mbarrier_wait` is. `test_wait` exists from sm_80 (`try_wait`, which
/// may suspend the thread, only from sm_90), and the module's one PTX text serves every
/// architecture it is built for, so the wait takes the form they all have.
///
/// # Safety
/// As [`mbarrier_test_wait`].
#[inline(always)]
pub unsafe fn mbarrier_wait(bar: *const Barrier, token: u64) {
    // SAFETY: upheld by the caller.
    while !unsafe { mbarrier_test_wait(bar, token) } {}
}

/// `fence.proxy.async.shared::cta`: make this thread's ordinary shared-memory writes
/// (a barrier's initialisation, operands written by `st.shared`) visible to the
/// asynchronous proxy (TMA, `wgmma`) before it uses them.
#[inline(always)]
pub fn fence_proxy_async_shared_cta() {
    arch::fence_proxy_async_shared()
}

/// `barrier.sync id, threads`: a named barrier (ids 1–15; 0 is
/// [`sync_threads`](crate::thread::sync_threads)'s) that waits for `threads` threads
/// (a multiple of 32) of the block, so one warpgroup (128 threads) can synchronise
/// without the rest of the block, e.g. before one of its threads issues a TMA store of
/// what all of them wrote to shared memory. Not emulated.
///
/// It is PTX's unaligned `barrier.sync`, not `bar.sync` (= `barrier.sync.aligned`,
/// which requires every thread of a warp to execute the same instruction): LLVM does
/// not treat `asm!` as convergent and may copy the barrier into both arms of a branch
/// on the thread index (it did, for `if t == 0 { wait } barrier; if t == 0 { store }`),
/// which splits warp 0 between two aligned barriers and hangs the block.
///
/// # Safety
/// Every warp that uses `id` passes the same `threads`, whole warps arrive, and exactly
/// `threads` threads reach each use; no other barrier use of `id` overlaps it.
#[inline(always)]
pub unsafe fn named_barrier_sync(id: u32, threads: u32) {
    // SAFETY: upheld by the caller.
    unsafe { arch::named_barrier_sync(id, threads) }
}

/// `barrier.arrive id, threads`: count this warp's arrival at named barrier `id`
/// without waiting (the producer side of a [`named_barrier_sync`] that other warps
/// wait at: FlashAttention-3's ping-pong between two warpgroups). Unaligned, as
/// [`named_barrier_sync`] is, for the same reason. Not emulated.
///
/// # Safety
/// As [`named_barrier_sync`]: `threads` counts every thread that arrives or syncs at
/// `id` in one use.
#[inline(always)]
pub unsafe fn named_barrier_arrive(id: u32, threads: u32) {
    // SAFETY: upheld by the caller.
    unsafe { arch::named_barrier_arrive(id, threads) }
}
