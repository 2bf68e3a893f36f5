//! Ctrl-C stops a running emulated launch with `STATUS_INTERRUPTED` and still reaches
//! the process's own SIGINT handler (Python's, which raises `KeyboardInterrupt`). Its
//! own test binary: an interrupt stops every launch running in the process.

use core::sync::atomic::{AtomicUsize, Ordering};

use oxide_device::__private::emu::{
    HostEntry, OxideError, OxideLaunch, STATUS_INTERRUPTED, STATUS_OK, call,
};
use oxide_device::prelude::*;

fn run(entry: HostEntry, grid: u32, block: u32, args: &[u64]) -> (i32, OxideError) {
    // SAFETY: the tests pass buffers that outlive the call.
    unsafe { call(entry, &OxideLaunch::linear(grid, block, 0), args) }
}

/// Spins until `stop[0]` is nonzero: nothing in the loop yields to the emulator.
#[kernel]
pub fn spin(stop: &[u32]) {
    // SAFETY: a valid element, read volatile so the loop is not hoisted.
    while unsafe { core::ptr::read_volatile(&stop[0]) } == 0 {
        core::hint::spin_loop();
    }
}

/// Spins through barriers.
#[kernel]
pub fn spin_at_barriers(stop: &[u32]) {
    // SAFETY: as `spin`.
    while unsafe { core::ptr::read_volatile(&stop[0]) } == 0 {
        thread::sync_threads();
    }
}

static SEEN: AtomicUsize = AtomicUsize::new(0);

extern "C" fn count(_: libc::c_int) {
    SEEN.fetch_add(1, Ordering::SeqCst);
}

#[test]
fn ctrl_c_stops_a_spinning_launch_and_reaches_the_previous_handler() {
    // SAFETY: a handler that only counts, as Python's only records the signal.
    unsafe { libc::signal(libc::SIGINT, count as *const () as libc::sighandler_t) };
    let stop = [0u32; 1];
    // SAFETY: gettid has no preconditions.
    let me = unsafe { libc::gettid() };
    let spin = __oxide_host_spin as HostEntry;
    // To the process (any thread may take it), and to the launching thread itself,
    // which runs blocks too (as Python's main thread does, which takes SIGINT).
    for (entry, to_me) in [
        (spin, false),
        (spin, true),
        (__oxide_host_spin_at_barriers, true),
    ] {
        let before = SEEN.load(Ordering::SeqCst);
        let killer = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(300));
            // SAFETY: sends SIGINT to this process or one of its threads.
            unsafe {
                if to_me {
                    libc::syscall(libc::SYS_tgkill, libc::getpid(), me, libc::SIGINT);
                } else {
                    libc::kill(libc::getpid(), libc::SIGINT);
                }
            }
        });
        let (status, e) = run(entry, 8, 64, &[stop.as_ptr() as u64, 1]);
        killer.join().unwrap();
        assert_eq!(status, STATUS_INTERRUPTED, "{:?}", &e.message[..40]);
        assert_eq!(SEEN.load(Ordering::SeqCst), before + 1);
    }
    // The handler is the process's own again, and launches run normally.
    let stop = [1u32; 1];
    let (status, _) = run(__oxide_host_spin, 4, 64, &[stop.as_ptr() as u64, 1]);
    assert_eq!(status, STATUS_OK);
    // SAFETY: reading the current action.
    let current = unsafe {
        let mut a: libc::sigaction = core::mem::zeroed();
        libc::sigaction(libc::SIGINT, core::ptr::null(), &mut a);
        a.sa_sigaction
    };
    assert_eq!(current, count as *const () as usize);
}
