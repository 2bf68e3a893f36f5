//! Raw global-memory loads and stores for kernels that do their own bounds and
//! alignment checks (the row and tile kernels of kernels_rs): read-only loads through
//! the non-coherent path (`ld.global.nc`, the texture/L1 read-only cache) and 128-bit
//! vector accesses of four `f32` (`ld.global.nc.v4.f32`, `st.global.v4.f32`).
//!
//! Everything here is `unsafe` and takes raw pointers; the safe, slice-based vector API
//! is separate work (issue #10) and these may fold into it. On the host they are plain
//! (unaligned-tolerant) reads and writes, so kernels using them run in the emulator.
//!
//! Why `asm!`: Rust cannot name LLVM's global address space or the `!invariant.load`
//! that would let LLVM pick `ld.global.nc` by itself, and a generic `ld.v4` is what a
//! plain `read()` of `[f32; 4]` gives at best.

/// An element type that can be loaded through the read-only data cache.
pub trait ReadOnlyLoad: Copy {
    /// `*p`, loaded with `ld.global.nc` on the GPU.
    ///
    /// # Safety
    /// `p` is valid for a read of `Self`, aligned, points into global memory (a kernel's
    /// array argument), and nothing writes that memory during the launch (so `&[T]`
    /// parameters qualify; a `DisjointSlice` being written does not).
    unsafe fn load_nc(p: *const Self) -> Self;
}

#[cfg(target_arch = "nvptx64")]
macro_rules! read_only_load {
    ($($t:ty: $reg:ident, $ty:literal;)*) => {$(
        impl ReadOnlyLoad for $t {
            #[inline(always)]
            unsafe fn load_nc(p: *const $t) -> $t {
                let v: $t;
                // SAFETY: upheld by the caller. `pure, readonly`: no side effects and
                // no writes, so LLVM may schedule it like an ordinary load.
                unsafe {
                    core::arch::asm!(
                        concat!("ld.global.nc", $ty, " {v}, [{p}];"),
                        v = out($reg) v, p = in(reg64) p,
                        options(pure, readonly, nostack, preserves_flags),
                    )
                };
                v
            }
        }
    )*};
}

#[cfg(target_arch = "nvptx64")]
read_only_load! {
    f32: reg32, ".f32"; u32: reg32, ".u32"; i32: reg32, ".s32";
    f64: reg64, ".f64"; u64: reg64, ".u64"; i64: reg64, ".s64";
}

#[cfg(not(target_arch = "nvptx64"))]
macro_rules! read_only_load {
    ($($t:ty),*) => {$(
        impl ReadOnlyLoad for $t {
            #[inline(always)]
            unsafe fn load_nc(p: *const $t) -> $t {
                // SAFETY: upheld by the caller.
                unsafe { p.read() }
            }
        }
    )*};
}

#[cfg(not(target_arch = "nvptx64"))]
read_only_load!(f32, u32, i32, f64, u64, i64);

/// Four `f32` at `p..p + 4` in one 128-bit read-only load (`ld.global.nc.v4.f32`).
///
/// # Safety
/// As [`ReadOnlyLoad::load_nc`] for all four elements, and `p` is 16-byte aligned.
#[inline(always)]
pub unsafe fn load_nc_f32x4(p: *const f32) -> [f32; 4] {
    #[cfg(target_arch = "nvptx64")]
    {
        let (a, b, c, d): (f32, f32, f32, f32);
        // SAFETY: upheld by the caller.
        unsafe {
            core::arch::asm!(
                "ld.global.nc.v4.f32 {{{a}, {b}, {c}, {d}}}, [{p}];",
                a = out(reg32) a, b = out(reg32) b, c = out(reg32) c, d = out(reg32) d,
                p = in(reg64) p,
                options(pure, readonly, nostack, preserves_flags),
            )
        };
        [a, b, c, d]
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        debug_assert!(
            (p as usize).is_multiple_of(16),
            "load_nc_f32x4: {p:?} is not 16-byte aligned"
        );
        // SAFETY: upheld by the caller.
        unsafe { p.cast::<[f32; 4]>().read() }
    }
}

/// Store four `f32` at `p..p + 4` in one 128-bit store (`st.global.v4.f32`).
///
/// # Safety
/// `p` is valid for writes of four `f32`, 16-byte aligned, in global memory, and no
/// other thread accesses those elements during the launch.
#[inline(always)]
pub unsafe fn store_f32x4(p: *mut f32, v: [f32; 4]) {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: upheld by the caller. Without `nomem` the block is a compiler barrier for
    // memory, as a store must be.
    unsafe {
        core::arch::asm!(
            "st.global.v4.f32 [{p}], {{{a}, {b}, {c}, {d}}};",
            p = in(reg64) p,
            a = in(reg32) v[0], b = in(reg32) v[1], c = in(reg32) v[2], d = in(reg32) v[3],
            options(nostack, preserves_flags),
        )
    };
    #[cfg(not(target_arch = "nvptx64"))]
    {
        debug_assert!(
            (p as usize).is_multiple_of(16),
            "store_f32x4: {p:?} is not 16-byte aligned"
        );
        // SAFETY: upheld by the caller.
        unsafe { p.cast::<[f32; 4]>().write(v) }
    }
}

/// `$x` (a 64-bit value of type `$t`), unchanged: on the GPU one register move that is
/// not `pure`, so LLVM may neither hoist nor merge it; on the host `black_box`.
macro_rules! opaque_move {
    ($x:expr, $t:ty) => {{
        #[cfg(target_arch = "nvptx64")]
        {
            let y: $t;
            // SAFETY: a register move.
            unsafe {
                core::arch::asm!(
                    "mov.b64 {y}, {x};",
                    y = lateout(reg64) y, x = in(reg64) $x,
                    options(nomem, nostack, preserves_flags),
                )
            };
            y
        }
        #[cfg(not(target_arch = "nvptx64"))]
        core::hint::black_box($x)
    }};
}

/// `x`, unchanged, but opaque to the optimiser, which must compute it where it is
/// written (it cannot hoist it out of a loop, or compute from it ahead of time).
///
/// For loops whose body derives many addresses from loop-invariant values: called per
/// iteration, it keeps LLVM from holding every derived address in registers for the
/// whole loop. Unlike `core::hint::black_box`, which round-trips through local memory on
/// the GPU, it is one register move.
#[inline(always)]
pub fn opaque_usize(x: usize) -> usize {
    opaque_move!(x, usize)
}

/// `p`, unchanged, but opaque to the optimiser, as [`opaque_usize`]: one register move.
///
/// Unlike `p.with_addr(opaque_usize(p.addr()))`, which LLVM lowers to
/// `p + (opaque(addr) - addr)` and so keeps `-addr` live as well, this is the move alone.
#[inline(always)]
pub fn opaque_ptr<T>(p: *const T) -> *const T {
    opaque_move!(p, *const T)
}

/// [`opaque_ptr`] for a `*mut T`.
#[inline(always)]
pub fn opaque_mut<T>(p: *mut T) -> *mut T {
    opaque_ptr(p.cast_const()).cast_mut()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[repr(C, align(16))]
    struct Aligned([f32; 8]);

    #[test]
    fn opaque_is_the_identity() {
        assert_eq!(opaque_usize(12345), 12345);
        let x = [1.0f32, 2.0];
        assert_eq!(opaque_ptr(x.as_ptr()), x.as_ptr());
    }

    #[test]
    fn scalar_read_only_loads_read() {
        let (a, b) = ([1.5f32, -2.0], [7u64, u64::MAX]);
        // SAFETY: in bounds, aligned, not written meanwhile.
        unsafe {
            assert_eq!(f32::load_nc(a.as_ptr().add(1)), -2.0);
            assert_eq!(u64::load_nc(b.as_ptr().add(1)), u64::MAX);
        }
    }

    #[test]
    fn vector_loads_and_stores_move_four_elements() {
        let src = Aligned([0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]);
        let mut dst = Aligned([f32::NAN; 8]);
        // SAFETY: both 16-byte aligned at element 4; four elements in bounds.
        unsafe {
            let v = load_nc_f32x4(src.0.as_ptr().add(4));
            assert_eq!(v, [4.0, 5.0, 6.0, 7.0]);
            store_f32x4(dst.0.as_mut_ptr(), v);
        }
        assert_eq!(dst.0[..4], [4.0, 5.0, 6.0, 7.0]);
        assert!(dst.0[4..].iter().all(|v| v.is_nan()));
    }
}
