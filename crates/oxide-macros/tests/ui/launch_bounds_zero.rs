use oxide_device::prelude::*;

#[kernel]
#[launch_bounds(0, 2)]
pub fn k(_x: &[f32]) {}

fn main() {}
