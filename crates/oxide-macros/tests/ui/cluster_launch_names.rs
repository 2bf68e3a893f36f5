use oxide_device::prelude::*;

// A name that is not a const generic parameter of the kernel.
#[kernel]
#[cluster_launch(SPLIT)]
pub fn unknown(_x: &[f32]) {}

#[kernel(f32)]
#[cluster_launch(T)]
pub fn a_type<T: Copy>(_x: &[T]) {}

// A tuned count past the cluster limit, or zero, in some instance.
#[kernel]
#[tune(SPLIT = [2, 16])]
#[cluster_launch(SPLIT)]
pub fn too_big<const SPLIT: usize>(_x: &[f32]) {}

#[kernel(0, 2)]
#[cluster_launch(X, 4)]
pub fn zero_or_eight<const X: usize>(_x: &[f32]) {}

fn main() {}
