use oxide_device::prelude::*;

#[kernel]
pub fn k(_src: *const f32, _dst: *mut f32) {}

fn main() {}
