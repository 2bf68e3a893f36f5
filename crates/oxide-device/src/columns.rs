//! Column (axis-0) reductions: `out[c] = op` over the rows of `x[:, c]`, with
//! `#[launch(columns(out))]`.
//!
//! A block takes strips of [`STRIP_VECTORS`] 16-byte vectors of columns (128 bytes of a
//! row: 32 `f32` columns), strips `block_index, block_index + block_count, …`, so any
//! 1-D grid is right and the policy's grid gives each block one strip. Its threads
//! split the strip: thread `t` owns vector `t % 8` of the strip and the rows
//! `t / 8, t / 8 + blockDim / 8, …`, which it reads four rows at a time as 128-bit loads
//! (a warp reads four whole 128-byte row segments per load); the block then combines its
//! threads' partial vectors through 16 KiB of shared memory, in two rounds, and writes
//! the strip.
//! Matrices whose rows or output are not 16-byte aligned (a view, or a column count that
//! is not a multiple of the vector) take the same path one element at a time.

use core::mem::size_of;

use crate::array::Array2;
use crate::shared::SharedArray;
use crate::vector::{VECTOR_BYTES, load, store};
use crate::{DisjointSlice, thread};

/// Vectors of columns per strip (oxide-abi's `COLUMN_STRIP_BYTES` / 16).
pub const STRIP_VECTORS: usize = 8;

/// Rows a thread loads before it combines any.
const ROWS_IN_FLIGHT: usize = 4;

/// One 16-byte partial per thread of a block of up to 1024.
#[unsafe(link_section = ".oxide.shared")]
static PARTIALS: SharedArray<u128, 1024> = SharedArray::UNINIT;

impl<T: Copy> DisjointSlice<'_, T> {
    /// `self[c] = finish(op(…op(op(x[0, c], x[1, c]), x[2, c])…))` for every column `c`
    /// of the C-contiguous matrix `x` (`self.len() == x.cols()`, or it panics; with
    /// `#[shapes(x[rows, cols], out[cols])]` the check folds away). `identity` is
    /// `op`'s neutral element (`0.0` for a sum, `T::LOWEST` for a max; it is also what a
    /// matrix of no rows gives); `op` must be associative and commutative (the rows are
    /// combined in no fixed order); `finish` maps each total before it is written
    /// (`|s| s / rows as f32` for a mean, `|s| s` for none).
    ///
    /// Every thread of the block calls it (it holds barriers); blocks of up to 1024
    /// threads. `#[launch(columns(out))]` gives a plain call one block per strip.
    ///
    /// ```
    /// use oxide_device::prelude::*;
    ///
    /// #[kernel]
    /// #[shapes(x[rows, cols], out[cols])]
    /// #[launch(columns(out))]
    /// pub fn column_sums(x: Array2<f32>, mut out: DisjointSlice<f32>) {
    ///     out.reduce_columns(x, 0.0, |a, b| a + b, |s| s);
    /// }
    /// # fn main() {
    /// #     let x = [1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0];
    /// #     let mut out = [0.0f32; 3];
    /// #     column_sums(Array2::from_slice(&x, [2, 3]), DisjointSlice::from_mut(&mut out));
    /// #     assert_eq!(out, [5.0, 7.0, 9.0]);
    /// # }
    /// ```
    #[inline(always)]
    pub fn reduce_columns(
        &mut self,
        x: Array2<'_, T>,
        identity: T,
        op: impl Fn(T, T) -> T,
        finish: impl Fn(T) -> T,
    ) {
        const {
            assert!(
                size_of::<T>() > 0 && size_of::<T>() <= VECTOR_BYTES,
                "reduce_columns: elements of 1 to 16 bytes"
            )
        };
        assert!(
            x.cols() == self.len(),
            "reduce_columns: the output has one element per column of x"
        );
        match VECTOR_BYTES / size_of::<T>() {
            16 => self.columns::<16>(x, identity, &op, &finish),
            8 => self.columns::<8>(x, identity, &op, &finish),
            4 => self.columns::<4>(x, identity, &op, &finish),
            2 => self.columns::<2>(x, identity, &op, &finish),
            _ => self.columns::<1>(x, identity, &op, &finish),
        }
    }

    #[inline(always)]
    fn columns<const N: usize>(
        &mut self,
        x: Array2<'_, T>,
        identity: T,
        op: &impl Fn(T, T) -> T,
        finish: &impl Fn(T) -> T,
    ) {
        let (src, dst) = (x.as_ptr(), self.as_mut_ptr());
        let (rows, cols) = (x.rows(), x.cols());
        let aligned = |p: usize| p.is_multiple_of(VECTOR_BYTES);
        let vectors = N * size_of::<T>() == VECTOR_BYTES
            && cols.is_multiple_of(N)
            && aligned(src as usize)
            && aligned(dst as usize);
        // SAFETY: `x` holds rows · cols elements and `self` cols, only this launch's
        // strips write `self`, each strip one block, each column one thread of it.
        unsafe {
            if vectors {
                strips::<T, N, true>(src, dst, rows, cols, identity, op, finish);
            } else {
                strips::<T, N, false>(src, dst, rows, cols, identity, op, finish);
            }
        }
    }
}

/// This block's strips (see the module documentation), in vectors of `N` (`VEC`) or
/// the same columns one element at a time.
///
/// # Safety
/// `src` holds `rows · cols` readable elements, C-contiguous; `dst` `cols` writable
/// ones that no other code writes during the launch; with `VEC` both 16-byte aligned
/// and `cols` a multiple of `N`.
#[inline(always)]
unsafe fn strips<T: Copy, const N: usize, const VEC: bool>(
    src: *const T,
    dst: *mut T,
    rows: usize,
    cols: usize,
    identity: T,
    op: &impl Fn(T, T) -> T,
    finish: &impl Fn(T) -> T,
) {
    let (t, threads) = (
        thread::block_thread_index() as usize,
        thread::block_size() as usize,
    );
    assert!(
        threads <= 1024,
        "reduce_columns: blocks of at most 1024 threads"
    );
    // Vectors per strip: 8, or for a block of fewer threads the largest power of two
    // it holds; shifts, not divisions (a power of two chosen at run time).
    let shift = if threads >= STRIP_VECTORS {
        STRIP_VECTORS.trailing_zeros()
    } else {
        threads.ilog2()
    };
    let width = 1usize << shift;
    let groups = threads >> shift; // threads down each vector
    let (lane, group) = (t & (width - 1), t >> shift);
    let vectors = cols.div_ceil(N);
    let combine = |a: [T; N], b: [T; N]| core::array::from_fn(|k| op(a[k], b[k]));
    // SAFETY (every access): `col + k < cols` checked on the scalar path, implied on
    // the vector path (cols a multiple of N); rows below `rows`.
    let read = |r: usize, col: usize| -> [T; N] {
        unsafe {
            let p = src.add(r * cols + col);
            if VEC {
                load::<T, N>(p)
            } else {
                core::array::from_fn(|k| if col + k < cols { *p.add(k) } else { identity })
            }
        }
    };
    let mut strip = thread::block_index();
    while strip * width < vectors {
        let v = strip * width + lane;
        let mine = group < groups && v < vectors;
        let col = v * N;
        let mut acc = [identity; N];
        if mine {
            let mut r = group;
            // Whole groups of rows: `r + (ROWS_IN_FLIGHT - 1)·groups < rows`.
            let whole = rows.saturating_sub((ROWS_IN_FLIGHT - 1) * groups);
            while r < whole {
                let xs: [[T; N]; ROWS_IN_FLIGHT] =
                    core::array::from_fn(|k| read(r + k * groups, col));
                for x in xs {
                    acc = combine(acc, x);
                }
                r += ROWS_IN_FLIGHT * groups;
            }
            while r < rows {
                acc = combine(acc, read(r, col));
                r += groups;
            }
        }
        let slot = |i: usize| PARTIALS.as_mut_ptr().wrapping_add(i).cast::<[T; N]>();
        // Every thread's slot, even an idle one's (identity), so the combine below
        // needs no check; the barrier before keeps a previous strip's readers safe.
        thread::sync_threads();
        // SAFETY: slot t is this thread's (t < 1024), 16 bytes (N · size <= 16).
        unsafe { slot(t).write(acc) };
        thread::sync_threads();
        // Two rounds, each a chain of about √groups partials: the first `fan` groups
        // each fold every fan-th slot into their own, then group 0 folds those. One
        // chain of all `groups` (128 in a block of 1024) kept the whole block waiting
        // on 8 threads, at the end of every strip.
        let fan = 1usize << groups.ilog2().div_ceil(2);
        if group < fan && v < vectors {
            for g in (group + fan..groups).step_by(fan) {
                // SAFETY: written before the barrier by thread g · width + lane.
                acc = combine(acc, unsafe { slot(g * width + lane).read() });
            }
            // SAFETY: this thread's own slot; no thread reads it in this round.
            unsafe { slot(t).write(acc) };
        }
        thread::sync_threads();
        if group == 0 && v < vectors {
            let mut total = acc;
            for g in 1..fan.min(groups) {
                // SAFETY: written in the first round by thread g · width + lane.
                total = combine(total, unsafe { slot(g * width + lane).read() });
            }
            let out = total.map(finish);
            // SAFETY: this thread's columns of the output (one thread per vector).
            unsafe {
                if VEC {
                    store::<T, N>(dst.add(col), out);
                } else {
                    for (k, &o) in out.iter().enumerate() {
                        if col + k < cols {
                            dst.add(col + k).write(o);
                        }
                    }
                }
            }
        }
        strip += thread::block_count();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::each_thread;

    #[test]
    fn the_strip_is_oxide_abis() {
        // oxide-abi is a host-only dependency here; the launch policy sizes grids by it.
        let bytes = oxide_abi::descriptor::COLUMN_STRIP_BYTES as usize;
        assert_eq!(STRIP_VECTORS * VECTOR_BYTES, bytes);
    }

    #[test]
    fn one_thread_reduces_every_column() {
        // A plain call (and each_thread, with no barriers between threads) is a block
        // of one thread: one strip of one vector at a time.
        let x: std::vec::Vec<f32> = (0..35).map(|v| v as f32).collect();
        let mut out = [0.0f32; 7];
        each_thread(1, 1, || {
            DisjointSlice::from_mut(&mut out).reduce_columns(
                Array2::from_slice(&x, [5, 7]),
                f32::NEG_INFINITY,
                f32::max,
                |m| m + 0.5,
            )
        });
        assert_eq!(out, [28.5, 29.5, 30.5, 31.5, 32.5, 33.5, 34.5]);
    }
}
