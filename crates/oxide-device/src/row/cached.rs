//! A thread's share of a row held in registers ([`Cached`]), for two-pass kernels.

use core::mem::size_of;

use super::{Layout, MAX_SLOTS, RowInput, Share, fold_vectors, lanes};
use crate::vector::{VECTOR_BYTES, Vector};

/// This thread's share of a row, read once into registers by [`Share::cache`]: up to
/// `S` vectors (`S` × 16 bytes, 4·`S` registers), the rest of the share (the head and
/// tail elements, and vectors past the first `S`) read again from memory whenever it
/// is used. An input of an output row's [`map`](crate::BlockRow::map) in the same
/// layout is served from the registers.
#[derive(Clone, Copy, Debug)]
pub struct Cached<'a, T, const S: usize> {
    src: &'a [T],
    layout: Layout,
    slots: [Vector<u32, 4>; S],
}

impl<'a, T: Copy> Share<&'a [T]> {
    /// Read this thread's first `S` vectors of the row into registers (at most
    /// [`MAX_SLOTS`]; `T` must divide 16 bytes). All `S` loads issue before any is
    /// used. Rows of up to `S · 16 · blockDim` bytes are then read exactly once.
    #[inline(always)]
    pub fn cache<const S: usize>(self) -> Cached<'a, T, S> {
        const {
            assert!(
                S <= MAX_SLOTS && size_of::<T>() > 0 && VECTOR_BYTES.is_multiple_of(size_of::<T>()),
                "cache::<S>: at most 16 vectors, of an element type that divides 16 bytes"
            )
        };
        let x = self.inputs;
        let l = Layout::new(
            lanes::<T>(),
            x.as_ptr() as usize,
            size_of::<T>(),
            x.len(),
            self.t,
            self.step,
        );
        let mut slots = [Vector([0u32; 4]); S];
        if l.vectors > 0 {
            // Loads past the share's last vector repeat it (never used): no branch
            // between the loads.
            let last = l.vectors - 1;
            each_slot!(j => {
                if j < S {
                    let v = (l.t + j as u32 * l.step).min(last);
                    // SAFETY: vector v < vectors lies in the row, at a 16-byte boundary.
                    slots[j] = unsafe { x.as_ptr().add(l.col(v)).cast::<Vector<u32, 4>>().read() };
                }
            });
        }
        Cached {
            src: x,
            layout: l,
            slots,
        }
    }
}

impl<'a, T: Copy, const S: usize> Cached<'a, T, S> {
    /// Elements in the row.
    #[inline(always)]
    pub fn len(&self) -> usize {
        self.src.len()
    }

    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        self.src.is_empty()
    }

    /// Slot `j` as its `N` elements.
    ///
    /// # Safety
    /// `N * size_of::<T>() == 16`.
    #[inline(always)]
    unsafe fn slot<const N: usize>(&self, j: usize) -> [T; N] {
        // SAFETY: 16 bytes either way (the caller's promise); any bits are a valid
        // T-array here, since they were loaded from initialised Ts.
        unsafe { core::mem::transmute_copy(&self.slots[j]) }
    }

    /// `f` over this thread's elements, from `init` (registers first, then what was
    /// not cached, from memory).
    #[inline(always)]
    pub fn fold<A>(&self, init: A, mut f: impl FnMut(A, T) -> A) -> A {
        self.fold_indexed(init, |acc, _, x| f(acc, x))
    }

    /// [`fold`](Self::fold) with each element's column.
    #[inline(always)]
    pub fn fold_indexed<A>(&self, init: A, f: impl FnMut(A, usize, T) -> A) -> A {
        with_lanes!(size_of::<T>(), N => self.fold_lanes::<N, A>(init, f))
    }

    #[inline(always)]
    fn fold_lanes<const N: usize, A>(&self, init: A, mut f: impl FnMut(A, usize, T) -> A) -> A {
        let l = self.layout;
        let src = self.src;
        let mut acc = init;
        for c in l.head_cols() {
            // SAFETY: a column of the row.
            acc = f(acc, c, unsafe { *src.get_unchecked(c) });
        }
        each_slot!(j => {
            let v = l.t + j as u32 * l.step;
            if j < S && v < l.vectors {
                let col = l.col(v);
                // SAFETY: N elements fill 16 bytes (cache's assertion).
                let x = unsafe { self.slot::<N>(j) };
                for (lane, &item) in x.iter().enumerate() {
                    acc = f(acc, col + lane, item);
                }
            }
        });
        // SAFETY: the source row in its own layout (aligned at its head).
        acc = unsafe {
            fold_vectors::<&[T], A, N, true>(&src, &l, l.t + S as u32 * l.step, acc, &mut f)
        };
        for c in l.tail_cols() {
            // SAFETY: a column of the row.
            acc = f(acc, c, unsafe { *src.get_unchecked(c) });
        }
        acc
    }

    /// `op` over `map` of each of this thread's elements, as a balanced tree over the
    /// registers (a chain of `op` only for what was not cached), `identity` for a
    /// thread with no elements. `op` must be associative; the tree keeps the dependent
    /// operations few where a fold would chain all of them.
    #[inline(always)]
    pub fn map_reduce<A: Copy>(
        &self,
        identity: A,
        map: impl Fn(T) -> A,
        op: impl Fn(A, A) -> A,
    ) -> A {
        with_lanes!(size_of::<T>(), N => self.map_reduce_lanes::<N, A>(identity, &map, &op))
    }

    #[inline(always)]
    fn map_reduce_lanes<const N: usize, A: Copy>(
        &self,
        identity: A,
        map: &impl Fn(T) -> A,
        op: &impl Fn(A, A) -> A,
    ) -> A {
        let l = self.layout;
        let mut parts = [identity; S];
        each_slot!(j => {
            if j < S {
                // SAFETY: N elements fill 16 bytes (cache's assertion).
                let x = unsafe { self.slot::<N>(j) };
                let p = tree(x.map(map), identity, op);
                parts[j] = if l.t + j as u32 * l.step < l.vectors { p } else { identity };
            }
        });
        let mut acc = tree(parts, identity, op);
        let mut rest = |a: A, _: usize, x: T| op(a, map(x));
        // SAFETY: as in `fold_lanes`.
        acc = unsafe {
            fold_vectors::<&[T], A, N, true>(&self.src, &l, l.t + S as u32 * l.step, acc, &mut rest)
        };
        for c in l.head_cols().chain(l.tail_cols()) {
            // SAFETY: a column of the row.
            acc = op(acc, map(unsafe { *self.src.get_unchecked(c) }));
        }
        acc
    }
}

impl<'a, A: Copy, const S: usize> RowInput for Cached<'a, A, S> {
    type Elem = A;
    const SLOTS: usize = S;
    #[inline(always)]
    fn elements(&self) -> usize {
        self.src.len()
    }
    #[inline(always)]
    fn ptr(&self) -> *const A {
        self.src.as_ptr()
    }
    #[inline(always)]
    fn fast<const N: usize>(&self, l: &Layout) -> bool {
        // Its registers hold the row's vectors when it was laid out as the row is.
        N * size_of::<A>() == VECTOR_BYTES && self.layout == *l
    }
    #[inline(always)]
    unsafe fn at(&self, col: usize) -> A {
        // SAFETY: upheld by the caller.
        unsafe { *self.src.get_unchecked(col) }
    }
    #[inline(always)]
    unsafe fn items<const N: usize, const VEC: bool>(&self, slot: usize, col: usize) -> [A; N] {
        if VEC && N * size_of::<A>() == VECTOR_BYTES && slot < S {
            // SAFETY: 16 bytes of N elements; `fast` held, so slot `slot` holds `col`.
            unsafe { self.slot::<N>(slot) }
        } else {
            // SAFETY: upheld by the caller.
            unsafe { RowInput::items::<N, VEC>(&self.src, slot, col) }
        }
    }
}

impl<'c, 'a, A: Copy, const S: usize> RowInput for &'c Cached<'a, A, S> {
    type Elem = A;
    const SLOTS: usize = S;
    #[inline(always)]
    fn elements(&self) -> usize {
        self.src.len()
    }
    #[inline(always)]
    fn ptr(&self) -> *const A {
        self.src.as_ptr()
    }
    #[inline(always)]
    fn fast<const N: usize>(&self, l: &Layout) -> bool {
        RowInput::fast::<N>(*self, l)
    }
    #[inline(always)]
    unsafe fn at(&self, col: usize) -> A {
        // SAFETY: upheld by the caller.
        unsafe { RowInput::at(*self, col) }
    }
    #[inline(always)]
    unsafe fn items<const N: usize, const VEC: bool>(&self, slot: usize, col: usize) -> [A; N] {
        // SAFETY: upheld by the caller.
        unsafe { RowInput::items::<N, VEC>(*self, slot, col) }
    }
}

/// `op` over `v` as a balanced tree (`identity` when empty).
#[inline(always)]
pub(super) fn tree<A: Copy, const M: usize>(
    mut v: [A; M],
    identity: A,
    op: &impl Fn(A, A) -> A,
) -> A {
    let mut n = M;
    if n == 0 {
        return identity;
    }
    while n > 1 {
        let half = n / 2;
        for i in 0..half {
            v[i] = op(v[2 * i], v[2 * i + 1]);
        }
        if n % 2 == 1 {
            v[half] = v[n - 1];
        }
        n = half + n % 2;
    }
    v[0]
}
