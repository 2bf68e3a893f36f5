//! A thread's share of a row held in registers ([`Cached`]), for two-pass kernels.

use core::marker::PhantomData;
use core::mem::size_of;

use super::{Layout, MAX_SLOTS, RowInput, RowInputs, Share, fold_vectors, lanes};
use crate::vector::{VECTOR_BYTES, Vector};

/// This thread's share of a row, read once into registers by [`Share::cache`]: up to
/// `S` vectors (`S` × 16 bytes, 4·`S` registers), the rest of the share (the head and
/// tail elements, and vectors past the first `S`) read again from memory whenever it
/// is used. An input of an output row's [`map`](crate::BlockRow::map) in the same
/// layout is served from the registers.
///
/// `Src` is where the row comes from: a slice ([`Share::cache`]), or a function of
/// several rows ([`Share::cache_map`], [`Mapped`]), whose uncached elements are
/// computed again from their inputs.
#[derive(Clone, Copy, Debug)]
pub struct Cached<'a, T, const S: usize, Src = &'a [T]> {
    src: Src,
    layout: Layout,
    /// Whether `src` reads as 16-byte vectors in `layout` (a slice always does:
    /// `Src::OWN_VECTORS`).
    vectors: bool,
    slots: [Vector<u32, 4>; S],
    _row: PhantomData<&'a [T]>,
}

/// A row computed from the rows `inputs` (`f` of their elements at each column): the
/// source of a [`Share::cache_map`].
#[derive(Clone, Copy)]
struct Mapped<I, F, T> {
    inputs: I,
    f: F,
    _out: PhantomData<T>,
}

impl<I: RowInputs, F: Fn(I::Item) -> T + Copy, T: Copy> RowInputs for Mapped<I, F, T> {
    type Item = T;
    const SLOTS: usize = 0;
    const LEAD_SIZE: usize = I::LEAD_SIZE;
    #[inline(always)]
    fn lead(&self) -> *const u8 {
        self.inputs.lead()
    }
    #[inline(always)]
    fn min_len(&self) -> usize {
        self.inputs.min_len()
    }
    #[inline(always)]
    fn fast<const N: usize>(&self, l: &Layout) -> bool {
        self.inputs.fast::<N>(l)
    }
    #[inline(always)]
    unsafe fn at(&self, col: usize) -> T {
        // SAFETY: upheld by the caller.
        (self.f)(unsafe { self.inputs.at(col) })
    }
    #[inline(always)]
    unsafe fn items<const N: usize, const VEC: bool>(&self, _slot: usize, col: usize) -> [T; N] {
        // SAFETY: upheld by the caller (its inputs are slices: no slot to read).
        unsafe { self.inputs.items::<N, VEC>(usize::MAX, col) }.map(self.f)
    }
}

/// This thread's first `S` vectors of `src` laid out as `l`, all loads issued before
/// any is used (loads past the share's last vector repeat it: no branch between them).
///
/// # Safety
/// `src` covers `l.len` columns; with `VEC`, each of its inputs is N-aligned at `l.head`.
#[inline(always)]
unsafe fn load_slots<Src: RowInputs, const N: usize, const S: usize, const VEC: bool>(
    src: &Src,
    l: &Layout,
) -> [Vector<u32, 4>; S] {
    let mut slots = [Vector([0u32; 4]); S];
    if l.vectors > 0 {
        let last = l.vectors - 1;
        each_slot!(j => {
            if j < S {
                let v = (l.t + j as u32 * l.step).min(last);
                // SAFETY: vector v < vectors lies in the row; 16 bytes of N elements
                // (the callers' assertion).
                slots[j] = unsafe {
                    core::mem::transmute_copy(&src.items::<N, VEC>(usize::MAX, l.col(v)))
                };
            }
        });
    }
    slots
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
        // SAFETY: the row in its own layout (aligned at its head).
        let slots =
            with_lanes!(size_of::<T>(), N => unsafe { load_slots::<_, N, S, true>(&x, &l) });
        Cached {
            src: x,
            layout: l,
            vectors: true,
            slots,
            _row: PhantomData,
        }
    }
}

impl<I: RowInputs> Share<I> {
    /// `f` of this thread's elements of the rows `inputs` (their elements at one
    /// column, as `f`'s argument), computed once and held in registers as
    /// [`cache`](Share::cache) holds one row: `S` vectors of `T` (at most
    /// [`MAX_SLOTS`]; `T` divides 16 bytes and has the first input's size). A row
    /// used twice (a residual add then its norm) is read and computed once; what was
    /// not cached is computed again from the inputs whenever it is used.
    #[inline(always)]
    pub fn cache_map<'a, const S: usize, T: Copy>(
        self,
        f: impl Fn(I::Item) -> T + Copy,
    ) -> Cached<'a, T, S, impl RowInputs<Item = T>> {
        const {
            assert!(
                S <= MAX_SLOTS
                    && size_of::<T>() > 0
                    && VECTOR_BYTES.is_multiple_of(size_of::<T>())
                    && I::LEAD_SIZE == size_of::<T>(),
                "cache_map::<S>: at most 16 vectors, of an element type that divides 16 \
                 bytes and has the first input's size"
            )
        };
        let src = Mapped {
            inputs: self.inputs,
            f,
            _out: PhantomData,
        };
        let len = self.row_len();
        let l = Layout::new(
            lanes::<T>(),
            src.lead() as usize,
            size_of::<T>(),
            len,
            self.t,
            self.step,
        );
        let (slots, vectors) = with_lanes!(size_of::<T>(), N => {
            // SAFETY: every input covers `len` columns; the vector path only where they
            // are aligned at the row's vectors.
            unsafe {
                if src.fast::<N>(&l) {
                    (load_slots::<_, N, S, true>(&src, &l), true)
                } else {
                    (load_slots::<_, N, S, false>(&src, &l), false)
                }
            }
        });
        Cached {
            src,
            layout: l,
            vectors,
            slots,
            _row: PhantomData,
        }
    }
}

impl<'a, T: Copy, const S: usize, Src: RowInputs<Item = T>> Cached<'a, T, S, Src> {
    /// Elements in the row.
    #[inline(always)]
    pub fn len(&self) -> usize {
        self.src.min_len()
    }

    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// `f` over this thread's uncached vectors from `first` on (from memory).
    ///
    /// # Safety
    /// `l` is this row's layout.
    #[inline(always)]
    unsafe fn fold_rest<A, const N: usize>(
        &self,
        first: u32,
        acc: A,
        f: &mut impl FnMut(A, usize, T) -> A,
    ) -> A {
        let l = &self.layout;
        // SAFETY: `src` covers the row, aligned at its vectors when `self.vectors`.
        unsafe {
            if Src::OWN_VECTORS || self.vectors {
                fold_vectors::<Src, A, N, true>(&self.src, l, first, acc, f)
            } else {
                fold_vectors::<Src, A, N, false>(&self.src, l, first, acc, f)
            }
        }
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
            acc = f(acc, c, unsafe { src.at(c) });
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
        // SAFETY: this row's layout.
        acc = unsafe { self.fold_rest::<A, N>(l.t + S as u32 * l.step, acc, &mut f) };
        for c in l.tail_cols() {
            // SAFETY: a column of the row.
            acc = f(acc, c, unsafe { src.at(c) });
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
        // SAFETY: this row's layout.
        acc = unsafe { self.fold_rest::<A, N>(l.t + S as u32 * l.step, acc, &mut rest) };
        for c in l.head_cols().chain(l.tail_cols()) {
            // SAFETY: a column of the row.
            acc = op(acc, map(unsafe { self.src.at(c) }));
        }
        acc
    }
}

impl<'a, A: Copy, const S: usize, Src: RowInputs<Item = A>> RowInput for Cached<'a, A, S, Src> {
    type Elem = A;
    const SLOTS: usize = S;
    #[inline(always)]
    fn elements(&self) -> usize {
        self.src.min_len()
    }
    #[inline(always)]
    fn ptr(&self) -> *const A {
        self.src.lead().cast()
    }
    #[inline(always)]
    fn fast<const N: usize>(&self, l: &Layout) -> bool {
        // Its registers hold the row's vectors when it was laid out as the row is.
        N * size_of::<A>() == VECTOR_BYTES && self.layout == *l
    }
    #[inline(always)]
    unsafe fn at(&self, col: usize) -> A {
        // SAFETY: upheld by the caller.
        unsafe { self.src.at(col) }
    }
    #[inline(always)]
    unsafe fn items<const N: usize, const VEC: bool>(&self, slot: usize, col: usize) -> [A; N] {
        if VEC && N * size_of::<A>() == VECTOR_BYTES && slot < S {
            // SAFETY: 16 bytes of N elements; `fast` held, so slot `slot` holds `col`.
            unsafe { self.slot::<N>(slot) }
        } else if VEC && (Src::OWN_VECTORS || self.vectors) {
            // SAFETY: upheld by the caller; `src` reads as vectors in this layout.
            unsafe { self.src.items::<N, true>(usize::MAX, col) }
        } else {
            // SAFETY: upheld by the caller.
            unsafe { self.src.items::<N, false>(usize::MAX, col) }
        }
    }
}

impl<'c, 'a, A: Copy, const S: usize, Src: RowInputs<Item = A>> RowInput
    for &'c Cached<'a, A, S, Src>
{
    type Elem = A;
    const SLOTS: usize = S;
    #[inline(always)]
    fn elements(&self) -> usize {
        RowInput::elements(*self)
    }
    #[inline(always)]
    fn ptr(&self) -> *const A {
        RowInput::ptr(*self)
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
