//! XOR swizzles of shared-memory offsets and the bank arithmetic to choose one, with
//! cuda-oxide's names (`oxide_device::swizzle::Swizzle`).
//!
//! Shared memory has 32 banks of 4 bytes; a warp reading one column of a row-major
//! tile whose row stride is a multiple of 32 elements hits one bank 32 times. A swizzle
//! XORs bits taken from higher up in the offset into its low bits, so those lanes land
//! on different banks. A swizzle is a bijection, and one that satisfies `M + B <= S`
//! is its own inverse: store and load through the same swizzle and the data comes back
//! where it went in, and disjoint indices stay disjoint.
//!
//! Address arithmetic only (`const fn`s, the same on the GPU and the emulator);
//! combine it with [`crate::SharedArray`].

/// Shared-memory banks.
pub const BANKS: usize = 32;
/// Bytes a bank serves per cycle.
pub const BANK_WIDTH_BYTES: usize = 4;
/// Lanes whose accesses are served together.
pub const WARP_LANES: usize = 32;

/// `offset ^ (((offset >> S) & (2^B - 1)) << M)`: `B` bits read from bit `S` up,
/// XORed in from bit `M` up. `Swizzle<5, 0, S>` makes column reads of an `f32` tile
/// with a row stride of `2^S` elements conflict-free. `M + B <= S` is checked at
/// compile time (otherwise it is not its own inverse).
///
/// (CuTe's `Swizzle<B, M, S>` counts `S` from `M`: it is this type's
/// `Swizzle<B, M, M + S>`.)
pub struct Swizzle<const B: usize, const M: usize, const S: usize>;

impl<const B: usize, const M: usize, const S: usize> Swizzle<B, M, S> {
    const SELF_INVERSE: () = assert!(
        M + B <= S,
        "Swizzle<B, M, S> needs M + B <= S: otherwise applying it twice does not give \
         the offset back"
    );

    /// Bits it scatters.
    pub const BITS: usize = B;
    /// Distinct values the scattered bits take.
    pub const SPREAD: usize = 1 << B;

    /// The swizzled element offset; `apply(apply(x)) == x`.
    #[must_use]
    #[inline(always)]
    pub const fn apply(offset: usize) -> usize {
        let () = Self::SELF_INVERSE;
        let mask = (1usize << B) - 1;
        offset ^ (((offset >> S) & mask) << M)
    }

    /// The offset a swizzled one came from (the same map: it is an involution; the
    /// name says which way the call site goes).
    #[must_use]
    #[inline(always)]
    pub const fn undo(offset: usize) -> usize {
        Self::apply(offset)
    }
}

/// The bank element `elem_offset` (of `elem_size` bytes) is in.
#[must_use]
#[inline(always)]
pub const fn bank_of(elem_offset: usize, elem_size: usize) -> usize {
    (elem_offset * elem_size / BANK_WIDTH_BYTES) % BANKS
}

/// Lanes per bank of the busiest bank for one warp's offsets: 1 is conflict-free, 32
/// fully serialised. Lanes reading one address count separately (the hardware would
/// broadcast them), so this bounds the cost from above.
#[must_use]
pub const fn conflict_degree(offsets: &[usize; WARP_LANES], elem_size: usize) -> usize {
    let mut per_bank = [0usize; BANKS];
    let mut worst = 0;
    let mut lane = 0;
    while lane < WARP_LANES {
        let bank = bank_of(offsets[lane], elem_size);
        per_bank[bank] += 1;
        if per_bank[bank] > worst {
            worst = per_bank[bank];
        }
        lane += 1;
    }
    worst
}

/// How many distinct banks one warp's offsets touch.
#[must_use]
pub const fn banks_used(offsets: &[usize; WARP_LANES], elem_size: usize) -> usize {
    let mut touched = 0u64;
    let mut lane = 0;
    while lane < WARP_LANES {
        touched |= 1 << bank_of(offsets[lane], elem_size);
        lane += 1;
    }
    touched.count_ones() as usize
}

/// The offsets of a warp reading column `col` of a row-major tile (lane `i` reads row
/// `i`): the access swizzles exist for.
#[must_use]
pub const fn column_offsets(row_stride_elems: usize, col: usize) -> [usize; WARP_LANES] {
    lane_offsets(col, row_stride_elems)
}

/// The offsets of a warp reading row `row` (contiguous: conflict-free unswizzled; a
/// swizzle chosen for columns must keep it so).
#[must_use]
pub const fn row_offsets(row: usize, row_stride_elems: usize) -> [usize; WARP_LANES] {
    lane_offsets(row * row_stride_elems, 1)
}

/// Lane `i` at offset `first + i * step`.
const fn lane_offsets(first: usize, step: usize) -> [usize; WARP_LANES] {
    let mut out = [0; WARP_LANES];
    let mut lane = 0;
    while lane < WARP_LANES {
        out[lane] = first + lane * step;
        lane += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn swizzled<const B: usize, const M: usize, const S: usize>(
        offsets: [usize; WARP_LANES],
    ) -> [usize; WARP_LANES] {
        offsets.map(Swizzle::<B, M, S>::apply)
    }

    #[test]
    fn column_reads_of_a_stride_32_tile() {
        let col = column_offsets(32, 7);
        assert_eq!((conflict_degree(&col, 4), banks_used(&col, 4)), (32, 1));
        let five = swizzled::<5, 0, 5>(col);
        assert_eq!((conflict_degree(&five, 4), banks_used(&five, 4)), (1, 32));
        let three = swizzled::<3, 0, 5>(col);
        assert_eq!((conflict_degree(&three, 4), banks_used(&three, 4)), (4, 8));
        let padded = column_offsets(33, 7);
        assert_eq!(conflict_degree(&padded, 4), 1);
    }

    #[test]
    fn rows_stay_conflict_free_and_the_swizzle_undoes_itself() {
        let row = swizzled::<5, 0, 5>(row_offsets(3, 32));
        assert_eq!(conflict_degree(&row, 4), 1);
        for x in 0..4096 {
            assert_eq!(Swizzle::<5, 0, 5>::undo(Swizzle::<5, 0, 5>::apply(x)), x);
            assert_eq!(Swizzle::<2, 1, 7>::apply(Swizzle::<2, 1, 7>::apply(x)), x);
        }
    }
}
