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

/// A value that can cross lanes: 32-bit values in one shuffle, 64-bit in two, tuples
/// and arrays one part at a time.
pub trait Shuffle: Copy {
    /// `__shfl_sync`: the value of lane `src_lane`.
    fn shuffle(self, mask: u32, src_lane: u32) -> Self;
    /// `__shfl_xor_sync`: the value of lane `lane_id ^ lane_mask`.
    fn shuffle_xor(self, mask: u32, lane_mask: u32) -> Self;
    /// `__shfl_down_sync`: the value of lane `lane_id + delta` (own value past 31).
    fn shuffle_down(self, mask: u32, delta: u32) -> Self;
    /// `__shfl_up_sync`: the value of lane `lane_id - delta` (own value below 0).
    fn shuffle_up(self, mask: u32, delta: u32) -> Self;
}

// Values of up to 32 bits cross lanes in one shuffle of a word; 64-bit values in two,
// low word and high word.
macro_rules! shuffle_32 {
    ($($t:ty: $to:expr, $from:expr;)*) => {$(
        impl Shuffle for $t {
            #[inline(always)]
            fn shuffle(self, mask: u32, src_lane: u32) -> Self {
                ($from)(arch::shfl_idx(mask, ($to)(self), src_lane))
            }
            #[inline(always)]
            fn shuffle_xor(self, mask: u32, lane_mask: u32) -> Self {
                ($from)(arch::shfl_xor(mask, ($to)(self), lane_mask))
            }
            #[inline(always)]
            fn shuffle_down(self, mask: u32, delta: u32) -> Self {
                ($from)(arch::shfl_down(mask, ($to)(self), delta))
            }
            #[inline(always)]
            fn shuffle_up(self, mask: u32, delta: u32) -> Self {
                ($from)(arch::shfl_up(mask, ($to)(self), delta))
            }
        }
    )*};
}

macro_rules! shuffle_64 {
    ($($t:ty: $to:expr, $from:expr;)*) => {$(
        impl Shuffle for $t {
            #[inline(always)]
            fn shuffle(self, mask: u32, src_lane: u32) -> Self {
                ($from)(in_halves(($to)(self), |w| arch::shfl_idx(mask, w, src_lane)))
            }
            #[inline(always)]
            fn shuffle_xor(self, mask: u32, lane_mask: u32) -> Self {
                ($from)(in_halves(($to)(self), |w| arch::shfl_xor(mask, w, lane_mask)))
            }
            #[inline(always)]
            fn shuffle_down(self, mask: u32, delta: u32) -> Self {
                ($from)(in_halves(($to)(self), |w| arch::shfl_down(mask, w, delta)))
            }
            #[inline(always)]
            fn shuffle_up(self, mask: u32, delta: u32) -> Self {
                ($from)(in_halves(($to)(self), |w| arch::shfl_up(mask, w, delta)))
            }
        }
    )*};
}

/// Apply a 32-bit shuffle to both halves of a 64-bit word.
#[inline(always)]
fn in_halves(v: u64, shuffle: impl Fn(u32) -> u32) -> u64 {
    u64::from(shuffle(v as u32)) | (u64::from(shuffle((v >> 32) as u32)) << 32)
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
            fn shuffle(self, mask: u32, src_lane: u32) -> Self {
                ($(self.$i.shuffle(mask, src_lane),)+)
            }
            #[inline(always)]
            fn shuffle_xor(self, mask: u32, lane_mask: u32) -> Self {
                ($(self.$i.shuffle_xor(mask, lane_mask),)+)
            }
            #[inline(always)]
            fn shuffle_down(self, mask: u32, delta: u32) -> Self {
                ($(self.$i.shuffle_down(mask, delta),)+)
            }
            #[inline(always)]
            fn shuffle_up(self, mask: u32, delta: u32) -> Self {
                ($(self.$i.shuffle_up(mask, delta),)+)
            }
        }
    };
}

shuffle_tuple!(A.0, B.1);
shuffle_tuple!(A.0, B.1, C.2);
shuffle_tuple!(A.0, B.1, C.2, D.3);

impl<T: Shuffle, const N: usize> Shuffle for [T; N] {
    #[inline(always)]
    fn shuffle(self, mask: u32, src_lane: u32) -> Self {
        self.map(|v| v.shuffle(mask, src_lane))
    }
    #[inline(always)]
    fn shuffle_xor(self, mask: u32, lane_mask: u32) -> Self {
        self.map(|v| v.shuffle_xor(mask, lane_mask))
    }
    #[inline(always)]
    fn shuffle_down(self, mask: u32, delta: u32) -> Self {
        self.map(|v| v.shuffle_down(mask, delta))
    }
    #[inline(always)]
    fn shuffle_up(self, mask: u32, delta: u32) -> Self {
        self.map(|v| v.shuffle_up(mask, delta))
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
