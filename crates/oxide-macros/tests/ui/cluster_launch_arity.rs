use oxide_device::prelude::*;

#[kernel]
#[cluster_launch(2, 1, 1, 1)]
pub fn four_axes(_x: &[f32]) {}

#[kernel]
#[cluster_launch()]
pub fn no_axes(_x: &[f32]) {}

#[kernel]
#[cluster_launch(x = 2)]
pub fn named(_x: &[f32]) {}

fn main() {}
