use oxide_device::prelude::*;

#[kernel]
pub fn k(_out: &mut [f32]) {}

fn main() {}
