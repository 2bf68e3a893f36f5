use oxide_device::prelude::*;

#[kernel]
pub fn k(bins: AtomicSlice<u8>) {}

fn main() {}
