//! Scanning a row: [`scan_row`], behind `scan` of [`BlockRow`](crate::BlockRow) and
//! [`ArrayRowMut`](crate::array::ArrayRowMut).
//!
//! A scan carries a running total along the row, so it does not use the row layout of
//! `map` (vector `t + k·blockDim` for thread `t`, which would need a block-wide scan per
//! step). Each warp owns contiguous *slices* of the row's vectors instead (a slice is
//! 32 vectors, one per lane, so loads and stores stay coalesced): a round gives warp
//! `w` the slices `w·P .. (w+1)·P` of it (`P` up to [`SLOTS`], the fewest that cover the
//! row), which its lanes hold in registers. Each slice is scanned within its vectors,
//! then across the warp with shuffles, carrying the warp's running total; then one
//! block-wide scan of the warps' totals (two barriers) gives each warp what precedes
//! it. Rows of up to `SLOTS · 32 · 16 · warps` bytes (32768 `f32` with 1024 threads,
//! 4096 with 128) take one round; longer rows take more, each carrying the total of
//! the ones before. The unaligned head and tail (fewer than one vector each) are
//! folded by every thread from memory.

use core::mem::{align_of, size_of};

use super::{Layout, RowInput};
use crate::arch;
use crate::block;
use crate::shuffle::{FULL_MASK, Shuffle};
use crate::vector::store;

/// Slices (one vector per lane each) a warp holds in registers in one round: 8 × 16
/// bytes, 32 registers a lane.
const SLOTS: usize = 8;
const _: () = assert!(
    SLOTS <= super::MAX_SLOTS,
    "each_slot! lists MAX_SLOTS indices"
);

/// `out[c] = x[0] ⊕ x[1] ⊕ … ⊕ x[c]` (`⊕` = `op`, which must be associative; it need
/// not be commutative) for the row of `len` elements at `out` (column `c` at
/// `out + c·stride`; one element at a time when `stride != 1`).
///
/// # Safety
/// `out` is valid for writes of the row's elements, which during the launch only this
/// block's threads write, and only through this call. Every thread of the block calls
/// it (it holds barriers), and the block is whole warps (it shuffles).
#[inline(always)]
pub(crate) unsafe fn scan_row<T: Shuffle>(
    out: *mut T,
    len: usize,
    stride: usize,
    x: &[T],
    identity: T,
    op: impl Fn(T, T) -> T + Copy,
) {
    const {
        assert!(
            size_of::<T>() <= block::MAX_VALUE_BYTES && align_of::<T>() <= 16,
            "a row scan takes values of at most 32 bytes"
        )
    };
    assert!(
        x.len() >= len,
        "row scan: the input is shorter than the row"
    );
    if stride != 1 {
        let l = Layout::of_block(out, len, false);
        // SAFETY: upheld by the caller; one element at a time.
        unsafe { scan_lanes::<T, 1, false>(out, stride, &l, x, identity, op) };
        return;
    }
    with_lanes!(size_of::<T>(), N => {
        let l = Layout::of_block(out, len, true);
        // SAFETY: upheld by the caller; the vector path only where x's vectors are
        // aligned at the output's.
        unsafe {
            if N > 1 && RowInput::fast::<N>(&x, &l) {
                scan_lanes::<T, N, true>(out, 1, &l, x, identity, op)
            } else {
                scan_lanes::<T, N, false>(out, 1, &l, x, identity, op)
            }
        }
    })
}

/// [`scan_row`] in vectors of `N` (`VEC`: `x` read as vectors too).
///
/// # Safety
/// As [`scan_row`]; `l` is the output row's layout, which `x` covers.
#[inline(always)]
unsafe fn scan_lanes<T: Shuffle, const N: usize, const VEC: bool>(
    out: *mut T,
    stride: usize,
    l: &Layout,
    x: &[T],
    identity: T,
    op: impl Fn(T, T) -> T + Copy,
) {
    // SAFETY (every access): columns below the row's length, which x covers; a thread
    // writes only the columns this function gives it.
    let at = |c: usize| unsafe { out.add(c * stride) };
    let get = |c: usize| unsafe { *x.get_unchecked(c) };
    // A slice is a vector per lane: 32 in a launch, 1 in a plain call outside one.
    let (lane, width) = (arch::lane_id(), arch::warp_lanes());
    let warps = l.step.div_ceil(width);
    let w = l.t / width;
    // The head (fewer than N elements): every thread folds it and writes its columns
    // `t, t + step, …` of it (the row layout's; no division).
    let mut carry = identity;
    let mut mine = l.t as usize;
    for c in 0..l.head as usize {
        carry = op(carry, get(c));
        if c == mine {
            // SAFETY: see above.
            unsafe { at(c).write(carry) };
            mine += l.step as usize;
        }
    }
    let slices = l.vectors.div_ceil(width);
    let per_warp = slices.div_ceil(warps).min(SLOTS as u32);
    let mut first = 0;
    while first < slices {
        let mine = first + w * per_warp;
        let vector = |j: usize| (mine + j as u32) * width + lane;
        // Every load of the round before any is used; vectors past the row's end are
        // the identity.
        let mut v = [[identity; N]; SLOTS];
        each_slot!(j => {
            if j < SLOTS && (j as u32) < per_warp && vector(j) < l.vectors {
                // SAFETY: a vector of the row (aligned in x on the VEC path).
                v[j] = unsafe { RowInput::items::<N, VEC>(&x, usize::MAX, l.col(vector(j))) };
            }
        });
        // Each slice: within the vectors, across the warp, after the warp's running total.
        let mut run = identity;
        each_slot!(j => {
            if j < SLOTS && (j as u32) < per_warp {
                for k in 1..N {
                    v[j][k] = op(v[j][k - 1], v[j][k]);
                }
                let inclusive = crate::warp::inclusive_scan(v[j][N - 1], op);
                let earlier = inclusive.shuffle_up(FULL_MASK, 1);
                let before = if lane == 0 { run } else { op(run, earlier) };
                for e in v[j].iter_mut() {
                    *e = op(before, *e);
                }
                run = op(run, inclusive.shuffle(FULL_MASK, width - 1));
            }
        });
        let (before_warp, round) = block::scan_warp_totals(run, identity, op);
        let base = op(carry, before_warp);
        each_slot!(j => {
            if j < SLOTS && (j as u32) < per_warp && vector(j) < l.vectors {
                let col = l.col(vector(j));
                let e = v[j];
                // SAFETY: this lane's vector of the row, N-aligned in the output.
                unsafe { store::<T, N>(at(col), core::array::from_fn(|k| op(base, e[k]))) };
            }
        });
        carry = op(carry, round);
        first += per_warp * warps;
    }
    // The tail (fewer than N elements): every thread folds it, writing as the head.
    let tail = l.col(l.vectors);
    let mut mine = tail + l.t as usize;
    for c in tail..l.len as usize {
        carry = op(carry, get(c));
        if c == mine {
            // SAFETY: see above.
            unsafe { at(c).write(carry) };
            mine += l.step as usize;
        }
    }
}
