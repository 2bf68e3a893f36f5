use oxide_device::prelude::*;

#[kernel]
pub fn __oxide_k(__oxide_x: f32) {}

fn main() {}
