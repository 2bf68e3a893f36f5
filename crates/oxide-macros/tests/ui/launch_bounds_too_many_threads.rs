use oxide_device::prelude::*;

#[kernel]
#[launch_bounds(4096)]
pub fn k(_x: &[f32]) {}

fn main() {}
