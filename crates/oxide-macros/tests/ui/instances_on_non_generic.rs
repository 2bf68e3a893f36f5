use oxide_device::prelude::*;

#[kernel(f32)]
pub fn vecadd(_a: &[f32], _b: &[f32], _c: DisjointSlice<f32>) {}

fn main() {}
