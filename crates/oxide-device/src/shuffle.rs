//! What can cross the lanes of a warp ([`Shuffle`]) and what the numeric collectives
//! need of a type ([`Numeric`]); re-exported from [`crate::warp`].
//!
//! Every value that is made of 32- and 64-bit words crosses lanes a word at a time:
//! the scalars (8- and 16-bit ones widened to a word), `f16`/`bf16`, tuples of up to
//! four shuffleable values and arrays of them. So `(f32, u32)` (a value and its index,
//! for an argmax), `(f32, f32)` (a sum and a sum of squares) and `(f32, f32, u32)` (a
//! Welford triple) reduce with the same [`warp::reduce`](crate::warp::reduce) and
//! [`block::reduce`](crate::block::reduce) as an `f32`.

use crate::arch;
use crate::half::{bf16, f16};

/// Every lane of the warp (`warp::FULL_MASK`).
pub(crate) const FULL_MASK: u32 = 0xffff_ffff;

/// Combine `value` across the whole warp with `op`, every lane getting the result: a
/// butterfly of `shfl.sync.bfly` (log2(32) = 5 steps; `warp::reduce`). On the host the
/// emulator's warp may be narrower (a block's partial last warp, or the one lane of a
/// plain call): steps past its width are skipped.
#[inline(always)]
pub(crate) fn butterfly<T: Shuffle>(value: T, op: impl Fn(T, T) -> T) -> T {
    let mut v = value;
    let mut offset = arch::WARP_SIZE / 2;
    while offset > 0 {
        if offset < arch::warp_lanes() {
            v = op(v, v.shuffle_xor(FULL_MASK, offset));
        }
        offset /= 2;
    }
    v
}

/// `op(value_0, …, value_i)` in lane `i` (Hillis–Steele with `shfl.sync.up`): the warp
/// scan behind `warp::inclusive_scan` and the block scans (here, below both).
#[inline(always)]
pub(crate) fn inclusive_scan<T: Shuffle>(value: T, op: impl Fn(T, T) -> T) -> T {
    let lane = arch::lane_id();
    let mut v = value;
    let mut delta = 1;
    while delta < arch::warp_lanes() {
        let other = v.shuffle_up(FULL_MASK, delta);
        if lane >= delta {
            v = op(other, v);
        }
        delta *= 2;
    }
    v
}

/// Which lane a shuffle reads, with its operand: the four `shfl.sync` modes.
#[derive(Clone, Copy)]
pub enum Lane {
    /// Lane `src_lane` (`shfl.sync.idx`).
    Index(u32),
    /// Lane `lane_id ^ lane_mask` (`shfl.sync.bfly`).
    Xor(u32),
    /// Lane `lane_id + delta` (`shfl.sync.down`).
    Down(u32),
    /// Lane `lane_id - delta` (`shfl.sync.up`).
    Up(u32),
}

/// The CUDA forms of a shuffle, each [`Shuffle::shuffle_lanes`] in one mode.
macro_rules! lane_forms {
    ($($name:ident($arg:ident) => $lane:ident, $cuda:literal, $what:literal;)*) => {$(
        #[doc = concat!("`", $cuda, "`: the value of lane ", $what, ".")]
        #[inline(always)]
        fn $name(self, mask: u32, $arg: u32) -> Self {
            self.shuffle_lanes(mask, Lane::$lane($arg))
        }
    )*};
}

/// A value that can cross lanes: 32-bit values in one shuffle, 64-bit in two, tuples
/// and arrays one part at a time. An implementation says how with
/// [`shuffle_lanes`](Self::shuffle_lanes); the four CUDA forms follow from it.
pub trait Shuffle: Copy {
    /// The value of the lane that `lane` names, among the lanes of `mask`.
    fn shuffle_lanes(self, mask: u32, lane: Lane) -> Self;
    lane_forms! {
        shuffle(src_lane) => Index, "__shfl_sync", "`src_lane`";
        shuffle_xor(lane_mask) => Xor, "__shfl_xor_sync", "`lane_id ^ lane_mask`";
        shuffle_down(delta) => Down, "__shfl_down_sync", "`lane_id + delta` (own value past 31)";
        shuffle_up(delta) => Up, "__shfl_up_sync", "`lane_id - delta` (own value below 0)";
    }
}

/// One `shfl.sync` of a word in the mode `lane` names.
#[inline(always)]
fn shfl(mask: u32, word: u32, lane: Lane) -> u32 {
    match lane {
        Lane::Index(src_lane) => arch::shfl_idx(mask, word, src_lane),
        Lane::Xor(lane_mask) => arch::shfl_xor(mask, word, lane_mask),
        Lane::Down(delta) => arch::shfl_down(mask, word, delta),
        Lane::Up(delta) => arch::shfl_up(mask, word, delta),
    }
}

// Values of up to 32 bits cross lanes in one shuffle of a word; 64-bit values in two,
// low word and high word.
macro_rules! shuffle_32 {
    ($($t:ty: $to:expr, $from:expr;)*) => {$(
        impl Shuffle for $t {
            #[inline(always)]
            fn shuffle_lanes(self, mask: u32, lane: Lane) -> Self {
                ($from)(shfl(mask, ($to)(self), lane))
            }
        }
    )*};
}

macro_rules! shuffle_64 {
    ($($t:ty: $to:expr, $from:expr;)*) => {$(
        impl Shuffle for $t {
            #[inline(always)]
            fn shuffle_lanes(self, mask: u32, lane: Lane) -> Self {
                let v: u64 = ($to)(self);
                let half = |w: u64| u64::from(shfl(mask, w as u32, lane));
                ($from)(half(v) | (half(v >> 32) << 32))
            }
        }
    )*};
}

shuffle_32! {
    u32: |v: u32| v, |b: u32| b;
    i32: |v: i32| v as u32, |b: u32| b as i32;
    f32: f32::to_bits, f32::from_bits;
    u16: u32::from, |b: u32| b as u16;
    i16: |v: i16| v as u32, |b: u32| b as i16;
    u8: u32::from, |b: u32| b as u8;
    i8: |v: i8| v as u32, |b: u32| b as i8;
    bool: u32::from, |b: u32| b != 0;
    f16: |v: f16| u32::from(v.to_bits()), |b: u32| f16::from_bits(b as u16);
    bf16: |v: bf16| u32::from(v.to_bits()), |b: u32| bf16::from_bits(b as u16);
}

shuffle_64! {
    u64: |v: u64| v, |b: u64| b;
    i64: |v: i64| v as u64, |b: u64| b as i64;
    f64: f64::to_bits, f64::from_bits;
    usize: |v: usize| v as u64, |b: u64| b as usize;
    isize: |v: isize| v as u64, |b: u64| b as isize;
}

macro_rules! shuffle_tuple {
    ($($t:ident . $i:tt),+) => {
        impl<$($t: Shuffle),+> Shuffle for ($($t,)+) {
            #[inline(always)]
            fn shuffle_lanes(self, mask: u32, lane: Lane) -> Self {
                ($(self.$i.shuffle_lanes(mask, lane),)+)
            }
        }
    };
}

shuffle_tuple!(A.0, B.1);
shuffle_tuple!(A.0, B.1, C.2);
shuffle_tuple!(A.0, B.1, C.2, D.3);

impl<T: Shuffle, const N: usize> Shuffle for [T; N] {
    #[inline(always)]
    fn shuffle_lanes(self, mask: u32, lane: Lane) -> Self {
        self.map(|v| v.shuffle_lanes(mask, lane))
    }
}

/// The numeric types, with what the collectives' sums, minima, maxima and arg-extrema
/// need: every integer (sums wrap), `f32`, `f64`, `f16` and `bf16`.
///
/// `min`/`max` of floats are IEEE `minNum`/`maxNum` (as `f32::min`, CUDA's `fminf` and
/// PTX `min.f32`): a NaN loses to a number. (NumPy's `np.max` propagates NaN instead;
/// [`combine::arg_max`](crate::combine::arg_max) ranks NaN first, as `np.argmax` does.)
pub trait Numeric: Shuffle + PartialOrd {
    /// `0`.
    const ZERO: Self;
    /// The smallest value (`-inf` for floats): the identity of `max`.
    const LOWEST: Self;
    /// The largest value (`+inf` for floats): the identity of `min`.
    const HIGHEST: Self;
    /// `self + other`, wrapping for integers.
    fn sum_with(self, other: Self) -> Self;
    /// The smaller; for floats the number when the other is NaN.
    fn min_with(self, other: Self) -> Self;
    /// The larger; for floats the number when the other is NaN.
    fn max_with(self, other: Self) -> Self;
    /// Whether this is a NaN (never, for integers).
    fn is_nan(self) -> bool;

    /// The sum over the whole warp, in every lane (`redux.sync.add` for 32-bit
    /// integers, a shuffle butterfly otherwise).
    #[doc(hidden)]
    #[inline(always)]
    fn warp_sum(self) -> Self {
        butterfly(self, Self::sum_with)
    }
    /// The minimum over the whole warp (`redux.sync.min` for 32-bit integers).
    #[doc(hidden)]
    #[inline(always)]
    fn warp_min(self) -> Self {
        butterfly(self, Self::min_with)
    }
    /// The maximum over the whole warp (`redux.sync.max` for 32-bit integers).
    #[doc(hidden)]
    #[inline(always)]
    fn warp_max(self) -> Self {
        butterfly(self, Self::max_with)
    }
}

/// The [`Numeric`] items shared by the integers: wrapping sum, `Ord` extrema, no NaN.
macro_rules! int_items {
    ($t:ty) => {
        const ZERO: Self = 0;
        const LOWEST: Self = <$t>::MIN;
        const HIGHEST: Self = <$t>::MAX;
        #[inline(always)]
        fn sum_with(self, other: Self) -> Self {
            self.wrapping_add(other)
        }
        #[inline(always)]
        fn min_with(self, other: Self) -> Self {
            Ord::min(self, other)
        }
        #[inline(always)]
        fn max_with(self, other: Self) -> Self {
            Ord::max(self, other)
        }
        #[inline(always)]
        fn is_nan(self) -> bool {
            false
        }
    };
}

macro_rules! numeric_int {
    ($($t:ty),*) => {$(
        impl Numeric for $t {
            int_items!($t);
        }
    )*};
}

numeric_int!(u8, i8, u16, i16, u64, i64, usize, isize);

// 32-bit integers reduce in one `redux.sync` instruction (sm_80+) instead of five
// shuffles. (The warp of the emulator runs the same instruction's semantics.)
macro_rules! numeric_int32 {
    ($($t:ty: $add:expr, $min:ident, $max:ident;)*) => {$(
        impl Numeric for $t {
            int_items!($t);
            #[inline(always)]
            fn warp_sum(self) -> Self {
                ($add)(self)
            }
            #[inline(always)]
            fn warp_min(self) -> Self {
                arch::$min(FULL_MASK, self)
            }
            #[inline(always)]
            fn warp_max(self) -> Self {
                arch::$max(FULL_MASK, self)
            }
        }
    )*};
}

numeric_int32! {
    u32: |v| arch::redux_add_u32(FULL_MASK, v), redux_min_u32, redux_max_u32;
    i32: |v: i32| arch::redux_add_u32(FULL_MASK, v as u32) as i32, redux_min_i32, redux_max_i32;
}

/// minNum: the number when one side is NaN (`a < b` is false for NaN).
#[inline(always)]
fn min_num<T: PartialOrd + Numeric>(a: T, b: T) -> T {
    if a < b || b.is_nan() { a } else { b }
}

/// maxNum, as [`min_num`].
#[inline(always)]
fn max_num<T: PartialOrd + Numeric>(a: T, b: T) -> T {
    if a > b || b.is_nan() { a } else { b }
}

// `f16`/`bf16` take minNum/maxNum spelled out; `f32`/`f64` the core methods, which LLVM
// lowers to PTX `min`/`max` (minNum).
macro_rules! numeric_float {
    ($($t:ty: $zero:expr, $lowest:expr, $highest:expr, $min:expr, $max:expr;)*) => {$(
        impl Numeric for $t {
            const ZERO: Self = $zero;
            const LOWEST: Self = $lowest;
            const HIGHEST: Self = $highest;
            #[inline(always)]
            fn sum_with(self, other: Self) -> Self {
                self + other
            }
            #[inline(always)]
            fn min_with(self, other: Self) -> Self {
                $min(self, other)
            }
            #[inline(always)]
            fn max_with(self, other: Self) -> Self {
                $max(self, other)
            }
            #[inline(always)]
            fn is_nan(self) -> bool {
                <$t>::is_nan(self)
            }
        }
    )*};
}

numeric_float! {
    f16: f16::ZERO, f16::NEG_INFINITY, f16::INFINITY, min_num, max_num;
    bf16: bf16::ZERO, bf16::NEG_INFINITY, bf16::INFINITY, min_num, max_num;
    f32: 0.0, f32::NEG_INFINITY, f32::INFINITY, f32::min, f32::max;
    f64: 0.0, f64::NEG_INFINITY, f64::INFINITY, f64::min, f64::max;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn float_extrema_lose_nan_to_numbers() {
        assert_eq!(Numeric::max_with(f32::NAN, 1.0), 1.0);
        assert_eq!(Numeric::min_with(2.0f64, f64::NAN), 2.0);
        let h = |v: f32| f16::from_f32(v);
        assert_eq!(Numeric::max_with(h(1.5), f16::NAN), h(1.5));
        assert_eq!(Numeric::min_with(f16::NAN, h(-1.5)), h(-1.5));
        assert_eq!(Numeric::sum_with(u8::MAX, 2), 1);
    }

    #[test]
    fn one_lane_shuffles_return_the_value() {
        let v = (1.5f32, 7u32, -3i8, f16::ONE);
        assert_eq!(v.shuffle_xor(u32::MAX, 1), v);
        assert_eq!([2u64, 3].shuffle(u32::MAX, 0), [2, 3]);
        assert!(true.shuffle_down(u32::MAX, 1));
    }
}
