//! What a row operation reads: [`RowInput`] (one operand) and [`RowInputs`] (one, a
//! tuple of them, or none).

use core::mem::size_of;

use super::{Cached, Layout};
use crate::vector::{load, phase};

/// One operand of a row operation: a row (`&[T]`, at least as long as the row) or a
/// [`Cached`] row. Implemented here only.
pub trait RowInput: Copy {
    /// Its element.
    type Elem: Copy;
    /// Vectors it holds in registers (0 for a slice).
    #[doc(hidden)]
    const SLOTS: usize;
    /// Its length in elements.
    #[doc(hidden)]
    fn elements(&self) -> usize;
    #[doc(hidden)]
    fn ptr(&self) -> *const Self::Elem;
    /// Whether it can serve the vector path of a row laid out as `l` in vectors of `N`
    /// (at the same offset from a 16-byte boundary, or cached in that layout).
    #[doc(hidden)]
    fn fast<const N: usize>(&self, l: &Layout) -> bool;
    /// # Safety
    /// `col < self.elements()`.
    #[doc(hidden)]
    unsafe fn at(&self, col: usize) -> Self::Elem;
    /// Columns `col..col + N`: from register slot `slot` if it holds it (`VEC` paths
    /// only), else as one vector load (`VEC`) or `N` loads.
    ///
    /// # Safety
    /// `col + N <= self.elements()`; with `VEC`, `fast::<N>` held for the layout of `col`.
    #[doc(hidden)]
    unsafe fn items<const N: usize, const VEC: bool>(
        &self,
        slot: usize,
        col: usize,
    ) -> [Self::Elem; N];
}

impl<A: Copy> RowInput for &[A] {
    type Elem = A;
    const SLOTS: usize = 0;
    #[inline(always)]
    fn elements(&self) -> usize {
        <[A]>::len(self)
    }
    #[inline(always)]
    fn ptr(&self) -> *const A {
        self.as_ptr()
    }
    #[inline(always)]
    fn fast<const N: usize>(&self, l: &Layout) -> bool {
        // The row's first vector starts at column `head`: this slice's element there
        // must be N-aligned too.
        (phase(self.as_ptr(), N) + l.head as usize).is_multiple_of(N)
    }
    #[inline(always)]
    unsafe fn at(&self, col: usize) -> A {
        // SAFETY: upheld by the caller.
        unsafe { *self.get_unchecked(col) }
    }
    #[inline(always)]
    unsafe fn items<const N: usize, const VEC: bool>(&self, _slot: usize, col: usize) -> [A; N] {
        // SAFETY: upheld by the caller (aligned to N elements on the VEC path).
        unsafe {
            if VEC {
                load::<A, N>(self.as_ptr().add(col))
            } else {
                core::array::from_fn(|k| *self.get_unchecked(col + k))
            }
        }
    }
}

/// The inputs of a row operation: one [`RowInput`], a tuple of two to four, or `()`
/// (none: `row.map_indexed((), |col, ()| …)`).
pub trait RowInputs: Copy {
    /// One element of each input.
    type Item: Copy;
    #[doc(hidden)]
    const SLOTS: usize;
    /// The element size and address of the first input (a read-only share's layout).
    #[doc(hidden)]
    const LEAD_SIZE: usize;
    /// Whether it always reads as vectors in the layout of its own first input (one
    /// slice does; a tuple's other inputs may sit at another offset). Known at compile
    /// time, so that a cache of a slice compiles no element-at-a-time path.
    #[doc(hidden)]
    const OWN_VECTORS: bool = false;
    #[doc(hidden)]
    fn lead(&self) -> *const u8;
    #[doc(hidden)]
    fn min_len(&self) -> usize;
    #[doc(hidden)]
    fn fast<const N: usize>(&self, l: &Layout) -> bool;
    /// # Safety
    /// As [`RowInput::at`], for every input.
    #[doc(hidden)]
    unsafe fn at(&self, col: usize) -> Self::Item;
    /// # Safety
    /// As [`RowInput::items`], for every input.
    #[doc(hidden)]
    unsafe fn items<const N: usize, const VEC: bool>(
        &self,
        slot: usize,
        col: usize,
    ) -> [Self::Item; N];
}

impl RowInputs for () {
    type Item = ();
    const SLOTS: usize = 0;
    const LEAD_SIZE: usize = 1;
    #[inline(always)]
    fn lead(&self) -> *const u8 {
        core::ptr::null()
    }
    #[inline(always)]
    fn min_len(&self) -> usize {
        usize::MAX
    }
    #[inline(always)]
    fn fast<const N: usize>(&self, _l: &Layout) -> bool {
        true
    }
    #[inline(always)]
    unsafe fn at(&self, _col: usize) {}
    #[inline(always)]
    unsafe fn items<const N: usize, const VEC: bool>(&self, _slot: usize, _col: usize) -> [(); N] {
        [(); N]
    }
}

macro_rules! single_input {
    ($([$($g:tt)*] $ty:ty => $own:literal;)*) => {$(
        impl<$($g)*> RowInputs for $ty {
            type Item = <$ty as RowInput>::Elem;
            const SLOTS: usize = <$ty as RowInput>::SLOTS;
            const OWN_VECTORS: bool = $own;
            const LEAD_SIZE: usize = size_of::<<$ty as RowInput>::Elem>();
            #[inline(always)]
            fn lead(&self) -> *const u8 {
                RowInput::ptr(self).cast()
            }
            #[inline(always)]
            fn min_len(&self) -> usize {
                RowInput::elements(self)
            }
            #[inline(always)]
            fn fast<const N: usize>(&self, l: &Layout) -> bool {
                RowInput::fast::<N>(self, l)
            }
            #[inline(always)]
            unsafe fn at(&self, col: usize) -> Self::Item {
                // SAFETY: upheld by the caller.
                unsafe { RowInput::at(self, col) }
            }
            #[inline(always)]
            unsafe fn items<const N: usize, const VEC: bool>(&self, slot: usize, col: usize) -> [Self::Item; N] {
                // SAFETY: upheld by the caller.
                unsafe { RowInput::items::<N, VEC>(self, slot, col) }
            }
        }
    )*};
}

single_input! {
    ['a, A: Copy] &'a [A] => true;
    ['a, A: Copy, const S: usize, Src: RowInputs<Item = A>] Cached<'a, A, S, Src> => false;
    ['a, 'c, A: Copy, const S: usize, Src: RowInputs<Item = A>] &'c Cached<'a, A, S, Src> => false;
}

macro_rules! tuple_inputs {
    ($($name:ident: $t:ident . $idx:tt),+) => {
        impl<$($t: RowInput),+> RowInputs for ($($t,)+) {
            type Item = ($($t::Elem,)+);
            const SLOTS: usize = {
                let mut s = 0;
                $(if $t::SLOTS > s { s = $t::SLOTS; })+
                s
            };
            const LEAD_SIZE: usize = size_of::<<A as RowInput>::Elem>();
            #[inline(always)]
            fn lead(&self) -> *const u8 {
                self.0.ptr().cast()
            }
            #[inline(always)]
            fn min_len(&self) -> usize {
                let mut n = usize::MAX;
                $(n = n.min(self.$idx.elements());)+
                n
            }
            #[inline(always)]
            fn fast<const N: usize>(&self, l: &Layout) -> bool {
                true $(&& self.$idx.fast::<N>(l))+
            }
            #[inline(always)]
            unsafe fn at(&self, col: usize) -> Self::Item {
                // SAFETY: upheld by the caller.
                unsafe { ($(self.$idx.at(col),)+) }
            }
            #[inline(always)]
            unsafe fn items<const N: usize, const VEC: bool>(&self, slot: usize, col: usize) -> [Self::Item; N] {
                // SAFETY: upheld by the caller.
                $(let $name = unsafe { self.$idx.items::<N, VEC>(slot, col) };)+
                core::array::from_fn(|k| ($($name[k],)+))
            }
        }
    };
}

tuple_inputs!(a: A.0, b: B.1);
tuple_inputs!(a: A.0, b: B.1, c: C.2);
tuple_inputs!(a: A.0, b: B.1, c: C.2, d: D.3);
