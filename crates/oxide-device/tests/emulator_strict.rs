//! What the emulator shows of a GPU's undefined behaviour (issue 27, item 9; issue 23's
//! partial warps), and where a failed `gpu_assert!` says it failed (item 10):
//! - warp operations meet over their mask, so half-warp code runs;
//! - a shuffle from a lane a partial warp lacks traps, naming the lane;
//! - strict mode (`CHECK_STRICT`, seeded) poisons shared memory no thread wrote, runs a
//!   block's threads in shuffled orders, and traps shuffles outside their mask or from
//!   lanes that returned.

use oxide_device::__private::emu::{
    CHECK_STRICT, HostEntry, OxideError, OxideLaunch, STATUS_DIVERGENT_BARRIER, STATUS_OK,
    STATUS_TRAP, STATUS_UNDEFINED, call, configure,
};
use oxide_device::prelude::*;
use oxide_device::shared::{DynamicSharedArray, SharedArray};

/// Default mode, or strict with `Some(seed)`.
fn run(
    entry: HostEntry,
    strict: Option<u64>,
    (grid, block, shared): (u32, u32, u64),
    args: &[u64],
) -> (i32, OxideError, String) {
    if let Some(seed) = strict {
        assert_eq!(configure(CHECK_STRICT, seed), STATUS_OK);
    }
    // SAFETY: the tests pass buffers that outlive the call.
    let (status, error) = unsafe { call(entry, &OxideLaunch::linear(grid, block, shared), args) };
    let message = error.text();
    (status, error, message)
}

/// One warp of `entry`: it runs to completion in default mode (then `check` looks at what
/// it wrote), and traps as undefined in strict mode with `seed`; the strict run's error
/// and message.
fn undefined_only_when_strict(
    entry: HostEntry,
    args: &[u64],
    check: impl FnOnce(),
    seed: u64,
) -> (OxideError, String) {
    let (status, _, m) = run(entry, None, (1, 32, 0), args);
    assert_eq!(status, STATUS_OK, "{m}");
    check();
    let (status, e, m) = run(entry, Some(seed), (1, 32, 0), args);
    assert_eq!(status, STATUS_UNDEFINED, "{m}");
    (e, m)
}

fn slice<T>(s: &[T]) -> [u64; 2] {
    [s.as_ptr() as u64, s.len() as u64]
}

// ---- strict mode: uninitialised shared memory and missing barriers -------------------

/// Thread `t` writes slot `t` and reads slot `t - 1` with no barrier between: a race.
#[kernel]
pub fn neighbour_without_barrier(mut out: DisjointSlice<u32>) {
    static SLOTS: SharedArray<u32, 256> = SharedArray::UNINIT;
    let t = thread::threadIdx_x() as usize;
    // SAFETY: one writer per slot; the read races with the neighbour's write (the bug).
    unsafe { SLOTS.write(t, 10 * t as u32 + 1) };
    let previous = if t > 0 {
        unsafe { SLOTS.read(t - 1) }
    } else {
        0
    };
    if let Some(o) = out.get_mut(thread::index_1d()) {
        *o = previous;
    }
}

#[test]
fn strict_mode_shows_a_missing_barrier_and_a_seed_reproduces_it() {
    let run_with = |strict| {
        let out = vec![7u32; 512];
        let (status, _, m) = run(
            __oxide_host_neighbour_without_barrier,
            strict,
            (2, 256, 0),
            &slice(&out),
        );
        assert_eq!(status, STATUS_OK, "{m}");
        out
    };
    // In thread order every neighbour has written: the race gives the right answer.
    let right: Vec<u32> = (0..512)
        .map(|i| {
            if i % 256 == 0 {
                0
            } else {
                10 * (i % 256 - 1) + 1
            }
        })
        .collect();
    assert_eq!(run_with(None), right);
    let strict = run_with(Some(1));
    let wrong = strict.iter().zip(&right).filter(|(a, b)| a != b).count();
    assert!(wrong > 0, "the shuffled order hid the race");
    // The wrong values are the poison, and a seed gives the same run again.
    assert!(
        strict
            .iter()
            .zip(&right)
            .all(|(&a, &b)| a == b || a == u32::MAX)
    );
    assert_eq!(run_with(Some(1)), strict);
    assert!((2..6).any(|seed| run_with(Some(seed)) != strict));
}

/// Reads a static slot and a dynamic one that no thread wrote.
#[kernel]
pub fn read_unwritten(mut out: DisjointSlice<f32>) {
    static SLOTS: SharedArray<f32, 64> = SharedArray::UNINIT;
    let t = thread::threadIdx_x() as usize;
    let dynamic = DynamicSharedArray::<f32>::get();
    // SAFETY: in bounds (64 slots, and the launch gives 64 dynamic floats); nobody
    // wrote them (the bug).
    let (a, b) = unsafe { (SLOTS.read(t), dynamic.add(t).read()) };
    if let Some(o) = out.get_mut(thread::index_1d()) {
        *o = a + b;
    }
}

#[test]
fn strict_mode_poisons_shared_memory_no_thread_wrote() {
    let out = vec![1.0f32; 128];
    let (status, _, m) = run(
        __oxide_host_read_unwritten,
        Some(3),
        (2, 64, 256),
        &slice(&out),
    );
    assert_eq!(status, STATUS_OK, "{m}");
    assert!(out.iter().all(|v| v.is_nan()), "{out:?}");
}

// ---- warp operations over masks -------------------------------------------------------

/// The low half-warp shuffles among itself while the high half goes on to the barrier:
/// valid CUDA (the mask names the lanes that take part).
#[kernel]
pub fn half_warp(mut out: DisjointSlice<u32>) {
    let lane = warp::lane_id();
    let mut v = lane;
    if lane < 16 {
        v = warp::shuffle_xor_sync(0xffff, v, 8);
    }
    thread::sync_threads();
    if let Some(o) = out.get_mut(thread::index_1d()) {
        *o = v;
    }
}

#[test]
fn a_half_warp_meets_over_its_mask() {
    for strict in [None, Some(9)] {
        let out = vec![0u32; 64];
        let (status, _, m) = run(__oxide_host_half_warp, strict, (1, 64, 0), &slice(&out));
        assert_eq!(status, STATUS_OK, "{m}");
        for (i, &v) in out.iter().enumerate() {
            let lane = (i % 32) as u32;
            assert_eq!(v, if lane < 16 { lane ^ 8 } else { lane }, "thread {i}");
        }
    }
}

/// Lanes below `split` shuffle from lane 16 with mask 0xffff; the others (when
/// `split` is 32, none) do not take part.
#[kernel]
pub fn read_outside_mask(split: u32, mut out: DisjointSlice<u32>) {
    let lane = warp::lane_id();
    let mut v = lane + 100;
    if lane < split {
        v = warp::shuffle_sync(0xffff, v, 16);
    }
    if let Some(o) = out.get_mut(thread::index_1d()) {
        *o = v;
    }
}

#[test]
fn a_lane_outside_its_own_mask_traps() {
    // Every lane calls with mask 0xffff: lanes 16.. are not in the mask they pass.
    let out = vec![0u32; 32];
    let args = [&[32][..], &slice(&out)].concat();
    let (status, e, m) = run(__oxide_host_read_outside_mask, None, (1, 32, 0), &args);
    assert_eq!(status, STATUS_UNDEFINED, "{m}");
    assert_eq!(e.thread, [16, 0, 0]);
    assert!(
        m.contains("lane 16 of warp 0") && m.contains("0x0000ffff"),
        "{m}"
    );
}

#[test]
fn a_shuffle_outside_its_mask_traps_in_strict_mode() {
    let out = vec![0u32; 32];
    let args = [&[16][..], &slice(&out)].concat();
    // Default mode: lane 16 did not take part, so each lane keeps its own value (a GPU
    // gives an undefined one).
    let check = || assert_eq!(out[3], 103);
    let (e, m) = undefined_only_when_strict(__oxide_host_read_outside_mask, &args, check, 4);
    assert!(e.thread[0] < 16, "{:?}", e.thread);
    assert!(
        m.contains("shuffles from lane 16, outside the operation's mask 0x0000ffff")
            && m.contains("strict emulator, seed 4"),
        "{m}"
    );
}

/// Lanes from `live` on return; the others read lane `lane + 8` (full mask).
#[kernel]
pub fn read_returned(live: u32, mut out: DisjointSlice<u32>) {
    let lane = warp::lane_id();
    let idx = thread::index_1d();
    if lane >= live {
        return;
    }
    let v = warp::shuffle_down_sync(warp::FULL_MASK, lane, 8);
    if let Some(o) = out.get_mut(idx) {
        *o = v;
    }
}

#[test]
fn a_shuffle_from_a_lane_that_returned_traps_in_strict_mode() {
    let out = vec![0u32; 32];
    let args = [&[8][..], &slice(&out)].concat();
    let check = || assert_eq!(out[..8], [0, 1, 2, 3, 4, 5, 6, 7]);
    let (_, m) = undefined_only_when_strict(__oxide_host_read_returned, &args, check, 5);
    assert!(m.contains("which has returned"), "{m}");
    // All 32 running: lanes 24.. read past the warp's end, their own value (defined).
    let args = [&[32][..], &slice(&out)].concat();
    let (status, _, m) = run(__oxide_host_read_returned, Some(5), (1, 32, 0), &args);
    assert_eq!(status, STATUS_OK, "{m}");
    assert_eq!((out[0], out[23], out[24]), (8, 31, 24));
}

/// A warp reduction, as the library's block reductions do it.
#[kernel]
pub fn warp_sum(mut out: DisjointSlice<u32>) {
    let total = warp::reduce_sum_u32(1);
    if let Some(o) = out.get_mut(thread::index_1d()) {
        *o = total;
    }
}

#[test]
fn a_shuffle_from_a_lane_the_block_lacks_traps() {
    // Issue 23: a block of 100 threads leaves its fourth warp lanes 0..4; the warp's
    // butterfly reads lane 16 there, which a GPU gives an undefined value for.
    let out = vec![0u32; 100];
    let (status, e, m) = run(__oxide_host_warp_sum, None, (1, 100, 0), &slice(&out));
    assert_eq!(status, STATUS_UNDEFINED, "{m}");
    assert_eq!(e.thread, [96, 0, 0]);
    assert!(
        m.contains("lane 0 of warp 3 shuffles from lane 16, which does not exist")
            && m.contains("100 threads leave its last warp 4 lanes"),
        "{m}"
    );
    // Whole warps: the sum.
    let out = vec![0u32; 128];
    let (status, _, m) = run(__oxide_host_warp_sum, Some(1), (1, 128, 0), &slice(&out));
    assert_eq!(status, STATUS_OK, "{m}");
    assert!(out.iter().all(|&v| v == 32));
}

/// Lane 0 waits over the full mask; lane 1 over its own bit and then at a barrier.
#[kernel]
pub fn mismatched_masks() {
    let lane = warp::lane_id();
    if lane == 0 {
        let _ = warp::ballot_sync(0b11, true);
    } else if lane == 1 {
        let _ = warp::ballot_sync(0b10, true);
        thread::sync_threads();
    }
}

#[test]
fn lanes_that_never_meet_are_reported() {
    let (status, e, m) = run(__oxide_host_mismatched_masks, None, (1, 2, 0), &[]);
    assert_eq!(status, STATUS_DIVERGENT_BARRIER, "{m}");
    assert_eq!(e.thread, [0, 0, 0]);
    assert!(
        m.contains("mask 0x00000003, which lane 1 never reaches (it waits at sync_threads)"),
        "{m}"
    );
}

// ---- gpu_assert!: its message and the kernel's own line -------------------------------

#[kernel]
pub fn checked(n: u32, form: u32) {
    if thread::threadIdx_x() == 5 {
        match form {
            0 => gpu_assert!(n < 4),
            1 => gpu_assert!(n < 4, "n = {}, limit {:x}", n, 4u32),
            _ => gpu_assert!(n < 4, "n=%u", n),
        }
    }
}

#[test]
fn a_failed_gpu_assert_carries_its_message_and_the_kernels_line() {
    let line = |form: &str| {
        let source = include_str!("emulator_strict.rs");
        let at = source.find(form).unwrap();
        source[..at].lines().count()
    };
    for (form, says) in [
        (0, "gpu_assert!(n < 4) failed".to_string()),
        (1, "gpu_assert!(n < 4) failed: n = 7, limit 4".to_string()),
        (2, "gpu_assert!(n < 4) failed: n=7".to_string()),
    ] {
        let (status, e, m) = run(__oxide_host_checked, None, (1, 32, 0), &[7, form]);
        assert_eq!(status, STATUS_TRAP, "{m}");
        assert_eq!(e.thread, [5, 0, 0]);
        assert!(m.contains(&says), "{m}");
        let call = ["0 => gpu_assert", "1 => gpu_assert", "_ => gpu_assert"][form as usize];
        let at = format!("tests/emulator_strict.rs:{}:", line(call));
        assert!(m.contains(&at), "{m} (want {at})");
    }
    let (status, _, m) = run(__oxide_host_checked, None, (1, 32, 0), &[3, 1]);
    assert_eq!(status, STATUS_OK, "{m}");
}
