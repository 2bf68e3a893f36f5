//! Faults of emulated threads end the launch with `STATUS_FAULT` and a message naming
//! the cause, instead of corrupting the heap or killing the process: dynamic shared
//! memory past the launch's size, a stack overflow (large local array, runaway
//! recursion). A kernel can read its launch's dynamic shared size.

use oxide_device::__private::emu::{
    HostEntry, OxideError, OxideLaunch, STATUS_FAULT, STATUS_OK, STATUS_TRAP, call,
};
use oxide_device::prelude::*;
use oxide_device::shared::DynamicSharedArray;

fn run(entry: HostEntry, grid: u32, block: u32, shared: u64, args: &[u64]) -> (i32, OxideError) {
    // SAFETY: the tests pass buffers that outlive the call.
    unsafe { call(entry, &OxideLaunch::linear(grid, block, shared), args) }
}

fn slice<T>(s: &[T]) -> [u64; 2] {
    [s.as_ptr() as u64, s.len() as u64]
}

/// Writes this thread's element of `out`, if it has one.
fn put<T>(out: &mut DisjointSlice<T>, v: T) {
    if let Some(o) = out.get_mut(thread::index_1d()) {
        *o = v;
    }
}

/// Runs the launch and checks that it faulted with a message containing `cause`.
fn faults(
    entry: HostEntry,
    grid: u32,
    block: u32,
    shared: u64,
    args: &[u64],
    cause: &str,
) -> OxideError {
    let (status, e) = run(entry, grid, block, shared, args);
    let m = e.text();
    assert_eq!(status, STATUS_FAULT, "{m}");
    assert!(m.contains(cause), "{m}");
    e
}

/// Writes word `thread` of dynamic shared memory, unchecked, and records the size.
#[kernel]
pub fn write_shared_word(mut len: DisjointSlice<u32>) {
    let t = thread::threadIdx_x() as usize;
    // SAFETY: deliberately not checked against the launch's size.
    unsafe { DynamicSharedArray::<u32>::get().add(t).write(t as u32) };
    put(&mut len, DynamicSharedArray::<u32>::len() as u32);
}

#[test]
fn a_kernel_reads_its_dynamic_shared_size() {
    let len = vec![0u32; 64];
    let (status, e) = run(__oxide_host_write_shared_word, 2, 32, 128, &slice(&len));
    assert_eq!(status, STATUS_OK, "{}", e.text());
    assert!(len.iter().all(|&l| l == 32), "{len:?}");
}

#[test]
fn shared_memory_past_the_launch_size_is_a_fault_not_heap_corruption() {
    for (shared, block) in [(0u64, 32u32), (4, 256), (64, 1024)] {
        let len = vec![0u32; block as usize * 3];
        let cause = format!("shared_mem={shared} bytes");
        let e = faults(
            __oxide_host_write_shared_word,
            3,
            block,
            shared,
            &slice(&len),
            &cause,
        );
        // The first thread past the launch's bytes (rounded up to the region's 16-byte
        // alignment) is the one named.
        assert_eq!(
            e.thread,
            [shared.div_ceil(16) as u32 * 4, 0, 0],
            "{}",
            e.text()
        );
    }
}

#[kernel]
pub fn checked_shared(mut out: DisjointSlice<u32>) {
    let warps = (thread::blockDim_x() / 32) as usize;
    gpu_assert!(DynamicSharedArray::<u32>::len() >= warps);
    put(&mut out, 1);
}

#[test]
fn a_kernel_can_assert_its_shared_size() {
    let out = vec![0u32; 256];
    let (status, e) = run(__oxide_host_checked_shared, 1, 256, 4, &slice(&out));
    assert_eq!(status, STATUS_TRAP, "{}", e.text());
    let (status, e) = run(__oxide_host_checked_shared, 1, 256, 32, &slice(&out));
    assert_eq!(status, STATUS_OK, "{}", e.text());
}

/// A local array of `N` bytes, all touched.
fn local_array<const N: usize>(seed: u32) -> u32 {
    let mut a = [0u8; N];
    for (i, v) in a.iter_mut().enumerate() {
        *v = (i as u32 ^ seed) as u8;
    }
    core::hint::black_box(&mut a);
    a.iter().map(|&v| u32::from(v)).sum()
}

#[kernel]
pub fn local_280k(mut out: DisjointSlice<u32>) {
    let v = local_array::<{ 280 * 1024 }>(thread::threadIdx_x());
    put(&mut out, v);
}

#[kernel]
pub fn local_4m(mut out: DisjointSlice<u32>) {
    let v = local_array::<{ 4 * 1024 * 1024 }>(thread::threadIdx_x());
    put(&mut out, v);
}

#[inline(never)]
fn depth(n: u64, pad: u64) -> u64 {
    if n == 0 {
        return pad;
    }
    let here = core::hint::black_box([n, pad, n ^ pad, n + 1]);
    depth(n - 1, here[2]).wrapping_add(core::hint::black_box(here[3]))
}

#[kernel]
pub fn recurse(levels: u64, mut out: DisjointSlice<u64>) {
    let v = depth(levels, u64::from(thread::threadIdx_x()));
    put(&mut out, v);
}

#[test]
fn a_thread_has_room_for_what_a_gpu_thread_can_hold() {
    // ptxas accepts 280 KB of local memory per thread (at most 512 KiB).
    let out = vec![0u32; 64];
    let (status, e) = run(__oxide_host_local_280k, 2, 32, 0, &slice(&out));
    assert_eq!(status, STATUS_OK, "{}", e.text());
    assert_eq!(out[0], local_array::<{ 280 * 1024 }>(0));
}

#[test]
fn a_stack_overflow_is_a_fault_with_its_thread() {
    let out = vec![0u32; 64];
    let e = faults(
        __oxide_host_local_4m,
        2,
        32,
        0,
        &slice(&out),
        "stack overflow",
    );
    // Thread 0 of whichever block a worker ran first.
    assert!(e.block[0] < 2 && e.thread == [0, 0, 0], "{}", e.text());

    let out = vec![0u64; 32];
    let args = [[10_000_000u64].as_slice(), &slice(&out)].concat();
    faults(__oxide_host_recurse, 1, 32, 0, &args, "stack overflow");

    // The emulator is still sound afterwards: the same stacks run a good launch.
    let args = [[100u64].as_slice(), &slice(&out)].concat();
    let (status, e) = run(__oxide_host_recurse, 1, 32, 0, &args);
    assert_eq!(status, STATUS_OK, "{}", e.text());
    assert_eq!(out[3], depth(100, 3));
}
