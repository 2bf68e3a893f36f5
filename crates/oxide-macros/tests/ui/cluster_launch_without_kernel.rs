use oxide_device::prelude::*;

#[cluster_launch(2, 1, 1)]
pub fn k(_x: &[f32]) {}

fn main() {}
