//! Constant memory, as cuda-oxide has it: a `#[constant]` static of type
//! `ConstantMemory<T>`, written by the host before a launch and read by every thread.
//!
//! ```ignore
//! #[constant]
//! static COEFFS: ConstantMemory<[f32; 4]> = ConstantMemory::UNINIT;
//!
//! #[kernel]
//! pub fn poly(x: &[f32], mut y: DisjointSlice<f32>) {
//!     let [c0, c1, c2, c3] = COEFFS.get();
//!     // …
//! }
//! ```
//!
//! From Python, `module.set_coeffs([1.0, 2.0, 3.0, 4.0])` (cuda-oxide's generated
//! `set_<name>`) or `module.set_constant("COEFFS", value)` writes the value on every
//! backend the module runs on, and on those it loads later. On the GPU the static lives
//! in the `.const` state space (the link step moves it there; the constant cache serves
//! a warp that reads one address in one transaction); on the emulator it is an ordinary
//! static of the library. Until set it holds zeros.

use core::cell::UnsafeCell;

/// Types a constant can hold: plain data the host can write as bytes.
///
/// # Safety
/// Every bit pattern the host may write must be a valid value (no references).
pub unsafe trait ConstantMemoryValue: Copy {}

macro_rules! constant_values {
    ($($t:ty),*) => { $(unsafe impl ConstantMemoryValue for $t {})* };
}
constant_values!(
    i8,
    i16,
    i32,
    i64,
    i128,
    isize,
    u8,
    u16,
    u32,
    u64,
    u128,
    usize,
    f32,
    f64,
    bool,
    crate::f16,
    crate::bf16
);
unsafe impl<T: ConstantMemoryValue, const N: usize> ConstantMemoryValue for [T; N] {}
unsafe impl<T: ?Sized> ConstantMemoryValue for *const T {}
unsafe impl<T: ?Sized> ConstantMemoryValue for *mut T {}

macro_rules! constant_tuples {
    ($(($($n:ident),+)),*) => {
        $(unsafe impl<$($n: ConstantMemoryValue),+> ConstantMemoryValue for ($($n,)+) {})*
    };
}
constant_tuples!(
    (A),
    (A, B),
    (A, B, C),
    (A, B, C, D),
    (A, B, C, D, E),
    (A, B, C, D, E, F)
);

/// A value in constant memory; declare it as a `#[constant]` static.
#[repr(transparent)]
pub struct ConstantMemory<T: ConstantMemoryValue>(UnsafeCell<T>);

// SAFETY: kernels only read it; the host writes it between launches.
unsafe impl<T: ConstantMemoryValue + Send> Sync for ConstantMemory<T> {}

impl<T: ConstantMemoryValue> ConstantMemory<T> {
    /// All zeros until the host sets it (as cuda-oxide's `UNINIT` is).
    // A const with an `UnsafeCell` is what initialises a `static` here (each use is a
    // fresh value, which is the point).
    #[allow(clippy::declare_interior_mutable_const)]
    // SAFETY: every ConstantMemoryValue is valid as zeros (numbers, arrays and tuples
    // of them, null pointers).
    pub const UNINIT: Self = ConstantMemory(UnsafeCell::new(unsafe {
        core::mem::MaybeUninit::<T>::zeroed().assume_init()
    }));

    /// The value, copied.
    #[inline(always)]
    pub fn get(&self) -> T {
        // SAFETY: no kernel writes it; the host writes only between launches.
        unsafe { *self.0.get() }
    }

    /// The value, borrowed (index a table without copying it).
    #[inline(always)]
    pub fn get_ref(&self) -> &T {
        // SAFETY: as for `get`.
        unsafe { &*self.0.get() }
    }
}
