use oxide_device::prelude::*;

#[kernel]
#[cluster_launch(2)]
#[cluster_launch(4)]
pub fn k(_x: &[f32]) {}

fn main() {}
