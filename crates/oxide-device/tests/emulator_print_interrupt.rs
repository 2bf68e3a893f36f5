//! Ctrl-C during a printing launch leaves printing working (issue 27, item 6): a thread
//! is never stopped inside `printf`, where it holds stdout's lock; it stops when its
//! `printf` returns. Before, a thread stopped there kept the lock, and the next printing
//! launch hung on it, or trapped with "RefCell already borrowed".
//!
//! Its own binary, without the test harness (Cargo.toml: `harness = false`): the
//! harness would capture stdout into a buffer, and an interrupt stops every launch of
//! the process. Here stdout is a pipe that nobody reads at first, so the printing
//! threads block inside `printf` (as they do when a notebook or a pager reads slowly)
//! when Ctrl-C comes.

use core::sync::atomic::{AtomicUsize, Ordering};
use std::io::Read;
use std::os::fd::FromRawFd;
use std::sync::mpsc;
use std::time::Duration;

use oxide_device::__private::emu::{HostEntry, OxideLaunch, STATUS_INTERRUPTED, STATUS_OK, call};
use oxide_device::prelude::*;

fn run(entry: HostEntry, grid: u32, block: u32, args: &[u64]) -> i32 {
    // SAFETY: the callers pass buffers that outlive the call.
    unsafe { call(entry, &OxideLaunch::linear(grid, block, 0), args) }.0
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
/// minute (it waits for a lock that a stopped thread holds).
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

fn main() {
    // SAFETY: a handler that only counts, as Python's only records the signal.
    unsafe {
        libc::signal(
            libc::SIGINT,
            count_sigint as *const () as libc::sighandler_t,
        )
    };
    // Stdout becomes a pipe; the real one is kept for the report.
    let mut fds = [0; 2];
    // SAFETY: plain descriptor calls on fds this process owns.
    let real_stdout = unsafe {
        assert_eq!(libc::pipe(fds.as_mut_ptr()), 0);
        let saved = libc::dup(1);
        assert_eq!(libc::dup2(fds[1], 1), 1);
        libc::close(fds[1]);
        saved
    };
    // SAFETY: the pipe's read end, owned by this File from here on.
    let mut reader = unsafe { std::fs::File::from_raw_fd(fds[0]) };
    // The pipe is read from when the first interrupt has come (the sender is dropped).
    let (drain_tx, drain_rx) = mpsc::channel::<()>();
    std::thread::spawn(move || {
        let _ = drain_rx.recv();
        let mut buf = [0u8; 1 << 16];
        while reader.read(&mut buf).is_ok_and(|n| n > 0) {}
    });
    let mut drain_tx = Some(drain_tx);
    let mut failures = Vec::new();
    for round in 0..3 {
        // The interrupted launch, then printing ones from the same OS thread (which ran
        // blocks of the first) and from another.
        let draining = drain_tx.take();
        let got = within_a_minute(move || {
            let stop = [0u32; 1];
            let killer = std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(300)); // the pipe is full by now
                // SAFETY: sends SIGINT to this process.
                unsafe { libc::kill(libc::getpid(), libc::SIGINT) };
                std::thread::sleep(Duration::from_millis(100));
                drop(draining); // the first round's: start reading the pipe
            });
            let status = run(__oxide_host_chatter, 16, 64, &[stop.as_ptr() as u64, 1]);
            killer.join().unwrap();
            (status, launch_hello(2), within_a_minute(|| launch_hello(4)))
        });
        let want = Some((STATUS_INTERRUPTED, (STATUS_OK, 128), Some((STATUS_OK, 256))));
        if got != want {
            failures.push(format!(
                "round {round}: got {got:?}, want {want:?} (None: a printing launch hung)"
            ));
            break;
        }
    }
    let seen = SEEN.load(Ordering::SeqCst);
    let report = if failures.is_empty() && seen == 3 {
        "test ctrl_c_during_printing_leaves_printing_working ... ok\n".to_string()
    } else {
        format!(
            "test ctrl_c_during_printing_leaves_printing_working ... FAILED\n{}\nSIGINTs seen: {seen}\n",
            failures.join("\n")
        )
    };
    // SAFETY: writing to the saved real stdout.
    unsafe { libc::write(real_stdout, report.as_ptr().cast(), report.len()) };
    std::process::exit(if report.ends_with("ok\n") { 0 } else { 1 });
}
