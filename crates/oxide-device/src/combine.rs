//! Combining functions for reductions: the `op` of [`warp::reduce`](crate::warp::reduce),
//! [`block::reduce`](crate::block::reduce) and a thread's own fold, for any
//! [`Numeric`] type.
//!
//! Each is commutative and associative (for floats, up to rounding for [`sum`]), which
//! is what a butterfly over lanes asks: every lane then holds the same result, and any
//! order of combination gives it.
//!
//! ```
//! use oxide_device::prelude::*;
//! // A thread's candidates, then the same function across the block.
//! let best = [(1.0f32, 0u32), (3.0, 1), (3.0, 2), (-1.0, 3)]
//!     .into_iter()
//!     .fold((f32::NEG_INFINITY, u32::MAX), combine::arg_max);
//! assert_eq!(best, (3.0, 1));
//! assert_eq!(block::reduce(best, combine::arg_max), (3.0, 1)); // a one-thread block
//! ```

use crate::shuffle::{Lane, Numeric, Shuffle};

/// `a + b` (wrapping for integers).
#[inline(always)]
pub fn sum<T: Numeric>(a: T, b: T) -> T {
    a.sum_with(b)
}

/// The smaller (for floats `minNum`: a NaN loses to a number).
#[inline(always)]
pub fn min<T: Numeric>(a: T, b: T) -> T {
    a.min_with(b)
}

/// The larger (for floats `maxNum`: a NaN loses to a number).
#[inline(always)]
pub fn max<T: Numeric>(a: T, b: T) -> T {
    a.max_with(b)
}

/// Of two `(value, index)` candidates, the one `np.argmax` would pick: a NaN above
/// every number, then the larger value, ties to the smaller index. Start a fold with
/// `(T::LOWEST, I::MAX)` (or the first element). Over a row's share, in column order,
/// `block_share().arg_max()` picks the same with less work per element.
#[inline(always)]
pub fn arg_max<T: Numeric, I: Shuffle + Ord>(a: (T, I), b: (T, I)) -> (T, I) {
    if first_by(a, b, |x, y| x > y) { a } else { b }
}

/// [`arg_max`]'s counterpart for `np.argmin`: a NaN first, then the smaller value,
/// ties to the smaller index. Start a fold with `(T::HIGHEST, I::MAX)`.
#[inline(always)]
pub fn arg_min<T: Numeric, I: Shuffle + Ord>(a: (T, I), b: (T, I)) -> (T, I) {
    if first_by(a, b, |x, y| x < y) { a } else { b }
}

/// Whether `a` ranks first: NaN first (the lower index among NaNs), then `better`,
/// then the lower index. Written with `&`/`|` on booleans, not `match` or `||`, so it
/// compiles to comparisons and selects: no branch per element in a thread's fold.
#[inline(always)]
fn first_by<T: Numeric, I: Ord>(a: (T, I), b: (T, I), better: impl Fn(T, T) -> bool) -> bool {
    let (a_nan, b_nan) = (a.0.is_nan(), b.0.is_nan());
    // With a NaN on both sides `better` is false both ways: the lower index decides.
    let ranked = better(a.0, b.0) | (!better(b.0, a.0) & (a.1 <= b.1));
    (a_nan & !b_nan) | ((a_nan == b_nan) & ranked)
}

/// Sums of `x` and `x²` in one pass: `(Σx, Σx²)` pairs add componentwise.
#[inline(always)]
pub fn sum_pair<T: Numeric>(a: (T, T), b: (T, T)) -> (T, T) {
    (a.0.sum_with(b.0), a.1.sum_with(b.1))
}

/// A running mean and variance (Welford): `count`, `mean`, and `m2` = the sum of
/// squared deviations from the mean. [`Welford::push`] adds a value; `welford` (this
/// function) merges two partial results (Chan et al.'s parallel form), so a thread's
/// accumulators reduce across the block with
/// `block::reduce(acc, combine::welford)`.
#[inline(always)]
pub fn welford(a: Welford, b: Welford) -> Welford {
    let count = a.count + b.count;
    if count == 0.0 {
        return a;
    }
    let delta = b.mean - a.mean;
    let wb = b.count / count;
    Welford {
        count,
        mean: a.mean + delta * wb,
        m2: a.m2 + b.m2 + delta * delta * a.count * wb,
    }
}

/// A Welford accumulator over `f32` values (see [`welford`]); crosses lanes as three
/// words.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Welford {
    /// Values seen (a float, so that merging needs no conversion).
    pub count: f32,
    pub mean: f32,
    /// Σ (x − mean)².
    pub m2: f32,
}

impl Welford {
    /// No values yet.
    pub const EMPTY: Welford = Welford {
        count: 0.0,
        mean: 0.0,
        m2: 0.0,
    };

    /// `self` with `x` added.
    #[inline(always)]
    pub fn push(self, x: f32) -> Welford {
        let count = self.count + 1.0;
        let delta = x - self.mean;
        let mean = self.mean + delta / count;
        Welford {
            count,
            mean,
            m2: self.m2 + delta * (x - mean),
        }
    }

    /// The population variance `m2 / count` (0 when empty).
    #[inline(always)]
    pub fn variance(self) -> f32 {
        if self.count > 0.0 {
            self.m2 / self.count
        } else {
            0.0
        }
    }
}

impl Shuffle for Welford {
    #[inline(always)]
    fn shuffle_lanes(self, mask: u32, lane: Lane) -> Self {
        Welford::from(<(f32, f32, f32)>::from(self).shuffle_lanes(mask, lane))
    }
}

impl From<Welford> for (f32, f32, f32) {
    #[inline(always)]
    fn from(w: Welford) -> Self {
        (w.count, w.mean, w.m2)
    }
}

impl From<(f32, f32, f32)> for Welford {
    #[inline(always)]
    fn from((count, mean, m2): (f32, f32, f32)) -> Self {
        Welford { count, mean, m2 }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arg_extrema_rank_as_numpy() {
        assert_eq!(arg_max((1.0f32, 3u32), (2.0, 5)), (2.0, 5));
        assert_eq!(arg_max((2.0f32, 3u32), (2.0, 1)), (2.0, 1));
        assert_eq!(arg_max((2.0f32, 1u32), (2.0, 3)), (2.0, 1));
        let nan = arg_max((f32::NAN, 7u32), (1.0, 0));
        assert!(nan.0.is_nan() && nan.1 == 7);
        assert_eq!(arg_max((f32::NAN, 7u32), (f32::NAN, 2)).1, 2);
        assert_eq!(arg_min((1.0f32, 3u32), (-2.0, 5)), (-2.0, 5));
        assert_eq!(arg_min((-2.0f32, 9u32), (-2.0, 5)), (-2.0, 5));
        assert_eq!(arg_min((i32::MIN, 9u32), (0, 5)), (i32::MIN, 9));
    }

    #[test]
    fn welford_merges_to_the_whole_sets_moments() {
        let xs = [1.0f32, 4.0, -2.0, 8.5, 3.25, 0.0, 7.0];
        let all = xs.iter().fold(Welford::EMPTY, |w, &x| w.push(x));
        let (a, b) = xs.split_at(3);
        let merged = welford(
            a.iter().fold(Welford::EMPTY, |w, &x| w.push(x)),
            b.iter().fold(Welford::EMPTY, |w, &x| w.push(x)),
        );
        let mean = xs.iter().sum::<f32>() / 7.0;
        let var = xs.iter().map(|x| (x - mean) * (x - mean)).sum::<f32>() / 7.0;
        for w in [all, merged] {
            assert!((w.mean - mean).abs() < 1e-5 && (w.variance() - var).abs() < 1e-4);
        }
        assert_eq!(welford(Welford::EMPTY, Welford::EMPTY), Welford::EMPTY);
        assert_eq!(welford(all, Welford::EMPTY), all);
    }
}
