//! Kernels are ordinary Rust functions on the host: called directly, they run as
//! thread 0 of a one-thread launch, so grid-stride kernels (the elementwise maps, the
//! reductions) do every element, and `activate` and the softmax write element 0 / row 0.

use kernels_rs::{
    activate, histogram, histogram_global, reduce_blocks_f32, reduce_sum_f32, saxpy, scale,
    scan_blocks_u32, softmax_rows, vecadd,
};
use oxide_device::{Array2, AtomicSlice, DisjointArray2, DisjointSlice};

#[test]
fn vecadd_one_thread_does_everything() {
    let mut c = [0.0f32; 3];
    vecadd(
        &[1.0, 2.0, 3.0],
        &[10.0, 20.0, 30.0],
        DisjointSlice::from_mut(&mut c),
    );
    assert_eq!(c, [11.0, 22.0, 33.0]);
}

#[test]
fn saxpy_one_thread_does_everything() {
    // Nine elements: a vector body and a tail, at whatever phase the array has.
    let x: Vec<f32> = (0..9).map(|v| v as f32).collect();
    let mut out = [0.0f32; 9];
    saxpy(2.0, &x, &[1.0; 9], DisjointSlice::from_mut(&mut out));
    assert_eq!(out, [1.0, 3.0, 5.0, 7.0, 9.0, 11.0, 13.0, 15.0, 17.0]);
}

#[test]
fn scale_one_thread_does_everything() {
    let mut out32 = [0.0f32; 2];
    scale(0.5f32, &[4.0, 8.0], DisjointSlice::from_mut(&mut out32));
    assert_eq!(out32, [2.0, 4.0]);
    let mut out64 = [0.0f64; 1];
    scale(3.0f64, &[2.5], DisjointSlice::from_mut(&mut out64));
    assert_eq!(out64, [7.5]);
}

#[test]
fn out_of_range_threads_write_nothing() {
    let mut out: [f32; 0] = [];
    // Thread 0 with an empty output: nothing to do, and no input is read.
    vecadd(&[], &[], DisjointSlice::from_mut(&mut out));
}

// A one-thread launch: the grid-stride loops cover every element, the warp and block
// reductions are over one lane, so the device-library kernels compute whole answers.

#[test]
fn reduce_sum_f32_one_thread_sums_everything() {
    let x: Vec<f32> = (1..=100).map(|v| v as f32).collect();
    let mut out = [0.5f32]; // overwritten, not added to
    reduce_sum_f32(&x, AtomicSlice::from_mut(&mut out));
    assert_eq!(out, [5050.0]);
    // The accumulator is left at zero: a second launch gives the same answer.
    reduce_sum_f32(&x[1..], AtomicSlice::from_mut(&mut out));
    assert_eq!(out, [5049.0]);
}

#[test]
fn reduce_blocks_f32_one_block_writes_its_partial() {
    let x: Vec<f32> = (1..=10).map(|v| v as f32).collect();
    let mut partial = [f32::NAN; 1];
    reduce_blocks_f32(&x, DisjointSlice::from_mut(&mut partial));
    assert_eq!(partial, [55.0]);
}

#[test]
fn histogram_global_one_thread_counts_everything() {
    let mut bins = [0u32; 4];
    histogram_global(&[0, 3, 3, 9, 1, 3], AtomicSlice::from_mut(&mut bins));
    assert_eq!(bins, [1, 1, 0, 3]);
}

#[test]
fn histogram_one_thread_counts_everything() {
    let x = [0, 3, 3, 9, 1, 3, 1023, 1024];
    let mut bins = [7u32; 4]; // counts add to what is there
    histogram(&x, AtomicSlice::from_mut(&mut bins));
    assert_eq!(bins, [8, 8, 7, 10]);
    // More bins than shared memory holds: the global-memory path.
    let mut many = std::vec![0u32; 2000];
    histogram(&x, AtomicSlice::from_mut(&mut many));
    assert_eq!(
        (many[3], many[1023], many[1024], many.iter().sum::<u32>()),
        (3, 1, 1, 8)
    );
}

// matmul_tiled needs its 16×16 block: one thread alone would read tile slots that
// the other 255 threads write, so it has no one-thread host call here (the kernel
// suite, tests/kernels/test_matmul.py, runs it on the emulator and on the GPU).

/// The row kernels reduce across whole warps; a one-thread call is refused with a
/// message rather than computing with a partial warp.
#[test]
fn softmax_rows_needs_whole_warps() {
    let x = [1.0f32, 2.0, 3.0, 4.0];
    let mut out = [0.0f32; 4];
    let refused = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        softmax_rows(
            Array2::from_slice(&x, [1, 4]),
            DisjointArray2::from_mut_slice(&mut out, [1, 4]),
        )
    }));
    assert!(refused.is_err());
    assert_eq!(out, [0.0; 4]);
}

#[test]
fn activate_thread_zero() {
    let coeffs = [1.0f32, -2.0, 0.5]; // 1 - 2v + v^2/2
    let p = |v: f64| 1.0 - 2.0 * v + 0.5 * v * v;
    type Reference = fn(f64) -> f64;
    let cases: [(u32, Reference); 4] = [
        (0, |v| v),
        (1, |v| v.max(0.0)),
        (2, f64::tanh),
        (3, |v| {
            0.5 * v * (1.0 + erf_ref(v / std::f64::consts::SQRT_2))
        }),
    ];
    for x0 in [-1.5f32, 0.25, 3.0] {
        for (code, act) in cases {
            let mut out = [0.0f32];
            activate(&[x0], &coeffs, code, DisjointSlice::from_mut(&mut out));
            let want = act(p(x0 as f64));
            assert!(
                (out[0] as f64 - want).abs() < 1e-5 * want.abs().max(1.0),
                "code {code} x {x0}: {} vs {want}",
                out[0]
            );
        }
    }
    let mut out = [0.0f32];
    activate(&[1.0], &coeffs, 7, DisjointSlice::from_mut(&mut out));
    assert!(out[0].is_nan());
}

/// erf by Simpson's rule on 2/sqrt(pi) * exp(-t^2), independent of the library's.
fn erf_ref(x: f64) -> f64 {
    let n = 2000;
    let h = x / n as f64;
    let f = |t: f64| (-t * t).exp();
    let mut s = f(0.0) + f(x);
    for i in 1..n {
        s += f(i as f64 * h) * if i % 2 == 1 { 4.0 } else { 2.0 };
    }
    s * h / 3.0 * 2.0 / std::f64::consts::PI.sqrt()
}

/// A one-thread block is not a whole number of warps: the kernel's `gpu_assert!`
/// traps, which on the host is a panic naming the condition.
#[test]
#[should_panic(expected = "gpu_assert!(thread::blockDim_x()")]
fn scan_blocks_u32_refuses_a_partial_warp() {
    let mut out = [0u32; 1];
    scan_blocks_u32(&[5], DisjointSlice::from_mut(&mut out));
}
