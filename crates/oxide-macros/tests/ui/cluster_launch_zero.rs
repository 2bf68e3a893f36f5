use oxide_device::prelude::*;

#[kernel]
#[cluster_launch(2, 0, 1)]
pub fn k(_x: &[f32]) {}

fn main() {}
