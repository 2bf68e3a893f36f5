//! Kernels are ordinary Rust functions on the host: called directly, they run as
//! thread 0 of a one-thread launch and write element 0.

use kernels_rs::{saxpy, scale, vecadd};
use oxide_device::DisjointSlice;

#[test]
fn vecadd_thread_zero() {
    let mut c = [0.0f32; 3];
    vecadd(
        &[1.0, 2.0, 3.0],
        &[10.0, 20.0, 30.0],
        DisjointSlice::from_mut(&mut c),
    );
    assert_eq!(c, [11.0, 0.0, 0.0]);
}

#[test]
fn saxpy_thread_zero() {
    let mut out = [0.0f32; 2];
    saxpy(
        2.0,
        &[3.0, 4.0],
        &[1.0, 1.0],
        DisjointSlice::from_mut(&mut out),
    );
    assert_eq!(out, [7.0, 0.0]);
}

#[test]
fn scale_thread_zero() {
    let mut out32 = [0.0f32; 2];
    scale(0.5f32, &[4.0, 8.0], DisjointSlice::from_mut(&mut out32));
    assert_eq!(out32, [2.0, 0.0]);
    let mut out64 = [0.0f64; 1];
    scale(3.0f64, &[2.5], DisjointSlice::from_mut(&mut out64));
    assert_eq!(out64, [7.5]);
}

#[test]
fn out_of_range_threads_write_nothing() {
    let mut out: [f32; 0] = [];
    // Thread 0 with an empty output: `get_mut` says no, and no input is read.
    vecadd(&[], &[], DisjointSlice::from_mut(&mut out));
}
