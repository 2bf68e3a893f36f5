use oxide_device::prelude::*;

#[launch_bounds(256)]
pub fn k(_x: &[f32]) {}

fn main() {}
