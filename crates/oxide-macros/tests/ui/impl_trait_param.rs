use oxide_device::prelude::*;

#[kernel]
pub fn k(_x: impl Copy, _out: DisjointSlice<f32>) {}

fn main() {}
