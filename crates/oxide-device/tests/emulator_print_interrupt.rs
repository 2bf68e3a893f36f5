//! Ctrl-C during a printing launch leaves printing working (issue 27, item 6): a thread
//! is never stopped inside `printf`, where it holds stdout's lock (and, under the test
//! harness, the capture buffer's); it stops when its `printf` returns. Before, the next
//! printing launch hung on the lock, or trapped with "RefCell already borrowed". Its own
//! test binary: an interrupt stops every launch running in the process.

use core::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use oxide_device::__private::emu::{OxideError, OxideLaunch, STATUS_INTERRUPTED, STATUS_OK};
use oxide_device::prelude::*;

type Entry = unsafe extern "C" fn(*const OxideLaunch, *const u64, usize, *mut OxideError) -> i32;

fn run(entry: Entry, grid: u32, block: u32, args: &[u64]) -> i32 {
    let launch = OxideLaunch {
        grid: [grid, 1, 1],
        block: [block, 1, 1],
        shared_bytes: 0,
    };
    let mut error = OxideError::default();
    // SAFETY: the tests pass buffers that outlive the call.
    unsafe { entry(&launch, args.as_ptr(), args.len(), &mut error) }
}

/// Prints until `stop[0]` is nonzero: nearly all its time is spent inside `printf`.
#[kernel]
pub fn chatter(stop: &[u32]) {
    // SAFETY: a valid element, read volatile so the loop is not hoisted.
    while unsafe { core::ptr::read_volatile(&stop[0]) } == 0 {
        gpu_printf!(
            "block {} thread {}: {:8.3} {}\n",
            thread::blockIdx_x(),
            thread::threadIdx_x(),
            1.5f32,
            c"chatter"
        );
    }
}

/// Prints one line per thread and counts itself.
#[kernel]
pub fn hello(count: AtomicSlice<u32>) {
    gpu_printf_c!("hello from %u\n", thread::threadIdx_x());
    if let Some(c) = count.first() {
        c.fetch_add(1, Ordering::Relaxed);
    }
}

static SEEN: AtomicUsize = AtomicUsize::new(0);

extern "C" fn count_sigint(_: libc::c_int) {
    SEEN.fetch_add(1, Ordering::SeqCst);
}

/// `f` on a new OS thread; its result, or None when it does not return within a
/// minute (a thread that waits for a lock that a stopped thread holds).
fn within_a_minute<R: Send + 'static>(f: impl FnOnce() -> R + Send + 'static) -> Option<R> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(Duration::from_secs(60)).ok()
}

/// A `hello` launch: its status and count.
fn launch_hello(blocks: u32) -> (i32, u32) {
    let count = [0u32; 1];
    let status = run(__oxide_host_hello, blocks, 64, &[count.as_ptr() as u64, 1]);
    (status, count[0])
}

#[test]
fn ctrl_c_during_printing_leaves_printing_working() {
    // SAFETY: a handler that only counts, as Python's only records the signal.
    unsafe {
        libc::signal(
            libc::SIGINT,
            count_sigint as *const () as libc::sighandler_t,
        )
    };
    for round in 0..3 {
        // The interrupted launch, then a printing one from the same OS thread (which
        // ran blocks of the first), then one from another thread.
        let got = within_a_minute(move || {
            let stop = [0u32; 1];
            let killer = std::thread::spawn(|| {
                std::thread::sleep(Duration::from_millis(200));
                // SAFETY: sends SIGINT to this process.
                unsafe { libc::kill(libc::getpid(), libc::SIGINT) };
            });
            let status = run(__oxide_host_chatter, 16, 64, &[stop.as_ptr() as u64, 1]);
            killer.join().unwrap();
            (status, launch_hello(2), within_a_minute(|| launch_hello(4)))
        });
        assert_eq!(
            got,
            Some((STATUS_INTERRUPTED, (STATUS_OK, 128), Some((STATUS_OK, 256)))),
            "round {round} (None: a printing launch hung after Ctrl-C)"
        );
    }
    assert_eq!(SEEN.load(Ordering::SeqCst), 3);
}
