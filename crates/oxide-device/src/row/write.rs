//! Writing an output row: [`write_row`], behind `map`/`map_indexed` of
//! [`BlockRow`](crate::BlockRow) and [`ArrayRowMut`](crate::array::ArrayRowMut).

use core::mem::{MaybeUninit, size_of};

use super::{GROUP, Layout, RowInputs};
use crate::vector::store;

/// `out[c] = f(c, inputs[c])` for every column `c` this thread owns of the row of
/// `len` elements at `out` (in `Layout::of_block`'s layout; `contiguous` false: a
/// strided row, whose column `c` is at `out + c·stride`, one element at a time).
///
/// # Safety
/// `out` is valid for writes of the row's elements, which during the launch only this
/// block's threads write, each only the columns this layout gives it.
#[inline(always)]
pub(crate) unsafe fn write_row<T: Copy, I: RowInputs>(
    out: *mut T,
    len: usize,
    stride: usize,
    inputs: I,
    f: impl Fn(usize, I::Item) -> T,
) {
    assert!(
        inputs.min_len() >= len,
        "row map: an input is shorter than the row"
    );
    if stride != 1 {
        let l = Layout::of_block(out, len, false);
        for c in l.cols() {
            // SAFETY: c < len <= every input's length; this thread's column.
            unsafe { out.add(c * stride).write(f(c, inputs.at(c))) };
        }
        return;
    }
    // SAFETY: upheld by the caller.
    with_lanes!(size_of::<T>(), N => unsafe { write_row_lanes::<T, I, N>(out, len, inputs, &f) })
}

/// [`write_row`] of a contiguous row in vectors of `N`.
///
/// # Safety
/// As [`write_row`]; every input covers `len` columns.
#[inline(always)]
unsafe fn write_row_lanes<T: Copy, I: RowInputs, const N: usize>(
    out: *mut T,
    len: usize,
    inputs: I,
    f: &impl Fn(usize, I::Item) -> T,
) {
    let l = Layout::of_block(out, len, true);
    // SAFETY (each access): columns below `len`, this thread's own; vectors only on the
    // VEC path, where every input is N-aligned at the row's vectors.
    unsafe {
        for c in l.head_cols() {
            out.add(c).write(f(c, inputs.at(c)));
        }
        if N > 1 && inputs.fast::<N>(&l) {
            write_vectors::<T, I, N, true>(out, &l, &inputs, f);
        } else {
            write_vectors::<T, I, N, false>(out, &l, &inputs, f);
        }
        for c in l.tail_cols() {
            out.add(c).write(f(c, inputs.at(c)));
        }
    }
}

/// This thread's vectors of the row: with cached inputs (`VEC`), their slots first
/// (every load, then every store), then groups of [`GROUP`] vectors (loads before
/// stores, no bounds check between them), then the rest one by one.
///
/// # Safety
/// As [`write_row_lanes`].
#[inline(always)]
unsafe fn write_vectors<T: Copy, I: RowInputs, const N: usize, const VEC: bool>(
    out: *mut T,
    l: &Layout,
    inputs: &I,
    f: &impl Fn(usize, I::Item) -> T,
) {
    let (step, vectors) = (l.step, l.vectors);
    // SAFETY: the column is this thread's, its vector below `vectors`.
    let put = |col: usize, x: [I::Item; N]| unsafe {
        store::<T, N>(out.add(col), core::array::from_fn(|k| f(col + k, x[k])))
    };
    let mut v = l.t;
    if VEC && I::SLOTS > 0 {
        if vectors > 0 {
            // In groups of GROUP slots: every load of a group, then its stores (a
            // group's loads in flight together; the other inputs' values of only one
            // group held in registers beside the caches).
            let last = vectors - 1;
            each_slot!(g => {
                if g < I::SLOTS && g.is_multiple_of(GROUP as usize) {
                    let mut xs = [const { MaybeUninit::<[I::Item; N]>::uninit() }; GROUP as usize];
                    each_of_group!(k => {
                        let j = g + k;
                        if j < I::SLOTS {
                            let vj = (l.t + j as u32 * step).min(last);
                            // SAFETY: vj < vectors (clamped): a vector of the row.
                            xs[k].write(unsafe { inputs.items::<N, VEC>(j, l.col(vj)) });
                        }
                    });
                    each_of_group!(k => {
                        let j = g + k;
                        let vj = l.t + j as u32 * step;
                        if j < I::SLOTS && vj < vectors {
                            // SAFETY: written above.
                            put(l.col(vj), unsafe { xs[k].assume_init() });
                        }
                    });
                }
            });
        }
        v = l.t + I::SLOTS as u32 * step;
    }
    let groups_below = vectors.saturating_sub((GROUP - 1) * step);
    while v < groups_below {
        // SAFETY: the group's vectors are below `vectors`.
        let xs: [[I::Item; N]; GROUP as usize] = core::array::from_fn(|k| unsafe {
            inputs.items::<N, VEC>(usize::MAX, l.col(v + k as u32 * step))
        });
        for (k, x) in xs.into_iter().enumerate() {
            put(l.col(v + k as u32 * step), x);
        }
        v += GROUP * step;
    }
    while v < vectors {
        let col = l.col(v);
        // SAFETY: v < vectors.
        put(col, unsafe { inputs.items::<N, VEC>(usize::MAX, col) });
        v += step;
    }
}
