//! Scoped atomics: `{Block,Device,System}Atomic{U32,I32,U64,I64,F32,F64}`, and
//! [`AtomicSlice`], the kernel parameter through which every thread may update any
//! element of an array safely (histograms, accumulators).
//!
//! The scope says which threads must observe an operation: `Block` the threads of one
//! block (cheapest; for atomics on shared memory), `Device` every thread of the GPU
//! (the usual choice for global memory), `System` the host and peer GPUs too. The
//! orderings are `core`'s five, with `core`'s rules (a load cannot `Release`, a store
//! cannot `Acquire`). On the GPU each operation is one PTX `atom`/`ld`/`st` with that
//! scope and semantics; on the host they are `core::sync::atomic` operations.
//!
//! `core::sync::atomic` compiles for the GPU as well: LLVM emits `atom` without a scope,
//! which PTX takes as device scope (`.gpu`).

use core::cell::UnsafeCell;
use core::marker::PhantomData;
pub use core::sync::atomic::Ordering;
/// cuda-oxide's name for the orderings; its variants are `core`'s.
pub use core::sync::atomic::Ordering as AtomicOrdering;

/// One ordering with the guarantees of both `success` and `failure`.
#[inline(always)]
fn cas_ordering(success: Ordering, failure: Ordering) -> Ordering {
    use Ordering::*;
    match (success, failure) {
        (_, SeqCst) | (SeqCst, _) => SeqCst,
        (Release, Acquire) | (AcqRel, _) => AcqRel,
        (Relaxed, Acquire) => Acquire,
        (s, _) => s,
    }
}

use crate::arch::{self, Scope};

mod sealed {
    pub trait Sealed {}
}

/// A memory scope, as a type: [`Block`], [`Device`] or [`System`].
pub trait MemoryScope: sealed::Sealed {
    #[doc(hidden)]
    const ID: u8;
}

/// Visible to the threads of one block.
pub struct Block;
/// Visible to every thread of the device.
pub struct Device;
/// Visible to the host and other devices too.
pub struct System;

impl sealed::Sealed for Block {}
impl sealed::Sealed for Device {}
impl sealed::Sealed for System {}
impl MemoryScope for Block {
    const ID: u8 = 0;
}
impl MemoryScope for Device {
    const ID: u8 = 1;
}
impl MemoryScope for System {
    const ID: u8 = 2;
}

#[inline(always)]
fn scope<S: MemoryScope>() -> Scope {
    match S::ID {
        0 => Scope::Block,
        1 => Scope::Device,
        _ => Scope::System,
    }
}

/// A value type with atomic operations: `u32 i32 u64 i64 f32 f64`.
pub trait AtomicValue: Copy + sealed::Sealed {
    #[doc(hidden)]
    unsafe fn load(p: *const Self, scope: Scope, order: Ordering) -> Self;
    #[doc(hidden)]
    unsafe fn store(p: *mut Self, v: Self, scope: Scope, order: Ordering);
    #[doc(hidden)]
    unsafe fn swap(p: *mut Self, v: Self, scope: Scope, order: Ordering) -> Self;
    #[doc(hidden)]
    unsafe fn cas(p: *mut Self, current: Self, new: Self, scope: Scope, order: Ordering) -> Self;
    #[doc(hidden)]
    unsafe fn add(p: *mut Self, v: Self, scope: Scope, order: Ordering) -> Self;
    #[doc(hidden)]
    fn negate(v: Self) -> Self;
    #[doc(hidden)]
    fn same_bits(a: Self, b: Self) -> bool;
}

/// Integer atomics also have min, max and the bitwise operations.
pub trait AtomicInt: AtomicValue {
    #[doc(hidden)]
    unsafe fn min(p: *mut Self, v: Self, scope: Scope, order: Ordering) -> Self;
    #[doc(hidden)]
    unsafe fn max(p: *mut Self, v: Self, scope: Scope, order: Ordering) -> Self;
    #[doc(hidden)]
    unsafe fn and(p: *mut Self, v: Self, scope: Scope, order: Ordering) -> Self;
    #[doc(hidden)]
    unsafe fn or(p: *mut Self, v: Self, scope: Scope, order: Ordering) -> Self;
    #[doc(hidden)]
    unsafe fn xor(p: *mut Self, v: Self, scope: Scope, order: Ordering) -> Self;
}

/// Implements the traits for each `$t` whose unsigned word (the bits of [`BitsOf`]) the
/// instructions `$load`, `$store`, `$exch` and `$cas` work on, and whose add is `$add`.
macro_rules! atomic_value {
    ($([$load:ident, $store:ident, $exch:ident, $cas:ident] {
        $($t:ty: $add:ident, $neg:expr;)*
    })*) => {$($(
        impl sealed::Sealed for $t {}
        impl AtomicValue for $t {
            #[inline(always)]
            unsafe fn load(p: *const Self, scope: Scope, order: Ordering) -> Self {
                // SAFETY: same size and alignment; upheld by the caller.
                <$t>::from_bits_of(unsafe { arch::$load(p.cast(), scope, order) })
            }
            #[inline(always)]
            unsafe fn store(p: *mut Self, v: Self, scope: Scope, order: Ordering) {
                // SAFETY: as `load`.
                unsafe { arch::$store(p.cast(), v.bits_of(), scope, order) }
            }
            #[inline(always)]
            unsafe fn swap(p: *mut Self, v: Self, scope: Scope, order: Ordering) -> Self {
                // SAFETY: as `load`.
                <$t>::from_bits_of(unsafe { arch::$exch(p.cast(), v.bits_of(), scope, order) })
            }
            #[inline(always)]
            unsafe fn cas(p: *mut Self, current: Self, new: Self, scope: Scope, order: Ordering) -> Self {
                // SAFETY: as `load`.
                <$t>::from_bits_of(unsafe {
                    arch::$cas(p.cast(), current.bits_of(), new.bits_of(), scope, order)
                })
            }
            #[inline(always)]
            unsafe fn add(p: *mut Self, v: Self, scope: Scope, order: Ordering) -> Self {
                // SAFETY: as `load`; `$add` takes `$t` or its same-sized unsigned twin.
                unsafe { arch::$add(p.cast(), v as _, scope, order) as $t }
            }
            #[inline(always)]
            fn negate(v: Self) -> Self {
                ($neg)(v)
            }
            #[inline(always)]
            fn same_bits(a: Self, b: Self) -> bool {
                a.bits_of() == b.bits_of()
            }
        }
    )*)*};
}

/// Bit casts between an atomic value type and its unsigned word.
trait BitsOf: Sized {
    type Word;
    fn bits_of(self) -> Self::Word;
    fn from_bits_of(w: Self::Word) -> Self;
}

macro_rules! bits_of {
    ($($t:ty: $w:ty, $to:expr, $from:expr;)*) => {$(
        impl BitsOf for $t {
            type Word = $w;
            #[inline(always)]
            fn bits_of(self) -> $w {
                ($to)(self)
            }
            #[inline(always)]
            fn from_bits_of(w: $w) -> Self {
                ($from)(w)
            }
        }
    )*};
}

bits_of! {
    u32: u32, |v: u32| v, |w: u32| w;
    i32: u32, |v: i32| v as u32, |w: u32| w as i32;
    f32: u32, f32::to_bits, f32::from_bits;
    u64: u64, |v: u64| v, |w: u64| w;
    i64: u64, |v: i64| v as u64, |w: u64| w as i64;
    f64: u64, f64::to_bits, f64::from_bits;
}

// Signed add is unsigned add (two's complement); floats have their own instructions.
atomic_value! {
    [atom_load_u32, atom_store_u32, atom_exch_u32, atom_cas_u32] {
        u32: atom_add_u32, u32::wrapping_neg;
        i32: atom_add_u32, i32::wrapping_neg;
        f32: atom_add_f32, |v: f32| -v;
    }
    [atom_load_u64, atom_store_u64, atom_exch_u64, atom_cas_u64] {
        u64: atom_add_u64, u64::wrapping_neg;
        i64: atom_add_u64, i64::wrapping_neg;
        f64: atom_add_f64, |v: f64| -v;
    }
}

macro_rules! atomic_int {
    ($($t:ty: $($op:ident = $f:ident),*;)*) => {$(
        impl AtomicInt for $t {$(
            #[inline(always)]
            unsafe fn $op(p: *mut Self, v: Self, scope: Scope, order: Ordering) -> Self {
                // SAFETY: upheld by the caller; bitwise operations ignore signedness.
                unsafe { arch::$f(p.cast(), v as _, scope, order) as $t }
            }
        )*}
    )*};
}

atomic_int! {
    u32: min = atom_min_u32, max = atom_max_u32, and = atom_and_u32, or = atom_or_u32, xor = atom_xor_u32;
    i32: min = atom_min_i32, max = atom_max_i32, and = atom_and_u32, or = atom_or_u32, xor = atom_xor_u32;
    u64: min = atom_min_u64, max = atom_max_u64, and = atom_and_u64, or = atom_or_u64, xor = atom_xor_u64;
    i64: min = atom_min_i64, max = atom_max_i64, and = atom_and_u64, or = atom_or_u64, xor = atom_xor_u64;
}

/// A `T` updated atomically at scope `S`; use the aliases (`DeviceAtomicU32`, …).
#[repr(transparent)]
pub struct ScopedAtomic<T, S> {
    value: UnsafeCell<T>,
    _scope: PhantomData<S>,
}

// SAFETY: every access goes through an atomic instruction.
unsafe impl<T: Send, S> Sync for ScopedAtomic<T, S> {}

macro_rules! aliases {
    ($($scope:ident: $($alias:ident = $t:ty),*;)*) => {$($(
        #[doc = concat!("An atomic `", stringify!($t), "` at ", stringify!($scope), " scope.")]
        pub type $alias = ScopedAtomic<$t, $scope>;
    )*)*};
}

aliases! {
    Block: BlockAtomicU32 = u32, BlockAtomicI32 = i32, BlockAtomicU64 = u64,
        BlockAtomicI64 = i64, BlockAtomicF32 = f32, BlockAtomicF64 = f64;
    Device: DeviceAtomicU32 = u32, DeviceAtomicI32 = i32, DeviceAtomicU64 = u64,
        DeviceAtomicI64 = i64, DeviceAtomicF32 = f32, DeviceAtomicF64 = f64;
    System: SystemAtomicU32 = u32, SystemAtomicI32 = i32, SystemAtomicU64 = u64,
        SystemAtomicI64 = i64, SystemAtomicF32 = f32, SystemAtomicF64 = f64;
}

/// An atomic `T` at block scope (generic form of `BlockAtomicU32`, …).
pub type BlockAtomic<T> = ScopedAtomic<T, Block>;
/// An atomic `T` at device scope.
pub type DeviceAtomic<T> = ScopedAtomic<T, Device>;
/// An atomic `T` at system scope.
pub type SystemAtomic<T> = ScopedAtomic<T, System>;

impl<T: AtomicValue, S: MemoryScope> ScopedAtomic<T, S> {
    /// A new atomic (for statics).
    pub const fn new(value: T) -> Self {
        ScopedAtomic {
            value: UnsafeCell::new(value),
            _scope: PhantomData,
        }
    }

    /// View memory as an atomic.
    ///
    /// # Safety
    /// `ptr` is aligned and valid for `'a`, and while the reference lives every access
    /// to it (by any thread) is atomic.
    #[inline(always)]
    pub unsafe fn from_ptr<'a>(ptr: *mut T) -> &'a Self {
        // SAFETY: `repr(transparent)` over `UnsafeCell<T>`; upheld by the caller.
        unsafe { &*ptr.cast() }
    }

    /// View an exclusively borrowed slice as atomics (safe: the borrow excludes every
    /// other access).
    #[inline(always)]
    pub fn from_mut_slice(slice: &mut [T]) -> &[Self] {
        // SAFETY: same layout; the exclusive borrow makes every access go through us.
        unsafe { core::slice::from_raw_parts(slice.as_mut_ptr().cast(), slice.len()) }
    }

    /// The address (for intrinsics that take one).
    #[inline(always)]
    pub const fn as_ptr(&self) -> *mut T {
        self.value.get()
    }

    #[inline(always)]
    pub fn load(&self, order: Ordering) -> T {
        assert!(
            !matches!(order, Ordering::Release | Ordering::AcqRel),
            "no release load"
        );
        // SAFETY: `self` is an atomic cell.
        unsafe { T::load(self.as_ptr(), scope::<S>(), order) }
    }

    #[inline(always)]
    pub fn store(&self, value: T, order: Ordering) {
        assert!(
            !matches!(order, Ordering::Acquire | Ordering::AcqRel),
            "no acquire store"
        );
        // SAFETY: as `load`.
        unsafe { T::store(self.as_ptr(), value, scope::<S>(), order) }
    }

    /// Store `value`, returning the previous value.
    #[inline(always)]
    pub fn swap(&self, value: T, order: Ordering) -> T {
        // SAFETY: as `load`.
        unsafe { T::swap(self.as_ptr(), value, scope::<S>(), order) }
    }

    /// Store `new` if the value is (bitwise) `current`; `Ok(previous)` if it was,
    /// `Err(actual)` if not. `success` and `failure` are the orderings of the two
    /// outcomes, as in `core` and cuda-oxide; PTX's `atom.cas` has one ordering, so it
    /// runs with the weakest that gives both.
    #[inline(always)]
    pub fn compare_exchange(
        &self,
        current: T,
        new: T,
        success: Ordering,
        failure: Ordering,
    ) -> Result<T, T> {
        let order = cas_ordering(success, failure);
        // SAFETY: as `load`.
        let previous = unsafe { T::cas(self.as_ptr(), current, new, scope::<S>(), order) };
        if T::same_bits(previous, current) {
            Ok(previous)
        } else {
            Err(previous)
        }
    }

    /// Add `value` (wrapping for integers), returning the previous value.
    #[inline(always)]
    pub fn fetch_add(&self, value: T, order: Ordering) -> T {
        // SAFETY: as `load`.
        unsafe { T::add(self.as_ptr(), value, scope::<S>(), order) }
    }

    /// Subtract `value` (wrapping for integers), returning the previous value.
    #[inline(always)]
    pub fn fetch_sub(&self, value: T, order: Ordering) -> T {
        self.fetch_add(T::negate(value), order)
    }
}

/// The integer read-modify-writes: `fetch_min` calls [`AtomicInt::min`], and so on.
macro_rules! fetch_int {
    ($($name:ident: $op:ident, $what:literal;)*) => {$(
        #[doc = concat!("Replace the value with ", $what, ", returning the previous value.")]
        #[inline(always)]
        pub fn $name(&self, value: T, order: Ordering) -> T {
            // SAFETY: `self` is an atomic cell.
            unsafe { T::$op(self.as_ptr(), value, scope::<S>(), order) }
        }
    )*};
}

impl<T: AtomicInt, S: MemoryScope> ScopedAtomic<T, S> {
    fetch_int! {
        fetch_min: min, "the smaller of it and `value`";
        fetch_max: max, "the larger of it and `value`";
        fetch_and: and, "its bitwise AND with `value`";
        fetch_or: or, "its bitwise OR with `value`";
        fetch_xor: xor, "its bitwise XOR with `value`";
    }
}

/// `atom.add.noftz.f16x2` (sm_70): add the two halves of `val` to the two halves of
/// the word at `addr` (low to low, high to high; each rounded to nearest even, subnormals
/// kept), atomically at device scope; returns the old word. cuda-oxide's
/// `atomic::atom_add_f16x2`. The emulator adds exactly as `add.rn.f16x2` does.
///
/// # Safety
/// `addr` points to a 4-byte-aligned word in global memory that, while this runs, other
/// threads touch only through these packed atomics.
#[must_use]
#[inline(always)]
pub unsafe fn atom_add_f16x2(addr: *mut u32, val: u32) -> u32 {
    // SAFETY: upheld by the caller.
    unsafe { crate::arch::atom_add_f16x2(addr, val) }
}

/// The packed `bf16x2` form of [`atom_add_f16x2`] (cuda-oxide's
/// `atomic::atom_add_bf16x2`). PTX has `atom.add.noftz.bf16x2` from sm_90 only and the
/// module's one PTX text serves sm_80 too, so it is a compare-and-swap loop on the word
/// on every architecture: each half is added in `f32` and rounded to nearest even
/// (`f32` has more than twice bf16's 8 bits, so that is the correctly rounded sum), the
/// result the instruction gives, the same on the emulator. The word then changes as a
/// whole, which is atomic for each half too.
///
/// # Safety
/// As [`atom_add_f16x2`].
#[must_use]
#[inline(always)]
pub unsafe fn atom_add_bf16x2(addr: *mut u32, val: u32) -> u32 {
    use crate::half::bf16;
    fn add(a: u16, b: u16) -> u32 {
        let sum = bf16::from_bits(a).to_f32() + bf16::from_bits(b).to_f32();
        if sum.is_nan() {
            0x7fff
        } else {
            bf16::from_f32(sum).to_bits() as u32
        }
    }
    // SAFETY: upheld by the caller.
    let word = unsafe { DeviceAtomic::<u32>::from_ptr(addr) };
    let mut old = word.load(Ordering::Relaxed);
    loop {
        let new = add(old as u16, val as u16) | add((old >> 16) as u16, (val >> 16) as u16) << 16;
        match word.compare_exchange(old, new, Ordering::Relaxed, Ordering::Relaxed) {
            Ok(previous) => return previous,
            Err(current) => old = current,
        }
    }
}

/// A kernel parameter (`bins: AtomicSlice<u32>`) that every thread may update at any
/// index, atomically at device scope: it dereferences to `[DeviceAtomic…]`, so
/// `bins[i].fetch_add(1, Ordering::Relaxed)`. ABI: pointer, length (as `&[T]`).
pub struct AtomicSlice<'a, T: AtomicValue> {
    elems: &'a [ScopedAtomic<T, Device>],
}

impl<'a, T: AtomicValue> AtomicSlice<'a, T> {
    /// # Safety
    /// `ptr` is valid and aligned for `len` elements for `'a` (may dangle when `len`
    /// is 0), and during the launch every access to them is atomic.
    #[inline(always)]
    pub unsafe fn from_raw_parts(ptr: *mut T, len: usize) -> Self {
        // SAFETY: upheld by the caller; same layout as `T`.
        let elems = unsafe { core::slice::from_raw_parts(ptr.cast(), len) };
        AtomicSlice { elems }
    }

    /// Borrow an ordinary slice (host tests call kernels this way).
    #[inline(always)]
    pub fn from_mut(slice: &'a mut [T]) -> Self {
        AtomicSlice {
            elems: ScopedAtomic::from_mut_slice(slice),
        }
    }
}

impl<'a, T: AtomicValue> core::ops::Deref for AtomicSlice<'a, T> {
    type Target = [ScopedAtomic<T, Device>];
    #[inline(always)]
    fn deref(&self) -> &Self::Target {
        self.elems
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Ordering::*;

    #[test]
    fn integer_operations() {
        let a = DeviceAtomicI32::new(5);
        assert_eq!(a.fetch_add(-7, Relaxed), 5);
        assert_eq!(a.fetch_sub(1, SeqCst), -2);
        assert_eq!(a.fetch_max(4, AcqRel), -3);
        assert_eq!(a.fetch_min(-9, Relaxed), 4);
        assert_eq!(a.swap(0b1100, Acquire), -9);
        assert_eq!(a.fetch_and(0b1010, Release), 0b1100);
        assert_eq!(a.fetch_or(1, Relaxed), 0b1000);
        assert_eq!(a.fetch_xor(0b1111, Relaxed), 0b1001);
        assert_eq!(a.load(SeqCst), 0b0110);
        assert_eq!(a.compare_exchange(6, 1, SeqCst, SeqCst), Ok(6));
        assert_eq!(a.compare_exchange(6, 2, Relaxed, Relaxed), Err(1));
        let b = SystemAtomicU64::new(u64::MAX);
        assert_eq!(b.fetch_add(2, Relaxed), u64::MAX);
        assert_eq!(b.load(Relaxed), 1);
        let c = BlockAtomicI64::new(-1);
        c.store(i64::MIN, Relaxed);
        assert_eq!(c.fetch_max(0, Relaxed), i64::MIN);
    }

    #[test]
    fn float_operations() {
        let a = DeviceAtomicF32::new(1.5);
        assert_eq!(a.fetch_add(2.0, Relaxed), 1.5);
        assert_eq!(a.fetch_sub(0.5, Relaxed), 3.5);
        assert_eq!(a.load(Relaxed), 3.0);
        assert_eq!(a.compare_exchange(3.0, -1.0, Release, Acquire), Ok(3.0));
        let b = BlockAtomicF64::new(0.0);
        b.store(0.25, Release);
        assert_eq!(b.swap(4.0, AcqRel), 0.25);
    }

    #[test]
    fn an_atomic_slice_updates_any_element() {
        let mut bins = [0u32; 3];
        {
            let s = AtomicSlice::from_mut(&mut bins);
            for v in [0, 2, 2, 1, 2] {
                s[v].fetch_add(1, Relaxed);
            }
            assert_eq!(s.len(), 3);
        }
        assert_eq!(bins, [1, 1, 3]);
        let mut raw = [7u64];
        // SAFETY: points at `raw`, accessed only atomically while `a` lives.
        let a = unsafe { DeviceAtomicU64::from_ptr(raw.as_mut_ptr()) };
        assert_eq!(a.fetch_add(1, Relaxed), 7);
    }

    #[test]
    #[should_panic(expected = "no release load")]
    fn a_release_load_is_refused() {
        DeviceAtomicU32::new(0).load(Release);
    }
}
