//! Block-wide collectives: a value from every thread of the block combined into one,
//! returned to every thread.
//!
//! [`reduce`] takes any [`Shuffle`] value of up to 32 bytes (a scalar, a tuple such as
//! `(value, index)` or `(Σx, Σx²)`, a [`Welford`](crate::combine::Welford)) and a
//! combining function; [`sum`], [`min`], [`max`], [`arg_max`] and [`arg_min`] are it
//! with the functions of [`crate::combine`], for every [`Numeric`] type.
//!
//! Rules (the same as CUDA's): every thread of the block calls it, from the same place
//! (it holds barriers), and the block is a whole number of warps (its lanes shuffle
//! with the full mask). `cargo oxide build` records that a kernel's code shuffles over
//! whole warps and pyoxide's launcher refuses any other block for it before launch.
//!
//! Cost: a warp butterfly (5 shuffles per 32-bit word of the value), one shared-memory
//! write per warp, two barriers (`bar.sync`: the first keeps a call from overwriting
//! the partials that a previous call's slow warps still read), and a tree over the
//! warps' partials (log₂ of the warp count, plus one shuffle to hand the total to
//! every lane), done by every warp at once so that no third barrier is needed. It
//! uses 1 KiB of shared memory, one buffer for every call in the kernel.

use core::mem::{align_of, size_of};

use crate::arch::{self, WARP_SIZE};
use crate::shared::SharedArray;
use crate::shuffle::{FULL_MASK, Numeric, Shuffle, butterfly};
use crate::{combine, thread};

/// Bytes of one warp's partial in the shared buffer: the largest value [`reduce`] takes.
pub const MAX_VALUE_BYTES: usize = 32;

/// One partial per warp (at most 32 warps in a block). Not generic (a static cannot
/// name a type parameter): one buffer of bytes, 16-byte aligned, for every type.
#[unsafe(link_section = ".oxide.shared")]
static PARTIALS: SharedArray<[u128; MAX_VALUE_BYTES / 16], 32> = SharedArray::UNINIT;

/// `op` over `value` of every thread of the block (in no fixed order: `op` should be
/// associative and commutative), returned to every thread.
///
/// ```
/// use oxide_device::prelude::*;
/// // Σx and Σx² in one pass over the block.
/// let x = 3.0f32;
/// assert_eq!(block::reduce((x, x * x), combine::sum_pair), (3.0, 9.0)); // one thread
/// ```
#[inline(always)]
pub fn reduce<T: Shuffle>(value: T, op: impl Fn(T, T) -> T + Copy) -> T {
    const {
        assert!(
            size_of::<T>() <= MAX_VALUE_BYTES && align_of::<T>() <= 16,
            "block::reduce takes values of at most 32 bytes"
        )
    };
    let warps = thread::block_size().div_ceil(WARP_SIZE);
    let warp_total = butterfly(value, op);
    if warps <= 1 {
        return warp_total; // one warp (or a plain call): nothing to share
    }
    share_totals(warp_total, warps, op)
}

/// `op` over the values of lanes `0..n` (`1 <= n <= 32`) of a whole warp, in every
/// lane: a tree of `shfl.down` toward lane 0, then a broadcast from it.
#[inline(always)]
fn first_lanes<T: Shuffle>(value: T, n: u32, op: impl Fn(T, T) -> T) -> T {
    let lane = arch::lane_id();
    let mut v = value;
    let mut offset = n.next_power_of_two() / 2;
    while offset > 0 {
        let other = v.shuffle_down(FULL_MASK, offset);
        if lane + offset < n {
            v = op(v, other);
        }
        offset /= 2;
    }
    v.shuffle(FULL_MASK, 0)
}

/// The sum over the block, in every thread (wrapping for integers).
#[inline(always)]
pub fn sum<T: Numeric>(value: T) -> T {
    reduce_numeric(value, T::warp_sum, combine::sum)
}

/// The minimum over the block, in every thread (floats: a NaN loses to a number).
#[inline(always)]
pub fn min<T: Numeric>(value: T) -> T {
    reduce_numeric(value, T::warp_min, combine::min)
}

/// The maximum over the block, in every thread (floats: a NaN loses to a number).
#[inline(always)]
pub fn max<T: Numeric>(value: T) -> T {
    reduce_numeric(value, T::warp_max, combine::max)
}

/// The block's `(value, index)` that `np.argmax` picks ([`combine::arg_max`]: NaN
/// first, then the largest, ties to the smallest index), from each thread's candidate.
#[inline(always)]
pub fn arg_max<T: Numeric, I: Shuffle + Ord>(value: T, index: I) -> (T, I) {
    reduce((value, index), combine::arg_max)
}

/// The block's `(value, index)` that `np.argmin` picks ([`combine::arg_min`]).
#[inline(always)]
pub fn arg_min<T: Numeric, I: Shuffle + Ord>(value: T, index: I) -> (T, I) {
    reduce((value, index), combine::arg_min)
}

/// [`reduce`] whose warp stage is `warp_op` (one `redux.sync` for 32-bit integers).
#[inline(always)]
fn reduce_numeric<T: Numeric>(value: T, warp_op: fn(T) -> T, op: fn(T, T) -> T) -> T {
    let warps = thread::block_size().div_ceil(WARP_SIZE);
    let warp_total = warp_op(value);
    if warps <= 1 {
        return warp_total;
    }
    share_totals(warp_total, warps, op)
}

/// Writes this warp's total (the same in all its lanes) to its slot of `PARTIALS`,
/// between two barriers of the block; returns this thread's lane, its warp, and the
/// slots' addresses (sized and aligned for `T`, as the callers assert).
#[inline(always)]
fn publish_warp_total<T: Copy>(warp_total: T) -> (u32, u32, impl Fn(u32) -> *mut T) {
    let (lane, w) = (arch::lane_id(), thread::block_thread_index() / WARP_SIZE);
    let slot = |i: u32| PARTIALS.as_mut_ptr().wrapping_add(i as usize).cast::<T>();
    thread::sync_threads();
    if lane == 0 {
        // SAFETY: slot `w` is this warp's alone (w < 32 warps), sized and aligned for T
        // (asserted by the callers); no warp still reads it (the barrier above).
        unsafe { slot(w).write(warp_total) };
    }
    thread::sync_threads();
    (lane, w, slot)
}

/// The cross-warp stage of [`reduce`]: each warp's total (the same in all its lanes)
/// combined over the block's `warps > 1` warps.
#[inline(always)]
fn share_totals<T: Shuffle>(warp_total: T, warps: u32, op: impl Fn(T, T) -> T) -> T {
    let (lane, _, slot) = publish_warp_total(warp_total);
    // Every lane reads a written slot (lanes past the warp count repeat the last one,
    // whose value the tree below never uses), then the warp combines slots 0..warps.
    // SAFETY: slots below `warps` were written before the barrier.
    let partial = unsafe { slot(lane.min(warps - 1)).read() };
    first_lanes(partial, warps, op)
}

/// The cross-warp stage of a scan: `(op over the totals of the warps before this one
/// (identity in warp 0), op over every warp's)`, in order of the warps, from each
/// warp's total (the same in all its lanes). Every thread of the block calls it.
#[inline(always)]
pub(crate) fn scan_warp_totals<T: Shuffle>(
    warp_total: T,
    identity: T,
    op: impl Fn(T, T) -> T + Copy,
) -> (T, T) {
    const {
        assert!(
            size_of::<T>() <= MAX_VALUE_BYTES && align_of::<T>() <= 16,
            "a block scan takes values of at most 32 bytes"
        )
    };
    let warps = thread::block_size().div_ceil(WARP_SIZE);
    if warps <= 1 {
        return (identity, warp_total);
    }
    let (lane, w, slot) = publish_warp_total(warp_total);
    // SAFETY: slots below `warps` were written before the barrier.
    let partial = if lane < warps {
        unsafe { slot(lane).read() }
    } else {
        identity
    };
    let inclusive = crate::shuffle::inclusive_scan(partial, op);
    let total = inclusive.shuffle(FULL_MASK, warps - 1);
    let before = inclusive.shuffle(FULL_MASK, w.saturating_sub(1));
    (if w == 0 { identity } else { before }, total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plain_call_is_a_block_of_one() {
        assert_eq!(sum(2.5f32), 2.5);
        assert_eq!(max(-3i64), -3);
        assert_eq!(min(7u8), 7);
        assert_eq!(arg_max(1.5f64, 4u32), (1.5, 4));
        assert_eq!(reduce([1u32, 2], |a, b| [a[0] + b[0], a[1] + b[1]]), [1, 2]);
    }
}
