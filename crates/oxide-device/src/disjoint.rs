//! `DisjointSlice<T>`: an output array that every thread may write, each only at its
//! own index. The index is proven by a [`ThreadIndex`], which no two threads share, so
//! safe kernels cannot race on their outputs.
//!
//! The mapping from threads to elements is part of the slice's type, as in cuda-oxide:
//! `DisjointSlice<T>` (= `DisjointSlice<T, Index1D>`) takes `index_1d()` witnesses,
//! `DisjointSlice<T, Index2D<N>>` only `index_2d::<N>()`'s, `DisjointSlice<T,
//! WarpIndex>` only `warp_index()`'s, `DisjointSlice<T, Runtime2DIndex>` (rows of a width
//! the host binds) only `index_2d_runtime(&slice)`'s, so a kernel cannot mix two
//! mappings on one slice.
//! Within `Index1D` the guarantee holds per method: threads that all use `get_mut`
//! (or all `get_chunk_mut::<N>` with one `N`, or all `block_row_mut()`) never share an
//! element; use one of them per slice.

use core::marker::PhantomData;

use crate::thread::{Index1D, IndexFormula, IndexSpace, ThreadIndex};

/// A device array written one element per thread.
///
/// Kernels receive it as a parameter (`mut out: DisjointSlice<f32>`); the generated
/// entry point builds it from the launch's pointer and length.
///
/// `S` is the index space whose witnesses open it (see the module documentation).
#[derive(Debug)]
pub struct DisjointSlice<'a, T, S: IndexSpace = Index1D> {
    ptr: *mut T,
    len: usize,
    space: S::Data,
    _borrow: PhantomData<(&'a mut [T], S)>,
}

impl<'a, T> DisjointSlice<'a, T, Index1D> {
    /// # Safety
    /// As [`from_raw_parts_with_space`](Self::from_raw_parts_with_space).
    #[inline(always)]
    pub unsafe fn from_raw_parts(ptr: *mut T, len: usize) -> Self {
        // SAFETY: upheld by the caller.
        unsafe { Self::from_raw_parts_with_space(ptr, len, ()) }
    }

    /// Borrow an ordinary slice as a `DisjointSlice`: safe, since the borrow is
    /// exclusive. Handy for calling kernels directly in host tests.
    #[inline(always)]
    pub fn from_mut(slice: &'a mut [T]) -> Self {
        Self::from_mut_with_space(slice)
    }
}

impl<'a, T, S: IndexSpace<Data = ()>> DisjointSlice<'a, T, S> {
    /// [`from_mut`](DisjointSlice::from_mut) for a slice of any index space whose
    /// geometry is in its type (`DisjointSlice::<f32, Index2D<64>>::from_mut_with_space(&mut out)`).
    #[inline(always)]
    pub fn from_mut_with_space(slice: &'a mut [T]) -> Self {
        // SAFETY: an exclusive borrow of `slice.len()` elements for 'a.
        unsafe { Self::from_raw_parts_with_space(slice.as_mut_ptr(), slice.len(), ()) }
    }
}

impl<'a, T> DisjointSlice<'a, T, crate::thread::Runtime2DIndex> {
    /// Borrow an ordinary slice as a grid of rows of `row_width` elements (host tests).
    #[inline(always)]
    pub fn from_mut_with_row_width(slice: &'a mut [T], row_width: u32) -> Self {
        // SAFETY: an exclusive borrow of `slice.len()` elements for 'a; one width.
        unsafe { Self::from_raw_parts_with_space(slice.as_mut_ptr(), slice.len(), row_width) }
    }

    /// The row width the host bound to this slice, in elements; the same in every
    /// thread of the launch.
    #[inline(always)]
    pub fn row_width(&self) -> u32 {
        self.space
    }
}

impl<'a, T, S: IndexSpace> DisjointSlice<'a, T, S> {
    /// A slice of `len` elements at `ptr` in the index space `S`, with the data that
    /// space needs (`()`, or a [`Runtime2DIndex`](crate::thread::Runtime2DIndex)
    /// slice's row width), cuda-oxide's form.
    ///
    /// # Safety
    /// `ptr` must be valid for reads and writes of `len` elements of `T` for `'a`,
    /// and, for the whole launch, no memory it covers may be accessed other than
    /// through this slice's per-thread elements. `ptr` may dangle when `len` is 0.
    /// `space` is the same for every thread of the launch (a row width computed per
    /// thread would let two threads reach one element).
    #[inline(always)]
    pub unsafe fn from_raw_parts_with_space(ptr: *mut T, len: usize, space: S::Data) -> Self {
        DisjointSlice {
            ptr,
            len,
            space,
            _borrow: PhantomData,
        }
    }

    #[inline(always)]
    pub fn len(&self) -> usize {
        self.len
    }

    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// This thread's element, or `None` when the thread's index is past the end (the
    /// usual tail of a grid rounded up to whole blocks). Consumes the witness, so a
    /// thread cannot use one index to reach two elements.
    #[inline(always)]
    pub fn get_mut(&mut self, idx: ThreadIndex<S>) -> Option<&mut T> {
        let i = S::resolve(self.space, idx.writable()?)?;
        if i < self.len {
            // SAFETY: in bounds; only the thread that owns `idx` can reach element `i`.
            Some(unsafe { &mut *self.ptr.add(i) })
        } else {
            None
        }
    }

    /// This thread's element and witness in one call (cuda-oxide's
    /// `get_mut_indexed`): `None` where the space gives the thread no element or the
    /// element is past the end. The witness comes back for reading inputs (`idx.get()`).
    #[inline(always)]
    pub fn get_mut_indexed(&mut self) -> Option<(&mut T, ThreadIndex<S>)>
    where
        S: IndexFormula,
    {
        let idx = S::this_thread()?;
        let i = S::resolve(self.space, idx.writable()?)?;
        if i < self.len {
            // SAFETY: as in `get_mut`: the witness is this thread's alone.
            Some((unsafe { &mut *self.ptr.add(i) }, idx))
        } else {
            None
        }
    }

    /// Element `i`, unchecked.
    ///
    /// # Safety
    /// `i < self.len()`, and no other thread may access element `i` while the
    /// reference lives.
    #[inline(always)]
    pub unsafe fn get_unchecked_mut(&mut self, i: usize) -> &mut T {
        // SAFETY: upheld by the caller.
        unsafe { &mut *self.ptr.add(i) }
    }

    /// The base pointer (for intrinsics that take one; writing through it is on you).
    #[inline(always)]
    pub fn as_mut_ptr(&mut self) -> *mut T {
        self.ptr
    }
}

/// Mappings of 1-D launches beyond one element per thread.
impl<'a, T> DisjointSlice<'a, T, Index1D> {
    /// This thread's `N` contiguous elements `[i * N, (i + 1) * N)` for `i = idx.get()`,
    /// cut short at the end of the slice; `None` when the run starts past the end.
    /// For a thread that handles several elements (vectorised loads, per-thread tiles).
    ///
    /// Threads that all use the same `N` get disjoint runs. (Choosing `N` per thread,
    /// through branches on the thread index, would break that; don't.)
    #[inline(always)]
    pub fn get_chunk_mut<const N: usize>(&mut self, idx: ThreadIndex) -> Option<&mut [T]> {
        let start = idx.writable()?.checked_mul(N)?;
        if start >= self.len {
            return None;
        }
        let len = N.min(self.len - start);
        // SAFETY: in bounds; runs of distinct thread indices do not overlap.
        Some(unsafe { core::slice::from_raw_parts_mut(self.ptr.add(start), len) })
    }

    /// The row of this thread's block, for kernels that give each block one row of a
    /// row-major matrix (softmax, layer norm): the slice is cut into `gridDim.x` rows
    /// of `len / gridDim.x` elements, and block `b` owns row `b` (with a 2-D or 3-D grid,
    /// one row per block, blocks numbered x fastest). Within the row each thread
    /// owns a share of the columns in [`crate::row`]'s layout (16-byte vectors
    /// `t, t + blockDim, …` for thread `t`). `None` when the length is not a multiple
    /// of the grid size or the block is past the last row.
    ///
    /// Safe because everything it depends on is the same in every thread: the slice's
    /// length (a kernel argument) and the launch dimensions.
    #[inline(always)]
    pub fn block_row_mut(&mut self) -> Option<BlockRow<'_, T>> {
        // Every block of the grid, x fastest, gets a row (so no two blocks share one).
        let rows = crate::thread::block_count();
        if rows == 0 || !self.len.is_multiple_of(rows) {
            return None;
        }
        let row = crate::thread::block_index();
        let cols = self.len / rows;
        if row >= rows {
            return None;
        }
        // SAFETY: row < rows, so the row's `cols` elements lie inside the slice, and
        // they are this block's alone.
        Some(unsafe { BlockRow::new(self.ptr.add(row * cols), cols, 1, row, 0) })
    }
}

/// One block's row of a [`DisjointSlice`] (see [`DisjointSlice::block_row_mut`]): an
/// [`ArrayRowMut`](crate::array::ArrayRowMut) whose columns are contiguous, so each
/// thread owns its share of them in [`crate::row`]'s layout (16-byte vectors
/// `t, t + blockDim, …`, and the unaligned ends one element per thread). Its `row()` is
/// the block's index ([`thread::block_index`](crate::thread::block_index)).
pub type BlockRow<'s, T> = crate::array::ArrayRowMut<'s, T>;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::__private::emu::{ThreadCoords, set_thread_coords};
    use crate::testing::each_thread;
    use crate::thread::{blockIdx_x, index_1d, threadIdx_x};

    #[test]
    fn a_thread_writes_its_own_element() {
        let mut data = [0.0f32; 4];
        each_thread(1, 6, || {
            let mut out = DisjointSlice::from_mut(&mut data);
            if let Some(x) = out.get_mut(index_1d()) {
                *x = threadIdx_x() as f32 + 1.0;
            }
        });
        assert_eq!(data, [1.0, 2.0, 3.0, 4.0]);
    }

    #[test]
    fn chunks_tile_the_slice() {
        let mut data = [0u32; 10];
        each_thread(1, 5, || {
            let t = threadIdx_x();
            let mut out = DisjointSlice::from_mut(&mut data);
            match out.get_chunk_mut::<4>(index_1d()) {
                Some(run) => run.iter_mut().for_each(|x| *x += t + 1),
                None => assert!(t >= 3),
            }
        });
        assert_eq!(data, [1, 1, 1, 1, 2, 2, 2, 2, 3, 3]);
    }

    #[test]
    fn block_rows_split_by_grid_and_by_vectors() {
        // 16-byte aligned, three rows of 9: thread t of 2 owns vector t of its row (4
        // elements), and the rows' unaligned ends one element per thread.
        let mut data = [crate::vector::Vector([0u32; 4]); 7];
        // SAFETY: seven vectors of four u32.
        let flat = unsafe { core::slice::from_raw_parts_mut(data.as_mut_ptr().cast::<u32>(), 27) };
        for b in 0..3 {
            for t in 0..2 {
                let previous = set_thread_coords(ThreadCoords {
                    thread_idx: [t, 0, 0],
                    block_idx: [b, 0, 0],
                    block_dim: [2, 1, 1],
                    grid_dim: [3, 1, 1],
                });
                let mut out = DisjointSlice::from_mut(&mut *flat);
                let mut row = out.block_row_mut().unwrap();
                assert_eq!((row.cols(), row.row()), (9, b as usize));
                for (col, x) in row.iter_mut() {
                    *x += 100 * b + 10 * t + col as u32;
                }
                set_thread_coords(previous);
            }
        }
        // Row 0: vectors at 0 and 4, tail 8. Row 1 starts at 9: head 9..12, vector
        // 12..16, tail 16, 17. Row 2 at 18: head 18, 19, vector 20..24, tail 24..27.
        // (Head and tail elements go to threads 0, 1, 0, … in turn.)
        #[rustfmt::skip]
        let want = [0, 1, 2, 3, 14, 15, 16, 17, 8,
                    100, 111, 102, 103, 104, 105, 106, 107, 118,
                    200, 211, 202, 203, 204, 205, 206, 217, 208];
        assert_eq!(*flat, want);
        let mut odd = [0u8; 5];
        let previous = set_thread_coords(ThreadCoords {
            grid_dim: [2, 1, 1],
            ..ThreadCoords::SINGLE
        });
        assert!(DisjointSlice::from_mut(&mut odd).block_row_mut().is_none());
        set_thread_coords(previous);
    }

    #[test]
    fn length() {
        let mut data = [1u8; 3];
        let out = DisjointSlice::from_mut(&mut data);
        assert_eq!((out.len(), out.is_empty()), (3, false));
        assert!(DisjointSlice::<u8>::from_mut(&mut []).is_empty());
    }

    fn as_thread(
        thread_idx: [u32; 3],
        block_idx: [u32; 3],
        block_dim: [u32; 3],
        grid_dim: [u32; 3],
    ) -> ThreadCoords {
        set_thread_coords(ThreadCoords {
            thread_idx,
            block_idx,
            block_dim,
            grid_dim,
        })
    }

    #[test]
    fn index_2d_slices_take_their_own_witness() {
        use crate::thread::{Index2D, index_2d};
        // A 2x2 grid of 3x2 blocks over a 5-column array: columns 5 is off the grid.
        let mut data = [0u32; 20];
        for (bx, by, tx, ty) in itertools_grid() {
            let previous = as_thread([tx, ty, 0], [bx, by, 0], [3, 2, 1], [2, 2, 1]);
            let mut out = DisjointSlice::<u32, Index2D<5>>::from_mut_with_space(&mut data);
            if let Some(idx) = index_2d::<5>() {
                let i = idx.get();
                if let Some(x) = out.get_mut(idx) {
                    *x += i as u32 + 1;
                }
            }
            set_thread_coords(previous);
        }
        // Rows 0..4, columns 0..5: each element written once, by its own thread.
        let want: std::vec::Vec<u32> = (1..=20).collect();
        assert_eq!(&data[..], &want[..]);
    }

    fn itertools_grid() -> impl Iterator<Item = (u32, u32, u32, u32)> {
        (0..2).flat_map(|bx| {
            (0..2).flat_map(move |by| {
                (0..3).flat_map(move |tx| (0..2).map(move |ty| (bx, by, tx, ty)))
            })
        })
    }

    #[test]
    fn get_mut_indexed_hands_back_the_witness() {
        let mut data = [0usize; 5];
        for t in 0..8 {
            let previous = as_thread([t, 0, 0], [0, 0, 0], [8, 1, 1], [1, 1, 1]);
            let mut out = DisjointSlice::from_mut(&mut data);
            if let Some((x, idx)) = out.get_mut_indexed() {
                *x = idx.get() * 10;
            }
            set_thread_coords(previous);
        }
        assert_eq!(data, [0, 10, 20, 30, 40]);
        // In a 2-D launch a 1-D witness may not write.
        let previous = as_thread([1, 1, 0], [0, 0, 0], [4, 2, 1], [1, 1, 1]);
        assert!(
            DisjointSlice::from_mut(&mut data)
                .get_mut_indexed()
                .is_none()
        );
        assert!(
            DisjointSlice::from_mut(&mut data)
                .get_mut(index_1d())
                .is_none()
        );
        set_thread_coords(previous);
    }

    #[test]
    fn warp_index_counts_partial_warps() {
        use crate::thread::{WarpIndex, warp_index};
        // Blocks of 48 threads: warps 0 and 1 per block (the second is partial).
        let mut data = [0u32; 6];
        each_thread(3, 48, || {
            let mut out = DisjointSlice::<u32, WarpIndex>::from_mut_with_space(&mut data);
            if let Some(slot) = warp_index().and_then(|w| out.get_mut(w)) {
                *slot += 1 + blockIdx_x() * 100 + threadIdx_x();
            }
        });
        assert_eq!(data, [1, 33, 101, 133, 201, 233]);
    }
}
