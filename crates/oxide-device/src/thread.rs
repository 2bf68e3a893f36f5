//! Thread indices and block barriers.
//!
//! The raw registers come in cuda-oxide's spelling (`threadIdx_x()`, …) and in Rust's
//! (`thread_idx_x()`, …); both return `u32`. Kernels that write output should go
//! through [`index_1d`], whose [`ThreadIndex`] is the key to a [`DisjointSlice`].
//!
//! [`DisjointSlice`]: crate::DisjointSlice

use core::marker::PhantomData;

use crate::arch;

pub use crate::debug::{gridid, nsmid, smid};

/// This thread's global index in a 1-D launch, as a witness that only this thread
/// holds: `blockIdx.x * blockDim.x + threadIdx.x`.
///
/// No two threads of a 1-D launch get the same value, which is what lets
/// [`DisjointSlice::get_mut`](crate::DisjointSlice::get_mut) hand out `&mut T` safely.
/// In a launch with a second or third dimension the formula repeats across y and z,
/// so there (as in cuda-oxide) the witness is invalid: `get()` still gives the number
/// for reading, but no slice accepts it for writing. That test reads four launch
/// extents; in a kernel with a 1-D `#[launch]` policy (`elementwise`, `grid_stride`)
/// it costs nothing, since the launcher refuses other launches and the entry assumes a
/// 1-D one.
#[inline(always)]
pub fn index_1d() -> ThreadIndex {
    // In usize so that grids larger than 2^32 threads do not wrap.
    let index =
        arch::block_idx_x() as usize * arch::block_dim_x() as usize + arch::thread_idx_x() as usize;
    let one_d =
        (arch::block_dim_y() | arch::block_dim_z() | arch::grid_dim_y() | arch::grid_dim_z()) == 1;
    ThreadIndex::new(index, one_d)
}

/// This thread's element of a row-major 2-D array with `ROW_STRIDE` columns, as a
/// witness typed by that stride: `Some(row * ROW_STRIDE + col)` with `row` =
/// [`index_2d_row`] and `col` = [`index_2d_col`], `None` for a thread whose column is
/// `>= ROW_STRIDE` (a grid rounded up past the last column) or in a 3-D launch.
///
/// The witness opens only a `DisjointSlice<T, Index2D<ROW_STRIDE>>`, so it cannot be
/// mixed with 1-D witnesses or another stride's on one slice (either could alias).
#[inline(always)]
pub fn index_2d<const ROW_STRIDE: usize>() -> Option<ThreadIndex<Index2D<ROW_STRIDE>>> {
    if (arch::block_dim_z() | arch::grid_dim_z()) != 1 {
        return None;
    }
    flat_2d(index_2d_row(), index_2d_col(), ROW_STRIDE).map(|i| ThreadIndex::new(i, true))
}

/// This thread's cell of `slice`'s grid, whose row width the host bound to the slice
/// (a `DisjointSlice<T, Runtime2DIndex>` parameter is a 2-D C-order array from Python,
/// its row width the array's second extent): cuda-oxide's `index_2d_runtime`.
///
/// The witness holds the thread's (row, col), not a flat index: the slice it opens
/// resolves them against its own row width (`row * width + col`, with `col < width`),
/// so a witness made from one slice and used on another of a different width still
/// names one element per thread. `None` in a 3-D launch, when the width is 0, or when
/// this thread's column is past the row (`col >= width`).
#[inline(always)]
pub fn index_2d_runtime<T>(
    slice: &crate::DisjointSlice<'_, T, Runtime2DIndex>,
) -> Option<ThreadIndex<Runtime2DIndex>> {
    if (arch::block_dim_z() | arch::grid_dim_z()) != 1 {
        return None;
    }
    let (row, col) = (index_2d_row(), index_2d_col());
    if col >= slice.row_width() as usize || row > u32::MAX as usize {
        return None;
    }
    Some(ThreadIndex::new(row << 32 | col, true))
}

#[inline(always)]
fn flat_2d(row: usize, col: usize, stride: usize) -> Option<usize> {
    if col >= stride {
        return None;
    }
    row.checked_mul(stride)?.checked_add(col)
}

/// This warp's index in a 1-D launch, held by lane 0 only: `Some` in the lane that
/// would write the warp's reduction, `None` in the other lanes and in 2-D/3-D
/// launches. Opens a `DisjointSlice<T, WarpIndex>` (one element per warp).
///
/// Counted per block as `blockIdx.x * ceil(blockDim.x / 32) + threadIdx.x / 32`, not
/// as `index_1d() / 32`: with a partial last warp (blockDim.x = 48) the latter gives
/// two warps the same number.
#[inline(always)]
pub fn warp_index() -> Option<ThreadIndex<WarpIndex>> {
    let one_d =
        (arch::block_dim_y() | arch::block_dim_z() | arch::grid_dim_y() | arch::grid_dim_z()) == 1;
    let tid = arch::thread_idx_x();
    if !one_d || !tid.is_multiple_of(arch::WARP_SIZE) {
        return None;
    }
    let warps_per_block = arch::block_dim_x().div_ceil(arch::WARP_SIZE) as usize;
    let index = (arch::block_idx_x() as usize)
        .checked_mul(warps_per_block)?
        .checked_add((tid / arch::WARP_SIZE) as usize)?;
    Some(ThreadIndex::new(index, true))
}

/// The block's index in the grid (x fastest) as a witness, held by the block's first
/// thread only (flat thread index 0); `None` in every other thread. For outputs with
/// one element per block, such as partial sums: `partial.get_mut(idx)`.
#[inline(always)]
pub fn block_leader_index() -> Option<ThreadIndex> {
    if block_thread_index() != 0 {
        return None;
    }
    Some(ThreadIndex::new(block_index(), true))
}

/// The block's number in the grid, flattened x fastest as CUDA numbers blocks:
/// `blockIdx.x + gridDim.x · (blockIdx.y + gridDim.y · blockIdx.z)`, below
/// [`block_count`]. The index of a block's row or element however the grid is shaped;
/// in a kernel with a `#[launch]` policy other than `tiles` the launch is 1-D (the
/// launcher refuses others) and this compiles to `blockIdx.x` alone.
#[inline(always)]
pub fn block_index() -> usize {
    let (gx, gy) = (arch::grid_dim_x() as usize, arch::grid_dim_y() as usize);
    arch::block_idx_x() as usize
        + gx * (arch::block_idx_y() as usize + gy * arch::block_idx_z() as usize)
}

/// Blocks in the grid: `gridDim.x · gridDim.y · gridDim.z`.
#[inline(always)]
pub fn block_count() -> usize {
    arch::grid_dim_x() as usize * arch::grid_dim_y() as usize * arch::grid_dim_z() as usize
}

/// The global row of a 2-D launch: `blockIdx.y * blockDim.y + threadIdx.y`.
#[inline(always)]
pub fn index_2d_row() -> usize {
    arch::block_idx_y() as usize * arch::block_dim_y() as usize + arch::thread_idx_y() as usize
}

/// The global column of a 2-D launch: `blockIdx.x * blockDim.x + threadIdx.x`.
#[inline(always)]
pub fn index_2d_col() -> usize {
    arch::block_idx_x() as usize * arch::block_dim_x() as usize + arch::thread_idx_x() as usize
}

/// The thread's index within its block, flattened x-fastest as CUDA numbers the lanes
/// of warps: `threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)`.
#[inline(always)]
pub fn block_thread_index() -> u32 {
    arch::thread_idx_x()
        + arch::block_dim_x() * (arch::thread_idx_y() + arch::block_dim_y() * arch::thread_idx_z())
}

/// Threads in a block: `blockDim.x * blockDim.y * blockDim.z`.
#[inline(always)]
pub fn block_size() -> u32 {
    arch::block_dim_x() * arch::block_dim_y() * arch::block_dim_z()
}

/// The total number of threads of a 1-D launch (`gridDim.x * blockDim.x`): the step
/// of a grid-stride loop.
#[inline(always)]
pub fn grid_stride() -> usize {
    arch::grid_dim_x() as usize * arch::block_dim_x() as usize
}

/// cuda-oxide's handle on the running launch (`#[kernel(launch_context = lc)]` binds
/// one): what its `index_1d_u32(lc)` / `coord_2d_u32(lc)` read. Here every launch's
/// coordinates are readable anywhere, so it carries nothing.
#[derive(Debug, Clone, Copy)]
pub struct LaunchContext {
    _private: (),
}

impl LaunchContext {
    #[doc(hidden)]
    #[inline(always)]
    pub fn current() -> LaunchContext {
        LaunchContext { _private: () }
    }
}

/// This thread's 1-D index as a `u32` (cuda-oxide's `index_1d_u32`), for arithmetic in
/// 32 bits; `get()` reads it. Not a write witness.
#[inline(always)]
pub fn index_1d_u32(_context: LaunchContext) -> ThreadIndex32 {
    ThreadIndex32 {
        index: arch::block_idx_x()
            .wrapping_mul(arch::block_dim_x())
            .wrapping_add(arch::thread_idx_x()),
    }
}

/// A thread's 1-D index in 32 bits ([`index_1d_u32`]).
#[derive(Debug)]
pub struct ThreadIndex32 {
    index: u32,
}

impl ThreadIndex32 {
    #[inline(always)]
    pub fn get(&self) -> u32 {
        self.index
    }
}

/// This thread's (row, col) in a 2-D launch, in 32 bits (cuda-oxide's `coord_2d_u32`).
#[inline(always)]
pub fn coord_2d_u32(_context: LaunchContext) -> ThreadCoord2D32 {
    ThreadCoord2D32 {
        row: index_2d_row() as u32,
        col: index_2d_col() as u32,
    }
}

/// A thread's 2-D coordinates in 32 bits ([`coord_2d_u32`]).
#[derive(Debug)]
pub struct ThreadCoord2D32 {
    row: u32,
    col: u32,
}

impl ThreadCoord2D32 {
    #[inline(always)]
    pub fn row(&self) -> u32 {
        self.row
    }

    #[inline(always)]
    pub fn col(&self) -> u32 {
        self.col
    }
}

/// The index space of a 1-D launch: `blockIdx.x * blockDim.x + threadIdx.x`
/// ([`index_1d`], [`block_leader_index`]). The default of [`ThreadIndex`] and
/// [`DisjointSlice`](crate::DisjointSlice).
#[derive(Debug, Clone, Copy)]
pub struct Index1D;

/// The index space of a row-major 2-D array with `ROW_STRIDE` columns
/// ([`index_2d`]).
#[derive(Debug, Clone, Copy)]
pub struct Index2D<const ROW_STRIDE: usize>;

/// One element per warp of a 1-D launch ([`warp_index`]).
#[derive(Debug, Clone, Copy)]
pub struct WarpIndex;

/// The index space of a row-major 2-D array whose row width the host binds to the
/// slice at launch ([`index_2d_runtime`]; cuda-oxide's `Runtime2DIndex`).
#[derive(Debug, Clone, Copy)]
pub enum Runtime2DIndex {}

/// An index space: which witnesses open a `DisjointSlice<T, S>`, and how. Sealed: every
/// space here maps distinct threads to distinct indices, which is what the slice
/// relies on.
pub trait IndexSpace: sealed::Sealed {
    /// What a slice of this space carries besides its pointer and length (the row
    /// width of a [`Runtime2DIndex`] slice; nothing for the others).
    type Data: Copy + core::fmt::Debug;

    /// The element a witness's number names in a slice carrying `data`, if any.
    #[doc(hidden)]
    #[inline(always)]
    fn resolve(_data: Self::Data, index: usize) -> Option<usize> {
        Some(index)
    }
}

/// Index spaces whose witness this thread can make itself, from its coordinates:
/// what [`DisjointSlice::get_mut_indexed`](crate::DisjointSlice::get_mut_indexed)
/// needs.
pub trait IndexFormula: IndexSpace + Sized {
    /// This thread's witness, `None` where the space gives this thread no element.
    fn this_thread() -> Option<ThreadIndex<Self>>;
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for super::Index1D {}
    impl<const S: usize> Sealed for super::Index2D<S> {}
    impl Sealed for super::WarpIndex {}
    impl Sealed for super::Runtime2DIndex {}
}

impl IndexSpace for Index1D {
    type Data = ();
}
impl<const S: usize> IndexSpace for Index2D<S> {
    type Data = ();
}
impl IndexSpace for WarpIndex {
    type Data = ();
}
impl IndexSpace for Runtime2DIndex {
    /// The row width, in elements.
    type Data = u32;

    /// `row * width + col` for the witness's (row, col), `None` unless `col < width`:
    /// one row width for the whole launch and `col < width` keep distinct threads on
    /// distinct elements. (row and col are below 2^32, so this cannot wrap.)
    #[inline(always)]
    fn resolve(width: u32, index: usize) -> Option<usize> {
        let (row, col) = (index >> 32, index & u32::MAX as usize);
        (col < width as usize).then(|| row * width as usize + col)
    }
}

impl ThreadIndex<Runtime2DIndex> {
    /// The thread's global row ([`index_2d_row`]).
    #[inline(always)]
    pub fn row(&self) -> usize {
        self.index >> 32
    }

    /// The thread's global column ([`index_2d_col`]).
    #[inline(always)]
    pub fn col(&self) -> usize {
        self.index & u32::MAX as usize
    }
}

impl IndexFormula for Index1D {
    #[inline(always)]
    fn this_thread() -> Option<ThreadIndex<Self>> {
        let idx = index_1d();
        idx.valid.then_some(idx)
    }
}

impl<const S: usize> IndexFormula for Index2D<S> {
    #[inline(always)]
    fn this_thread() -> Option<ThreadIndex<Self>> {
        index_2d::<S>()
    }
}

/// The indices `i < n` of this thread in a 1-D grid-stride loop: [`index_1d`], then
/// steps of [`grid_stride`]. For reads and for per-thread accumulations (writes go
/// through a `DisjointSlice`); the loop compiles to one add and one compare per step.
///
/// ```
/// # use oxide_device::prelude::*;
/// # let x = [1.0f32; 10];
/// let mine: f32 = thread::grid_stride_range(x.len()).map(|i| x[i]).sum();
/// # assert_eq!(mine, 10.0); // a plain call is thread 0 of a one-thread grid
/// ```
#[inline(always)]
pub fn grid_stride_range(n: usize) -> GridStrideRange {
    GridStrideRange {
        next: index_1d().get(),
        end: n,
        step: grid_stride(),
    }
}

/// The iterator of [`grid_stride_range`].
#[derive(Clone, Debug)]
pub struct GridStrideRange {
    next: usize,
    end: usize,
    step: usize,
}

impl Iterator for GridStrideRange {
    type Item = usize;

    #[inline(always)]
    fn next(&mut self) -> Option<usize> {
        if self.next < self.end {
            let i = self.next;
            // No overflow: next < end <= isize::MAX and step < 2^42 (grid × block).
            self.next += self.step;
            Some(i)
        } else {
            None
        }
    }
}

/// A thread's index witness in the index space `S`, obtainable only from [`index_1d`],
/// [`index_2d`], [`warp_index`] and [`block_leader_index`].
///
/// Deliberately neither `Copy` nor `Clone` (using it to write consumes it) and neither
/// `Send` nor `Sync` (it names the thread that made it).
#[derive(Debug)]
pub struct ThreadIndex<S = Index1D> {
    index: usize,
    valid: bool,
    _space: PhantomData<(S, *mut ())>,
}

impl<S> ThreadIndex<S> {
    #[inline(always)]
    fn new(index: usize, valid: bool) -> Self {
        ThreadIndex {
            index,
            valid,
            _space: PhantomData,
        }
    }

    /// The index as a number, for reading inputs.
    #[inline(always)]
    pub fn get(&self) -> usize {
        self.index
    }

    /// Whether this witness may write: false for [`index_1d`] in a 2-D or 3-D launch.
    #[inline(always)]
    pub fn is_valid(&self) -> bool {
        self.valid
    }

    /// `get() < len`: whether the index is inside an array of `len` elements.
    #[inline(always)]
    pub fn in_bounds(&self, len: usize) -> bool {
        self.index < len
    }

    /// The flat index if this witness may write (the slice's check).
    #[inline(always)]
    pub(crate) fn writable(&self) -> Option<usize> {
        self.valid.then_some(self.index)
    }
}

/// Wait until every thread of the block has reached this call (`__syncthreads`).
///
/// Every thread of the block must reach the same call: calling it from a branch that
/// only some threads take deadlocks or corrupts the block.
#[inline(always)]
pub fn sync_threads() {
    arch::sync_threads()
}

/// `__threadfence_block()`: this thread's writes before the fence are seen by the
/// block's threads before its writes after it.
#[inline(always)]
pub fn threadfence_block() {
    arch::threadfence_block()
}

/// `__threadfence()`: as [`threadfence_block`], for every thread of the device.
#[inline(always)]
pub fn threadfence() {
    arch::threadfence()
}

/// `__threadfence_system()`: as [`threadfence`], also for the host and peer devices.
#[inline(always)]
pub fn threadfence_system() {
    arch::threadfence_system()
}

macro_rules! registers {
    ($($(#[$doc:meta])* $raw:ident, $alias:ident;)*) => {$(
        $(#[$doc])*
        #[allow(non_snake_case)]
        #[inline(always)]
        pub fn $raw() -> u32 {
            arch::$alias()
        }

        $(#[$doc])*
        #[inline(always)]
        pub fn $alias() -> u32 {
            arch::$alias()
        }
    )*};
}

registers! {
    /// `threadIdx.x`: the thread's index in its block.
    threadIdx_x, thread_idx_x;
    /// `threadIdx.y`.
    threadIdx_y, thread_idx_y;
    /// `threadIdx.z`.
    threadIdx_z, thread_idx_z;
    /// `blockIdx.x`: the block's index in the grid.
    blockIdx_x, block_idx_x;
    /// `blockIdx.y`.
    blockIdx_y, block_idx_y;
    /// `blockIdx.z`.
    blockIdx_z, block_idx_z;
    /// `blockDim.x`: threads per block.
    blockDim_x, block_dim_x;
    /// `blockDim.y`.
    blockDim_y, block_dim_y;
    /// `blockDim.z`.
    blockDim_z, block_dim_z;
    /// `gridDim.x`: blocks in the grid.
    gridDim_x, grid_dim_x;
    /// `gridDim.y`.
    gridDim_y, grid_dim_y;
    /// `gridDim.z`.
    gridDim_z, grid_dim_z;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::__private::emu::{ThreadCoords, set_thread_coords, thread_coords};

    #[test]
    fn defaults_to_thread_zero_of_one() {
        assert_eq!(index_1d().get(), 0);
        assert_eq!((blockDim_x(), gridDim_x()), (1, 1));
        sync_threads();
    }

    #[test]
    fn index_1d_follows_the_emulated_registers() {
        let coords = ThreadCoords {
            thread_idx: [5, 0, 0],
            block_idx: [3, 1, 0],
            block_dim: [128, 2, 1],
            grid_dim: [10, 2, 1],
        };
        let previous = set_thread_coords(coords);
        assert_eq!(index_1d().get(), 3 * 128 + 5);
        assert_eq!((threadIdx_x(), thread_idx_x()), (5, 5));
        assert_eq!((blockIdx_y(), block_dim_y(), grid_dim_x()), (1, 2, 10));
        set_thread_coords(previous);
        assert_eq!(index_1d().get(), 0);
    }

    #[test]
    fn index_2d_maps_rows_and_columns() {
        let previous = set_thread_coords(ThreadCoords {
            thread_idx: [3, 2, 0],
            block_idx: [1, 4, 0],
            block_dim: [16, 16, 1],
            grid_dim: [2, 8, 1],
        });
        assert_eq!((index_2d_row(), index_2d_col()), (4 * 16 + 2, 16 + 3));
        assert_eq!(index_2d::<20>().map(|i| i.get()), Some(66 * 20 + 19));
        // Column 19 is past a stride of 10: no element at all.
        assert!(index_2d::<10>().is_none());
        // A 2-D launch: index_1d's number repeats across rows, so it may not write.
        assert!(!index_1d().is_valid());
        let mut cells = [0u32; 80 * 32];
        let mut grid =
            crate::DisjointSlice::<u32, Runtime2DIndex>::from_mut_with_row_width(&mut cells, 32);
        let idx = index_2d_runtime(&grid).expect("column 19 < 32");
        assert_eq!((idx.row(), idx.col()), (66, 19));
        *grid.get_mut(idx).expect("in bounds") = 7;
        assert_eq!(cells[66 * 32 + 19], 7);
        let narrow =
            crate::DisjointSlice::<u32, Runtime2DIndex>::from_mut_with_row_width(&mut cells, 10);
        assert!(index_2d_runtime(&narrow).is_none());
        assert_eq!(block_thread_index(), 3 + 16 * 2);
        assert_eq!((block_size(), grid_stride()), (256, 32));
        set_thread_coords(previous);
        threadfence_block();
        threadfence();
        threadfence_system();
    }

    #[test]
    fn only_thread_zero_leads_its_block() {
        assert_eq!(block_leader_index().map(|i| i.get()), Some(0));
        let previous = set_thread_coords(ThreadCoords {
            thread_idx: [0, 0, 0],
            block_idx: [2, 1, 0],
            block_dim: [64, 1, 1],
            grid_dim: [3, 2, 1],
        });
        assert_eq!(block_leader_index().map(|i| i.get()), Some(2 + 3));
        set_thread_coords(ThreadCoords {
            thread_idx: [1, 0, 0],
            ..thread_coords()
        });
        assert!(block_leader_index().is_none());
        set_thread_coords(previous);
    }

    #[test]
    fn grid_stride_ranges_partition_the_indices() {
        let mut seen = [0u8; 23];
        crate::testing::each_thread(2, 3, || {
            for i in grid_stride_range(seen.len()) {
                seen[i] += 1;
            }
        });
        assert!(seen.iter().all(|&n| n == 1));
        assert_eq!(grid_stride_range(0).count(), 0);
    }

    #[test]
    fn index_1d_does_not_wrap_at_u32() {
        let previous = set_thread_coords(ThreadCoords {
            block_idx: [u32::MAX, 0, 0],
            block_dim: [1024, 1, 1],
            thread_idx: [7, 0, 0],
            grid_dim: [u32::MAX, 1, 1],
        });
        assert_eq!(index_1d().get(), u32::MAX as usize * 1024 + 7);
        set_thread_coords(previous);
    }
}
