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
//!
//! Inputs whose offset from a 16-byte boundary differs from the output's (a view such
//! as `x[:, 1:]`, or a broadcast vector against rows whose length is not a multiple of
//! four) are read one element at a time at the same columns: correct, at the speed of
//! a scalar kernel. Bounds are checked once per row (an input shorter than the row
//! panics); with `#[shapes]` naming the lengths the check folds away.

use core::mem::{MaybeUninit, size_of};

use crate::thread;
use crate::vector::{VECTOR_BYTES, Vector, load, phase, store};

/// The most vectors a [`Cached`] row keeps per thread (16 × 16 bytes: 64 registers).
pub const MAX_SLOTS: usize = 16;

/// `$body` with `$n` bound to the lanes of an element of `$size` bytes (16 bytes'
/// worth, 1 for sizes that do not divide 16), as a constant.
macro_rules! with_lanes {
    ($size:expr, $n:ident => $body:expr) => {
        match $size {
            1 => {
                const $n: usize = 16;
                $body
            }
            2 => {
                const $n: usize = 8;
                $body
            }
            4 => {
                const $n: usize = 4;
                $body
            }
            8 => {
                const $n: usize = 2;
                $body
            }
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
        each_slot!(@ $j $body 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15)
    };
    (@ $j:ident $body:block $($n:literal)*) => {
        $({
            let $j: usize = $n;
            $body
        })*
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
const fn lanes<T>() -> usize {
    let size = size_of::<T>();
    if size == 0 || size > VECTOR_BYTES || !VECTOR_BYTES.is_multiple_of(size) {
        1
    } else {
        VECTOR_BYTES / size
    }
}

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
    ($([$($g:tt)*] $ty:ty;)*) => {$(
        impl<$($g)*> RowInputs for $ty {
            type Item = <$ty as RowInput>::Elem;
            const SLOTS: usize = <$ty as RowInput>::SLOTS;
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
    ['a, A: Copy] &'a [A];
    ['a, A: Copy, const S: usize] Cached<'a, A, S>;
    ['a, 'c, A: Copy, const S: usize] &'c Cached<'a, A, S>;
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
fn tree<A: Copy, const M: usize>(mut v: [A; M], identity: A, op: &impl Fn(A, A) -> A) -> A {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::each_thread;
    use std::vec::Vec;

    /// Buffers of 16-byte-aligned f32s, so that views start at a known phase.
    fn aligned(n: usize, f: impl Fn(usize) -> f32) -> Vec<Vector<f32, 4>> {
        (0..n.div_ceil(4))
            .map(|v| Vector(core::array::from_fn(|k| f(4 * v + k))))
            .collect()
    }

    fn flat(v: &[Vector<f32, 4>]) -> &[f32] {
        // SAFETY: Vector<f32, 4> is four f32s.
        unsafe { core::slice::from_raw_parts(v.as_ptr().cast(), 4 * v.len()) }
    }

    fn flat_mut(v: &mut [Vector<f32, 4>]) -> &mut [f32] {
        // SAFETY: as `flat`.
        unsafe { core::slice::from_raw_parts_mut(v.as_mut_ptr().cast(), 4 * v.len()) }
    }

    #[test]
    fn a_share_visits_every_element_once_in_order() {
        let data = aligned(96, |i| i as f32);
        for start in 0..4 {
            for len in [0usize, 1, 3, 4, 5, 17, 40, 63, 90] {
                let row = &flat(&data)[start..start + len];
                for block in [1u32, 2, 3, 8, 32] {
                    let mut seen = std::vec![0u32; len];
                    each_thread(1, block, || {
                        let mut last = None;
                        let visited = row.block_share().fold_indexed(0, |n, col, x| {
                            assert_eq!(x, (start + col) as f32);
                            assert!(last < Some(col), "in increasing order");
                            last = Some(col);
                            seen[col] += 1;
                            n + 1
                        });
                        assert!(visited <= len);
                    });
                    assert!(
                        seen.iter().all(|&n| n == 1),
                        "start {start} len {len} block {block}"
                    );
                }
            }
        }
    }

    #[test]
    fn a_tuple_share_reads_its_inputs_together() {
        let (x, y) = (aligned(64, |i| i as f32), aligned(64, |i| 2.0 * i as f32));
        for (xs, ys) in [(0, 0), (1, 1), (0, 3)] {
            let (a, b) = (&flat(&x)[xs..xs + 50], &flat(&y)[ys..ys + 50]);
            let mut total = 0.0;
            each_thread(1, 4, || {
                total += block_share((a, b)).fold(0.0, |s, (p, q)| s + p * q)
            });
            let want: f32 = a.iter().zip(b).map(|(p, q)| p * q).sum();
            assert_eq!(total, want);
        }
    }

    #[test]
    fn a_cached_row_maps_into_an_output_row_in_every_phase() {
        let x = aligned(100, |i| i as f32 + 0.5);
        let w = aligned(100, |i| (i % 7) as f32);
        for (xs, ws, os) in [(0, 0, 0), (1, 1, 1), (2, 0, 2), (0, 1, 3), (3, 3, 0)] {
            for len in [0usize, 1, 2, 5, 8, 31, 64, 93] {
                for block in [1u32, 3, 4, 16] {
                    let mut out = aligned(100, |_| -1.0);
                    let o = &mut flat_mut(&mut out)[os..os + len];
                    let (xr, wr) = (&flat(&x)[xs..xs + len], &flat(&w)[ws..ws + len]);
                    let mut sums = Vec::new();
                    each_thread(1, block, || {
                        let cached = xr.block_share().cache::<2>();
                        sums.push(cached.fold(0.0, |s, v| s + v));
                        assert_eq!(
                            cached.map_reduce(0.0, |v| v, |a, b| a + b),
                            sums[sums.len() - 1]
                        );
                        // SAFETY: `o` is this test's; every thread writes its own columns.
                        unsafe {
                            write_row(o.as_mut_ptr(), len, 1, (&cached, wr), |c, (v, q)| {
                                v * q + c as f32
                            })
                        };
                    });
                    for c in 0..len {
                        assert_eq!(
                            o[c],
                            xr[c] * wr[c] + c as f32,
                            "phases {xs}/{ws}/{os} len {len}"
                        );
                    }
                    assert_eq!(sums.iter().sum::<f32>(), xr.iter().sum::<f32>());
                }
            }
        }
    }

    #[test]
    fn a_strided_row_is_written_one_element_at_a_time() {
        let mut out = [0.0f32; 12];
        each_thread(1, 2, || {
            // SAFETY: columns 0, 3, 6, 9 of `out`, each written by one thread.
            unsafe { write_row(out.as_mut_ptr(), 4, 3, (), |c, ()| c as f32 + 1.0) };
        });
        assert_eq!(
            out,
            [1.0, 0.0, 0.0, 2.0, 0.0, 0.0, 3.0, 0.0, 0.0, 4.0, 0.0, 0.0]
        );
    }

    #[test]
    fn trees_combine_every_element() {
        assert_eq!(tree([1, 2, 3, 4, 5], 0, &|a, b| a + b), 15);
        assert_eq!(tree::<i32, 0>([], 7, &|a, b| a + b), 7);
        assert_eq!(tree([9], 0, &|a: i32, b| a.max(b)), 9);
    }
}
