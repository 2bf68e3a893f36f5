//! `DisjointSlice<T>`: an output array that every thread may write, each only at its
//! own index. The index is proven by a [`ThreadIndex`], which no two threads share, so
//! safe kernels cannot race on their outputs.

use core::marker::PhantomData;

use crate::thread::ThreadIndex;

/// A device array written one element per thread.
///
/// Kernels receive it as a parameter (`mut out: DisjointSlice<f32>`); the generated
/// entry point builds it from the launch's pointer and length.
#[derive(Debug)]
pub struct DisjointSlice<'a, T> {
    ptr: *mut T,
    len: usize,
    _borrow: PhantomData<&'a mut [T]>,
}

impl<'a, T> DisjointSlice<'a, T> {
    /// # Safety
    /// `ptr` must be valid for reads and writes of `len` elements of `T` for `'a`,
    /// and, for the whole launch, no memory it covers may be accessed other than
    /// through this slice's per-thread elements. `ptr` may dangle when `len` is 0.
    #[inline(always)]
    pub unsafe fn from_raw_parts(ptr: *mut T, len: usize) -> Self {
        DisjointSlice {
            ptr,
            len,
            _borrow: PhantomData,
        }
    }

    /// Borrow an ordinary slice as a `DisjointSlice`: safe, since the borrow is
    /// exclusive. Handy for calling kernels directly in host tests.
    #[inline(always)]
    pub fn from_mut(slice: &'a mut [T]) -> Self {
        // SAFETY: an exclusive borrow of `slice.len()` elements for 'a.
        unsafe { Self::from_raw_parts(slice.as_mut_ptr(), slice.len()) }
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
    pub fn get_mut(&mut self, idx: ThreadIndex) -> Option<&mut T> {
        let i = idx.get();
        if i < self.len {
            // SAFETY: in bounds; only the thread that owns `idx` can reach element `i`.
            Some(unsafe { &mut *self.ptr.add(i) })
        } else {
            None
        }
    }

    /// This thread's `N` contiguous elements `[i * N, (i + 1) * N)` for `i = idx.get()`,
    /// cut short at the end of the slice; `None` when the run starts past the end.
    /// For a thread that handles several elements (vectorised loads, per-thread tiles).
    ///
    /// Threads that all use the same `N` get disjoint runs. (Choosing `N` per thread,
    /// through branches on the thread index, would break that; don't.)
    #[inline(always)]
    pub fn get_chunk_mut<const N: usize>(&mut self, idx: ThreadIndex) -> Option<&mut [T]> {
        let start = idx.get().checked_mul(N)?;
        if start >= self.len {
            return None;
        }
        let len = N.min(self.len - start);
        // SAFETY: in bounds; runs of distinct thread indices do not overlap.
        Some(unsafe { core::slice::from_raw_parts_mut(self.ptr.add(start), len) })
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::__private::emu::{ThreadCoords, set_thread_coords};
    use crate::thread::index_1d;

    #[test]
    fn a_thread_writes_its_own_element() {
        let mut data = [0.0f32; 4];
        for t in 0..6 {
            let previous = set_thread_coords(ThreadCoords {
                thread_idx: [t, 0, 0],
                block_dim: [6, 1, 1],
                ..ThreadCoords::SINGLE
            });
            let mut out = DisjointSlice::from_mut(&mut data);
            if let Some(x) = out.get_mut(index_1d()) {
                *x = t as f32 + 1.0;
            }
            set_thread_coords(previous);
        }
        assert_eq!(data, [1.0, 2.0, 3.0, 4.0]);
    }

    #[test]
    fn chunks_tile_the_slice() {
        let mut data = [0u32; 10];
        for t in 0..5 {
            let previous = set_thread_coords(ThreadCoords {
                thread_idx: [t, 0, 0],
                block_dim: [5, 1, 1],
                ..ThreadCoords::SINGLE
            });
            let mut out = DisjointSlice::from_mut(&mut data);
            match out.get_chunk_mut::<4>(index_1d()) {
                Some(run) => run.iter_mut().for_each(|x| *x += t + 1),
                None => assert!(t >= 3),
            }
            set_thread_coords(previous);
        }
        assert_eq!(data, [1, 1, 1, 1, 2, 2, 2, 2, 3, 3]);
    }

    #[test]
    fn length() {
        let mut data = [1u8; 3];
        let out = DisjointSlice::from_mut(&mut data);
        assert_eq!((out.len(), out.is_empty()), (3, false));
        assert!(DisjointSlice::<u8>::from_mut(&mut []).is_empty());
    }
}
