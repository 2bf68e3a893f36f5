//! Shaped arrays: kernel parameters of 1 to 3 dimensions that carry their extents and
//! strides (in elements), so a kernel reads `a[[i, j]]` with a bounds check and takes
//! its dimensions from its arrays instead of from scalars the caller passes.
//!
//! - [`Array<T, R, L>`] (`Array1<T>`, `Array2<T>`, `Array3<T>`): read-only.
//! - [`DisjointArray<T, R, L>`] (`DisjointArray1<T>` …): an output each thread writes
//!   only at its own element, proven by an [`ElementIndex`] witness from
//!   [`index_nd`] (thread `(z, y, x)` of the grid owns element `[z, y, x]`), or one row
//!   per block ([`DisjointArray::block_row_mut`]), as `DisjointSlice` does.
//!
//! The layout is part of the type: [`C`] (the default) is C-contiguous, so rows are
//! plain slices and the innermost stride is the constant 1 (the fast path); [`Strided`]
//! takes any non-negative strides (F-order arrays, `b.T`, sliced views). The launcher
//! checks the layout, the ranks and the kernel's `#[shapes(...)]` contract before launch.

use core::marker::PhantomData;

use crate::thread::{ThreadIndex, index_2d_col, index_2d_row};

mod sealed {
    pub trait Sealed {}
    impl Sealed for super::C {}
    impl Sealed for super::Strided {}
}

/// How an array's elements lie in memory: [`C`] or [`Strided`].
pub trait Layout: sealed::Sealed + 'static {
    /// Whether strides are read at run time (else the array is C-contiguous).
    const STRIDED: bool;
}

/// C-contiguous (row-major, no gaps): the launcher refuses any other view.
#[derive(Debug, Clone, Copy)]
pub struct C;
/// Any non-negative strides, in elements.
#[derive(Debug, Clone, Copy)]
pub struct Strided;

impl Layout for C {
    const STRIDED: bool = false;
}
impl Layout for Strided {
    const STRIDED: bool = true;
}

/// Row-major strides of a C-contiguous array of `shape`.
#[inline(always)]
fn c_strides<const R: usize>(shape: [usize; R]) -> [usize; R] {
    let mut s = [1usize; R];
    let mut d = R;
    while d > 1 {
        d -= 1;
        s[d - 1] = s[d] * shape[d];
    }
    s
}

/// The strides an array of layout `L` keeps: the given ones, or C's for `shape`.
#[inline(always)]
fn layout_strides<const R: usize, L: Layout>(shape: [usize; R], strides: [usize; R]) -> [usize; R] {
    if L::STRIDED {
        strides
    } else {
        c_strides(shape)
    }
}

/// The element offset of `idx`, or None when an index is past its extent.
#[inline(always)]
fn offset<const R: usize, L: Layout>(
    shape: &[usize; R],
    strides: &[usize; R],
    idx: [usize; R],
) -> Option<usize> {
    let mut at = 0usize;
    let mut d = 0;
    while d < R {
        if idx[d] >= shape[d] {
            return None;
        }
        // C: the innermost stride is 1 by the layout, a constant for LLVM.
        let stride = if !L::STRIDED && d + 1 == R {
            1
        } else {
            strides[d]
        };
        at += idx[d] * stride;
        d += 1;
    }
    Some(at)
}

/// What the shaped arrays ([`Array`], [`DisjointArray`]: both hold `ptr`, `shape` and
/// `strides`) share: `Debug`, `from_raw_parts` (its safety section given), the shape
/// accessors, and the 2-D `rows`/`cols`.
macro_rules! shaped_array {
    ($name:ident, $ptr:ty, $(#[$safety:meta])*) => {
        impl<T, const R: usize, L: Layout> core::fmt::Debug for $name<'_, T, R, L> {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                f.debug_struct(stringify!($name))
                    .field("shape", &self.shape)
                    .field("strides", &self.strides)
                    .finish()
            }
        }

        impl<T, const R: usize, L: Layout> $name<'_, T, R, L> {
            $(#[$safety])*
            #[inline(always)]
            pub unsafe fn from_raw_parts(ptr: $ptr, shape: [usize; R], strides: [usize; R]) -> Self {
                let strides = layout_strides::<R, L>(shape, strides);
                $name {
                    ptr,
                    shape,
                    strides,
                    _borrow: PhantomData,
                }
            }

            shaped_array!(@accessors);
        }

        impl<T, L: Layout> $name<'_, T, 2, L> {
            #[inline(always)]
            pub fn rows(&self) -> usize {
                self.shape[0]
            }

            #[inline(always)]
            pub fn cols(&self) -> usize {
                self.shape[1]
            }
        }
    };
    (@accessors) => {
        /// Extents, outermost first.
        #[inline(always)]
        pub fn shape(&self) -> [usize; R] {
            self.shape
        }

        /// The extent of dimension `axis` (panics past the rank).
        #[inline(always)]
        pub fn dim(&self, axis: usize) -> usize {
            self.shape[axis]
        }

        /// Strides in elements, outermost first.
        #[inline(always)]
        pub fn strides(&self) -> [usize; R] {
            self.strides
        }

        /// Number of elements.
        #[inline(always)]
        pub fn len(&self) -> usize {
            self.shape.iter().product()
        }

        #[inline(always)]
        pub fn is_empty(&self) -> bool {
            self.len() == 0
        }
    };
}

/// A read-only shaped array (see the module documentation).
pub struct Array<'a, T, const R: usize, L: Layout = C> {
    ptr: *const T,
    shape: [usize; R],
    strides: [usize; R],
    _borrow: PhantomData<(&'a [T], L)>,
}

pub type Array1<'a, T, L = C> = Array<'a, T, 1, L>;
pub type Array2<'a, T, L = C> = Array<'a, T, 2, L>;
pub type Array3<'a, T, L = C> = Array<'a, T, 3, L>;

impl<T, const R: usize, L: Layout> Clone for Array<'_, T, R, L> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T, const R: usize, L: Layout> Copy for Array<'_, T, R, L> {}

shaped_array!(
    Array,
    *const T,
    /// # Safety
    /// Every element `ptr + Σ idx[d]·strides[d]` with `idx < shape` must be valid for
    /// reads for `'a` and not written meanwhile; for [`C`], `strides` are ignored and the
    /// array must be C-contiguous. `ptr` may dangle when an extent is 0.
);

impl<'a, T, const R: usize, L: Layout> Array<'a, T, R, L> {
    /// The `S`-dimensional array (`S = R - 1`) at index `i` of the outermost dimension:
    /// the rest of the shape and strides (panics past the end).
    #[inline(always)]
    fn outer<const S: usize>(&self, i: usize) -> Array<'a, T, S, L> {
        if i >= self.shape[0] {
            out_of_bounds();
        }
        Array {
            // SAFETY: i < shape[0], so the sub-array starts inside the array.
            ptr: unsafe { self.ptr.add(i * self.strides[0]) },
            shape: core::array::from_fn(|k| self.shape[k + 1]),
            strides: core::array::from_fn(|k| self.strides[k + 1]),
            _borrow: PhantomData,
        }
    }

    /// The element at `idx`, or None when it is out of bounds.
    #[inline(always)]
    pub fn get(&self, idx: [usize; R]) -> Option<&'a T> {
        let at = offset::<R, L>(&self.shape, &self.strides, idx)?;
        // SAFETY: in bounds, so inside the array (from_raw_parts' contract).
        Some(unsafe { &*self.ptr.add(at) })
    }

    /// # Safety
    /// `idx` must be in bounds.
    #[inline(always)]
    pub unsafe fn get_unchecked(&self, idx: [usize; R]) -> &'a T {
        let mut at = 0;
        for (d, i) in idx.iter().enumerate() {
            at += i * if !L::STRIDED && d + 1 == R {
                1
            } else {
                self.strides[d]
            };
        }
        // SAFETY: upheld by the caller.
        unsafe { &*self.ptr.add(at) }
    }

    #[inline(always)]
    pub fn as_ptr(&self) -> *const T {
        self.ptr
    }
}

/// Panics unless `len` elements are exactly `shape`'s (a C-order view over a slice).
#[track_caller]
fn assert_fits<const R: usize>(len: usize, shape: [usize; R]) {
    assert_eq!(
        len,
        shape.iter().product::<usize>(),
        "shape does not fit the data"
    );
}

impl<'a, T, const R: usize> Array<'a, T, R, C> {
    /// A C-order view of `data` with `shape` (safe: the borrow is shared). Handy for
    /// calling kernels directly in host tests. Panics unless `data.len()` is the
    /// product of `shape`.
    pub fn from_slice(data: &'a [T], shape: [usize; R]) -> Self {
        assert_fits(data.len(), shape);
        // SAFETY: C-contiguous over exactly `data`, borrowed for 'a.
        unsafe { Self::from_raw_parts(data.as_ptr(), shape, shape) }
    }

    /// All elements in row-major order, as one slice (C layout only).
    #[inline(always)]
    pub fn as_slice(&self) -> &'a [T] {
        // SAFETY: C-contiguous, len() elements from ptr (non-null and aligned if empty:
        // the launch ABI makes it so).
        unsafe { core::slice::from_raw_parts(self.ptr, self.len()) }
    }
}

impl<'a, T, const R: usize, L: Layout> core::ops::Index<[usize; R]> for Array<'a, T, R, L> {
    type Output = T;
    #[inline(always)]
    fn index(&self, idx: [usize; R]) -> &T {
        match self.get(idx) {
            Some(x) => x,
            None => out_of_bounds(),
        }
    }
}

impl<'a, T, L: Layout> core::ops::Index<(usize, usize)> for Array<'a, T, 2, L> {
    type Output = T;
    #[inline(always)]
    fn index(&self, (i, j): (usize, usize)) -> &T {
        &self[[i, j]]
    }
}

impl<'a, T, L: Layout> core::ops::Index<usize> for Array<'a, T, 1, L> {
    type Output = T;
    #[inline(always)]
    fn index(&self, i: usize) -> &T {
        &self[[i]]
    }
}

#[cold]
#[inline(never)]
#[track_caller]
fn out_of_bounds() -> ! {
    panic!("array index out of bounds")
}

impl<'a, T, L: Layout> Array<'a, T, 1, L> {
    /// The elements in order.
    #[inline(always)]
    pub fn iter(&self) -> impl Iterator<Item = &'a T> + 'a {
        let (ptr, n, s) = (self.ptr, self.shape[0], self.strides[0]);
        let s = if L::STRIDED { s } else { 1 };
        // SAFETY: i < n, in bounds.
        (0..n).map(move |i| unsafe { &*ptr.add(i * s) })
    }
}

impl<'a, T, L: Layout> Array<'a, T, 2, L> {
    /// Row `i` as a 1-D array (panics past the last row).
    #[inline(always)]
    pub fn row(&self, i: usize) -> Array1<'a, T, L> {
        self.outer(i)
    }

    /// The rows in order.
    #[inline(always)]
    pub fn iter_rows(&self) -> impl Iterator<Item = Array1<'a, T, L>> + 'a {
        let a = *self;
        (0..a.shape[0]).map(move |i| a.row(i))
    }
}

impl<'a, T> Array<'a, T, 2, C> {
    /// Row `i` as a slice (C layout; panics past the last row).
    #[inline(always)]
    pub fn row_slice(&self, i: usize) -> &'a [T] {
        if i >= self.shape[0] {
            out_of_bounds();
        }
        // SAFETY: C-contiguous rows of cols() elements.
        unsafe { core::slice::from_raw_parts(self.ptr.add(i * self.shape[1]), self.shape[1]) }
    }
}

impl<'a, T, L: Layout> Array<'a, T, 3, L> {
    /// The 2-D array at index `i` of the outermost dimension.
    #[inline(always)]
    pub fn matrix(&self, i: usize) -> Array2<'a, T, L> {
        self.outer(i)
    }
}

/// A thread's element of a rank-`R` output, as a witness only that thread holds:
/// `[y, x]` (2-D) or `[z, y, x]` (3-D) of its global thread coordinates, from
/// [`index_nd`]. Neither `Copy` nor `Clone`.
#[derive(Debug)]
pub struct ElementIndex<const R: usize> {
    idx: [usize; R],
    _thread: PhantomData<*mut ()>,
}

impl<const R: usize> ElementIndex<R> {
    /// The coordinates, outermost first (for reading inputs).
    #[inline(always)]
    pub fn get(&self) -> [usize; R] {
        self.idx
    }
}

/// This thread's element of a rank-`R` array: `[x]` in a 1-D launch, `[y, x]` in a
/// launch with no z extent, `[z, y, x]` in any launch, where `x = blockIdx.x ·
/// blockDim.x + threadIdx.x` and likewise for y and z. No two threads get the same
/// one; None when the launch has more dimensions than `R` (the coordinates would
/// repeat along the extra one).
#[inline(always)]
pub fn index_nd<const R: usize>() -> Option<ElementIndex<R>> {
    use crate::thread::{blockDim_y, blockDim_z, blockIdx_z, gridDim_y, gridDim_z, threadIdx_z};
    let mut idx = [0usize; R];
    let extra_z = (blockDim_z() | gridDim_z()) != 1;
    let extra_y = (blockDim_y() | gridDim_y()) != 1;
    match R {
        1 if !extra_y && !extra_z => idx[0] = index_2d_col(),
        2 if !extra_z => {
            idx[0] = index_2d_row();
            idx[1] = index_2d_col();
        }
        3 => {
            idx[0] = blockIdx_z() as usize * blockDim_z() as usize + threadIdx_z() as usize;
            idx[1] = index_2d_row();
            idx[2] = index_2d_col();
        }
        _ => return None,
    }
    Some(ElementIndex {
        idx,
        _thread: PhantomData,
    })
}

/// A shaped output written one element per thread, or one row per block (see the
/// module documentation). Within one launch use one of `get_mut` and
/// `block_row_mut` per array: mixed, two threads could get the same element.
pub struct DisjointArray<'a, T, const R: usize, L: Layout = C> {
    ptr: *mut T,
    shape: [usize; R],
    strides: [usize; R],
    _borrow: PhantomData<(&'a mut [T], L)>,
}

pub type DisjointArray1<'a, T, L = C> = DisjointArray<'a, T, 1, L>;
pub type DisjointArray2<'a, T, L = C> = DisjointArray<'a, T, 2, L>;
pub type DisjointArray3<'a, T, L = C> = DisjointArray<'a, T, 3, L>;

shaped_array!(
    DisjointArray,
    *mut T,
    /// # Safety
    /// As [`Array::from_raw_parts`], for reads and writes; no two in-bounds indices may
    /// reach the same element, and for the whole launch the memory may be accessed only
    /// through this array's per-thread elements.
);

impl<'a, T, const R: usize, L: Layout> DisjointArray<'a, T, R, L> {
    /// This thread's element, or None when the witness is outside the array (a grid
    /// rounded up past an edge).
    #[inline(always)]
    pub fn get_mut(&mut self, idx: ElementIndex<R>) -> Option<&mut T> {
        let at = offset::<R, L>(&self.shape, &self.strides, idx.idx)?;
        // SAFETY: in bounds; the witness is this thread's alone, and distinct indices
        // reach distinct elements (from_raw_parts' contract).
        Some(unsafe { &mut *self.ptr.add(at) })
    }

    /// [`index_nd`] and [`get_mut`](Self::get_mut) in one call: the element and its
    /// coordinates.
    #[inline(always)]
    pub fn get_mut_indexed(&mut self) -> Option<(&mut T, [usize; R])> {
        let idx = index_nd::<R>()?;
        let at = idx.get();
        self.get_mut(idx).map(|x| (x, at))
    }

    #[inline(always)]
    pub fn as_mut_ptr(&mut self) -> *mut T {
        self.ptr
    }
}

impl<'a, T, const R: usize> DisjointArray<'a, T, R, C> {
    /// A C-order output over `data` with `shape` (safe: the borrow is exclusive).
    /// Panics unless `data.len()` is the product of `shape`.
    pub fn from_mut_slice(data: &'a mut [T], shape: [usize; R]) -> Self {
        assert_fits(data.len(), shape);
        // SAFETY: C-contiguous over exactly `data`, borrowed exclusively for 'a.
        unsafe { Self::from_raw_parts(data.as_mut_ptr(), shape, shape) }
    }

    /// The same memory as a flat `DisjointSlice` in row-major order (C layout), for
    /// code written against slices; consumes the array, so the two cannot be mixed.
    #[inline(always)]
    pub fn into_flat(self) -> crate::DisjointSlice<'a, T> {
        // SAFETY: C-contiguous len() elements, exclusively this array's.
        unsafe { crate::DisjointSlice::from_raw_parts(self.ptr, self.len()) }
    }
}

impl<'a, T, L: Layout> DisjointArray<'a, T, 2, L> {
    /// One row per block: block `b` ([`thread::block_index`](crate::thread::block_index),
    /// x fastest) owns row `b`, and each of its threads a share of the columns in
    /// [`crate::row`]'s layout (read its inputs with `map`, `x.row_slice(r)`, or a
    /// cached share). None for a block past the last row. Safe because the mapping
    /// depends only on the launch, the array's shape and address, the same in every
    /// thread.
    #[inline(always)]
    pub fn block_row_mut(&mut self) -> Option<ArrayRowMut<'_, T>> {
        let row = crate::thread::block_index();
        if row >= self.shape[0] {
            return None;
        }
        // SAFETY: row < rows: the whole row lies inside the array; this block owns it.
        Some(unsafe { self.row_part(row, 0, self.shape[1]) })
    }

    /// One segment of a row per block, the grid walking every row's first segment
    /// before any row's second: block `b` ([`thread::block_index`](crate::thread::block_index))
    /// owns segment `b / rows` of row `b % rows`. The segments split each row evenly
    /// among `block_count / rows` of them, in whole 16-byte vectors; a block with no
    /// segment gets None. With `#[launch(tiles(out, block = (64, 1), tile = (1024,
    /// 1)))]` a plain call launches one block per 1024 columns of each row, four vectors
    /// a thread (the block's set-up, a few divisions, is paid once per thread).
    ///
    /// For kernels that copy or map rows whose inputs repeat (a gather whose ids
    /// repeat): at any time the running blocks work on one band of columns of every
    /// row, so a row read again while its band is running comes from the L2. A row
    /// reduction needs the whole row in one block: [`block_row_mut`](Self::block_row_mut).
    /// Any grid of at least one block per row is right (fewer traps), whatever its
    /// shape: the `tiles` policy puts the rows on grid axis y, at most 65,535 of them;
    /// more rows take an explicit 1-D grid of rows × segments blocks.
    #[inline(always)]
    pub fn block_segment_mut(&mut self) -> Option<ArrayRowMut<'_, T>> {
        let (rows, cols) = (self.shape[0], self.shape[1]);
        let blocks = crate::thread::block_count();
        assert!(
            blocks >= rows,
            "block_segment_mut: a grid of at least one block per row"
        );
        if rows == 0 {
            return None;
        }
        let segments = blocks / rows;
        // Whole vectors: each segment starts at the row's offset from a 16-byte boundary.
        let width = cols
            .div_ceil(segments)
            .next_multiple_of(crate::row::lanes::<T>());
        let b = crate::thread::block_index();
        let (row, first) = (b % rows, (b / rows) * width);
        if b >= segments * rows || first >= cols {
            return None;
        }
        // SAFETY: row < rows and first < cols, so the segment's min(width, cols - first)
        // elements lie inside the row; this block owns them (b names one (row, segment)).
        Some(unsafe { self.row_part(row, first, width.min(cols - first)) })
    }

    /// Columns `first..first + len` of row `row`, as a block's row handle.
    ///
    /// # Safety
    /// `row < rows` and `first + len <= cols`; no other block takes these elements.
    #[inline(always)]
    unsafe fn row_part(&mut self, row: usize, first: usize, len: usize) -> ArrayRowMut<'_, T> {
        let stride = if L::STRIDED { self.strides[1] } else { 1 };
        // SAFETY: upheld by the caller.
        unsafe {
            ArrayRowMut::new(
                self.ptr.add(row * self.strides[0] + first * stride),
                len,
                stride,
                row,
                first,
            )
        }
    }
}

/// One block's row of a [`DisjointArray2`] (see [`DisjointArray::block_row_mut`]): each
/// thread owns its share of the columns in [`crate::row`]'s layout (16-byte vectors
/// `t, t + blockDim, …` and the unaligned ends one element per thread; one element at a
/// time, `t, t + blockDim, …`, when the columns are strided), the same for every
/// method, so they may be mixed.
#[derive(Debug)]
pub struct ArrayRowMut<'s, T> {
    ptr: *mut T,
    cols: usize,
    stride: usize,
    row: usize,
    /// The array column of its first element (0 for a whole row).
    first: usize,
    _borrow: PhantomData<&'s mut [T]>,
}

impl<T> ArrayRowMut<'_, T> {
    /// # Safety
    /// `ptr + c·stride` for `c < cols` are the row's elements (array columns `first..`),
    /// valid for reads and writes for the borrow and written by no other block.
    #[inline(always)]
    pub(crate) unsafe fn new(
        ptr: *mut T,
        cols: usize,
        stride: usize,
        row: usize,
        first: usize,
    ) -> Self {
        ArrayRowMut {
            ptr,
            cols,
            stride,
            row,
            first,
            _borrow: PhantomData,
        }
    }
}

impl<T: Copy> ArrayRowMut<'_, T> {
    /// The row's index.
    #[inline(always)]
    pub fn row(&self) -> usize {
        self.row
    }

    /// Its elements: the row's columns, or a segment's ([`columns`](Self::columns)).
    #[inline(always)]
    pub fn cols(&self) -> usize {
        self.cols
    }

    /// The array columns it holds: `0..cols` for a row of
    /// [`block_row_mut`](DisjointArray::block_row_mut), a segment's for
    /// [`block_segment_mut`](DisjointArray::block_segment_mut). Slice an input row by it
    /// (`&x[seg.columns()]`) to read the same columns: `map` and `map_indexed` number
    /// this handle's elements from 0.
    #[inline(always)]
    pub fn columns(&self) -> core::ops::Range<usize> {
        self.first..self.first + self.cols
    }

    /// This thread's `(column, element)` pairs, in increasing column order.
    #[inline(always)]
    pub fn iter_mut(&mut self) -> impl Iterator<Item = (usize, &mut T)> + '_ {
        let (ptr, stride) = (self.ptr, self.stride);
        crate::row::Layout::of_block(ptr, self.cols, stride == 1)
            .cols()
            // SAFETY: col < cols, one of this thread's columns (no other thread's).
            .map(move |col| (col, unsafe { &mut *ptr.add(col * stride) }))
    }

    /// `row[c] = f(inputs[c])` for each of this thread's columns `c`, as 128-bit
    /// loads and stores: `inputs` is a row (`&[T]` of at least `cols` elements: a row
    /// of an input, `x.row_slice(r)`, or a broadcast row vector), a
    /// [`Cached`](crate::row::Cached) row (served from registers), a tuple of them, or
    /// `()`. See [`crate::row`].
    #[inline(always)]
    pub fn map<I: crate::row::RowInputs>(&mut self, inputs: I, f: impl Fn(I::Item) -> T) {
        self.map_indexed(inputs, |_, x| f(x))
    }

    /// [`map`](Self::map) with the column: `row[c] = f(c, inputs[c])`.
    #[inline(always)]
    pub fn map_indexed<I: crate::row::RowInputs>(
        &mut self,
        inputs: I,
        f: impl Fn(usize, I::Item) -> T,
    ) {
        // SAFETY: the row's elements are this block's; `write_row` writes each
        // thread's columns of the layout `iter_mut` uses too.
        unsafe { crate::row::write_row(self.ptr, self.cols, self.stride, inputs, f) }
    }

    /// The running `op` of `x` along the row: `row[c] = x[0] ⊕ … ⊕ x[c]` (`⊕` = `op`,
    /// associative, not necessarily commutative; `identity` its neutral element), e.g.
    /// a prefix sum with `0.0` and `|a, b| a + b`. `x` is read once, as 128-bit vectors
    /// when it has the row's offset from a 16-byte boundary, and the row is written
    /// once. Every thread of the block calls it (it holds barriers) and the block is
    /// whole warps. It writes the row in a layout of its own (warps own contiguous
    /// slices of it: see [`crate::row`]), so it takes the row.
    #[inline(always)]
    pub fn scan(self, x: &[T], identity: T, op: impl Fn(T, T) -> T + Copy)
    where
        T: crate::shuffle::Shuffle,
    {
        // SAFETY: the row's elements are this block's, written by this call only (it
        // consumes the row).
        unsafe { crate::row::scan_row(self.ptr, self.cols, self.stride, x, identity, op) }
    }
}

/// A 1-D witness also opens a 1-D output (`index_1d()`), as for `DisjointSlice`.
impl<'a, T, L: Layout> DisjointArray<'a, T, 1, L> {
    #[inline(always)]
    pub fn get_mut_1d(&mut self, idx: ThreadIndex) -> Option<&mut T> {
        let i = idx.writable()?;
        let at = offset::<1, L>(&self.shape, &self.strides, [i])?;
        // SAFETY: in bounds; 1-D witnesses are distinct per thread.
        Some(unsafe { &mut *self.ptr.add(at) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::each_thread;
    use std::vec::Vec;

    #[test]
    fn segments_cover_every_element_once_for_any_grid_of_a_block_per_row_or_more() {
        let (rows, cols) = (5usize, 37usize);
        let src: Vec<f32> = (0..rows * cols).map(|i| i as f32).collect();
        for grid in [5u32, 6, 10, 15, 23, 200] {
            let mut out = std::vec![-1.0f32; rows * cols];
            let mut seen = std::vec![0u32; rows * cols];
            each_thread(grid, 4, || {
                let mut dst = DisjointArray2::from_mut_slice(&mut out, [rows, cols]);
                if let Some(mut seg) = dst.block_segment_mut() {
                    let (r, cs) = (seg.row(), seg.columns());
                    assert_eq!(seg.cols(), cs.len());
                    let row = &src[r * cols..(r + 1) * cols];
                    seg.map_indexed(&row[cs.clone()], |c, v| {
                        assert_eq!(v, (r * cols + cs.start + c) as f32);
                        v
                    });
                    for (c, _) in seg.iter_mut() {
                        seen[r * cols + cs.start + c] += 1;
                    }
                }
            });
            assert_eq!(out, src, "grid {grid}");
            assert!(seen.iter().all(|&n| n == 1), "grid {grid}: {seen:?}");
        }
    }

    #[test]
    #[should_panic(expected = "at least one block per row")]
    fn segments_need_a_block_per_row() {
        let mut out = std::vec![0.0f32; 12];
        each_thread(2, 1, || {
            let mut dst = DisjointArray2::from_mut_slice(&mut out, [3, 4]);
            let _ = dst.block_segment_mut();
        });
    }
}
