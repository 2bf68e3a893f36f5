use oxide_device::prelude::*;

#[kernel]
#[cluster_launch(4, 2, 2)]
pub fn k(_x: &[f32]) {}

fn main() {}
