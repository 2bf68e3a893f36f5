//! Warp-level operations: lane ids, shuffles, votes, matches, and warp-wide reductions
//! and scans built on them (block-wide ones are in [`crate::block`]).
//!
//! Every `*_sync` function takes the `mask` of lanes that execute it together (as
//! CUDA's); every lane named in `mask` must reach the same call, or the values read
//! are unspecified. [`FULL_MASK`] names the whole warp. The reductions and scans use
//! the whole warp, so every lane of it must exist: a block of whole warps. pyoxide
//! enforces that: `cargo oxide build` records which kernels' code runs a collective
//! over the full warp (the manifest's `whole_warps`) and the launcher refuses them any
//! other block. [`reduce_partial`] takes the lanes that exist instead.
//!
//! [`reduce`] combines any [`Shuffle`] value (tuples such as `(value, index)` too) with
//! any associative, commutative function; [`sum`], [`min`], [`max`], [`arg_max`] and
//! [`arg_min`] are it for every [`Numeric`] type. A kernel called as a plain Rust
//! function is one lane of a one-lane warp: shuffles return the caller's own value and
//! reductions their input.

use crate::arch;
use crate::thread;

pub use crate::debug::{nwarpid, warpid};

/// Lanes per warp on NVIDIA GPUs.
pub const WARP_SIZE: u32 = crate::arch::WARP_SIZE;

/// Every lane of the warp.
pub const FULL_MASK: u32 = 0xffff_ffff;

/// This thread's lane in its warp, `0..32` (`%laneid`).
#[inline(always)]
pub fn lane_id() -> u32 {
    arch::lane_id()
}

/// This thread's warp within its block: the flat thread index / 32.
#[inline(always)]
pub fn warp_id() -> u32 {
    thread::block_thread_index() / WARP_SIZE
}

/// The lanes of the warp executing this call together (`__activemask()`).
#[inline(always)]
pub fn active_mask() -> u32 {
    arch::active_mask()
}

pub use crate::shuffle::{Lane, Numeric, Shuffle};

/// `$t`'s four shuffles as free functions, each [`Shuffle::shuffle_lanes`] in one mode:
/// `masked`, `name(mask, value, arg)` as CUDA's `__shfl*_sync`; `whole`, `name(value, arg)`
/// over the whole warp.
macro_rules! shuffle_fns {
    ($($t:ty: $idx:ident, $xor:ident, $down:ident, $up:ident;)*) => {$(
        shuffle_fns!(@ masked $t: $idx $xor $down $up);
    )*};
    (@ $how:ident $t:ty: $idx:ident $xor:ident $down:ident $up:ident) => {
        shuffle_fns!(@ $how $t;
            $idx(src_lane) Index "__shfl_sync" "`src_lane`";
            $xor(lane_mask) Xor "__shfl_xor_sync" "`lane_id ^ lane_mask`";
            $down(delta) Down "__shfl_down_sync" "`lane_id + delta`";
            $up(delta) Up "__shfl_up_sync" "`lane_id - delta`";
        );
    };
    (@ masked $t:ty; $($name:ident($arg:ident) $lane:ident $cuda:literal $what:literal;)*) => {$(
        #[doc = concat!("`", $cuda, "` for `", stringify!($t), "`: the value of lane ", $what, ".")]
        #[inline(always)]
        pub fn $name(mask: u32, value: $t, $arg: u32) -> $t {
            value.shuffle_lanes(mask, Lane::$lane($arg))
        }
    )*};
    (@ whole $t:ty; $($name:ident($arg:ident) $lane:ident $cuda:literal $what:literal;)*) => {$(
        #[doc = concat!("The value of lane ", $what, ", over the whole warp (`", stringify!($t), "`).")]
        #[inline(always)]
        pub fn $name(value: $t, $arg: u32) -> $t {
            value.shuffle_lanes(FULL_MASK, Lane::$lane($arg))
        }
    )*};
}

shuffle_fns! {
    u32: shuffle_sync, shuffle_xor_sync, shuffle_down_sync, shuffle_up_sync;
    i32: shuffle_sync_i32, shuffle_xor_sync_i32, shuffle_down_sync_i32, shuffle_up_sync_i32;
    f32: shuffle_sync_f32, shuffle_xor_sync_f32, shuffle_down_sync_f32, shuffle_up_sync_f32;
    u64: shuffle_sync_u64, shuffle_xor_sync_u64, shuffle_down_sync_u64, shuffle_up_sync_u64;
    i64: shuffle_sync_i64, shuffle_xor_sync_i64, shuffle_down_sync_i64, shuffle_up_sync_i64;
    f64: shuffle_sync_f64, shuffle_xor_sync_f64, shuffle_down_sync_f64, shuffle_up_sync_f64;
}

/// `__ballot_sync`: bit `i` set when lane `i` (in `mask`) has `pred` true.
#[inline(always)]
pub fn ballot_sync(mask: u32, pred: bool) -> u32 {
    arch::ballot(mask, pred)
}

/// `__all_sync`: whether `pred` holds in every lane of `mask`.
#[inline(always)]
pub fn all_sync(mask: u32, pred: bool) -> bool {
    arch::ballot(mask, !pred) == 0
}

/// `__any_sync`: whether `pred` holds in some lane of `mask`.
#[inline(always)]
pub fn any_sync(mask: u32, pred: bool) -> bool {
    arch::ballot(mask, pred) != 0
}

/// `__match_any_sync`: the lanes of `mask` whose `value` equals this lane's.
#[inline(always)]
pub fn match_any_sync(mask: u32, value: u32) -> u32 {
    arch::match_any_u32(mask, value)
}

/// [`match_any_sync`] for 64-bit values.
#[inline(always)]
pub fn match_any_sync_u64(mask: u32, value: u64) -> u32 {
    arch::match_any_u64(mask, value)
}

macro_rules! redux_fns {
    ($($name:ident: $t:ty, $what:literal;)*) => {$(
        #[doc = concat!("`__reduce_", $what, "_sync`: the ", $what, " of `value` over the lanes of `mask`, in each of them; one `redux.sync` instruction (sm_80+).")]
        #[inline(always)]
        pub fn $name(mask: u32, value: $t) -> $t {
            arch::$name(mask, value)
        }
    )*};
}

redux_fns! {
    redux_add_u32: u32, "add";
    redux_min_u32: u32, "min";
    redux_max_u32: u32, "max";
    redux_min_i32: i32, "min";
    redux_max_i32: i32, "max";
    redux_and_u32: u32, "and";
    redux_or_u32: u32, "or";
    redux_xor_u32: u32, "xor";
}

/// `redux_sync_*` are cuda-oxide's names for the same instructions.
pub use self::{
    redux_add_u32 as redux_sync_add_u32, redux_and_u32 as redux_sync_and_u32,
    redux_max_i32 as redux_sync_max_i32, redux_max_u32 as redux_sync_max_u32,
    redux_min_i32 as redux_sync_min_i32, redux_min_u32 as redux_sync_min_u32,
    redux_or_u32 as redux_sync_or_u32, redux_xor_u32 as redux_sync_xor_u32,
};

/// Combine `value` across the whole warp with `op` (associative and commutative);
/// every lane gets the result. A butterfly: log2(32) = 5 `shfl.sync.bfly` steps. Any
/// [`Shuffle`] value: a tuple such as `(value, index)` reduces with
/// [`combine::arg_max`](crate::combine::arg_max).
#[inline(always)]
pub fn reduce<T: Shuffle>(value: T, op: impl Fn(T, T) -> T) -> T {
    crate::shuffle::butterfly(value, op)
}

/// Inclusive prefix combination across the warp: lane `i` gets
/// `op(value_0, …, value_i)`. Hillis–Steele with `shfl.sync.up`.
#[inline(always)]
pub fn inclusive_scan<T: Shuffle>(value: T, op: impl Fn(T, T) -> T) -> T {
    crate::shuffle::inclusive_scan(value, op)
}

macro_rules! reductions {
    ($($name:ident: $t:ty, $op:expr, $what:literal;)*) => {$(
        #[doc = concat!("The ", $what, " of `value` over the whole warp, in every lane.")]
        #[inline(always)]
        pub fn $name(value: $t) -> $t {
            reduce(value, $op)
        }
    )*};
}

reductions! {
    reduce_sum_f32: f32, |a, b| a + b, "sum";
    reduce_sum_f64: f64, |a, b| a + b, "sum";
    reduce_sum_u32: u32, u32::wrapping_add, "wrapping sum";
    reduce_sum_i32: i32, i32::wrapping_add, "wrapping sum";
    reduce_sum_u64: u64, u64::wrapping_add, "wrapping sum";
    reduce_max_f32: f32, f32::max, "maximum";
    reduce_min_f32: f32, f32::min, "minimum";
    reduce_max_f64: f64, f64::max, "maximum";
    reduce_min_f64: f64, f64::min, "minimum";
    reduce_max_u32: u32, u32::max, "maximum";
    reduce_min_u32: u32, u32::min, "minimum";
    reduce_max_i32: i32, i32::max, "maximum";
    reduce_min_i32: i32, i32::min, "minimum";
}

/// Inclusive prefix sum over the warp (lane `i` gets `value_0 + … + value_i`).
#[inline(always)]
pub fn inclusive_scan_sum_f32(value: f32) -> f32 {
    inclusive_scan(value, |a, b| a + b)
}

/// Inclusive prefix sum over the warp, wrapping.
#[inline(always)]
pub fn inclusive_scan_sum_u32(value: u32) -> u32 {
    inclusive_scan(value, u32::wrapping_add)
}

/// The sum, minimum and maximum of a [`Numeric`] value over the whole warp, in every
/// lane: `redux.sync` for 32-bit integers, a butterfly of shuffles otherwise.
#[inline(always)]
pub fn sum<T: Numeric>(value: T) -> T {
    value.warp_sum()
}

/// The minimum over the whole warp (for floats `minNum`: a NaN loses to a number).
#[inline(always)]
pub fn min<T: Numeric>(value: T) -> T {
    value.warp_min()
}

/// The maximum over the whole warp (for floats `maxNum`: a NaN loses to a number).
#[inline(always)]
pub fn max<T: Numeric>(value: T) -> T {
    value.warp_max()
}

/// The warp's `(value, index)` that `np.argmax` picks ([`combine::arg_max`]), in every
/// lane, from each lane's candidate.
///
/// [`combine::arg_max`]: crate::combine::arg_max
#[inline(always)]
pub fn arg_max<T: Numeric, I: Shuffle + Ord>(value: T, index: I) -> (T, I) {
    reduce((value, index), crate::combine::arg_max)
}

/// The warp's `(value, index)` that `np.argmin` picks, in every lane.
#[inline(always)]
pub fn arg_min<T: Numeric, I: Shuffle + Ord>(value: T, index: I) -> (T, I) {
    reduce((value, index), crate::combine::arg_min)
}

macro_rules! block_reductions {
    ($($name:ident: $t:ty, $block:ident, $what:literal;)*) => {$(
        #[doc = concat!("The ", $what, " of `value` over the whole block, returned to every thread ([`crate::block::", stringify!($block), "`]).")]
        ///
        /// Every thread of the block must call it, and the block must be whole warps.
        #[inline(always)]
        pub fn $name(value: $t) -> $t {
            crate::block::$block(value)
        }
    )*};
}

block_reductions! {
    block_reduce_sum_f32: f32, sum, "sum";
    block_reduce_max_f32: f32, max, "maximum";
    block_reduce_min_f32: f32, min, "minimum";
    block_reduce_sum_f64: f64, sum, "sum";
    block_reduce_sum_u32: u32, sum, "wrapping sum";
}

// ---- cuda-oxide's spellings ----------------------------------------------------------
// cuda-oxide puts the type before `_sync` (`shuffle_xor_f32_sync`) and has mask-less
// forms for the whole warp (`shuffle_xor_f32`); both name the functions above.

macro_rules! cuda_oxide_shuffles {
    ($($t:ty: $idx:ident $xor:ident $down:ident $up:ident, $idx_all:ident $xor_all:ident $down_all:ident $up_all:ident;)*) => {$(
        shuffle_fns!(@ masked $t: $idx $xor $down $up);
        shuffle_fns!(@ whole $t: $idx_all $xor_all $down_all $up_all);
    )*};
}

cuda_oxide_shuffles! {
    f32: shuffle_f32_sync shuffle_xor_f32_sync shuffle_down_f32_sync shuffle_up_f32_sync,
        shuffle_f32 shuffle_xor_f32 shuffle_down_f32 shuffle_up_f32;
    u64: shuffle_u64_sync shuffle_xor_u64_sync shuffle_down_u64_sync shuffle_up_u64_sync,
        shuffle_u64 shuffle_xor_u64 shuffle_down_u64 shuffle_up_u64;
    f64: shuffle_f64_sync shuffle_xor_f64_sync shuffle_down_f64_sync shuffle_up_f64_sync,
        shuffle_f64 shuffle_xor_f64 shuffle_down_f64 shuffle_up_f64;
    i32: shuffle_i32_sync shuffle_xor_i32_sync shuffle_down_i32_sync shuffle_up_i32_sync,
        shuffle_i32 shuffle_xor_i32 shuffle_down_i32 shuffle_up_i32;
}

shuffle_fns!(@ whole u32: shuffle shuffle_xor shuffle_down shuffle_up);

/// [`ballot_sync`] over the whole warp.
#[inline(always)]
pub fn ballot(pred: bool) -> u32 {
    ballot_sync(FULL_MASK, pred)
}

/// [`all_sync`] over the whole warp.
#[inline(always)]
pub fn all(pred: bool) -> bool {
    all_sync(FULL_MASK, pred)
}

/// [`any_sync`] over the whole warp.
#[inline(always)]
pub fn any(pred: bool) -> bool {
    any_sync(FULL_MASK, pred)
}

/// How many lanes of the warp hold `pred`.
#[inline(always)]
pub fn popc(pred: bool) -> u32 {
    ballot(pred).count_ones()
}

/// `__syncwarp(mask)`: the lanes of `mask` wait for each other, and their memory
/// accesses before the call are ordered before those after it.
#[inline(always)]
pub fn sync_mask(mask: u32) {
    arch::warp_sync(mask)
}

/// [`match_any_sync`] for 64-bit values (cuda-oxide's name).
#[inline(always)]
pub fn match_any_i64_sync(mask: u32, value: u64) -> u32 {
    arch::match_any_u64(mask, value)
}

/// `__match_all_sync`: the lanes of `mask` taking part if all of them hold the same
/// `value`, else 0 (test `!= 0` for the predicate). Built from `match.any`: every lane
/// matches the whole set exactly when all values agree.
#[inline(always)]
pub fn match_all_sync(mask: u32, value: u32) -> u32 {
    match_all_i64_sync(mask, u64::from(value))
}

/// [`match_all_sync`] for 64-bit values.
#[inline(always)]
pub fn match_all_i64_sync(mask: u32, value: u64) -> u32 {
    let present = arch::ballot(mask, true);
    if arch::match_any_u64(mask, value) == present {
        present
    } else {
        0
    }
}

/// Lanes below this one (`%lanemask_lt`): `(1 << lane) - 1`.
#[inline(always)]
pub fn lanemask_lt() -> u32 {
    (1u32 << lane_id()) - 1
}

/// Lanes up to and including this one (`%lanemask_le`).
#[inline(always)]
pub fn lanemask_le() -> u32 {
    lanemask_lt() | lanemask_eq()
}

/// This lane alone (`%lanemask_eq`).
#[inline(always)]
pub fn lanemask_eq() -> u32 {
    1u32 << lane_id()
}

/// This lane and those above (`%lanemask_ge`).
#[inline(always)]
pub fn lanemask_ge() -> u32 {
    !lanemask_lt()
}

/// Lanes above this one (`%lanemask_gt`).
#[inline(always)]
pub fn lanemask_gt() -> u32 {
    !lanemask_le()
}

forward! {
    /// `redux.sync.add` over `mask` (cuda-oxide's name; wraps, so it serves `i32` too
    /// through `as u32`).
    pub fn redux_sync_add(mask: u32, value: u32) -> u32 = arch::redux_add_u32;
    /// `redux.sync.and` over `mask`.
    pub fn redux_sync_and(mask: u32, value: u32) -> u32 = arch::redux_and_u32;
    /// `redux.sync.or` over `mask`.
    pub fn redux_sync_or(mask: u32, value: u32) -> u32 = arch::redux_or_u32;
    /// `redux.sync.xor` over `mask`.
    pub fn redux_sync_xor(mask: u32, value: u32) -> u32 = arch::redux_xor_u32;
}

/// One leader among the lanes of `mask` that reach the call: `(leader's lane, whether
/// this lane is it)`. The leader is the lowest such lane (as `elect.sync` picks on
/// sm_90; computed from a ballot here, so it works on every arch and the emulator).
#[inline(always)]
pub fn elect_sync(mask: u32) -> (u32, bool) {
    let present = arch::ballot(mask, true);
    let leader = present.trailing_zeros();
    (leader, leader == lane_id())
}

/// Whether this lane is [`elect_sync`]'s leader of `mask`.
#[inline(always)]
pub fn is_elected_sync(mask: u32) -> bool {
    elect_sync(mask).1
}

/// Lanes launched in this thread's warp for a 1-D block: 32, or fewer in the block's
/// last warp when `blockDim.x` is not a multiple of 32 (the count the `_partial`
/// reductions take).
#[inline(always)]
pub fn live_lanes_1d() -> u32 {
    let first = thread::threadIdx_x() / WARP_SIZE * WARP_SIZE;
    (thread::blockDim_x() - first).min(WARP_SIZE)
}

/// Reduce over lanes `0..live` only (a block's partial last warp), leaving the result
/// in every one of them. A tree of shuffles toward lane 0 whose sources are clamped
/// into the live lanes, so no lane reads one that was never launched, then a
/// broadcast from lane 0.
#[inline(always)]
pub fn reduce_partial<T: Shuffle>(value: T, live_lanes: u32, op: impl Fn(T, T) -> T) -> T {
    let live = live_lanes.clamp(1, WARP_SIZE);
    // The live lanes' bits, computed without a branch on `live == 32`: with one, LLVM
    // compiles a path whose shuffles carry the constant full mask, and the link step
    // (which marks kernels that shuffle over the full warp as needing whole warps)
    // could not tell it from `warp::reduce`'s.
    let mask = FULL_MASK >> (WARP_SIZE - live);
    let lane = lane_id();
    let mut v = value;
    let mut offset = live.next_power_of_two() / 2;
    while offset > 0 {
        let src = lane + offset;
        let other = v.shuffle(mask, src.min(live - 1));
        if src < live {
            v = op(v, other);
        }
        offset /= 2;
    }
    v.shuffle(mask, 0)
}

macro_rules! partial_reductions {
    ($($name:ident: $t:ty, $op:expr, $what:literal;)*) => {$(
        #[doc = concat!("The ", $what, " of `value` over lanes `0..live_lanes` ([`reduce_partial`]), e.g. `", stringify!($name), "(x, live_lanes_1d())`.")]
        #[inline(always)]
        pub fn $name(value: $t, live_lanes: u32) -> $t {
            reduce_partial(value, live_lanes, $op)
        }
    )*};
}

partial_reductions! {
    reduce_sum_f32_partial: f32, |a, b| a + b, "sum";
    reduce_max_f32_partial: f32, f32::max, "maximum";
    reduce_min_f32_partial: f32, f32::min, "minimum";
    reduce_sum_f64_partial: f64, |a, b| a + b, "sum";
    reduce_max_f64_partial: f64, f64::max, "maximum";
    reduce_min_f64_partial: f64, f64::min, "minimum";
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_warp_of_one_lane() {
        assert_eq!((lane_id(), warp_id(), active_mask()), (0, 0, 1));
        assert_eq!(shuffle_xor_sync_f32(FULL_MASK, 2.5, 1), 2.5);
        assert_eq!(
            shuffle_down_sync_u64(FULL_MASK, u64::MAX - 1, 3),
            u64::MAX - 1
        );
        assert_eq!(shuffle_up_sync_i32(FULL_MASK, -7, 1), -7);
        assert_eq!(shuffle_sync_f64(FULL_MASK, -0.125, 0), -0.125);
        assert_eq!(
            (ballot_sync(FULL_MASK, true), ballot_sync(FULL_MASK, false)),
            (1, 0)
        );
        assert!(all_sync(FULL_MASK, true) && !any_sync(FULL_MASK, false));
        assert_eq!(match_any_sync(FULL_MASK, 9), 1);
        assert_eq!(
            (
                redux_add_u32(FULL_MASK, 7),
                redux_sync_min_i32(FULL_MASK, -7)
            ),
            (7, -7)
        );
    }

    #[test]
    fn the_warp_is_oxide_abis() {
        // oxide-abi is a host-only dependency here; the launcher's rule uses its value.
        assert_eq!(WARP_SIZE, oxide_abi::limits::WARP_SIZE);
    }

    #[test]
    fn reductions_of_one_lane_are_the_value() {
        assert_eq!(reduce_sum_f32(1.5), 1.5);
        assert_eq!(reduce_max_i32(-3), -3);
        assert_eq!(inclusive_scan_sum_u32(4), 4);
        assert_eq!(block_reduce_sum_f32(2.0), 2.0);
        assert_eq!(block_reduce_max_f32(-2.0), -2.0);
        assert_eq!(block_reduce_sum_u32(3), 3);
        assert_eq!(block_reduce_sum_f64(0.5), 0.5);
    }
}
