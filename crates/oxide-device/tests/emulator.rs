//! The CPU emulator through the host entries that `#[kernel]` generates: barriers,
//! shared memory, warps, atomics, traps and launch checks.

use oxide_device::__private::emu::{
    HostEntry, OxideError, OxideLaunch, STATUS_BAD_LAUNCH, STATUS_DIVERGENT_BARRIER, STATUS_OK,
    STATUS_TRAP, call,
};
use oxide_device::prelude::*;
use oxide_device::shared::{DynamicSharedArray, SharedArray};
use oxide_device::warp::Shuffle;

fn run(
    entry: HostEntry,
    grid: [u32; 3],
    block: [u32; 3],
    shared: u64,
    args: &[u64],
) -> (i32, OxideError) {
    let launch = OxideLaunch {
        grid,
        block,
        shared_bytes: shared,
    };
    // SAFETY: the tests pass buffers that outlive the call.
    unsafe { call(entry, &launch, args) }
}

fn slice<T>(s: &[T]) -> [u64; 2] {
    [s.as_ptr() as u64, s.len() as u64]
}

#[kernel]
pub fn reverse_block(x: &[f32], mut out: DisjointSlice<f32>) {
    static TILE: SharedArray<f32, 256> = SharedArray::UNINIT;
    let t = thread::threadIdx_x() as usize;
    let n = thread::blockDim_x() as usize;
    let idx = thread::index_1d();
    let i = idx.get();
    // SAFETY: one writer per slot; read after the barrier.
    unsafe { TILE.write(t, x[i]) };
    thread::sync_threads();
    if let Some(o) = out.get_mut(idx) {
        *o = unsafe { TILE.read(n - 1 - t) };
    }
}

#[test]
fn a_block_reverses_through_shared_memory() {
    let x: Vec<f32> = (0..1024).map(|i| i as f32).collect();
    let out = vec![0.0f32; 1024];
    let args = [slice(&x), slice(&out)].concat();
    let (status, e) = run(__oxide_host_reverse_block, [8, 1, 1], [128, 1, 1], 0, &args);
    assert_eq!(status, STATUS_OK, "{}", e.text());
    for b in 0..8 {
        for t in 0..128 {
            assert_eq!(out[b * 128 + t], x[b * 128 + 127 - t]);
        }
    }
}

#[kernel]
pub fn reverse_dynamic(x: &[u32], mut out: DisjointSlice<u32>) {
    let t = thread::threadIdx_x() as usize;
    let n = thread::blockDim_x() as usize;
    let idx = thread::index_1d();
    let tile = DynamicSharedArray::<u32>::get();
    // SAFETY: the launch gives n words; one writer per slot, read after the barrier.
    unsafe { tile.add(t).write(x[idx.get()]) };
    thread::sync_threads();
    if let Some(o) = out.get_mut(idx) {
        *o = unsafe { tile.add(n - 1 - t).read() };
    }
}

#[test]
fn dynamic_shared_memory_is_per_block() {
    let x: Vec<u32> = (0..640).collect();
    let out = vec![0u32; 640];
    let args = [slice(&x), slice(&out)].concat();
    let (status, e) = run(
        __oxide_host_reverse_dynamic,
        [10, 1, 1],
        [64, 1, 1],
        256,
        &args,
    );
    assert_eq!(status, STATUS_OK, "{}", e.text());
    assert_eq!(out[0], 63);
    assert_eq!(out[639], 576);
}

/// Threads at or past `n` return first; the rest meet at the barrier and then each
/// reads its neighbour's slot (written before the barrier).
///
/// # Safety
/// `out` holds `64 * gridDim.x` elements.
#[kernel]
pub unsafe fn early_exit(n: u32, out: *mut u32) {
    static mut SLOTS: SharedArray<u32, 64> = SharedArray::UNINIT;
    let t = thread::threadIdx_x();
    if t >= n {
        return;
    }
    unsafe { SLOTS[t as usize] = t * 10 };
    thread::sync_threads();
    let next = (t + 1) % n;
    unsafe { *out.add((thread::blockIdx_x() * 64 + t) as usize) = SLOTS[next as usize] };
}

#[test]
fn threads_that_returned_count_as_arrived_at_a_barrier() {
    // As PTX's bar.sync does: the 40 threads that stay meet, the 24 that returned
    // do not hold them back.
    let out = vec![0u32; 3 * 64];
    let (status, e) = run(
        __oxide_host_early_exit,
        [3, 1, 1],
        [64, 1, 1],
        0,
        &[40, out.as_ptr() as u64],
    );
    assert_eq!(status, STATUS_OK, "{}", e.text());
    for b in 0..3 {
        for t in 0..64u32 {
            let want = if t < 40 { (t + 1) % 40 * 10 } else { 0 };
            assert_eq!(out[b * 64 + t as usize], want, "block {b} thread {t}");
        }
    }
}

#[kernel]
pub fn out_of_bounds(x: &[f32], mut out: DisjointSlice<f32>) {
    let idx = thread::index_1d();
    let v = x[idx.get()];
    if let Some(o) = out.get_mut(idx) {
        *o = v;
    }
}

#[test]
fn a_panic_is_a_trap_with_block_and_thread() {
    let x = vec![1.0f32; 100];
    let out = vec![0.0f32; 100];
    let args = [slice(&x), slice(&out)].concat();
    let (status, e) = run(__oxide_host_out_of_bounds, [4, 1, 1], [32, 1, 1], 0, &args);
    assert_eq!(status, STATUS_TRAP);
    assert_eq!((e.block, e.thread), ([3, 0, 0], [4, 0, 0]));
    let m = e.text();
    assert!(m.contains("index out of bounds"), "{m}");
    assert!(m.contains("emulator.rs"), "{m}");
}

#[kernel]
pub fn warp_ops(
    mut shuffled: DisjointSlice<u32>,
    mut ballots: DisjointSlice<u32>,
    mut sums: DisjointSlice<f32>,
) {
    let lane = warp::lane_id();
    let idx = thread::index_1d();
    let down = (lane * 10).shuffle_down(warp::FULL_MASK, 1);
    let xor = lane.shuffle_xor(warp::FULL_MASK, 31);
    let ballot = warp::ballot_sync(warp::FULL_MASK, lane.is_multiple_of(3));
    let sum = warp::reduce_sum_f32(lane as f32);
    let i = idx.get();
    if let Some(s) = shuffled.get_mut(idx) {
        *s = down * 100 + xor;
    }
    // SAFETY: one writer per element.
    unsafe {
        *ballots.get_unchecked_mut(i) = ballot;
        *sums.get_unchecked_mut(i) = sum;
    }
}

#[test]
fn warps_exchange_values() {
    let n = 128;
    let (shuffled, ballots, sums) = (vec![0u32; n], vec![0u32; n], vec![0.0f32; n]);
    let args = [slice(&shuffled), slice(&ballots), slice(&sums)].concat();
    let (status, e) = run(__oxide_host_warp_ops, [2, 1, 1], [64, 1, 1], 0, &args);
    assert_eq!(status, STATUS_OK, "{}", e.text());
    let expected_ballot = (0..32).filter(|l| l % 3 == 0).fold(0u32, |b, l| b | 1 << l);
    for i in 0..n {
        let lane = (i % 32) as u32;
        let down = if lane < 31 {
            (lane + 1) * 10
        } else {
            lane * 10
        };
        assert_eq!(shuffled[i], down * 100 + (lane ^ 31), "thread {i}");
        assert_eq!(ballots[i], expected_ballot);
        assert_eq!(sums[i], 496.0);
    }
}

#[kernel]
#[launch_bounds(1024)]
pub fn count(hits: AtomicSlice<u32>, total: AtomicSlice<f32>) {
    if let (Some(h), Some(t)) = (hits.first(), total.first()) {
        h.fetch_add(1, Ordering::Relaxed);
        t.fetch_add(0.5, Ordering::Relaxed);
    }
    let _ = warp::block_reduce_sum_u32(1);
}

#[test]
fn atomics_from_many_threads() {
    let hits = [0u32];
    let total = [0.0f32];
    let args = [slice(&hits), slice(&total)].concat();
    let (status, e) = run(__oxide_host_count, [64, 1, 1], [256, 1, 1], 0, &args);
    assert_eq!(status, STATUS_OK, "{}", e.text());
    assert_eq!(hits[0], 64 * 256);
    assert_eq!(total[0], 64.0 * 256.0 * 0.5);
}

#[kernel]
#[launch_bounds(64)]
pub fn bounded(flag: bool) {
    let _ = flag;
}

#[test]
fn bad_launches_are_refused() {
    let (status, e) = run(__oxide_host_bounded, [1, 1, 1], [128, 1, 1], 0, &[1]);
    assert_eq!(status, STATUS_BAD_LAUNCH);
    assert!(e.text().contains("64"), "{}", e.text());
    let (status, _) = run(__oxide_host_bounded, [0, 1, 1], [32, 1, 1], 0, &[1]);
    assert_eq!(status, STATUS_BAD_LAUNCH);
    let (status, e) = run(__oxide_host_bounded, [1, 1, 1], [32, 1, 1], 0, &[]);
    assert_eq!(status, STATUS_BAD_LAUNCH);
    assert!(
        e.text().contains("expected 1 argument words"),
        "{}",
        e.text()
    );
    let (status, _) = run(__oxide_host_bounded, [2, 2, 2], [4, 4, 4], 0, &[0]);
    assert_eq!(status, STATUS_OK);
}

#[kernel]
pub fn trap_after_barrier(who: u32) {
    thread::sync_threads();
    if thread::threadIdx_x() == who {
        panic!("thread {who} gives up");
    }
    thread::sync_threads();
}

#[test]
fn a_panic_while_others_wait_stops_the_block() {
    // Two blocks of 96 threads; thread `who` of each gives up between the barriers.
    let launch = |who: u64| {
        run(
            __oxide_host_trap_after_barrier,
            [2, 1, 1],
            [96, 1, 1],
            0,
            &[who],
        )
    };
    let (status, e) = launch(70);
    assert_eq!(status, STATUS_TRAP);
    assert_eq!(e.thread, [70, 0, 0]);
    assert!(e.text().contains("thread 70 gives up"), "{}", e.text());
    // The engine is usable again after a failed launch.
    assert_eq!(launch(999).0, STATUS_OK);
}

#[kernel]
pub fn split_warp() {
    if warp::lane_id() < 16 {
        let _ = warp::ballot_sync(warp::FULL_MASK, true);
    } else {
        thread::sync_threads();
    }
}

#[test]
fn lanes_split_between_a_warp_op_and_a_barrier_are_reported() {
    let (status, e) = run(__oxide_host_split_warp, [1, 1, 1], [32, 1, 1], 0, &[]);
    assert_eq!(status, STATUS_DIVERGENT_BARRIER);
    assert_eq!(e.thread, [0, 0, 0]);
    assert!(e.text().contains("warp operation"), "{}", e.text());
}

#[kernel]
pub fn partial_warp(mut out: DisjointSlice<u32>) {
    let lanes = warp::ballot_sync(warp::FULL_MASK, true);
    let idx = thread::index_1d();
    if let Some(o) = out.get_mut(idx) {
        *o = lanes;
    }
}

#[test]
fn a_partial_last_warp_has_only_its_lanes() {
    let out = vec![0u32; 40];
    let (status, e) = run(
        __oxide_host_partial_warp,
        [1, 1, 1],
        [40, 1, 1],
        0,
        &slice(&out),
    );
    assert_eq!(status, STATUS_OK, "{}", e.text());
    assert_eq!(out[0], u32::MAX);
    assert_eq!(out[39], 0xff);
}
