//! Rows shared by a block: each thread reads and writes its share of a contiguous row
//! as 128-bit vectors, with the row's unaligned ends done one element at a time.
//!
//! The layout ([`Layout`]): a row's elements before its first 16-byte boundary are the
//! *head* (fewer than one vector's worth), then come whole 16-byte vectors (4 × `f32`,
//! 2 × `f64`, 8 × `f16`, …), then the *tail*. Thread `t` of a block of `T` threads owns
//! vectors `t, t + T, t + 2T, …` (a warp reads 512 contiguous bytes per step) and head
//! and tail elements `t, t + T, …`. Every operation on a row uses this one layout, so
//! the threads of a block never write one element twice, whatever they call.
//!
//! - Reading: `x.block_share()` on any `&[T]` (a row of an `Array2`,
//!   `x.row_slice(r)`), or [`block_share`] of a tuple of slices read together, gives
//!   this thread's [`Share`]: [`fold`](Share::fold) and
//!   [`fold_indexed`](Share::fold_indexed) visit its elements with four vector loads in
//!   flight. [`Share::cache`] reads them once into registers ([`Cached`]): a two-pass
//!   kernel (a norm, a softmax) reduces them, then writes from the registers.
//! - Writing: an output row ([`BlockRow`](crate::BlockRow) of a `DisjointSlice`,
//!   [`ArrayRowMut`](crate::array::ArrayRowMut) of a `DisjointArray2`) `map`s its inputs
//!   (rows, broadcast row vectors such as a weight `w[cols]`, cached rows; a scalar
//!   per row is a variable the closure captures) to its elements, and `map_indexed`
//!   gives the column too.
//! - Scanning: an output row's `scan(x, identity, op)` writes the running `op` of a
//!   row (a prefix sum with `0.0` and `+`). It takes the row by value: it writes every
//!   element in a layout of its own (warps own contiguous slices, see `row/scan.rs`).
//!
//! Inputs whose offset from a 16-byte boundary differs from the output's (a view such
//! as `x[:, 1:]`, or a broadcast vector against rows whose length is not a multiple of
//! four) are read one element at a time at the same columns: correct, at the speed of
//! a scalar kernel. Bounds are checked once per row (an input shorter than the row
//! panics); with `#[shapes]` naming the lengths the check folds away.

use core::mem::size_of;

use crate::shuffle::Numeric;
use crate::thread;
use crate::vector::VECTOR_BYTES;

/// The most vectors a [`Cached`] row keeps per thread (16 × 16 bytes: 64 registers).
pub const MAX_SLOTS: usize = 16;

/// `$body` with `$n` bound to the lanes of an element of `$size` bytes (16 bytes'
/// worth, 1 for sizes that do not divide 16), as a constant.
macro_rules! with_lanes {
    ($size:expr, $n:ident => $body:expr) => {
        with_lanes!(@ $size, $n, $body; 1 => 16, 2 => 8, 4 => 4, 8 => 2)
    };
    (@ $size:expr, $n:ident, $body:expr; $($bytes:literal => $lanes:literal),*) => {
        match $size {
            $($bytes => {
                const $n: usize = $lanes;
                $body
            })*
            _ => {
                const $n: usize = 1;
                $body
            }
        }
    };
}

/// `$body` once for each slot index `$j` in `0..MAX_SLOTS`, as straight-line code: a
/// register array indexed in a loop that LLVM leaves rolled moves to local memory.
macro_rules! each_slot {
    ($j:ident => $body:block) => {
        $crate::unrolled!(for $j in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15] $body)
    };
}
const _: () = assert!(MAX_SLOTS == 16, "each_slot! lists the slot indices");

/// `$body` once for each `$k` in `0..GROUP`, as straight-line code.
macro_rules! each_of_group {
    ($k:ident => $body:block) => {
        each_of_group!(@ $k $body 0 1 2 3)
    };
    (@ $k:ident $body:block $($n:literal)*) => {
        $({
            let $k: usize = $n;
            $body
        })*
    };
}
const _: () = assert!(GROUP == 4, "each_of_group! lists the group's indices");

/// Vectors loaded before any is used, in the rolled parts of a row.
const GROUP: u32 = 4;

/// A row's layout for one thread (see the module documentation). Columns are 32-bit:
/// rows are at most `i32::MAX` elements (the launcher's limit on an extent).
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    /// This thread, and the threads sharing the row.
    pub t: u32,
    pub step: u32,
    /// Elements in the row.
    pub len: u32,
    /// Elements in a vector (a constant once inlined).
    pub lanes: u32,
    /// Elements before the first vector boundary (fewer than `lanes`).
    pub head: u32,
    /// Whole vectors after the head.
    pub vectors: u32,
}

impl Layout {
    /// The layout of `len` elements of `size` bytes from address `addr`, in vectors of
    /// `lanes`, for thread `t` of `step`.
    #[inline(always)]
    pub(crate) fn new(
        lanes: usize,
        addr: usize,
        size: usize,
        len: usize,
        t: u32,
        step: u32,
    ) -> Layout {
        assert!(
            len <= i32::MAX as usize,
            "a row has at most 2^31 - 1 elements"
        );
        let len = len as u32;
        let head = ((lanes - addr / size.max(1) % lanes) % lanes) as u32;
        let head = head.min(len);
        Layout {
            t,
            step: step.max(1),
            len,
            lanes: lanes as u32,
            head,
            vectors: (len - head) / lanes as u32,
        }
    }

    /// The layout of `len` elements from `p` for this thread of the block: in 16-byte
    /// vectors when `contiguous`, else one element at a time (a strided row).
    #[inline(always)]
    pub(crate) fn of_block<T>(p: *const T, len: usize, contiguous: bool) -> Layout {
        let (t, step) = (thread::block_thread_index(), thread::block_size());
        let lanes = if contiguous { lanes::<T>() } else { 1 };
        Self::new(lanes, p as usize, size_of::<T>(), len, t, step)
    }

    /// The first column of vector `v`.
    #[inline(always)]
    fn col(&self, v: u32) -> usize {
        (self.head + v * self.lanes) as usize
    }

    /// This thread's head columns (before the first vector).
    #[inline(always)]
    fn head_cols(&self) -> Cols {
        Cols {
            next: self.t,
            end: self.head,
            step: self.step,
        }
    }

    /// This thread's tail columns (after the last vector).
    #[inline(always)]
    fn tail_cols(&self) -> Cols {
        Cols {
            // No overflow: len < 2^31 and t < 1024.
            next: self.head + self.vectors * self.lanes + self.t,
            end: self.len,
            step: self.step,
        }
    }

    /// Every column this thread owns, in increasing order.
    #[inline(always)]
    pub(crate) fn cols(&self) -> impl Iterator<Item = usize> + use<> {
        let l = *self;
        let vectors = Cols {
            next: l.t,
            end: l.vectors,
            step: l.step,
        };
        let body = vectors.flat_map(move |v| l.col(v as u32)..l.col(v as u32) + l.lanes as usize);
        l.head_cols().chain(body).chain(l.tail_cols())
    }
}

/// Columns `next, next + step, …` below `end`. Not `step_by`, which computes its trip
/// count with a division (a `div.u32` per row on the GPU).
#[derive(Clone, Copy, Debug)]
struct Cols {
    next: u32,
    end: u32,
    step: u32,
}

impl Iterator for Cols {
    type Item = usize;

    #[inline(always)]
    fn next(&mut self) -> Option<usize> {
        if self.next < self.end {
            let c = self.next;
            // No overflow: end < 2^31 and step <= 1024.
            self.next += self.step;
            Some(c as usize)
        } else {
            None
        }
    }
}

/// Elements of `T` in one 16-byte vector, or 1 when `T` does not divide 16 bytes.
#[inline(always)]
pub(crate) const fn lanes<T>() -> usize {
    let size = size_of::<T>();
    if size == 0 || size > VECTOR_BYTES || !VECTOR_BYTES.is_multiple_of(size) {
        1
    } else {
        VECTOR_BYTES / size
    }
}

mod cached;
mod inputs;
mod scan;
mod write;

pub use cached::Cached;
pub use inputs::{RowInput, RowInputs};
pub(crate) use scan::scan_row;
pub(crate) use write::write_row;

/// This thread's share of a row read by the whole block: see [`block_share`].
#[derive(Clone, Copy, Debug)]
pub struct Share<I> {
    inputs: I,
    t: u32,
    step: u32,
}

/// This thread's share of `inputs` (a slice, or a tuple of slices read together, each
/// at least as long as the first), split among the block's threads as the module
/// documentation describes. For one slice, `x.block_share()` says the same.
#[inline(always)]
pub fn block_share<I: RowInputs>(inputs: I) -> Share<I> {
    Share {
        inputs,
        t: thread::block_thread_index(),
        step: thread::block_size(),
    }
}

/// `x.block_share()`: [`block_share`] of one slice (in the prelude).
pub trait RowShare<T> {
    /// This thread's share of the row, split among the block's threads.
    fn block_share(&self) -> Share<&[T]>;
}

impl<T: Copy> RowShare<T> for [T] {
    #[inline(always)]
    fn block_share(&self) -> Share<&[T]> {
        block_share(self)
    }
}

impl<I: RowInputs> Share<I> {
    /// Elements in the row (the first input's length).
    #[inline(always)]
    pub fn len(&self) -> usize {
        self.row_len()
    }

    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        self.row_len() == 0
    }

    #[inline(always)]
    fn row_len(&self) -> usize {
        let n = self.inputs.min_len();
        if n == usize::MAX { 0 } else { n }
    }

    /// `f` over this thread's elements (each input's element at one column, as the
    /// item), from `init`: the row read once, four vectors in flight.
    #[inline(always)]
    pub fn fold<A>(self, init: A, mut f: impl FnMut(A, I::Item) -> A) -> A {
        self.fold_indexed(init, |acc, _, x| f(acc, x))
    }

    /// [`fold`](Self::fold) with each element's column.
    #[inline(always)]
    pub fn fold_indexed<A>(self, init: A, f: impl FnMut(A, usize, I::Item) -> A) -> A {
        with_lanes!(I::LEAD_SIZE, N => self.fold_lanes::<N, A>(init, f))
    }

    #[inline(always)]
    fn fold_lanes<const N: usize, A>(
        self,
        init: A,
        mut f: impl FnMut(A, usize, I::Item) -> A,
    ) -> A {
        let len = self.row_len();
        let lead = self.inputs.lead() as usize;
        let l = Layout::new(N, lead, I::LEAD_SIZE, len, self.t, self.step);
        let inputs = self.inputs;
        let mut acc = init;
        // SAFETY (every access): columns below `len`, every input's length; vector
        // accesses only on the VEC path, whose columns are N-aligned in every input.
        unsafe {
            for c in l.head_cols() {
                acc = f(acc, c, inputs.at(c));
            }
            acc = if N > 1 && inputs.fast::<N>(&l) {
                fold_vectors::<I, A, N, true>(&inputs, &l, l.t, acc, &mut f)
            } else {
                fold_vectors::<I, A, N, false>(&inputs, &l, l.t, acc, &mut f)
            };
            for c in l.tail_cols() {
                acc = f(acc, c, inputs.at(c));
            }
        }
        acc
    }
}

impl<T: Numeric> Share<&[T]> {
    /// This thread's `(value, column)` of its share that `np.argmax` picks: a NaN above
    /// every number, then the largest, ties to the first column; `(T::LOWEST,
    /// u32::MAX)` for an empty share. Combine the threads' with
    /// [`block::reduce`](crate::block::reduce) and [`combine::arg_max`].
    ///
    /// A thread meets its columns in ascending order, so a later element wins only by
    /// being larger (or a NaN over a number): one comparison and a select per element,
    /// where a fold through `combine::arg_max` weighs NaNs and indices both ways (enough
    /// extra work per element to leave a wide row's argmax short of memory speed).
    ///
    /// [`combine::arg_max`]: crate::combine::arg_max
    #[inline(always)]
    pub fn arg_max(self) -> (T, u32) {
        self.first_by(T::LOWEST, |v, best| v > best)
    }

    /// [`arg_max`](Self::arg_max)'s counterpart for `np.argmin`: a NaN first, then the
    /// smallest, ties to the first column; `(T::HIGHEST, u32::MAX)` for an empty share.
    #[inline(always)]
    pub fn arg_min(self) -> (T, u32) {
        self.first_by(T::HIGHEST, |v, best| v < best)
    }

    /// The first of this thread's elements that no later one beats: an element replaces
    /// the best so far when `beats` it, is a NaN over a number, or is the first; `(none,
    /// u32::MAX)` when there are none.
    #[inline(always)]
    fn first_by(self, none: T, beats: impl Fn(T, T) -> bool) -> (T, u32) {
        self.fold_indexed((none, u32::MAX), |best, c, v| {
            // `&`/`|` on booleans: selects, no branch per element.
            let take = beats(v, best.0) | (v.is_nan() & !best.0.is_nan()) | (best.1 == u32::MAX);
            if take { (v, c as u32) } else { best }
        })
    }
}

/// `f` over this thread's vectors `first, first + step, …` of the row: groups of
/// [`GROUP`] vectors loaded before any is used (no bounds check between them), then
/// the rest one by one.
///
/// # Safety
/// Every input covers `l.len` columns; with `VEC`, each is N-aligned at `l.head`.
#[inline(always)]
unsafe fn fold_vectors<I: RowInputs, A, const N: usize, const VEC: bool>(
    inputs: &I,
    l: &Layout,
    first: u32,
    init: A,
    f: &mut impl FnMut(A, usize, I::Item) -> A,
) -> A {
    let (step, vectors) = (l.step, l.vectors);
    let mut acc = init;
    let mut v = first;
    // Whole groups: `v + (GROUP - 1)·step < vectors` (no overflow: step <= 1024). After
    // a cache (`first` past the thread's first vector) one vector at a time: that is
    // the rare row longer than the cache, and a group's registers on top of the cache's
    // would raise the whole kernel's register count.
    let groups_below = if first == l.t {
        vectors.saturating_sub((GROUP - 1) * step)
    } else {
        0
    };
    while v < groups_below {
        // SAFETY: the group's vectors are below `vectors`.
        let xs: [[I::Item; N]; GROUP as usize] = core::array::from_fn(|k| unsafe {
            inputs.items::<N, VEC>(usize::MAX, l.col(v + k as u32 * step))
        });
        for (k, x) in xs.iter().enumerate() {
            let col = l.col(v + k as u32 * step);
            for (lane, &item) in x.iter().enumerate() {
                acc = f(acc, col + lane, item);
            }
        }
        v += GROUP * step;
    }
    while v < vectors {
        let col = l.col(v);
        // SAFETY: v < vectors.
        let x = unsafe { inputs.items::<N, VEC>(usize::MAX, col) };
        for (lane, &item) in x.iter().enumerate() {
            acc = f(acc, col + lane, item);
        }
        v += step;
    }
    acc
}

#[cfg(test)]
mod tests;
