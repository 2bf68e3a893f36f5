//! The emulator's launch: checks the configuration, then runs the grid's blocks on
//! one worker OS thread per core, each pulling block indices from a shared counter.
//!
//! On a failure (a trap, a divergent barrier, a fault) no block starts after it; blocks
//! that other workers are running finish. Of the failures recorded, the one of the
//! lowest-numbered block is reported: every block before it had started (blocks are
//! taken in order) and so ran to the end, which makes the report the one a one-core
//! run gives, whichever worker failed first. Faults and Ctrl-C are caught as `fault` describes.

use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::boxed::Box;
use std::format;
use std::string::{String, ToString};
use std::sync::Mutex;

use oxide_abi::emu::{
    OXIDE_ERROR_MESSAGE_BYTES, OxideError, OxideLaunch, STATUS_BAD_LAUNCH, STATUS_OK,
};

use super::block::{BlockFailure, Runner};

use oxide_abi::limits::{
    MAX_BLOCK_DIM, MAX_DYNAMIC_SHARED_BYTES, MAX_GRID_DIM, MAX_THREADS_PER_BLOCK,
};

/// Write `status`'s details into `error` (when not null) and return `status`.
///
/// # Safety
/// `error` is null or valid for writes.
pub unsafe fn fail(
    error: *mut OxideError,
    status: i32,
    block: [u32; 3],
    thread: [u32; 3],
    message: &str,
) -> i32 {
    if let Some(e) = unsafe { error.as_mut() } {
        e.block = block;
        e.thread = thread;
        let bytes = message.as_bytes();
        // Cut at a char boundary so the message stays UTF-8, and keep the NUL.
        let mut n = bytes.len().min(OXIDE_ERROR_MESSAGE_BYTES - 1);
        while !message.is_char_boundary(n) {
            n -= 1;
        }
        e.message[..n].copy_from_slice(&bytes[..n]);
        e.message[n] = 0;
    }
    status
}

/// The argument words of a host entry, after checking their number.
///
/// # Safety
/// `args` is valid for `nargs` words (or null with `nargs` 0); `error` as [`fail`].
pub unsafe fn words<'a>(
    kernel: &str,
    args: *const u64,
    nargs: usize,
    expected: usize,
    error: *mut OxideError,
) -> Result<&'a [u64], i32> {
    if nargs != expected {
        let msg = format!("{kernel}: expected {expected} argument words, got {nargs}");
        return Err(unsafe { fail(error, STATUS_BAD_LAUNCH, [0; 3], [0; 3], &msg) });
    }
    if nargs == 0 {
        return Ok(&[]);
    }
    // SAFETY: upheld by the caller.
    Ok(unsafe { core::slice::from_raw_parts(args, nargs) })
}

fn check(launch: &OxideLaunch, max_threads: u32) -> Result<(), String> {
    let (g, b) = (launch.grid, launch.block);
    if g.contains(&0) || b.contains(&0) {
        return Err(format!(
            "grid {g:?} and block {b:?} must have no zero dimension"
        ));
    }
    for axis in 0..3 {
        if b[axis] > MAX_BLOCK_DIM[axis] {
            return Err(format!("block {b:?} exceeds CUDA's {MAX_BLOCK_DIM:?}"));
        }
        if g[axis] > MAX_GRID_DIM[axis] {
            return Err(format!("grid {g:?} exceeds CUDA's {MAX_GRID_DIM:?}"));
        }
    }
    let threads = b.iter().map(|&d| u64::from(d)).product::<u64>();
    let limit = max_threads.min(MAX_THREADS_PER_BLOCK);
    if threads > u64::from(limit) {
        return Err(format!(
            "block {b:?} has {threads} threads, more than the {limit} this kernel allows \
             (its launch bounds, or CUDA's 1024)"
        ));
    }
    if launch.shared_bytes > u64::from(MAX_DYNAMIC_SHARED_BYTES) {
        return Err(format!(
            "{} bytes of dynamic shared memory exceed the 227 KiB a block can have",
            launch.shared_bytes
        ));
    }
    Ok(())
}

/// Run `kernel` (one call per GPU thread) over the launch's grid.
///
/// # Safety
/// `launch` is valid for reads; `error` is null or valid for writes; the memory that
/// `kernel`'s arguments point at stays valid for the call.
pub unsafe fn launch(
    launch: *const OxideLaunch,
    error: *mut OxideError,
    max_threads: u32,
    kernel: &(dyn Fn() + Sync),
) -> i32 {
    // Set for this launch only, whether it runs or is refused.
    let checks = super::checks::take();
    let Some(cfg) = (unsafe { launch.as_ref() }).copied() else {
        return unsafe {
            fail(
                error,
                STATUS_BAD_LAUNCH,
                [0; 3],
                [0; 3],
                "no launch configuration",
            )
        };
    };
    if let Err(msg) = check(&cfg, max_threads) {
        return unsafe { fail(error, STATUS_BAD_LAUNCH, [0; 3], [0; 3], &msg) };
    }
    install_panic_hook();
    super::fault::install_fault_handlers();
    // Ctrl-C stops the launch (and reaches Python's handler) while it runs.
    let _interrupt = super::fault::InterruptGuard::new();
    let interrupts = super::fault::INTERRUPTS.load(Ordering::Relaxed);
    // SAFETY: every coroutine that holds the reference is finished or dropped before
    // the workers (and this function) return.
    let kernel: &'static (dyn Fn() + Sync) = unsafe { core::mem::transmute(kernel) };
    let g = cfg.grid.map(u64::from);
    let blocks = g[0] * g[1] * g[2];
    let workers = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(usize::try_from(blocks).unwrap_or(usize::MAX));
    let next = AtomicU64::new(0);
    let stop = AtomicBool::new(false);
    let failure: Mutex<Option<(u64, [u32; 3], BlockFailure)>> = Mutex::new(None);
    let work = || {
        let mut runner = Runner::new(cfg.shared_bytes as usize, interrupts, checks);
        while !stop.load(Ordering::Relaxed) {
            let i = next.fetch_add(1, Ordering::Relaxed);
            if i >= blocks {
                break;
            }
            let block = [i % g[0], i / g[0] % g[1], i / (g[0] * g[1])].map(|v| v as u32);
            if let Err(f) = runner.run(kernel, (block, i), cfg.block, cfg.grid) {
                stop.store(true, Ordering::Relaxed);
                let mut slot = failure.lock().unwrap_or_else(|p| p.into_inner());
                if slot.as_ref().is_none_or(|(first, _, _)| i < *first) {
                    *slot = Some((i, block, f));
                }
            }
        }
    };
    if workers <= 1 {
        // The caller's thread runs a one-block launch: no thread to start.
        work();
    } else {
        std::thread::scope(|s| {
            let spawned: std::vec::Vec<_> = (1..workers).map(|_| s.spawn(work)).collect();
            work();
            for w in spawned {
                if w.join().is_err() {
                    stop.store(true, Ordering::Relaxed);
                }
            }
        });
    }
    let failure = failure.into_inner().unwrap_or_else(|p| p.into_inner());
    match failure {
        None => STATUS_OK,
        Some((_, block, mut f)) => {
            if checks.strict {
                // The order the threads ran in, and so the failure, depend on the seed.
                f.message
                    .push_str(&format!(" [strict emulator, seed {}]", checks.seed));
            }
            unsafe { fail(error, f.status, block, f.thread, &f.message) }
        }
    }
}

/// Keep Rust's default panic report off stderr for the emulator's threads (the
/// launch's error carries it) and remember where each panic happened.
fn install_panic_hook() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if super::block::in_block() {
                super::fault::unwinding();
                let at = info.location().map(|l| l.to_string());
                super::block::record_panic_location(at);
            } else {
                previous(info);
            }
        }));
    });
}
