//! Block-shared memory: fixed-size [`SharedArray`] statics and the launch-sized
//! [`DynamicSharedArray`].
//!
//! Rust cannot place a static in the GPU's shared address space; pyoxide's link step
//! does. Any static in the `.oxide.shared` link section moves to `.shared` (one copy
//! per block, uninitialised), and `#[kernel]` puts every `static` of type
//! `SharedArray<…>` in its body there by itself, so cuda-oxide's spelling
//! (`static mut TILE: SharedArray<f32, 256> = SharedArray::UNINIT;`, indexed as
//! `TILE[i]` in `unsafe`) works as is. A plain `static` with `read`/`write` needs no
//! `static mut` references:
//!
//! ```
//! use oxide_device::prelude::*;
//! use oxide_device::shared::SharedArray;
//!
//! #[kernel]
//! pub fn reverse_block(x: &[f32], mut out: DisjointSlice<f32>) {
//!     static TILE: SharedArray<f32, 256> = SharedArray::UNINIT;
//!     let t = thread::threadIdx_x() as usize;
//!     let idx = thread::index_1d();
//!     let i = idx.get();
//!     // SAFETY: each thread writes its own slot; the barrier orders the reads after.
//!     unsafe { TILE.write(t, if i < x.len() { x[i] } else { 0.0 }) };
//!     thread::sync_threads();
//!     if let Some(o) = out.get_mut(idx) {
//!         *o = unsafe { TILE.read(255 - t) };
//!     }
//! }
//! # fn main() {}
//! ```
//!
//! Outside a kernel body (a helper function), write the attribute yourself,
//! `#[unsafe(link_section = ".oxide.shared")]`, or use [`shared_array!`](crate::shared_array).
//! A static cannot name a generic parameter, so generic kernels use
//! [`DynamicSharedArray`] or a static per concrete type.
//!
//! Shared memory is written and read by every thread of a block, so access is
//! `unsafe`: the kernel orders it with [`sync_threads`](crate::thread::sync_threads).
//! On the host, inside an emulated launch, each block has its own copy of every
//! `SharedArray` static and of the dynamic array (`launch.shared_bytes`, followed by a
//! guard page: an access past it is reported as a fault of that thread); outside one,
//! each OS thread has its own copy of every `SharedArray` static and its own dynamic
//! buffer (a plain call is a one-thread block).

use core::cell::UnsafeCell;
use core::marker::PhantomData;
use core::mem::MaybeUninit;
use core::ops::{Index, IndexMut};

use crate::arch;

/// `N` elements of `T` in block-shared memory, 16-byte aligned (enough for any
/// vector load). Its contents start undefined: the link step drops initialisers.
///
/// `ALIGN` (cuda-oxide's `SharedArray<T, N, ALIGN>`) raises the alignment: any power
/// of two from 1 to 256 (up to 16 it changes nothing; 128 and 256 are what TMA and
/// swizzled tiles want). Another value fails to compile (`Align<ALIGN>:
/// SupportedAlign` is not met).
#[repr(C, align(16))]
pub struct SharedArray<T, const N: usize, const ALIGN: usize = 16>
where
    Align<ALIGN>: SupportedAlign,
{
    _align: [<Align<ALIGN> as SupportedAlign>::Marker; 0],
    data: UnsafeCell<MaybeUninit<[T; N]>>,
}

/// `ALIGN` as a type, for [`SupportedAlign`].
pub struct Align<const ALIGN: usize>;

/// The alignments a [`SharedArray`] may ask for. Rust cannot write
/// `#[repr(align(ALIGN))]` with a const parameter, so each supported value maps to a
/// zero-sized type of that alignment, which the array holds an empty array of.
pub trait SupportedAlign {
    #[doc(hidden)]
    type Marker: Copy;
}

macro_rules! supported_align {
    ($($n:literal => $marker:ident),*) => {$(
        #[doc(hidden)]
        #[derive(Clone, Copy)]
        #[repr(align($n))]
        pub struct $marker;
        impl SupportedAlign for Align<$n> {
            type Marker = $marker;
        }
    )*};
}
supported_align!(1 => Align1, 2 => Align2, 4 => Align4, 8 => Align8, 16 => Align16,
    32 => Align32, 64 => Align64, 128 => Align128, 256 => Align256);

// SAFETY: shared memory exists to be shared by a block's threads; every access that
// could race is `unsafe` and documented as such.
unsafe impl<T: Send, const N: usize, const ALIGN: usize> Sync for SharedArray<T, N, ALIGN> where
    Align<ALIGN>: SupportedAlign
{
}

impl<T, const N: usize, const ALIGN: usize> SharedArray<T, N, ALIGN>
where
    Align<ALIGN>: SupportedAlign,
{
    /// The initialiser every shared static uses (`= SharedArray::UNINIT`). Interior
    /// mutability in a const is the point: it is only ever a static's initialiser.
    #[allow(clippy::declare_interior_mutable_const)]
    pub const UNINIT: Self = SharedArray {
        _align: [],
        data: UnsafeCell::new(MaybeUninit::uninit()),
    };

    /// Number of elements.
    #[inline(always)]
    pub const fn len(&self) -> usize {
        N
    }

    #[inline(always)]
    pub const fn is_empty(&self) -> bool {
        N == 0
    }

    /// Pointer to element 0 (a generic pointer into shared memory).
    #[inline(always)]
    pub fn as_ptr(&self) -> *const T {
        self.as_mut_ptr()
    }

    /// Mutable pointer to element 0. On the host, inside the emulator, this is the
    /// running block's copy of the static.
    #[inline(always)]
    pub fn as_mut_ptr(&self) -> *mut T {
        #[cfg(target_arch = "nvptx64")]
        return self.data.get().cast();
        #[cfg(not(target_arch = "nvptx64"))]
        return arch::shared_static(
            self.data.get().cast(),
            core::mem::size_of::<Self>(),
            core::mem::align_of::<Self>(),
        )
        .cast();
    }

    /// Pointer to element 0 of the array behind `shared`, with no reference made on
    /// the way (cuda-oxide's form for a `static mut`:
    /// `SharedArray::as_raw_mut_ptr(&raw mut TILE)`).
    ///
    /// # Safety
    /// `shared` points to a live `SharedArray`.
    #[inline(always)]
    pub unsafe fn as_raw_mut_ptr(shared: *mut Self) -> *mut T {
        // SAFETY: the caller's pointer is to a live array; `&*` makes a shared
        // reference only, which `UnsafeCell` contents allow while others write.
        unsafe { (*shared).as_mut_ptr() }
    }

    /// Element `i`, bounds-checked (an out-of-bounds `i` traps).
    ///
    /// # Safety
    /// Element `i` was written (by some thread, ordered before this read by a barrier)
    /// and no thread writes it concurrently.
    #[inline(always)]
    pub unsafe fn read(&self, i: usize) -> T
    where
        T: Copy,
    {
        assert!(i < N);
        // SAFETY: in bounds; initialised and race-free by the caller's promise.
        unsafe { self.as_ptr().add(i).read() }
    }

    /// Store `value` at element `i`, bounds-checked.
    ///
    /// # Safety
    /// No other thread reads or writes element `i` concurrently.
    #[inline(always)]
    pub unsafe fn write(&self, i: usize, value: T) {
        assert!(i < N);
        // SAFETY: in bounds; race-free by the caller's promise.
        unsafe { self.as_mut_ptr().add(i).write(value) }
    }
}

impl<T: crate::atomic::AtomicValue, const N: usize, const ALIGN: usize> SharedArray<T, N, ALIGN>
where
    Align<ALIGN>: SupportedAlign,
{
    /// The elements as block-scope atomics: a block's privatised histogram or counters.
    ///
    /// # Safety
    /// Every element was written before (e.g. zeroed, then [`sync_threads`]), and while
    /// the slice is used no thread accesses the elements other than atomically.
    ///
    /// [`sync_threads`]: crate::thread::sync_threads
    #[inline(always)]
    pub unsafe fn as_atomics(&self) -> &[crate::atomic::BlockAtomic<T>] {
        // SAFETY: `ScopedAtomic<T, _>` is `repr(transparent)` over `T`; upheld by the caller.
        unsafe { core::slice::from_raw_parts(self.as_ptr().cast(), N) }
    }
}

/// `TILE[i]` on a `static mut TILE: SharedArray<…>`, as in cuda-oxide. Reading an
/// element no thread wrote is undefined behaviour, as for any uninitialised memory.
impl<T, const N: usize, const ALIGN: usize> Index<usize> for SharedArray<T, N, ALIGN>
where
    Align<ALIGN>: SupportedAlign,
{
    type Output = T;
    #[inline(always)]
    fn index(&self, i: usize) -> &T {
        assert!(i < N);
        // SAFETY: in bounds; initialisation is the caller's (see the impl's doc).
        unsafe { &*self.as_ptr().add(i) }
    }
}

impl<T, const N: usize, const ALIGN: usize> IndexMut<usize> for SharedArray<T, N, ALIGN>
where
    Align<ALIGN>: SupportedAlign,
{
    #[inline(always)]
    fn index_mut(&mut self, i: usize) -> &mut T {
        assert!(i < N);
        // SAFETY: in bounds, through an exclusive borrow.
        unsafe { &mut *self.as_mut_ptr().add(i) }
    }
}

/// A `&'static SharedArray<T, N>` of its own, one per call site:
/// `let tile = shared_array!(f32, 256);`. For helpers outside `#[kernel]` bodies.
#[macro_export]
macro_rules! shared_array {
    ($t:ty, $n:expr) => {{
        #[unsafe(link_section = ".oxide.shared")]
        static SHARED: $crate::shared::SharedArray<$t, { $n }> =
            $crate::shared::SharedArray::UNINIT;
        &SHARED
    }};
}

/// The dynamic shared memory of a launch, whose size in bytes the launch gives
/// (`shared_mem=` in Python, `sharedMemBytes` in CUDA), seen as elements of `T`.
///
/// There is one such region per block: every `DynamicSharedArray` of a kernel views the
/// same bytes; carve it up with [`offset`](Self::offset). It is 16-byte aligned;
/// `ALIGN` (cuda-oxide's `DynamicSharedArray<T, ALIGN>`) may be a power of two up to
/// 256, and on the GPU the region is then aligned to the largest `ALIGN` the kernel
/// names (as in cuda-oxide). The emulator's region stays 16-byte aligned (its end
/// meets a guard page that catches overruns to the byte).
pub struct DynamicSharedArray<T, const ALIGN: usize = 16> {
    _t: PhantomData<T>,
}

impl<T, const ALIGN: usize> DynamicSharedArray<T, ALIGN> {
    const ALIGN_OK: () = assert!(
        ALIGN.is_power_of_two() && ALIGN <= 256,
        "DynamicSharedArray's ALIGN must be a power of two no larger than 256"
    );

    /// Pointer to the first element of the region.
    #[inline(always)]
    pub fn get() -> *mut T {
        Self::get_raw().cast()
    }

    /// The region's first byte (cuda-oxide's `get_raw`: carve it up by bytes).
    #[inline(always)]
    pub fn get_raw() -> *mut u8 {
        let () = Self::ALIGN_OK;
        arch::dynamic_shared_base_aligned(ALIGN)
    }

    /// Pointer `bytes` bytes into the region (for a second array after a first).
    ///
    /// The pointer is valid only within the launch's shared-memory size; `bytes`
    /// should keep `T`'s alignment.
    #[inline(always)]
    pub fn offset(bytes: usize) -> *mut T {
        Self::get_raw().wrapping_add(bytes).cast()
    }

    /// Bytes of dynamic shared memory this launch gave the block (`shared_mem=` in
    /// Python; `%dynamic_smem_size` on the GPU). A kernel that needs a given size checks
    /// it: `gpu_assert!(DynamicSharedArray::<u32>::len() >= warps)`.
    #[inline(always)]
    pub fn bytes() -> usize {
        arch::dynamic_shared_bytes()
    }

    /// Whole elements of `T` that fit in the launch's dynamic shared memory.
    #[inline(always)]
    pub fn len() -> usize {
        let () = Self::ALIGN_OK;
        match core::mem::size_of::<T>() {
            0 => usize::MAX,
            size => Self::bytes() / size,
        }
    }

    /// The region as a slice of `len` elements.
    ///
    /// # Safety
    /// `len * size_of::<T>()` bytes fit in the launch's dynamic shared memory, they
    /// hold valid `T`s, and no thread writes them while the slice lives.
    #[inline(always)]
    pub unsafe fn as_slice<'a>(len: usize) -> &'a [T] {
        // SAFETY: upheld by the caller.
        unsafe { core::slice::from_raw_parts(Self::get(), len) }
    }
}

/// Bytes of dynamic shared memory this launch gave the block (cuda-oxide's name for
/// [`DynamicSharedArray::bytes`]; PTX `%dynamic_smem_size`).
#[inline(always)]
pub fn dynamic_smem_size() -> u32 {
    arch::dynamic_shared_bytes() as u32
}

/// Bytes of shared memory a block of this launch has, its `SharedArray`s and the
/// dynamic region together (PTX `%total_smem_size`). On the emulator, the dynamic bytes
/// only: its `SharedArray`s are separate host allocations.
#[inline(always)]
pub fn total_smem_size() -> u32 {
    arch::total_shared_bytes() as u32
}

/// The offset of a generic pointer into shared memory within the `.shared` window
/// (`cvta.to.shared.u64`), as hardware descriptors (`wgmma`, `tcgen05`) take it;
/// cuda-oxide's `shared::cvta_generic_to_shared_offset`. A Rust pointer's own value
/// stays the generic address. The emulator refuses it by name (it has no `.shared`
/// window).
///
/// # Safety
/// `ptr` points into shared memory (a `SharedArray`, the dynamic region); for another
/// pointer the offset is unspecified.
#[inline(always)]
pub unsafe fn cvta_generic_to_shared_offset(ptr: *const u8) -> u64 {
    arch::cvta_to_shared(ptr)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shared_array_holds_what_was_written() {
        static TILE: SharedArray<u32, 4> = SharedArray::UNINIT;
        for i in 0..4 {
            // SAFETY: one thread.
            unsafe { TILE.write(i, i as u32 * 10) };
        }
        // SAFETY: written above.
        assert_eq!(unsafe { TILE.read(3) }, 30);
        assert_eq!(TILE.len(), 4);
        assert_eq!(TILE.as_ptr() as usize % 16, 0);
    }

    #[test]
    fn the_emulator_can_point_dynamic_shared_memory_at_a_block_buffer() {
        use crate::__private::emu::set_dynamic_shared;
        let mut block = [0u128; 4];
        let base = block.as_mut_ptr().cast::<u8>();
        // SAFETY: `block` is aligned and outlives the setting.
        let previous = unsafe { set_dynamic_shared(base) };
        assert_eq!(DynamicSharedArray::<u32>::get().cast::<u8>(), base);
        // SAFETY: back to the fallback.
        unsafe { set_dynamic_shared(previous) };
        assert_ne!(DynamicSharedArray::<u32>::get().cast::<u8>(), base);
    }

    #[test]
    fn cuda_oxide_alignment_parameter() {
        static TILE: SharedArray<u8, 3, 8> = SharedArray::UNINIT;
        assert_eq!(TILE.as_ptr() as usize % 16, 0);
        assert_eq!(DynamicSharedArray::<f32, 4>::get() as usize % 16, 0);
    }

    #[test]
    fn each_macro_call_site_is_its_own_array() {
        let a = shared_array!(f32, 8);
        let b = shared_array!(f32, 8);
        assert_ne!(a.as_ptr(), b.as_ptr());
    }

    #[test]
    fn dynamic_shared_memory_is_aligned_and_offsettable() {
        let base = DynamicSharedArray::<f64>::get();
        assert_eq!(base as usize % 16, 0);
        let second = DynamicSharedArray::<u32>::offset(64);
        assert_eq!(second as usize - base as usize, 64);
        // SAFETY: the host region is 227 KiB.
        unsafe {
            base.write(1.5);
            assert_eq!(DynamicSharedArray::<f64>::as_slice(1), &[1.5]);
        }
    }

    #[test]
    fn large_alignments_hold_in_and_out_of_a_block() {
        static TILE: SharedArray<f32, 8, 256> = SharedArray::UNINIT;
        static TILE128: SharedArray<u8, 3, 128> = SharedArray::UNINIT;
        assert_eq!(core::mem::align_of::<SharedArray<f32, 8, 256>>(), 256);
        assert_eq!(TILE.as_ptr() as usize % 256, 0);
        assert_eq!(TILE128.as_ptr() as usize % 128, 0);
        // Inside an emulated block each array is the block's own copy, still aligned.
        let p = crate::arch::shared_static(TILE.data.get().cast(), 32, 256);
        assert_eq!(p as usize % 256, 0);
    }
}
