use oxide_device::prelude::*;

#[kernel]
#[launch_bounds(256, 2, 1)]
pub fn k(_x: &[f32]) {}

fn main() {}
