use oxide_device::prelude::*;

#[kernel]
pub fn k(_x: &f32, _v: fn(f32), _s: &str) {}

fn main() {}
