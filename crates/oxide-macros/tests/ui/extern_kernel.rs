use oxide_device::prelude::*;

#[kernel]
pub extern "C" fn k(_n: u32) {}

fn main() {}
