//! The emulator's C ABI: how Python calls a kernel compiled for the host.
//!
//! `cargo oxide build` (with `--emu`, the default) also builds the kernel crate as a host
//! `cdylib`; `#[kernel]` gives every kernel instance, beside its PTX entry, a host entry
//! named [`crate::names::host_entry_symbol`]`(entry)` (`__oxide_host_vecadd`):
//!
//! ```c
//! int32_t __oxide_host_<entry>(const OxideLaunch *launch,
//!                              const uint64_t *args, size_t nargs,
//!                              OxideError *error);
//! ```
//!
//! `args` holds the kernel's launch-ABI words in parameter order, each widened to 64
//! bits: integers zero- or sign-extended, `bool` as 0 or 1, `f32` as its bit pattern in
//! the low 32 bits, `f64` as its bit pattern, every slice kind as (address, element
//! count), a pointer as its address. The return value is one of the `STATUS_*` codes;
//! on failure `error` says where and why.
//!
//! The library also exports [`CONFIGURE_SYMBOL`], which sets the checks of the next
//! launch that the calling OS thread makes (libraries built before it lack it):
//!
//! ```c
//! int32_t __oxide_emu_configure(uint32_t checks, uint64_t seed);
//! ```
//!
//! `checks` is a set of `CHECK_*` bits (0: the default emulator); it returns
//! [`STATUS_OK`], or [`STATUS_BAD_LAUNCH`] for a bit it does not know.

/// The launch configuration.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OxideLaunch {
    pub grid: [u32; 3],
    pub block: [u32; 3],
    /// Bytes of dynamic shared memory per block.
    pub shared_bytes: u64,
}

/// Where and why an emulated launch failed.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct OxideError {
    /// The block and thread that failed (for a deadlock: the first thread that left
    /// the block while others waited at a barrier).
    pub block: [u32; 3],
    pub thread: [u32; 3],
    /// A NUL-terminated UTF-8 message (panic message, index out of bounds, …).
    pub message: [u8; OXIDE_ERROR_MESSAGE_BYTES],
}

pub const OXIDE_ERROR_MESSAGE_BYTES: usize = 1024;

/// A host entry, `__oxide_host_<entry>` (see the module).
pub type HostEntry =
    unsafe extern "C" fn(*const OxideLaunch, *const u64, usize, *mut OxideError) -> i32;

/// Calls a host entry: its status and, on failure, where and why.
///
/// # Safety
/// `entry` is a host entry whose kernel takes `args` (its launch-ABI words), and every
/// buffer they address outlives the call.
pub unsafe fn call(entry: HostEntry, launch: &OxideLaunch, args: &[u64]) -> (i32, OxideError) {
    let mut error = OxideError::default();
    // SAFETY: upheld by the caller.
    let status = unsafe { entry(launch, args.as_ptr(), args.len(), &mut error) };
    (status, error)
}

impl OxideLaunch {
    /// A 1-D launch: `grid` blocks of `block` threads, `shared_bytes` of dynamic shared
    /// memory a block.
    pub fn linear(grid: u32, block: u32, shared_bytes: u64) -> Self {
        OxideLaunch {
            grid: [grid, 1, 1],
            block: [block, 1, 1],
            shared_bytes,
        }
    }
}

impl OxideError {
    /// The message, up to its NUL (invalid UTF-8 replaced).
    pub fn text(&self) -> String {
        let end = self
            .message
            .iter()
            .position(|&b| b == 0)
            .unwrap_or(self.message.len());
        String::from_utf8_lossy(&self.message[..end]).into_owned()
    }
}

impl Default for OxideError {
    fn default() -> Self {
        OxideError {
            block: [0; 3],
            thread: [0; 3],
            message: [0; OXIDE_ERROR_MESSAGE_BYTES],
        }
    }
}

/// The launch ran to completion.
pub const STATUS_OK: i32 = 0;
/// A thread panicked or trapped (failed bounds check, `gpu_assert!`, explicit trap).
pub const STATUS_TRAP: i32 = 1;
/// A barrier was not reached by every thread of a block: a deadlock on a GPU.
pub const STATUS_DIVERGENT_BARRIER: i32 = 2;
/// The launch itself is invalid (wrong number of argument words, a zero or too large
/// dimension, more threads per block than the kernel's launch bounds).
pub const STATUS_BAD_LAUNCH: i32 = 3;
/// A thread faulted: its stack overflowed, it accessed dynamic shared memory past the
/// launch's size, or it dereferenced an invalid address.
pub const STATUS_FAULT: i32 = 4;
/// The launch was interrupted (SIGINT, Ctrl-C) before it finished; its outputs are
/// partly written.
pub const STATUS_INTERRUPTED: i32 = 5;
/// A thread did what a GPU leaves undefined and the emulator can name: a shuffle that
/// reads a lane that does not exist (a block's partial last warp) or, in strict mode,
/// one outside the operation's mask or that has exited; a warp operation whose mask
/// leaves out the calling lane.
pub const STATUS_UNDEFINED: i32 = 6;

/// The emulator library's export that sets the next launch's checks (see the module).
pub const CONFIGURE_SYMBOL: &str = "__oxide_emu_configure";

/// Strict mode, which makes latent bugs visible at some cost in speed: shared memory
/// that no thread wrote holds [`POISON_BYTE`]s (NaN in every float type, all ones in
/// integers) in every block; between barriers and warp operations a block's threads
/// run in an order shuffled by the seed (reproducible with the same seed) instead of
/// in thread order; a shuffle that reads a lane outside its mask, or one that has
/// exited, traps with [`STATUS_UNDEFINED`].
pub const CHECK_STRICT: u32 = 1;
/// Every `CHECK_*` bit.
pub const CHECKS_KNOWN: u32 = CHECK_STRICT;

/// What strict mode fills uninitialised shared memory with.
pub const POISON_BYTE: u8 = 0xFF;

/// Every status, by name (Python's `EmuStatus` is generated from it).
pub const STATUSES: [(&str, i32); 7] = [
    ("OK", STATUS_OK),
    ("TRAP", STATUS_TRAP),
    ("DIVERGENT_BARRIER", STATUS_DIVERGENT_BARRIER),
    ("BAD_LAUNCH", STATUS_BAD_LAUNCH),
    ("FAULT", STATUS_FAULT),
    ("INTERRUPTED", STATUS_INTERRUPTED),
    ("UNDEFINED", STATUS_UNDEFINED),
];
