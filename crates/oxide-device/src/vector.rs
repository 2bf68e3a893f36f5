//! 128-bit vector access, for kernels in which a thread owns several contiguous
//! elements: the way memory-bound kernels reach the memory system's bandwidth.
//!
//! A GPU moves memory fastest when each thread keeps many bytes in flight: one 16-byte
//! `ld.global.v4`/`st.global.v4` instead of four 4-byte accesses. That needs an address
//! that is a multiple of 16, which an array from CuPy or NumPy has, but a view such as
//! `x[1:]` (element-aligned, not 16-byte aligned) does not. The tools here stay correct
//! for any element-aligned view and take the vector path where the addresses allow:
//!
//! - [`SliceVectors::as_vectors`] splits a `&[T]` into an unaligned head, a body of
//!   16-byte-aligned [`Vector`]s (each read is one 128-bit load) and a tail — the read
//!   side of [`DisjointSlice::get_chunk_mut`](crate::DisjointSlice::get_chunk_mut);
//! - [`DisjointSlice::map`](crate::DisjointSlice::map) writes `out[i] = f(inputs[i])`
//!   for every element: 128-bit loads and stores when every array has the same offset
//!   from a 16-byte boundary (peeling the head elements up to it), one element at a
//!   time, grid-stride, when they differ;
//! - [`thread::grid_stride_range`](crate::thread::grid_stride_range) is the grid-stride
//!   loop (one add and one compare per step, no division).
//!
//! Reads of `&[T]` go through the non-coherent path (`ld.global.nc`) because the link
//! step marks kernel slices `noalias readonly`; nothing here needs to ask for it.

use core::mem::{align_of, size_of};

use crate::DisjointSlice;

/// Bytes in one vector access.
pub const VECTOR_BYTES: usize = 16;

/// `N` elements of `T` that fill one 16-byte-aligned 128-bit vector (`N * size_of::<T>()
/// == 16`: 4 × `f32`/`u32`/`i32`, 2 × `f64`/`u64`, 8 × `u16`/`f16`, 16 × `u8`). Reading
/// one from a slice of them is a single vector load.
#[repr(C, align(16))]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Vector<T, const N: usize>(pub [T; N]);

impl<T: Copy, const N: usize> Vector<T, N> {
    /// The lanes.
    #[inline(always)]
    pub fn lanes(self) -> [T; N] {
        self.0
    }
}

/// The read side of vector access, for `&[T]` (in the prelude).
pub trait SliceVectors<T> {
    /// The slice as `(head, body, tail)`: `head` runs up to the first 16-byte boundary
    /// (fewer than `N` elements), `body` is the aligned middle as vectors of `N`
    /// elements, `tail` the rest (fewer than `N`). Every element is in exactly one of
    /// them, in order. `N * size_of::<T>()` must be 16 (a compile-time error otherwise).
    ///
    /// ```
    /// use oxide_device::prelude::*;
    /// let data = [1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0];
    /// let (head, body, tail) = data[1..].as_vectors::<4>();
    /// let total: f32 = head.iter().sum::<f32>()
    ///     + body.iter().flat_map(|v| v.lanes()).sum::<f32>()
    ///     + tail.iter().sum::<f32>();
    /// assert_eq!(total, 54.0);
    /// assert_eq!(head.len() + 4 * body.len() + tail.len(), 9);
    /// ```
    fn as_vectors<const N: usize>(&self) -> (&[T], &[Vector<T, N>], &[T]);
}

impl<T: Copy> SliceVectors<T> for [T] {
    #[inline(always)]
    fn as_vectors<const N: usize>(&self) -> (&[T], &[Vector<T, N>], &[T]) {
        const {
            assert!(
                N * size_of::<T>() == VECTOR_BYTES && align_of::<T>() == size_of::<T>(),
                "as_vectors::<N>: N elements must fill 16 bytes (4 × f32, 2 × f64, …)"
            )
        };
        let (p, len) = (self.as_ptr(), self.len());
        // Bytes from `p` to the next 16-byte boundary: a whole number of elements, since
        // `p` is aligned to `T`, whose alignment is its size.
        let to_boundary = (p as usize).wrapping_neg() % VECTOR_BYTES;
        let head = (to_boundary / size_of::<T>()).min(len);
        let body = (len - head) / N;
        // Offsets from `p` only (no choice of another pointer for the empty cases, as
        // `<[T]>::align_to` makes): LLVM then still sees the kernel parameter behind
        // every load and reads it through the read-only path.
        let vectors = p.wrapping_byte_add(to_boundary).cast::<Vector<T, N>>();
        // SAFETY: the three parts tile `self` in order. `vectors` is 16-byte aligned
        // and, when `body > 0`, inside `self`; `Vector<T, N>` is `[T; N]` with a larger
        // alignment and no padding (size 16, asserted above), so any N initialised Ts
        // are a valid one. An empty part needs only an aligned, non-null pointer.
        unsafe {
            (
                core::slice::from_raw_parts(p, head),
                core::slice::from_raw_parts(vectors, body),
                core::slice::from_raw_parts(p.add(head + body * N), len - head - body * N),
            )
        }
    }
}

/// `X` aligned to 4, 8 or 16 bytes: what makes [`load`] and [`store`] one access.
#[repr(C, align(4))]
struct A4<X>(X);
#[repr(C, align(8))]
struct A8<X>(X);
#[repr(C, align(16))]
struct A16<X>(X);

/// Loads `N` elements of `T` from `p` as one access when they fill 4, 8 or 16 bytes.
///
/// # Safety
/// `p` is valid for reads of `N` elements and aligned to `N * size_of::<T>()` when that
/// is 4, 8 or 16 (to `T` otherwise).
#[inline(always)]
pub(crate) unsafe fn load<T: Copy, const N: usize>(p: *const T) -> [T; N] {
    // The match is on a constant: each instance keeps one arm. In the 4/8/16 arms the
    // wrapper adds no padding, so the read covers exactly the N elements.
    // SAFETY: upheld by the caller.
    unsafe {
        match size_of::<[T; N]>() {
            16 => p.cast::<A16<[T; N]>>().read().0,
            8 => p.cast::<A8<[T; N]>>().read().0,
            4 => p.cast::<A4<[T; N]>>().read().0,
            _ => p.cast::<[T; N]>().read(),
        }
    }
}

/// Stores `N` elements as one access; the counterpart of [`load`].
///
/// # Safety
/// As [`load`], for writes.
#[inline(always)]
pub(crate) unsafe fn store<T: Copy, const N: usize>(p: *mut T, v: [T; N]) {
    // SAFETY: upheld by the caller.
    unsafe {
        match size_of::<[T; N]>() {
            16 => p.cast::<A16<[T; N]>>().write(A16(v)),
            8 => p.cast::<A8<[T; N]>>().write(A8(v)),
            4 => p.cast::<A4<[T; N]>>().write(A4(v)),
            _ => p.cast::<[T; N]>().write(v),
        }
    }
}

/// The offset of `p` from an `N`-element boundary, in elements.
#[inline(always)]
pub(crate) fn phase<T>(p: *const T, n: usize) -> usize {
    (p as usize / size_of::<T>().max(1)) % n
}

/// The inputs of [`DisjointSlice::map`]: one `&[A]` (item `A`), or a tuple of two or
/// three slices (item `(A, B)`, `(A, B, C)`).
pub trait Inputs: Copy {
    /// One element of each input.
    type Item: Copy;
    /// The first input's element size (sets the vector width of [`grid_fold`]).
    #[doc(hidden)]
    const LEAD_SIZE: usize;
    /// How many slices it reads.
    #[doc(hidden)]
    const COUNT: usize;
    /// The first input's address.
    #[doc(hidden)]
    fn lead(&self) -> *const u8;
    /// The shortest input's length.
    #[doc(hidden)]
    fn min_len(&self) -> usize;
    /// Whether every input's offset from an `n`-element boundary is `phase`.
    #[doc(hidden)]
    fn in_phase(&self, n: usize, phase: usize) -> bool;
    /// # Safety
    /// `i < self.min_len()`.
    #[doc(hidden)]
    unsafe fn item(&self, i: usize) -> Self::Item;
    /// # Safety
    /// `i + N <= self.min_len()` and every input's element `i` is aligned as [`load`]
    /// needs.
    #[doc(hidden)]
    unsafe fn items<const N: usize>(&self, i: usize) -> [Self::Item; N];
}

impl<A: Copy> Inputs for &[A] {
    type Item = A;
    const LEAD_SIZE: usize = size_of::<A>();
    const COUNT: usize = 1;
    #[inline(always)]
    fn lead(&self) -> *const u8 {
        self.as_ptr().cast()
    }
    #[inline(always)]
    fn min_len(&self) -> usize {
        self.len()
    }
    #[inline(always)]
    fn in_phase(&self, n: usize, p: usize) -> bool {
        phase(self.as_ptr(), n) == p
    }
    #[inline(always)]
    unsafe fn item(&self, i: usize) -> A {
        // SAFETY: upheld by the caller.
        unsafe { *self.get_unchecked(i) }
    }
    #[inline(always)]
    unsafe fn items<const N: usize>(&self, i: usize) -> [A; N] {
        // SAFETY: upheld by the caller.
        unsafe { load::<A, N>(self.as_ptr().add(i)) }
    }
}

macro_rules! tuple_inputs {
    ($($name:ident: $t:ident . $idx:tt),+) => {
        impl<$($t: Copy),+> Inputs for ($(&[$t],)+) {
            type Item = ($($t,)+);
            const LEAD_SIZE: usize = size_of::<A>();
            const COUNT: usize = 0 $(+ { let _ = $idx; 1 })+;
            #[inline(always)]
            fn lead(&self) -> *const u8 {
                self.0.as_ptr().cast()
            }
            #[inline(always)]
            fn min_len(&self) -> usize {
                let mut n = usize::MAX;
                $(n = n.min(self.$idx.len());)+
                n
            }
            #[inline(always)]
            fn in_phase(&self, n: usize, p: usize) -> bool {
                true $(&& phase(self.$idx.as_ptr(), n) == p)+
            }
            #[inline(always)]
            unsafe fn item(&self, i: usize) -> Self::Item {
                // SAFETY: upheld by the caller.
                unsafe { ($(*self.$idx.get_unchecked(i),)+) }
            }
            #[inline(always)]
            unsafe fn items<const N: usize>(&self, i: usize) -> [Self::Item; N] {
                // SAFETY: upheld by the caller.
                $(let $name = unsafe { load::<$t, N>(self.$idx.as_ptr().add(i)) };)+
                core::array::from_fn(|k| ($($name[k],)+))
            }
        }
    };
}

tuple_inputs!(a: A.0);
tuple_inputs!(a: A.0, b: B.1);
tuple_inputs!(a: A.0, b: B.1, c: C.2);

impl<T: Copy> DisjointSlice<'_, T> {
    /// `self[i] = f(inputs[i])` for every element of `self`, by the whole grid: each
    /// thread handles 16 bytes of output per step (4 × `f32`, 2 × `f64`, …) as 128-bit
    /// loads and stores, in a grid-stride loop, so any grid gives the full result and a
    /// grid of one thread per 16 output bytes gives one step per thread (the
    /// `#[launch(elementwise(out, per_thread = N))]` policy).
    ///
    /// Views that are not 16-byte aligned stay correct: when every array has the same
    /// offset from a 16-byte boundary the first few elements are done one by one and
    /// the rest as vectors; when the offsets differ, every element is done one by one.
    /// Bounds are checked once, before the loop: an input shorter than `self` panics
    /// (as `x[i]` would).
    ///
    /// Like every `DisjointSlice` mapping, use one per slice: the threads of the launch
    /// split the elements among themselves, so no other write to `self` may follow.
    ///
    /// ```
    /// use oxide_device::prelude::*;
    ///
    /// #[kernel]
    /// pub fn saxpy(a: f32, x: &[f32], y: &[f32], mut out: DisjointSlice<f32>) {
    ///     out.map((x, y), |(x, y)| a * x + y);
    /// }
    /// # fn main() {
    /// #     let mut out = [0.0f32; 3];
    /// #     saxpy(2.0, &[1.0, 2.0, 3.0], &[1.0, 1.0, 1.0], DisjointSlice::from_mut(&mut out));
    /// #     assert_eq!(out, [3.0, 5.0, 7.0]);
    /// # }
    /// ```
    #[inline(always)]
    pub fn map<I: Inputs>(&mut self, inputs: I, f: impl Fn(I::Item) -> T) {
        self.map_indexed(inputs, |_, x| f(x))
    }

    /// [`map`](Self::map) with each element's index: `self[i] = f(i, inputs[i])`, on the
    /// same vector path (the index of a vector's lanes is one add each). For operands
    /// indexed otherwise than `i`, such as a column's `bias[i % cols]` of a matrix, a
    /// row's map (`block_row_mut()` and [`crate::row`]) keeps them on the vector path.
    #[inline(always)]
    pub fn map_indexed<I: Inputs>(&mut self, inputs: I, f: impl Fn(usize, I::Item) -> T) {
        // The element count of one 16-byte vector of `T`, as a constant per instance.
        match VECTOR_BYTES / size_of::<T>().max(1) {
            16 => self.map_chunks_indexed::<16, I>(inputs, f),
            8 => self.map_chunks_indexed::<8, I>(inputs, f),
            4 => self.map_chunks_indexed::<4, I>(inputs, f),
            2 => self.map_chunks_indexed::<2, I>(inputs, f),
            _ => self.map_chunks_indexed::<1, I>(inputs, f),
        }
    }

    /// [`map`](Self::map) with `N` elements per thread and step (vector accesses of
    /// `N * size_of` bytes when that is 4, 8 or 16).
    #[inline(always)]
    pub fn map_chunks<const N: usize, I: Inputs>(&mut self, inputs: I, f: impl Fn(I::Item) -> T) {
        self.map_chunks_indexed::<N, I>(inputs, |_, x| f(x))
    }

    #[inline(always)]
    fn map_chunks_indexed<const N: usize, I: Inputs>(
        &mut self,
        inputs: I,
        f: impl Fn(usize, I::Item) -> T,
    ) {
        let len = self.len();
        assert!(
            inputs.min_len() >= len,
            "DisjointSlice::map: an input is shorter than the output"
        );
        let out = self.as_mut_ptr();
        let first = crate::thread::index_1d().get();
        let stride = crate::thread::grid_stride();
        let p = phase(out as *const T, N);
        if N > 1 && inputs.in_phase(N, p) {
            let head = ((N - p) % N).min(len);
            let chunks = (len - head) / N;
            // Head and tail hold fewer than N elements each, but the grid may have
            // fewer threads than that, so they are grid-stride loops too.
            let mut i = first;
            while i < head {
                // SAFETY: i < head <= len <= every input's length; grid-stride indices
                // of distinct threads are distinct.
                unsafe { out.add(i).write(f(i, inputs.item(i))) };
                i += stride;
            }
            let mut c = first;
            while c < chunks {
                let i = head + c * N;
                // SAFETY: i + N <= len; after the head every array is at an N-element
                // boundary (same phase), so aligned to N * size_of; chunk `c` belongs
                // to the one thread whose grid-stride sequence holds `c`.
                unsafe {
                    let x = inputs.items::<N>(i);
                    store::<T, N>(out.add(i), core::array::from_fn(|k| f(i + k, x[k])));
                }
                c += stride;
            }
            let mut i = head + chunks * N + first;
            while i < len {
                // SAFETY: as for the head.
                unsafe { out.add(i).write(f(i, inputs.item(i))) };
                i += stride;
            }
        } else {
            let mut i = first;
            while i < len {
                // SAFETY: i < len <= every input's length; grid-stride indices of
                // distinct threads are distinct.
                unsafe { out.add(i).write(f(i, inputs.item(i))) };
                i += stride;
            }
        }
    }
}

/// `f` over this thread's grid-stride share of `inputs` (a slice or a tuple of two or
/// three, read together; the shortest one's length), from `init`: the 16-byte-aligned
/// middle as 128-bit loads, four vectors in flight per step with no bounds check between
/// them, the unaligned ends one element at a time (every element when the inputs' offsets
/// from a 16-byte boundary differ). The read side of [`DisjointSlice::map`]: a
/// reduction's first stage, before [`block::sum`](crate::block::sum) or
/// [`block::reduce`](crate::block::reduce).
///
/// ```
/// use oxide_device::prelude::*;
/// let (x, y) = ([1.0f32, 2.0, 3.0], [4.0f32, 5.0, 6.0]);
/// // A plain call is the one thread of a one-thread grid: it folds everything.
/// assert_eq!(vector::grid_fold((&x[..], &y[..]), 0.0, |acc, (a, b)| acc + a * b), 32.0);
/// ```
#[inline(always)]
pub fn grid_fold<I: Inputs, A>(inputs: I, init: A, mut f: impl FnMut(A, I::Item) -> A) -> A {
    grid_fold_indexed(inputs, init, |acc, _, x| f(acc, x))
}

/// [`grid_fold`] with each element's index.
#[inline(always)]
pub fn grid_fold_indexed<I: Inputs, A>(
    inputs: I,
    init: A,
    f: impl FnMut(A, usize, I::Item) -> A,
) -> A {
    match VECTOR_BYTES / I::LEAD_SIZE.max(1) {
        16 => fold_chunks::<16, I, A>(inputs, init, f),
        8 => fold_chunks::<8, I, A>(inputs, init, f),
        4 => fold_chunks::<4, I, A>(inputs, init, f),
        2 => fold_chunks::<2, I, A>(inputs, init, f),
        _ => fold_chunks::<1, I, A>(inputs, init, f),
    }
}

/// Bytes a thread of [`grid_fold`] loads before it uses any: four vectors of one input,
/// two of each of two inputs. More would take registers (a grid-stride reduction wants
/// the device full: 2048 threads an SM, at most 32 registers each) for no more bytes in
/// flight than a full SM already has.
const FOLD_BYTES: usize = 64;

#[inline(always)]
fn fold_chunks<const N: usize, I: Inputs, A>(
    inputs: I,
    init: A,
    f: impl FnMut(A, usize, I::Item) -> A,
) -> A {
    // The group size must be a constant for the loads' array: one instance per size.
    match FOLD_BYTES / (VECTOR_BYTES * I::COUNT) {
        0 | 1 => fold_groups::<N, 1, I, A>(inputs, init, f),
        2 | 3 => fold_groups::<N, 2, I, A>(inputs, init, f),
        _ => fold_groups::<N, 4, I, A>(inputs, init, f),
    }
}

#[inline(always)]
fn fold_groups<const N: usize, const GROUP: usize, I: Inputs, A>(
    inputs: I,
    init: A,
    mut f: impl FnMut(A, usize, I::Item) -> A,
) -> A {
    let len = inputs.min_len();
    let first = crate::thread::index_1d().get();
    let stride = crate::thread::grid_stride();
    let p = (inputs.lead() as usize / I::LEAD_SIZE.max(1)) % N;
    let mut acc = init;
    // SAFETY (each access): indices below `len`, every input's length; vectors only
    // when every input is at the same phase, so aligned to N elements after the head.
    unsafe {
        if N > 1 && inputs.in_phase(N, p) {
            let head = ((N - p) % N).min(len);
            let chunks = (len - head) / N;
            let mut i = first;
            while i < head {
                acc = f(acc, i, inputs.item(i));
                i += stride;
            }
            let mut c = first;
            // Whole groups: `c + (GROUP - 1)·stride < chunks`.
            let groups_below = chunks.saturating_sub((GROUP - 1) * stride);
            while c < groups_below {
                let xs: [[I::Item; N]; GROUP] =
                    core::array::from_fn(|k| inputs.items::<N>(head + (c + k * stride) * N));
                for (k, x) in xs.iter().enumerate() {
                    let at = head + (c + k * stride) * N;
                    for (lane, &item) in x.iter().enumerate() {
                        acc = f(acc, at + lane, item);
                    }
                }
                c += GROUP * stride;
            }
            while c < chunks {
                let at = head + c * N;
                let x = inputs.items::<N>(at);
                for (lane, &item) in x.iter().enumerate() {
                    acc = f(acc, at + lane, item);
                }
                c += stride;
            }
            let mut i = head + chunks * N + first;
            while i < len {
                acc = f(acc, i, inputs.item(i));
                i += stride;
            }
        } else {
            let mut i = first;
            while i < len {
                acc = f(acc, i, inputs.item(i));
                i += stride;
            }
        }
    }
    acc
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::each_thread;

    #[test]
    fn vectors_split_any_view_in_order() {
        let data: std::vec::Vec<u32> = (0..40).collect();
        for start in 0..5 {
            for end in start..40 {
                let view = &data[start..end];
                let (head, body, tail) = view.as_vectors::<4>();
                assert!(head.len() < 4 && tail.len() < 4);
                let joined: std::vec::Vec<u32> = head
                    .iter()
                    .copied()
                    .chain(body.iter().flat_map(|v| v.lanes()))
                    .chain(tail.iter().copied())
                    .collect();
                assert_eq!(joined, view);
                assert!(body.is_empty() || (body.as_ptr() as usize).is_multiple_of(16));
            }
        }
    }

    #[test]
    fn map_covers_every_element_for_any_phase_and_grid() {
        let x: std::vec::Vec<f32> = (0..70).map(|v| v as f32).collect();
        let y: std::vec::Vec<f32> = (0..70).map(|v| 1000.0 + v as f32).collect();
        for (xs, ys, os) in [(0, 0, 0), (1, 1, 1), (1, 0, 0), (3, 3, 2), (2, 2, 2)] {
            for len in [0usize, 1, 3, 7, 13, 50] {
                for (grid, block) in [(1, 1), (2, 3), (4, 32)] {
                    let mut out = std::vec![-1.0f32; 64];
                    let o = &mut out[os..os + len];
                    let (xv, yv) = (&x[xs..xs + len], &y[ys..ys + len]);
                    each_thread(grid, block, || {
                        DisjointSlice::from_mut(&mut *o).map((xv, yv), |(a, b)| 2.0 * a + b)
                    });
                    for i in 0..len {
                        assert_eq!(o[i], 2.0 * xv[i] + yv[i], "phase {xs}/{ys}/{os} len {len}");
                    }
                }
            }
        }
    }

    #[test]
    #[should_panic(expected = "shorter than the output")]
    fn a_short_input_panics() {
        let mut out = [0u8; 4];
        DisjointSlice::from_mut(&mut out).map(&[1u8, 2][..], |v| v);
    }

    #[test]
    fn map_indexed_gives_each_element_its_index() {
        let x: std::vec::Vec<u32> = (0..41).collect();
        for start in 0..4 {
            let mut out = std::vec![0u32; 45];
            let o = &mut out[start..start + 37];
            each_thread(2, 3, || {
                DisjointSlice::from_mut(&mut *o).map_indexed(&x[1..38], |i, v| 1000 * i as u32 + v)
            });
            assert!(o.iter().enumerate().all(|(i, &v)| v == 1001 * i as u32 + 1));
        }
    }

    #[test]
    fn map_converts_between_element_types() {
        let x: std::vec::Vec<u8> = (0..37).collect();
        let mut out = std::vec![0.0f64; 37];
        each_thread(3, 4, || {
            DisjointSlice::from_mut(&mut out).map(&x[..], |v| f64::from(v) / 2.0)
        });
        assert!(out.iter().enumerate().all(|(i, &v)| v == i as f64 / 2.0));
    }
}

#[cfg(test)]
mod fold_tests {
    use super::*;
    use crate::testing::each_thread;

    #[test]
    fn a_grid_fold_visits_every_element_once() {
        let x: std::vec::Vec<f32> = (0..90).map(|v| v as f32).collect();
        let y: std::vec::Vec<f32> = (0..90).map(|v| 2.0 * v as f32).collect();
        for (xs, ys) in [(0, 0), (1, 1), (2, 0), (3, 3)] {
            for len in [0usize, 1, 5, 16, 33, 80] {
                for (grid, block) in [(1, 1), (2, 3), (3, 32)] {
                    let (a, b) = (&x[xs..xs + len], &y[ys..ys + len]);
                    let mut seen = std::vec![0u32; len];
                    let mut total = 0.0;
                    each_thread(grid, block, || {
                        total += grid_fold_indexed((a, b), 0.0, |acc, i, (p, q)| {
                            seen[i] += 1;
                            acc + p * q
                        })
                    });
                    assert!(
                        seen.iter().all(|&n| n == 1),
                        "{xs}/{ys} {len} {grid}x{block}"
                    );
                    let want: f32 = a.iter().zip(b).map(|(p, q)| p * q).sum();
                    assert_eq!(total, want);
                }
            }
        }
    }
}
