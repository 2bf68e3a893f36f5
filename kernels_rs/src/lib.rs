//! pyoxide's bundled kernels. A kernel crate like any user's: `no_std`, no nightly
//! features, built for the GPU by `cargo oxide build` and for the host as is.
#![no_std]

use oxide_device::prelude::*;

/// `c[i] = a[i] + b[i]`.
#[kernel]
pub fn vecadd(a: &[f32], b: &[f32], mut c: DisjointSlice<f32>) {
    let idx = thread::index_1d();
    let i = idx.get();
    if let Some(c_i) = c.get_mut(idx) {
        *c_i = a[i] + b[i];
    }
}

/// `out[i] = a * x[i] + y[i]`.
#[kernel]
pub fn saxpy(a: f32, x: &[f32], y: &[f32], mut out: DisjointSlice<f32>) {
    let idx = thread::index_1d();
    let i = idx.get();
    if let Some(out_i) = out.get_mut(idx) {
        *out_i = a * x[i] + y[i];
    }
}

/// `out[i] = factor * x[i]`, for `f32` (`scale_f32`) and `f64` (`scale_f64`).
#[kernel(f32, f64)]
pub fn scale<T: Copy + core::ops::Mul<Output = T>>(factor: T, x: &[T], mut out: DisjointSlice<T>) {
    let idx = thread::index_1d();
    let i = idx.get();
    if let Some(out_i) = out.get_mut(idx) {
        *out_i = factor * x[i];
    }
}
