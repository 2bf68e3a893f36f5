use oxide_device::prelude::*;

#[kernel]
pub const fn k(_n: u32) {}

fn main() {}
