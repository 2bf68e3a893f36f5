//! Timers, hardware ids and debugger hooks (cuda-oxide's `debug` module, and the
//! `smid`/`warpid` registers it puts in `thread` and `warp`).
//!
//! On the GPU each is one PTX instruction or special-register read. On the emulator,
//! timers read the host's monotonic clock (nanoseconds, for both `clock64` and
//! `globaltimer`), there is one SM (`smid() == 0`), `warpid()` is the warp's index in
//! its block, and `breakpoint`/`prof_trigger` do nothing.

/// The SM's 32-bit cycle counter (`%clock`).
#[inline(always)]
pub fn clock() -> u32 {
    clock64() as u32
}

/// The SM's 64-bit cycle counter (`%clock64`); on the emulator, host nanoseconds.
#[inline(always)]
pub fn clock64() -> u64 {
    #[cfg(target_arch = "nvptx64")]
    {
        let v: u64;
        // SAFETY: reads %clock64.
        unsafe { core::arch::asm!("mov.u64 {}, %clock64;", out(reg64) v, options(nostack)) };
        v
    }
    #[cfg(not(target_arch = "nvptx64"))]
    host_nanos()
}

/// The global nanosecond timer (`%globaltimer`).
#[inline(always)]
pub fn globaltimer() -> u64 {
    #[cfg(target_arch = "nvptx64")]
    {
        let v: u64;
        // SAFETY: reads %globaltimer.
        unsafe { core::arch::asm!("mov.u64 {}, %globaltimer;", out(reg64) v, options(nostack)) };
        v
    }
    #[cfg(not(target_arch = "nvptx64"))]
    host_nanos()
}

#[cfg(not(target_arch = "nvptx64"))]
fn host_nanos() -> u64 {
    use std::sync::OnceLock;
    use std::time::Instant;
    static START: OnceLock<Instant> = OnceLock::new();
    START.get_or_init(Instant::now).elapsed().as_nanos() as u64
}

/// Stop the kernel (`trap`): the launch fails.
#[inline(always)]
pub fn trap() -> ! {
    crate::arch::trap()
}

/// A breakpoint for cuda-gdb (`brkpt`); nothing on the emulator.
#[inline(always)]
pub fn breakpoint() {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: `brkpt` is a no-op without a debugger attached.
    unsafe {
        core::arch::asm!("brkpt;", options(nostack))
    };
}

/// Signal profiler counter `N` (`pmevent N`, N < 16); nothing on the emulator.
#[inline(always)]
pub fn prof_trigger<const N: u32>() {
    const { assert!(N < 16, "prof_trigger takes a counter number below 16") };
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: `pmevent` only signals the profiler.
    unsafe {
        core::arch::asm!("pmevent {};", const N, options(nostack))
    };
}

macro_rules! sreg32 {
    ($($(#[$doc:meta])* $name:ident: $reg:literal, $host:expr;)*) => {$(
        $(#[$doc])*
        #[inline(always)]
        pub fn $name() -> u32 {
            #[cfg(target_arch = "nvptx64")]
            {
                let v: u32;
                // SAFETY: reads a special register.
                unsafe { core::arch::asm!(concat!("mov.u32 {}, %", $reg, ";"), out(reg32) v, options(nostack)) };
                v
            }
            #[cfg(not(target_arch = "nvptx64"))]
            $host
        }
    )*};
}

sreg32! {
    /// The SM this thread runs on (`%smid`; 0 on the emulator). Not stable across a
    /// kernel's life on every GPU: for diagnostics only.
    smid: "smid", 0;
    /// An upper bound on `smid()` (`%nsmid`).
    nsmid: "nsmid", 1;
    /// The warp's slot on its SM (`%warpid`; on the emulator the warp's index in its
    /// block). For diagnostics only.
    warpid: "warpid", {
        use crate::arch::{block_dim_x, block_dim_y, thread_idx_x, thread_idx_y, thread_idx_z};
        // The flat thread index in the block (as `thread::block_thread_index`) over 32.
        (thread_idx_x() + block_dim_x() * (thread_idx_y() + block_dim_y() * thread_idx_z()))
            / crate::arch::WARP_SIZE
    };
    /// An upper bound on `warpid()` (`%nwarpid`).
    nwarpid: "nwarpid", {
        use crate::arch::{block_dim_x, block_dim_y, block_dim_z};
        (block_dim_x() * block_dim_y() * block_dim_z()).div_ceil(crate::arch::WARP_SIZE)
    };
}

/// The launch's grid id (`%gridid`, 64-bit; 0 on the emulator).
#[inline(always)]
pub fn gridid() -> u64 {
    #[cfg(target_arch = "nvptx64")]
    {
        let v: u64;
        // SAFETY: reads %gridid.
        unsafe { core::arch::asm!("mov.u64 {}, %gridid;", out(reg64) v, options(nostack)) };
        v
    }
    #[cfg(not(target_arch = "nvptx64"))]
    0
}
