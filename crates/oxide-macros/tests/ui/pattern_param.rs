use oxide_device::prelude::*;

#[kernel]
pub fn k((_a, _b): (f32, f32), _: u32, ref _c: u8) {}

fn main() {}
